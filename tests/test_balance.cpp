// Pipeline balancing: the exact optimiser against exhaustive enumeration, the simulator against closed forms
// and against the optimiser's memory model, the memory decomposition, and bad layers files.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "helpers.hpp"
#include "pipeline/decompose.hpp"
#include "pipeline/solver.hpp"
#include "pipeline/svg.hpp"

using namespace sapp;
using balance::Rc;

namespace {

balance::LayerSet layers(long long n, double fwd, double param, std::vector<std::pair<Rc, double>> acts, std::vector<std::pair<Rc, double>> coefs = {}) {
  nlohmann::json body = {{"name", "BODY"}, {"type", "BODY"}, {"time", fwd}, {"nb_layer", n}, {"memory_parameter", param}};
  const char* mem_keys[] = {"memory_activation", "memory_select_rec", "memory_select_comm", "memory_both_comm_select", "memory_recompute"};
  const char* coef_keys[] = {"backward_coef", "select_rec_coef", "select_comm_coef", "both_comm_select_coef", "recompute_coef"};
  for (auto [r, a] : acts) body[mem_keys[static_cast<int>(r)]] = a;
  for (auto [r, c] : coefs) body[coef_keys[static_cast<int>(r)]] = c;
  nlohmann::json j = {{"layers_description",
                       {{{"name", "HEAD"}, {"type", "HEAD"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 30}},
                        body,
                        {{"name", "TAIL"}, {"type", "TAIL"}, {"time", 3}, {"nb_layer", 1}, {"memory_parameter", 20}}}}};
  return balance::layers_from_json(j, "synthetic.json");
}

// A layers file of a dense BODY type of `dense` layers and a MoE one of `moe` layers (the MoE type first with
// `moe_first`) between a HEAD and a TAIL.
balance::LayerSet dense_and_moe(long long dense, long long moe, bool moe_first = false) {
  const nlohmann::json dense_type = {{"name", "dense"},        {"type", "BODY"},       {"time", 4}, {"nb_layer", dense}, {"memory_parameter", 5},
                                     {"memory_activation", 8}, {"memory_recompute", 1}};
  const nlohmann::json moe_type = {{"name", "moe"},           {"type", "BODY"},       {"time", 9}, {"nb_layer", moe}, {"memory_parameter", 20},
                                   {"memory_activation", 15}, {"memory_recompute", 2}};
  const nlohmann::json j = {{"layers_description",
                             {{{"name", "HEAD"}, {"type", "HEAD"}, {"time", 1}, {"nb_layer", 1}, {"memory_parameter", 10}},
                              moe_first ? moe_type : dense_type,
                              moe_first ? dense_type : moe_type,
                              {{"name", "TAIL"}, {"type", "TAIL"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 10}}}}};
  return balance::layers_from_json(j, "moe.json");
}

}  // namespace

TEST(Balance, OptimiserEqualsExhaustiveEnumerationOnSmallCases) {
  // Small cases (<= 8 stages, <= 16 layers), memory limits that bind. Exhaustive enumeration checks memory by
  // running the simulator, the optimiser by the schedule's in-flight vectors: two independent paths.
  struct Case {
    int S, V, m;
    long long L;
    double limit;
    bool less;
    bool dual = false;  // DualPipe-V
  };
  std::vector<Case> cases = {{3, 1, 4, 6, 330, false},       {4, 1, 6, 8, 360, false},       {3, 1, 3, 7, 0, false},      {2, 2, 4, 6, 420, false},
                             {3, 2, 3, 6, 460, true},        {2, 2, 2, 5, 350, false},       {8, 1, 8, 9, 300, false},    {4, 1, 4, 16, 700, false},
                             {2, 2, 4, 6, 420, false, true}, {3, 2, 6, 6, 520, false, true}, {2, 2, 5, 5, 0, false, true}};
  // Each case also with a rebuild working set per kind (Problem::rebuild_mb: one layer's activations less what its
  // kind keeps, held by a stage for the costliest kind it holds) and the head's and tail's activations per
  // micro-batch in flight (LayerSet::head_act_mb, tail_act_mb), which the enumeration prices by simulation too.
  int with_rebuild_feasible = 0;
  for (const auto& [c, rebuild] : [&] {
         std::vector<std::pair<Case, bool>> all;
         for (const Case& c : cases) {
           for (bool r : {false, true}) all.emplace_back(c, r);
         }
         return all;
       }()) {
    balance::Problem p;
    p.layers = layers(c.L, 10, 40, {{Rc::None, 20}, {Rc::Selective, 12}, {Rc::Full, 3}});
    if (c.S == 8 || c.L == 16) p.layers = layers(c.L, 10, 40, {{Rc::None, 20}, {Rc::Full, 3}});  // keep the enumeration small
    if (rebuild) {
      p.rebuild_mb = {0, 8, 0, 0, 17};  // indexed by Rc: none, selective, comm, both, full
      p.layers.head_act_mb = 5;
      p.layers.tail_act_mb = 7;
    }
    p.stages = c.S;
    p.chunks = c.V;
    p.micro_batches = c.m;
    p.memory_limit_mb = c.limit;
    p.schedule = c.V == 1 ? simulate::Schedule::OneF1B : (c.less ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved);
    if (c.dual) p.schedule = simulate::Schedule::DualPipeV;
    balance::Solution dp = balance::solve(p);
    balance::Solution brute = balance::solve_exhaustive(p);
    if (rebuild && dp.feasible) ++with_rebuild_feasible;
    SCOPED_TRACE(::testing::Message() << "S=" << c.S << " V=" << c.V << " m=" << c.m << " L=" << c.L << " limit=" << c.limit << " dual=" << c.dual
                                      << " rebuild=" << rebuild);
    ASSERT_EQ(dp.feasible, brute.feasible);
    if (dp.feasible) {
      // The exhaustive optimum (every expressible plan simulated) is the reference value; the bound must not
      // exceed it, and "proved optimal" may only be claimed when the plan reaches it.
      EXPECT_LE(dp.bound, brute.eval.objective + 1e-9);
      EXPECT_NEAR(dp.eval.objective, brute.eval.objective, 1e-9);
      if (dp.optimal) {
        EXPECT_NEAR(dp.eval.objective, dp.bound, 1e-6 * dp.bound);
      }
      EXPECT_TRUE(dp.eval.fits);
    } else {
      EXPECT_TRUE(dp.optimal);  // proved infeasible
    }
    EXPECT_GT(brute.explored, 0);
  }
  EXPECT_GE(with_rebuild_feasible, 6);
}

// A layers file's HEAD and TAIL memory_activation is held per micro-batch in flight with the first and the last
// chunk: under 1F1B over two stages stage 0 holds two micro-batches at its peak, stage 1 one, so the peaks grow by
// 2 x 10 and 1 x 20 MB; memory_parameter stays static.
TEST(Balance, HeadAndTailActivationsAreHeldPerMicroBatchInFlight) {
  auto file = [](double head_act, double tail_act) {
    nlohmann::json j = {{"layers_description",
                         {{{"type", "HEAD"}, {"time", 1}, {"nb_layer", 1}, {"memory_parameter", 100}, {"memory_activation", head_act}},
                          {{"type", "BODY"}, {"time", 10}, {"nb_layer", 4}, {"memory_parameter", 50}, {"memory_activation", 30}},
                          {{"type", "TAIL"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 200}, {"memory_activation", tail_act}}}}};
    return balance::layers_from_json(j, "layers.json");
  };
  balance::Problem p;
  p.stages = 2;
  p.chunks = 1;
  p.micro_batches = 4;
  p.layers = file(0, 0);
  EXPECT_DOUBLE_EQ(p.layers.head_mb, 100);
  const balance::Evaluation without = balance::evaluate(p, balance::even_split(p, Rc::None));
  p.layers = file(10, 20);
  EXPECT_DOUBLE_EQ(p.layers.head_act_mb, 10);
  EXPECT_DOUBLE_EQ(p.layers.tail_act_mb, 20);
  const balance::Evaluation with = balance::evaluate(p, balance::even_split(p, Rc::None));
  EXPECT_DOUBLE_EQ(with.stage_memory_mb[0] - without.stage_memory_mb[0], 2 * 10);
  EXPECT_DOUBLE_EQ(with.stage_memory_mb[1] - without.stage_memory_mb[1], 1 * 20);
  EXPECT_DOUBLE_EQ(with.objective, without.objective);
}

