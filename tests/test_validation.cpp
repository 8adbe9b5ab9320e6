// Validation against published training runs (validation/runs.yaml, every row with its source). Prints estimated vs
// measured step time (and peak memory where a run publishes it) per run, then per regime the median and worst
// |error| of the fitted rows and of the held-out rows apart. The targets (issue 9): held-out step time median
// <= 8 %, worst <= 20 % in every regime; peak memory median <= 5 %, worst <= 10 %; every published layout fits.
// A regime that misses a target and is listed under `known_gaps` in runs.yaml is a skipped case that states the
// figure; a listed gap that closes fails, so the mark cannot outlive the disagreement.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/files.hpp"
#include "cost/calibrate.hpp"
#include "cost/terms.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;

namespace {

using Case = cost::PublishedRun;

std::string runs_file() { return std::string(SAPP_SOURCE_DIR) + "/validation/runs.yaml"; }

// The library's reading of the file (cost::published_runs_from_json, what `sapp check` runs on it).
std::vector<Case> load_cases() { return cost::published_runs_from_json(io::read_tree(runs_file()), runs_file(), test::catalog()); }

struct Stats {
  std::vector<double> fitted, held;
};
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
double worst_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

struct Report {
  std::map<std::string, Stats> time, memory;
  int over = 0;  // published layouts that do not fit
  std::string over_names;
  // Held-out |step error| per (device, FP8), and one device of each pair.
  std::map<std::pair<std::string, std::string>, std::vector<double>> by_device;
  std::map<std::pair<std::string, std::string>, hardware::Hardware> devices;
  // Per published sweep of layouts (`sweep:`), each row's estimated and measured step time.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> sweeps;
  std::vector<std::string> sweep_lines;  // the rows as the ranking check prints them
};

const Report& report() {
  static const Report r = [] {
    Report out;
    std::vector<Case> cases = load_cases();
    std::printf("\n%-44s %-12s %-3s %-40s %10s %10s %8s %9s %9s %8s\n", "run", "regime", "fit", "layout", "measured", "estimated", "step err", "peak GiB",
                "published", "mem err");
    for (const auto& c : cases) {
      auto violations = plan::check_layout(c.run.model, c.run.layout, c.run.training, c.run.devices);
      EXPECT_TRUE(violations.empty()) << c.run.name << ": " << violations.front().rule << ": " << violations.front().detail;
      cost::MemoryEstimate mem = cost::estimate_memory(c.run.model, c.run.layout, c.run.training, c.hardware.memory_bytes);
      cost::StepTime t = cost::estimate_time(c.run.model, c.run.layout, c.run.training, c.hardware, mem, c.run.overlap);
      double p = cost::published_metric(c, t);
      double err = cost::step_error(c, p);
      (c.fitted ? out.time[c.regime].fitted : out.time[c.regime].held).push_back(std::fabs(err));
      std::pair<std::string, std::string> pair{c.hardware.id, cost::terms::precision_name(c.run.training)};
      out.devices.emplace(pair, c.hardware);
      if (!c.fitted) out.by_device[pair].push_back(std::fabs(err));
      if (!c.sweep.empty()) {
        const double measured = t.step_s / (1.0 + err);
        out.sweeps[c.sweep].first.push_back(t.step_s);
        out.sweeps[c.sweep].second.push_back(measured);
        out.sweep_lines.push_back(
            fmt::format("{:<46} {:<40} measured {:8.2f} s, estimated {:8.2f} s", c.run.name, c.run.layout.describe().substr(0, 40), measured, t.step_s));
      }
      double peak = mem.peak_bytes / 1073741824.0;
      std::string mem_err = "-";
      if (c.peak_gib > 0) {
        double e = peak / c.peak_gib - 1.0;
        (c.fitted ? out.memory[c.regime].fitted : out.memory[c.regime].held).push_back(std::fabs(e));
        mem_err = fmt::format("{:+.1f}%", 100 * e);
      }
      if (!mem.fits()) {
        ++out.over;
        out.over_names += " " + c.run.name + fmt::format(" ({:.1f} GiB)", peak);
      }
      const cost::Breakdown& b = t.breakdown;
      std::printf(
          "%-44s %-12s %-3s %-40s %10.1f %10.1f %+7.1f%% %9.1f %9s %8s%s  [s: step %.2f comp %.2f rec %.2f tp %.2f cp %.2f ep %.2f dp %.2f pp %.2f bub %.2f]\n",
          c.run.name.substr(0, 44).c_str(), c.regime.c_str(), c.fitted ? "yes" : "", c.run.layout.describe().substr(0, 40).c_str(), c.measured, p, 100 * err,
          peak, c.peak_gib > 0 ? fmt::format("{:.1f}", c.peak_gib).c_str() : "-", mem_err.c_str(), mem.fits() ? "" : " OVER", t.step_s, b.compute_s,
          b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s, b.bubble_s);
    }
    std::printf("\n%-14s %-10s %5s %9s %9s   %5s %9s %9s\n", "regime", "quantity", "fit n", "median", "worst", "held", "median", "worst");
    for (const auto& [what, table] : {std::pair{"step time", &out.time}, std::pair{"peak memory", &out.memory}}) {
      for (const auto& [regime, s] : *table) {
        std::printf("%-14s %-10s %5zu %8.1f%% %8.1f%%   %5zu %8.1f%% %8.1f%%\n", regime.c_str(), what, s.fitted.size(), 100 * median_of(s.fitted),
                    100 * worst_of(s.fitted), s.held.size(), 100 * median_of(s.held), 100 * worst_of(s.held));
      }
    }
    std::printf("(step error: estimated over measured step time; fitted rows: a factor in data/ was fitted to them; held-out rows: never read by tuning)\n");
    return out;
  }();
  return r;
}

std::string known_gap(const std::string& key) {
  nlohmann::json tree = io::read_tree(runs_file());
  if (!tree.contains("known_gaps") || !tree.at("known_gaps").contains(key)) return "";
  return tree.at("known_gaps").at(key).get<std::string>();
}

class RegimeStepTime : public testing::TestWithParam<std::string> {};

TEST_P(RegimeStepTime, HeldOutMedianWithinEightPercentWorstTwenty) {
  const Report& r = report();
  auto it = r.time.find(GetParam());
  ASSERT_NE(it, r.time.end()) << "no run of regime " << GetParam();
  double median = median_of(it->second.held), worst = worst_of(it->second.held);
  bool met = !it->second.held.empty() && median <= 0.08 && worst <= 0.20;
  std::string gap = known_gap("step_time_" + GetParam());
  if (!gap.empty() && !met) {
    GTEST_SKIP() << GetParam() << " step time, held out: median " << 100 * median << " %, worst " << 100 * worst << " % over " << it->second.held.size()
                 << " runs. Known gap: " << gap;
  }
  EXPECT_LE(median, 0.08) << GetParam();
  EXPECT_LE(worst, 0.20) << GetParam();
}
INSTANTIATE_TEST_SUITE_P(Validation, RegimeStepTime, testing::Values("dense", "moe", "long_context", "fsdp", "lora"));

// What every estimate prints as `validated` (cost::terms::validated) is what the runs show: a (device, precision)
// pair is validated iff its held-out runs meet the step-time target (median |error| <= 8 %), and every pair with
// runs is stated (none falls back to "no measured run").
TEST(Validation, ValidatedFlagAgreesWithTheRunsOfEachDeviceAndPrecision) {
  const Report& r = report();
  for (const auto& [pair, hw] : r.devices) {
    const auto& [device, precision] = pair;
    cost::terms::Validity v = cost::terms::validated(hw, precision);
    EXPECT_EQ(v.reason.rfind("no measured", 0), std::string::npos) << device << " " << precision << " has runs but no validation entry";
    auto it = r.by_device.find(pair);
    if (it == r.by_device.end()) {
      EXPECT_FALSE(v.validated) << device << " " << precision << ": only fitted runs, yet stated validated";
      continue;
    }
    double median = median_of(it->second);
    std::printf("%-10s %-5s held-out runs %2zu median |error| %5.1f %%  validated: %s\n", device.c_str(), precision.c_str(), it->second.size(), 100 * median,
                v.validated ? "true" : "false");
    EXPECT_EQ(v.validated, median <= 0.08) << device << " " << precision << ": median " << 100 * median << " %; " << v.reason;
  }
}

TEST(Validation, PeakMemoryWithinFivePercentMedianTenWorst) {
  const Report& r = report();
  std::vector<double> all;
  for (const auto& [regime, s] : r.memory) {
    all.insert(all.end(), s.fitted.begin(), s.fitted.end());
    all.insert(all.end(), s.held.begin(), s.held.end());
  }
  ASSERT_FALSE(all.empty());
  double median = median_of(all), worst = worst_of(all);
  bool met = median <= 0.05 && worst <= 0.10;
  std::string gap = known_gap("peak_memory");
  if (!gap.empty() && !met) {
    GTEST_SKIP() << "peak memory over " << all.size() << " published peaks: median " << 100 * median << " %, worst " << 100 * worst << " %. Known gap: " << gap;
  }
  EXPECT_LE(median, 0.05);
  EXPECT_LE(worst, 0.10);
}

// torch.compile's speed-up on torchtitan's eager Llama 3.1 8B FSDP runs is what fusing the element-wise ops saves:
// Table 1 (8 GPUs) 5,762 -> 6,667 TPS/GPU and Table 3 (128 GPUs) 5,605 -> 6,514 (torchtitan_2412). sapp prices the
// same rows with eager norms (the RMSNorm's nine memory passes, data/op_records.yaml) and fused; the ratio must agree
// within 3 %. Only the norms are priced eager: the eager RoPE of the same code (apply_rotary_emb's fp32 complex
// multiply) is not, so this checks the norms' share of what torch.compile fuses, not all of it.
TEST(Validation, TorchCompileSpeedupIsTheFusedElementwiseOps) {
  std::vector<Case> cases = load_cases();
  struct Pair {
    const char* run;
    double eager_tps, compiled_tps;
  };
  for (const Pair& pair : {Pair{"torchtitan-llama31-8b-fsdp8", 5762, 6667}, Pair{"torchtitan-llama31-8b-fsdp128", 5605, 6514}}) {
    auto it = std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.run.name == pair.run; });
    ASSERT_NE(it, cases.end()) << pair.run;
    ASSERT_TRUE(it->run.training.eager_norms) << pair.run;
    plan::Training compiled = it->run.training;
    compiled.eager_norms = false;
    double eager = cost::estimate_time(it->run.model, it->run.layout, it->run.training, it->hardware, it->run.overlap).tokens_per_s_per_device;
    double fused = cost::estimate_time(it->run.model, it->run.layout, compiled, it->hardware, it->run.overlap).tokens_per_s_per_device;
    double published = pair.compiled_tps / pair.eager_tps;
    std::printf("%s: torch.compile speed-up published %.3f, estimated %.3f\n", pair.run, published, fused / eager);
    EXPECT_NEAR(fused / eager, published, 0.03 * published) << pair.run;
  }
}

