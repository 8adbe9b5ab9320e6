// Validation against published training runs (validation/cases.yaml, with sources). Prints estimated vs measured
// per case, asserts the median absolute error is within 15 %, and that `sapp search` ranks the published layout
// (or one within 3 % of its estimated time) in its top 5.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "core/files.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;

namespace {

struct Case {
  std::string name, source;
  model::Model model;
  hardware::Hardware hw;
  plan::Training training;
  plan::Layout layout;
  long long gpus = 0;
  double measured = 0;
  bool megatron2021 = false;
  bool rank_miss = false;  // known: search does not rank the published layout in its top 5
  bool fitted = false;     // a catalog efficiency was fitted to this run (not a held-out check)
  cost::Overlap overlap;   // what the published system overlapped
  double h = 0, layers = 0;
};

std::vector<Case> load_cases() {
  std::string file = std::string(SAPP_SOURCE_DIR) + "/validation/cases.yaml";
  nlohmann::json tree = io::read_tree(file);
  std::vector<Case> out;
  for (const auto& c : tree.at("cases")) {
    Case v;
    v.name = c.at("name").get<std::string>();
    v.source = c.at("source").get<std::string>();
    v.megatron2021 = v.source == "narayanan2021";
    v.rank_miss = c.value("rank_miss", false);
    v.fitted = c.value("fitted", false);
    v.gpus = c.at("gpus").get<long long>();
    v.measured = c.at("measured").get<double>();
    v.training.seq = c.at("seq").get<long long>();
    v.training.global_batch = c.at("batch").get<long long>();
    plan::Layout& l = v.layout;
    l.tp = c.at("tp").get<int>();
    l.pp = c.at("pp").get<int>();
    l.cp = c.value("cp", 1);
    l.vpp = c.value("vpp", 1);
    l.mbs = c.value("mbs", 1);
    plan::derive_data_parallel(l, v.gpus, v.training.global_batch, v.name + ": gpus", v.name + ": batch");
    if (c.contains("model")) {
      v.model = test::bundled(c.at("model").get<std::string>());
    } else {
      // A GPT shape given by the table itself: 4h FFN, learned positions, tied embeddings, dropout 0.1.
      long long h = c.at("hidden").get<long long>();
      nlohmann::json cfg = {{"model_type", "gpt3"},
                            {"hidden_size", h},
                            {"num_attention_heads", c.at("heads")},
                            {"num_hidden_layers", c.at("layers")},
                            {"vocab_size", c.value("vocab", 51200)},
                            {"intermediate_size", 4 * h},
                            {"learned_position_embeddings", c.at("seq")},
                            {"tie_word_embeddings", true},
                            {"hidden_dropout", 0.1}};
      v.model = model::resolve(model::model_from_json(cfg, v.name), test::catalog().records, test::catalog().profiles);
      v.h = static_cast<double>(h);
      v.layers = c.at("layers").get<double>();
    }
    if (v.megatron2021) {
      // 2021 Megatron: fp16 on A100, eager attention, fp16 gradients, full recompute, no sequence parallelism, no
      // distributed optimizer.
      v.hw = test::device("a100-80g");
      v.training.flash_attention = false;  // 2021: eager attention
      v.training.grad_bytes = 2;           // fp16 gradients, all-reduced in fp16
      // 2021 Megatron overlapped no communication: TP all-reduces, the DP all-reduce after the backward and the
      // pipeline's blocking sends are all exposed.
      v.overlap.tp = 0;
      v.overlap.dp = 0;
      v.overlap.pp = 0;
      l.recompute = plan::Recompute::Full;
      l.zero = 0;
      l.sp = false;
    } else {
      // NeMo on H100: FP8 GEMMs, sequence parallelism with TP, distributed optimizer, no recompute.
      v.hw = test::device("h100-sxm");
      v.training.fp8 = true;
      v.training.grad_bytes = 2;  // NeMo's performance scripts set grad_reduce_in_fp32 = False for FP8 runs
      v.overlap.tp = 0.9;         // NeMo's performance recipes enable TP communication overlap (userbuffers)
      l.recompute = plan::Recompute::Off;
      l.zero = 1;
      l.sp = l.tp > 1;
    }
    out.push_back(std::move(v));
  }
  return out;
}

double predicted(const Case& c, const cost::StepTime& t) {
  if (!c.megatron2021) return t.tokens_per_s_per_device;
  double B = static_cast<double>(c.training.global_batch), s = static_cast<double>(c.training.seq), V = 51200;
  double flops = 96.0 * B * s * c.layers * c.h * c.h * (1.0 + s / (6.0 * c.h) + V / (16.0 * c.layers * c.h));
  return flops / (t.step_s * static_cast<double>(c.gpus)) / 1e12;
}

}  // namespace

