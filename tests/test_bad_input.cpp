// Bad input: every case exits non-zero with one line on stderr that names the file, key and value, never
// crashes, and leaves no output file behind.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "helpers.hpp"
#include "plan/layout.hpp"

namespace fs = std::filesystem;
using sapp::test::run_sapp;
using sapp::test::write_file;

namespace {

struct Case {
  std::string name;
  std::string args;               // after the subcommand's own required options
  std::vector<std::string> says;  // substrings the one error line must hold
  std::string env = "";
};

const char* kGood = R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":8,
  "num_key_value_heads":4,"vocab_size":1000,"intermediate_size":256})";

class BadInput : public ::testing::Test {
 protected:
  std::string dir = sapp::test::temp_dir();
  std::string file(const std::string& name, const std::string& text) {
    std::string p = dir + "/" + name;
    write_file(p, text);
    return p;
  }
  // A copy of the data folder with one file replaced.
  std::string data_with(const std::string& relative, const std::string& text) {
    static int copies = 0;
    std::string d = dir + "/data" + std::to_string(copies++);
    fs::copy(sapp::test::data_dir(), d, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    write_file(d + "/" + relative, text);
    return "SAPP_DATA_DIR=" + d;
  }
  void expect_refused(const Case& c) {
    std::string out = dir + "/result.json";
    bool own_output = c.args.find("--output") != std::string::npos;
    auto r = run_sapp(own_output ? c.args : c.args + " --output " + out, c.env);
    EXPECT_NE(r.status, 0) << c.name << ": exited 0";
    EXPECT_LT(r.status, 3) << c.name << ": not a clean refusal (status " << r.status << "): " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.name << ": left an output file";
    EXPECT_TRUE(r.out.empty()) << c.name << ": printed to stdout: " << r.out;
    std::string line = r.err;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    EXPECT_EQ(line.find('\n'), std::string::npos) << c.name << ": more than one line: " << r.err;
    for (const auto& s : c.says) EXPECT_NE(r.err.find(s), std::string::npos) << c.name << ": '" << s << "' not in: " << r.err;
  }
  std::string est(const std::string& model, const std::string& rest = "") {
    return "estimate --model " + model + " --devices 8 --global-batch 8 --seq 1024 " + rest;
  }
};

}  // namespace

TEST_F(BadInput, ModelFiles) {
  std::vector<Case> cases = {
      {"unknown bundled model", est("llama-9000"), {"--model", "llama-9000", "bundled"}},
      {"missing required field",
       est(file("m1.json", R"({"model_type":"llama","num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"intermediate_size":8})")),
       {"m1.json", "hidden_size", "required"}},
      {"malformed JSON", est(file("m2.json", R"({"model_type": "llama", "hidden_size": 64,)")), {"m2.json", "not valid JSON"}},
      {"malformed YAML", est(file("m3.yaml", "model_type: llama\nhidden_size: [64\n")), {"m3.yaml", "not valid YAML"}},
      {"wrong type",
       est(file("m4.json", R"({"model_type":"llama","hidden_size":"64","num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"intermediate_size":8})")),
       {"m4.json", "hidden_size", "\"64\""}},
      {"negative size",
       est(file("m5.json", R"({"model_type":"llama","hidden_size":-64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"intermediate_size":8})")),
       {"m5.json", "hidden_size", "positive", "-64"}},
      {"unknown model_type",
       est(file("m6.json",
                R"({"model_type":"frobnicator","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":10,"intermediate_size":8})")),
       {"m6.json", "model_type", "frobnicator"}},
      {"kv heads not dividing heads",
       est(file(
           "m7.json",
           R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":3,"vocab_size":10,"intermediate_size":8})")),
       {"m7.json", "num_key_value_heads", "3"}},
      {"MoE without width",
       est(file(
           "m8.json",
           R"({"model_type":"mixtral","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"num_local_experts":4,"num_experts_per_tok":2,"vocab_size":10})")),
       {"m8.json", "moe_intermediate_size"}},
      {"partial linear attention",
       est(file(
           "m9.json",
           R"({"model_type":"qwen3_next","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"intermediate_size":8,"linear_num_key_heads":2})")),
       {"m9.json", "linear_key_head_dim: linear attention states 1 of its 5", "linear_conv_kernel_dim"}},
      {"layer_types too short",
       est(file(
           "m10.json",
           R"({"model_type":"gpt_oss","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":8,"vocab_size":10,"num_local_experts":4,"experts_per_token":2,"intermediate_size":8,"sliding_window":16,"layer_types":["full_attention"]})")),
       {"m10.json", "layer_types", "lists 1 layers"}},
      {"unknown layer type",
       est(file(
           "m11.json",
           R"({"model_type":"gpt_oss","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"num_local_experts":4,"experts_per_token":2,"intermediate_size":8,"sliding_window":16,"layer_types":["full_attention","weird_attention"]})")),
       {"m11.json", "layer_types", "weird_attention"}},
      {"empty layer_types list",
       est(file(
           "m12.json",
           R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"intermediate_size":8,"layer_types":[]})")),
       {"m12.json", "layer_types", "[]"}},
      {"boolean that is not",
       est(file("m13.yaml",
                "model_type: llama\nhidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 8\nvocab_size: 10\nintermediate_size: 8\ntie_word_embeddings: "
                "maybe\n")),
       {"m13.yaml", "tie_word_embeddings", "maybe"}},
      {"empty model file", est(file("m14.json", "")), {"m14.json"}},
      {"MLA without its head dims",
       est(file(
           "m15.json",
           R"({"model_type":"deepseek_v3","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":10,"intermediate_size":8,"kv_lora_rank":16})")),
       {"m15.json", "qk_rope_head_dim"}},
  };
  for (const auto& c : cases) expect_refused(c);
}

