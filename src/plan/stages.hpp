// plan/stages: where a layout puts the model. Which layers each pipeline stage and virtual chunk holds, how many
// micro-batches the schedule keeps in flight on each, and the expression environment a layer kind is priced in
// under a layout. Shared by the memory and time estimators and the pipeline balancer.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "core/expr.hpp"
#include "model/family.hpp"
#include "plan/layout.hpp"

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
// The same split without building it: visit(stage, chunk, kind, count) for each run of layers, in model order.
// Vision and body layers are spread over PP x VPP chunks (the remainder to virtual chunks 1..r, since chunk 0
// holds the embedding); MTP layers go to the last chunk of the last stage. With training.pipeline_split_counts_head
// (Megatron's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split, and the pp_layout
// strings of the Megatron-Bridge DeepSeek-V3 recipes such as "Et|(tt|)*30mL"), the embedding counts as one unit of
// the first chunk and each MTP layer and the loss as units of the last chunk, so those chunks take fewer layers.
template <typename Visit>
void for_each_chunk_group(const model::Model& model, const Layout& l, const Training& training, Visit&& visit) {
  long long mtp = 0;
  for (const auto& group : model.stack)
    if (group.mtp) mtp += group.count;
  const long long head_units = training.pipeline_split_counts_head ? 1 : 0;        // the embedding
  const long long tail_units = training.pipeline_split_counts_head ? 1 + mtp : 0;  // the loss and the MTP layers
  long long layers = model.vision_layers() + model.body_layers();
  long long units = layers + head_units + tail_units;
  long long chunks = 1LL * l.pp * l.vpp;
  long long base = units / chunks;
  long long extra = units % chunks;
  std::size_t g = 0;   // current stack group (MTP groups skipped)
  long long used = 0;  // layers of group g already placed
  long long placed = 0;
  for (long long k = 0; k < chunks; ++k) {
    long long n = base + ((k >= 1 && k <= extra) ? 1 : 0);
    if (k == 0) n -= head_units;
    if (k == chunks - 1) n = layers - placed;  // the rest (the tail units take the last chunk's share)
    n = std::max(0LL, std::min(n, layers - placed));
    int stage = static_cast<int>(k % l.pp);
    int chunk = static_cast<int>(k / l.pp);
    while (n > 0 && g < model.stack.size()) {
      const model::LayerGroup& group = model.stack[g];
      if (group.mtp) {
        ++g;
        continue;
      }
      long long take = std::min(n, group.count - used);
      visit(stage, chunk, group.kind, take);
      n -= take;
      placed += take;
      used += take;
      if (used == group.count) {
        ++g;
        used = 0;
      }
    }
  }
  for (const auto& group : model.stack) {
    if (group.mtp) visit(l.pp - 1, l.vpp - 1, group.kind, group.count);
  }
}
template <typename Visit>
void for_each_chunk_group(const model::Model& model, const Layout& l, Visit&& visit) {
  for_each_chunk_group(model, l, Training{}, std::forward<Visit>(visit));
}

long long in_flight_count(const Layout& layout, bool less_memory, int chunk, int stage);

// Micro-batches in flight per [chunk][stage] at a stage's peak (1F1B: p - i; interleaved: Megatron's warm-up).
std::vector<std::vector<long long>> in_flight(const Layout& layout, bool less_memory);

}  // namespace sapp::plan
