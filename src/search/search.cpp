#include "search/search.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::search {

namespace {

void check_range(int v, const std::string& where, int lowest, int highest) {
  if (v < lowest || v > highest) fail(where, "{} is out of range: expected whole numbers from {} to {}, a list of them, or auto", v, lowest, highest);
}

}  // namespace

Dim parse_dim(const std::string& text, const std::string& where, int lowest, int highest) {
  std::string t;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) t.push_back(c);
  }
  if (t == "auto") return std::nullopt;
  if (t.empty()) fail(where, "an empty value allows nothing; give a degree, a list like 1,2,4, or auto");
  std::vector<int> out;
  for (const std::string& item : io::split_commas(t)) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9) {
      fail(where, "'{}' is not a degree: expected a whole number, a list like 1,2,4, or auto", item.empty() ? text : item);
    }
    int v = std::stoi(item);
    check_range(v, where, lowest, highest);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

Dim dim_from_json(const nlohmann::json& v, const std::string& where, int lowest, int highest) {
  if (v.is_string()) return parse_dim(v.get<std::string>(), where, lowest, highest);
  std::vector<int> out;
  for (const auto& x : io::one_or_many(v, where, "an empty list allows nothing; give a degree, a list, or auto")) {
    if (x.is_boolean() || !x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() > 1000000) {
      fail(where, "{} is not a degree: expected a whole number, a list of them, or auto", x.dump());
    }
    int d = static_cast<int>(x.get<long long>());
    check_range(d, where, lowest, highest);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

void space_from_json(const nlohmann::json& dims, const std::string& file, Space& space) {
  io::Reader rd{dims, file, "search"};
  rd.only({"tp", "pp", "cp", "ep", "etp", "vpp", "mbs", "zero", "sp", "cp_algo", "recompute", "optimizer_shard", "allow_tp_across_nodes"});
  auto dim = [&](const char* key, Dim& out, int lowest = 1, int highest = 1000000) {
    if (rd.has(key)) out = dim_from_json(dims.at(key), at(file, "search." + std::string(key)), lowest, highest);
  };
  dim("tp", space.tp);
  dim("pp", space.pp);
  dim("cp", space.cp);
  dim("ep", space.ep);
  dim("etp", space.etp);
  dim("vpp", space.vpp);
  dim("mbs", space.mbs);
  dim("zero", space.zero, 0, 3);
  if (rd.has("sp")) {
    const auto& v = dims.at("sp");
    if (v.is_string() && v.get<std::string>() == "auto")
      space.sp.reset();
    else if (v.is_boolean())
      space.sp = std::vector<bool>{v.get<bool>()};
    else
      rd.bad("sp", "true, false or auto");
  }
  if (rd.has("cp_algo")) {
    const auto& v = dims.at("cp_algo");
    std::string s = v.is_string() ? v.get<std::string>() : "";
    if (s == "auto")
      space.cp_algo.reset();
    else if (s == "ring")
      space.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
    else if (s == "all2all")
      space.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::AllToAll};
    else
      rd.bad("cp_algo", "ring, all2all or auto");
  }
  if (dims.contains("recompute")) space.recompute = plan::read_recompute_modes(dims.at("recompute"), at(file, "search.recompute"));
  space.optimizer_shard = static_cast<int>(rd.integer_or("optimizer_shard", 0));
  space.allow_tp_across_nodes = rd.boolean_or("allow_tp_across_nodes", false);
}

namespace {

std::vector<int> powers_of_two_up_to(long long limit) {
  std::vector<int> out;
  for (long long v = 1; v <= limit; v *= 2) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<int> divisors(long long n) {
  std::vector<int> out;
  for (long long d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

}  // namespace

std::vector<plan::Layout> enumerate(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw,
                                    long long devices) {
  std::vector<plan::Layout> out;
  const model::ModelSpec& spec = model.spec;
  long long layers = model.body_layers() + model.vision_layers();
  auto values = [](const Dim& d, const std::vector<int>& fallback) { return d ? *d : fallback; };
  // Auto domains: TP powers of two within a node (across nodes only when allowed), CP powers of two up to 32,
  // PP any divisor up to the layers, EP powers of two up to the experts, expert TP 1 or TP, VPP 1-4 and the
  // larger even splits of a stage, micro-batch sizes 1-8, every ZeRO stage, SP on and off with TP, both CP
  // algorithms with CP.
  long long tp_limit = space.allow_tp_across_nodes ? devices : std::min(devices, hw.devices_per_node());
  for (int tp : values(space.tp, powers_of_two_up_to(tp_limit))) {
    if (tp < 1 || devices % tp != 0) continue;
    for (int cp : values(space.cp, powers_of_two_up_to(std::min<long long>(devices / tp, 32)))) {
      if (cp < 1 || (devices / tp) % cp != 0) continue;
      long long rest = devices / tp / cp;
      std::vector<int> pp_auto;
      for (int d : divisors(rest)) {
        if (d <= layers) pp_auto.push_back(d);
      }
      for (int pp : values(space.pp, pp_auto)) {
        if (pp < 1 || rest % pp != 0) continue;
        int dp = static_cast<int>(rest / pp);
        std::vector<int> ep_auto = {1};
        std::vector<int> etp_auto = {1};
        if (spec.is_moe()) {
          ep_auto.clear();
          for (int e : powers_of_two_up_to(*spec.num_experts)) ep_auto.push_back(e);
          if (tp > 1) etp_auto.push_back(tp);
        }
        // Interleaving: 2-4 chunks per stage, and beyond that every chunk count that splits the stage's layers
        // evenly (Megatron's interleaved schedule with uniform chunks: NeMo runs VP 5, 6, 10, 20).
        std::vector<int> vpp_auto = {1};
        for (int v = 2; v <= 4 && pp > 1 && 1LL * pp * v <= layers; ++v) vpp_auto.push_back(v);
        if (pp > 1 && layers % pp == 0) {
          for (int d : divisors(layers / pp)) {
            if (d > 4) vpp_auto.push_back(d);
          }
        }
        std::vector<int> mbs_auto;
        for (int b : powers_of_two_up_to(8)) {
          if (training.global_batch % (1LL * dp * b) == 0) mbs_auto.push_back(b);
        }
        for (int ep : values(space.ep, ep_auto)) {
          for (int etp : values(space.etp, etp_auto)) {
            for (int vpp : values(space.vpp, vpp_auto)) {
              for (int mbs : values(space.mbs, mbs_auto)) {
                if (mbs < 1) continue;
                long long per = 1LL * dp * mbs;
                long long m = training.global_batch % per == 0 ? training.global_batch / per : 0;
                for (int zero : values(space.zero, {0, 1, 2, 3})) {
                  std::vector<bool> sps = space.sp ? *space.sp : (tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false});
                  for (bool sp : sps) {
                    std::vector<plan::CpAlgo> algos = space.cp_algo ? *space.cp_algo
                                                                    : (cp > 1 ? std::vector<plan::CpAlgo>{plan::CpAlgo::Ring, plan::CpAlgo::AllToAll}
                                                                              : std::vector<plan::CpAlgo>{plan::CpAlgo::Ring});
                    for (plan::CpAlgo algo : algos) {
                      for (plan::Recompute rc : space.recompute) {
                        plan::Layout l;
                        l.tp = tp;
                        l.cp = cp;
                        l.pp = pp;
                        l.dp = dp;
                        l.ep = ep;
                        l.etp = etp;
                        l.vpp = vpp;
                        l.mbs = mbs;
                        l.micro_batches = static_cast<int>(m);
                        l.zero = zero;
                        l.sp = sp;
                        l.cp_algo = algo;
                        l.recompute = rc;
                        l.optimizer_shard = space.optimizer_shard;
                        out.push_back(l);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

Result search(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw, long long devices, double capacity,
              const Options& options) {
  auto t0 = std::chrono::steady_clock::now();
  if (training.fp8) hw.require_fp8_rate();  // before the workers start, so the refusal is one clean error
  std::vector<plan::Layout> layouts = enumerate(model, space, training, hw, devices);
  const std::size_t n = layouts.size();
  std::vector<std::optional<Candidate>> slots(n);
  int threads = std::max(1, options.threads);
  std::vector<std::map<std::string, long long>> rejected(static_cast<std::size_t>(threads));
  std::atomic<long long> done{0};
  std::atomic<std::size_t> next{0};
  // Grouped evaluation: what one layer of each kind costs depends only on these fields, so each worker prices it
  // once per group and reuses it for every DP / PP / VPP / ZeRO variant (results are the same as without).
  using MemoryKey = std::tuple<int, int, bool, int, int, int>;     // mbs, tp, sp, cp, ep, etp
  using TimeKey = std::tuple<int, int, bool, int, int, int, int>;  // the same and the CP algorithm
  auto work = [&](int worker) {
    auto& rej = rejected[static_cast<std::size_t>(worker)];
    std::map<MemoryKey, std::vector<cost::KindMemory>> memory_groups;
    std::map<TimeKey, cost::KindTimes> time_groups;
    constexpr std::size_t kBatch = 64;
    for (;;) {
      std::size_t begin = next.fetch_add(kBatch);
      if (begin >= n) break;
      std::size_t end = std::min(n, begin + kBatch);
      for (std::size_t i = begin; i < end; ++i) {
        const plan::Layout& l = layouts[i];
        if (l.micro_batches < 1) {
          ++rej["global batch"];
          continue;
        }
        if (!space.allow_tp_across_nodes && l.tp > hw.devices_per_node()) {
          ++rej["tp across nodes"];
          continue;
        }
        auto violations = plan::check_layout(model, l, training, devices, false);
        if (!violations.empty()) {
          ++rej[violations.front().rule];
          continue;
        }
        MemoryKey mk{l.mbs, l.tp, l.sp, l.cp, l.ep, l.etp};
        auto km = memory_groups.find(mk);
        if (km == memory_groups.end()) km = memory_groups.emplace(mk, cost::kind_memory(model, l, training)).first;
        cost::MemoryEstimate mem = cost::estimate_memory(model, l, training, capacity, &km->second);
        if (!mem.fits()) {
          ++rej["out of memory"];
          continue;
        }
        Candidate c;
        c.layout = l;
        c.peak_memory_bytes = mem.peak_bytes;
        c.peak_stage = mem.peak_stage;
        TimeKey tk{l.mbs, l.tp, l.sp, l.cp, static_cast<int>(l.cp_algo), l.ep, l.etp};
        auto kt = time_groups.find(tk);
        if (kt == time_groups.end()) kt = time_groups.emplace(tk, cost::kind_times(model, l, training, hw, options.overlap)).first;
        c.time = cost::estimate_time(model, l, training, hw, mem, options.overlap, &kt->second);
        slots[i] = c;
      }
      done.fetch_add(static_cast<long long>(end - begin));
    }
  };
  // An error inside a worker (bad data met while pricing) stops every worker and is rethrown here, on the
  // caller's thread, instead of terminating the process.
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto guarded = [&](int worker) {
    try {
      work(worker);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
      next.store(n);
      done.store(static_cast<long long>(n));
    }
  };
  if (threads == 1) {
    if (options.progress) {
      std::thread worker(guarded, 0);
      while (done.load() < static_cast<long long>(n)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) options.progress(done.load(), static_cast<long long>(n));
      }
      worker.join();
    } else {
      guarded(0);
    }
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) pool.emplace_back(guarded, w);
    if (options.progress) {
      while (done.load() < static_cast<long long>(n)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) options.progress(done.load(), static_cast<long long>(n));
      }
    }
    for (auto& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
  Result r;
  r.evaluated = static_cast<long long>(n);
  // Rank by step time; ties keep the enumeration order (a function of the space alone, so the same for any
  // thread count). Sort (time, slot) pairs, then copy each candidate once into its rank.
  // Recompute twins (the same layout under each requested recompute mode, consecutive in the enumeration): a twin
  // that another needs no less memory than and is slower than is never listed (under flash attention Megatron's
  // core-attention recompute keeps the bytes of `off` and only adds time).
  const std::size_t modes = std::max<std::size_t>(1, space.recompute.size());
  long long dominated = 0;
  for (std::size_t g = 0; g + modes <= n; g += modes) {
    for (std::size_t i = g; i < g + modes; ++i) {
      if (!slots[i]) continue;
      for (std::size_t j = g; j < g + modes; ++j) {
        if (j == i || !slots[j]) continue;
        if (slots[j]->peak_memory_bytes <= slots[i]->peak_memory_bytes && slots[j]->time.step_s < slots[i]->time.step_s) {
          slots[i].reset();
          ++dominated;
          break;
        }
      }
    }
  }
  if (dominated > 0) rejected[0]["recompute twin dominated"] += dominated;
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < n; ++i) {
    if (slots[i]) order.emplace_back(slots[i]->time.step_s, i);
  }
  std::sort(order.begin(), order.end());
  r.ranked.reserve(order.size());
  for (const auto& [time, i] : order) r.ranked.push_back(*slots[i]);
  for (const auto& per : rejected) {
    for (const auto& [reason, count] : per) r.rejected[reason] += count;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sapp::search