TEST_F(BadInput, HardwareFiles) {
  std::string m = file("good.json", kGood);
  std::vector<Case> cases = {
      {"unknown device", est(m, "--hardware tpu-v9"), {"--hardware", "tpu-v9", "bundled"}},
      {"unknown key",
       est(m, "--hardware " +
                  file("h1.yaml", "peak_flops: 1e15\nmemory_gib: 80\nhbm_bandwidth: 3e12\nlevels: [{name: node, devices: 8, bandwidth: 4e11}]\nturbo: 2\n")),
       {"h1.yaml", "turbo", "unknown key"}},
      {"wrong type",
       est(m, "--hardware " + file("h2.yaml", "peak_flops: fast\nmemory_gib: 80\nhbm_bandwidth: 3e12\nlevels: [{name: node, devices: 8, bandwidth: 4e11}]\n")),
       {"h2.yaml", "peak_flops", "\"fast\""}},
      {"missing levels", est(m, "--hardware " + file("h3.yaml", "peak_flops: 1e15\nmemory_gib: 80\nhbm_bandwidth: 3e12\n")), {"h3.yaml", "levels"}},
      {"YAML off where a number goes",
       est(m, "--hardware " + file("h4.yaml", "peak_flops: 1e15\nmemory_gib: off\nhbm_bandwidth: 3e12\nlevels: [{name: node, devices: 8, bandwidth: 4e11}]\n")),
       {"h4.yaml", "memory_gib", "false"}},
      {"missing file", est(m, "--hardware " + dir + "/nope.yaml"), {"nope.yaml"}},
      {"efficiency above one",
       est(m,
           "--hardware " +
               file("h5.yaml",
                    "peak_flops: 1e15\nmemory_gib: 80\nhbm_bandwidth: 3e12\nlevels: [{name: node, devices: 8, bandwidth: 4e11}]\nefficiency: {gemm: 1.5}\n")),
       {"h5.yaml", "efficiency.gemm", "1.5"}},
  };
  for (const auto& c : cases) expect_refused(c);
}