TEST(Validation, EveryPublishedLayoutFits) {
  const Report& r = report();
  std::string gap = known_gap("fits");
  if (!gap.empty() && r.over > 0) GTEST_SKIP() << r.over << " published layouts estimated over capacity:" << r.over_names << ". Known gap: " << gap;
  EXPECT_EQ(r.over, 0) << r.over_names;
}

TEST(Validation, EveryEstimateSaysWhetherItsDeviceAndPrecisionAreValidated) {
  // Sources: validation/runs.yaml has held-out H100 FP8 runs (NeMo 24.12) and no run at all on MI300X.
  auto h100 = cost::terms::validated(test::device("h100-sxm"), "FP8");
  EXPECT_TRUE(h100.validated) << h100.reason;
  auto mi300 = cost::terms::validated(test::device("mi300x"), "BF16");
  EXPECT_FALSE(mi300.validated);
  EXPECT_NE(mi300.reason.find("mi300x"), std::string::npos) << mi300.reason;
}

TEST(Validation, SearchRanksThePublishedDenseLayoutInTheTopFive) {
  std::vector<Case> cases = load_cases();
  int hits = 0, tried = 0;
  for (const auto& c : cases) {
    if (c.regime != "dense") continue;
    ++tried;
    search::Space space;
    space.tp = std::nullopt;
    space.pp = std::nullopt;
    space.ep = std::vector<int>{1};
    space.etp = std::vector<int>{1};
    space.recompute = {c.run.layout.recompute};
    space.zero = std::vector<int>{c.run.layout.zero};
    space.mbs = std::vector<int>{c.run.layout.mbs};
    if (c.framework == "megatron2021") {
      // The 2021 system: TP, PP and DP only, no interleaving, no SP, no CP.
      space.cp = std::vector<int>{1};
      space.vpp = std::vector<int>{1};
      space.sp = std::vector<bool>{false};
    } else {
      space.cp = std::nullopt;
      space.vpp = std::nullopt;
      space.sp = std::vector<bool>{true, false};
      space.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
    }
    search::Options opt;
    opt.threads = 2;
    opt.overlap = c.run.overlap;
    auto r = search::search(c.run.model, space, c.run.training, c.hardware, c.run.devices, c.hardware.memory_bytes, opt);
    cost::MemoryEstimate mem = cost::estimate_memory(c.run.model, c.run.layout, c.run.training, c.hardware.memory_bytes);
    double published = cost::estimate_time(c.run.model, c.run.layout, c.run.training, c.hardware, mem, c.run.overlap).step_s;
    bool found = false;
    std::size_t rank = 0;
    for (std::size_t i = 0; i < r.ranked.size() && i < 5; ++i) {
      const plan::Layout& l = r.ranked[i].layout;
      bool same = l.tp == c.run.layout.tp && l.pp == c.run.layout.pp && l.cp == c.run.layout.cp && l.vpp == c.run.layout.vpp;
      if (same || std::fabs(r.ranked[i].time.step_s - published) <= 0.03 * published) {
        found = true;
        rank = i + 1;
        break;
      }
    }
    std::printf("%-20s published %-30s %.3f s; best %-30s %.3f s; %s\n", c.run.name.c_str(), c.run.layout.describe().substr(0, 30).c_str(), published,
                r.ranked.empty() ? "none" : r.ranked[0].layout.describe().substr(0, 30).c_str(), r.ranked.empty() ? 0.0 : r.ranked[0].time.step_s,
                found ? ("in the top 5 (rank " + std::to_string(rank) + ")").c_str() : "NOT in the top 5");
    // runs.yaml marks the known misses (rank_miss); those must still miss, so a mark cannot outlive the disagreement.
    EXPECT_EQ(found, !c.rank_miss) << c.run.name << (c.rank_miss ? ": now ranks in the top 5; remove rank_miss" : ": not in the top 5");
    hits += found ? 1 : 0;
  }
  std::printf("%d of %d published dense layouts ranked in the top 5\n", hits, tried);
}

