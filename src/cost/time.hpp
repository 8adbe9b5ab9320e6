// perf: the step-time model, in seconds. One layout in, a step time and its breakdown out.
//
// compute: FLOPs per op from the op records' work terms, over the device's peak times an efficiency that
// depends on the op kind and (for GEMMs) its size; backward = 2 x forward; recompute re-runs the forward of
// what it dropped. communication: every collective of every dimension on the slowest link its group spans
// (rank order TP, CP, EP/DP, PP outermost), alpha-beta ring model. overlap: explicit fractions (Overlap).
// pipeline: 1F1B fill/drain with the slowest stage governing the steady state; interleaved divides the fill
// by the chunks.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/memory.hpp"
#include "cost/terms.hpp"
#include "hardware/hardware.hpp"
#include "plan/layout.hpp"

namespace sapp::cost {

struct Breakdown {
  double compute_s = 0;  // forward + backward, slowest-stage view, whole step
  double recompute_s = 0;
  double tp_comm_s = 0;  // exposed
  double cp_comm_s = 0;
  double ep_comm_s = 0;
  double dp_comm_s = 0;
  double pp_comm_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
};

struct StepTime {
  double step_s = 0;
  double tokens_per_s_per_device = 0;
  double mfu = 0;             // model FLOPs (no recompute) / (step x devices x peak)
  double model_flops = 0;     // per step, whole job
  double hardware_flops = 0;  // with recompute
  Breakdown breakdown;
};

StepTime estimate_time(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const hardware::Hardware& hw,
                       const Overlap& overlap = {});
// One layer of each kind for one micro-batch: forward and recompute seconds, FLOPs, exposed TP/CP/EP
// communication. Depends only on mbs, tp, sp, cp, cp_algo, ep and etp (grouped evaluation).
struct KindTime {
  double fwd_s = 0, bwd_s = 0, fwd_flops = 0, bwd_flops = 0;
  double recompute_s[3] = {0, 0, 0};  // under off, selective, full (indexed by plan::Recompute)
  double recompute_flops[3] = {0, 0, 0};
  double tp_s = 0, cp_s = 0, ep_s = 0;              // exposed under the overlap fractions alone
  double tp_raw_s = 0, cp_raw_s = 0, ep_raw_s = 0;  // the collectives' own time, before any overlap
  double cp_fwd_s = 0, cp_raw_fwd_s = 0;            // CP's forward part of cp_s and cp_raw_s (a full recompute runs it again)
  double host_s = 0;                                // host synchronisation stalls (in fwd_s and bwd_s)
  double cp_merge_fwd_s = 0, cp_merge_bwd_s = 0;    // ring CP's merges of partial results (in fwd_s and bwd_s)
  double wgrad_floor_s = 0;                         // routed experts' weight-gradient passes beyond their GEMMs (in bwd_s)
  bool selective_redispatches = false;              // selective recompute re-runs the EP dispatch and combine
};
struct KindTimes {
  std::vector<KindTime> kinds;
  double model_flops_per_sequence = 0;  // forward, whole model, no recompute (for MFU)
};
KindTimes kind_times(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const hardware::Hardware& hw,
                     const Overlap& overlap = {});

// The same, reusing the layout's memory estimate (its per-stage parameter counts size the DP collectives) and,
// when given, kind_times() of a layout that shares the fields above.
// `stages`, when given, receives per stage and micro-batch (seconds) what the step was priced from.
struct StageTime {
  double compute = 0, recompute = 0, tp = 0, cp = 0, ep = 0, total = 0;  // tp, cp, ep: exposed
  double tp_raw = 0, cp_raw = 0, ep_raw = 0;                             // before any overlap
};
StepTime estimate_time(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const hardware::Hardware& hw,
                       const cost::MemoryEstimate& memory, const Overlap& overlap = {}, const KindTimes* per_kind = nullptr,
                       std::vector<StageTime>* stages = nullptr);

// Every memory and time term of one stage, one line each, with its formula and inputs: explain_stage()'s memory lines
// and then the time terms, taken from the same estimate_time() pass (its per-stage figures) and the named terms of
// cost/terms.hpp, so the explanation cannot drift from the arithmetic.
std::vector<std::string> explain_stage_terms(const model::Model& model, const plan::Layout& layout, const plan::Training& training,
                                             const hardware::Hardware& hw, const Overlap& overlap, int stage);

// Forward FLOPs of the whole model for one sequence (no parallelism, no recompute): gemm + attention terms.
double model_forward_flops_per_sequence(const model::Model& model, const plan::Training& training);

void add_time_json(nlohmann::json& j, const StepTime& t);
std::string time_summary(const StepTime& t);

}  // namespace sapp::cost
