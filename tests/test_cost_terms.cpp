// cost/terms: the named home of step-level terms, framework profiles, recompute modules and validation status, and
// the explanation printed from the same pass as the arithmetic.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/files.hpp"
#include "cost/terms.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"

using namespace sapp;

namespace {

// Megatron's recompute_modules (transformer_config.py): `mlp` recomputes a dense MLP's internals, `moe_act` the
// routed experts' activation; an unknown name is refused with the known ones listed.
TEST(CostTerms, RecomputeModulesMapToOpRecordSwitches) {
  auto sw = cost::terms::recompute_switches({"mla_up_proj", "moe_act"});
  EXPECT_EQ(sw, (std::vector<std::string>{"attn_up", "act"}));
  auto mlp = cost::terms::recompute_switches({"mlp"});
  EXPECT_NE(std::find(mlp.begin(), mlp.end(), "mlp"), mlp.end());
  EXPECT_EQ(std::find(mlp.begin(), mlp.end(), "act"), mlp.end());  // moe_act is the experts', not the dense MLP's
  try {
    cost::terms::recompute_switches({"attention"});
    FAIL() << "an unknown module was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mla_up_proj"), std::string::npos) << e.what();
  }
  // Every switch a module names exists in the op records.
  const model::OpRecords& rec = *test::catalog().records;
  for (const char* m : {"core_attn", "mla_up_proj", "moe_act", "layernorm", "mlp", "moe", "shared_experts", "torchtitan_op_sac", "hyperparallel_selective"})
    for (const auto& s : cost::terms::recompute_switches({m})) EXPECT_GE(rec.switch_index(s), 0) << m << " -> " << s;
}

TEST(CostTerms, FrameworkProfilesAreNamedAndCited) {
  for (const auto& name : cost::terms::framework_names()) {
    const auto& p = cost::terms::framework_profile(name);
    EXPECT_FALSE(p.source.empty()) << name;
    EXPECT_GE(p.overlap.tp, 0.0);
    EXPECT_LE(p.overlap.tp, 1.0);
  }
  EXPECT_THROW(cost::terms::framework_profile("deepspeed-ulysses-9"), Error);
  // data/frameworks.yaml states what the sources say: NeMo's userbuffers TP overlap is the constant the Megatron
  // reader uses for --tp-comm-overlap; torchtitan's float8 is torchao's; MindSpore accumulates fp16 gradients.
  EXPECT_EQ(cost::terms::framework_profile("nemo").overlap.tp, cost::terms::kUserbuffersTpOverlap);
  EXPECT_TRUE(cost::terms::framework_profile("megatron_bridge").fp8_param_gather);
  EXPECT_FALSE(cost::terms::framework_profile("torchtitan").fp8_transformer_engine);
  EXPECT_EQ(cost::terms::framework_profile("mindformers").grad_bytes, 2.0);
  EXPECT_EQ(cost::terms::framework_profile("megatron").optimizer_bytes, 12.0);  // the defaults' Megatron mixed precision
  // Megatron-LM hides no TP collective unless --tp-comm-overlap; HyperParallel runs TP inline and its pipeline
  // scheduler's sends block (overlap_p2p False).
  EXPECT_EQ(cost::terms::framework_profile("megatron").overlap.tp, 0.0);
  EXPECT_EQ(cost::terms::framework_profile("hyperparallel").overlap.tp, 0.0);
  EXPECT_EQ(cost::terms::framework_profile("hyperparallel").overlap.pp, 0.0);
}

TEST(CostTerms, AFrameworkFileIsReadKeyByKey) {
  const std::string dir = test::temp_dir();
  auto refused = [&](const std::string& text, const std::string& names) {
    test::write_file(dir + "/f.yaml", text);
    try {
      (void)cost::terms::load_framework_profiles(dir + "/f.yaml");
      return std::string("accepted");
    } catch (const Error& e) {
      const std::string what = e.what();
      return what.find(names) != std::string::npos && what.find("f.yaml") != std::string::npos ? std::string() : what;
    }
  };
  std::string defaults = io::read_text(io::data_dir() + "/frameworks.yaml");
  defaults = defaults.substr(0, defaults.find("\nprofiles:"));
  EXPECT_EQ(refused(defaults + "\nprofiles:\n  x: {source: s, overlap: {tp: 1.5}}\n", "tp"), "");
  EXPECT_EQ(refused(defaults + "\nprofiles:\n  x: {source: s, grad_byte: 2}\n", "grad_byte"), "");
  EXPECT_EQ(refused(defaults + "\nprofiles:\n  x: {source: s, selective_modules: [attention]}\n", "selective_modules"), "");
  EXPECT_EQ(refused(defaults + "\nprofiles:\n  x: {overlap: {tp: 0}}\n", "source"), "");
  test::write_file(dir + "/f.yaml", defaults + "\nprofiles:\n  x: {source: s, overlap: {tp: 0.25}, param_bytes: 4}\n");
  const auto read = cost::terms::load_framework_profiles(dir + "/f.yaml");
  ASSERT_EQ(read.size(), 1U);
  EXPECT_EQ(read[0].overlap.tp, 0.25);
  EXPECT_EQ(read[0].overlap.dp, 0.9);  // the default's
  EXPECT_EQ(read[0].param_bytes, 4.0);
}

