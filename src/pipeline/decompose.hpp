// balance/decompose: per-layer memory terms recovered from measured per-stage peaks of 1F1B dry runs, and a
// first-run configuration that makes them recoverable.
//
// Model (1F1B, m >= S): stage i of S with n_i body layers, c_{r,i} of them under recompute kind r, peaks
//   M_i = n_i P + (S - i) sum_r c_{r,i} A_r + C + [i = 0] H + [i = S - 1] T,
// unknowns P (parameters per layer), A_r (activations per layer and micro-batch, per kind used), C (per-stage
// constant, optional), H (head extra), T (tail extra). Every stage of every run is one equation; solved by
// least squares (Householder QR), refused with the unknowns it cannot tell apart when under-determined.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/layers.hpp"

namespace sapp::balance {

struct DryRun {
  std::vector<long long> layers;                    // per stage
  std::map<Rc, std::vector<long long>> recomputed;  // per kind other than none: layers per stage
  std::vector<double> peaks_mb;                     // per stage
  std::vector<bool> measured;                       // per stage; empty: every stage was measured
};

struct Measurements {
  int stages = 0;
  bool constant = true;
  std::vector<DryRun> runs;
  // The reference planner's convention (its dry-run input): P, the activations and C are fitted on the body
  // stages only, then the head (tail) term is the mean over the runs of M_0 - n_0 P - S sum_r c_r A_r
  // (M_{S-1} - n P - sum_r c_r A_r), so it absorbs C, as the layers JSON's HEAD / TAIL memory does.
  bool reference_convention = false;
};

struct Decomposition {
  double param_mb = 0;
  std::map<Rc, double> activation_mb;
  double constant_mb = 0;
  double head_mb = 0;
  double tail_mb = 0;
  std::vector<double> residuals_mb;  // measured - fitted, one per equation (run by run, stage by stage)
  int equations = 0;
  int unknowns = 0;
};

Measurements measurements_from_json(const nlohmann::json& tree, const std::string& file);
// The reference planner's dry-run input: pipeline_config {pipeline_num, num_layer, offset: 0 | [S] | [[S] per
// run]}, recompute_config {recompute, select_recompute, select_comm_recompute: bool | [S] | [[S] per run]} read with
// the framework's semantics, memory_usage {head_memory, tail_memory (MB, one per run), body_memories {stage_id,
// memories} (lists, or lists of lists per run: any subset of the body stages)}; time_config is not needed here.
// Layers per stage: num_layer / pipeline_num (floor) + offset. Sets reference_convention; the constant is fitted
// when the body stages give more equations than the unknowns without it (as the reference decides).
Measurements measurements_from_reference(const nlohmann::json& tree, const std::string& file);
// Either input: the reference's when the tree has `memory_usage`.
Measurements read_measurements(const nlohmann::json& tree, const std::string& file);
Decomposition decompose(const Measurements& m);

// A first dry run (or several) whose peaks make `decompose` solvable for these kinds: layer counts and
// recompute counts per stage, with the offsets against an even split.
std::vector<DryRun> guide(int stages, long long layers, const std::vector<Rc>& kinds, bool constant);

}  // namespace sapp::balance
