#include "search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iterator>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/parallel.hpp"

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

// Every layout of the space but for the ZeRO stage, SP, the CP algorithm and recompute, in enumeration order.
// A stated degree that does not divide what is left of the devices is counted in `skipped` under "device count"
// (auto never generates one).
std::vector<plan::Layout> enumerate_blocks(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw,
                                           long long devices, std::map<std::string, long long>& skipped) {
  std::vector<plan::Layout> out;
  const model::ModelSpec& spec = model.spec;
  // What the even split spreads over the chunks: the layers, and the embedding, loss and MTP units when the split
  // counts them (Megatron's account_for_embedding/loss_in_pipeline_split: Llama 3.1 405B's 126 + 2 over PP 16 x VP 8).
  long long layers = model.body_layers() + model.vision_layers() + plan::pipeline_head_and_tail_units(model, training);
  auto values = [](const Dim& d, const std::vector<int>& fallback) { return d ? *d : fallback; };
  // Auto domains: TP powers of two within a node (across nodes only when allowed), CP powers of two up to 32,
  // PP any divisor up to the layers, EP powers of two up to the experts, expert TP 1 or TP, VPP 1-4 and the
  // larger even splits of a stage, micro-batch sizes 1-8, every ZeRO stage, SP on and off with TP, both CP
  // algorithms with CP.
  long long tp_limit = space.allow_tp_across_nodes ? devices : std::min(devices, hw.devices_per_node());
  for (int tp : values(space.tp, powers_of_two_up_to(tp_limit))) {
    if (tp < 1 || devices % tp != 0) {
      ++skipped["device count"];
      continue;
    }
    for (int cp : values(space.cp, powers_of_two_up_to(std::min<long long>(devices / tp, 32)))) {
      if (cp < 1 || (devices / tp) % cp != 0) {
        ++skipped["device count"];
        continue;
      }
      long long rest = devices / tp / cp;
      std::vector<int> pp_auto;
      for (int d : divisors(rest)) {
        if (d <= layers) pp_auto.push_back(d);
      }
      for (int pp : values(space.pp, pp_auto)) {
        if (pp < 1 || rest % pp != 0) {
          ++skipped["device count"];
          continue;
        }
        int dp = static_cast<int>(rest / pp);
        if (space.dp && std::find(space.dp->begin(), space.dp->end(), dp) == space.dp->end()) {
          ++skipped["dp not listed"];
          continue;
        }
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
                if (space.micro_batches && std::find(space.micro_batches->begin(), space.micro_batches->end(), m) == space.micro_batches->end()) {
                  ++skipped["micro-batch count not listed"];
                  continue;
                }
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
                l.optimizer_shard = space.optimizer_shard;
                l.split = space.split;
                out.push_back(l);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// A block's variants over the ZeRO stage, SP, the CP algorithm and recompute, in enumeration order.
template <typename Visit>
void for_each_variant(const plan::Layout& block, const Space& space, Visit&& visit) {
  plan::Layout l = block;
  for (int zero : space.zero ? *space.zero : std::vector<int>{0, 1, 2, 3}) {
    l.zero = zero;
    // SP shards along the TP group: with TP 1 only "without" is a layout (an --sp true keeps it too).
    std::vector<bool> sps = block.tp == 1 ? std::vector<bool>{false} : (space.sp ? *space.sp : std::vector<bool>{false, true});
    for (bool sp : sps) {
      l.sp = sp;
      std::vector<plan::CpAlgo> algos = space.cp_algo ? *space.cp_algo
                                                      : (block.cp > 1 ? std::vector<plan::CpAlgo>{plan::CpAlgo::Ring, plan::CpAlgo::AllToAll}
                                                                      : std::vector<plan::CpAlgo>{plan::CpAlgo::Ring});
      for (plan::CpAlgo algo : algos) {
        l.cp_algo = algo;
        for (plan::Recompute rc : space.recompute) {
          l.recompute = rc;
          visit(l);
        }
      }
    }
  }
}

}  // namespace

std::vector<plan::Layout> enumerate(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw,
                                    long long devices) {
  std::vector<plan::Layout> out;
  std::map<std::string, long long> skipped;
  for (const plan::Layout& block : enumerate_blocks(model, space, training, hw, devices, skipped))
    for_each_variant(block, space, [&](const plan::Layout& l) { out.push_back(l); });
  return out;
}

namespace {

// The best rows one worker has seen: the `top` fastest fitting candidates (or folded rows) and, for a search
// where nothing fits, the `top` smallest overflows. Pruned to `top` whenever it doubles, so memory follows
// `top`, not the size of the space. Every order is total (ties broken by the enumeration index, or by the
// folded key), so merging the workers' keepers gives the same rows for any thread count.
class Keeper {
 public:
  Keeper(std::size_t top, bool fold, bool scatter, double capacity) : top_(top), fold_(fold), scatter_(scatter), capacity_(capacity) {}

  void fit(const Candidate& c, std::size_t index) {
    ++fitting_;
    if (scatter_) plot(c, index);
    if (fold_) {
      Key key{std::llround(c.time.step_s * 1e9), std::llround(c.peak_memory_bytes / 1024.0)};
      auto it = folded_.find(key);
      if (it != folded_.end()) {
        ++it->second.candidate.twins;
        if (index < it->second.index) {
          long long twins = it->second.candidate.twins;
          it->second = Row{c, index};
          it->second.candidate.twins = twins;
        }
        return;
      }
      // A key worse than `top` others can never re-enter the top rows, so dropping it loses no count.
      if (folded_.size() >= top_ && !(key < folded_.rbegin()->first)) return;
      folded_.emplace(key, Row{c, index});
      if (folded_.size() > top_) folded_.erase(std::prev(folded_.end()));
      return;
    }
    rows_.push_back(Row{c, index});
    if (rows_.size() >= 2 * std::min(top_, std::size_t{1} << 40) + 64) prune();
  }

  void overflow(const plan::Layout& l, double peak, std::size_t index) {
    if (fitting_ > 0) return;
    long long key = std::llround(peak / 1024.0);
    auto it = closest_.find(key);
    if (it != closest_.end()) {
      ++it->second.first.twins;
      if (index < it->second.second) it->second = {Overflow{l, peak, it->second.first.twins}, index};
      return;
    }
    if (closest_.size() >= top_ && !(key < closest_.rbegin()->first)) return;
    closest_.emplace(key, std::pair{Overflow{l, peak, 1}, index});
    if (closest_.size() > top_) closest_.erase(std::prev(closest_.end()));
  }

  void merge(Keeper&& other) {
    fitting_ += other.fitting_;
    merge_counted(
        cells_, other.cells_, [](Cell& c) -> long long& { return c.first.count; },
        [](const Cell& a, const Cell& b) { return std::tie(a.first.step_s, a.second) < std::tie(b.first.step_s, b.second); });
    for (auto& [key, row] : other.front_) add_to_front(row.candidate, row.index);
    merge_counted(
        folded_, other.folded_, [](Row& r) -> long long& { return r.candidate.twins; }, [](const Row& a, const Row& b) { return a.index < b.index; });
    while (folded_.size() > top_) folded_.erase(std::prev(folded_.end()));
    rows_.insert(rows_.end(), other.rows_.begin(), other.rows_.end());
    merge_counted(
        closest_, other.closest_, [](Closest& c) -> long long& { return c.first.twins; },
        [](const Closest& a, const Closest& b) { return a.second < b.second; });
    while (closest_.size() > top_) closest_.erase(std::prev(closest_.end()));
  }

  void finish(Result& r) {
    r.fitting = fitting_;
    for (auto& [key, row] : front_) r.pareto.push_back(row.candidate);
    for (auto& [key, cell] : cells_) r.scatter.push_back(cell.first);
    if (fold_) {
      for (auto& [key, row] : folded_) r.ranked.push_back(row.candidate);
    } else {
      prune();
      for (auto& row : rows_) r.ranked.push_back(row.candidate);
    }
    if (fitting_ == 0) {
      for (auto& [key, entry] : closest_) r.closest.push_back(entry.first);
    }
  }

 private:
  struct Row {
    Candidate candidate;
    std::size_t index = 0;
  };
  using Key = std::pair<long long, long long>;  // step time in ns, peak memory in KiB
  using Cell = std::pair<ScatterCell, std::size_t>;
  using Closest = std::pair<Overflow, std::size_t>;

  // Merges another worker's map into `into`: equal keys add their counts and keep the better entry.
  template <typename Map, typename Count, typename Better>
  static void merge_counted(Map& into, const Map& from, Count count, Better better) {
    for (const auto& [key, entry] : from) {
      auto [it, fresh] = into.emplace(key, entry);
      if (fresh) continue;
      auto incoming = entry;
      long long total = count(it->second) + count(incoming);
      if (better(incoming, it->second)) it->second = incoming;
      count(it->second) = total;
    }
  }

  void plot(const Candidate& c, std::size_t index) {
    std::pair<long long, long long> cell{std::llround(200.0 * c.peak_memory_bytes / std::max(capacity_, 1.0)),
                                         std::llround(100.0 * std::log(std::max(c.time.step_s, 1e-12)) / std::log(1.01) / 100.0)};
    ScatterCell point{c.peak_memory_bytes, c.time.step_s, 1};
    auto [it, fresh] = cells_.emplace(cell, std::pair{point, index});
    if (!fresh) {
      ++it->second.first.count;
      if (std::tie(c.time.step_s, index) < std::tie(it->second.first.step_s, it->second.second)) {
        it->second.first.peak_memory_bytes = c.peak_memory_bytes;
        it->second.first.step_s = c.time.step_s;
        it->second.second = index;
      }
    }
    add_to_front(c, index);
  }

  // The front is keyed by (peak memory, index); along it, step times strictly fall as memory grows.
  void add_to_front(const Candidate& c, std::size_t index) {
    std::pair<double, std::size_t> key{c.peak_memory_bytes, index};
    auto after = front_.lower_bound(key);
    // Dominated: a candidate with no more memory is at least as fast.
    if (after != front_.begin() && std::prev(after)->second.candidate.time.step_s <= c.time.step_s) return;
    // It dominates the ones with at least as much memory that are no faster.
    while (after != front_.end() && after->second.candidate.time.step_s >= c.time.step_s) after = front_.erase(after);
    front_.emplace(key, Row{c, index});
  }

  void prune() {
    auto faster = [](const Row& a, const Row& b) { return std::tie(a.candidate.time.step_s, a.index) < std::tie(b.candidate.time.step_s, b.index); };
    std::size_t keep = std::min(top_, rows_.size());
    std::partial_sort(rows_.begin(), rows_.begin() + static_cast<std::ptrdiff_t>(keep), rows_.end(), faster);
    rows_.resize(keep);
  }

  std::size_t top_;
  bool fold_;
  bool scatter_;
  double capacity_;
  std::map<std::pair<double, std::size_t>, Row> front_;
  std::map<std::pair<long long, long long>, Cell> cells_;
  long long fitting_ = 0;
  std::vector<Row> rows_;
  std::map<Key, Row> folded_;
  std::map<long long, Closest> closest_;  // by peak memory in KiB
};

}  // namespace

Result search(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw, long long devices, double capacity,
              const Options& options) {
  auto t0 = std::chrono::steady_clock::now();
  if (training.fp8) hw.require_fp8_rate();  // before the workers start, so the refusal is one clean error
  // Blocks share every degree but the ZeRO stage, SP, the CP algorithm and recompute; their variants are
  // generated by the worker that prices them, so memory does not grow with the space.
  std::map<std::string, long long> skipped;
  const std::vector<plan::Layout> blocks = enumerate_blocks(model, space, training, hw, devices, skipped);
  std::vector<std::size_t> first(blocks.size() + 1, 0);  // enumeration index of each block's first variant
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    std::size_t count = 0;
    for_each_variant(blocks[b], space, [&](const plan::Layout&) { ++count; });
    first[b + 1] = first[b] + count;
  }
  const std::size_t n = first.back();
  const std::size_t n_blocks = blocks.size();
  int threads = std::max(1, options.threads);
  std::vector<std::map<std::string, long long>> rejected(static_cast<std::size_t>(threads));
  std::vector<Keeper> keepers(static_cast<std::size_t>(threads), Keeper(options.top, options.fold, options.scatter, capacity));
  const plan::Cluster cluster{devices, hw.devices_per_node(), space.allow_tp_across_nodes};
  std::atomic<long long> done{0};
  std::atomic<std::size_t> next{0};
  // Grouped evaluation: what one layer of each kind costs depends only on these fields, so each worker prices it
  // once per group and reuses it for every DP / PP / VPP / ZeRO variant (results are the same as without).
  using MemoryKey = std::tuple<int, int, bool, int, int, int>;     // mbs, tp, sp, cp, ep, etp
  using TimeKey = std::tuple<int, int, bool, int, int, int, int>;  // the same and the CP algorithm
  auto work = [&](int worker) {
    auto& rej = rejected[static_cast<std::size_t>(worker)];
    Keeper& keeper = keepers[static_cast<std::size_t>(worker)];
    std::map<MemoryKey, std::vector<cost::KindMemory>> memory_groups;
    std::map<TimeKey, cost::KindTimes> time_groups;
    std::map<std::array<int, 4>, cost::InFlightVectors> in_flight_groups;  // by schedule, pp, vpp, micro-batches
    // Prices one layout: a fitting candidate, or nothing (the rejection counted).
    auto price = [&](const plan::Layout& l, std::size_t i) -> std::optional<Candidate> {
      auto violations = plan::check_layout(model, l, training, cluster, false);
      if (!violations.empty()) {
        ++rej[violations.front().rule];
        return std::nullopt;
      }
      if (space.replication_alone && plan::replicates_beside_other_dimensions(l)) {
        ++rej["replication beside other dimensions"];
        return std::nullopt;
      }
      if (space.hybrid_even_pipeline && !model.spec.hybrid_pattern.empty() && !plan::hybrid_stack_runs_pipeline(model.spec.num_layers, l)) {
        ++rej["hybrid stack split unevenly or interleaved"];
        return std::nullopt;
      }
      MemoryKey mk{l.mbs, l.tp, l.sp, l.cp, l.ep, l.etp};
      auto km = memory_groups.find(mk);
      if (km == memory_groups.end()) km = memory_groups.emplace(mk, cost::kind_memory(model, l, training)).first;
      const cost::InFlightVectors* in_flight = nullptr;  // one chunk: the closed form is exact, nothing to keep
      if (l.vpp >= 2) {
        std::array<int, 4> fk{static_cast<int>(plan::schedule_of(l, training.interleave_less_memory)), l.pp, l.vpp, l.micro_batches};
        auto fl = in_flight_groups.find(fk);
        if (fl == in_flight_groups.end()) fl = in_flight_groups.emplace(fk, cost::in_flight_vectors_of(l, training)).first;
        in_flight = &fl->second;
      }
      cost::MemoryEstimate mem = cost::estimate_memory(model, l, training, capacity, &km->second, in_flight);
      if (!mem.fits()) {
        ++rej["out of memory"];
        keeper.overflow(l, mem.peak_bytes, i);
        return std::nullopt;
      }
      Candidate c;
      c.layout = l;
      c.peak_memory_bytes = mem.peak_bytes;
      c.peak_stage = mem.peak_stage;
      TimeKey tk{l.mbs, l.tp, l.sp, l.cp, static_cast<int>(l.cp_algo), l.ep, l.etp};
      auto kt = time_groups.find(tk);
      if (kt == time_groups.end()) kt = time_groups.emplace(tk, cost::kind_times(model, l, training, hw, options.overlap)).first;
      c.time = cost::estimate_time(model, l, training, hw, mem, options.overlap, &kt->second);
      return c;
    };
    // Recompute twins (the same layout under each requested recompute mode, consecutive in the enumeration): a
    // twin that another needs no less memory than and is slower than is never listed (under flash attention
    // Megatron's core-attention recompute keeps the bytes of `off` and only adds time).
    const std::size_t modes = std::max<std::size_t>(1, space.recompute.size());
    std::vector<std::pair<std::optional<Candidate>, std::size_t>> twins;
    auto flush_twins = [&] {
      for (std::size_t a = 0; a < twins.size(); ++a) {
        const std::optional<Candidate>& c = twins[a].first;
        if (!c) continue;
        bool dominated = false;
        for (std::size_t b = 0; b < twins.size() && !dominated; ++b) {
          const std::optional<Candidate>& other = twins[b].first;
          dominated = b != a && other && other->peak_memory_bytes <= c->peak_memory_bytes && other->time.step_s < c->time.step_s;
        }
        if (dominated)
          ++rej["recompute twin dominated"];
        else
          keeper.fit(*c, twins[a].second);
      }
      twins.clear();
    };
    constexpr std::size_t kBatch = 2;
    for (;;) {
      std::size_t begin = next.fetch_add(kBatch);
      if (begin >= n_blocks) break;
      std::size_t end = std::min(n_blocks, begin + kBatch);
      for (std::size_t b = begin; b < end; ++b) {
        std::size_t i = first[b];
        for_each_variant(blocks[b], space, [&](const plan::Layout& l) {
          twins.emplace_back(price(l, i), i);
          ++i;
          if (twins.size() == modes) flush_twins();
        });
      }
      done.fetch_add(static_cast<long long>(first[end] - first[begin]));
    }
  };
  // An error inside a worker (bad data met while pricing) stops every worker and is rethrown here, on the
  // caller's thread, instead of terminating the process.
  std::function<void()> tick;
  if (options.progress) {
    tick = [&] {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) options.progress(done.load(), static_cast<long long>(n));
    };
  }
  parallel::run(threads, work, tick, std::chrono::milliseconds(100), [&] {
    next.store(n_blocks);
    done.store(static_cast<long long>(n));
  });
  Result r;
  r.evaluated = static_cast<long long>(n);
  for (const auto& [reason, count] : skipped) {
    r.rejected[reason] += count;
    r.evaluated += count;
  }
  for (std::size_t w = 1; w < keepers.size(); ++w) keepers[0].merge(std::move(keepers[w]));
  keepers[0].finish(r);
  for (const auto& per : rejected) {
    for (const auto& [reason, count] : per) r.rejected[reason] += count;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace sapp::search