TEST(Balance, MegatronBlockRecomputeKeepsOneCountForEveryCell) {
  // Megatron states full recompute as one --recompute-num-layers n for every chunk (block method: each chunk's
  // first n layers). Under Problem::full_first_layers the optimiser returns only such plans, and on small cases
  // it finds the exhaustive optimum among them (the enumeration filters every plan by the same rule, and checks
  // memory by simulation).
  struct Case {
    int S, V, m;
    long long L;
    double limit;
  };
  int feasible = 0;
  for (const Case& c : std::vector<Case>{{3, 1, 4, 7, 200}, {4, 1, 6, 9, 175}, {2, 2, 4, 7, 290}, {3, 2, 3, 8, 260}}) {
    for (long long n = 0; n <= 3; ++n) {
      balance::Problem p;
      p.layers = layers(c.L, 10, 40, {{Rc::None, 20}, {Rc::Selective, 12}, {Rc::Full, 3}});
      p.stages = c.S;
      p.chunks = c.V;
      p.micro_batches = c.m;
      p.memory_limit_mb = c.limit;
      p.schedule = c.V == 1 ? simulate::Schedule::OneF1B : simulate::Schedule::Interleaved;
      p.kinds = {Rc::None, Rc::Full};
      p.full_first_layers = n;
      balance::Solution dp = balance::solve(p);
      balance::Solution brute = balance::solve_exhaustive(p);
      SCOPED_TRACE(::testing::Message() << "S=" << c.S << " V=" << c.V << " L=" << c.L << " n=" << n);
      ASSERT_EQ(dp.feasible, brute.feasible);
      if (!dp.feasible) continue;
      ++feasible;
      EXPECT_NEAR(dp.eval.objective, brute.eval.objective, 1e-9);
      EXPECT_LE(dp.bound, brute.eval.objective + 1e-9);
      for (const auto& chunk : dp.x[0]) {
        for (const auto& cell : chunk) {
          const long long k = cell[static_cast<std::size_t>(Rc::None)] + cell[static_cast<std::size_t>(Rc::Full)];
          EXPECT_EQ(cell[static_cast<std::size_t>(Rc::Full)], std::min(k, n));
          EXPECT_EQ(cell[static_cast<std::size_t>(Rc::Selective)], 0);
        }
      }
    }
  }
  // The limits bind: no recompute (n = 0) does not fit every case, a few layers per chunk recomputed does.
  EXPECT_GE(feasible, 10);
  EXPECT_LT(feasible, 16);
}

TEST(Balance, SeveralBodyTypesKeepModelOrder) {
  nlohmann::json j = {
      {"layers_description",
       {{{"name", "HEAD"}, {"type", "HEAD"}, {"time", 1}, {"nb_layer", 1}, {"memory_parameter", 10}},
        {{"name", "vision"}, {"type", "BODY"}, {"time", 4}, {"nb_layer", 3}, {"memory_parameter", 5}, {"memory_activation", 8}, {"memory_recompute", 1}},
        {{"name", "decoder"}, {"type", "BODY"}, {"time", 9}, {"nb_layer", 5}, {"memory_parameter", 20}, {"memory_activation", 15}, {"memory_recompute", 2}},
        {{"name", "TAIL"}, {"type", "TAIL"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 10}}}}};
  balance::Problem p;
  p.layers = balance::layers_from_json(j, "mm.json");
  p.stages = 3;
  p.micro_batches = 4;
  p.memory_limit_mb = 150;
  auto dp = balance::solve(p);
  auto brute = balance::solve_exhaustive(p);
  ASSERT_TRUE(dp.feasible);
  EXPECT_NEAR(dp.eval.objective, brute.eval.objective, 1e-9);
  // Every plan simulated: the optimum is its own bound ("proved optimal (simulated step = lower bound ...)" printed
  // the bound as 0 before).
  EXPECT_TRUE(brute.optimal);
  EXPECT_DOUBLE_EQ(brute.bound, brute.eval.objective);
  EXPECT_DOUBLE_EQ(brute.gap, 0.0);
  // Model order: no decoder layer before the last vision layer.
  int last_vision = -1, first_decoder = 99;
  for (int s = 0; s < 3; ++s) {
    long long v = 0, d = 0;
    for (long long k : dp.x[0][0][static_cast<std::size_t>(s)]) v += k;
    for (long long k : dp.x[1][0][static_cast<std::size_t>(s)]) d += k;
    if (v > 0) last_vision = s;
    if (d > 0) first_decoder = std::min(first_decoder, s);
  }
  EXPECT_LE(last_vision, first_decoder);
}

// One layer rebuilt in its backward is the costliest among the BODY types and kinds a stage holds (BodyType::rebuild_mb,
// as the estimator's recompute working set counts the layers of its own stage): a stage of MoE layers does not hold
// the dense layer's larger rebuild. Both the program and the exhaustive enumeration (which prices every plan by
// simulation) read it per type; under a limit that only the per-type rule meets, the problem-wide maximum of the
// two finds no plan.
TEST(Balance, EachBodyTypeRebuildsItsOwnLayer) {
  balance::Problem p;
  p.layers = dense_and_moe(2, 6, true);
  p.stages = 2;
  p.chunks = 1;
  p.micro_batches = 3;
  p.schedule = simulate::Schedule::OneF1B;
  p.layers.bodies[0].rebuild_mb[static_cast<std::size_t>(Rc::Full)] = 5;   // MoE: a small rebuild
  p.layers.bodies[1].rebuild_mb[static_cast<std::size_t>(Rc::Full)] = 40;  // dense: a large one
  int per_type_only = 0;
  for (double limit : {0.0, 120.0, 110.0, 100.0, 95.0, 90.0}) {
    p.memory_limit_mb = limit;
    const balance::Solution found = balance::solve(p);
    const balance::Solution brute = balance::solve_exhaustive(p);
    SCOPED_TRACE(limit);
    ASSERT_EQ(found.feasible, brute.feasible);
    if (!found.feasible) continue;
    EXPECT_NEAR(found.eval.objective, brute.eval.objective, 1e-9);
    EXPECT_LE(found.bound, brute.eval.objective + 1e-9);
    EXPECT_TRUE(found.eval.fits);
    balance::Problem widest = p;  // every type charged the costliest rebuild
    widest.rebuild_mb[static_cast<std::size_t>(Rc::Full)] = 40;
    const balance::Solution charged = balance::solve_exhaustive(widest);
    EXPECT_GE(charged.feasible ? charged.eval.objective : 1e300, brute.eval.objective - 1e-9);
    if (!charged.feasible || charged.eval.objective > brute.eval.objective + 1e-9) ++per_type_only;
  }
  EXPECT_GE(per_type_only, 1) << "no limit where the per-type rebuild decides: the case checks nothing";
}

// Without interleaving a stage is one cell: the framework recomputes its first layers, so along its types in model order
// the recompute kinds may only get lighter (cells_ordered_across_types), a rule the exhaustive enumeration applies too.
// The program's stage options keep, beside the least backward over every combination of the types' mixes (the bound),
// the least over the combinations a framework can state (the plan rebuilt from the program): on these random
// two-type cases (a dense run, then MoE layers; per-type rebuilds; binding limits) it reaches the enumeration's optimum
// on all 60 (on 51 when the program's plans took the cheapest combination, which the rule then refused; 90 of 400
// cases of the same generator were slower then, 5 now; the one examined is a split the programs rank below another by
// the bound's times, which the simulation orders the other way).
TEST(Balance, SeveralBodyTypesOnOneStagePlanWhatTheFrameworksCanState) {
  std::mt19937 rng(7);
  int reached = 0;
  int feasible = 0;
  constexpr int kCases = 60;
  for (int it = 0; it < kCases; ++it) {
    const int dense = 1 + static_cast<int>(rng() % 3);
    const int moe = 2 + static_cast<int>(rng() % 5);
    const int S = 2 + static_cast<int>(rng() % 2);
    const int dense_time = 2 + static_cast<int>(rng() % 6);
    const int moe_time = 5 + static_cast<int>(rng() % 8);
    nlohmann::json j = {{"layers_description",
                         {{{"name", "HEAD"}, {"type", "HEAD"}, {"time", 1}, {"nb_layer", 1}, {"memory_parameter", 10}},
                          {{"name", "dense"},
                           {"type", "BODY"},
                           {"time", dense_time},
                           {"nb_layer", dense},
                           {"memory_parameter", 5},
                           {"memory_activation", 8},
                           {"memory_recompute", 1},
                           {"memory_select_rec", 4}},
                          {{"name", "moe"},
                           {"type", "BODY"},
                           {"time", moe_time},
                           {"nb_layer", moe},
                           {"memory_parameter", 20},
                           {"memory_activation", 15},
                           {"memory_recompute", 2},
                           {"memory_select_rec", 7}},
                          {{"name", "TAIL"}, {"type", "TAIL"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 10}}}}};
    balance::Problem p;
    p.layers = balance::layers_from_json(j, "moe.json");
    p.stages = S;
    p.chunks = 1;
    p.micro_batches = S + static_cast<int>(rng() % 3);
    p.schedule = simulate::Schedule::OneF1B;
    p.layers.bodies[0].rebuild_mb[static_cast<std::size_t>(Rc::Full)] = rng() % 2 ? 40 : 5;
    p.layers.bodies[0].rebuild_mb[static_cast<std::size_t>(Rc::Selective)] = 3;
    p.layers.bodies[1].rebuild_mb[static_cast<std::size_t>(Rc::Full)] = 5;
    p.layers.bodies[1].rebuild_mb[static_cast<std::size_t>(Rc::Selective)] = 2;
    p.memory_limit_mb = 20.0 * (dense + moe) / S + 8.0 * p.micro_batches + 30 + static_cast<double>(rng() % 60);
    const balance::Solution found = balance::solve(p);
    const balance::Solution brute = balance::solve_exhaustive(p);
    SCOPED_TRACE(::testing::Message() << "case " << it << ": S=" << S << " m=" << p.micro_batches << " dense=" << dense << " moe=" << moe
                                      << " limit=" << p.memory_limit_mb);
    ASSERT_EQ(found.feasible, brute.feasible);
    if (!found.feasible) continue;
    ++feasible;
    EXPECT_TRUE(found.eval.fits);
    EXPECT_LE(found.bound, brute.eval.objective * (1 + 1e-12));
    EXPECT_GE(found.eval.objective, brute.eval.objective * (1 - 1e-12));
    if (found.eval.objective <= brute.eval.objective * (1 + 1e-12)) ++reached;
  }
  EXPECT_GE(feasible, 40);
  EXPECT_GE(reached, feasible - 2);
  std::printf("two types on one stage: %d of %d feasible cases optimal\n", reached, feasible);
}

