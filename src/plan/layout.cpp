#include "plan/layout.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "plan/split.hpp"
#include "plan/stages.hpp"

namespace sapp::plan {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::Off: return "off";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "off";
}

const char* to_string(CpAlgo a) { return a == CpAlgo::Ring ? "ring" : "all2all"; }

Recompute parse_recompute(const std::string& text, const std::string& where) {
  std::string t;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) t.push_back(c);
  }
  t = io::lower(t);
  if (t == "off" || t == "none" || t == "false" || t == "no") return Recompute::Off;
  if (t == "selective") return Recompute::Selective;
  if (t == "full") return Recompute::Full;
  fail(where, "'{}' is not a recompute mode; expected one of off, selective, full", text);
}

namespace {

Recompute one_mode(const nlohmann::json& value, const std::string& where) {
  if (value.is_boolean()) {
    if (!value.get<bool>()) return Recompute::Off;  // YAML reads a bare `off` as false
    fail(where, "true is not a recompute mode; expected one of off, selective, full, a list of them, or auto");
  }
  if (!value.is_string()) fail(where, "{} is not a recompute mode; expected one of off, selective, full, a list of them, or auto", value.dump());
  std::string text = value.get<std::string>();
  std::string t = io::lower(text);
  if (t == "off" || t == "none") return Recompute::Off;
  if (t == "selective") return Recompute::Selective;
  if (t == "full") return Recompute::Full;
  fail(where, "\"{}\" is not a recompute mode; expected one of off, selective, full, a list of them, or auto", text);
}

}  // namespace

std::vector<Recompute> read_recompute_modes(const nlohmann::json& stated, const std::string& where) {
  if (stated.is_string() && io::lower(stated.get<std::string>()) == "auto") return {Recompute::Off, Recompute::Selective, Recompute::Full};
  std::vector<Recompute> modes;
  for (const auto& v : io::one_or_many(stated, where, "an empty list allows no recompute mode")) {
    Recompute m = one_mode(v, where);
    if (std::find(modes.begin(), modes.end(), m) == modes.end()) modes.push_back(m);
  }
  return modes;
}

Recompute read_activation_checkpoint_mode(const nlohmann::json& stated, const std::string& where) {
  if (stated.is_null()) return Recompute::Off;
  if (stated.is_array() || (stated.is_string() && stated.get<std::string>() == "auto")) {
    fail(where, "{} is not one activation checkpoint mode; expected one of off, selective, full", stated.dump());
  }
  return one_mode(stated, where);
}

std::array<char, 4> parse_rank_order(const std::string& text, const std::string& where) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dash = text.find('-', start);
    parts.push_back(text.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  std::array<char, 4> order{};
  std::string seen;
  if (parts.size() != 4) fail(where, "'{}' is not a rank order: expected the four of tp, cp, dp, pp joined by '-', innermost first", text);
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string& p = parts[i];
    if (p != "tp" && p != "cp" && p != "dp" && p != "pp") fail(where, "'{}' in '{}' is not one of tp, cp, dp, pp", p, text);
    if (seen.find(p[0]) != std::string::npos) fail(where, "'{}' names {} twice", text, p);
    seen.push_back(p[0]);
    order[i] = p[0];
  }
  return order;
}

long long group_span(const Layout& l, const std::array<char, 4>& order, char dim) {
  auto size = [&](char d) -> long long { return d == 't' ? l.tp : d == 'c' ? l.cp : d == 'd' ? l.dp : l.pp; };
  long long inner = 1;
  for (char d : order) {
    if (d == dim) return inner * size(d);
    inner *= size(d);
  }
  return inner;
}

void derive_data_parallel(Layout& l, long long devices, long long global_batch, const std::string& devices_key, const std::string& batch_key) {
  long long replica = 1LL * l.tp * l.pp * l.cp;
  if (replica <= 0 || devices <= 0 || devices % replica != 0) {
    fail(devices_key, "{} devices are not a multiple of TP x PP x CP = {} x {} x {} = {}", devices, l.tp, l.pp, l.cp, replica);
  }
  l.dp = static_cast<int>(devices / replica);
  long long per_step = 1LL * l.dp * l.mbs;
  if (per_step <= 0 || global_batch % per_step != 0) {
    fail(batch_key, "{} is not a multiple of DP x micro-batch size = {} x {} = {}", global_batch, l.dp, l.mbs, per_step);
  }
  l.micro_batches = static_cast<int>(global_batch / per_step);
}

double Layout::expert_zero_group() const {
  int edp = std::max(1, expert_dp());
  return optimizer_shard > 0 ? std::gcd(optimizer_shard, edp) : edp;
}

std::string Layout::describe() const {
  std::string s = fmt::format("dp{} tp{}{} pp{}", dp, tp, sp ? "+sp" : "", pp);
  if (vpp > 1) s += fmt::format(" vpp{}", vpp);
  if (cp > 1) s += fmt::format(" cp{}({})", cp, to_string(cp_algo));
  if (ep > 1) s += fmt::format(" ep{}", ep);
  if (etp > 1) s += fmt::format(" etp{}", etp);
  s += fmt::format(" mbs{} m{} zero{}", mbs, micro_batches, zero);
  if (optimizer_shard > 0) s += fmt::format("/{}", optimizer_shard);
  if (split && split->states_recompute()) {
    s += fmt::format(" rc:{}", format_recompute_counts(*split));
  } else {
    s += fmt::format(" rc:{}", to_string(recompute));
  }
  if (split) s += fmt::format(" layers:{}", format_counts(split->layers));
  return s;
}

