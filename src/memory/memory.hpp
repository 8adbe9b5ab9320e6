// memory: the per-device memory estimator. One layout in, per-stage bytes by category out.
//
// params, grads and optimizer states follow the ZeRO stage (Megatron's distributed optimizer is ZeRO-1:
// 2 + 4 + 12/DP bytes per parameter with bf16 weights, fp32 gradients and Adam); activations are priced op
// by op from the op records, times the micro-batches the schedule keeps in flight on each stage and chunk;
// buffers are the communication workspaces, in bytes; a configurable reserve is added. Peak = max over stages.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "hardware/hardware.hpp"
#include "memory/layout.hpp"
#include "model/family.hpp"

namespace sapp {

// Bytes one layer of `kind` keeps for its backward for one micro-batch on one rank, under `mode`.
struct LayerActivation {
  double attention = 0;
  double ffn = 0;
  double norm = 0;
  [[nodiscard]] double total() const { return attention + ffn + norm; }
};

struct ModeActivations {
  LayerActivation off, selective, full;
  [[nodiscard]] const LayerActivation& of(Recompute mode) const { return mode == Recompute::Off ? off : mode == Recompute::Selective ? selective : full; }
};

// An expr::Env for a kind with the layout's names bound (s, seq, ctx, b, t, tsp, cp, ep, etp, tok_shard, fa, bc, cap).
expr::Env layer_env(const model::Model& model, const model::BoundKind& kind, const Layout& layout, const Training& training);
LayerActivation layer_activation(const model::Model& model, const model::BoundKind& kind, const expr::Env& env, Recompute mode);
// All three modes from one pass over the slots (each element evaluated once).
ModeActivations layer_activations(const model::Model& model, const model::BoundKind& kind, expr::Env env);
LayerActivation layer_activation(const model::Model& model, int kind, const Layout& layout, const Training& training, Recompute mode);

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
// holds the embedding); MTP layers go to the last chunk of the last stage.
template <typename Visit>
void for_each_chunk_group(const model::Model& model, const Layout& l, Visit&& visit) {
  long long units = model.vision_layers() + model.body_layers();
  long long chunks = 1LL * l.pp * l.vpp;
  long long base = units / chunks;
  long long extra = units % chunks;
  std::size_t g = 0;   // current stack group (MTP groups skipped)
  long long used = 0;  // layers of group g already placed
  for (long long k = 0; k < chunks; ++k) {
    long long n = base + ((k >= 1 && k <= extra) ? 1 : 0);
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

long long in_flight_count(const Layout& layout, bool less_memory, int chunk, int stage);

// Micro-batches in flight per [chunk][stage] at a stage's peak (1F1B: p - i; interleaved: Megatron's warm-up).
std::vector<std::vector<long long>> in_flight(const Layout& layout, bool less_memory);

struct StageMemory {
  int stage = 0;
  long long layers = 0;
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double buffers = 0;
  double reserve = 0;
  // FP32 copies of the gradients the optimizer step makes of its shard when gradients are kept in fewer than 4
  // bytes (Megatron's mixed-precision optimizers: main_param.grad = grad.float()). Activations and buffers are
  // free by then, so the stage peaks at whichever of the two phases is larger.
  double optimizer_step = 0;
  [[nodiscard]] double total() const { return params + grads + optimizer + std::max(activations + buffers, optimizer_step) + reserve; }
  // Elements and parts, for --explain.
  double param_elements = 0;
  double expert_param_elements = 0;
  double layer_activations = 0;      // in-flight layer activations
  double recompute_working = 0;      // one layer rebuilt during its backward
  double embedding_activations = 0;  // first stage
  double head_activations = 0;       // last stage: final norm input and logits
  double tp_buffer = 0, ep_buffer = 0, cp_buffer = 0, dp_buffer = 0;
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  double peak_bytes = 0;
  int peak_stage = 0;
  double capacity_bytes = 0;
  [[nodiscard]] bool fits() const { return peak_bytes <= capacity_bytes; }
};

// What one layer of each kind costs under a layout: activations (its mode and with nothing recomputed) and
// parameter elements per rank. Depends only on mbs, tp, sp, cp, ep and etp, so a search prices it once per
// group of layouts that share those (grouped evaluation).
struct KindMemory {
  double act[3] = {0, 0, 0};  // bytes per micro-batch under off, selective, full (indexed by Recompute)
  double dense_elems = 0;
  double expert_elems = 0;
  bool moe = false;
};
std::vector<KindMemory> kind_memory(const model::Model& model, const Layout& layout, const Training& training);

// Prices one layout. The layout is assumed valid (see check_layout). `per_kind`, when given, must be
// kind_memory() of a layout with the same mbs, tp, sp, cp, ep and etp.
MemoryEstimate estimate_memory(const model::Model& model, const Layout& layout, const Training& training, double capacity_bytes,
                               const std::vector<KindMemory>* per_kind = nullptr);

// One line per term of one stage: name, bytes, the formula and its inputs.
std::vector<std::string> explain_stage(const model::Model& model, const Layout& layout, const Training& training, const MemoryEstimate& estimate, int stage);

}  // namespace sapp