// With interleaving the program is skipped for several types (a stage's cells are not contiguous in model order)
// and plans start from even splits: the split must place the layers in model order along the virtual pipeline
// (cells v S + s), not each type evenly over every cell, and within a cell holding two types the recompute kinds may
// only get lighter along model order (frameworks recompute a cell's first layers): otherwise the written split
// holds other layers, and other recompute, than the plan priced. Exhaustive enumeration (cells in model order) is
// the reference.
TEST(Balance, SeveralBodyTypesWithInterleavingKeepModelOrderAndTheFrameworksRecomputeOrder) {
  balance::Problem p;
  p.layers = dense_and_moe(3, 6);
  p.stages = 2;
  p.chunks = 2;
  p.micro_batches = 4;
  p.schedule = simulate::Schedule::Interleaved;
  // The even split: 9 layers over 4 cells (2, 3, 2, 2 in virtual order), dense first.
  const balance::Assignment even = balance::even_split(p, Rc::None);
  auto count = [&](const balance::Assignment& x, std::size_t type, int v, int s) {
    long long n = 0;
    for (long long k : x[type][static_cast<std::size_t>(v)][static_cast<std::size_t>(s)]) n += k;
    return n;
  };
  EXPECT_EQ(count(even, 0, 0, 0), 2);
  EXPECT_EQ(count(even, 0, 0, 1), 1);
  EXPECT_EQ(count(even, 1, 0, 1), 2);
  EXPECT_EQ(count(even, 1, 1, 0) + count(even, 1, 1, 1), 4);
  for (double limit : {0.0, 200.0, 170.0}) {
    p.memory_limit_mb = limit;
    const balance::Solution found = balance::solve(p);
    const balance::Solution brute = balance::solve_exhaustive(p);
    SCOPED_TRACE(limit);
    ASSERT_EQ(found.feasible, brute.feasible);
    if (!found.feasible) continue;
    EXPECT_GE(found.eval.objective, brute.eval.objective - 1e-9);
    // Model order along the virtual pipeline: no dense layer after the first MoE layer.
    bool moe_seen = false;
    for (int cell = 0; cell < 4; ++cell) {
      if (moe_seen) {
        EXPECT_EQ(count(found.x, 0, cell / 2, cell % 2), 0) << "cell " << cell;
      }
      moe_seen = moe_seen || count(found.x, 1, cell / 2, cell % 2) > 0;
    }
    // In a cell holding both types, no recomputed MoE layer after a dense layer that is not recomputed.
    for (int cell = 0; cell < 4; ++cell) {
      const auto& dense = found.x[0][static_cast<std::size_t>(cell / 2)][static_cast<std::size_t>(cell % 2)];
      const auto& moe = found.x[1][static_cast<std::size_t>(cell / 2)][static_cast<std::size_t>(cell % 2)];
      if (dense[static_cast<std::size_t>(Rc::None)] > 0) {
        EXPECT_EQ(moe[static_cast<std::size_t>(Rc::Full)], 0) << "cell " << cell;
      }
    }
  }
}

TEST(Balance, ManyChunksStopAtTheTimeLimitWithAPlan) {
  // 400 layers on 2 stages of 10 chunks: even the compositions of a stage's 200 layers (what the cutoff from the
  // first plan leaves) number more than 10^15. The solve must honour its time limit (it once ran for hours on
  // such a case) and still return a plan that fits.
  balance::Problem p;
  p.layers = layers(400, 10, 40, {{Rc::None, 20}, {Rc::Full, 3}});
  p.stages = 2;
  p.chunks = 10;
  p.micro_batches = 8;
  p.schedule = simulate::Schedule::Interleaved;
  p.time_limit_s = 0.3;
  balance::Solution sol = balance::solve(p);
  EXPECT_TRUE(sol.timed_out);
  ASSERT_TRUE(sol.feasible);
  EXPECT_TRUE(sol.eval.fits);
  EXPECT_FALSE(sol.optimal);  // nothing is proved from an enumeration cut short
  // The limit is read every few thousand options: the solve ends well within a generous margin of it (the margin
  // covers a sanitizer build), never after the full enumeration.
  EXPECT_LT(sol.solve_seconds, p.time_limit_s + 20.0);
}

TEST(Balance, ATimeLimitAtAnyPointLeavesAValidAnswer) {
  // The limit can fall in any phase (programs, late-spare start, end-stage bound, annealing, polishing); wherever it
  // falls, the solve returns the best plan so far (or none) and never reads a stage option that was not listed
  // (sapp plan, whose layouts are balanced under a 1.5 s limit, once crashed on a stage whose options the
  // expired clock had left empty). Limits on a geometric grid, both schedules of the demo.
  for (bool interleaved : {true, false}) {
    for (double limit = 0.0005; limit < 1.0; limit *= 1.6) {
      balance::Problem p;
      p.layers = balance::read_layers(test::data_dir() + "/layers/demo.json");
      p.stages = 16;
      p.chunks = interleaved ? 3 : 1;
      p.micro_batches = 16;
      p.memory_limit_mb = 56000;
      p.schedule = interleaved ? simulate::Schedule::Interleaved : simulate::Schedule::OneF1B;
      p.time_limit_s = limit;
      balance::Solution sol = balance::solve(p);
      if (!sol.feasible) continue;
      EXPECT_TRUE(sol.eval.fits) << limit;
      EXPECT_GE(sol.eval.objective, sol.bound * (1 - 1e-9)) << limit;
      if (sol.optimal) {
        EXPECT_NEAR(sol.eval.objective, sol.bound, 1e-6 * sol.bound) << limit;
      }
    }
  }
}

TEST(Simulator, UniformOneF1BMatchesTheClosedForm) {
  // (m + p - 1)(f + b) for equal stages.
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 4, 8, 16}) {
      simulate::StageTimes t;
      t.forward.assign(1, std::vector<double>(static_cast<std::size_t>(p), 3.0));
      t.backward.assign(1, std::vector<double>(static_cast<std::size_t>(p), 6.0));
      auto r = simulate::simulate(simulate::Schedule::OneF1B, p, 1, m, t);
      EXPECT_DOUBLE_EQ(r.end, (m + p - 1) * 9.0) << "p=" << p << " m=" << m;
      EXPECT_NEAR(r.ideal, (p - 1.0) / m, 1e-12);
      EXPECT_NEAR(r.real, r.ideal, 1e-12);  // uniform: no imbalance, no recompute
    }
  }
}

TEST(Simulator, UniformInterleavedShrinksTheBubbleByTheChunks) {
  // Equal chunks of time t: (m V + p - 1) t, i.e. a bubble of (p - 1) / (V m).
  int p = 4, V = 2, m = 8;
  simulate::StageTimes t;
  t.forward.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(p), 1.0));
  t.backward.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(p), 2.0));
  auto r = simulate::simulate(simulate::Schedule::Interleaved, p, V, m, t);
  EXPECT_DOUBLE_EQ(r.end, (m * V + p - 1) * 3.0);
}

TEST(Simulator, ZeroBubbleIsNoSlowerThan1F1B) {
  simulate::StageTimes t;
  t.forward.assign(1, std::vector<double>(4, 2.0));
  t.backward.assign(1, std::vector<double>(4, 4.0));
  auto one = simulate::simulate(simulate::Schedule::OneF1B, 4, 1, 8, t);
  auto zb = simulate::simulate(simulate::Schedule::ZeroBubble, 4, 1, 8, t);
  EXPECT_LT(zb.end, one.end);
}

TEST(Simulator, PeakMemoryEqualsTheOptimisersModel) {
  for (bool less : {false, true}) {
    balance::Problem p;
    p.layers = balance::read_layers(std::string(SAPP_SOURCE_DIR) + "/data/layers/demo.json");
    p.stages = 16;
    p.chunks = 3;
    p.micro_batches = 16;
    p.memory_limit_mb = 56000;
    p.schedule = less ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved;
    auto sol = balance::solve(p);
    if (!sol.feasible) continue;
    auto sim = simulate::simulate(p.schedule, p.stages, p.chunks, p.micro_batches, balance::stage_times(p, sol.x));
    for (int s = 0; s < p.stages; ++s) EXPECT_NEAR(sim.peak_memory[static_cast<std::size_t>(s)], sol.eval.stage_memory_mb[static_cast<std::size_t>(s)], 1e-6);
    for (double peak : sim.peak_memory) EXPECT_LE(peak, 56000 + 1e-6);
  }
}