// Spearman's rank correlation with tied values given their mean rank (a published table's equal step times).
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<double> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      double below = 0, equal = 0;
      for (double x : v) {
        below += x < v[i] ? 1 : 0;
        equal += x == v[i] ? 1 : 0;
      }
      r[i] = below + (equal - 1) / 2;
    }
    return r;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ma += ra[i] / n;
    mb += rb[i] / n;
  }
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0.0;
}

// The ranking check: a published sweep of layouts of one model on one machine (KempnerForge, 7B on H200, FSDP and TP
// mixes from 1 to 32 GPUs), estimated vs measured throughput per GPU. Spearman >= 0.8 is the bar (a layout search
// needs the order right more than the values).
TEST(Validation, RanksAPublishedSweepOfLayouts) {
  nlohmann::json tree = io::read_tree(runs_file());
  const auto& sweep = tree.at("sweeps").at("kempnerforge_7b_h200");
  model::Model m = test::bundled(sweep.at("model").get<std::string>());
  hardware::Hardware hw = test::device(sweep.at("hardware").get<std::string>());
  const auto& fw = cost::terms::framework_profile(sweep.at("framework").get<std::string>());
  std::vector<double> est, meas;
  std::printf("\n%-8s %-4s %-40s %10s %10s\n", "gpus", "tp", "layout", "measured", "estimated");
  for (const auto& row : sweep.at("rows")) {
    long long gpus = row.at(0).get<long long>();
    plan::Layout l;
    l.tp = row.at(1).get<int>();
    l.sp = false;
    l.dp = static_cast<int>(gpus / l.tp);
    l.mbs = sweep.at("mbs").get<int>();
    l.micro_batches = sweep.at("micro_batches").get<int>();
    l.zero = l.dp > 1 ? 3 : 0;
    l.recompute = plan::parse_recompute(sweep.at("recompute").get<std::string>(), "sweep recompute");
    plan::Training t;
    t.seq = sweep.at("seq").get<long long>();
    t.global_batch = 1LL * l.dp * l.mbs * l.micro_batches;
    cost::terms::apply_profile(fw, t);
    cost::Overlap o = fw.overlap;
    cost::StepTime st = cost::estimate_time(m, l, t, hw, o);
    double measured = row.at(2).get<double>() / static_cast<double>(gpus);
    est.push_back(st.tokens_per_s_per_device);
    meas.push_back(measured);
    std::printf("%-8lld %-4d %-40s %10.0f %10.0f\n", gpus, l.tp, l.describe().substr(0, 40).c_str(), measured, st.tokens_per_s_per_device);
  }
  double rho = spearman(est, meas);
  std::printf("Spearman(estimated, measured tokens/s per GPU) = %.3f over %zu layouts\n", rho, est.size());
  std::string gap = known_gap("ranking_kempnerforge");
  if (!gap.empty() && rho < 0.8) {
    GTEST_SKIP() << "Spearman " << rho << ". Known gap: " << gap;
  }
  EXPECT_GE(rho, 0.8);
}

