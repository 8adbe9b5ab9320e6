// simulate: an event-level simulator of the pipeline schedules of plan/pipeline_model (the block order per stage).
//
// Dependencies: F(v, s) needs F(v, s-1) of the same micro-batch (at s = 0, F(v-1, S-1)); B(v, s) needs
// B(v, s+1) (at s = S-1, F(v, S-1) if v is the last chunk, else B(v+1, 0)); W needs the same stage's B. Each
// block starts when its producer and its left neighbour in the stage's order are done (an ASAP list schedule;
// a DAG longest path). DualPipe-V's second chunk runs the stages downward (S-1 to 0): its F(1, S-1) needs F(0, S-1),
// its B(1, s) needs B(1, s-1) (at s = 0, F(1, 0): the loss), and B(0, S-1) needs B(1, S-1). A cycle is a causality
// error. Memory per stage: its static memory, plus a chunk's activations when a forward ends, minus them when the
// block that releases them ends (B, or W after a split backward: zero-bubble and DualPipe-V).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plan/pipeline_model.hpp"

namespace sapp::simulate {

using plan::Block;
using plan::BlockKind;
using plan::in_flight_vectors;
using plan::parse_schedule;
using plan::Schedule;
using plan::stage_order;
using plan::to_string;

struct StageTimes {
  // [chunk][stage]: one micro-batch's forward, backward (input gradient and weight gradient together), recompute
  // part of the backward, and activation memory; static memory per stage (MB, or the caller's unit).
  std::vector<std::vector<double>> forward, backward, recompute, activation;
  std::vector<double> static_memory;
  double weight_fraction = 0.5;  // zero-bubble: share of the backward's gradient work that is the weight gradient W
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
  // ideal is the bubble of the same schedule with every cell at the mean cell's times and no recompute
  // ((S - 1) / (V m) for 1F1B and interleaved); imbalance is the rest. It is negative when unequal cells fill and
  // drain the pipeline faster than equal ones (a balanced plan often loads the stages that start the warm-up more
  // and the last stage less), and it includes the product of ideal and recompute, which the sum leaves out.
  double real = 0, ideal = 0, imbalance = 0, recompute = 0;
};

// The block a block waits for (besides its left neighbour): kind (0 F, 1 B, -1 none), chunk and stage, same
// micro-batch. Chunks run stages upward, or downward for DualPipe-V's second chunk; a forward enters a chunk
// where the previous chunk ended, the backward of the last chunk's last stage follows its forward, and a
// chunk's backward enters where the next chunk's backward ended (a weight gradient waits for its stage's B).
struct Producer {
  int kind = -1;
  int chunk = 0;
  int stage = 0;
};
Producer producer_of(Schedule schedule, int stages, int chunks, const Block& block, int stage);

// The per-stage orders of a schedule, built once for repeated simulation.
struct Orders {
  Schedule schedule = Schedule::OneF1B;
  int stages = 1, chunks = 1, micro_batches = 1;
  std::vector<std::vector<Block>> order;  // per stage
  // Per stage and position: the block's own slot and its producer's slot (-1: none) in one flat array of block
  // end times (filled by make_orders).
  std::vector<std::vector<int>> slot, producer;
};
Orders make_orders(Schedule schedule, int stages, int chunks, int micro_batches);

// The makespan only (no timeline): what the balancer evaluates at its leaves.
double makespan(const Orders& orders, const StageTimes& times);

// Runs the schedule; throws sapp::Error on a causality violation (naming the blocks that wait on each other).
SimResult simulate(Schedule schedule, int stages, int chunks, int micro_batches, const StageTimes& times);

}  // namespace sapp::simulate
