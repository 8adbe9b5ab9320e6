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
#include "model/family.hpp"
#include "plan/layout.hpp"
#include "plan/stages.hpp"

namespace sapp::cost {

// Bytes one layer of `kind` keeps for its backward for one micro-batch on one rank, under `mode`.
struct LayerActivation {
  double attention = 0;
  double ffn = 0;
  double norm = 0;
  [[nodiscard]] double total() const { return attention + ffn + norm; }
};

struct ModeActivations {
  LayerActivation off, selective, full;
  [[nodiscard]] const LayerActivation& of(plan::Recompute mode) const {
    return mode == plan::Recompute::Off ? off : mode == plan::Recompute::Selective ? selective : full;
  }
};

LayerActivation layer_activation(const model::Model& model, const model::BoundKind& kind, const expr::Env& env, plan::Recompute mode,
                                 const std::vector<std::string>& modules = {});
// All three modes from one pass over the slots (each element evaluated once).
// `modules`: the switches `selective` drops (plan::Training::recompute_modules); empty: the model's profile list.
ModeActivations layer_activations(const model::Model& model, const model::BoundKind& kind, expr::Env env, const std::vector<std::string>& modules = {});
LayerActivation layer_activation(const model::Model& model, int kind, const plan::Layout& layout, const plan::Training& training, plan::Recompute mode);

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
  double layer_activations = 0;         // in-flight layer activations
  double recompute_working = 0;         // one layer rebuilt during its backward
  double embedding_activations = 0;     // first stage
  double head_activations = 0;          // last stage: final norm input and logits
  double embedding_activation_one = 0;  // the same for one micro-batch in flight (the balancer's head and tail)
  double head_activation_one = 0;
  double loss_backward = 0;     // last stage: the loss backward's transient buffers (terms.hpp)
  double fp8_weight_cache = 0;  // in params: Transformer Engine's FP8 weight copies (plan::Training)
  double kv_cache = 0;          // in buffers: the sequence pipeline's KV cache (plan::Training::seq_split)
  double dp_stage = 0;          // in buffers: ZeRO's stage-wide gathered weights and unsharded gradients (Zero3Stage)
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
  double act[3] = {0, 0, 0};  // bytes per micro-batch under off, selective, full (indexed by plan::Recompute)
  double dense_elems = 0;
  double expert_elems = 0;
  bool moe = false;
};
std::vector<KindMemory> kind_memory(const model::Model& model, const plan::Layout& layout, const plan::Training& training);

// Bytes of weights, gradients and optimizer states each layer parameter element costs a rank under the layout's
// ZeRO stage (with Transformer Engine's FP8 weight cache and ZeRO's stage-wide buffers, Zero3Stage): non-expert
// elements shard over the ZeRO group, expert elements over the expert ZeRO group. `hidden_size` sizes LoRA's
// trainable share (terms::trainable_fraction).
struct StateBytes {
  double dense = 0;
  double expert = 0;
};
StateBytes state_bytes_per_element(const plan::Layout& layout, const plan::Training& training, double hidden_size);
// What ZeRO keeps per parameter element of a stage beyond its sharded states, in bytes (StageMemory::dp_stage): the
// whole stage gathered and kept for the step (terms::zero3_keeps_stage_gathered), and gradients accumulated
// unsharded (terms::zero3_accumulates_unsharded), which are MindSpore's only gradients (`replace_grads`: counted
// as StageMemory::grads instead of the sharded ones).
struct Zero3Stage {
  double gathered = 0;
  double accumulated = 0;
  bool replace_grads = false;
};
Zero3Stage zero3_stage_bytes(const plan::Layout& layout, const plan::Training& training, double hidden_size);
// Bytes per layer parameter element of Transformer Engine's FP8 weight cache (plan::Training::fp8_transformer_engine):
// terms::kFp8WeightCacheBytes under FP8 unless the weights are FP8 themselves (fp8_param_gather, which Megatron
// takes with the distributed optimizer only); none under ZeRO-3, whose gathered weights are released per layer.
double fp8_weight_cache_bytes(const plan::Layout& layout, const plan::Training& training);

// An interleaved schedule's micro-batches in flight per stage: plan::in_flight_vectors of every stage, each stage's
// vectors one after the other (`chunks` counts per vector) for a tight dot-product loop.
struct InFlightVectors {
  std::size_t chunks = 0;
  std::vector<std::vector<double>> stages;
};
// The vectors estimate_memory() counts an interleaved layout's stages by (what a caller pricing many layouts of one
// schedule, stage count, chunk count and micro-batch count may keep and pass back).
InFlightVectors in_flight_vectors_of(const plan::Layout& layout, const plan::Training& training);

// Prices one layout. The layout is assumed valid (see check_layout). `per_kind`, when given, must be
// kind_memory() of a layout with the same mbs, tp, sp, cp, ep and etp; `in_flight`, when given,
// in_flight_vectors_of() a layout with the same schedule, pp, vpp and micro-batches.
MemoryEstimate estimate_memory(const model::Model& model, const plan::Layout& layout, const plan::Training& training, double capacity_bytes,
                               const std::vector<KindMemory>* per_kind = nullptr, const InFlightVectors* in_flight = nullptr);

// One line per term of one stage: name, bytes, the formula and its inputs.
std::vector<std::string> explain_stage(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const MemoryEstimate& estimate,
                                       int stage);

}  // namespace sapp::cost