TEST(Simulator, InterleavedInFlightIsMegatronsWarmup) {
  // Megatron's interleaved warm-up: (p - s - 1) * 2 + (v - 1) * p forwards, then one more in flight.
  int S = 4, V = 3, m = 8;
  for (int s = 0; s < S; ++s) {
    auto vecs = simulate::in_flight_vectors(simulate::Schedule::Interleaved, S, V, m, s);
    int most = 0;
    for (const auto& c : vecs) {
      int sum = 0;
      for (int k : c) sum += k;
      most = std::max(most, sum);
    }
    EXPECT_EQ(most, (S - s - 1) * 2 + (V - 1) * S + 1) << "stage " << s;
  }
}

TEST(Simulator, DualPipeVHoldsPPPlusOneChunkActivations) {
  // DualPipe repository README, "Pipeline Bubbles and Memory Usage Comparison": DualPipeV holds PP + 1 chunk
  // activations per device, PP = 2 S pipeline stages on S devices. Equal chunks (activation 1 per micro-batch):
  // the busiest device peaks at 2 S + 1. Every (chunk, micro-batch) runs one forward and one backward per stage,
  // every split backward one W, and the simulator finds no causality violation.
  for (int S : {2, 3, 4, 8}) {
    for (int m : {2 * S, 2 * S + 1, 3 * S}) {
      simulate::StageTimes t;
      t.forward.assign(2, std::vector<double>(static_cast<std::size_t>(S), 1.0));
      t.backward.assign(2, std::vector<double>(static_cast<std::size_t>(S), 2.0));
      t.activation.assign(2, std::vector<double>(static_cast<std::size_t>(S), 1.0));
      auto r = simulate::simulate(simulate::Schedule::DualPipeV, S, 2, m, t);
      EXPECT_DOUBLE_EQ(*std::max_element(r.peak_memory.begin(), r.peak_memory.end()), 2.0 * S + 1) << "S=" << S << " m=" << m;
      for (int s = 0; s < S; ++s) {
        std::map<std::tuple<int, int, int>, int> seen;
        int split = 0;
        for (const auto& b : plan::stage_order(simulate::Schedule::DualPipeV, S, 2, m, s)) {
          ++seen[{static_cast<int>(b.kind), b.chunk, b.micro}];
          split += b.kind == plan::BlockKind::Backward && b.split ? 1 : 0;
        }
        int weights = 0;
        for (const auto& [key, n] : seen) {
          EXPECT_EQ(n, 1);
          weights += std::get<0>(key) == static_cast<int>(plan::BlockKind::Weight) ? 1 : 0;
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(4 * m + weights)) << "S=" << S << " m=" << m << " stage " << s;
        EXPECT_EQ(weights, split);
      }
    }
  }
}

TEST(Simulator, CausalityViolationIsAnError) {
  // Fewer micro-batches than stages is no valid interleaved order: refused, not simulated wrongly.
  simulate::StageTimes t;
  t.forward.assign(2, std::vector<double>(4, 1.0));
  t.backward.assign(2, std::vector<double>(4, 2.0));
  EXPECT_THROW(simulate::simulate(simulate::Schedule::Interleaved, 4, 2, 3, t), Error);
}

TEST(Simulator, SvgIsValidXml) {
  simulate::StageTimes t;
  t.forward.assign(1, std::vector<double>(3, 1.0));
  t.backward.assign(1, std::vector<double>(3, 2.0));
  t.activation.assign(1, std::vector<double>(3, 5.0));
  t.static_memory.assign(3, 10.0);
  auto r = simulate::simulate(simulate::Schedule::OneF1B, 3, 1, 6, t);
  simulate::SvgOptions o;
  o.title = "test <&> \"quotes\"";
  o.memory_limit = 30;
  std::string dir = test::temp_dir();
  std::string path = dir + "/t.svg";
  io::write_atomic(path, simulate::render_svg(r, 1, o));
  std::string cmd =
      "python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "assert r.tag.endswith('svg'); assert len(r.findall('{http://www.w3.org/2000/svg}rect')) >= 36; "
      "g = [e for e in r.iter() if e.get('class') == 'stage-legend']; assert len(g) == 3, len(g); "
      "t = [e for e in r.iter() if e.get('class') == 'tick']; assert len(t) >= 10, len(t)\" " +
      path;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Balance, FrameworkYamlRoundTrip) {
  balance::Problem p;
  p.layers = layers(55, 1, 1, {{Rc::None, 5}, {Rc::Selective, 4}, {Rc::Comm, 3}, {Rc::Both, 2}, {Rc::Full, 1}});
  p.stages = 2;
  balance::Assignment x(1, std::vector<std::vector<std::array<long long, 5>>>(1, std::vector<std::array<long long, 5>>(2)));
  // docs/reference-planner.md §2.5 and §6.2 (kind order): internal {NONE 1,2; SLCT 3,4; COMM 5,6; BOTH 7,8; FULL 9,10}.
  x[0][0][0] = {1, 3, 5, 7, 9};
  x[0][0][1] = {2, 4, 6, 8, 10};
  auto fw = balance::to_framework(p, x);
  EXPECT_EQ(fw[0].recompute[0], (std::vector<long long>{9, 10}));
  EXPECT_EQ(fw[0].select_recompute[0], (std::vector<long long>{19, 22}));
  EXPECT_EQ(fw[0].select_comm_recompute[0], (std::vector<long long>{21, 24}));
  EXPECT_EQ(fw[0].offset[0], (std::vector<long long>{25 - 27, 30 - 27}));
  // The YAML keys merge a selective and a comm layer into one `both` layer, so the inverse is the canonical
  // assignment with the same keys (BOTH = min(sel - full, comm - full), as the reference reads them).
  auto back = balance::from_framework(p, fw);
  EXPECT_EQ(back[0][0][0], (std::array<long long, 5>{4, 0, 2, 10, 9}));
  auto again = balance::to_framework(p, back);
  EXPECT_EQ(again[0].recompute, fw[0].recompute);
  EXPECT_EQ(again[0].select_recompute, fw[0].select_recompute);
  EXPECT_EQ(again[0].select_comm_recompute, fw[0].select_comm_recompute);
  EXPECT_EQ(again[0].offset, fw[0].offset);
}

TEST(Decompose, RecoversPlantedTermsExactly) {
  std::vector<Rc> kinds = {Rc::Selective, Rc::Full};
  auto runs = balance::guide(8, 32, kinds, true);
  // Planted terms (MB): P, A_none, A_selective, A_full, C, H, T.
  double P = 1710, An = 994, As = 739, Af = 32, C = -1896, H = 9236, T = 5794;
  balance::Measurements m{8, true, runs};
  for (auto& run : m.runs) {
    for (int i = 0; i < 8; ++i) {
      std::size_t si = static_cast<std::size_t>(i);
      long long sel = run.recomputed.count(Rc::Selective) ? run.recomputed[Rc::Selective][si] : 0;
      long long full = run.recomputed.count(Rc::Full) ? run.recomputed[Rc::Full][si] : 0;
      long long none = run.layers[si] - sel - full;
      auto d = [](long long v) { return static_cast<double>(v); };
      run.peaks_mb[si] = d(run.layers[si]) * P + (8 - i) * (d(none) * An + d(sel) * As + d(full) * Af) + C + (i == 0 ? H : 0) + (i == 7 ? T : 0);
    }
  }
  auto d = balance::decompose(m);
  EXPECT_NEAR(d.param_mb, P, 1e-6);
  EXPECT_NEAR(d.activation_mb[Rc::None], An, 1e-6);
  EXPECT_NEAR(d.activation_mb[Rc::Selective], As, 1e-6);
  EXPECT_NEAR(d.activation_mb[Rc::Full], Af, 1e-6);
  EXPECT_NEAR(d.constant_mb, C, 1e-6);
  EXPECT_NEAR(d.head_mb, H, 1e-6);
  EXPECT_NEAR(d.tail_mb, T, 1e-6);
  for (double r : d.residuals_mb) EXPECT_NEAR(r, 0.0, 1e-6);
}

// The guide's dry runs are all different (with 8 stages and four kinds its second run repeated the first, one dry
// run more for the user and nothing learned) and make decompose solvable, over stage counts and kind sets.
TEST(Decompose, TheGuidesDryRunsAreDistinctAndSolvable) {
  const std::vector<std::vector<Rc>> kind_sets = {{Rc::Selective, Rc::Full}, {Rc::Selective, Rc::Comm, Rc::Both, Rc::Full}, {Rc::Full}};
  for (const auto& kinds : kind_sets) {
    for (int stages = 4; stages <= 12; ++stages) {
      for (bool constant : {true, false}) {
        const auto runs = balance::guide(stages, 4LL * stages, kinds, constant);
        for (std::size_t i = 0; i < runs.size(); ++i) {
          for (std::size_t j = 0; j < i; ++j) {
            EXPECT_FALSE(runs[i].layers == runs[j].layers && runs[i].recomputed == runs[j].recomputed)
                << stages << " stages, " << kinds.size() << " kinds: runs " << j + 1 << " and " << i + 1 << " are the same";
          }
        }
        balance::Measurements m{stages, constant, runs};
        EXPECT_NO_THROW((void)balance::decompose(m)) << stages << " stages, " << kinds.size() << " kinds";
      }
    }
  }
  // Three stages have one body stage, whose peaks cannot tell parameters from activations: refused, not a guide
  // that decompose would then refuse.
  test::expect_error([] { (void)balance::guide(3, 12, {Rc::Full}, true); }, "--stages: 3: decomposition needs at least 4 stages", "three stages");
}