TEST(Validation, PublishedRunsWithinFifteenPercentMedian) {
  std::vector<Case> cases = load_cases();
  ASSERT_GE(cases.size(), 10u);
  std::vector<double> errors, held_out;
  std::printf("\n%-20s %-13s %-36s %10s %10s %8s %s\n", "case", "source", "layout", "measured", "estimated", "error", "peak GiB (fits)");
  for (const auto& c : cases) {
    auto violations = plan::check_layout(c.model, c.layout, c.training, c.gpus);
    ASSERT_TRUE(violations.empty()) << c.name << ": " << violations.front().rule << ": " << violations.front().detail;
    cost::MemoryEstimate mem = cost::estimate_memory(c.model, c.layout, c.training, c.hw.memory_bytes);
    cost::StepTime t = cost::estimate_time(c.model, c.layout, c.training, c.hw, mem, c.overlap);
    double p = predicted(c, t);
    // A published run ran: its layout must fit sapp's memory model on its device.
    EXPECT_TRUE(mem.fits()) << c.name << ": the published layout is estimated at " << mem.peak_bytes / 1073741824.0 << " GiB";
    double err = (p - c.measured) / c.measured;
    errors.push_back(std::fabs(err));
    if (!c.fitted) held_out.push_back(std::fabs(err));
    std::printf("%-20s %-13s %-36s %10.1f %10.1f %+7.1f%% %.1f (%s)\n", c.name.c_str(), c.source.c_str(), c.layout.describe().substr(0, 36).c_str(), c.measured,
                p, 100 * err, mem.peak_bytes / 1073741824.0, mem.fits() ? "fits" : "over");
  }
  auto median_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  double median = median_of(errors);
  double median_held_out = median_of(held_out);
  std::printf(
      "median |error| %.1f%% over %zu cases, %.1f%% over the %zu held-out ones (metric: TFLOP/s per GPU for narayanan2021, tokens/s per GPU for NeMo)\n",
      100 * median, errors.size(), 100 * median_held_out, held_out.size());
  EXPECT_LE(median_held_out, 0.15);
  EXPECT_LE(median, 0.15);
}

TEST(Validation, SearchRanksThePublishedLayoutInTheTopFive) {
  std::vector<Case> cases = load_cases();
  int hits = 0;
  for (const auto& c : cases) {
    search::Space space;
    space.tp = std::nullopt;
    space.pp = std::nullopt;
    space.ep = std::vector<int>{1};
    space.etp = std::vector<int>{1};
    space.recompute = {c.layout.recompute};
    space.zero = std::vector<int>{c.layout.zero};
    space.mbs = std::vector<int>{c.layout.mbs};
    if (c.megatron2021) {
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
    opt.overlap = c.overlap;
    auto r = search::search(c.model, space, c.training, c.hw, c.gpus, c.hw.memory_bytes, opt);
    cost::MemoryEstimate mem = cost::estimate_memory(c.model, c.layout, c.training, c.hw.memory_bytes);
    double published = cost::estimate_time(c.model, c.layout, c.training, c.hw, mem, c.overlap).step_s;
    bool found = false;
    std::size_t rank = 0;
    for (std::size_t i = 0; i < r.ranked.size() && i < 5; ++i) {
      const plan::Layout& l = r.ranked[i].layout;
      bool same = l.tp == c.layout.tp && l.pp == c.layout.pp && l.cp == c.layout.cp && l.vpp == c.layout.vpp;
      if (same || std::fabs(r.ranked[i].time.step_s - published) <= 0.03 * published) {
        found = true;
        rank = i + 1;
        break;
      }
    }
    std::printf("%-20s published %-30s %.3f s; best %-30s %.3f s; %s\n", c.name.c_str(), c.layout.describe().substr(0, 30).c_str(), published,
                r.ranked.empty() ? "none" : r.ranked[0].layout.describe().substr(0, 30).c_str(), r.ranked.empty() ? 0.0 : r.ranked[0].time.step_s,
                found ? ("in the top 5 (rank " + std::to_string(rank) + ")").c_str() : "NOT in the top 5");
    // Every case ranks its published layout in the top 5 except the ones cases.yaml marks as known misses; those
    // must still miss, so a mark cannot outlive the disagreement it records.
    EXPECT_EQ(found, !c.rank_miss) << c.name << (c.rank_miss ? ": now ranks in the top 5; remove rank_miss" : ": not in the top 5");
    hits += found ? 1 : 0;
  }
  std::printf("%d of %zu published layouts ranked in the top 5\n", hits, cases.size());
}
