#include "memory/memory.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "io/error.hpp"

namespace sapp {

namespace {

void set(expr::Env& env, const expr::Symbols& sym, const char* name, long long v) {
  int i = sym.find(name);
  if (i >= 0) env.set(i, expr::Value::of_int(v));
}

void set(expr::Env& env, const expr::Symbols& sym, const char* name, double v) {
  int i = sym.find(name);
  if (i >= 0) env.set(i, expr::Value::of_double(v));
}

// Average number of keys a causal query attends: positions 1..S, capped by a sliding window w.
double causal_context(long long seq, long long window) {
  double S = static_cast<double>(seq);
  if (window <= 0 || window >= seq) return (S + 1.0) / 2.0;
  double w = static_cast<double>(window);
  return (w * (w + 1.0) / 2.0 + (S - w) * w) / S;
}

}  // namespace

expr::Env layer_env(const model::Model& model, const model::BoundKind& kind, const Layout& l, const Training& training) {
  const expr::Symbols& sym = model.records->symbols;
  expr::Env env = kind.env;
  long long seq = training.seq;
  int cp = l.cp;
  double ctx = 0;
  if (kind.vision) {
    seq = model.spec.vision->tokens;
    cp = 1;
    ctx = static_cast<double>(seq);  // bidirectional
  } else {
    ctx = causal_context(seq, kind.kind.sliding ? model.spec.sliding_window.value_or(0) : 0);
  }
  if (seq % cp == 0)
    set(env, sym, "s", seq / cp);
  else
    set(env, sym, "s", static_cast<double>(seq) / cp);
  set(env, sym, "seq", seq);
  set(env, sym, "ctx", ctx);
  set(env, sym, "b", static_cast<long long>(l.mbs));
  set(env, sym, "t", static_cast<long long>(l.tp));
  set(env, sym, "tsp", static_cast<long long>(l.tsp()));
  set(env, sym, "cp", static_cast<long long>(cp));
  set(env, sym, "ep", static_cast<long long>(l.ep));
  set(env, sym, "etp", static_cast<long long>(l.etp));
  set(env, sym, "tok_shard", static_cast<long long>(std::max(1, l.tsp() / l.etp)));
  set(env, sym, "fa", static_cast<long long>(training.flash_attention ? 1 : 0));
  if (training.compute_bytes == std::floor(training.compute_bytes))
    set(env, sym, "bc", static_cast<long long>(training.compute_bytes));
  else
    set(env, sym, "bc", training.compute_bytes);
  if (training.capacity_factor == std::floor(training.capacity_factor))
    set(env, sym, "cap", static_cast<long long>(training.capacity_factor));
  else
    set(env, sym, "cap", training.capacity_factor);
  return env;
}

LayerActivation layer_activation(const model::Model& model, const model::BoundKind& kind, const expr::Env& bound, Recompute mode) {
  (void)kind;
  const model::OpRecords& rec = *model.records;
  LayerActivation out;
  if (mode == Recompute::Full) {
    out.attention = rec.full_recompute->eval_double(bound);
    return out;
  }
  expr::Env env = bound;
  std::vector<char> dropped(rec.switches.size(), 0);
  if (mode == Recompute::Selective) {
    for (const auto& name : model.selective) dropped[static_cast<std::size_t>(rec.switch_index(name))] = 1;
  }
  for (const auto& slot : rec.slots) {
    if (slot.when && !slot.when->eval(env).truthy()) continue;
    expr::Value total = expr::Value::of_int(0);
    for (const auto& entry : slot.entries) {
      const model::OpRecord& op = rec.ops[static_cast<std::size_t>(entry.op)];
      if (!op.switch_name.empty() && dropped[static_cast<std::size_t>(rec.switch_index(op.switch_name))]) continue;
      total = expr::binary(expr::Op::Add, total, entry.elements.eval(env));
    }
    env.set(rec.total_symbol, total);
    double bytes = slot.formula.eval_double(env);
    if (slot.part == "attention")
      out.attention += bytes;
    else if (slot.part == "ffn")
      out.ffn += bytes;
    else
      out.norm += bytes;
  }
  return out;
}

LayerActivation layer_activation(const model::Model& model, int kind, const Layout& layout, const Training& training, Recompute mode) {
  const model::BoundKind& k = model.kinds.at(static_cast<std::size_t>(kind));
  return layer_activation(model, k, layer_env(model, k, layout, training), mode);
}

std::vector<StagePlan> plan_stages(const model::Model& model, const Layout& l) {
  // The units split over chunks: vision tower layers, then body layers, in model order. MTP layers go last.
  std::vector<int> units;
  std::vector<int> mtp;
  for (const auto& g : model.stack) {
    for (long long i = 0; i < g.count; ++i) (g.mtp ? mtp : units).push_back(g.kind);
  }
  long long chunks = 1LL * l.pp * l.vpp;
  long long total = static_cast<long long>(units.size());
  long long base = total / chunks;
  long long extra = total % chunks;  // to virtual chunks 1..extra: chunk 0 already holds the embedding
  std::vector<StagePlan> plan(static_cast<std::size_t>(l.pp));
  for (auto& st : plan) st.chunks.resize(static_cast<std::size_t>(l.vpp));
  plan.front().first = true;
  plan.back().last = true;
  std::size_t next = 0;
  auto add = [](ChunkLayers& c, int kind) {
    if (!c.groups.empty() && c.groups.back().first == kind)
      ++c.groups.back().second;
    else
      c.groups.emplace_back(kind, 1);
    ++c.layers;
  };
  for (long long k = 0; k < chunks; ++k) {
    long long n = base + ((k >= 1 && k <= extra) ? 1 : 0);
    ChunkLayers& c = plan[static_cast<std::size_t>(k % l.pp)].chunks[static_cast<std::size_t>(k / l.pp)];
    for (long long i = 0; i < n && next < units.size(); ++i) add(c, units[next++]);
  }
  for (int kind : mtp) add(plan.back().chunks.back(), kind);
  return plan;
}

std::vector<std::vector<long long>> in_flight(const Layout& l, bool less_memory) {
  long long S = l.pp;
  long long V = l.vpp;
  long long m = l.micro_batches;
  std::vector<std::vector<long long>> a(static_cast<std::size_t>(V), std::vector<long long>(static_cast<std::size_t>(S), 0));
  for (long long s = 0; s < S; ++s) {
    if (V == 1) {
      a[0][static_cast<std::size_t>(s)] = std::min(S - s, m);
      continue;
    }
    for (long long v = 0; v < V; ++v) {
      long long n = S;
      if (less_memory) {
        if (v == V - 1) n = S - s;
      } else {
        if (v == 0) n += std::max(0LL, S - 2 * s - 1);
        if (v == V - 1) n += std::min(0LL, S - 2 * s - 1);
      }
      a[static_cast<std::size_t>(v)][static_cast<std::size_t>(s)] = std::clamp(n, 1LL, m);
    }
  }
  return a;
}

MemoryEstimate estimate_memory(const model::Model& model, const Layout& l, const Training& training, double capacity) {
  const model::ModelSpec& spec = model.spec;
  std::size_t nk = model.kinds.size();
  // Per distinct kind: activations under the layout's mode and with nothing recomputed, per micro-batch.
  std::vector<double> act(nk), act_off(nk), dense_elems(nk), expert_elems(nk), layer_param_elems(nk);
  std::vector<char> moe(nk, 0);
  for (std::size_t k = 0; k < nk; ++k) {
    const model::BoundKind& kind = model.kinds[k];
    expr::Env env = layer_env(model, kind, l, training);
    act[k] = layer_activation(model, kind, env, l.recompute).total();
    act_off[k] = l.recompute == Recompute::Off ? act[k] : layer_activation(model, kind, env, Recompute::Off).total();
    // TP shards attention and FFN matrices; norms are replicated. Experts are split over EP x expert-TP.
    dense_elems[k] = (kind.attention_params + kind.ffn_params) / l.tp + kind.norm_params;
    expert_elems[k] = kind.expert_params / (static_cast<double>(l.ep) * l.etp);
    layer_param_elems[k] = dense_elems[k] + expert_elems[k];
    moe[k] = kind.kind.ffn == model::FfnFlavour::Moe ? 1 : 0;
  }
  std::vector<StagePlan> plan = plan_stages(model, l);
  auto flight = in_flight(l, training.interleave_less_memory);

  double h = static_cast<double>(spec.hidden_size);
  double bc = training.compute_bytes;
  double s_local = static_cast<double>(training.seq) / l.cp;
  double tokens = s_local * l.mbs;
  double dropout = spec.dropout.value_or(model.profile.defaults.count("dropout") ? model.profile.defaults.at("dropout") : 0) > 0 ? 1.0 : 0.0;
  double dp_shard = l.optimizer_shard > 0 ? l.optimizer_shard : static_cast<double>(l.dp) * l.cp;
  double edp_shard = l.optimizer_shard > 0 ? std::gcd(l.optimizer_shard, std::max(1, l.expert_dp())) : std::max(1, l.expert_dp());
  long long mtp = model.mtp_layers();

  MemoryEstimate est;
  est.capacity_bytes = capacity;
  for (int s = 0; s < l.pp; ++s) {
    const StagePlan& st = plan[static_cast<std::size_t>(s)];
    StageMemory m;
    m.stage = s;
    double pn = 0;
    double pe = 0;
    double working = 0;
    double max_layer_params = 0;
    bool has_moe = false;
    for (int v = 0; v < l.vpp; ++v) {
      const ChunkLayers& c = st.chunks[static_cast<std::size_t>(v)];
      double flying = static_cast<double>(flight[static_cast<std::size_t>(v)][static_cast<std::size_t>(s)]);
      m.layers += c.layers;
      for (const auto& [kind, count] : c.groups) {
        std::size_t k = static_cast<std::size_t>(kind);
        double n = static_cast<double>(count);
        pn += n * dense_elems[k];
        pe += n * expert_elems[k];
        m.layer_activations += flying * n * act[k];
        working = std::max(working, act_off[k] - act[k]);
        max_layer_params = std::max(max_layer_params, layer_param_elems[k]);
        has_moe = has_moe || moe[k];
      }
    }
    m.recompute_working = working;
    if (st.first) {
      pn += model.embedding_params / l.tp + model.vision_extra_params / l.tp;
      // Embedding output (and its dropout mask) for every micro-batch the first chunk holds.
      m.embedding_activations = static_cast<double>(flight[0][static_cast<std::size_t>(s)]) * tokens * (bc * h + dropout * h) / l.tsp();
    }
    if (st.last) {
      pn += model.head_params / l.tp + model.final_norm_params + model.mtp_extra_params * static_cast<double>(mtp) / l.tp;
      if (spec.tie_word_embeddings && l.pp > 1) pn += model.embedding_params / l.tp;  // the last stage's copy
      // Final norm input, and logits in the compute dtype plus their fp32 upcast for the loss (one per MTP depth too).
      double logits = tokens * (bc + 4.0) * static_cast<double>(spec.vocab_size) / l.tp * static_cast<double>(1 + mtp);
      m.head_activations = static_cast<double>(flight.back()[static_cast<std::size_t>(s)]) * (tokens * bc * h / l.tsp() + logits);
    }
    m.param_elements = pn;
    m.expert_param_elements = pe;
    m.params = training.param_bytes * (pn / (l.zero >= 3 ? dp_shard : 1.0) + pe / (l.zero >= 3 ? edp_shard : 1.0));
    m.grads = training.grad_bytes * (pn / (l.zero >= 2 ? dp_shard : 1.0) + pe / (l.zero >= 2 ? edp_shard : 1.0));
    m.optimizer = training.optimizer_bytes * (pn / (l.zero >= 1 ? dp_shard : 1.0) + pe / (l.zero >= 1 ? edp_shard : 1.0));
    m.activations = m.layer_activations + m.recompute_working + m.embedding_activations + m.head_activations;

    // Communication workspaces, in bytes. Layers run one at a time, so the per-layer ones do not add up.
    double full_tokens = static_cast<double>(training.seq) / l.cp * l.mbs;
    if (l.tp > 1) m.tp_buffer = 2.0 * full_tokens * h * bc;  // all-gathered input + reduce-scatter staging
    if (l.ep > 1 && has_moe) m.ep_buffer = 2.0 * tokens * static_cast<double>(spec.experts_per_token.value_or(1)) * h * bc / l.tsp();
    if (l.cp > 1) {
      double kv_width = spec.is_mla()
                            ? static_cast<double>(spec.num_heads) * static_cast<double>(*spec.qk_nope_head_dim + *spec.qk_rope_head_dim + *spec.v_head_dim)
                            : 2.0 * static_cast<double>(spec.kv_heads() * spec.effective_head_dim());
      m.cp_buffer = l.cp_algo == CpAlgo::Ring ? 2.0 * tokens * kv_width * bc / l.tp : 2.0 * full_tokens * h * bc / l.tp;
    }
    if (l.zero >= 2 && dp_shard > 1) m.dp_buffer = training.grad_bytes * std::min(40e6, pn + pe);   // bucket
    if (l.zero >= 3 && dp_shard > 1) m.dp_buffer += 2.0 * training.param_bytes * max_layer_params;  // gathered layer + prefetch
    m.buffers = std::max({m.tp_buffer, m.ep_buffer, m.cp_buffer}) + m.dp_buffer;
    m.reserve = training.reserve_bytes;
    if (m.total() > est.peak_bytes) {
      est.peak_bytes = m.total();
      est.peak_stage = s;
    }
    est.stages.push_back(m);
  }
  return est;
}

std::vector<std::string> explain_stage(const model::Model& model, const Layout& l, const Training& training, const MemoryEstimate& est, int stage) {
  const StageMemory& m = est.stages.at(static_cast<std::size_t>(stage));
  auto gib = [](double b) { return b / 1073741824.0; };
  double dp_shard = l.optimizer_shard > 0 ? l.optimizer_shard : static_cast<double>(l.dp) * l.cp;
  double edp_shard = l.optimizer_shard > 0 ? std::gcd(l.optimizer_shard, std::max(1, l.expert_dp())) : std::max(1, l.expert_dp());
  std::vector<std::string> out;
  out.push_back(
      fmt::format("stage {} of {}: {} layers; non-expert parameters per rank Pn = {:.6g} (attention and FFN / TP {}, norms replicated, embedding/head / TP), "
                  "expert parameters per rank Pe = {:.6g} (/ EP {} x expert TP {})",
                  stage, l.pp, m.layers, m.param_elements, l.tp, m.expert_param_elements, l.ep, l.etp));
  out.push_back(fmt::format("params      {:10.3f} GiB = {} B x (Pn{} + Pe{})", gib(m.params), training.param_bytes,
                            l.zero >= 3 ? fmt::format(" / {}", dp_shard) : "", l.zero >= 3 ? fmt::format(" / {}", edp_shard) : ""));
  out.push_back(fmt::format("grads       {:10.3f} GiB = {} B x (Pn{} + Pe{})", gib(m.grads), training.grad_bytes,
                            l.zero >= 2 ? fmt::format(" / {}", dp_shard) : "", l.zero >= 2 ? fmt::format(" / {}", edp_shard) : ""));
  out.push_back(fmt::format("optimizer   {:10.3f} GiB = {} B x (Pn{} + Pe{})  [fp32 master + 2 Adam moments]", gib(m.optimizer), training.optimizer_bytes,
                            l.zero >= 1 ? fmt::format(" / {}", dp_shard) : "", l.zero >= 1 ? fmt::format(" / {}", edp_shard) : ""));
  auto flight = in_flight(l, training.interleave_less_memory);
  std::vector<StagePlan> plan = plan_stages(model, l);
  for (int v = 0; v < l.vpp; ++v) {
    for (const auto& [kind, count] : plan[static_cast<std::size_t>(stage)].chunks[static_cast<std::size_t>(v)].groups) {
      LayerActivation a = layer_activation(model, kind, l, training, l.recompute);
      out.push_back(
          fmt::format("activations chunk {} kind {}: {} in flight x {} layers x {:.3f} MiB per layer (attention {:.3f} + ffn {:.3f} + norm {:.3f} MiB, "
                      "recompute {}, s={} b={} t={} tsp={} cp={})",
                      v, model.kinds[static_cast<std::size_t>(kind)].kind.name, flight[static_cast<std::size_t>(v)][static_cast<std::size_t>(stage)], count,
                      a.total() / 1048576.0, a.attention / 1048576.0, a.ffn / 1048576.0, a.norm / 1048576.0, to_string(l.recompute), training.seq / l.cp, l.mbs,
                      l.tp, l.tsp(), l.cp));
    }
  }
  out.push_back(fmt::format(
      "activations {:10.3f} GiB = layers {:.3f} + one layer rebuilt in backward {:.3f} + embedding output {:.3f} + final norm and logits {:.3f} GiB",
      gib(m.activations), gib(m.layer_activations), gib(m.recompute_working), gib(m.embedding_activations), gib(m.head_activations)));
  out.push_back(fmt::format("buffers     {:10.3f} GiB = max(TP {:.3f}, EP {:.3f}, CP {:.3f}) + DP {:.3f} GiB", gib(m.buffers), gib(m.tp_buffer),
                            gib(m.ep_buffer), gib(m.cp_buffer), gib(m.dp_buffer)));
  out.push_back(fmt::format("reserve     {:10.3f} GiB (allocator and framework context)", gib(m.reserve)));
  out.push_back(fmt::format("total       {:10.3f} GiB of {:.3f} GiB capacity", gib(m.total()), gib(est.capacity_bytes)));
  return out;
}

}  // namespace sapp
