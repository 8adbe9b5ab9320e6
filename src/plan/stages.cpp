#include "plan/stages.hpp"

#include <algorithm>
#include <cmath>

namespace sapp::plan {

namespace {

void set(expr::Env& env, int index, long long v) {
  if (index >= 0) env.set(index, expr::Value::of_int(v));
}

void set(expr::Env& env, int index, double v) {
  if (index >= 0) env.set(index, expr::Value::of_double(v));
}

// A whole number stays a Python int so the records' arithmetic keeps int semantics.
void set_number(expr::Env& env, int index, double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15)
    set(env, index, static_cast<long long>(v));
  else
    set(env, index, v);
}

// Average number of keys a causal query attends: positions 1..S, capped by a sliding window w.
double causal_context(long long seq, long long window) {
  double S = static_cast<double>(seq);
  if (window <= 0 || window >= seq) return (S + 1.0) / 2.0;
  double w = static_cast<double>(window);
  return (w * (w + 1.0) / 2.0 + (S - w) * w) / S;
}

// The same for chunked local attention (Llama 4): a query attends the positions of its own chunk of c up to
// itself, so each full chunk contributes c (c + 1) / 2 keys and the last, partial one r (r + 1) / 2.
double chunked_context(long long seq, long long chunk) {
  if (chunk <= 0 || chunk >= seq) return causal_context(seq, 0);
  const long long full_chunks = seq / chunk;  // whole chunks (integer division intended)
  double full = static_cast<double>(full_chunks);
  double c = static_cast<double>(chunk);
  double r = static_cast<double>(seq % chunk);
  return (full * c * (c + 1.0) / 2.0 + r * (r + 1.0) / 2.0) / static_cast<double>(seq);
}

}  // namespace

expr::Env layer_env(const model::Model& model, const model::BoundKind& kind, const Layout& l, const Training& training) {
  const model::LayoutSymbols& sym = model.records->layout;
  expr::Env env = kind.env;
  long long seq = training.seq;
  int cp = l.cp;
  double ctx = 0;
  double ctx_all = 0;  // keys a query could attend under plain causal attention (what a sparse-attention indexer scores)
  if (kind.vision) {
    seq = model.spec.vision->tokens;
    cp = 1;
    // Bidirectional, within one image when the tower has a fixed resolution, else over the sample's tokens.
    const long long image = model.spec.vision->image_tokens;
    ctx = static_cast<double>(image > 0 ? std::min(seq, image) : seq);
    ctx_all = ctx;
  } else {
    ctx_all = causal_context(seq, 0);
    // An indexed layer (DeepSeek Sparse Attention) attends the index_topk keys its indexer selects, min(i + 1, topk)
    // for query i: the count of a window of topk keys.
    ctx = kind.kind.chunked   ? chunked_context(seq, model.spec.attention_chunk.value_or(0))
          : kind.kind.indexed ? causal_context(seq, model.spec.indexer ? model.spec.indexer->topk : 0)
                              : causal_context(seq, kind.kind.sliding ? model.spec.sliding_window.value_or(0) : 0);
  }
  // Under the sequence pipeline a unit is one segment; its attention keeps the whole sequence's K and V (kvs).
  const int segments = kind.vision ? 1 : std::max(1, training.seq_split);
  set_number(env, sym.s, static_cast<double>(seq) / segments / cp);
  set(env, sym.kvs, static_cast<long long>(segments));
  set(env, sym.seq, seq);
  set(env, sym.ctx, ctx);
  set(env, sym.ctx_all, ctx_all);
  set(env, sym.b, static_cast<long long>(l.mbs));
  set(env, sym.t, static_cast<long long>(l.tp));
  set(env, sym.tsp, static_cast<long long>(l.tsp()));
  set(env, sym.cp, static_cast<long long>(cp));
  set(env, sym.ep, static_cast<long long>(l.ep));
  set(env, sym.etp, static_cast<long long>(l.etp));
  set(env, sym.tok_shard, static_cast<long long>(std::max(1, l.tsp() / l.etp)));
  set(env, sym.fa, static_cast<long long>(training.flash_attention ? 1 : 0));
  set_number(env, sym.bc, training.compute_bytes);
  set_number(env, sym.bq, training.kept_gemm_input_bytes());
  set_number(env, sym.cap, training.capacity_factor);
  set(env, sym.fp8, static_cast<long long>(training.fp8 ? 1 : 0));
  set_number(env, sym.qcast, training.quantize_cast_bytes());
  set(env, sym.eager, static_cast<long long>(training.eager_norms ? 1 : 0));
  set(env, sym.lora, static_cast<long long>(training.lora_rank > 0 ? 1 : 0));
  return env;
}

long long pipeline_head_and_tail_units(const model::Model& model, const Training& training) {
  if (!training.pipeline_split_counts_head) return 0;
  long long mtp = 0;
  for (const auto& group : model.stack)
    if (group.mtp) mtp += group.count;
  return 2 + mtp;
}

std::vector<StagePlan> plan_stages(const model::Model& model, const Layout& l) {
  std::vector<StagePlan> plan(static_cast<std::size_t>(l.pp));
  for (auto& st : plan) st.chunks.resize(static_cast<std::size_t>(l.vpp));
  plan.front().first = true;
  plan.back().last = true;
  for_each_chunk_group(model, l, [&](int stage, int chunk, int kind, long long count) {
    ChunkLayers& c = plan[static_cast<std::size_t>(stage)].chunks[static_cast<std::size_t>(chunk)];
    if (!c.groups.empty() && c.groups.back().first == kind)
      c.groups.back().second += count;
    else
      c.groups.emplace_back(kind, count);
    c.layers += count;
  });
  return plan;
}

std::vector<StageRun> stage_runs(const model::Model& model, const Layout& l, const Training& training, int stage) {
  std::vector<StageRun> out;
  for_each_chunk_group(model, l, training, [&](int at, int chunk, int kind, long long count, Recompute mode) {
    if (at != stage) return;
    auto same = [&](const StageRun& r) { return r.chunk == chunk && r.kind == kind && r.mode == mode; };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) {
      out.push_back(StageRun{chunk, kind, mode, count});
    } else {
      it->count += count;
    }
  });
  return out;
}

}  // namespace sapp::plan