TEST(Decompose, RefusesAnUnderDeterminedInputAndSaysWhatIsMissing) {
  balance::Measurements m;
  m.stages = 4;
  m.constant = true;
  balance::DryRun run;
  run.layers = {8, 8, 8, 8};  // every stage the same: P, A_none and C cannot be told apart
  run.peaks_mb = {50000, 40000, 30000, 20000};
  m.runs.push_back(run);
  try {
    (void)balance::decompose(m);
    FAIL() << "accepted";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("under-determined"), std::string::npos) << what;
    EXPECT_NE(what.find("more stage"), std::string::npos) << what;
    EXPECT_NE(what.find("memory_parameter"), std::string::npos) << what;
  }
}

TEST(BalanceBadInput, EachBadLayersFileGetsOneClearError) {
  std::string dir = test::temp_dir();
  struct Case {
    std::string name, json, says;
    std::string extra = "";
  };
  std::string head = R"({"name":"HEAD","type":"HEAD","time":1,"nb_layer":1,"memory_parameter":10})";
  std::string tail = R"({"name":"TAIL","type":"TAIL","time":1,"nb_layer":1,"memory_parameter":10})";
  std::string body = R"({"name":"BODY","type":"BODY","time":2,"nb_layer":8,"memory_parameter":100,"memory_activation":50})";
  auto file = [&](const std::string& items) { return std::string(R"({"layers_description":[)") + items + "]}"; };
  std::vector<Case> cases = {
      {"missing HEAD", file(body + "," + tail), "no HEAD"},
      {"negative time", file(head + R"(,{"name":"BODY","type":"BODY","time":-2,"nb_layer":8,"memory_activation":50},)" + tail), "time"},
      {"zero layers", file(head + R"(,{"name":"BODY","type":"BODY","time":2,"nb_layer":0,"memory_activation":50},)" + tail), "nb_layer"},
      {"unknown type", file(head + R"(,{"name":"BODY","type":"MIDDLE","time":2,"nb_layer":8},)" + tail), "MIDDLE"},
      {"non-numeric memory", file(head + R"(,{"name":"BODY","type":"BODY","time":2,"nb_layer":8,"memory_activation":"lots"},)" + tail), "memory_activation"},
      {"limit below parameter memory", file(head + "," + body + "," + tail), "--memory-limit", "--memory-limit 50"},
      {"no layers_description", R"({"layers":[]})", "layers_description"},
      {"malformed JSON", R"({"layers_description": [)", "not valid JSON"},
  };
  for (const auto& c : cases) {
    std::string path = dir + "/" + std::to_string(&c - cases.data()) + ".json";
    test::write_file(path, c.json);
    std::string out = dir + "/out.yaml";
    auto r = test::run_sapp("balance --layers " + path + " --stages 2 --micro-batches 4 --output " + out + " " + c.extra);
    EXPECT_EQ(r.status, 1) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.name;
  }
}

// A layers file's constant_memory_mb (what `sapp plan --emit-layers` writes: buffers, reserve, one rebuilt layer) is
// held by every stage, and --constant-memory adds to it: `sapp balance` had read the file without it, pricing a
// plan balanced from an emitted file that many MB too low.
TEST(BalanceCli, TheLayersFilesConstantMemoryIsHeldByEveryStage) {
  const std::string dir = test::temp_dir();
  const std::string emitted = dir + "/llama.json";
  auto plan = test::run_sapp(
      "plan --model llama3-70b --devices 64 --global-batch 128 --seq 8192 --tp 4 --pp 4 --vpp 1 --cp 1 --candidates 1 -q -f json --emit-layers " + emitted);
  ASSERT_EQ(plan.status, 0) << plan.err;
  nlohmann::json layers = nlohmann::json::parse(io::read_text(emitted));
  const double constant = layers.at("constant_memory_mb").get<double>();
  ASSERT_GT(constant, 0.0);
  auto peaks = [&](const nlohmann::json& file, const std::string& extra) {
    const std::string path = dir + "/layers.json";
    test::write_file(path, file.dump());
    auto r = test::run_sapp("balance --layers " + path + " --stages 4 --micro-batches 8 --naive --time-limit 1 -f json " + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out).at("naive").at("all_recompute_full").at("peak_memory_mb").get<std::vector<double>>();
  };
  const std::vector<double> stated = peaks(layers, "");
  const std::vector<double> more = peaks(layers, "--constant-memory 100");
  layers.erase("constant_memory_mb");
  const std::vector<double> without = peaks(layers, "");
  ASSERT_EQ(stated.size(), 4U);
  for (std::size_t s = 0; s < stated.size(); ++s) {
    EXPECT_NEAR(stated[s] - without[s], constant, 1e-6 * constant) << "stage " << s;
    EXPECT_NEAR(more[s] - stated[s], 100.0, 1e-6) << "stage " << s;
  }
}

TEST(BalanceCli, DemoReportsBoundAndGapAndWritesYamlAndSvg) {
  std::string dir = test::temp_dir();
  auto r = test::run_sapp("balance --layers " + std::string(SAPP_SOURCE_DIR) + "/data/layers/demo.json --stages 16 --micro-batches 16 --interleave 3 " +
                          "--memory-limit 56000 --less-memory --naive --format json --svg " + dir + "/demo.svg");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // Proved only when the simulated step meets the lower bound; otherwise the gap is what separates them.
  double step = j["result"]["simulated_step_time"].get<double>();
  double bound = j["solver"]["lower_bound"].get<double>();
  EXPECT_LE(bound, step);
  EXPECT_NEAR(j["solver"]["gap"].get<double>(), (step - bound) / step, 1e-9);
  EXPECT_EQ(j["solver"]["proved_optimal"].get<bool>(), step <= bound * (1 + 1e-9));
  EXPECT_TRUE(j["result"]["fits"].get<bool>());
  EXPECT_EQ(j["strategy"][0]["offset"].size(), 3u);
  EXPECT_FALSE(j["naive"]["no_recompute"]["fits"].get<bool>());
  EXPECT_TRUE(std::filesystem::exists(dir + "/demo.svg"));
}

// `balance --recompute-num-layers` keeps to Megatron's block recompute: a count n (every chunk's first n layers full,
// the rest none) or auto (each n balanced, the fastest kept); the printed counts are then one n everywhere (a chunk
// of fewer layers recomputing all of them), and auto is no slower than any single count it could have kept.
TEST(BalanceCli, MegatronBlockRecomputeCountOrAuto) {
  const std::string base =
      "balance --layers " + std::string(SAPP_SOURCE_DIR) + "/data/layers/llama2-70b.json --stages 8 --micro-batches 16 --memory-limit 40000 -f json ";
  auto step_of = [&](const std::string& n) {
    auto r = test::run_sapp(base + "--recompute-num-layers " + n);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    const auto& strategy = j["strategy"][0];
    const auto& offset = strategy["offset"];
    const auto& full = strategy["recompute"];
    long long most = 0;
    for (const auto& c : full) most = std::max(most, c.get<long long>());
    for (std::size_t s = 0; s < full.size(); ++s) {
      const long long layers = 10 + offset[s].get<long long>();  // 80 layers on 8 stages: 10 + offset
      EXPECT_EQ(full[s].get<long long>(), std::min(layers, most)) << r.out;
    }
    EXPECT_EQ(strategy["select_recompute"], full);  // nothing selective
    return j["result"]["simulated_step_time"].get<double>();
  };
  const double automatic = step_of("auto");
  for (const char* n : {"6", "8", "10"}) {
    auto r = test::run_sapp(base + "--recompute-num-layers " + n);
    if (r.status == 0) {
      EXPECT_LE(automatic, step_of(n) + 1e-6) << n;
    }
  }
  auto bad = test::run_sapp(base + "--recompute-num-layers x");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("recompute-num-layers"), std::string::npos) << bad.err;
}

TEST(BalanceCli, BundledExamplesRun) {
  std::string src = SAPP_SOURCE_DIR;
  auto d = test::run_sapp("balance decompose --measured " + src + "/examples/measured-peaks.yaml --format json");
  ASSERT_EQ(d.status, 0) << d.err;
  auto j = nlohmann::json::parse(d.out);
  // The terms the example's comment says its peaks were made from.
  EXPECT_NEAR(j["memory_parameter"].get<double>(), 1710, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["none"].get<double>(), 994, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["full"].get<double>(), 32, 1e-6);
  EXPECT_NEAR(j["constant_mb"].get<double>(), -1896, 1e-6);
  auto m = test::run_sapp("balance --layers " + src + "/data/layers/demo.json --stages 4 --micro-batches 8 --manual " + src +
                          "/examples/manual-strategy.yaml --format json");
  ASSERT_EQ(m.status, 0) << m.err;
  auto mj = nlohmann::json::parse(m.out);
  EXPECT_TRUE(mj["manual"].contains("front_loaded"));
  EXPECT_GT(mj["manual"]["even_all_selective"]["simulated_step_time"].get<double>(), 0.0);
}

