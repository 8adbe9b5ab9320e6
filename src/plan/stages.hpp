// plan/stages: where a layout puts the model. Which layers each pipeline stage and virtual chunk holds, how many
// micro-batches the schedule keeps in flight on each, and the expression environment a layer kind is priced in
// under a layout. Shared by the memory and time estimators and the pipeline balancer.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/expr.hpp"
#include "model/family.hpp"
#include "plan/layout.hpp"
#include "plan/pipeline_model.hpp"  // in_flight_count, in_flight: the shared pipeline model
#include "plan/split.hpp"

namespace sapp::plan {

// An expr::Env for a kind with the layout's names bound (s, seq, ctx, b, t, tsp, cp, ep, etp, tok_shard, fa, bc, cap).
expr::Env layer_env(const model::Model& model, const model::BoundKind& kind, const Layout& layout, const Training& training);

// Which layers each pipeline stage and chunk holds, in model order.
struct ChunkLayers {
  std::vector<std::pair<int, long long>> groups;  // (kind index, count)
  long long layers = 0;
};
struct StagePlan {
  std::vector<ChunkLayers> chunks;  // one per virtual chunk
  bool first = false;               // holds the embedding (and the vision tower's patch embedding)
  bool last = false;                // holds the final norm, LM head, MTP
};
std::vector<StagePlan> plan_stages(const model::Model& model, const Layout& layout);
// The same split without building it: visit(stage, chunk, kind, count[, mode[, is_mtp]]) for each run of layers, in model
// order. Without a stated split, vision and body layers are spread over PP x VPP chunks (the remainder to
// virtual chunks 1..r, since chunk 0 holds the embedding) and every layer takes the layout's recompute mode;
// with one (layout.split), each chunk holds its stated count and its first `full` layers are recomputed whole,
// the next `selective` selectively, the rest not. MTP layers go to the last chunk of the last stage. A visitor
// that takes a fifth argument gets each run's recompute mode (runs are cut where the mode changes), and one that
// takes a sixth whether the run is the MTP layers.
// With training.pipeline_split_counts_head (Megatron's account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split, and the pp_layout strings of the Megatron-Bridge DeepSeek-V3 recipes such
// as "Et|(tt|)*30mL"), the embedding counts as one unit of the first chunk and each MTP layer and the loss as
// units of the last chunk, so those chunks take fewer layers (an even split only; a stated split is as stated).
// Units the even split counts besides the layers: with training.pipeline_split_counts_head the embedding (1), the
// loss (1) and each MTP layer; 0 otherwise. A chunk may then hold the embedding or the loss alone (Llama 3.1 405B's
// 126 layers over PP 16 x VPP 8 in the Megatron-Bridge recipes).
long long pipeline_head_and_tail_units(const model::Model& model, const Training& training);

template <typename Visit>
void for_each_chunk_group(const model::Model& model, const Layout& l, const Training& training, Visit&& visit) {
  auto call = [&](int stage, int chunk, int kind, long long count, Recompute mode, bool is_mtp = false) {
    if (count <= 0) return;
    if constexpr (std::is_invocable_v<Visit&, int, int, int, long long, Recompute, bool>) {
      visit(stage, chunk, kind, count, mode, is_mtp);
    } else if constexpr (std::is_invocable_v<Visit&, int, int, int, long long, Recompute>) {
      visit(stage, chunk, kind, count, mode);
    } else {
      visit(stage, chunk, kind, count);
    }
  };
  const long long head_units = training.pipeline_split_counts_head ? 1 : 0;  // the embedding
  const long long layers = model.vision_layers() + model.body_layers();
  const long long units = layers + pipeline_head_and_tail_units(model, training);
  const long long chunks = 1LL * l.pp * l.vpp;
  const long long base = units / chunks;
  const long long extra = units % chunks;
  const StageSplit* split = l.split.get();
  std::size_t g = 0;   // current stack group (MTP groups skipped)
  long long used = 0;  // layers of group g already placed
  long long placed = 0;
  for (long long k = 0; k < chunks; ++k) {
    int stage = stage_of_virtual(l, training, k);
    int chunk = static_cast<int>(k / l.pp);
    auto cs = [&](const ChunkCounts& x) { return x.empty() ? 0LL : x[static_cast<std::size_t>(chunk)][static_cast<std::size_t>(stage)]; };
    long long n = 0;
    if (split != nullptr) {
      n = cs(split->layers);
    } else {
      n = base + ((k >= 1 && k <= extra) ? 1 : 0);
      if (k == 0) n -= head_units;
      if (k == chunks - 1) n = layers - placed;  // the rest (the tail units take the last chunk's share)
      n = std::max(0LL, std::min(n, layers - placed));
    }
    bool per_chunk = split != nullptr && split->states_recompute();
    long long full_left = per_chunk ? cs(split->full) : 0;
    long long selective_left = per_chunk ? cs(split->selective) : 0;
    while (n > 0 && g < model.stack.size()) {
      const model::LayerGroup& group = model.stack[g];
      if (group.mtp) {
        ++g;
        continue;
      }
      long long take = std::min(n, group.count - used);
      if (per_chunk) {
        long long f = std::min(take, full_left);
        long long s = std::min(take - f, selective_left);
        call(stage, chunk, group.kind, f, Recompute::Full);
        call(stage, chunk, group.kind, s, Recompute::Selective);
        call(stage, chunk, group.kind, take - f - s, Recompute::Off);
        full_left -= f;
        selective_left -= s;
      } else {
        call(stage, chunk, group.kind, take, l.recompute);
      }
      n -= take;
      placed += take;
      used += take;
      if (used == group.count) {
        ++g;
        used = 0;
      }
    }
  }
  Recompute mtp_mode = split != nullptr && split->states_recompute() ? Recompute::Off : l.recompute;
  for (const auto& group : model.stack) {
    if (group.mtp) call(head_stage(l, training), l.vpp - 1, group.kind, group.count, mtp_mode, true);
  }
}
template <typename Visit>
void for_each_chunk_group(const model::Model& model, const Layout& l, Visit&& visit) {
  for_each_chunk_group(model, l, Training{}, std::forward<Visit>(visit));
}

// One stage's layers as the explanations list them: one row per (chunk, kind, recompute mode), its layers
// summed over the model-order runs (Qwen3-Next's 3 linear + 1 full, twelve times, is two rows per chunk).
struct StageRun {
  int chunk = 0;
  int kind = 0;
  Recompute mode = Recompute::Off;
  long long count = 0;
};
std::vector<StageRun> stage_runs(const model::Model& model, const Layout& l, const Training& training, int stage);

}  // namespace sapp::plan
