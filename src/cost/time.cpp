#include "cost/time.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/memory.hpp"
#include "cost/terms.hpp"

namespace sapp::cost {

namespace {

struct LayerTime {
  double fwd_s = 0;            // forward compute
  double bwd_s = 0;            // backward compute (each term's `backward` factor, 2 unless stated)
  double fwd_flops = 0;        // gemm + attention FLOPs (model FLOPs)
  double bwd_flops = 0;        // the backward's, as executed (flash attention's rerun scores included)
  double recompute_s[3] = {};  // forward work re-run in backward, per recompute mode
  double recompute_flops[3] = {};
  double shared_expert_s = 0;  // the shared experts' forward + backward (what moe_shared_expert_overlap hides EP behind)
  double attention_fwd_s = 0;  // the flash-attention kernels' forward and backward (what a CP ring hides behind)
  double attention_bwd_s = 0;
  double wgrad_floor_s = 0;  // the routed experts' weight-gradient passes beyond their GEMM time (terms::wgrad_pass_min_bytes)
  // Selective recompute drops the dispatched tokens (the expert_in op's switch: Megatron's `moe` module), so its
  // recompute dispatches and combines them again.
  bool selective_redispatches = false;
};

using GemmPrecision = plan::Training::Gemm;

double compute_seconds(const hardware::Hardware& hw, model::WorkKind kind, double amount, GemmPrecision precision = GemmPrecision::Bf16, double rows = 1e9) {
  if (amount <= 0) return 0;
  switch (kind) {
    case model::WorkKind::Gemm: {
      // Achievable fraction ramps with the GEMM's rows (tokens) per rank: eff = gemm * M / (M + M_half).
      const double ramp = rows / (rows + hw.efficiency.gemm_half_rows);
      switch (precision) {
        case GemmPrecision::Bf16: return amount / (hw.peak_flops * hw.efficiency.gemm * ramp);
        case GemmPrecision::Fp8: return amount / (hw.peak_flops_fp8 * hw.efficiency.gemm_fp8 * ramp);
        case GemmPrecision::Fp4: return amount / (hw.peak_flops_fp4 * hw.fp4_gemm_efficiency() * ramp);
      }
      return 0;
    }
    case model::WorkKind::Attention: return amount / (hw.peak_flops * hw.efficiency.attention);
    case model::WorkKind::Memory: return amount / (hw.hbm_bandwidth * hw.efficiency.memory);
  }
  return 0;
}

// A shape symbol's value in `env` (0 when the records state none).
double value_of(const expr::Env& env, int symbol) { return symbol >= 0 && env.has(symbol) ? env.get(symbol).as_double() : 0.0; }

// The query-key head dimension a flash kernel runs: MLA's nope + rope, else dh (0 when the records state neither).
double attention_head_dim(const model::OpRecords& rec, const expr::Env& env) {
  return value_of(env, rec.shape.mla) == 1 ? value_of(env, rec.shape.nope) + value_of(env, rec.shape.rope) : value_of(env, rec.shape.dh);
}

// Keys per query one attention call sees: the layer's `ctx`, of which a ring CP step's call holds one block of 1/cp
// (all-to-all CP calls the kernel on every key).
double attention_keys_per_call(const model::OpRecords& rec, const expr::Env& env, const plan::Layout& l) {
  const double keys = value_of(env, rec.layout.ctx);
  return l.cp > 1 && l.cp_algo == plan::CpAlgo::Ring ? keys / static_cast<double>(l.cp) : keys;
}

// The attention kernel's rate for a layer whose names `env` binds, as a multiple of the device's fitted attention
// efficiency (terms::attention_kernel_rate; cuDNN 9.19's published rate: terms::cudnn919_attention_efficiency).
double attention_rate_of(const model::OpRecords& rec, const expr::Env& env, const plan::Layout& l, const plan::Training& training,
                         const hardware::Hardware& hw) {
  const double head_dim = attention_head_dim(rec, env);
  const plan::AttentionKernel kernel = terms::resolved_attention_kernel(training.attention_kernel, hw);
  if (kernel == plan::AttentionKernel::Cudnn919)
    return terms::cudnn919_attention_efficiency(hw, attention_keys_per_call(rec, env, l), head_dim) / hw.efficiency.attention;
  return terms::attention_kernel_rate(kernel, head_dim);
}

LayerTime layer_time(const model::Model& model, const model::BoundKind& kind, const plan::Layout& l, const plan::Training& training,
                     const hardware::Hardware& hw) {
  const model::OpRecords& rec = *model.records;
  expr::Env env = plan::layer_env(model, kind, l, training);
  std::vector<char> dropped(rec.switches.size(), 0);
  for (const auto& name : training.recompute_modules.empty() ? model.selective : training.recompute_modules) {
    int sw = rec.switch_index(name);
    if (sw < 0) fail("recompute_modules", "expected a recompute switch of the op records, got '{}'", name);
    dropped[static_cast<std::size_t>(sw)] = 1;
  }
  bool redispatch = false;
  for (const model::OpRecord& op : rec.ops) {
    if (op.name == "expert_in" && !op.switch_name.empty() && dropped[static_cast<std::size_t>(rec.switch_index(op.switch_name))]) redispatch = true;
  }
  // The routed experts' width per expert-TP rank, for the grouped-GEMM loss (efficiency.grouped_gemm_half_width).
  const int ffn_sym = rec.shape.ffn;
  const double expert_width = value_of(env, ffn_sym) / l.etp;
  const double attention_rate = attention_rate_of(rec, env, l, training, hw);
  LayerTime out;
  out.selective_redispatches = redispatch;
  for (const auto& term : kind.work) {
    if (term.when && !term.when->eval(env).truthy()) continue;
    double amount = term.formula.eval_double(env);
    double div = term.shard == model::Shard::Tensor ? l.tp : term.shard == model::Shard::SequenceParallel ? l.tsp() : 1;
    amount /= div;
    double rows = term.kind != model::WorkKind::Gemm ? 0.0 : term.rows ? term.rows->eval_double(env) : static_cast<double>(training.seq) / l.cp * l.mbs;
    if (kind.vision && !term.rows) rows = static_cast<double>(model.spec.vision->tokens) * l.mbs;
    double seconds = compute_seconds(hw, term.kind, amount, training.gemm_precision(), rows);
    if (term.role == model::WorkRole::FlashAttention && training.flash_attention) seconds /= attention_rate;  // the kernel run, its head dimension
    if (term.role == model::WorkRole::RoutedExperts || term.role == model::WorkRole::RoutedTokens) {
      // The slowest EP rank gets moe_imbalance times the mean routed tokens; the grouped GEMM also runs below the
      // dense GEMM's efficiency on narrow experts (the device's efficiency.grouped_gemm_half_width).
      if (term.role == model::WorkRole::RoutedExperts && term.kind == model::WorkKind::Gemm && expert_width > 0) {
        // The narrow-expert loss is priced at the BF16 rate whatever the GEMM precision: it comes from the tile
        // shapes and the per-expert launches, which FP8 tensor cores do not speed up.
        seconds += compute_seconds(hw, term.kind, amount, GemmPrecision::Bf16, rows) * hw.efficiency.grouped_gemm_half_width / expert_width;
      }
      seconds *= training.moe_imbalance;
    }
    out.fwd_s += seconds;
    double backward = term.backward ? term.backward->eval_double(env) : 2.0;
    if (term.kind == model::WorkKind::Gemm && training.lora_rank > 0)
      backward = terms::frozen_gemm_backward(terms::trainable_fraction(training, static_cast<double>(model.spec.hidden_size)));
    out.bwd_s += seconds * backward;
    if (term.role == model::WorkRole::RoutedExperts && term.kind == model::WorkKind::Gemm && training.lora_rank == 0 && rows > 0) {
      // The weight-gradient pass (one forward's worth of the backward) moves at least its gradients twice and its
      // inputs once (terms::wgrad_pass_min_bytes): the local experts' weights amount / (2 rows); per routed copy
      // 2 h + n_ffn_mm ffn input and output-gradient elements (gated: the up pair's input h and output gradient
      // 2 ffn, the down projection's input ffn and output gradient h).
      const double weights = amount / (2.0 * rows);
      const double hd = value_of(env, rec.shape.h), mm = value_of(env, rec.shape.n_ffn_mm), width = expert_width;
      const double copies = hd > 0 && mm > 0 && width > 0 ? amount / (2.0 * hd * width * mm) : 0.0;
      const double bytes = terms::wgrad_pass_min_bytes(weights, training.gradient_bytes(), copies * (2.0 * hd + mm * width),
                                                       training.fp8 ? training.quantized_bytes() : training.compute_bytes);
      const double floor_s = compute_seconds(hw, model::WorkKind::Memory, bytes);
      out.wgrad_floor_s += std::max(0.0, floor_s - seconds);
    }
    if (term.role == model::WorkRole::SharedExperts) out.shared_expert_s += seconds * (1.0 + backward);
    if (term.role == model::WorkRole::FlashAttention && training.flash_attention) {
      out.attention_fwd_s += seconds;
      out.attention_bwd_s += seconds * backward;
    }
    bool flops = term.kind != model::WorkKind::Memory;
    if (flops) {
      out.fwd_flops += amount;
      out.bwd_flops += amount * backward;
    }
    const model::OpRecord& op = rec.ops[static_cast<std::size_t>(term.op)];
    // Full recompute re-runs every forward term; selective the terms of ops under a dropped switch.
    const int full = static_cast<int>(plan::Recompute::Full);
    const int sel = static_cast<int>(plan::Recompute::Selective);
    out.recompute_s[full] += seconds;
    if (flops) out.recompute_flops[full] += amount;
    if (!op.switch_name.empty() && dropped[static_cast<std::size_t>(rec.switch_index(op.switch_name))]) {
      out.recompute_s[sel] += seconds;
      if (flops) out.recompute_flops[sel] += amount;
    }
  }
  out.bwd_s += out.wgrad_floor_s;
  return out;
}

// Ring collective over n ranks on `link` (Hardware::ring_link): each rank moves (n-1)/n of `bytes` per pass.
// The share of a device's SMs an EP all-to-all running beside compute takes (terms::kEpCommSms; 0 when the
// device states no SM count).
double ep_sm_share(const hardware::Hardware& hw) { return hw.sm_count > 0 ? std::min(1.0, terms::kEpCommSms / hw.sm_count) : 0.0; }

double ring_seconds(const hardware::Hardware& hw, const hardware::Level& link, double n, double bytes, double passes) {
  if (n <= 1 || bytes <= 0) return 0;
  double bw = link.bandwidth * hw.efficiency.comm;
  return passes * ((n - 1) / n * bytes / bw + (n - 1) * link.latency);
}

// The ring link of one parallel dimension's group under the layout's rank order.
hardware::Level group_ring_link(const hardware::Hardware& hw, const plan::Layout& l, const std::array<char, 4>& order, char dim, long long size) {
  return hw.ring_link(size, std::max(1LL, plan::group_span(l, order, dim) / std::max(1LL, size)));
}

// Exposed DP communication of one stage. Megatron's overlapped gradient reduce starts a model chunk's buckets
// during that chunk's last backward; with v interleaved chunks, the last p micro-batches run their backward
// chunk by chunk (v-1 first), so chunk j's reduce can also hide behind the j*p chunk-backwards still to come.
// The reduces share one network and run in that order. The parameter all-gather mirrors it at the start of the
// next step's forward (chunk j is first needed after j*p chunk-forwards). `overlap` caps the hidden share
// (overlapped collectives still slow the kernels they share the GPU with). Without PP, p = v = 1: the reduce
// hides behind the last micro-batch's backward, the gather behind the first forward.
double dp_exposed(double reduce, double gather, double backward_mb, double forward_mb, int p, int v, double overlap) {
  double bc = backward_mb / v, fc = forward_mb / v;
  double finish = -1e300;  // time the reduces end, measured from the end of the last backward
  for (int j = v - 1; j >= 0; --j) finish = std::max(finish, -(1.0 * j * p + 1.0) * bc) + reduce / v;
  double late = 0;  // how long the first forward of some chunk waits for its parameters
  for (int j = 0; j < v; ++j) late = std::max(late, (j + 1.0) * gather / v - (1.0 * j * p + 1.0) * fc);
  return std::max(std::max(0.0, finish), reduce * (1.0 - overlap)) + std::max(late, gather * (1.0 - overlap));
}

// How a token's k routed experts spread over the experts' groups: n_group equal groups in expert order, at most
// topk_group of them per token (DeepSeek-V3's node-limited routing, DeepSeek-AI 2024, arXiv:2412.19437 §2.1.2:
// "each token will be sent to at most M nodes"; DeepSeek-V2's device-limited routing, arXiv:2405.04434 §2.2.3).
// n_group 0: no limit.
// `contiguous`: a token's k experts are k consecutive ones starting at a multiple of k (NeMo AutoModel's
// FakeBalancedGate, a benchmark gate: expert indices (token x k + j) mod n_experts), so it reaches
// ceil(k / experts per unit) units, not a random spread.
struct Routing {
  double topk = 1;
  long long groups = 0;
  long long group_limit = 0;
  bool contiguous = false;
  double experts = 0;
};

// C(n, r) / C(N, r): the chance that r groups drawn without replacement out of N all avoid a set of N - n.
double all_avoid(long long n, long long total, long long r) {
  double p = 1;
  for (long long i = 0; i < r; ++i) p *= static_cast<double>(n - i) / static_cast<double>(total - i);
  return std::max(0.0, p);
}

// Expected remote units (of U equal units the EP group spans at one level) a token's copies reach, for uniform
// routing: (U - 1)(1 - (1 - 1/U)^k). With group-limited routing the reachable units are those of its topk_group
// groups: with several groups per unit, the expected units those groups touch, U (1 - C(n - g, t) / C(n, t)) for
// g = n / U groups per unit; with a group spanning several units, k copies spread over its t U / n units. Either
// way a share (U - 1) / U of them is remote. The smaller of the two counts applies. Contiguous routing reaches
// ceil(k U / n_experts) units (at most U), a share (U - 1) / U of them remote (tokens start at every unit alike).
double remote_units_reached(double units, const Routing& r) {
  if (r.contiguous && r.experts > 0) return std::min(units, std::ceil(r.topk * units / r.experts)) * (units - 1.0) / units;
  double uniform = (units - 1.0) * (1.0 - std::pow(1.0 - 1.0 / units, r.topk));
  if (r.groups <= 1 || r.group_limit <= 0 || r.group_limit >= r.groups) return uniform;
  const auto u = static_cast<long long>(std::llround(units));
  double reached = 0;
  if (u <= r.groups && r.groups % u == 0) {
    long long per_unit = r.groups / u;
    reached = units * (1.0 - all_avoid(r.groups - per_unit, r.groups, r.group_limit));
  } else if (u > r.groups && u % r.groups == 0) {
    const long long units_per_group = u / r.groups;  // exact: u % groups == 0
    double candidates = static_cast<double>(r.group_limit * units_per_group);
    reached = candidates * (1.0 - std::pow(1.0 - 1.0 / candidates, r.topk));
  } else {
    return uniform;  // groups that do not tile the units: no limit assumed
  }
  return std::min(uniform, reached * (units - 1.0) / units);
}

// Seconds per routed-token copy byte of one EP all-to-all (dispatch or combine) over `ep` ranks spaced `stride`
// apart: each level's share of the copies on that level's per-device link, at once (the slowest level governs), as
// Hardware::all_to_all. With `dedup` (DeepEP / HybridEP), the copies a token sends past the innermost level are one
// per remote unit it reaches (remote_units_reached) of its k copies, and within one node one per other rank it
// reaches (DeepEP's intranode dispatch sends a token once to each rank holding any of its experts, is_token_in_rank
// of get_dispatch_layout, and its combine returns one reduced copy per rank; github.com/deepseek-ai/DeepEP README).
// Across nodes the innermost level keeps the per-copy share (its forwarding of tokens from other nodes is not
// priced; the inter-node level governs there).
double ep_seconds_per_copy_byte(const hardware::Hardware& hw, long long ep, long long stride, const Routing& routing, bool dedup) {
  const double topk = routing.topk;
  if (ep <= 1) return 0;
  double out = 0;
  long long below = 1;
  for (std::size_t i = 0; i < hw.levels.size(); ++i) {
    const hardware::Level& level = hw.levels[i];
    long long within = level.devices == 0 || ep * stride <= level.devices ? ep : std::max(1LL, std::min(ep, level.devices / stride));
    if (within > below && level.bandwidth > 0) {
      double share = static_cast<double>(within - below) / static_cast<double>(ep);
      if (dedup && topk > 1 && (i > 0 || within == ep)) {
        double units = static_cast<double>(within) / static_cast<double>(below);
        share = remote_units_reached(units, routing) / topk;
      }
      out = std::max(out, share / level.bandwidth);
    }
    below = within;
    if (within == ep) break;
  }
  return out;
}

}  // namespace

double model_forward_flops_per_sequence(const model::Model& model, const plan::Training& training) {
  if (training.seq_split > 1) {
    // The whole sequence, however the pipeline splits it.
    plan::Training whole = training;
    whole.seq_split = 1;
    return model_forward_flops_per_sequence(model, whole);
  }
  plan::Layout one;
  double flops = 0;
  for (const auto& g : model.stack) {
    const model::BoundKind& kind = model.kinds[static_cast<std::size_t>(g.kind)];
    expr::Env env = plan::layer_env(model, kind, one, training);
    for (const auto& term : kind.work) {
      if (term.kind == model::WorkKind::Memory) continue;
      if (term.when && !term.when->eval(env).truthy()) continue;
      flops += static_cast<double>(g.count) * term.formula.eval_double(env);
    }
  }
  double s = static_cast<double>(training.seq);
  double h = static_cast<double>(model.spec.hidden_size);
  double v = static_cast<double>(model.spec.vocab_size);
  flops += terms::lm_head_forward_flops(s, h, v, static_cast<double>(model.mtp_layers()));
  flops += 2.0 * s * model.mtp_extra_params * static_cast<double>(model.mtp_layers() > 0 ? 1 : 0);
  return flops;
}

StepTime estimate_time(const model::Model& model, const plan::Layout& l, const plan::Training& training, const hardware::Hardware& hw, const Overlap& overlap) {
  return estimate_time(model, l, training, hw, estimate_memory(model, l, training, hw.memory_bytes), overlap, nullptr);
}

KindTimes kind_times(const model::Model& model, const plan::Layout& l, const plan::Training& training, const hardware::Hardware& hw, const Overlap& overlap) {
  if (training.fp8) hw.require_fp8_rate();
  if (training.fp8 && training.fp4) hw.require_fp4_rate();
  const model::ModelSpec& spec = model.spec;
  double h = static_cast<double>(spec.hidden_size);
  double bc = training.compute_bytes;
  double tokens = static_cast<double>(training.unit_seq()) / l.cp * l.mbs;  // one pipeline unit, per rank before TP/SP sharding
  // Links follow the rank order (training.rank_order, innermost first); experts use Megatron's expert layout,
  // expert-TP x EP x expert-DP over the same ranks, so an EP group spans expert-TP x EP consecutive ranks.
  const hardware::Level tp_link = group_ring_link(hw, l, training.rank_order, 't', l.tp);
  const hardware::Level& cp_link = hw.level_for_span(plan::group_span(l, training.rank_order, 'c'));
  // Megatron's expert layout: expert-TP innermost, then EP, over consecutive ranks.
  const hardware::Hardware::AllToAll ep_a2a = hw.all_to_all(l.ep, l.etp);
  const double ep_topk = static_cast<double>(spec.experts_per_token.value_or(1));
  const Routing routing{ep_topk, spec.routing_groups.value_or(0), spec.routing_group_limit.value_or(0), training.moe_contiguous_routing,
                        static_cast<double>(spec.num_experts.value_or(0))};
  const double ep_s_per_byte = ep_seconds_per_copy_byte(hw, l.ep, l.etp, routing, training.ep_dedup_per_node);
  const hardware::Hardware::AllToAll cp_a2a = hw.all_to_all(l.cp, plan::group_span(l, training.rank_order, 'c') / l.cp);
  KindTimes result;
  result.model_flops_per_sequence = model_forward_flops_per_sequence(model, training);
  std::vector<KindTime>& out = result.kinds;
  out.reserve(model.kinds.size());
  for (const model::BoundKind& kind : model.kinds) {
    KindTime kt;
    LayerTime lt = layer_time(model, kind, l, training, hw);
    kt.fwd_s = lt.fwd_s;
    kt.bwd_s = lt.bwd_s;
    kt.fwd_flops = lt.fwd_flops;
    kt.bwd_flops = lt.bwd_flops;
    for (int m = 0; m < 3; ++m) {
      kt.recompute_s[m] = lt.recompute_s[m];
      kt.recompute_flops[m] = lt.recompute_flops[m];
    }
    kt.selective_redispatches = lt.selective_redispatches;
    kt.wgrad_floor_s = lt.wgrad_floor_s;
    double kh = kind.vision ? static_cast<double>(spec.vision->hidden_size) : h;
    double ktokens = kind.vision ? static_cast<double>(spec.vision->tokens) * l.mbs : tokens;
    double collectives = static_cast<double>(kind.kind.ops.at("tp_comm"));
    // Each collective moves the layer's activation tensor; backward repeats them: 2 x collectives passes.
    kt.tp_raw_s = ring_seconds(hw, tp_link, l.tp, ktokens * kh * bc, 2.0 * collectives);
    kt.tp_s = (1.0 - overlap.tp) * kt.tp_raw_s;
    bool gathered_cp = false;  // this kind's CP priced as a gathered ring (its own forward part)
    const double ulysses_s =
        l.cp > 1 ? terms::kUlyssesAllToAlls * (tokens * h * bc / l.tp * cp_a2a.seconds_per_byte / hw.efficiency.comm + cp_a2a.latency) : 0.0;
    if (l.cp > 1 && !kind.vision && (kind.kind.attention == model::AttentionFlavour::Gqa || kind.kind.attention == model::AttentionFlavour::Mla)) {
      double kv_width = spec.kv_exchange_width(training.cp_kv_repeated);
      if (l.cp_algo == plan::CpAlgo::Ring) {
        double bw = cp_link.bandwidth * hw.efficiency.comm;
        // Eager attention leaves nothing for the ring to hide behind (Megatron's CP runs only through Transformer
        // Engine's fused or flash attention).
        double block_s = tokens * kv_width * bc / l.tp / bw + cp_link.latency;
        gathered_cp = training.cp_kv_gathered_once;
        if (gathered_cp) {
          // PyTorch's all-gather rotater: K,V gathered once per pass, dK,dV passed per step in fp32.
          const double grad_block_s = tokens * kv_width * terms::kFp32Bytes / l.tp / bw + cp_link.latency;
          const terms::GatheredCp g = terms::gathered_cp_seconds(l.cp, block_s, grad_block_s, lt.attention_fwd_s, lt.attention_bwd_s, overlap.cp);
          kt.cp_raw_s = g.raw_s;
          kt.cp_s = g.forward_s + g.backward_s;
          kt.cp_fwd_s = g.forward_s;
          kt.cp_raw_fwd_s = (l.cp - 1) * block_s;
        } else {
          kt.cp_raw_s = terms::kRingCpPassesPerStep * (l.cp - 1) * block_s;
          kt.cp_s = terms::ring_cp_exposed_seconds(l.cp, block_s, lt.attention_fwd_s, lt.attention_bwd_s, overlap.cp);
        }
        // The merges of the steps' partial results (terms::kRingMergeElementsPerPass), compute-stream memory passes
        // that a full recompute runs again with the forward.
        const double out_elements = tokens * static_cast<double>(spec.num_heads) * spec.attention_value_width() / l.tp;
        const double merge_bytes = terms::kRingMergeElementsPerPass * bc * terms::ring_merge_steps(l.cp);
        kt.cp_merge_fwd_s = compute_seconds(hw, model::WorkKind::Memory, merge_bytes * out_elements);
        kt.cp_merge_bwd_s = compute_seconds(hw, model::WorkKind::Memory, merge_bytes * (out_elements + tokens * kv_width / l.tp));
        kt.fwd_s += kt.cp_merge_fwd_s;
        kt.bwd_s += kt.cp_merge_bwd_s;
        kt.recompute_s[static_cast<int>(plan::Recompute::Full)] += kt.cp_merge_fwd_s;
      } else {
        // Four all-to-alls (q, k, v, output) forward and their four in backward.
        kt.cp_s = ulysses_s;
        kt.cp_raw_s = kt.cp_s;
      }
    }
    if (l.cp > 1 && !kind.vision && kind.kind.attention == model::AttentionFlavour::Linear) {
      kt.cp_s = ulysses_s;  // terms::kUlyssesAllToAlls: the mixer's switch to a head split and back, whatever --cp-algo says
      kt.cp_raw_s = kt.cp_s;
    }
    if (l.cp > 1 && !gathered_cp) {
      // The forward's part, run again by a full recompute: one of a ring step's three transfers (and a third of
      // Ulysses's all-to-alls, as they were priced before).
      kt.cp_fwd_s = kt.cp_s / terms::kRingCpPassesPerStep;
      kt.cp_raw_fwd_s = kt.cp_raw_s / terms::kRingCpPassesPerStep;
    }
    if (l.ep > 1 && kind.kind.ffn == model::FfnFlavour::Moe && !kind.vision) {
      // dispatch + combine, forward and backward: four all-to-alls of the routed copies (the slowest EP rank
      // carries moe_imbalance times the mean; capacity-padded experts exchange capacity_factor times them).
      double bytes = tokens * ep_topk * h * bc / l.tsp() * training.moe_imbalance * training.capacity_factor;
      kt.ep_raw_s = terms::kEpAllToAlls * (bytes * ep_s_per_byte / hw.efficiency.comm + ep_a2a.latency);
      kt.ep_s = (1.0 - overlap.ep) * kt.ep_raw_s;
      // Megatron's moe_shared_expert_overlap runs the shared experts on a side stream while the dispatch and
      // combine are in flight: what the fraction leaves exposed hides behind them, up to their own time.
      if (training.shared_expert_overlap) kt.ep_s = std::max(0.0, kt.ep_s - lt.shared_expert_s);
      // What hides still takes SMs from the compute it hides behind (terms::kEpCommSms): per layer, so that the
      // balancer's layer times carry it too.
      kt.ep_s += (kt.ep_raw_s - kt.ep_s) * ep_sm_share(hw);
    }
    if (kind.kind.ffn == model::FfnFlavour::Moe && !kind.vision && !training.ep_dedup_per_node) {
      // The alltoall dispatcher's host synchronisations (terms::kAllToAllDispatcherHostSeconds), a third in the
      // forward and two thirds in the backward like the work they interrupt.
      kt.host_s = terms::kAllToAllDispatcherHostSeconds;
      kt.fwd_s += terms::kForwardShare * kt.host_s;
      kt.bwd_s += terms::kBackwardShare * kt.host_s;
    }
    out.push_back(kt);
  }
  return result;
}

StepTime estimate_time(const model::Model& model, const plan::Layout& l, const plan::Training& training, const hardware::Hardware& hw,
                       const cost::MemoryEstimate& mem, const Overlap& overlap, const KindTimes* precomputed, std::vector<StageTime>* stages) {
  KindTimes computed;
  if (precomputed == nullptr) {
    computed = kind_times(model, l, training, hw, overlap);
    precomputed = &computed;
  }
  const std::vector<KindTime>& per_kind = precomputed->kinds;
  const model::ModelSpec& spec = model.spec;
  double h = static_cast<double>(spec.hidden_size);
  double bc = training.compute_bytes;
  double tokens = static_cast<double>(training.unit_seq()) / l.cp * l.mbs;  // one pipeline unit, per rank before TP/SP sharding
  // The gradient group is DP x CP: it reaches as far as the outer of the two dimensions.
  long long dp_span = std::max(plan::group_span(l, training.rank_order, 'd'), plan::group_span(l, training.rank_order, 'c'));
  const hardware::Level dp_link = hw.ring_link(1LL * l.dp * l.cp, dp_span / (1LL * l.dp * l.cp));
  // Expert-DP ranks lie within the DP x CP x TP block, outside expert-TP x EP (Megatron's expert layout).
  const hardware::Level edp_link = hw.ring_link(std::max(1, l.expert_dp()), 1LL * l.etp * l.ep);
  // Neighbouring stages are one PP stride apart: the pair spans that stride times two.
  const hardware::Level& pp_link = hw.level_for_span(plan::group_span(l, training.rank_order, 'p') / l.pp * std::min(2, l.pp));

  StepTime out;
  std::size_t P = static_cast<std::size_t>(l.pp);
  const double mtp_depths = static_cast<double>(model.mtp_layers());
  double head_fwd = compute_seconds(hw, model::WorkKind::Gemm, terms::lm_head_forward_flops(tokens, h, static_cast<double>(spec.vocab_size), mtp_depths) / l.tp,
                                    training.fp8 && terms::kLmHeadRunsInFp8 ? training.gemm_precision() : GemmPrecision::Bf16, tokens);
  // Per stage, one micro-batch: compute, recompute, exposed TP / CP / EP, and their sum (one allocation: this
  // runs once per searched candidate).
  std::vector<double> per_stage(9 * P, 0.0);
  double* compute = per_stage.data();
  double* recompute = compute + P;
  double* tpc = recompute + P;
  double* cpc = tpc + P;
  double* epc = cpc + P;
  double* stage_s = epc + P;
  double* tpr = stage_s + P;  // TP, CP and EP collectives before any overlap
  double* cpr = tpr + P;
  double* epr = cpr + P;
  double hw_flops_mb = 0;  // per micro-batch, summed over stages (one model replica)
  plan::for_each_chunk_group(model, l, training, [&](int stage, int /*chunk*/, int kind, long long count, plan::Recompute mode) {
    // The run's recompute mode: the layout's, or per chunk when a stated split says so.
    const double again = mode == plan::Recompute::Full ? 1.0 : 0.0;
    std::size_t si = static_cast<std::size_t>(stage);
    std::size_t k = static_cast<std::size_t>(kind);
    double n = static_cast<double>(count);
    compute[si] += n * (per_kind[k].fwd_s + per_kind[k].bwd_s);
    recompute[si] += n * per_kind[k].recompute_s[static_cast<int>(mode)];
    // Full recompute re-runs each layer's forward with its collectives: TP's forward half of its forward +
    // backward passes, CP's forward part (cp_fwd_s), EP's dispatch and combine (half).
    tpc[si] += n * per_kind[k].tp_s * (1.0 + again / 2.0);
    cpc[si] += n * (per_kind[k].cp_s + again * per_kind[k].cp_fwd_s);
    // EP's dispatch and combine (half) again under full recompute, and under a selective one that drops them.
    const double again_ep = mode == plan::Recompute::Selective && per_kind[k].selective_redispatches ? 1.0 : again;
    epc[si] += n * per_kind[k].ep_s * (1.0 + again_ep / 2.0);
    tpr[si] += n * per_kind[k].tp_raw_s * (1.0 + again / 2.0);
    cpr[si] += n * (per_kind[k].cp_raw_s + again * per_kind[k].cp_raw_fwd_s);
    epr[si] += n * per_kind[k].ep_raw_s * (1.0 + again_ep / 2.0);
    hw_flops_mb += n * (per_kind[k].fwd_flops + per_kind[k].bwd_flops + per_kind[k].recompute_flops[static_cast<int>(mode)]) * l.tp;
  });
  // Loss: the logits upcast to fp32, softmax and its gradient read and write about 12 bytes per logit
  // (memory bound), forward and backward, once per MTP depth too.
  // Logits gathered whole over TP (plan::Training::logits_whole_over_tp): every TP rank runs the loss on the full
  // vocabulary, after an all-gather of the logits in the compute dtype that the loss waits on (exposed; its backward
  // keeps the local slice of the gradient, no collective).
  const double vocab_split = terms::logits_split(training, l.tp);
  double loss = compute_seconds(hw, model::WorkKind::Memory, terms::loss_bytes(tokens, static_cast<double>(spec.vocab_size), mtp_depths) / vocab_split);
  // The head's forward and its backward (2x; a frozen head under LoRA only its input gradient), and the loss.
  const double trained = terms::trainable_fraction(training, h);
  // A chunked loss (plan::Training::loss_chunked) computes the logits again in its backward.
  const auto head_at = static_cast<std::size_t>(plan::head_stage(l, training));
  compute[head_at] += head_fwd * (1.0 + (training.lora_rank > 0 ? terms::frozen_gemm_backward(trained) : 2.0) + (training.loss_chunked ? 1.0 : 0.0)) + loss;
  if (vocab_split < l.tp) {
    double gather = ring_seconds(hw, group_ring_link(hw, l, training.rank_order, 't', l.tp), l.tp,
                                 tokens * static_cast<double>(spec.vocab_size) * (1.0 + mtp_depths) * bc, 1.0);
    tpc[head_at] += gather;
    tpr[head_at] += gather;
  }
  for (std::size_t si = 0; si < P; ++si) {
    // Physical overlap: TP, CP and EP collectives hide only behind compute the stage runs at the same time
    // (forward, backward and recompute of the micro-batch), and they share it: each term may hide behind at most
    // its share of that compute, in proportion to its own time, whatever its overlap fraction claims.
    double raw = tpr[si] + cpr[si] + epr[si];
    if (raw > 0) {
      double window = compute[si] + recompute[si];
      tpc[si] = std::max(tpc[si], tpr[si] - window * tpr[si] / raw);
      cpc[si] = std::max(cpc[si], cpr[si] - window * cpr[si] / raw);
      // EP: what the window hides still costs its SM share (as in kind_times).
      epc[si] = std::max(epc[si], epr[si] - window * epr[si] / raw * (1.0 - ep_sm_share(hw)));
    }
    stage_s[si] = compute[si] + recompute[si] + tpc[si] + cpc[si] + epc[si];
  }
  if (stages != nullptr) {
    stages->assign(P, StageTime{});
    for (std::size_t si = 0; si < P; ++si) {
      (*stages)[si] = StageTime{compute[si], recompute[si], tpc[si], cpc[si], epc[si], stage_s[si], tpr[si], cpr[si], epr[si]};
    }
  }
  double m = static_cast<double>(l.micro_batches) * std::max(1, training.seq_split);  // pipeline units
  double v = l.vpp;
  // Pipelines run one after another in the step (plan::Training::pipeline_runs), each over m / runs micro-batches
  // with its own fill, drain and data-parallel reduce.
  const double runs = plan::pipeline_runs(l, training);
  const double m_run = m / runs;
  double slowest = *std::max_element(stage_s, stage_s + P);
  std::size_t slow = static_cast<std::size_t>(std::max_element(stage_s, stage_s + P) - stage_s);
  double sum = 0;
  for (std::size_t si = 0; si < P; ++si) sum += stage_s[si];
  // 1F1B: fill and drain pass every stage once, the steady state runs at the slowest stage:
  // (m - 1) * max + sum; uniform stages give (m + p - 1) * t. Interleaved: chunks of t/v, the fill shrinks by v.
  double pipeline = l.pp == 1 ? m * sum : runs * (v == 1 ? (m_run - 1.0) * slowest + sum : sum / v + (m_run * v - 1.0) * slowest / v);
  if (plan::dualpipe_v(l, training)) {
    // DualPipe-V: (PP - 1)(F&B + B - 3W) of one chunk, half a stage (the DualPipe repository's table), F&B a
    // forward and a backward run together and W the weight-gradient half of a backward: (PP - 1)(F + B / 2).
    const double chunk = slowest / 2.0;
    const double bubble = (l.pp - 1.0) * chunk * (terms::kForwardShare + (1.0 - terms::kWeightGradientShare) * terms::kBackwardShare);
    pipeline = runs * (m_run * slowest + bubble);
  }
  double busy = m * slowest;
  out.breakdown.compute_s = m * compute[slow];
  out.breakdown.recompute_s = m * recompute[slow];
  out.breakdown.tp_comm_s = m * tpc[slow];
  out.breakdown.cp_comm_s = m * cpc[slow];
  out.breakdown.ep_comm_s = m * epc[slow];
  out.breakdown.bubble_s = pipeline - busy;

  // Data parallel: gradients reduce-scattered (ZeRO >= 1) or all-reduced, updated parameters all-gathered.
  double dp_comm = 0;
  double optimizer = 0;
  double pp_comm = 0;
  for (const auto& st : mem.stages) {
    double pn = st.param_elements;
    double pe = st.expert_param_elements;
    double dp_group = static_cast<double>(l.dp) * l.cp;
    double edp_group = std::max(1, l.expert_dp());
    // Gradient reduce (all-reduce without ZeRO, reduce-scatter with it) after the backward, parameter
    // all-gather (ZeRO >= 1) before the next forward.
    double passes = l.zero == 0 ? 2.0 : 1.0;
    // Under LoRA only the adapters have gradients and updated weights to gather (ZeRO 3 still gathers every weight).
    double reduce = ring_seconds(hw, dp_link, dp_group, pn * training.reduced_gradient_bytes() * trained, passes) +
                    ring_seconds(hw, edp_link, edp_group, pe * training.reduced_gradient_bytes() * trained, passes);
    const double gathered = terms::shards_weights(training, l) ? 1.0 : trained;
    double gather = l.zero == 0 ? 0.0
                                : ring_seconds(hw, dp_link, dp_group, pn * training.gathered_param_bytes() * gathered, 1.0) +
                                      ring_seconds(hw, edp_link, edp_group, pe * training.gathered_param_bytes() * gathered, 1.0);
    double one_mb = stage_s[static_cast<std::size_t>(st.stage)];
    double exposed = runs * dp_exposed(reduce, gather, one_mb * terms::kBackwardShare, one_mb * terms::kForwardShare, l.pp, l.vpp, overlap.dp);
    if (l.zero >= 2 && !terms::zero3_keeps_stage_gathered(training, l)) {
      // Sharded gradients cannot accumulate whole: every micro-batch but the last (whose reduce is the one above)
      // reduce-scatters its gradients during its backward (ZeRO 2). ZeRO 3 also gathers the parameters for every
      // forward but the first (gathered above) and for every backward. Expert parameters go over the expert-DP
      // group. Each hides behind that micro-batch's forward or backward on the stage, up to the overlap fraction.
      // With ZeRO >= 1, `reduce` is one reduce-scatter and `gather` one all-gather of the stage's shard.
      auto hidden = [&](double c, double window) { return std::max(c * (1.0 - overlap.dp), c - window); };
      // MindSpore's parallel optimizer accumulates whole and reduce-scatters once (above), re-gathering only.
      // So does FSDP2 with its gradient sync deferred to the step's last micro-batch (plan::Training::defer_grad_sync).
      double rs = (training.zero3_gathers_once_per_step && l.zero >= 3) || training.defer_grad_sync ? 0.0 : reduce;
      // FSDP2's ZeRO-2 keeps each forward's gather to the backward, and gathers again for the next forward.
      const double ag_forward = terms::shards_weights(training, l) ? gather : 0.0;
      const double ag_backward = l.zero >= 3 ? gather : 0.0;
      double forward_mb = one_mb * terms::kForwardShare, backward_mb = one_mb * terms::kBackwardShare;
      exposed += (m - runs) * (hidden(rs + ag_backward, backward_mb) + hidden(ag_forward, forward_mb)) + runs * hidden(ag_backward, backward_mb);
    }
    dp_comm = std::max(dp_comm, exposed);
    // Optimizer step: read/write weights, grads and states of the local shard once (memory bound).
    double shard_n = l.zero >= 1 ? l.zero_group() : 1.0;
    double shard_e = l.zero >= 1 ? l.expert_zero_group() : 1.0;
    double touched = (pn / shard_n + pe / shard_e) * trained * (2.0 * training.optimizer_bytes + training.gradient_bytes() + 2.0 * training.param_bytes);
    optimizer = std::max(optimizer, touched / (hw.hbm_bandwidth * hw.efficiency.memory));
  }
  if (l.pp > 1) {
    double msg = tokens * h * bc / l.tsp();
    double one = msg / (pp_link.bandwidth * hw.efficiency.comm) + pp_link.latency;
    // Fill and drain cross p-1 boundaries forward and backward (v times with interleaving); the steady-state
    // transfers overlap compute except for the fraction 1 - overlap.pp of the m micro-batches' sends (without
    // interleaving, Overlap::pp_for: Megatron-Core blocks on them).
    const double hidden_pp = overlap.pp_for(l.vpp);
    pp_comm = runs * 2.0 * (l.pp - 1.0) * v * one + (1.0 - hidden_pp) * 2.0 * m * one;
  }
  out.breakdown.dp_comm_s = dp_comm;
  out.breakdown.pp_comm_s = pp_comm;
  out.breakdown.optimizer_s = optimizer;
  out.step_s = pipeline + dp_comm + pp_comm + optimizer;

  double devices = static_cast<double>(l.devices());
  double sequences = static_cast<double>(training.global_batch > 0 ? training.global_batch : 1LL * l.dp * l.mbs * l.micro_batches);
  // Forward plus backward: 3x the forward, or under LoRA the forward, the input gradient and the adapters' weight
  // gradient (the frozen weights' work a LoRA step needs, so its MFU is not inflated by work it skips).
  const double passes = training.lora_rank > 0 ? 1.0 + terms::frozen_gemm_backward(trained) : 3.0;
  out.model_flops = passes * precomputed->model_flops_per_sequence * sequences;
  double head_flops = terms::lm_head_forward_flops(static_cast<double>(training.seq), h, static_cast<double>(spec.vocab_size), mtp_depths);
  out.hardware_flops = (hw_flops_mb / l.mbs * l.cp + head_flops * passes) * sequences;
  out.mfu = out.model_flops / (out.step_s * devices * hw.peak_flops);
  out.tokens_per_s_per_device = sequences * static_cast<double>(training.seq) / out.step_s / devices;
  return out;
}

void add_time_json(nlohmann::json& j, const StepTime& t) {
  j["step_time_s"] = t.step_s;
  j["tokens_per_s_per_device"] = t.tokens_per_s_per_device;
  j["mfu"] = t.mfu;
  j["model_flops_per_step"] = t.model_flops;
  j["hardware_flops_per_step"] = t.hardware_flops;  // with recompute
  const Breakdown& b = t.breakdown;
  j["breakdown"] = {{"compute_s", b.compute_s}, {"recompute_s", b.recompute_s}, {"tp_comm_s", b.tp_comm_s},
                    {"cp_comm_s", b.cp_comm_s}, {"ep_comm_s", b.ep_comm_s},     {"dp_comm_s", b.dp_comm_s},
                    {"pp_comm_s", b.pp_comm_s}, {"bubble_s", b.bubble_s},       {"optimizer_s", b.optimizer_s}};
}

std::string time_summary(const StepTime& t) {
  const Breakdown& b = t.breakdown;
  return fmt::format(
      "step {:.3f} s, {:.0f} tokens/s/device, MFU {:.1f}%\n"
      "  compute {:.3f} s, recompute {:.3f}, exposed comm: TP {:.3f} CP {:.3f} EP {:.3f} DP {:.3f} PP {:.3f}, bubble {:.3f}, optimizer {:.3f}\n",
      t.step_s, t.tokens_per_s_per_device, 100.0 * t.mfu, b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s,
      b.bubble_s, b.optimizer_s);
}

std::vector<std::string> explain_stage_terms(const model::Model& model, const plan::Layout& l, const plan::Training& training, const hardware::Hardware& hw,
                                             const Overlap& overlap, int stage) {
  MemoryEstimate mem = estimate_memory(model, l, training, hw.memory_bytes);
  std::vector<std::string> out = explain_stage(model, l, training, mem, stage);
  KindTimes kt = kind_times(model, l, training, hw, overlap);
  std::vector<StageTime> st;
  StepTime t = estimate_time(model, l, training, hw, mem, overlap, &kt, &st);
  const StageTime& s = st.at(static_cast<std::size_t>(stage));
  auto ms = [](double sec) { return sec * 1e3; };
  out.push_back(fmt::format("time, per {} on stage {} (ms):", training.seq_split > 1 ? "sequence-pipeline unit" : "micro-batch", stage));
  for (const plan::StageRun& r : plan::stage_runs(model, l, training, stage)) {
    const KindTime& k = kt.kinds[static_cast<std::size_t>(r.kind)];
    out.push_back(fmt::format(
        "  chunk {} kind {}: {} layers x (forward {:.3f} + backward {:.3f} + recompute {:.3f} [{}] + host stalls {:.3f} "
        "[kAllToAllDispatcherHostSeconds, in fwd/bwd] + CP merges {:.3f} + {:.3f} [kRingMergeElementsPerPass x ring_merge_steps, "
        "in fwd/bwd] + expert weight gradients beyond their GEMMs {:.3f} [wgrad_pass_min_bytes, in bwd]; TP {:.3f} CP {:.3f} EP {:.3f} "
        "before overlap{})",
        r.chunk, model.kinds[static_cast<std::size_t>(r.kind)].kind.name, r.count, ms(k.fwd_s - terms::kForwardShare * k.host_s - k.cp_merge_fwd_s),
        ms(k.bwd_s - terms::kBackwardShare * k.host_s - k.cp_merge_bwd_s - k.wgrad_floor_s), ms(k.recompute_s[static_cast<int>(r.mode)]), to_string(r.mode),
        ms(k.host_s), ms(k.cp_merge_fwd_s), ms(k.cp_merge_bwd_s), ms(k.wgrad_floor_s), ms(k.tp_raw_s), ms(k.cp_raw_s), ms(k.ep_raw_s),
        k.ep_raw_s > 0 && (r.mode == plan::Recompute::Full || (r.mode == plan::Recompute::Selective && k.selective_redispatches))
            ? "; x 1.5: its recompute dispatches and combines again"
            : ""));
  }
  std::vector<char> told(model.kinds.size(), 0);
  for (const plan::StageRun& r : plan::stage_runs(model, l, training, stage)) {
    const model::BoundKind& kind = model.kinds[static_cast<std::size_t>(r.kind)];
    if (!training.flash_attention || told[static_cast<std::size_t>(r.kind)] != 0) continue;
    told[static_cast<std::size_t>(r.kind)] = 1;
    const expr::Env env = plan::layer_env(model, kind, l, training);
    // Only kinds whose layers run a flash kernel (the term layer_time applies the rate to).
    auto runs_flash = [&](const model::WorkTerm& w) { return w.role == model::WorkRole::FlashAttention && (!w.when || w.when->eval(env).truthy()); };
    if (std::none_of(kind.work.begin(), kind.work.end(), runs_flash)) continue;
    const double rate = attention_rate_of(*model.records, env, l, training, hw);
    if (rate == 1.0) continue;
    const double head_dim = attention_head_dim(*model.records, env);
    const plan::AttentionKernel kernel = terms::resolved_attention_kernel(training.attention_kernel, hw);
    if (kernel == plan::AttentionKernel::Cudnn919) {
      const double keys = attention_keys_per_call(*model.records, env, l);
      out.push_back(
          fmt::format("  kind {}: attention work runs at {:.3f} of the BF16 peak = attention_cudnn919 {:g} x {:.0f} keys per call / ({:.0f} + "
                      "attention_cudnn919_half_keys {:g}) x the head-dimension shape at {:g} (cudnn919_attention_efficiency; "
                      "cuDNN 9.19's published benchmark{})",
                      kind.kind.name, rate * hw.efficiency.attention, hw.efficiency.attention_cudnn919, keys, keys, hw.efficiency.attention_cudnn919_half_keys,
                      head_dim, training.attention_kernel == plan::AttentionKernel::Auto ? "; --attention-kernel auto: today's cuDNN on this device" : ""));
      continue;
    }
    out.push_back(
        fmt::format("  kind {}: attention work runs at {:.3f} x the device's attention efficiency {:g} ({} kernel at head "
                    "dimension {:g}, against cuDNN's at 128: attention_kernel_rate, kCudnnAttentionTflops{})",
                    kind.kind.name, rate, hw.efficiency.attention, terms::to_string(kernel), head_dim,
                    kernel == plan::AttentionKernel::TorchSdpa ? ", kFlash2AttentionTflops, kTorchSdpaAttentionRate" : ""));
  }
  if (stage == plan::head_stage(l, training)) {
    out.push_back(
        fmt::format("  + LM head {} x 2 t h V (1 + MTP {}) FLOPs / TP (lm_head_forward_flops, backward 2x: 1/kForwardShare; in BF16 under FP8: "
                    "kLmHeadRunsInFp8) and the loss "
                    "kLossBytesPerLogit = {} B per logit (loss_bytes), in compute",
                    l.mbs, model.mtp_layers(), terms::kLossBytesPerLogit));
    if (training.logits_whole_over_tp && l.tp > 1)
      out.emplace_back(
          "  + the logits all-gathered over TP for a loss on the whole vocabulary (logits_split: every TP rank runs the loss on all of "
          "it), in TP, exposed");
  }
  out.push_back(
      fmt::format("  compute {:.3f} + recompute {:.3f} = the window that hides TP/CP/EP (each up to its share of it)", ms(s.compute), ms(s.recompute)));
  out.push_back(fmt::format(
      "  TP {:.3f} of {:.3f} exposed (overlap {:.2f}), CP {:.3f} of {:.3f} (overlap {:.2f}; ring: {}{}; all-to-all: kUlyssesAllToAlls {}), EP {:.3f} of "
      "{:.3f} (overlap {:.2f}; kEpAllToAlls {}, {}; of which {:.3f} is compute "
      "slowed while the rest hides: kEpCommSms {} of {} SMs)",
      ms(s.tp), ms(s.tp_raw), overlap.tp, ms(s.cp), ms(s.cp_raw), overlap.cp,
      training.cp_kv_gathered_once
          ? "K,V all-gathered once per pass, hidden behind its first step's attention, dK,dV passed per step in fp32: gathered_cp_seconds"
          : fmt::format("kRingCpPassesPerStep {} x (cp - 1) K,V blocks, each hidden behind its step's attention: ring_cp_exposed_seconds",
                        terms::kRingCpPassesPerStep),
      training.cp_kv_repeated ? ", K,V repeated to the query heads" : "", terms::kUlyssesAllToAlls, ms(s.ep), ms(s.ep_raw), overlap.ep, terms::kEpAllToAlls,
      training.ep_dedup_per_node
          ? (training.moe_contiguous_routing ? "DeepEP/HybridEP: one copy per remote node, contiguous routing: ceil(k x units / experts) units reached"
                                             : "DeepEP/HybridEP: one copy per remote node")
          : "alltoall: every routed copy",
      // exposed = raw - hidden x (1 - share), so the slowed compute is hidden x share.
      ms(ep_sm_share(hw) < 1 ? (s.ep_raw - s.ep) / (1.0 - ep_sm_share(hw)) * ep_sm_share(hw) : s.ep), terms::kEpCommSms,
      hw.sm_count > 0 ? fmt::format("{:g}", hw.sm_count) : std::string("(not stated: no cost)")));
  const int runs = plan::pipeline_runs(l, training);
  out.push_back(fmt::format(
      "  stage total {:.3f} ms per {}, x {}{}", ms(s.total),
      training.seq_split > 1 ? fmt::format("sequence-pipeline unit ({} tokens: seq_split {})", training.unit_seq(), training.seq_split)
                             : std::string("micro-batch"),
      training.seq_split > 1 ? fmt::format("{} micro-batches x {} segments", l.micro_batches, training.seq_split)
                             : fmt::format("{} micro-batches", l.micro_batches),
      runs > 1 ? fmt::format(" in {} pipeline runs of {} (pipeline_runs: each fills, drains and reduces over DP on its own)", runs, l.micro_batches / runs)
               : std::string()));
  const Breakdown& b = t.breakdown;
  out.push_back(
      fmt::format("step {:.3f} s = pipeline {:.3f} (slowest stage: compute {:.3f} + recompute {:.3f} + TP {:.3f} + CP {:.3f} + EP {:.3f}; bubble "
                  "{:.3f}) + DP {:.3f} (forward/backward split kForwardShare {:.3f} / kBackwardShare {:.3f}) + PP {:.3f}{} + optimizer {:.3f}",
                  t.step_s, t.step_s - b.dp_comm_s - b.pp_comm_s - b.optimizer_s, b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.bubble_s,
                  b.dp_comm_s, terms::kForwardShare, terms::kBackwardShare, b.pp_comm_s,
                  l.pp > 1 ? fmt::format(" (fill and drain sends, and {:.0f} % of the steady state's: {})", 100.0 * (1.0 - overlap.pp_for(l.vpp)),
                                         l.vpp > 1 ? "overlap.pp, interleaved" : "Overlap::pp_for, 1F1B")
                           : std::string(),
                  b.optimizer_s));
  terms::Validity valid = terms::validated(hw, terms::precision_name(training));
  out.push_back(fmt::format("validated: {} ({})", valid.validated ? "true" : "false", valid.reason));
  return out;
}

}  // namespace sapp::cost
