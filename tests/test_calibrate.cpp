// Calibration: a planted efficiency scale is recovered, each run is priced with what its system overlapped, and the
// shipped factors are the optimum of their fitting runs.
#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/calibrate.hpp"
#include "cost/terms.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;
using test::training;

// A run "measured" on `planted`: `model` on `devices` GPUs at `global_batch` sequences of `seq`, TP / PP / CP as
// given, the rest data parallel, full recompute; its step time is the estimate on the planted device.
cost::MeasuredRun planted_run(const hardware::Hardware& planted, const char* model, int devices, long long global_batch, long long seq, int tp, int pp,
                              int cp) {
  cost::MeasuredRun r;
  r.name = fmt::format("{} tp{} pp{} cp{} seq{}", model, tp, pp, cp, seq);
  r.model = test::bundled(model);
  r.devices = devices;
  r.training = training(global_batch, seq);
  r.training.attention_kernel = plan::AttentionKernel::Fused;  // the kernel whose efficiency is planted
  r.layout.tp = tp;
  r.layout.pp = pp;
  r.layout.cp = cp;
  r.layout.dp = devices / (tp * pp * cp);
  r.layout.micro_batches = static_cast<int>(global_batch / r.layout.dp);
  r.layout.sp = tp > 1;
  r.layout.recompute = plan::Recompute::Full;
  r.step_time_s = cost::estimate_time(r.model, r.layout, r.training, planted).step_s;
  return r;
}

// `hw` with its BF16 GEMM and memory efficiencies times `compute` and its attention efficiency times `attention`.
hardware::Hardware planted_device(const hardware::Hardware& hw, double compute, double attention) {
  hardware::Hardware out = hw;
  out.efficiency.gemm *= compute;
  out.efficiency.memory *= compute;
  out.efficiency.attention *= attention;
  return out;
}

TEST(Calibrate, RecoversAPlantedEfficiencyScale) {
  // Runs "measured" on a device whose compute is 0.7x as efficient as the catalog says: calibration recovers 0.7.
  auto hw = test::device("a100-80g");
  const hardware::Hardware slow = planted_device(hw, 0.7, 0.7);
  std::vector<cost::MeasuredRun> runs;
  for (auto [name, tp, pp] : std::vector<std::tuple<const char*, int, int>>{{"llama3-8b", 1, 1}, {"llama3-8b", 2, 2}, {"llama3-70b", 8, 2}}) {
    runs.push_back(planted_run(slow, name, 16, 64, 4096, tp, pp, 1));
  }
  auto c = cost::calibrate(runs, hw);
  EXPECT_NEAR(c.scale, 0.7, 0.01);
  for (double e : c.errors_after) EXPECT_LT(std::fabs(e), 0.02);
}

// Attention fitted apart: runs on a device whose GEMMs and memory are 0.9x and whose attention kernel is 0.6x as
// efficient as the catalog says, at sequences from 4k (attention a small share) to 128k (most of the work): the
// two scales are recovered.
TEST(Calibrate, RecoversAnAttentionScaleFittedApart) {
  auto hw = test::device("h100-sxm");
  const hardware::Hardware planted = planted_device(hw, 0.9, 0.6);
  std::vector<cost::MeasuredRun> runs;
  for (auto [seq, cp] : std::vector<std::pair<long long, int>>{{4096, 1}, {16384, 1}, {65536, 4}, {131072, 8}}) {
    runs.push_back(planted_run(planted, "llama3-8b", 8, 8, seq, 1, 1, cp));
  }
  auto c = cost::calibrate(runs, hw, true);
  EXPECT_NEAR(c.scale, 0.9, 0.01);
  EXPECT_NEAR(c.attention_scale, 0.6, 0.01);
  for (double e : c.errors_after) EXPECT_LT(std::fabs(e), 0.01);
  auto one = cost::calibrate(runs, hw);  // one scale for both cannot fit every sequence
  double worst = 0;
  for (double e : one.errors_after) worst = std::max(worst, std::fabs(e));
  EXPECT_GT(worst, 0.03);
}

