// plan/pipeline_model: the one pipeline model the memory estimator, the balancer and the simulator share.
//
// A schedule is a fixed order of blocks per stage: forward F, backward B (the input gradient, or the whole
// backward), and for zero-bubble schedules a separate weight-gradient W. This file holds
//   - the per-stage block order of every schedule (stage_order),
//   - the micro-batches in flight that order implies (in_flight_vectors: every Pareto-maximal per-chunk vector
//     over the order's prefixes, so a stage's peak activation memory is max over them of sum_v c_v A_v), and the
//     closed form of the same counts the memory estimator uses (in_flight_count; a test checks both agree),
//   - the closed-form step time over cell times (closed_form_step).
// Schedules:
//   1F1B (PipeDream-Flush): stage s runs S - s - 1 warm-up forwards, then alternates F/B, then drains B.
//   Interleaved (Megatron-LM virtual pipeline, Narayanan et al. 2021): forwards in rounds of S micro-batches per
//     chunk (chunks ascending), backwards the same with chunks descending; warm-up (V + 1) S - 2 s - 2 + r (V - 1)
//     forwards with r = m mod S (the residue of the first round runs first in each chunk).
//   Interleaved, less memory: the same lists with warm-up V S - s - 1 + r (V - 1) (without the residue term the
//     order deadlocks when m mod S != 0).
//   Zero-bubble ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", sec. 3.1): the 1F1B order of F and B
//     (B is the input gradient only); stage s defers each weight gradient W by s backwards: W(j) runs right after
//     B(j + s), the last s of them after the final B. Activations are held until W, so stage s holds at most S
//     micro-batches, 1F1B's peak (stage 0's), on every stage.
//   DualPipe-V (DeepSeek's DualPipe repository, dualpipev.py, the "cut-in-half" V shape of Sea AI Lab): two chunks
//     per stage, chunk 0 over stages 0..S-1 and chunk 1 back from S-1 to 0 (the loss on stage 0), m >= 2 S; the
//     repository's eight steps per rank s: 2 (S - s - 1) F0; s + 1 of (F0, F1); S - s - 1 of (B1 split, W, F1);
//     m - 2 S + s + 1 of (F0, B1, F1, B0); S - s - 1 of (B1, F1, B0); s + 1 of (B1, B0), the second half split;
//     S - s - 1 of (W, B0 split); s + 1 W. W runs the oldest split backward's weight gradient (FIFO). The
//     overlapped F&B pairs run one after the other here (no communication is modelled).
#pragma once

#include <string>
#include <vector>

#include "plan/layout.hpp"

namespace sapp::plan {

enum class Schedule { OneF1B, Interleaved, InterleavedLessMemory, ZeroBubble, DualPipeV };
const char* to_string(Schedule s);
Schedule parse_schedule(const std::string& text);
// The schedule an estimator layout runs: interleaved (less-memory or not) with vpp > 1, else 1F1B.
Schedule schedule_of(const Layout& layout, bool less_memory);

enum class BlockKind { Forward, Backward, Weight };

struct Block {
  BlockKind kind = BlockKind::Forward;
  int chunk = 0;
  int micro = 0;
  bool split = false;  // a backward of the input gradient only, its weight gradient a later W block
};

// Whether the schedule's chunk v runs the stages in reverse (DualPipe-V's second chunk: stage S-1 back to 0).
bool reversed_chunk(Schedule schedule, int chunk);

// Checks S, V, m for the schedule; throws sapp::Error naming the flag's meaning when they do not run.
void check_schedule(Schedule schedule, int stages, int chunks, int micro_batches);

// The block order of one stage.
std::vector<Block> stage_order(Schedule schedule, int stages, int chunks, int micro_batches, int stage);

// Whether the block ends the hold of its micro-batch's activations: a W, or a backward that is not split.
bool releases(const Block& b);

// For each prefix of the stage's order, how many micro-batches of each chunk hold their activations (forwards
// done minus activations released: at B, or at W for zero-bubble); only the Pareto-maximal vectors are kept.
std::vector<std::vector<int>> in_flight_vectors(Schedule schedule, int stages, int chunks, int micro_batches, int stage);

// The chunk's count at the first prefix of the stage's order that holds the most micro-batches (closed form of the
// order): 1F1B min(S - s, m); ZB-H1 min(S, m); interleaved, the first min(w + 1, V m) forwards of the forward
// list, w being the order's warm-up: (V + 1) S - 2 s - 2 + r (V - 1), or V S - s - 1 + r (V - 1) for less memory,
// with r = m mod S. With m < S (no interleaved order runs) the reference's uniform counts, clipped to m. The counts
// sum to the order's peak, so sum_v count_v A is exact when the chunks' activations are equal; with unequal
// chunks the peak can sit at another prefix, and in_flight_peak is exact for any per-chunk activations.
long long in_flight_count(Schedule schedule, int stages, int chunks, int micro_batches, int chunk, int stage);
// A run's layout: its schedule (less-memory variant or not) over one pipeline run's micro-batches.
long long in_flight_count(const Layout& layout, const Training& training, int chunk, int stage);
// Peak activation of a stage over its order's prefixes: max over in_flight_vectors of sum_v c_v a_v, for any
// per-chunk activations a_v (the simulator's peak above static memory).
double in_flight_peak(Schedule schedule, int stages, int chunks, int micro_batches, int stage, const std::vector<double>& chunk_activation);
// Micro-batches in flight per [chunk][stage] at a stage's peak.
std::vector<std::vector<long long>> in_flight(const Layout& layout, const Training& training);

// Closed-form step time over the cell times t(v, s) = F(v, s) + B(v, s): every cell passes once during fill and
// drain, then m V - 1 lock-step steps at the slowest cell's pace: sum_s T_s / V + (m V - 1) max_{v,s} t(v, s).
// For 1F1B, (m - 1) max_s T_s + sum_s T_s, the simulated makespan when the stages are equal.
double closed_form_step(int chunks, int micro_batches, double sum_stage_time, double max_cell_time);

}  // namespace sapp::plan
