// balance/solver: the pipeline-balancing optimiser (which layers and which recompute kind on every stage and
// chunk).
//
// Model. Data: S stages, V chunks, m micro-batches, schedule sigma; BODY types l = 1..K in model order with
// N_l layers, forward F_l, backward B_{l,r} and activation A_{l,r} per allowed recompute kind r, parameter
// memory P_l; head (forward h_f, backward h_b, memory H) in cell (0, 0), tail (t_f, t_b, T) in cell
// (V-1, S-1) (DualPipe-V: (1, 0), its second chunk running back to stage 0); memory limit M and a per-stage
// constant C.
// Variables: integers x_{l,r,v,s} >= 0, the layers of type l with kind r in chunk v of stage s.
// Constraints:
//   (1) sum_{r,v,s} x_{l,r,v,s} = N_l;
//   (2) every cell holds at least one body layer, except the head's and the tail's cells;
//   (3) the types keep model order along the virtual pipeline (cells in order v*S + s; DualPipe-V's chunk 1 from
//       stage S-1 back to 0);
//   (4) within a stage, the chunks' layer counts differ by at most `chunk_spread` (0: no limit, the default);
//   (5) memory, exact for the schedule's block order: for every stage s and every prefix of its order,
//       static(s) + sum_v c_v(prefix) * A(v, s) <= M, where static(s) = sum P_l x + [s=0] H + [s=S-1] T + C
//       + max over the types l and kinds r stage s holds of R_{l,r} (one layer rebuilt in its backward: the larger
//       of BodyType::rebuild_mb and Problem::rebuild_mb),
//       A(v, s) = sum A_{l,r} x, and c_v(prefix) the micro-batches of chunk v holding activations then
//       (plan::in_flight_vectors). This is the simulator's peak memory by construction;
//   (6) the framework can state the plan: no cell holds both selective-only and comm-only layers of one type
//       (MindFormers applies select_recompute and select_comm_recompute to the first n layers of a stage, so
//       a cell's layers are full, then both, then one of the two, then none; see docs/balance.md); with
//       Problem::full_first_layers = n (Megatron's block recompute), every cell holds min(n, its layers) full
//       and the rest none.
// Objective: the makespan of the schedule's event simulation (simulate::makespan) over the cell times.
// Solver (a bound and an incumbent, both exact in what they claim):
//   - lower bound: stage s cannot start before micro-batch 0 has passed the forwards of chunk 0 on stages
//     0..s-1, runs m T_s of work, and its last block (chunk 0's last backward) must still pass stages s-1..0, so
//     makespan >= max_s [sum_{s'<s} lead(s') + m T_s], lead = F(0, s') + B(0, s') (F only for ZB-H1, whose
//     weight gradients may overlap the drain). A dynamic program over stages (Pareto front of (bound so far,
//     lead prefix) per layers placed) minimises it exactly over every plan that meets (1)-(6): that minimum is a
//     lower bound on the best simulated step. 1F1B adds the path through each stage's first backward: step >=
//     F_total + B_total - B_s + m T_s - W_s F_s (W_s forwards before it; the program keeps (max_s (m T_s - W_s F_s -
//     B_s), sum_s B_s)). Interleaved schedules add, for the last chunk v, the paths "micro-batch
//     0's forward up to cell (v, s), stage s's order from F(v, s, 0) to B(v, s, m - 1), micro-batch m - 1's
//     backward back to cell (0, 0)", minimised by the same program with other accumulators (docs/balance.md);
//     DualPipe-V the same through both chunks' windows (its chunk 1 runs the stages downward), ZB-H1 the 1F1B paths
//     with and without excursions, the blocks of a window priced by kind (whole and split backwards, weight
//     gradients) and the paths' other backwards as split ones.
//   - incumbents: the same program's optimum for the closed-form step time (plan::closed_form_step) and for
//     the bound, the best end states of both fronts simulated; with interleaving and a memory limit a late-spare start (one layer
//     per cell, the rest on the last chunk of the latest stages, each stage at its least total backward) with a
//     hill climb; then (one type) simulated annealing over the
//     cells' layer counts, each touched stage re-picking by simulation the best of its options (the mixes that
//     fit its memory and are Pareto-minimal in the chunks' backward times), up to three seeded rounds within a
//     fixed budget of simulated blocks, each followed by a hill climb and a local search on the simulated step
//     (move one layer across a chunk boundary, change one layer's recompute kind, or both); the rounds stop
//     when the best plan meets the bound.
//   - interleaved schedules, one type, a gap left after the late-spare start (before the annealing rounds, which
//     then stop once a plan meets it): the end-stage relaxation (pipeline/end_bound: stages 0 and S-1 exact, the
//     middle as delays, a Lagrangian over the middle whose weights come from a master LP).
//   - "proved optimal" iff the best simulated step equals the lower bound; otherwise the gap is reported.
//   - rebuild working sets (R_{l,r}, when stated): a stage's options are listed per ceiling R (each type's and
//     kind's R_{l,r}), from each type's mixes of the kinds with R_{l,r} <= R against the memory left after R, each combination at the
//     ceiling of its costliest kind, so constraint (5) holds exactly per stage in the programs as in the simulation.
//   A time limit stops any step and returns the best found so far with its gap. K > 1 with V > 1 skips the
//   program (the cells of one stage are not contiguous in model order): bound = m x (least total work) / S.
// Interleaving with more than kMaxProgramBodyTypes BODY types: a contiguous split of the layers in model order over the
// cells, found by a descent over the cells' layer counts at one kind for every layer (solve_sequence in solver.cpp),
// beside the general path when that can take the stack; the faster plan is kept with the higher bound (best found).
// `enumerate` tries every assignment (small cases only) and simulates each: proved optimal by exhaustion.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "pipeline/layers.hpp"
#include "pipeline/schedule.hpp"