// validation/runs.yaml: NeMo 24.12 H100 FP8 dense rows held out within the target, and the H100 BF16 rows; B300
// MXFP8 MoE rows and the 500 W H100's Float8 rows outside it; no FP8 run on Ascend 910B.
TEST(CostTerms, ValidatedSaysWhyNot) {
  EXPECT_TRUE(cost::terms::validated(test::device("h100-sxm"), "FP8").validated);
  auto b300 = cost::terms::validated(test::device("b300"), "FP8");
  EXPECT_FALSE(b300.validated);
  EXPECT_NE(b300.reason.find("median"), std::string::npos) << b300.reason;
  auto h100_96g_fp8 = cost::terms::validated(test::device("h100-96g"), "FP8");  // torchtitan's Float8 runs, median 10.1 %
  EXPECT_FALSE(h100_96g_fp8.validated);
  EXPECT_NE(h100_96g_fp8.reason.find("median"), std::string::npos) << h100_96g_fp8.reason;
  auto h100_bf16 = cost::terms::validated(test::device("h100-sxm"), "BF16");  // 21 BF16 runs, median 8.8 %
  EXPECT_FALSE(h100_bf16.validated);
  EXPECT_NE(h100_bf16.reason.find("median 8.8 %"), std::string::npos) << h100_bf16.reason;
  EXPECT_TRUE(cost::terms::validated(test::device("a100-80g"), "BF16").validated);
  auto fp8 = cost::terms::validated(test::device("ascend-910b"), "FP8");
  EXPECT_FALSE(fp8.validated);
  EXPECT_NE(fp8.reason.find("FP8"), std::string::npos) << fp8.reason;
}

// The explanation lists memory and time terms of a stage from the same pass that prices the step: the step it
// prints is the step estimate_time returns, and the last stage names the LM head and loss terms.
TEST(CostTerms, ExplainListsMemoryAndTimeFromTheSamePass) {
  model::Model m = test::bundled("llama3-8b");
  hardware::Hardware hw = test::device("b200");
  plan::Training t;
  t.seq = 8192;
  t.global_batch = 64;
  plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.pp = 2;
  l.dp = 2;
  l.micro_batches = 32;
  auto lines = cost::explain_stage_terms(m, l, t, hw, {}, 1);
  std::string all;
  for (const auto& s : lines) all += s + "\n";
  double step = cost::estimate_time(m, l, t, hw).step_s;
  EXPECT_NE(all.find(fmt::format("step {:.3f} s", step)), std::string::npos) << all;
  EXPECT_NE(all.find("LM head"), std::string::npos) << all;
  EXPECT_NE(all.find("params"), std::string::npos) << all;
  EXPECT_NE(all.find("validated: false"), std::string::npos) << all;  // BF16 on B200 is not validated
  EXPECT_NE(all.find("model: llama layers: 32 x decoder (GQA attention, dense FFN)"), std::string::npos) << all;
  // An MoE model says its routing as priced: DeepSeek-V3's 256 experts, top-8, one shared, 8 groups of 4 per token.
  model::Model ds = test::bundled("deepseek-v3");
  plan::Layout e;
  e.ep = 8;
  e.dp = 8;
  std::string moe;
  for (const auto& s : cost::explain_stage_terms(ds, e, t, hw, {}, 0)) moe += s + "\n";
  EXPECT_NE(moe.find("3 x dense (MLA attention, dense FFN), 58 x moe (MLA attention, MoE FFN), 1 x moe (MLA attention, MoE FFN, MTP)"), std::string::npos)
      << moe;
  EXPECT_NE(moe.find("experts: 256 routed, top-8, width 2048, 1 shared, 8 groups of which 4 per token"), std::string::npos) << moe;
}

}  // namespace