TEST(Validation, SpearmanAveragesTiedRanks) {
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0, 1e-12);
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0, 1e-12);
  // Ranks (0.5, 0.5, 2) and (0, 1, 2) about their means 1 and 1: co-deviation sum 1.5, squared deviations 1.5 and 2.
  EXPECT_NEAR(spearman({5, 5, 7}, {1, 2, 3}), 1.5 / std::sqrt(1.5 * 2.0), 1e-12);
}

// The ranking check on the runs rows that form one published sweep of layouts (`sweep:` in runs.yaml: one problem,
// one cluster, several layouts): Spearman between estimated and measured step times, bar 0.8 as for the sweep
// above; a sweep listed under known_gaps as ranking_<sweep> is a skipped case that states the figure.
TEST(Validation, RanksTheLayoutsOfEachPublishedSweepOfRuns) {
  const Report& r = report();
  for (const std::string& line : r.sweep_lines) std::printf("%s\n", line.c_str());
  ASSERT_FALSE(r.sweeps.empty()) << "no `sweep:` rows in " << runs_file();
  std::string gaps;
  for (const auto& [name, steps] : r.sweeps) {
    ASSERT_GE(steps.first.size(), 3u) << name << ": a sweep needs three layouts or more";
    const double rho = spearman(steps.first, steps.second);
    std::printf("%s: Spearman(estimated, measured step) = %.3f over %zu layouts\n", name.c_str(), rho, steps.first.size());
    if (rho >= 0.8) continue;
    const std::string gap = known_gap("ranking_" + name);
    EXPECT_FALSE(gap.empty()) << name << ": Spearman " << rho << " below 0.8";
    gaps += fmt::format("{}: Spearman {:.2f}. Known gap: {} ", name, rho, gap);
  }
  if (!gaps.empty()) GTEST_SKIP() << gaps;
}

