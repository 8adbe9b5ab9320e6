// balance/end_bound: a lower bound on the simulated step of the interleaved schedules that keeps the first and the
// last stage exact and relaxes the stages between them.
//
// Stages 0 and S-1 are joined by the chunk wrap edges at no cost (F(v, S-1, j) -> F(v+1, 0, j) and B(v+1, 0, j) ->
// B(v, S-1, j)), so a critical path can alternate between their windows (the 128-layer / 32-stage / V4 bench case:
// windows on stages 31, 0, 31, 14, 0). Relaxation: the two end stages run their own orders, and each middle stage
// becomes a pure delay: micro-batch j's forward of chunk v crosses the middle in sum_{0<t<S-1} F(v, t), its backward
// in sum B(v, t) (the middle stages' orders are dropped, which only shortens paths). The relaxed step is the longest
// path of that two-stage graph, a maximum over paths P of c_P + a_P . z, where z holds the middle's per-chunk sums,
// a_P counts P's crossings per chunk and direction, and c_P is P's time on the end stages.
// Bound: for every pair of end-stage options (enumerated), a Lagrangian over the middle: for weights mu over the
// paths found, sum mu_P c_P + min over the middle's plans of (sum mu_P a_P) . z is below every plan's relaxed step
// (weak duality), and the minimum is a program over the middle stages (each picks an option, the layers add up).
// The best weights come from a restricted master LP (GLPK's simplex): min t over mixes of the middle plans found,
// t >= c_P + a_P . z for every path found; its row duals are the weights. Each round adds the critical path at the
// master's mixed middle and the program's minimiser under the duals, until neither is new: the pair's bound is then
// the convexified relaxation's value. The bound is the least over the pairs; a pair whose relaxed step with the
// middle at its least per-chunk sums is already above the cutoff (a plan already found) is left at that value. The
// pairs run from the lowest such value, and the bound gives up (invalid) as soon as a pair's relaxation has a plan
// below the bound already known (`floor`): the least over the pairs could then not exceed it.
#pragma once

#include <functional>
#include <vector>

#include "pipeline/schedule.hpp"

namespace sapp::balance {

// One way a stage can hold its layers: per chunk, one micro-batch's forward and backward time (head and tail
// included in their cells).
struct StageOption {
  std::vector<double> forward, backward;
};

struct EndBoundInput {
  const simulate::Orders* orders = nullptr;  // an interleaved schedule's orders (chunk v's stages run 0..S-1)
  // [stage][k]: every option of stage s holding k body layers that fits its memory, or at least every one that
  // is Pareto-minimal in the cell times (an empty list: k layers cannot sit on s).
  std::vector<std::vector<std::vector<StageOption>>> options;
  long long layers = 0;  // body layers to place over all stages
  double cutoff = 0;     // the simulated step of a plan already found (> 0)
  double floor = 0;      // a bound already known: the work stops (invalid) once the result cannot exceed it
  std::function<bool()> out_of_time = [] { return false; };
};

struct EndBound {
  bool valid = false;  // false: out of time, no plan, or not above the floor (then `bound` means nothing)
  double bound = 0;
  long long pairs = 0;   // end-stage option pairs bounded
  long long pruned = 0;  // of which above the cutoff with the middle at its least sums
};

EndBound end_stage_bound(const EndBoundInput& in);

}  // namespace sapp::balance