TEST_F(BadInput, DataFiles) {
  std::string m = file("good.json", kGood);
  std::vector<Case> cases = {
      {"expression outside the grammar",
       est(m),
       {"op_records.yaml", "full_recompute", "__import__"},
       data_with("op_records.yaml",
                 sapp::io_replace_for_test("full_recompute: \"s * b * bc * h / tsp\"", "full_recompute: \"__import__('os').system('true')\""))},
      {"division by zero met inside the search's worker threads",
       "search --model " + m + " --devices 8 --global-batch 8 --seq 1024 --threads 2 -q",
       {"op_records.yaml", "work.norms.formula", "division by zero"},
       data_with("op_records.yaml",
                 sapp::io_replace_for_test("formula: \"n_norm * s * b * h * (((2 * (bc + 4) if bc < 4 else 0) + 20 + 2 * bc) if eager == 1 else 2 * bc)\"",
                                           "formula: \"n_norm * s * b * h * 2 * bc / (t - 2)\""))},
      {"FP8 search on a device without an FP8 rate",
       "search --model " + m + " --hardware a100-80g --devices 8 --global-batch 8 --seq 1024 --fp8 --threads 2 -q",
       {"a100-80g.yaml", "peak_flops_fp8"}},
      {"work term with a role the estimator does not know",
       est(m),
       {"op_records.yaml", "work.core_attention.role", "fused_magic"},
       data_with("op_records.yaml", sapp::io_replace_for_test("role: flash_attention", "role: fused_magic"))},
      {"slot formula without total",
       est(m),
       {"op_records.yaml", "slots.attn_replicated.formula", "total"},
       data_with("op_records.yaml", sapp::io_replace_for_test("formula: \"s * b * total / tsp\"\n    ops:\n      norm_in: \"bc * h\"\n      qkv_in",
                                                              "formula: \"s * b / tsp\"\n    ops:\n      norm_in: \"bc * h\"\n      qkv_in"))},
      {"profile unknown key",
       est(m),
       {"llama.yaml", "colour", "unknown key"},
       data_with("op_profiles/llama.yaml",
                 "model_types: [llama]\ncolour: blue\nkinds:\n  decoder: {ops: {att_mm: 4, att_bmm: 2, ffn_mm: 3, softmax: 1, norm: 2, tp_comm: 4, act: 1, "
                 "linrec: 0}}\n")},
      {"profile missing op count",
       est(m),
       {"llama.yaml", "kinds.decoder.ops", "linrec"},
       data_with("op_profiles/llama.yaml",
                 "model_types: [llama]\nkinds:\n  decoder: {ops: {att_mm: 4, att_bmm: 2, ffn_mm: 3, softmax: 1, norm: 2, tp_comm: 4, act: 1}}\n")},
      {"profile negative count",
       est(m),
       {"llama.yaml", "ffn_mm", "-3"},
       data_with("op_profiles/llama.yaml",
                 "model_types: [llama]\nkinds:\n  decoder: {ops: {att_mm: 4, att_bmm: 2, ffn_mm: -3, softmax: 1, norm: 2, tp_comm: 4, act: 1, linrec: 0}}\n")},
      // The commands' options read frameworks.yaml as they are built: refused there too, not an abort.
      {"framework profiles unreadable", est(m), {"frameworks.yaml"}, data_with("frameworks.yaml", "defaults: [unclosed\n")},
      {"data directory missing", est(m), {"frameworks.yaml", "cannot be opened"}, "SAPP_DATA_DIR=" + dir + "/no-such-data"},
      {"profile attention_bias naming no projection bias",
       est(m),
       {"llama.yaml", "attention_bias", "qkv_bias and/or o_bias"},
       data_with("op_profiles/llama.yaml",
                 "model_types: [llama]\nattention_bias: [q_bias]\nkinds:\n  decoder: {ops: {att_mm: 4, att_bmm: 2, ffn_mm: 3, softmax: 1, norm: 2, tp_comm: 4, "
                 "act: 1, "
                 "linrec: 0}}\n")},
  };
  for (const auto& c : cases) expect_refused(c);
}

