// balance/solver: the pipeline-balancing optimiser (which layers and which recompute kind on every stage and
// chunk), solved exactly.
//
// Model. Data: S stages, V chunks, m micro-batches, schedule sigma; BODY types l = 1..K in model order with
// N_l layers, forward F_l, backward B_{l,r} and activation A_{l,r} per allowed recompute kind r, parameter
// memory P_l; head (forward h_f, backward h_b, memory H) in cell (0, 0), tail (t_f, t_b, T) in cell
// (V-1, S-1); memory limit M and a per-stage constant C.
// Variables: integers x_{l,r,v,s} >= 0, the layers of type l with kind r in chunk v of stage s.
// Constraints:
//   (1) sum_{r,v,s} x_{l,r,v,s} = N_l;
//   (2) every cell holds at least one body layer, except the head's and the tail's cells;
//   (3) the types keep model order along the virtual pipeline (cells in order v*S + s);
//   (4) within a stage, the chunks' layer counts differ by at most `chunk_spread` (V > 1);
//   (5) memory, exact for the schedule's block order: for every stage s and every prefix of its order,
//       static(s) + sum_v c_v(prefix) * A(v, s) <= M, where static(s) = sum P_l x + [s=0] H + [s=S-1] T + C,
//       A(v, s) = sum A_{l,r} x, and c_v(prefix) the micro-batches of chunk v holding activations then
//       (simulate::in_flight_vectors). This is the simulator's peak memory by construction.
// Objective: the schedule's step time in closed form over the cell times t(v,s) = F(v,s) + B(v,s) and the
// stage times T_s = sum_v t(v,s):  sum_s T_s / V + (m V - 1) * max_{v,s} t(v,s)
//   (fill and drain pass every cell once, then m V - 1 lock-step steps at the slowest cell's pace). For 1F1B
//   this is (m - 1) max_s T_s + sum_s T_s, the simulated makespan whenever the stages are equal, and it
//   charges fill/drain as well as the steady state (the reference optimised the max alone). The simulator
//   reports the event-level makespan of the chosen split beside it.
// Solver: stages interact only through (1)-(3) and the objective's max and sum, so a dynamic program over
// stages in order, keeping the Pareto front of (max cell, sum T) per number of layers placed, is exact. Each
// stage's options (for a layer count, under (5)) come from per-chunk Pareto fronts of recompute mixes,
// combined over the chunks into a Pareto front of (slowest chunk, stage time). K > 1 with V > 1 is refused
// (the cells of one stage are not contiguous in model order). `enumerate` tries every assignment instead
// (small cases only).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "pipeline/layers.hpp"
#include "pipeline/schedule.hpp"

namespace sapp::balance {

struct Problem {
  LayerSet layers;
  int stages = 1;
  int chunks = 1;
  int micro_batches = 1;
  double memory_limit_mb = 0;  // 0: no limit
  double constant_mb = 0;
  simulate::Schedule schedule = simulate::Schedule::OneF1B;
  std::vector<Rc> kinds;  // allowed recompute kinds (subset of layers.kinds; all of them when empty)
  int chunk_spread = 2;
};

// x[l][v][s][r]: layers of body type l, chunk v, stage s, recompute kind r.
using Assignment = std::vector<std::vector<std::vector<std::array<long long, kRcKinds>>>>;

struct Evaluation {
  double objective = 0;
  double max_cell = 0;  // slowest chunk-of-a-stage (a stage, with V = 1)
  double sum_stage = 0;
  std::vector<double> stage_time;       // T_s
  std::vector<double> stage_memory_mb;  // peak per stage, exact for the schedule
  bool fits = true;
};

struct Solution {
  bool feasible = false;
  bool optimal = false;  // proved optimal for the objective
  std::string method;
  Assignment x;
  Evaluation eval;
  double solve_seconds = 0;
  long long explored = 0;  // states or assignments examined
};

void check_problem(const Problem& p);
Evaluation evaluate(const Problem& p, const Assignment& x);
simulate::StageTimes stage_times(const Problem& p, const Assignment& x);
Solution solve(const Problem& p);
// Every assignment, for small problems (refuses more than `limit` assignments).
Solution solve_exhaustive(const Problem& p, long long limit = 20000000);

// Even split (the reference's naive baseline): floor(N / (S V)) per cell, remainder to the last cells, all
// layers of one kind. Returns an empty assignment when the kind is not allowed.
Assignment even_split(const Problem& p, Rc kind);

// The framework's YAML keys: offset, recompute, select_recompute, select_comm_recompute, per chunk and stage.
struct FrameworkStrategy {
  std::vector<std::vector<long long>> offset, recompute, select_recompute, select_comm_recompute;
};
std::vector<FrameworkStrategy> to_framework(const Problem& p, const Assignment& x);  // one per body type
Assignment from_framework(const Problem& p, const std::vector<FrameworkStrategy>& s);

}  // namespace sapp::balance
