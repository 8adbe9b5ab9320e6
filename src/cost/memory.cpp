#include "cost/memory.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cost/terms.hpp"

namespace sapp::cost {

ModeActivations layer_activations(const model::Model& model, const model::BoundKind& kind, expr::Env env, const std::vector<std::string>& modules) {
  const model::OpRecords& rec = *model.records;
  ModeActivations out;
  out.full.attention = kind.full_recompute->eval_double(env);
  std::uint32_t dropped = 0;  // switches `selective` drops, as a bit set
  for (const auto& name : modules.empty() ? model.selective : modules) {
    int sw = rec.switch_index(name);
    if (sw < 0) fail("recompute_modules", "expected a recompute switch of the op records, got '{}'", name);
    dropped |= 1u << sw;
  }
  for (const auto& slot : kind.slots) {
    if (slot.when && !slot.when->eval(env).truthy()) continue;
    // Entries are element counts per token (exact in a double); the slot formulas divide `total` with `/`, so
    // summing in doubles gives the bits an integer total would.
    double all = 0;
    double kept = 0;
    bool any_dropped = false;
    for (const auto& entry : slot.entries) {
      double v = entry.elements.eval_double(env);
      all += v;
      int sw = rec.op_switch[static_cast<std::size_t>(entry.op)];
      if (sw < 0 || !(dropped & (1u << sw)))
        kept += v;
      else
        any_dropped = true;
    }
    env.set(rec.total_symbol, expr::Value::of_double(all));
    double off = slot.formula.eval_double(env);
    double sel = off;  // the same total gives the same bits: evaluate again only when selective drops something
    if (any_dropped) {
      env.set(rec.total_symbol, expr::Value::of_double(kept));
      sel = slot.formula.eval_double(env);
    }
    double* off_part = slot.part == 0 ? &out.off.attention : slot.part == 1 ? &out.off.ffn : &out.off.norm;
    double* sel_part = slot.part == 0 ? &out.selective.attention : slot.part == 1 ? &out.selective.ffn : &out.selective.norm;
    *off_part += off;
    *sel_part += sel;
  }
  return out;
}

LayerActivation layer_activation(const model::Model& model, const model::BoundKind& kind, const expr::Env& bound, plan::Recompute mode,
                                 const std::vector<std::string>& modules) {
  return layer_activations(model, kind, bound, modules).of(mode);
}

LayerActivation layer_activation(const model::Model& model, int kind, const plan::Layout& layout, const plan::Training& training, plan::Recompute mode) {
  const model::BoundKind& k = model.kinds.at(static_cast<std::size_t>(kind));
  return layer_activation(model, k, plan::layer_env(model, k, layout, training), mode, training.recompute_modules);
}

std::vector<KindMemory> kind_memory(const model::Model& model, const plan::Layout& l, const plan::Training& training) {
  std::vector<KindMemory> out;
  out.reserve(model.kinds.size());
  for (const auto& kind : model.kinds) {
    ModeActivations modes = layer_activations(model, kind, plan::layer_env(model, kind, l, training), training.recompute_modules);
    KindMemory k;
    k.act[static_cast<int>(plan::Recompute::Off)] = modes.off.total();
    k.act[static_cast<int>(plan::Recompute::Selective)] = modes.selective.total();
    k.act[static_cast<int>(plan::Recompute::Full)] = modes.full.total();
    // TP shards attention and FFN matrices; norms are replicated. Experts are split over EP x expert-TP.
    k.dense_elems = (kind.attention_params + kind.ffn_params) / l.tp + kind.norm_params;
    k.expert_elems = kind.expert_params / (static_cast<double>(l.ep) * l.etp);
    k.moe = kind.kind.ffn == model::FfnFlavour::Moe;
    out.push_back(k);
  }
  return out;
}

double fp8_weight_cache_bytes(const plan::Layout& l, const plan::Training& training) {
  if (!training.fp8 || !training.fp8_transformer_engine || l.zero >= 3) return 0.0;
  // NVFP4: the same two copies at kNvfp4BytesPerElement each.
  return training.fp8_param_gather && l.zero >= 1 ? 0.0 : terms::kFp8WeightCacheBytes * training.quantized_bytes();
}

Zero3Stage zero3_stage_bytes(const plan::Layout& l, const plan::Training& training, double hidden_size) {
  Zero3Stage z;
  if (l.zero < 2 || l.zero_group() <= 1) return z;
  // Gradients accumulated unsharded: beside the sharded ones torch keeps (torchtitan under PP, FSDP2 with its sync
  // deferred), or as MindSpore's only gradient buffer (accu_grads; its sharded gradients exist only at the step's
  // reduce-scatter). In the reduce dtype under torch (FSDP2 accumulates there when it differs from the
  // parameters'), in the parameters' under MindSpore.
  if (terms::zero3_accumulates_unsharded(training, l)) {
    z.accumulated = (training.zero3_gathers_once_per_step ? training.gradient_bytes() : training.reduced_gradient_bytes()) *
                    terms::trainable_fraction(training, hidden_size);
  }
  // The whole stage gathered and kept: for the step, or (FSDP2's ZeRO-2) from each micro-batch's forward to its backward.
  if (terms::zero3_keeps_stage_gathered(training, l) || (l.zero == 2 && training.zero2_keeps_weights_sharded)) z.gathered = training.gathered_param_bytes();
  if (l.zero >= 3) z.replace_grads = training.zero3_gathers_once_per_step && z.accumulated > 0;
  return z;
}

StateBytes state_bytes_per_element(const plan::Layout& l, const plan::Training& training, double hidden_size) {
  const double trained = terms::trainable_fraction(training, hidden_size);
  const Zero3Stage z = zero3_stage_bytes(l, training, hidden_size);
  // A state ZeRO shards from `stage` on (1: optimizer states, 2: + gradients, 3: + weights) costs 1/group of it.
  auto per_element = [&](double group) {
    auto share = [&](int stage) { return (stage == 3 ? terms::shards_weights(training, l) : l.zero >= stage) ? 1.0 / group : 1.0; };
    // Gradients accumulated unsharded in the reduce dtype replace the kept ones (zero3_stage_bytes' replace_grads).
    const double grads = z.replace_grads ? z.accumulated : training.gradient_bytes() * share(2) * trained;
    // ZeRO's stage-wide copies exist only for what it shards (a group of 1: the elements are whole on the rank).
    const double stage_wide = group > 1 ? z.gathered + (z.replace_grads ? 0.0 : z.accumulated) : 0.0;
    return training.param_bytes * share(3) + grads + training.optimizer_bytes * share(1) * trained + fp8_weight_cache_bytes(l, training) + stage_wide;
  };
  return StateBytes{per_element(l.zero_group()), per_element(l.expert_zero_group())};
}

namespace {

// Whether a layout's stages are counted by the schedule's vectors (interleaved 1F1B and its less-memory variant)
// rather than the closed form (1F1B, whose one chunk makes them equal; DualPipe-V and the sequence pipeline, whose
// own counts the closed form states; fewer micro-batches than stages, which no interleaved order runs: the closed
// form's uniform counts).
bool counts_by_vectors(const plan::Layout& l, const plan::Training& training) {
  return l.vpp >= 2 && !plan::dualpipe_v(l, training) && training.seq_split <= 1 && l.micro_batches / plan::pipeline_runs(l, training) >= l.pp;
}

// Interleaved chunks hold unequal activations (uneven layer counts, per-chunk recompute, the embedding on the first
// chunk and the logits on the last): the stage's peak is the schedule's prefix of the most activation
// (plan::in_flight_vectors), which can hold other counts than the first prefix of the most micro-batches
// (plan::in_flight_count; Gemma 2 9B at PP2 VPP2 with 14 and 6 layers: three micro-batches of the larger chunk, 4.3
// GiB more than two and one; Llama 3 8B's 32 layers over PP2 VPP3 without a stated split: 2.8 % more on the first
// stage). The counts at that prefix replace the per-chunk counts of the layers, the embedding (chunk 0) and the
// final norm and logits (last chunk), each given for one micro-batch.
void exact_in_flight_peak(const std::vector<double>& vectors, std::size_t V, const std::vector<double>& chunk_act, double embedding, double head,
                          StageMemory& m) {
  if (V == 0 || chunk_act.size() < V || vectors.size() < V) return;
  double best = -1;
  std::size_t at = 0;
  for (std::size_t i = 0; i + V <= vectors.size(); i += V) {
    const double* c = vectors.data() + i;
    double a = c[0] * embedding + c[V - 1] * head;
    for (std::size_t v = 0; v < V; ++v) a += c[v] * chunk_act[v];
    if (a > best) {
      best = a;
      at = i;
    }
  }
  const double* c = vectors.data() + at;
  m.layer_activations = 0;
  for (std::size_t v = 0; v < V; ++v) m.layer_activations += c[v] * chunk_act[v];
  m.embedding_activations = c[0] * embedding;
  m.head_activations = c[V - 1] * head;
}

}  // namespace

InFlightVectors in_flight_vectors_of(const plan::Layout& l, const plan::Training& training) {
  InFlightVectors out;
  if (!counts_by_vectors(l, training)) return out;
  out.chunks = static_cast<std::size_t>(l.vpp);
  const int micro_batches = l.micro_batches / plan::pipeline_runs(l, training);
  for (int s = 0; s < l.pp; ++s) {
    std::vector<double>& flat = out.stages.emplace_back();
    for (const auto& c : plan::in_flight_vectors(plan::schedule_of(l, training.interleave_less_memory), l.pp, l.vpp, micro_batches, s)) {
      flat.insert(flat.end(), c.begin(), c.end());
    }
  }
  return out;
}

MemoryEstimate estimate_memory(const model::Model& model, const plan::Layout& l, const plan::Training& training, double capacity,
                               const std::vector<KindMemory>* per_kind, const InFlightVectors* in_flight) {
  const model::ModelSpec& spec = model.spec;
  std::vector<KindMemory> computed;
  if (per_kind == nullptr) {
    computed = kind_memory(model, l, training);
    per_kind = &computed;
  }
  const bool by_vectors = counts_by_vectors(l, training);
  InFlightVectors computed_in_flight;
  if (by_vectors && (in_flight == nullptr || in_flight->stages.size() != static_cast<std::size_t>(l.pp))) {
    computed_in_flight = in_flight_vectors_of(l, training);
    in_flight = &computed_in_flight;
  }
  const std::vector<KindMemory>& km = *per_kind;
  // Per stage: parameter elements, in-flight activations, the largest rebuilt layer, MoE presence.
  struct Sums {
    long long layers = 0;
    double pn = 0, pe = 0, act = 0, working = 0, max_layer = 0;
    bool moe = false;
    std::vector<double> chunk_act;  // one micro-batch's layer activations per chunk
  };
  std::vector<Sums> sums(static_cast<std::size_t>(l.pp));
  plan::for_each_chunk_group(model, l, training, [&](int stage, int chunk, int kind, long long count, plan::Recompute mode) {
    Sums& x = sums[static_cast<std::size_t>(stage)];
    std::size_t k = static_cast<std::size_t>(kind);
    double n = static_cast<double>(count);
    x.layers += count;
    x.pn += n * km[k].dense_elems;
    x.pe += n * km[k].expert_elems;
    double act = km[k].act[static_cast<int>(mode)];  // the run's mode (a stated split recomputes per chunk)
    x.act += static_cast<double>(plan::in_flight_count(l, training, chunk, stage)) * n * act;
    if (x.chunk_act.empty()) x.chunk_act.assign(static_cast<std::size_t>(l.vpp), 0.0);
    x.chunk_act[static_cast<std::size_t>(chunk)] += n * act;
    x.working = std::max(x.working, km[k].act[static_cast<int>(plan::Recompute::Off)] - act);
    x.max_layer = std::max(x.max_layer, km[k].dense_elems + km[k].expert_elems);
    x.moe = x.moe || km[k].moe;
  });

  double h = static_cast<double>(spec.hidden_size);
  double bc = training.compute_bytes;
  double s_local = static_cast<double>(training.unit_seq()) / l.cp;  // one pipeline unit's tokens
  double tokens = s_local * l.mbs;
  double dropout = spec.dropout.value_or(model.profile.defaults.count("dropout") ? model.profile.defaults.at("dropout") : 0) > 0 ? 1.0 : 0.0;
  double dp_shard = l.zero_group();
  double edp_shard = l.expert_zero_group();
  long long mtp = model.mtp_layers();

  MemoryEstimate est;
  est.capacity_bytes = capacity;
  est.stages.reserve(static_cast<std::size_t>(l.pp));
  for (int s = 0; s < l.pp; ++s) {
    const Sums& x = sums[static_cast<std::size_t>(s)];
    StageMemory m;
    m.stage = s;
    m.layers = x.layers;
    double pn = x.pn;
    double pe = x.pe;
    double max_layer_params = x.max_layer;
    bool has_moe = x.moe;
    m.layer_activations = x.act;
    m.recompute_working = x.working;
    bool first = s == 0;
    bool last = s == plan::head_stage(l, training);
    double embedding_one = 0;  // one micro-batch's embedding output (first stage), final norm input and logits (head's)
    double head_one = 0;
    if (first) {
      pn += model.embedding_params / l.tp + model.vision_extra_params / l.tp;
      // Embedding output (and its dropout mask) for every micro-batch the first chunk holds.
      embedding_one = tokens * (bc * h + dropout * h) / l.tsp();
      m.embedding_activations = static_cast<double>(plan::in_flight_count(l, training, 0, s)) * embedding_one;
    }
    if (last) {
      pn += model.head_params / l.tp + model.final_norm_params + model.mtp_extra_params * static_cast<double>(mtp) / l.tp;
      if (spec.tie_word_embeddings && l.pp > 1 && !first) pn += model.embedding_params / l.tp;  // the last stage's copy
      // Final norm input, and logits in the compute dtype plus their fp32 upcast for the loss (one per MTP depth too).
      const double vocab_share = static_cast<double>(spec.vocab_size) / terms::logits_split(training, l.tp);
      double logits = training.loss_chunked ? 0.0 : tokens * (bc + 4.0) * vocab_share * static_cast<double>(1 + mtp);
      head_one = tokens * bc * h / l.tsp() + logits;
      m.head_activations = static_cast<double>(plan::in_flight_count(l, training, l.vpp - 1, s)) * head_one;
      // The loss backward's transient buffers, one micro-batch at a time (terms::loss_backward_bytes_per_logit).
      m.loss_backward =
          training.loss_chunked ? 0.0 : tokens * vocab_share * static_cast<double>(1 + mtp) * terms::loss_backward_bytes_per_logit(training, l.tp);
    }
    m.embedding_activation_one = embedding_one;
    m.head_activation_one = head_one;
    if (by_vectors) {
      exact_in_flight_peak(in_flight->stages[static_cast<std::size_t>(s)], in_flight->chunks, x.chunk_act, embedding_one, head_one, m);
    }
    m.param_elements = pn;
    m.expert_param_elements = pe;
    // Elements per rank of a state that ZeRO shards from `stage` on (1: optimizer states, 2: + grads, 3: + params).
    auto held = [&](int stage) { return (stage == 3 ? terms::shards_weights(training, l) : l.zero >= stage) ? pn / dp_shard + pe / edp_shard : pn + pe; };
    m.params = training.param_bytes * held(3);
    // Transformer Engine's FP8 weight cache: the layers' linear weights (their norms, a few elements per layer,
    // counted too), not the embedding or the BF16 head.
    m.fp8_weight_cache = fp8_weight_cache_bytes(l, training) * (x.pn + x.pe);
    m.params += m.fp8_weight_cache;
    const double trained = terms::trainable_fraction(training, h);
    m.grads = training.gradient_bytes() * held(2) * trained;
    m.optimizer = training.optimizer_bytes * held(1) * trained;
    m.activations = m.layer_activations + m.recompute_working + m.embedding_activations + m.head_activations + m.loss_backward;
    m.activations *= 1.0 + training.activation_fragmentation;
    if (training.gradient_bytes() < 4 && training.optimizer_bytes > 0 && !training.optimizer_casts_per_parameter) {
      m.optimizer_step = terms::kFp32Bytes * held(1) * trained;
    }

    // Communication workspaces, in bytes. Layers run one at a time, so the per-layer ones do not add up.
    double full_tokens = static_cast<double>(training.unit_seq()) / l.cp * l.mbs;
    if (l.tp > 1) m.tp_buffer = terms::kCommBufferCopies * full_tokens * h * bc;  // all-gathered input + reduce-scatter staging
    if (l.ep > 1 && has_moe)
      m.ep_buffer = terms::kCommBufferCopies * tokens * static_cast<double>(spec.experts_per_token.value_or(1)) * training.capacity_factor * h * bc / l.tsp();
    if (l.cp > 1) {
      const double kv_width = spec.kv_exchange_width(training.cp_kv_repeated);
      if (l.cp_algo == plan::CpAlgo::Ring && training.cp_kv_gathered_once) {
        // K,V gathered once per pass (terms::gathered_cp_seconds): every rank's block at once (no ring buffers beside
        // it), and in the backward the fp32 dK,dV accumulated and the one in flight, live while a layer's attention
        // runs. The loss's logits and its backward buffers are never live then (the loss runs after the last layer's
        // forward and before the first layer's backward), so beside them only what exceeds them counts.
        const double gathered =
            static_cast<double>(l.cp) * tokens * kv_width * bc / l.tp + terms::kCommBufferCopies * tokens * kv_width * terms::kFp32Bytes / l.tp;
        m.cp_buffer = std::max(0.0, gathered - (m.head_activations + m.loss_backward));
      } else {
        m.cp_buffer = terms::kCommBufferCopies * (l.cp_algo == plan::CpAlgo::Ring ? tokens * kv_width * bc / l.tp : full_tokens * h * bc / l.tp);
      }
    }
    if (l.zero >= 2 && dp_shard > 1) m.dp_buffer = training.gradient_bytes() * std::min(terms::kDpBucketElements, pn + pe);  // bucket
    // ZeRO's stage-wide buffers (zero3_stage_bytes): the stage kept gathered replaces the bucket and the per-layer
    // gathers; gradients accumulated unsharded add to it, or are the gradients.
    const Zero3Stage z = zero3_stage_bytes(l, training, h);
    if (z.gathered > 0) m.dp_buffer = 0;
    if (l.zero >= 3 && dp_shard > 1 && z.gathered == 0)
      m.dp_buffer += terms::kCommBufferCopies * training.gathered_param_bytes() * max_layer_params;  // gathered layer + prefetch
    if (z.replace_grads) m.grads = z.accumulated * (pn + pe);
    // Only what ZeRO shards is gathered or accumulated whole beside its shard: experts whose EP group spans the
    // data-parallel ranks (an expert-DP group of 1) are whole on their rank already, their gradients counted in grads
    // (NeMo AutoModel's Nemotron 3 Nano over EP 8 on 8 GPUs had 33 GiB of such buffers priced: 82 GiB for a run that ran).
    const double sharded = (dp_shard > 1 ? pn : 0.0) + (edp_shard > 1 ? pe : 0.0);
    m.dp_stage = (z.gathered + (z.replace_grads ? 0.0 : z.accumulated)) * sharded;
    m.dp_buffer += m.dp_stage;
    // The sequence pipeline's KV cache, per layer: key_cache and value_cache of the whole sequence and their
    // gradients, sharded over TP's heads and CP (mindformers/models/llama/llama_transformer.py; the reference
    // planner's 4 KV per layer, docs/reference-planner.md).
    if (training.seq_split > 1) {
      m.kv_cache = 4.0 * static_cast<double>(x.layers) * l.mbs * static_cast<double>(spec.kv_heads()) / l.tp * static_cast<double>(training.seq) / l.cp *
                   static_cast<double>(spec.effective_head_dim()) * bc;
    }
    m.buffers = std::max({m.tp_buffer, m.ep_buffer, m.cp_buffer}) + m.dp_buffer + m.kv_cache;
    m.reserve = training.reserve_bytes;
    if (m.total() > est.peak_bytes) {
      est.peak_bytes = m.total();
      est.peak_stage = s;
    }
    est.stages.push_back(m);
  }
  return est;
}

std::vector<std::string> explain_stage(const model::Model& model, const plan::Layout& l, const plan::Training& training, const MemoryEstimate& est, int stage) {
  const StageMemory& m = est.stages.at(static_cast<std::size_t>(stage));
  auto gib = [](double b) { return b / 1073741824.0; };
  double dp_shard = l.zero_group();
  double edp_shard = l.expert_zero_group();
  std::vector<std::string> out;
  // The model as priced: its layer kinds (attention, FFN, how many layers) and the MoE routing they use.
  const model::ModelSpec& sm = model.spec;
  std::vector<std::pair<const model::LayerGroup*, long long>> counts;  // per kind (and MTP / vision role), in model order
  for (const model::LayerGroup& g : model.stack) {
    auto same = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& c) { return c.first->kind == g.kind && c.first->mtp == g.mtp && c.first->vision == g.vision; });
    if (same == counts.end())
      counts.emplace_back(&g, g.count);
    else
      same->second += g.count;
  }
  std::string kinds;
  for (const auto& [g, count] : counts) {
    const model::LayerKind& k = model.kinds[static_cast<std::size_t>(g->kind)].kind;
    const char* attention = k.attention == model::AttentionFlavour::Mla      ? "MLA attention"
                            : k.attention == model::AttentionFlavour::Linear ? "linear attention"
                            : k.attention == model::AttentionFlavour::None   ? "no attention"
                                                                             : "GQA attention";
    const char* ffn = k.ffn == model::FfnFlavour::Moe ? "MoE FFN" : k.ffn == model::FfnFlavour::None ? "no FFN" : "dense FFN";
    kinds += fmt::format("{}{} x {} ({}{}{}, {}{})", kinds.empty() ? "" : ", ", count, k.name, attention, k.sliding ? ", sliding window" : "",
                         k.chunked ? ", chunked" : "", ffn,
                         g->mtp      ? ", MTP"
                         : g->vision ? ", vision"
                                     : "");
  }
  out.push_back(fmt::format("model: {} layers: {}", sm.arch, kinds));
  if (sm.num_experts.value_or(0) > 1)
    out.push_back(
        fmt::format("experts: {} routed, top-{}, width {}, {}{}", *sm.num_experts, sm.experts_per_token.value_or(1),
                    sm.moe_intermediate_size.value_or(sm.intermediate_size.value_or(0)),
                    sm.shared_expert_intermediate_size ? fmt::format("a shared expert of width {}", *sm.shared_expert_intermediate_size)
                                                       : fmt::format("{} shared", sm.num_shared_experts.value_or(0)),
                    sm.routing_groups ? fmt::format(", {} groups of which {} per token", *sm.routing_groups, sm.routing_group_limit.value_or(0)) : ""));
  out.push_back(
      fmt::format("stage {} of {}: {} layers; non-expert parameters per rank Pn = {:.6g} (attention and FFN / TP {}, norms replicated, embedding/head / TP), "
                  "expert parameters per rank Pe = {:.6g} (/ EP {} x expert TP {})",
                  stage, l.pp, m.layers, m.param_elements, l.tp, m.expert_param_elements, l.ep, l.etp));
  out.push_back(fmt::format("params      {:10.3f} GiB = {} B x (Pn{} + Pe{}){}", gib(m.params), training.param_bytes,
                            terms::shards_weights(training, l) ? fmt::format(" / {}", dp_shard) : "",
                            terms::shards_weights(training, l) ? fmt::format(" / {}", edp_shard) : "",
                            m.fp8_weight_cache > 0 ? fmt::format(" + {} weight cache {:.3f} GiB ({:.4g} B x the layers' parameters: Transformer Engine's "
                                                                 "quantised copy and transpose, kept across micro-batches without fp8_param_gather)",
                                                                 training.fp4 ? "NVFP4" : "FP8", gib(m.fp8_weight_cache), fp8_weight_cache_bytes(l, training))
                                                   : ""));
  // Under LoRA, gradients and optimizer states are held for the trained share only (terms::trainable_fraction).
  const double trained = terms::trainable_fraction(training, static_cast<double>(model.spec.hidden_size));
  const std::string lora = training.lora_rank > 0 ? fmt::format(" x trained {:.4g} [LoRA rank {}: 2 r / h]", trained, training.lora_rank) : "";
  if (training.zero3_gathers_once_per_step && terms::zero3_accumulates_unsharded(training, l) && dp_shard > 1) {
    out.push_back(fmt::format("grads       {:10.3f} GiB = {} B x (Pn + Pe){}  [accumulated whole over the micro-batches: MindSpore's accu_grads]", gib(m.grads),
                              training.gradient_bytes(), lora));
  } else {
    out.push_back(fmt::format("grads       {:10.3f} GiB = {} B x (Pn{} + Pe{}){}", gib(m.grads), training.gradient_bytes(),
                              l.zero >= 2 ? fmt::format(" / {}", dp_shard) : "", l.zero >= 2 ? fmt::format(" / {}", edp_shard) : "", lora));
  }
  const std::string states = training.optimizer_bytes == 12                               ? "fp32 master + 2 Adam moments"
                             : training.param_bytes == 4 && training.optimizer_bytes == 8 ? "2 fp32 Adam moments, the parameters their own master"
                                                                                          : "optimizer states";
  out.push_back(fmt::format("optimizer   {:10.3f} GiB = {} B x (Pn{} + Pe{}){}  [{}]", gib(m.optimizer), training.optimizer_bytes,
                            l.zero >= 1 ? fmt::format(" / {}", dp_shard) : "", l.zero >= 1 ? fmt::format(" / {}", edp_shard) : "", lora, states));
  auto flight = plan::in_flight(l, training);
  for (const plan::StageRun& r : plan::stage_runs(model, l, training, stage)) {
    LayerActivation a = layer_activation(model, r.kind, l, training, r.mode);
    out.push_back(fmt::format(
        "activations chunk {} kind {}: {} in flight x {} layers x {:.3f} MiB per layer (attention {:.3f} + ffn {:.3f} + norm {:.3f} MiB, "
        "recompute {}, s={} b={} t={} tsp={} cp={}{})",
        r.chunk, model.kinds[static_cast<std::size_t>(r.kind)].kind.name, flight[static_cast<std::size_t>(r.chunk)][static_cast<std::size_t>(stage)], r.count,
        a.total() / 1048576.0, a.attention / 1048576.0, a.ffn / 1048576.0, a.norm / 1048576.0, to_string(r.mode), training.unit_seq() / l.cp, l.mbs, l.tp,
        l.tsp(), l.cp,
        !training.fp8 ? ""
        : training.fp8_transformer_engine
            ? fmt::format("; {} by Transformer Engine: GEMM inputs kept in {:.4g} byte", terms::precision_name(training), training.kept_gemm_input_bytes())
            : fmt::format("; FP8 by torchao's Float8Linear: GEMM inputs kept in {} bytes", training.compute_bytes)));
  }
  out.push_back(fmt::format(
      "activations {:10.3f} GiB = (layers {:.3f} + one layer rebuilt in backward {:.3f} + embedding output {:.3f} + final norm and logits {:.3f} + loss "
      "backward {:.3f} GiB [{} B per logit, {}]) x (1 + fragmentation {:.2f})",
      gib(m.activations), gib(m.layer_activations), gib(m.recompute_working), gib(m.embedding_activations), gib(m.head_activations), gib(m.loss_backward),
      terms::loss_backward_bytes_per_logit(training, l.tp), terms::loss_backward_name(training, l.tp), training.activation_fragmentation));
  const bool fsdp2_zero2 = l.zero == 2 && training.zero2_keeps_weights_sharded && !terms::zero3_keeps_stage_gathered(training, l);
  const std::string dp_held =
      dp_shard > 1 && terms::zero3_keeps_stage_gathered(training, l)
          ? fmt::format(
                "; DP: the stage's parameters gathered once per step and kept, {} B each{}", training.gathered_param_bytes(),
                !training.zero3_gathers_once_per_step && terms::zero3_accumulates_unsharded(training, l) ? ", and their gradients accumulated whole" : "")
      : dp_shard > 1 && fsdp2_zero2
          ? fmt::format(
                "; DP: the stage's parameters gathered in each micro-batch's forward and kept to its backward (FSDP2, reshard_after_forward "
                "false), {} B each",
                training.gathered_param_bytes())
          : "";
  out.push_back(fmt::format("buffers     {:10.3f} GiB = max(TP {:.3f}, EP {:.3f}, CP {:.3f}) + DP {:.3f}{} GiB  [kCommBufferCopies {} of what each moves{}]",
                            gib(m.buffers), gib(m.tp_buffer), gib(m.ep_buffer), gib(m.cp_buffer), gib(m.dp_buffer),
                            m.kv_cache > 0 ? fmt::format(" + sequence-pipeline KV cache {:.3f}", gib(m.kv_cache)) : "", terms::kCommBufferCopies,
                            dp_held + (l.cp > 1 && l.cp_algo == plan::CpAlgo::Ring && training.cp_kv_gathered_once
                                           ? "; CP: every rank's K,V gathered at once and 2 fp32 dK,dV blocks, beyond the logits and loss buffers"
                                           : "")));
  if (m.optimizer_step > 0) {
    out.push_back(
        fmt::format("opt. step   {:10.3f} GiB = {} B x (Pn{} + Pe{})  [fp32 copy of the {}-byte gradients; counted instead of activations + buffers {:.3f} "
                    "GiB when larger]",
                    gib(m.optimizer_step), terms::kFp32Bytes, l.zero >= 1 ? fmt::format(" / {}", dp_shard) : "",
                    l.zero >= 1 ? fmt::format(" / {}", edp_shard) : "", training.gradient_bytes(), gib(m.activations + m.buffers)));
  }
  out.push_back(fmt::format("reserve     {:10.3f} GiB (allocator and framework context)", gib(m.reserve)));
  out.push_back(fmt::format("total       {:10.3f} GiB of {:.3f} GiB capacity", gib(m.total()), gib(est.capacity_bytes)));
  return out;
}

}  // namespace sapp::cost