namespace sapp::balance {

// BODY types balanced under interleaving by the one-type relaxation and the annealer; an interleaved stack of more (a
// hybrid stack alternating its kinds without a period, each run its own type) gets a contiguous split by local search,
// every layer at one kind (best found). Without interleaving the program over stages takes any number of types.
inline constexpr std::size_t kMaxProgramBodyTypes = 3;

struct Problem {
  LayerSet layers;
  int stages = 1;
  int chunks = 1;
  int micro_batches = 1;
  double memory_limit_mb = 0;  // 0: no limit
  double constant_mb = 0;
  // One layer rebuilt in its backward, per recompute kind (indexed by Rc), MB, for every BODY type (a type's own
  // BodyType::rebuild_mb, when larger, wins): a stage holds the largest among the types and kinds it holds beside
  // constant_mb (the estimator's recompute working set). All zero: nothing beyond constant_mb.
  std::array<double, kRcKinds> rebuild_mb{};
  simulate::Schedule schedule = simulate::Schedule::OneF1B;
  std::vector<Rc> kinds;  // allowed recompute kinds (subset of layers.kinds; all of them when empty)
  int chunk_spread = 0;   // 0: no limit
  // >= 0: Megatron's block recompute (--recompute-method block --recompute-num-layers n), one count for every
  // chunk: each cell's first n layers are fully recomputed and the rest not (one BODY type; kinds Full and None
  // allowed). -1: any mix per cell (constraint (6) only).
  long long full_first_layers = -1;
  double time_limit_s = 0;  // 0: none
  bool progress = false;    // a progress line on stderr for solves over a second
  // Stop once the lower bound is known (no annealing rounds; the plan returned is the best of the programs' and the
  // late-spare start's): how solve() bounds several BODY types under interleaving through a one-type relaxation.
  bool bound_only = false;
  // Every cell may hold no body layer (the rule that each chunk holds one dropped): the majority-type relaxation
  // solve() bounds several BODY types with.
  bool empty_cells = false;
};

// x[l][v][s][r]: layers of body type l, chunk v, stage s, recompute kind r.
using Assignment = std::vector<std::vector<std::vector<std::array<long long, kRcKinds>>>>;

struct Evaluation {
  double objective = 0;    // the simulated step time (makespan)
  double closed_form = 0;  // plan::closed_form_step over the cell times
  double max_cell = 0;     // slowest chunk-of-a-stage (a stage, with V = 1)
  double sum_stage = 0;
  std::vector<double> stage_time;       // T_s
  std::vector<double> stage_memory_mb;  // peak per stage, exact for the schedule
  bool fits = true;                     // every stage_memory_mb within the limit (they equal the simulated peaks)
};

struct Solution {
  bool feasible = false;
  bool optimal = false;  // proved optimal for the simulated step (or proved infeasible)
  bool timed_out = false;
  double bound = 0;  // lower bound on the simulated step of any feasible plan
  double gap = 0;    // (objective - bound) / objective
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
// Megatron's block recompute with the count chosen: each n (Problem::full_first_layers) balanced and the fastest
// plan kept. Feasibility only grows with n (a fully recomputed layer holds less than one that is not), so the least
// n that fits is found by bisection (none when no recompute fits); larger n can still balance better (bigger cells
// fit), so n rises from there while the step falls. The time limit is shared by all the solves. `chosen` receives
// the n kept, `balanced` how many were solved.
Solution solve_block_recompute(Problem p, long long* chosen = nullptr, int* balanced = nullptr);
// Whether the framework's keys can state the assignment (constraint (6)).
bool expressible(const Assignment& x);
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