TEST(Calibrate, EachRunIsPricedWithWhatItsSystemOverlapped) {
  // A run's `overlap:` block reaches the estimate: the same run with TP overlap 0.9 is faster than with the
  // default 0.5, and a fraction outside [0, 1] is refused with the file and key.
  std::string runs = R"(runs:
  - {name: a, model: llama3-70b, devices: 64, global_batch: 128, seq: 4096, tp: 8, pp: 2, mbs: 1, overlap: {tp: 0.9, dp: 0.5}, step_time_s: 10}
  - {name: b, model: llama3-70b, devices: 64, global_batch: 128, seq: 4096, tp: 8, pp: 2, mbs: 1, step_time_s: 10}
)";
  auto parsed = cost::runs_from_json(test::parse_yaml_for_test(runs), "runs.yaml", test::catalog());
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_DOUBLE_EQ(parsed[0].overlap.tp, 0.9);
  EXPECT_DOUBLE_EQ(parsed[0].overlap.dp, 0.5);
  EXPECT_DOUBLE_EQ(parsed[1].overlap.tp, cost::Overlap{}.tp);
  auto c = cost::calibrate(parsed, test::device("h100-sxm"));
  EXPECT_LT(c.errors_before[0], c.errors_before[1]);  // same measured time, faster estimate with more overlap
  std::string bad = R"(runs:
  - {name: a, model: llama3-70b, devices: 64, global_batch: 128, seq: 4096, tp: 8, pp: 2, overlap: {tp: 1.5}, step_time_s: 10}
)";
  try {
    (void)cost::runs_from_json(test::parse_yaml_for_test(bad), "runs.yaml", test::catalog());
    FAIL() << "an overlap of 1.5 was accepted";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("runs.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("runs[0].overlap.tp"), std::string::npos) << what;
    EXPECT_NE(what.find("1.5"), std::string::npos) << what;
  }
}

// A measured run may name its framework: its profile prices the run (NeMo FP8: BF16 gradients, tp-comm overlap,
// Megatron's core-attention selective), and keys the run states win over it.
TEST(Calibrate, ARunsFrameworkProfilePricesIt) {
  nlohmann::json runs = nlohmann::json::parse(R"({"runs": [
    {"name": "nemo", "model": "llama3-8b", "framework": "nemo", "devices": 8, "global_batch": 64, "seq": 4096, "tp": 1, "pp": 1,
     "fp8": true, "recompute": "selective", "step_time_s": 3.0},
    {"name": "stated", "model": "llama3-8b", "framework": "nemo", "devices": 8, "global_batch": 64, "seq": 4096, "tp": 1, "pp": 1,
     "fp8": true, "grad_bytes": 4, "recompute_modules": ["layernorm"], "overlap": {"tp": 0.2}, "step_time_s": 3.0}]})");
  auto read = cost::runs_from_json(runs, "runs.yaml", test::catalog());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].training.gradient_bytes(), 2);                                       // grad_reduce_in_fp32 False under FP8
  EXPECT_EQ(read[0].overlap.tp, cost::terms::framework_profile("nemo").overlap.tp);      // userbuffers TP overlap
  EXPECT_EQ(read[0].training.recompute_modules, std::vector<std::string>{"core_attn"});  // Megatron's selective
  EXPECT_EQ(read[1].training.gradient_bytes(), 4);
  EXPECT_EQ(read[1].overlap.tp, 0.2);
  EXPECT_EQ(read[1].training.recompute_modules, std::vector<std::string>{"norm"});
  runs["runs"][0]["framework"] = "megatron-lm";
  EXPECT_THROW(cost::runs_from_json(runs, "runs.yaml", test::catalog()), Error);
}

// The attention kernel and eager norms: what the run states (auto when it says nothing).
TEST(Calibrate, ARunStatesItsAttentionKernelAndEagerOps) {
  nlohmann::json runs = nlohmann::json::parse(R"({"runs": [
    {"name": "titan", "model": "llama3-8b", "framework": "torchtitan", "devices": 8, "global_batch": 16, "seq": 8192, "tp": 1, "pp": 1,
     "zero": 3, "eager_norms": true, "attention_kernel": "torch_sdpa", "tokens_per_s_per_device": 5762},
    {"name": "fused", "model": "llama3-8b", "framework": "torchtitan", "devices": 8, "global_batch": 16, "seq": 8192, "tp": 1, "pp": 1,
     "zero": 3, "tokens_per_s_per_device": 5762}]})");
  auto read = cost::runs_from_json(runs, "runs.yaml", test::catalog());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].training.attention_kernel, plan::AttentionKernel::TorchSdpa);
  EXPECT_TRUE(read[0].training.eager_norms);
  EXPECT_EQ(read[1].training.attention_kernel, plan::AttentionKernel::Auto);
  EXPECT_FALSE(read[1].training.eager_norms);
  runs["runs"][1]["attention_kernel"] = "flash3";
  EXPECT_THROW(cost::runs_from_json(runs, "runs.yaml", test::catalog()), Error);
}

