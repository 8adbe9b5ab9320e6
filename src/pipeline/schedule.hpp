// simulate: pipeline schedules (the per-stage block order), an event-level simulator of them, and what the
// order alone implies for memory.
//
// A schedule is a fixed order of blocks per stage: forward F, backward B (input gradient, or the whole
// backward), and for zero-bubble schedules a separate weight-gradient W. Dependencies: F(v, s) needs F(v, s-1)
// of the same micro-batch (at s = 0, F(v-1, S-1)); B(v, s) needs B(v, s+1) (at s = S-1, F(v, S-1) if v is
// the last chunk, else B(v+1, 0)); W needs the same stage's B. Each block starts when its producer and its
// left neighbour in the stage's order are done (an ASAP list schedule; a DAG longest path). A cycle, or a
// block that could start before its inputs exist, is a causality error.
#pragma once

#include <string>
#include <vector>

namespace sapp::simulate {

enum class Schedule { OneF1B, Interleaved, InterleavedLessMemory, ZeroBubble };
const char* to_string(Schedule s);
Schedule parse_schedule(const std::string& text);

enum class BlockKind { Forward, Backward, Weight };

struct Block {
  BlockKind kind = BlockKind::Forward;
  int chunk = 0;
  int micro = 0;
};

// The block order of one stage. Interleaved needs m >= S (Megatron's rule, as the reference simulator).
std::vector<Block> stage_order(Schedule schedule, int stages, int chunks, int micro_batches, int stage);

// Memory the order implies (for the zero-bubble schedule, the 1F1B order: the optimiser prices 1F1B memory for
// it, and the simulator reports the real peak, activations being released when W ends): for each prefix of the stage's order, how many micro-batches of each
// chunk hold their activations (forwards done minus activations released). Only the Pareto-maximal vectors are kept: the stage's peak activation memory for
// chunk activations A_v is max over these vectors c of sum_v c_v A_v.
std::vector<std::vector<int>> in_flight_vectors(Schedule schedule, int stages, int chunks, int micro_batches, int stage);

struct StageTimes {
  // [chunk][stage]: one micro-batch's forward, backward (input gradient and weight gradient together for
  // non-split schedules), recompute part of the backward, and activation and static memory (MB or bytes,
  // the caller's unit).
  std::vector<std::vector<double>> forward, backward, recompute, activation;
  std::vector<double> static_memory;  // per stage
  double weight_fraction = 0.5;       // zero-bubble: share of the backward that is the weight gradient W
};

struct TimedBlock {
  Block block;
  double start = 0;
  double end = 0;
};

struct SimResult {
  std::vector<std::vector<TimedBlock>> timeline;               // per stage, in execution order
  std::vector<std::vector<std::pair<double, double>>> memory;  // per stage: (time, memory) points
  std::vector<double> peak_memory;                             // per stage
  double end = 0;                                              // makespan
  // Bubble breakdown in the reference's sense (fractions of the model time): real = ideal + imbalance + recompute.
  double real = 0, ideal = 0, imbalance = 0, recompute = 0;
};

// Runs the schedule; throws sapp::Error on a causality violation (naming the blocks that wait on each other).
SimResult simulate(Schedule schedule, int stages, int chunks, int micro_batches, const StageTimes& times);

}  // namespace sapp::simulate
