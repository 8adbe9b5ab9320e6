// The one pipeline model: the memory estimator's closed-form in-flight counts (plan::in_flight_count, used by
// cost/) against a replay of the simulator's block order, and the exact peak for unequal chunks
// (plan::in_flight_peak) against the simulator's memory timeline, over a grid of (stages, chunks, micro-batches,
// schedule, stage). Source of the closed forms: DualPipe-V's 2 S - s and s + 1 (its order: the DualPipe repository's
// eight steps); Megatron-LM's interleaved
// warm-up (Narayanan et al. 2021, sec. 2.2: (V - 1) S + 2 (S - s - 1) warm-up micro-batches, + 1 in flight
// after the first steady forward), 1F1B's S - s, and ZB-H1's S on every stage (Qi et al. 2023, sec. 3.1:
// "the same peak memory as 1F1B").
#include <numeric>
#include <tuple>

#include <gtest/gtest.h>

#include "pipeline/schedule.hpp"
#include "plan/pipeline_model.hpp"

using namespace sapp;
using plan::Schedule;

namespace {

std::vector<std::tuple<int, int, int, Schedule, int>> grid() {
  std::vector<std::tuple<int, int, int, Schedule, int>> out;
  for (int S : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 4, 5, 8, 9, 16}) {
      for (Schedule sch : {Schedule::OneF1B, Schedule::ZeroBubble}) {
        for (int s = 0; s < S; ++s) out.emplace_back(S, 1, m, sch, s);
      }
      if (m >= 2 * S) {
        for (int s = 0; s < S; ++s) out.emplace_back(S, 2, m, Schedule::DualPipeV, s);
      }
      for (int V : {2, 3, 4}) {
        if (m < S) continue;  // interleaving needs m >= S
        for (Schedule sch : {Schedule::Interleaved, Schedule::InterleavedLessMemory}) {
          for (int s = 0; s < S; ++s) out.emplace_back(S, V, m, sch, s);
        }
      }
    }
  }
  return out;
}

class InFlight : public ::testing::TestWithParam<std::tuple<int, int, int, Schedule, int>> {};

}  // namespace

TEST_P(InFlight, EstimatorCountsAreTheOrdersFirstPeak) {
  auto [S, V, m, schedule, s] = GetParam();
  // Independent of the closed form: replay the stage's block order and take the per-chunk counts at the first
  // prefix holding the most micro-batches (activations released at B, or at W for zero-bubble).
  std::vector<int> now(static_cast<std::size_t>(V), 0);
  std::vector<int> at_peak = now;
  int peak_total = -1;
  for (const plan::Block& b : plan::stage_order(schedule, S, V, m, s)) {
    if (b.kind == plan::BlockKind::Forward) {
      ++now[static_cast<std::size_t>(b.chunk)];
    } else if (b.kind == (schedule == Schedule::ZeroBubble ? plan::BlockKind::Weight : plan::BlockKind::Backward)) {
      --now[static_cast<std::size_t>(b.chunk)];
    }
    int total = std::accumulate(now.begin(), now.end(), 0);
    if (total > peak_total) {
      peak_total = total;
      at_peak = now;
    }
  }
  std::vector<int> counts;
  for (int v = 0; v < V; ++v) counts.push_back(static_cast<int>(plan::in_flight_count(schedule, S, V, m, v, s)));
  EXPECT_EQ(counts, at_peak);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), peak_total);
}

TEST_P(InFlight, PeakOfAnyChunkActivationsIsTheSimulatorsPeak) {
  auto [S, V, m, schedule, s] = GetParam();
  // Unequal chunks (prime-ish activations per chunk and stage): the simulator's memory timeline peak above static.
  simulate::StageTimes t;
  t.forward.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(S), 1.0));
  t.backward = t.forward;
  t.activation.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(S), 0.0));
  for (int v = 0; v < V; ++v) {
    for (int st = 0; st < S; ++st) t.activation[static_cast<std::size_t>(v)][static_cast<std::size_t>(st)] = 1.0 + ((7 * v + 3 * st + 5 * V) % 11);
  }
  simulate::SimResult r = simulate::simulate(schedule, S, V, m, t);
  std::vector<double> a;
  for (int v = 0; v < V; ++v) a.push_back(t.activation[static_cast<std::size_t>(v)][static_cast<std::size_t>(s)]);
  EXPECT_DOUBLE_EQ(plan::in_flight_peak(schedule, S, V, m, s, a), r.peak_memory[static_cast<std::size_t>(s)]);
}

std::string grid_name(const ::testing::TestParamInfo<std::tuple<int, int, int, Schedule, int>>& p) {
  auto [S, V, m, schedule, s] = p.param;
  std::string name = plan::to_string(schedule);
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name + "_S" + std::to_string(S) + "_V" + std::to_string(V) + "_m" + std::to_string(m) + "_stage" + std::to_string(s);
}

INSTANTIATE_TEST_SUITE_P(Grid, InFlight, ::testing::ValuesIn(grid()), grid_name);

TEST(PipelineModel, ClosedFormStepIsTheUniformMakespan) {
  // (m - 1) max T + sum T for 1F1B with equal stages: 4 stages of 10, 8 micro-batches -> 7 * 10 + 40 = 110.
  EXPECT_DOUBLE_EQ(plan::closed_form_step(1, 8, 40.0, 10.0), 110.0);
  // Interleaved, V = 2, cells of 5: sum T / V + (m V - 1) max cell = 40 / 2 + 15 * 5 = 95.
  EXPECT_DOUBLE_EQ(plan::closed_form_step(2, 8, 40.0, 5.0), 95.0);
}