// An MoE run states its expert parallelism and dispatcher as the validation runs do; a dispatcher sapp does not
// price is an error naming the key.
TEST(Calibrate, AnExpertRunStatesItsDispatcher) {
  nlohmann::json runs = nlohmann::json::parse(R"({"runs": [
    {"name": "q30", "model": "qwen3-30b-a3b", "framework": "megatron_bridge", "devices": 16, "global_batch": 1024, "seq": 4096,
     "tp": 1, "pp": 1, "ep": 16, "fp8": true, "dispatcher": "deepep", "ep_overlap": true, "tokens_per_s_per_device": 8901}]})");
  auto read = cost::runs_from_json(runs, "runs.yaml", test::catalog());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].layout.ep, 16);
  EXPECT_TRUE(read[0].training.ep_dedup_per_node);
  EXPECT_EQ(read[0].overlap.ep, 1.0);
  runs["runs"][0]["dispatcher"] = "flex";
  try {
    (void)cost::runs_from_json(runs, "runs.yaml", test::catalog());
    ADD_FAILURE() << "a dispatcher named flex was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dispatcher"), std::string::npos) << e.what();
  }
}

// The efficiency factors shipped for a device are the calibration optimum of the runs they were fitted to
// (validation/runs-*.yaml, named in each hardware file): calibrating the shipped device on them again moves
// nothing. A change to the estimator that shifts those runs shows here, and the factors must be fitted again.
TEST(Calibrate, ShippedFactorsAreTheOptimumOfTheirFittingRuns) {
  struct Fit {
    const char* device;
    const char* runs;
    bool attention_apart;
  };
  for (const Fit& f : {Fit{"h100-sxm", "runs-h100-fp8-nemo2407.yaml", true}, Fit{"b200", "runs-b200-mxfp8-mb2511.yaml", false},
                       Fit{"gb300", "runs-gb300-mxfp8.yaml", false}, Fit{"b300", "runs-b300-mxfp8.yaml", false}}) {
    const std::string path = test::data_dir() + "/../validation/" + f.runs;
    auto runs = cost::runs_from_json(io::read_tree(path), path, test::catalog());
    cost::Calibration c = cost::calibrate(runs, test::device(f.device), f.attention_apart);
    EXPECT_NEAR(c.scale, 1.0, 0.01) << f.device << " on " << f.runs;
    EXPECT_NEAR(c.attention_scale, 1.0, 0.01) << f.device << " on " << f.runs;
  }
}

// A published run states the multi-token prediction layers it trained when they differ from the bundled config's
// (a Megatron launch without --mtp-num-layers trains none): DeepSeek-V3 without its MTP layer holds fewer parameters
// and steps faster; a negative count is refused with the file and key.
TEST(Calibrate, APublishedRunStatesItsMtpLayers) {
  auto rows = [](const std::string& mtp) {
    return nlohmann::json::parse(R"({"sources": {"s": "a source"}, "runs": [
      {"name": "v3", "regime": "moe", "source": "s", "framework": "megatron", "model": "deepseek-v3", )" +
                                 mtp +
                                 R"( "hardware": "gb200", "devices": 256, "global_batch": 2048, "seq": 4096, "tp": 1, "pp": 8, "ep": 32, "mbs": 1,
       "metric": "step_time_s", "measured": 8.4}]})");
  };
  auto bundled = cost::published_runs_from_json(rows(""), "runs.yaml", test::catalog());
  auto none = cost::published_runs_from_json(rows(R"("mtp_layers": 0,)"), "runs.yaml", test::catalog());
  ASSERT_EQ(bundled.size(), 1u);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(bundled[0].run.model.spec.mtp_depth.value_or(0), 1);
  EXPECT_EQ(none[0].run.model.spec.mtp_depth.value_or(0), 0);
  try {
    (void)cost::published_runs_from_json(rows(R"("mtp_layers": -1,)"), "runs.yaml", test::catalog());
    FAIL() << "mtp_layers -1 was accepted";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("runs.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("mtp_layers"), std::string::npos) << what;
  }
}