TEST(BalanceCli, ZeroBubbleOnTheDemoIsProvedInfeasibleAndSaysSo) {
  // Independent count: ZB-H1 holds min(S, m) = 16 micro-batches on every stage, so the lightest layer (both
  // recompute: 2141 MB of parameters + 16 x 511 MB) takes 10317 MB and a stage of 56000 MB holds at most 5
  // layers: 16 x 5 = 80 < 96 body layers.
  std::string demo = std::string(SAPP_SOURCE_DIR) + "/data/layers/demo.json";
  auto r = test::run_sapp("balance --layers " + demo + " --stages 16 --micro-batches 16 --memory-limit 56000 --zero-bubble");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("96 body layers, 16 stages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("schedule zb-h1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("solver: :"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("96 layers over 16 stages fits 56000 MB"), std::string::npos) << r.err;
  // With room for 7 layers a stage (7 x 10317 + 4245 MB of head < 80000 MB) it finds a plan that fits.
  auto ok = test::run_sapp("balance --layers " + demo + " --stages 16 --micro-batches 16 --memory-limit 80000 --zero-bubble --format json");
  ASSERT_EQ(ok.status, 0) << ok.err;
  auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["schedule"].get<std::string>(), "zb-h1");
  EXPECT_TRUE(j["result"]["fits"].get<bool>());
}

TEST(Decompose, ReadsTheReferencesDryRunInputAndItsHeadTailConvention) {
  // The reference planner's documented decomposition of its demo dry run: P 2141, activations none 852,
  // selective 767, comm 535, both 511, constant -1896, head 4245 and tail 1203 MB, its head and tail absorbing the
  // constant (M_0 = n_0 P + S sum c A + head). Peaks planted from those terms for a 16-stage run of 96 layers with
  // only some body stages measured (partial measurements), read with the framework's recompute semantics.
  const int S = 16;
  std::vector<long long> offset = {0, 1, -1, 2, -2, 1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<long long> sel = {6, 2, 0, 5, 1, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 2};
  std::vector<long long> comm = {6, 0, 3, 2, 4, 1, 2, 4, 0, 0, 0, 0, 0, 0, 0, 1};
  const double P = 2141, a_none = 852, a_sel = 767, a_comm = 535, a_both = 511, C = -1896, head = 4245, tail = 1203;
  auto peak = [&](int i) {
    long long n = 6 + offset[static_cast<std::size_t>(i)];
    long long s = sel[static_cast<std::size_t>(i)];
    long long c = comm[static_cast<std::size_t>(i)];
    long long both = std::min(s, c);
    double act = static_cast<double>(both) * a_both + static_cast<double>(s - both) * a_sel + static_cast<double>(c - both) * a_comm +
                 static_cast<double>(n - s - c + both) * a_none;
    double extra = i == 0 ? head : i == S - 1 ? tail : C;
    return static_cast<double>(n) * P + (S - i) * act + extra;
  };
  auto list = [](const auto& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt::format("{}", v[i]);
    return s + "]";
  };
  std::vector<int> ids = {1, 2, 3, 4, 5, 6, 7};
  std::vector<double> mems;
  for (int i : ids) mems.push_back(peak(i));
  std::string yaml = fmt::format(
      "pipeline_config:\n  pipeline_num: 16\n  num_layer: 96\n  offset: {}\ntime_config:\n  head: 90\n  body: 90\n  tail: 180\n"
      "recompute_config:\n  recompute: false\n  select_recompute: {}\n  select_comm_recompute: {}\nmemory_usage:\n  head_memory: {}\n"
      "  tail_memory: {}\n  body_memories:\n    stage_id: {}\n    memories: {}\n",
      list(offset), list(sel), list(comm), peak(0), peak(S - 1), list(ids), list(mems));
  std::string dir = test::temp_dir();
  io::write_atomic(dir + "/init.yaml", yaml);
  auto r = test::run_sapp("balance decompose --measured " + dir + "/init.yaml --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["memory_parameter"].get<double>(), P, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["none"].get<double>(), a_none, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["selective"].get<double>(), a_sel, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["comm"].get<double>(), a_comm, 1e-6);
  EXPECT_NEAR(j["activation_mb"]["both"].get<double>(), a_both, 1e-6);
  EXPECT_NEAR(j["constant_mb"].get<double>(), C, 1e-6);
  EXPECT_NEAR(j["head_mb"].get<double>(), head, 1e-6);
  EXPECT_NEAR(j["tail_mb"].get<double>(), tail, 1e-6);
  EXPECT_EQ(j["equations"].get<int>(), 7);
  // Four body stages cannot tell P and four activations apart: refused, saying so.
  for (int k = 0; k < 3; ++k) {
    ids.pop_back();
    mems.pop_back();
  }
  io::write_atomic(dir + "/short.yaml",
                   fmt::format("pipeline_config:\n  pipeline_num: 16\n  num_layer: 96\n  offset: {}\nrecompute_config:\n  select_recompute: {}\n"
                               "  select_comm_recompute: {}\nmemory_usage:\n  head_memory: {}\n  tail_memory: {}\n  body_memories:\n"
                               "    stage_id: {}\n    memories: {}\n",
                               list(offset), list(sel), list(comm), peak(0), peak(S - 1), list(ids), list(mems)));
  auto bad = test::run_sapp("balance decompose --measured " + dir + "/short.yaml");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("under-determined"), std::string::npos) << bad.err;
}

namespace {

// A random head and tail, each backward twice its forward: forwards below head_range and tail_range.
void random_head_and_tail(std::mt19937& rng, balance::LayerSet& l, unsigned head_range, unsigned tail_range) {
  l.head_forward = static_cast<double>(rng() % head_range);
  l.head_backward = 2 * l.head_forward;
  l.tail_forward = static_cast<double>(rng() % tail_range);
  l.tail_backward = 2 * l.tail_forward;
}

// Random small problems (fixed seed) solved both ways: the bound may never exceed the best simulated step of any plan
// that fits (exhaustive enumeration), nor may the optimiser's plan beat it. `shape(rng, p)` draws stages, chunks,
// micro-batches, layers and schedule into p; returns how many problems had a feasible plan (and in `proved` how
// many of them the solver proved optimal).
int check_bound_against_exhaustive(unsigned seed, int trials, const std::function<void(std::mt19937&, balance::Problem&)>& shape, int* proved = nullptr,
                                   std::vector<double>* gaps = nullptr) {
  std::mt19937 rng(seed);
  int checked = 0;
  if (proved != nullptr) *proved = 0;
  for (int trial = 0; trial < trials; ++trial) {
    balance::Problem p;
    shape(rng, p);
    SCOPED_TRACE(::testing::Message() << "S=" << p.stages << " V=" << p.chunks << " m=" << p.micro_batches << " L=" << p.layers.bodies.at(0).count
                                      << " limit=" << p.memory_limit_mb << " " << simulate::to_string(p.schedule));
    balance::Solution brute = balance::solve_exhaustive(p);
    balance::Solution sol = balance::solve(p);
    EXPECT_EQ(sol.feasible, brute.feasible);
    if (!brute.feasible || !sol.feasible) continue;
    EXPECT_LE(sol.bound, brute.eval.objective * (1 + 1e-12));
    EXPECT_GE(sol.eval.objective, brute.eval.objective * (1 - 1e-12));
    // The search reaches the exhaustive optimum on these small cases; where "proved optimal" is missing there, it
    // is the bound that falls short of the optimum, not the plan.
    EXPECT_NEAR(sol.eval.objective, brute.eval.objective, 1e-9 * brute.eval.objective);
    ++checked;
    if (proved != nullptr && sol.optimal) ++*proved;
    if (gaps != nullptr) gaps->push_back((brute.eval.objective - sol.bound) / brute.eval.objective);
  }
  return checked;
}

}  // namespace

TEST(Balance, InterleavedBoundNeverExceedsTheExhaustiveOptimum) {
  // The bound through the last chunk's cells (micro-batch 0's forward up to a cell, the stage's order over that
  // chunk's micro-batches, micro-batch m - 1's backward back), with and without excursions, on random small
  // interleaved cases.
  int proved = 0;
  int checked = check_bound_against_exhaustive(
      7, 14,
      [](std::mt19937& rng, balance::Problem& p) {
        int S = 2 + static_cast<int>(rng() % 2);
        int V = 2 + static_cast<int>(rng() % 2);
        if (S == 3 && V == 3) V = 2;  // keep the enumeration small
        int m = S + static_cast<int>(rng() % 3);
        long long L = S * V + static_cast<long long>(rng() % 3);
        p.layers = layers(L, 5 + static_cast<double>(rng() % 10), 30, {{Rc::None, 12}, {Rc::Full, 2}});
        p.layers.head_forward = static_cast<double>(rng() % 20);
        p.layers.tail_forward = static_cast<double>(rng() % 30);
        p.layers.tail_backward = 2 * p.layers.tail_forward;
        p.stages = S;
        p.chunks = V;
        p.micro_batches = m;
        p.memory_limit_mb = rng() % 2 ? 0 : 30.0 * static_cast<double>(L) / S + 12.0 * m + 20;
        p.schedule = rng() % 2 ? simulate::Schedule::Interleaved : simulate::Schedule::InterleavedLessMemory;
      },
      &proved);
  EXPECT_GE(checked, 8);
  // The bound meets the optimum on 6 of these 14: 3 by the programs' paths (the same 3 without excursions), 3 more
  // by the end-stage relaxation (pipeline/end_bound); on the others the critical path crosses windows of middle
  // stages too, which neither follows.
  EXPECT_GE(proved, 6);
}

// Random small interleaved cases for the end-stage relaxation: S stages (2 to `most_stages`), heads and tails of
// either weight, memory that binds on two of three.
namespace {
std::function<void(std::mt19937&, balance::Problem&)> end_stage_shape(int most_stages) {
  return [most_stages](std::mt19937& rng, balance::Problem& p) {
    int S = 2 + static_cast<int>(rng() % static_cast<unsigned>(most_stages - 1));
    int V = S == 2 ? 2 + static_cast<int>(rng() % 2) : 2;  // keep the enumeration small
    int m = S + static_cast<int>(rng() % 3);
    long long L = S * V + static_cast<long long>(rng() % (S == 4 ? 2 : 3));
    p.layers = layers(L, 5 + static_cast<double>(rng() % 10), 30, {{Rc::None, 12}, {Rc::Full, 2}});
    random_head_and_tail(rng, p.layers, 30, 40);
    p.stages = S;
    p.chunks = V;
    p.micro_batches = m;
    p.memory_limit_mb = rng() % 3 == 0 ? 0 : 30.0 * static_cast<double>(L) / S + 12.0 * m + 20;
    p.schedule = rng() % 2 ? simulate::Schedule::Interleaved : simulate::Schedule::InterleavedLessMemory;
  };
}
}  // namespace

TEST(Balance, EndStageBoundNeverExceedsTheExhaustiveOptimum) {
  // The end-stage relaxation (pipeline/end_bound: stages 0 and S-1 exact, the middle as delays, a Lagrangian over
  // the middle) with one and two middle stages: never above the optimum.
  int proved = 0;
  int checked = check_bound_against_exhaustive(23, 16, end_stage_shape(4), &proved);
  EXPECT_GE(checked, 10);
  // Proved: 9 of these 16 (2 by the programs' paths alone; 6 when the pairs' Lagrangians followed multiplicative
  // weights instead of the master LP).
  EXPECT_GE(proved, 9);
}

TEST(Balance, TwoStageInterleavedIsProvedByTheEndStageBound) {
  // With two stages there is no middle: the relaxation is the schedule itself, and the least over the end stages'
  // options is the optimum, so every case is proved (3 of these 7 by the programs' paths alone).
  int proved = 0;
  int checked = check_bound_against_exhaustive(29, 8, end_stage_shape(2), &proved);
  EXPECT_GE(checked, 6);
  EXPECT_EQ(proved, checked);
}

namespace {
// Random small one-chunk cases: 2 to 5 stages, 1 to `most_micro_batches` micro-batches (fewer than stages included),
// a few more layers than stages with three recompute kinds, a head and a tail, memory binding on half of them.
std::function<void(std::mt19937&, balance::Problem&)> one_chunk_shape(int most_micro_batches, simulate::Schedule schedule) {
  return [most_micro_batches, schedule](std::mt19937& rng, balance::Problem& p) {
    int S = 2 + static_cast<int>(rng() % 4);
    int m = 1 + static_cast<int>(rng() % static_cast<unsigned>(most_micro_batches));
    long long L = S + static_cast<long long>(rng() % 5);
    p.layers = layers(L, 5 + static_cast<double>(rng() % 10), 30, {{Rc::None, 12}, {Rc::Selective, 7}, {Rc::Full, 2}});
    random_head_and_tail(rng, p.layers, 20, 30);
    p.stages = S;
    p.micro_batches = m;
    p.memory_limit_mb = rng() % 2 ? 0 : 30.0 * static_cast<double>(L) / S + 12.0 * std::min(m, S) + 10;
    p.schedule = schedule;
  };
}
}  // namespace

TEST(Balance, ExcursionBoundNeverExceedsTheExhaustiveOptimum) {
  // The 1F1B bound through each stage's order with e excursions up the later stages and back (solve()) on random
  // small cases, fewer micro-batches than stages included, with a head and a tail.
  int proved = 0;
  int checked = check_bound_against_exhaustive(11, 24, one_chunk_shape(7, simulate::Schedule::OneF1B), &proved);
  EXPECT_GE(checked, 12);
  // With the excursions the bound meets the optimum on 17 of these 18 (1 % short on the other); the first-backward
  // path alone (e = 1) proved 14.
  EXPECT_GE(proved, checked - 1);
}

TEST(Balance, DualPipeVBoundNeverExceedsTheExhaustiveOptimum) {
  // The paths through each chunk's window on a stage, with and without excursions (solve(): micro-batch 0's
  // forwards down chunk 0 and back up chunk 1 to the window, the window's blocks priced by kind, split backwards and
  // weight gradients apart, micro-batch m - 1's backwards out) on random small DualPipe-V cases with a head and a
  // tail, memory binding on two of three: never above the exhaustive optimum.
  int proved = 0;
  std::vector<double> gaps;
  int checked = check_bound_against_exhaustive(
      31, 20,
      [](std::mt19937& rng, balance::Problem& p) {
        int S = 2 + static_cast<int>(rng() % 3);
        int m = 2 * S + static_cast<int>(rng() % 7);
        long long L = 2 * S + static_cast<long long>(rng() % (S >= 3 ? 2 : 3));
        p.layers = layers(L, 5 + static_cast<double>(rng() % 10), 30, {{Rc::None, 12}, {Rc::Full, 2}});
        random_head_and_tail(rng, p.layers, 20, 30);
        p.stages = S;
        p.chunks = 2;
        p.micro_batches = m;
        p.memory_limit_mb = rng() % 3 == 0 ? 0 : 30.0 * static_cast<double>(L) / S + 12.0 * (S + 1) + 20;
        p.schedule = simulate::Schedule::DualPipeV;
      },
      &proved, &gaps);
  EXPECT_EQ(checked, 20);
  // Gap between the bound and the optimum on these 20: mean 1.26 %, worst 4.8 % (the plans are all optimal; 5 of
  // them proved). With only the first stage's lead and m T_s: mean 1.98 %, worst 10.9 %, the same 5 proved.
  EXPECT_GE(proved, 5);
  EXPECT_LT(std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size()), 0.015);
  EXPECT_LT(*std::max_element(gaps.begin(), gaps.end()), 0.05);
}