// Every published expert layout against sapp's best candidate under the same constraints (the run's device count,
// batch, micro-batch size, recompute, ZeRO stage, dispatcher; TP, PP, VPP and EP searched): within 10 %, or the
// difference printed with the terms that make it.
TEST(Validation, PublishedExpertLayoutsAgainstTheBestCandidate) {
  std::vector<Case> cases = load_cases();
  int within = 0, total = 0;
  std::string misses;
  for (const auto& c : cases) {
    if (c.regime != "moe" || c.framework != "megatron_bridge") continue;
    ++total;
    search::Space space;
    space.tp = std::nullopt;
    space.pp = std::nullopt;
    space.vpp = std::nullopt;
    space.ep = std::nullopt;
    space.etp = std::vector<int>{1};
    space.cp = std::vector<int>{1};
    space.mbs = std::vector<int>{c.run.layout.mbs};
    space.zero = std::vector<int>{c.run.layout.zero};
    space.sp = std::nullopt;  // SP with TP > 1, as Megatron-Bridge runs it; both are searched
    space.recompute = {c.run.layout.recompute};
    search::Options opt;
    opt.threads = 2;
    opt.overlap = c.run.overlap;
    auto r = search::search(c.run.model, space, c.run.training, c.hardware, c.run.devices, c.hardware.memory_bytes, opt);
    cost::MemoryEstimate mem = cost::estimate_memory(c.run.model, c.run.layout, c.run.training, c.hardware.memory_bytes);
    double published = cost::estimate_time(c.run.model, c.run.layout, c.run.training, c.hardware, mem, c.run.overlap).step_s;
    double best = r.ranked.empty() ? published : r.ranked[0].time.step_s;
    double gain = published / best - 1.0;
    bool ok = gain <= 0.10;
    within += ok ? 1 : 0;
    std::printf("%-30s published %-44s %7.2f s; best %-44s %7.2f s (%+.1f %%)%s\n", c.run.name.c_str(), c.run.layout.describe().substr(0, 44).c_str(),
                published, r.ranked.empty() ? "none" : r.ranked[0].layout.describe().substr(0, 44).c_str(), best, 100 * gain, ok ? "" : "  > 10 %");
    if (!ok) {
      // The difference, term by term (seconds per step): what makes the best candidate faster in sapp's model.
      const cost::Breakdown& a = cost::estimate_time(c.run.model, c.run.layout, c.run.training, c.hardware, mem, c.run.overlap).breakdown;
      const cost::Breakdown& b = r.ranked[0].time.breakdown;
      std::printf("    published vs best: compute %.2f/%.2f recompute %.2f/%.2f TP %.2f/%.2f EP %.2f/%.2f DP %.2f/%.2f PP %.2f/%.2f bubble %.2f/%.2f\n",
                  a.compute_s, b.compute_s, a.recompute_s, b.recompute_s, a.tp_comm_s, b.tp_comm_s, a.ep_comm_s, b.ep_comm_s, a.dp_comm_s, b.dp_comm_s,
                  a.pp_comm_s, b.pp_comm_s, a.bubble_s, b.bubble_s);
      misses += " " + c.run.name;
    }
  }
  std::printf("%d of %d published Megatron-Bridge expert layouts within 10 %% of sapp's best candidate\n", within, total);
  std::string gap = known_gap("expert_layouts");
  if (!gap.empty() && within < total) GTEST_SKIP() << total - within << " published expert layouts beyond 10 %:" << misses << ". Known gap: " << gap;
  EXPECT_EQ(within, total) << misses;
}

}  // namespace