namespace {

// Records a broken rule; the detail is formatted only when asked for (searches only count rules).
struct Report {
  std::vector<Violation>& out;
  bool details;
  template <typename Detail>
  void operator()(const char* rule, Detail&& detail) {
    out.push_back(Violation{rule, details ? std::string(detail()) : std::string()});
  }
};

void divides(Report& bad, const char* rule, long long degree, long long size, const char* what, const char* degree_name) {
  if (degree > 1 && size % degree != 0) {
    bad(rule, [&] { return fmt::format("{} {} does not divide {} {}", degree_name, degree, what, size); });
  }
}

}  // namespace

std::vector<Violation> check_layout(const model::Model& model, const Layout& l, const Training& training, long long devices, bool details) {
  return check_layout(model, l, training, Cluster{devices, 0, false}, details);
}

std::vector<Violation> check_layout(const model::Model& model, const Layout& l, const Training& training, const Cluster& cluster, bool details) {
  std::vector<Violation> out;
  const model::ModelSpec& spec = model.spec;
  const long long devices = cluster.devices;
  Report bad{out, details};
  if (l.micro_batches < 1 && l.dp >= 1 && l.mbs >= 1 && training.global_batch > 0) {
    bad("global batch", [&] {
      return fmt::format("DP x micro-batch size = {} x {} = {} does not divide the global batch {}", l.dp, l.mbs, 1LL * l.dp * l.mbs, training.global_batch);
    });
    return out;
  }
  if (cluster.devices_per_node > 0 && !cluster.allow_tp_across_nodes && l.tp > cluster.devices_per_node) {
    bad("tp across nodes", [&] {
      return fmt::format("TP {} spans more than the {} devices of a node (its collectives would cross the NIC; allow with --allow-tp-across-nodes)", l.tp,
                         cluster.devices_per_node);
    });
    return out;
  }
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.cp < 1 || l.ep < 1 || l.etp < 1 || l.vpp < 1 || l.mbs < 1 || l.micro_batches < 1) {
    bad("degree below 1", [&] { return std::string("every degree, the micro-batch size and count must be at least 1"); });
    return out;
  }
  if (devices > 0 && l.devices() != devices) {
    bad("device count",
        [&] { return fmt::format("dp x tp x pp x cp = {} x {} x {} x {} = {}, not the {} devices", l.dp, l.tp, l.pp, l.cp, l.devices(), devices); });
  }
  if (training.global_batch > 0 && 1LL * l.dp * l.mbs * l.micro_batches != training.global_batch) {
    bad("global batch", [&] {
      return fmt::format("dp x micro-batch size x micro-batches = {} x {} x {} = {}, not the global batch {}", l.dp, l.mbs, l.micro_batches,
                         1LL * l.dp * l.mbs * l.micro_batches, training.global_batch);
    });
  }
  divides(bad, "tp/heads", l.tp, spec.num_heads, "num_attention_heads", "TP");
  if (!spec.is_mla() && l.tp > 1 && spec.kv_heads() % l.tp != 0 && l.tp % spec.kv_heads() != 0) {
    bad("tp/kv heads", [&] { return fmt::format("TP {} neither divides the {} KV heads nor is a multiple of them (replication)", l.tp, spec.kv_heads()); });
  }
  if (spec.intermediate_size && !spec.is_moe()) divides(bad, "tp/ffn", l.tp, *spec.intermediate_size, "intermediate_size", "TP");
  if (spec.is_moe() && spec.first_k_dense.value_or(0) > 0 && spec.intermediate_size)
    divides(bad, "tp/ffn", l.tp, *spec.intermediate_size, "intermediate_size", "TP");
  if (spec.shared_expert_width() > 0) divides(bad, "tp/ffn", l.tp, spec.shared_expert_width(), "the shared expert width", "TP");
  if (spec.linear) {
    divides(bad, "tp/linear heads", l.tp, spec.linear->num_key_heads, "linear_num_key_heads", "TP");
    divides(bad, "tp/linear heads", l.tp, spec.linear->num_value_heads, "linear_num_value_heads", "TP");
  }
  if (spec.vision) divides(bad, "tp/vision heads", l.tp, spec.vision->num_heads, "the vision tower's heads", "TP");
  if (l.sp && l.tp == 1)
    bad("sp without tp", [&] { return std::string("sequence parallelism shards along the TP group; with TP 1 it is the same layout as without"); });
  if (l.cp > 1) {
    if (l.cp_algo == CpAlgo::Ring && training.seq % (2LL * l.cp) != 0) {
      bad("seq/cp",
          [&] { return fmt::format("ring CP {} needs the sequence {} divisible by 2 x CP = {} (load-balanced causal chunks)", l.cp, training.seq, 2 * l.cp); });
    }
    if (l.cp_algo == CpAlgo::AllToAll) {
      if (spec.num_heads % (1LL * l.tp * l.cp) != 0)
        bad("heads/cp", [&] { return fmt::format("all-to-all CP {} x TP {} must divide the {} heads", l.cp, l.tp, spec.num_heads); });
      if (training.seq % l.cp != 0) bad("seq/cp", [&] { return fmt::format("CP {} does not divide the sequence {}", l.cp, training.seq); });
    }
  }
  if (dualpipe_v(l, training)) {
    if (l.vpp != 2) bad("dualpipe-v chunks", [&] { return fmt::format("DualPipe-V runs two chunks per stage in a V, not VPP {}", l.vpp); });
    if (l.micro_batches / pipeline_runs(l, training) < 2 * l.pp) {
      bad("dualpipe-v micro-batches", [&] {
        return fmt::format("DualPipe-V needs at least 2 x PP = {} micro-batches per pipeline, not {}", 2 * l.pp, l.micro_batches / pipeline_runs(l, training));
      });
    }
    if (training.seq_split > 1) bad("dualpipe-v seq_split", [&] { return std::string("DualPipe-V and the sequence pipeline are two schedules"); });
  }
  if (training.seq_split > 1) {
    if (training.seq % (1LL * training.seq_split * l.cp) != 0) {
      bad("seq/seq_split",
          [&] { return fmt::format("the sequence pipeline's {} segments x CP {} do not divide the sequence {}", training.seq_split, l.cp, training.seq); });
    }
    if (l.pp == 1) bad("seq_split without pp", [&] { return fmt::format("the sequence pipeline (seq_split {}) needs PP > 1", training.seq_split); });
    if (spec.is_mla() || spec.linear || !training.flash_attention) {
      bad("seq_split attention", [&] { return std::string("the sequence pipeline's KV cache needs flash attention over GQA/MHA heads (MindFormers' Llama)"); });
    }
  }
  if (!spec.is_moe()) {
    if (l.ep > 1) bad("ep on dense", [&] { return fmt::format("EP {} on a dense model (no experts)", l.ep); });
    if (l.etp > 1) bad("ep on dense", [&] { return fmt::format("expert TP {} on a dense model (no experts)", l.etp); });
  } else {
    divides(bad, "experts/ep", l.ep, *spec.num_experts, "the routed experts", "EP");
    divides(bad, "expert width/etp", l.etp, spec.routed_expert_width(), "the expert width", "expert TP");
    long long pool = 1LL * l.dp * l.cp * l.tp;
    if (!experts_fit_stage_ranks(l, pool)) {
      bad("ep/dp", [&] { return fmt::format("EP {} x expert TP {} must divide DP x CP x TP = {} (experts are carved out of it)", l.ep, l.etp, pool); });
    }
  }
  long long chunks = 1LL * l.pp * l.vpp;
  long long layers = model.body_layers() + model.vision_layers();
  if (l.split) {
    for (auto& v : check_split(*l.split, layers, l.pp, l.vpp)) {
      if (details)
        out.push_back(std::move(v));
      else
        out.push_back(Violation{v.rule, {}});
    }
  } else if (long long units = layers + pipeline_head_and_tail_units(model, training); units < chunks) {
    bad("layers < pp x vpp", [&] {
      return units > layers ? fmt::format("{} layers and {} embedding / loss / MTP units cannot fill PP {} x VPP {} = {} chunks", layers, units - layers, l.pp,
                                          l.vpp, chunks)
                            : fmt::format("{} layers cannot fill PP {} x VPP {} = {} chunks", layers, l.pp, l.vpp, chunks);
    });
  }
  if (l.vpp > 1 && l.pp == 1) bad("vpp without pp", [&] { return std::string("virtual pipeline chunks need PP > 1"); });
  const int runs = pipeline_runs(l, training);
  if (runs > 1 && l.micro_batches % runs != 0) {
    bad("pipeline runs", [&] { return fmt::format("{} micro-batches do not split evenly into {} pipeline runs per step", l.micro_batches, runs); });
  } else if (l.vpp > 1 && l.pp > 1 && !dualpipe_v(l, training) && (l.micro_batches / runs) % l.pp != 0) {
    bad("interleave/micro-batches", [&] {
      return runs > 1 ? fmt::format("interleaved 1F1B needs the {} micro-batches of each of the {} pipeline runs divisible by PP {}", l.micro_batches / runs,
                                    runs, l.pp)
                      : fmt::format("interleaved 1F1B needs micro-batches {} divisible by PP {}", l.micro_batches, l.pp);
    });
  }
  if (l.zero < 0 || l.zero > 3) bad("zero stage", [&] { return fmt::format("ZeRO stage {} is not 0, 1, 2 or 3", l.zero); });
  if (l.optimizer_shard > 0 && (1LL * l.dp * l.cp) % l.optimizer_shard != 0) {
    bad("optimizer shard", [&] { return fmt::format("optimizer shard size {} does not divide DP x CP = {}", l.optimizer_shard, l.dp * l.cp); });
  }
  return out;
}

}  // namespace sapp::plan