TEST(Balance, ZeroBubbleBoundNeverExceedsTheExhaustiveOptimum) {
  // ZB-H1's paths through each stage's window, with and without excursions (solve(): the 1F1B paths with the
  // window's blocks priced by kind, split backwards and weight gradients apart, and the paths' other backwards priced
  // as split ones) on random small cases, fewer micro-batches than stages included, with a head and a tail.
  int proved = 0;
  std::vector<double> gaps;
  int checked = check_bound_against_exhaustive(37, 16, one_chunk_shape(8, simulate::Schedule::ZeroBubble), &proved, &gaps);
  EXPECT_EQ(checked, 14);
  // Gap between the bound and the optimum on these 14: mean 3.45 %, worst 7.7 % (3 proved). With only the first
  // stages' forwards and m T_s: mean 7.1 %, worst 39.5 % (the same 3 proved).
  EXPECT_GE(proved, 3);
  EXPECT_LT(std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size()), 0.04);
  EXPECT_LT(*std::max_element(gaps.begin(), gaps.end()), 0.08);
}

TEST(BalanceCli, GuideProposesRunsOfTheStatedShape) {
  // `balance guide` writes YAML: runN: {layers, offset, one array per recompute kind}; each run spreads the stated
  // body layers over the stated stages, and offset is each stage's layers minus the even share (16 / 4 = 4).
  auto r = test::run_sapp("balance guide --stages 4 --layers-total 16 --recompute-kinds full");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json runs = test::parse_yaml_for_test(r.out);
  ASSERT_TRUE(runs.is_object() && !runs.empty()) << r.out;
  for (const auto& [name, run] : runs.items()) {
    auto layers = run.at("layers").get<std::vector<long long>>();
    auto offset = run.at("offset").get<std::vector<long long>>();
    ASSERT_EQ(layers.size(), 4u) << name;
    long long total = 0;
    for (std::size_t s = 0; s < 4; ++s) {
      total += layers[s];
      EXPECT_EQ(offset[s], layers[s] - 4) << name;
    }
    EXPECT_EQ(total, 16) << name;
    for (long long full : run.at("recompute").get<std::vector<long long>>()) EXPECT_GE(full, 0) << name;
  }
  // Fewer than three stages cannot be decomposed (head and tail stages are fitted apart); no layers is a usage error.
  auto two = test::run_sapp("balance guide --stages 2 --layers-total 16");
  EXPECT_EQ(two.status, 1);
  EXPECT_NE(two.err.find("--stages"), std::string::npos) << two.err;
  auto none = test::run_sapp("balance guide --stages 4");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("--layers-total is required"), std::string::npos) << none.err;
}

