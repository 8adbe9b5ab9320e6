// pipeline/descriptors: the balancer's layer descriptors (HEAD, BODY types in model order, TAIL; the layers JSON
// of docs/reference-planner.md §6) computed from sapp's own cost model for a model and a layout, so that a
// layout found by the search can be balanced without a measured layers file.
//
// Units: times in milliseconds, memory in MB of 2^20 bytes (the layers file's conventions). Per BODY type, one
// layer for one micro-batch: the forward (compute plus a third of its exposed TP/CP/EP communication), the
// backward per recompute kind (compute, two thirds of the communication, and what the kind re-runs: the
// dropped ops' forward for selective, the whole forward and its collectives for full), the activation bytes
// each kind keeps, and the weights, gradients and optimizer states of one layer under the layout's ZeRO stage.
// HEAD and TAIL are what the first and last stages hold beyond their layers: the embedding, and the LM head,
// the loss and MTP, with their states and the activations the schedule keeps of them. What every stage holds
// whatever its layers (communication buffers, the reserve, one rebuilt layer) is the problem's constant.
// Communication recompute kinds (comm, both) are not priced by the cost model and are not offered.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "hardware/hardware.hpp"
#include "pipeline/layers.hpp"
#include "pipeline/solver.hpp"

namespace sapp::balance {

// The balancer's recompute kind of a layout's recompute mode (off: none).
Rc rc_of(plan::Recompute mode);

inline constexpr double kBytesPerMb = 1048576.0;

struct Descriptors {
  LayerSet layers;
  double constant_mb = 0;  // per stage, whatever its layers: buffers and reserve
  // Beside constant_mb, one layer rebuilt in its backward, per recompute kind (indexed by Rc), the costliest over the
  // BODY types (each type states its own, BodyType::rebuild_mb, which the balancer reads): what a layers file, which
  // states no types' rebuilds, holds on every stage (to_layers_json).
  std::array<double, kRcKinds> rebuild_mb{};
  // Step time the pipeline schedule does not cover (exposed DP and PP communication, optimizer step), seconds.
  double outside_pipeline_s = 0;
  std::string why_not;  // non-empty: the model cannot be described this way (e.g. too many alternating kinds)
  // why_not is that the stack alternates more runs of kinds than max_body_types without a period: described with a
  // larger max_body_types, each run is a BODY type (the solver's contiguous split, kMaxProgramBodyTypes).
  bool aperiodic = false;
  // Layers one BODY layer stands for: 1, or the period of a stack whose kinds repeat (Gemma 2's sliding and global
  // pair, Qwen3-Next's three linear and one full attention layers), balanced a whole period at a time.
  long long layers_per_unit = 1;
};

// `max_body_types` bounds the BODY types (the balancer's cost grows with them). A stack that alternates more
// runs of kinds than that is described by its period when it repeats one exactly (one BODY type whose layer is
// the period: the sums of the period's times, activations and states); else it is refused in `why_not`.
// `mtp_mode`: the recompute of the MTP layers (in the TAIL) as the written plan states it; none: the layout's (a
// split stating recompute per chunk leaves them not recomputed, plan::for_each_chunk_group).
Descriptors describe(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const hardware::Hardware& hw,
                     const cost::Overlap& overlap, std::optional<plan::Recompute> mtp_mode = std::nullopt, int max_body_types = 3);

// The balancing problem of a layout: its stages, chunks, micro-batches and schedule, the memory limit (bytes),
// the recompute kinds the cost model prices.
Problem problem_for(const Descriptors& d, const plan::Layout& layout, const plan::Training& training, double capacity_bytes);

// The layers JSON of the descriptors (what `sapp balance --layers` reads).
nlohmann::json to_layers_json(const Descriptors& d);

}  // namespace sapp::balance