TEST_F(BadInput, LayoutsAndOptions) {
  std::vector<Case> cases = {
      {"TP not dividing heads", "estimate --model llama3-8b --devices 6 --global-batch 8 --tp 3", {"layout", "tp/heads", "TP 3", "32"}},
      {"experts not divisible by EP", "estimate --model mixtral-8x7b --devices 6 --global-batch 6 --ep 3", {"layout", "experts/ep", "EP 3", "8"}},
      {"more stages than layers", "estimate --model llama3-8b --devices 64 --global-batch 64 --pp 64", {"layout", "layers < pp x vpp", "32 layers"}},
      {"global batch not divisible", "estimate --model llama3-8b --devices 8 --global-batch 12", {"--global-batch", "12", "DP x micro-batch size"}},
      {"sequence not divisible by 2 CP", "estimate --model llama3-8b --devices 8 --global-batch 8 --seq 1000 --cp 8", {"layout", "seq/cp", "1000"}},
      {"devices not a multiple", "estimate --model llama3-8b --devices 12 --global-batch 12 --tp 8", {"--devices", "12", "TP x PP x CP"}},
      {"EP on a dense model", "estimate --model llama3-8b --devices 8 --global-batch 8 --ep 2", {"layout", "ep on dense"}},
      {"zero TP degree", "estimate --model llama3-8b --devices 8 --global-batch 8 --tp 0", {"--tp", "0 is below the minimum of 1"}},
      {"zero PP degree in a search list", "search --model llama3-8b --devices 8 --global-batch 8 --pp 0,2", {"--pp", "0 is out of range", "1 to"}},
      {"ZeRO stage 4", "search --model llama3-8b --devices 8 --global-batch 8 --zero 4", {"--zero", "4 is out of range", "0 to 3"}},
      {"negative reserve", "estimate --model llama3-8b --devices 8 --global-batch 8 --reserve-gib -1", {"--reserve-gib", "-1"}},
      {"True as a recompute mode", "estimate --model llama3-8b --devices 8 --global-batch 8 --recompute True", {"--recompute", "True", "not a recompute mode"}},
      {"typo of full", "estimate --model llama3-8b --devices 8 --global-batch 8 --recompute fulll", {"--recompute", "fulll"}},
      {"explain a stage that does not exist", "estimate --model llama3-8b --devices 8 --global-batch 8 --explain --explain-stage 5", {"--explain", "stage 5"}},
      {"output folder missing",
       "estimate --model llama3-8b --devices 8 --global-batch 8 --output /nonexistent/dir/x.json --format json",
       {"x.json", "does not exist"}},
      {"interleaving without pipeline", "estimate --model llama3-8b --devices 8 --global-batch 8 --vpp 2", {"layout", "vpp without pp"}},
  };
  for (const auto& c : cases) expect_refused(c);
}

// A value of a hundred kilobytes in a config (a layout that is none) is refused on one line of at most 2000
// characters of message, saying how long it was, not echoed whole.
TEST_F(BadInput, AHugeValueIsNotEchoedWhole) {
  const std::string script = file("huge.sh",
                                  "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 64 --num-attention-heads 4 "
                                  "--vocab-size 100 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout \"(" +
                                      std::string(100000, 't') + "\"\n");
  expect_refused({"huge layout", "estimate --from " + script, {"--pipeline-model-parallel-layout", "characters in all"}});
  EXPECT_LT(run_sapp("estimate --from " + script).err.size(), 2200U);
}

TEST(RecomputeDimension, ActivationCheckpointSemantics) {
  using sapp::plan::Recompute;
  auto yaml = [](const std::string& text) { return sapp::io_yaml_for_test(text)["recompute"]; };
  EXPECT_EQ(sapp::plan::read_recompute_modes(yaml("recompute: off"), "x"),
            std::vector<sapp::plan::Recompute>{sapp::plan::Recompute::Off});  // YAML off is false
  EXPECT_EQ(sapp::plan::read_recompute_modes(yaml("recompute: auto"), "x"),
            (std::vector<sapp::plan::Recompute>{sapp::plan::Recompute::Off, sapp::plan::Recompute::Selective, sapp::plan::Recompute::Full}));
  EXPECT_EQ(sapp::plan::read_recompute_modes(yaml("recompute: [full, off, full]"), "x"),
            (std::vector<sapp::plan::Recompute>{sapp::plan::Recompute::Full, sapp::plan::Recompute::Off}));
  EXPECT_EQ(sapp::plan::read_recompute_modes(yaml("recompute: none"), "x"), std::vector<sapp::plan::Recompute>{sapp::plan::Recompute::Off});
  EXPECT_THROW(sapp::plan::read_recompute_modes(yaml("recompute: True"), "x"), sapp::Error);
  EXPECT_THROW(sapp::plan::read_recompute_modes(yaml("recompute: []"), "x"), sapp::Error);
  EXPECT_THROW(sapp::plan::read_recompute_modes(yaml("recompute: fast"), "x"), sapp::Error);
  EXPECT_EQ(sapp::plan::read_activation_checkpoint_mode(nlohmann::json(), "x"), sapp::plan::Recompute::Off);
  EXPECT_THROW(sapp::plan::read_activation_checkpoint_mode(yaml("recompute: [off]"), "x"), sapp::Error);
  EXPECT_THROW(sapp::plan::read_activation_checkpoint_mode(yaml("recompute: auto"), "x"), sapp::Error);
  EXPECT_THROW(sapp::plan::read_activation_checkpoint_mode(yaml("recompute: true"), "x"), sapp::Error);
}