// Several BODY types under interleaving: the bound comes from two one-type relaxations (every layer at the least
// cost of the types; the most numerous type alone with any cell allowed to be empty). On random small cases with a
// few cheap dense layers first and memory that binds on two of three, it never exceeds the exhaustive optimum, and
// the plan found is never below it (and reaches it on most).
namespace {

// Random small two-type problems (DeepSeek-style dense first layers, then MoE layers) on 2-3 stages and two chunks,
// solved by the optimiser and by exhaustive enumeration: the bound never above the optimum, the plan never below it.
// `schedule(rng)` draws the schedule, `micro_batches(rng, S)` the micro-batches; `check(S, sol)` sees each feasible
// plan. Counts the feasible cases, those proved and those whose plan reaches the optimum.
struct TwoTypeCounts {
  int checked = 0, proved = 0, reached = 0;
};
TwoTypeCounts check_two_types(unsigned seed, const std::function<simulate::Schedule(std::mt19937&)>& schedule,
                              const std::function<int(std::mt19937&, int)>& micro_batches,
                              const std::function<void(int, const balance::Solution&)>& check = {}) {
  std::mt19937 rng(seed);
  TwoTypeCounts n;
  for (int trial = 0; trial < 12; ++trial) {
    const int S = 2 + static_cast<int>(rng() % 2);
    const int V = 2;
    const long long dense = 1 + static_cast<long long>(rng() % 2);
    const long long moe = S * V - dense + static_cast<long long>(rng() % 3);
    const double dense_time = 2 + static_cast<double>(rng() % 4);
    const double moe_time = 5 + static_cast<double>(rng() % 6);
    nlohmann::json j = {{"layers_description",
                         {{{"name", "HEAD"}, {"type", "HEAD"}, {"time", 1 + static_cast<double>(rng() % 5)}, {"nb_layer", 1}, {"memory_parameter", 10}},
                          {{"name", "dense"},
                           {"type", "BODY"},
                           {"time", dense_time},
                           {"nb_layer", dense},
                           {"memory_parameter", 8},
                           {"memory_activation", 9},
                           {"memory_recompute", 1}},
                          {{"name", "moe"},
                           {"type", "BODY"},
                           {"time", moe_time},
                           {"nb_layer", moe},
                           {"memory_parameter", 20},
                           {"memory_activation", 14},
                           {"memory_recompute", 2}},
                          {{"name", "TAIL"}, {"type", "TAIL"}, {"time", 2 + static_cast<double>(rng() % 8)}, {"nb_layer", 1}, {"memory_parameter", 10}}}}};
    balance::Problem p;
    p.layers = balance::layers_from_json(j, "moe.json");
    p.stages = S;
    p.chunks = V;
    p.micro_batches = micro_batches(rng, S);
    p.memory_limit_mb = rng() % 3 == 0 ? 0 : 20.0 * static_cast<double>(dense + moe) / S + 14.0 * p.micro_batches + 20;
    p.schedule = schedule(rng);
    SCOPED_TRACE(::testing::Message() << "S=" << S << " m=" << p.micro_batches << " dense=" << dense << " moe=" << moe << " limit=" << p.memory_limit_mb << " "
                                      << simulate::to_string(p.schedule));
    const balance::Solution brute = balance::solve_exhaustive(p);
    const balance::Solution sol = balance::solve(p);
    EXPECT_EQ(sol.feasible, brute.feasible);
    if (!brute.feasible || !sol.feasible) continue;
    EXPECT_LE(sol.bound, brute.eval.objective * (1 + 1e-12));
    EXPECT_GE(sol.eval.objective, brute.eval.objective * (1 - 1e-12));
    if (check) check(S, sol);
    ++n.checked;
    if (sol.optimal) ++n.proved;
    if (sol.eval.objective <= brute.eval.objective * (1 + 1e-12)) ++n.reached;
  }
  return n;
}

}  // namespace

TEST(Balance, SeveralTypesInterleavedBoundNeverExceedsTheExhaustiveOptimum) {
  const TwoTypeCounts n = check_two_types(
      41, [](std::mt19937& rng) { return rng() % 2 ? simulate::Schedule::Interleaved : simulate::Schedule::InterleavedLessMemory; },
      [](std::mt19937& rng, int S) { return S + static_cast<int>(rng() % 3); });
  EXPECT_GE(n.checked, 10);
  // The climbs from the even splits and the relaxations' plans, then the kicks (kick_and_climb), reach the optimum
  // on 11 of these 12 (8 without the kicks, 3 when only layers between consecutive cells moved, from the best even
  // split alone; 12 with 200 kicks); the bound meets it on 1: two dense layers of eight weigh more in the
  // relaxations than a dense first layer of sixty does.
  EXPECT_GE(n.reached, 11);
  std::printf("several types, interleaved: %d of %d optimal, %d proved\n", n.reached, n.checked, n.proved);
}

TEST(Balance, SeveralTypesDualPipeVKeepModelOrderAlongTheV) {
  // DeepSeek-style dense first layers under DualPipe-V: the body layers follow model order down chunk 0 and back up
  // chunk 1 (stage S-1 to 0), as the estimator places them.
  const TwoTypeCounts n = check_two_types(
      43, [](std::mt19937&) { return simulate::Schedule::DualPipeV; }, [](std::mt19937& rng, int S) { return 2 * S + static_cast<int>(rng() % 3); },
      [](int S, const balance::Solution& sol) {
        // Down chunk 0, back up chunk 1: the dense type never follows the MoE type.
        std::size_t last = 0;
        for (int position = 0; position < 2 * S; ++position) {
          const auto v = static_cast<std::size_t>(position / S);
          const auto stage = static_cast<std::size_t>(v == 0 ? position % S : S - 1 - position % S);
          for (std::size_t l = 0; l < 2; ++l) {
            long long count = 0;
            for (long long k : sol.x[l][v][stage]) count += k;
            if (count == 0) continue;
            EXPECT_GE(l, last) << "position " << position;
            last = l;
          }
        }
      });
  EXPECT_GE(n.checked, 10);
  // The climbs and kicks reach the optimum on all 12 (10 without the kicks); the one-type relaxations' bound meets
  // it on none.
  EXPECT_EQ(n.reached, 12);
  std::printf("several types, DualPipe-V: %d of %d optimal, %d proved\n", n.reached, n.checked, n.proved);
}

// More BODY types than the one-type relaxation takes (a hybrid stack alternating its kinds without a period, each
// run its own type). Without interleaving the program over stages places them (here at the exhaustive optimum,
// though its bound does not always prove it). Interleaved, the layers keep their model order over the cells in
// pipeline order and the descent over the cells' layer counts starts from the even split, then from kicks of its best
// split: the plan is never slower than the even split and never faster than every contiguous plan (solve_exhaustive);
// it reaches the best on 2 x 2 and on 3 x 2 (336; the descent alone stopped at 347). The stack front-loads its heavy
// layers, so the even split is unbalanced.
TEST(Balance, ManyBodyTypesGetAContiguousSplit) {
  nlohmann::json layers = nlohmann::json::array();
  layers.push_back({{"name", "HEAD"}, {"type", "HEAD"}, {"time", 1}, {"nb_layer", 1}, {"memory_parameter", 10}});
  const std::vector<std::pair<double, long long>> runs = {{9, 2}, {3, 1}, {9, 2}, {3, 1}, {9, 1}, {3, 2}, {4, 1}, {3, 2}};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    layers.push_back({{"name", fmt::format("run{}", i)},
                      {"type", "BODY"},
                      {"time", runs[i].first},
                      {"nb_layer", runs[i].second},
                      {"memory_parameter", 5},
                      {"memory_activation", 4},
                      {"memory_recompute", 1}});
  }
  layers.push_back({{"name", "TAIL"}, {"type", "TAIL"}, {"time", 2}, {"nb_layer", 1}, {"memory_parameter", 10}});
  for (const auto& [stages, chunks] : std::vector<std::pair<int, int>>{{3, 1}, {4, 1}, {2, 2}, {3, 2}}) {
    balance::Problem p;
    p.layers = balance::layers_from_json({{"layers_description", layers}}, "hybrid.json");
    p.stages = stages;
    p.chunks = chunks;
    p.micro_batches = 4;
    p.schedule = chunks > 1 ? simulate::Schedule::Interleaved : simulate::Schedule::OneF1B;
    p.kinds = {Rc::None};
    ASSERT_GT(p.layers.bodies.size(), balance::kMaxProgramBodyTypes);
    const balance::Solution found = balance::solve(p);
    ASSERT_TRUE(found.feasible) << found.method;
    EXPECT_LE(found.bound, found.eval.objective);
    // Model order along the virtual pipeline (cells v S + s): a type never starts before the previous one ends.
    std::size_t last_type = 0;
    long long placed = 0;
    for (int cell = 0; cell < stages * chunks; ++cell) {
      for (std::size_t type = 0; type < found.x.size(); ++type) {
        long long n = 0;
        for (long long k : found.x[type][static_cast<std::size_t>(cell / stages)][static_cast<std::size_t>(cell % stages)]) n += k;
        if (n == 0) continue;
        EXPECT_GE(type, last_type) << "cell " << cell;
        last_type = type;
        placed += n;
      }
    }
    EXPECT_EQ(placed, p.layers.body_layers());
    const double even = balance::evaluate(p, balance::even_split(p, Rc::None)).objective;
    const balance::Solution brute = balance::solve_exhaustive(p);
    ASSERT_TRUE(brute.feasible);
    std::printf("%d stages x %d chunks: even split %.1f, balanced %.1f, every contiguous split's best %.1f\n", stages, chunks, even, found.eval.objective,
                brute.eval.objective);
    EXPECT_LT(found.eval.objective, even);
    // The program places the 1F1B cases exactly; the interleaved descent with its kicks reaches the best contiguous
    // split on these two (3 x 2 ended at 347 without the kicks).
    EXPECT_NEAR(found.eval.objective, brute.eval.objective, 1e-9);
  }
}
