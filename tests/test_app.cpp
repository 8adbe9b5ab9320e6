// The app layer and the command line over it: one request per command filled the same way by every front end,
// exit codes a script can rely on, the same layout rules for estimate and search, the top rows and folded twins
// of a search, and the answers given when something does not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/app.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/terms.hpp"
#include "helpers.hpp"

using namespace sapp;
using sapp::test::run_sapp;

namespace {

const std::string kJob = " --model llama3-8b --hardware h100-sxm --devices 8 --global-batch 16 --seq 4096";

search::Result search_llama(std::size_t top, bool fold, int threads) {
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t = app::with_sequence(4096);
  t.global_batch = 64;
  search::Options o;
  o.threads = threads;
  o.top = top;
  o.fold = fold;
  return search::search(m, search::Space{}, t, hw, 64, hw.memory_bytes, o);
}

}  // namespace

TEST(ExitCodes, FitsIsZeroDoesNotFitIsThree) {
  EXPECT_EQ(run_sapp("estimate" + kJob + " --tp 2").status, 0);
  // Llama 3 70B on one node without sharding: 70.6e9 x 18 B/param of weights, gradients and optimizer alone.
  auto r = run_sapp("estimate --model llama3-70b --devices 8 --global-batch 8 --tp 8");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos) << r.out;
}

TEST(ExitCodes, UsageIsTwoBadInputIsOne) {
  EXPECT_EQ(run_sapp("estimate --model llama3-8b --global-batch 8").status, 2);  // --devices missing
  EXPECT_EQ(run_sapp("estimate --no-such-option" + kJob).status, 2);
  EXPECT_EQ(run_sapp("estimate" + kJob + " --tp 3").status, 1);  // 32 heads
  // --emit writes the config to --output; without one it is a usage error, not a silent no-op.
  auto emit = run_sapp("estimate" + kJob + " --emit megatron");
  EXPECT_EQ(emit.status, 2);
  EXPECT_NE(emit.err.find("--emit"), std::string::npos) << emit.err;
  // A schedule the format has no keys for is refused before anything runs, naming it (not written as another).
  const std::string dir = test::temp_dir();
  auto seq = run_sapp("search --model llama3-8b --devices 16 --global-batch 64 --seq 32768 --pp 4 --seq-split 4 -q --emit megatron -o " + dir + "/a.sh");
  EXPECT_EQ(seq.status, 2);
  EXPECT_NE(seq.err.find("--emit megatron: the sequence pipeline (seq_split 4)"), std::string::npos) << seq.err;
  auto dpv = run_sapp("search --model llama3-8b --devices 16 --global-batch 64 --pp 4 --vpp 2 --dualpipe-v -q --emit hyperparallel -o " + dir + "/b.yaml");
  EXPECT_EQ(dpv.status, 2);
  EXPECT_NE(dpv.err.find("--emit hyperparallel: hyperparallel has no DualPipe-V schedule"), std::string::npos) << dpv.err;
  auto fp8 = run_sapp("estimate" + kJob + " --fp8 --emit mindformers -o " + dir + "/c.yaml");
  EXPECT_EQ(fp8.status, 2);
  EXPECT_NE(fp8.err.find("--emit mindformers: mindformers has no FP8 training key"), std::string::npos) << fp8.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.yaml"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/a.sh"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/b.yaml"));
}

TEST(ExitCodes, NothingFitsIsThreeWithTheRejectionsAndTheClosestLayouts) {
  // Llama 3.1 405B on 8 H100: 405e9 x 16 B/param over 8 devices is 810 GB before any activation.
  auto r = run_sapp("search --model llama3.1-405b --devices 8 --global-batch 8 --top 3 -q");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("rejected: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out of memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closest (least memory):"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(run_sapp("search --model llama3.1-405b --devices 8 --global-batch 8 --top 3 -q -f json").out);
  ASSERT_EQ(j["closest"].size(), 3u);
  EXPECT_GT(j["closest"][0]["over_capacity_bytes"].get<double>(), 0);
  EXPECT_LE(j["closest"][0]["peak_memory_bytes"].get<double>(), j["closest"][1]["peak_memory_bytes"].get<double>());
}

TEST(ExitCodes, AStatedDegreeThatDividesNothingIsCounted) {
  auto r = run_sapp("search" + kJob + " --tp 3 -q");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.out.find("device count"), std::string::npos) << r.out;
  // Nothing was priced, so nothing "does not fit": the report says no layout is valid, not that memory ran out.
  EXPECT_NE(r.out.find("no layout is valid on"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GiB per device"), std::string::npos) << r.out;
}

TEST(Suggestions, EachSuggestedChangeFitsWhenRun) {
  // Llama 3 70B at TP 8 on 16 devices does not fit with ZeRO 1 and no recompute; every change sapp suggests,
  // run as stated, must fit.
  std::string job = "estimate --model llama3-70b --devices 16 --global-batch 16 --tp 8";
  auto r = run_sapp(job + " -f json");
  ASSERT_EQ(r.status, 3) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["suggestions"].empty());
  for (const auto& s : j["suggestions"]) {
    std::string change = s["change"].get<std::string>();
    auto again = run_sapp(job + " " + change);  // an option given twice takes the last value
    EXPECT_EQ(again.status, 0) << change << ": " << again.out << again.err;
  }
}

TEST(LayoutRules, EstimateRefusesTpAcrossNodesLikeSearch) {
  auto r = run_sapp("estimate --model llama3-70b --devices 16 --global-batch 16 --tp 16");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("tp across nodes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-tp-across-nodes"), std::string::npos) << r.err;
  EXPECT_NE(run_sapp("estimate --model llama3-70b --devices 16 --global-batch 16 --tp 16 --allow-tp-across-nodes").status, 1);
}

TEST(Requests, OptionsBeyondTheirLimitsNameTheOptionAndTheLimit) {
  struct Case {
    std::string args, says;
  };
  for (const Case& c : std::vector<Case>{{"--devices 4294967296", "--devices: 4294967296 is above the limit of 1048576 devices"},
                                         {"--devices 2147483648", "--devices: 2147483648 is above the limit of 1048576 devices"},
                                         {"--global-batch 4294967296", "--global-batch: 4294967296 is above the limit of 1073741824 sequences"},
                                         {"--devices 99999999999999999999999", "--devices: 99999999999999999999999 is above the limit"},
                                         {"--seq 0", "--seq: 0 is below the minimum of 1 tokens"},
                                         {"--tp 1e400", "--tp: '1e400' is not a degree"},
                                         {"--memory-limit-gib 1e400", "--memory-limit-gib: 1e400 is out of range"},
                                         {"--overlap-ep nan", "--overlap-ep: nan is not a finite number"}}) {
    auto r = run_sapp("search --model llama3-8b --devices 8 --global-batch 8 -q " + c.args);
    EXPECT_EQ(r.status, 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
}

// --attention-kernel sets the attention rate under any framework (no profile assumes a PyTorch version's SDPA
// backend); a bad name is an error naming the option.
TEST(Requests, TheAttentionKernelIsWhatTheRunStates) {
  auto kernel = [](const nlohmann::json& values) {
    app::EstimateRequest r;
    app::apply(r, values, app::Source::CommandLine);
    return r.job.training.attention_kernel;
  };
  const nlohmann::json job = {{"model", "llama3-8b"}, {"devices", 8}, {"global_batch", 8}};
  auto with = [&](nlohmann::json extra) {
    extra.update(job);
    return extra;
  };
  using plan::AttentionKernel;
  EXPECT_EQ(kernel(job), AttentionKernel::Auto);
  EXPECT_EQ(kernel(with({{"framework", "torchtitan"}})), AttentionKernel::Auto);
  EXPECT_EQ(kernel(with({{"attention_kernel", "fused"}})), AttentionKernel::Fused);
  EXPECT_EQ(kernel(with({{"framework", "torchtitan"}, {"attention_kernel", "torch_sdpa"}})), AttentionKernel::TorchSdpa);
  EXPECT_EQ(kernel(with({{"framework", "megatron"}, {"attention_kernel", "torch_sdpa"}})), AttentionKernel::TorchSdpa);
  auto r = run_sapp("estimate" + kJob + " --attention-kernel flash");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--attention-kernel"), std::string::npos) << r.err;
  // The slower kernel prices a longer step; nothing else changes.
  auto fused = run_sapp("estimate" + kJob + " -f json");
  auto sdpa = run_sapp("estimate" + kJob + " --attention-kernel torch_sdpa -f json");
  ASSERT_EQ(fused.status, 0) << fused.err;
  ASSERT_EQ(sdpa.status, 0) << sdpa.err;
  auto jf = nlohmann::json::parse(fused.out);
  auto js = nlohmann::json::parse(sdpa.out);
  EXPECT_GT(js["step_time_s"].get<double>(), jf["step_time_s"].get<double>());
  EXPECT_EQ(js["peak_memory_bytes"], jf["peak_memory_bytes"]);
}

TEST(Requests, TheHelpPrintsTheRequestsOwnDefaults) {
  auto r = run_sapp("search --help");
  EXPECT_EQ(r.status, 0);
  for (const char* shown : {"--seq INT=4096", "--overlap-tp NUMBER=0.5", "--threads INT=0", "--unfold", "--top INT=10", "--tp LIST|auto=auto"})
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown;
}

TEST(Requests, ACommandLineOptionOverridesTheConfigFileAndSaysSo) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/s.yaml", "model: llama3-8b\ndevices: 8\nglobal_batch: 16\nsearch:\n  tp: 2\n  pp: 1\n");
  auto r = run_sapp("search --config " + dir + "/s.yaml --tp 4 -q -f json --unfold");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("--tp overrides " + dir + "/s.yaml: search.tp"), std::string::npos) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  for (const auto& c : report["candidates"]) {
    EXPECT_EQ(c["layout"]["tp"], 4);
    EXPECT_EQ(c["layout"]["pp"], 1);
  }
  std::filesystem::remove_all(dir);
}

TEST(Requests, AnUnknownConfigKeyIsNamed) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/s.yaml", "search:\n  tpp: 2\n");
  auto r = run_sapp("search" + kJob + " --config " + dir + "/s.yaml");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("s.yaml: search.tpp: unknown option"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(Requests, AModelConfigKeySappDoesNotReadIsAWarningNotSilence) {
  // A misspelt key (hidden_sise) and a key of another schema (layers) change nothing sapp prices: the estimate
  // runs, and says so on stderr and in its JSON, naming the file and both keys.
  std::string dir = test::temp_dir();
  nlohmann::json config = nlohmann::json::parse(io::read_text(test::data_dir() + "/models/llama3-8b.json"));
  config["hidden_sise"] = 4096;
  config["layers"] = nlohmann::json::array({1, 2});
  test::write_file(dir + "/misspelt.json", config.dump());
  auto r = run_sapp("estimate --model " + dir + "/misspelt.json --devices 8 --global-batch 8 --tp 8 --format json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("sapp: warning: " + dir + "/misspelt.json: key(s) sapp does not read"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hidden_sise, layers"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("warnings"));
  EXPECT_NE(j["warnings"][0].get<std::string>().find("hidden_sise"), std::string::npos);
  // The bundled config itself reads cleanly.
  auto clean = run_sapp("estimate --model llama3-8b --devices 8 --global-batch 8 --tp 8");
  EXPECT_EQ(clean.err.find("warning"), std::string::npos) << clean.err;
  // A vision tower priced at the default token count says so.
  auto vision = run_sapp("estimate --model qwen2.5-vl-7b --devices 8 --global-batch 8 --tp 4");
  EXPECT_NE(vision.err.find("vision_config states no visual_tokens: the vision tower is priced at 1024 tokens"), std::string::npos) << vision.err;
  std::filesystem::remove_all(dir);
}

TEST(SearchRows, TheTopRowsAreTheFirstRowsOfTheWholeRanking) {
  auto all = search_llama(std::numeric_limits<std::size_t>::max(), false, 1);
  ASSERT_GT(all.ranked.size(), 20u);
  EXPECT_EQ(all.fitting, static_cast<long long>(all.ranked.size()));
  for (int threads : {1, 2, 3}) {
    auto top = search_llama(20, false, threads);
    ASSERT_EQ(top.ranked.size(), 20u);
    EXPECT_EQ(top.fitting, all.fitting);
    for (std::size_t i = 0; i < 20; ++i) {
      EXPECT_EQ(top.ranked[i].layout.describe(), all.ranked[i].layout.describe()) << i;
      EXPECT_EQ(top.ranked[i].time.step_s, all.ranked[i].time.step_s) << i;
    }
  }
}

TEST(SearchRows, FoldedRowsCountEveryTwinAndDoNotDependOnThreads) {
  auto all = search_llama(std::numeric_limits<std::size_t>::max(), false, 1);
  auto folded = search_llama(std::numeric_limits<std::size_t>::max(), true, 1);
  long long twins = 0;
  for (const auto& c : folded.ranked) twins += c.twins;
  EXPECT_EQ(twins, all.fitting);
  EXPECT_LT(folded.ranked.size(), all.ranked.size());  // DP/CP/micro-batch permutations exist for Llama 3 8B on 64
  for (std::size_t i = 1; i < folded.ranked.size(); ++i) {
    EXPECT_LE(std::llround(folded.ranked[i - 1].time.step_s * 1e9), std::llround(folded.ranked[i].time.step_s * 1e9));  // rows order by time in ns
    bool same_time_and_memory = std::llround(folded.ranked[i - 1].time.step_s * 1e9) == std::llround(folded.ranked[i].time.step_s * 1e9) &&
                                std::llround(folded.ranked[i - 1].peak_memory_bytes / 1024) == std::llround(folded.ranked[i].peak_memory_bytes / 1024);
    EXPECT_FALSE(same_time_and_memory) << i;
  }
  auto top = search_llama(7, true, 3);
  ASSERT_EQ(top.ranked.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(top.ranked[i].layout.describe(), folded.ranked[i].layout.describe()) << i;
    EXPECT_EQ(top.ranked[i].twins, folded.ranked[i].twins) << i;
  }
}

TEST(SearchTable, FitsA120ColumnTerminal) {
  auto r = run_sapp("search --model deepseek-v3 --devices 2048 --global-batch 4096 --pp 8,16 --ep 8,64 -q --top 10");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.out.find("rank "), std::string::npos);
  const std::string& table = r.out;
  std::size_t begin = 0;
  while (begin < table.size()) {
    std::size_t end = table.find('\n', begin);
    if (end == std::string::npos) end = table.size();
    EXPECT_LE(end - begin, 120u) << table.substr(begin, end - begin);
    begin = end + 1;
  }
}

TEST(Progress, SilentWhenStderrIsNotATerminal) {
  auto r = run_sapp("search --model deepseek-v3 --devices 2048 --global-batch 4096 --top 1");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err.find("searching"), std::string::npos) << r.err;
}

// A PP x VPP that does not divide the layers is priced with sapp's uneven split, and the estimate says so (Megatron-LM
// refuses such a split unless it is stated); a dividing one, or a stated split, says nothing.
TEST(Estimate, AnUnevenSplitIsSaid) {
  auto warnings = [](int pp) {
    app::EstimateRequest r;
    app::apply(r, nlohmann::json{{"model", "qwen3-8b"}, {"devices", 8}, {"global_batch", 64}, {"pp", pp}}, app::Source::CommandLine);
    return app::run_estimate(r).subject.warnings;
  };
  auto has = [](const std::vector<std::string>& w) {
    return std::any_of(w.begin(), w.end(), [](const std::string& s) { return s.find("36 layers do not divide over PP 8") != std::string::npos; });
  };
  EXPECT_TRUE(has(warnings(8)));
  EXPECT_FALSE(has(warnings(4)));
}

// A config of a family sapp has no profile for is refused for its family, not for a key that family spells its own
// way (DBRX states n_layers and d_model; the reader asked for num_hidden_layers).
TEST(Estimate, AnUnknownFamilyIsNamedBeforeItsKeys) {
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/dbrx.json",
                   R"({"model_type":"dbrx","architectures":["DbrxForCausalLM"],"d_model":6144,"n_heads":48,"n_layers":40,"vocab_size":100352})");
  auto r = test::run_sapp("estimate -m " + dir + "/dbrx.json -d 64 -b 256");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("\"dbrx\" is no known family"), std::string::npos) << r.err;
  auto checked = test::run_sapp("check " + dir + "/dbrx.json");  // `check` says the same
  EXPECT_EQ(checked.status, 1);
  EXPECT_NE(checked.err.find("\"dbrx\" is no known family"), std::string::npos) << checked.err;
}

// What `--emit` writes is what was priced: the search's best layout, written from --model in each framework's
// format, read back by `sapp estimate --from` gives the same step time and peak memory (the framework's runtime
// profile, its defaults that differ from the profile written out: AutoModel's weights dtype, deferred gradient
// sync and loss; Megatron's DP overlap; torch's ZeRO-2 under PP). A dense model with PP and VPP, a long sequence over
// CP, and two MoE models (DeepSeek-V3's search for torchtitan keeps replication to DP alone, which its DDP needs).
class EmitReadBack : public ::testing::TestWithParam<std::string> {};

TEST_P(EmitReadBack, TheWrittenConfigIsPricedAsTheSearchPricedIt) {
  const std::string format = GetParam();
  const std::string dir = test::temp_dir();
  struct Case {
    std::string job;
    std::string space;
  };
  for (const Case& c : {Case{"--model llama3-8b --devices 16 --global-batch 64 --seq 8192", "--pp 1,2 --vpp 1,2"},
                        Case{"--model llama3-8b --devices 8 --global-batch 32 --seq 32768", "--cp 2,4"},
                        Case{"--model qwen3-30b-a3b --devices 16 --global-batch 128 --seq 4096", "--pp 1,2"},
                        Case{"--model deepseek-v3 --devices 256 --global-batch 512 --seq 4096", "--pp 8,16 --tp 1,2"}}) {
    const std::string file = dir + "/plan." + format;
    auto r = run_sapp("search " + c.job + " " + c.space + " --hardware h100-sxm --top 1 -q -f json --emit " + format + " -o " + file);
    ASSERT_EQ(r.status, 0) << c.job << "\n" << r.err;
    const nlohmann::json best = nlohmann::json::parse(r.out)["candidates"].at(0);
    auto back = run_sapp("estimate --from " + file + " " + c.job + " --hardware h100-sxm -f json");
    ASSERT_EQ(back.status, 0) << c.job << "\n" << back.err << io::read_text(file);
    const nlohmann::json est = nlohmann::json::parse(back.out);
    EXPECT_EQ(est["layout"], best["layout"]) << c.job;
    const double step = best["step_time_s"].get<double>();
    const double peak = best["peak_memory_bytes"].get<double>();
    EXPECT_NEAR(est["step_time_s"].get<double>(), step, 1e-9 * step) << c.job << "\n" << io::read_text(file);
    EXPECT_NEAR(est["peak_memory_bytes"].get<double>(), peak, 1e-9 * peak) << c.job << "\n" << io::read_text(file);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EmitReadBack, ::testing::Values("megatron", "mindformers", "hyperparallel", "torchtitan", "automodel"));

// A new file written for a bundled model states the model as it was priced, so it reads back at the same step and
// peak. Megatron: Llama 4 Maverick's alternating MoE layers (--moe-layer-freq ([0,1]*24); written as nothing before,
// read back with every layer MoE), DeepSeek-V3's dense layers first, Qwen3's QK norm and Qwen2.5's q, k, v biases
// (family facts its config.json does not state), Nemotron-3's bias-free squared-ReLU MLP (read back as GPT-3's
// before), GPT-3's biases, dropout and learned positions, and Megatron-LM's defaults where a flag is missing (dropout
// 0.1, learned absolute positions), which the script now states either way; windowed layers (GPT-OSS's --window-size
// with --window-attn-skip-freq and its sink softmax, Phi-3's window on every layer, Gemma 2's MindSpeed-LLM flags;
// all read back with full attention before). MindFormers: the HuggingFace keys of
// windowed, chunked and linear attention, dense layers between MoE layers, biases, QK norm and dropout, which
// MindFormers lays over a config.json (Gemma 2, GPT-OSS, Phi-3 and Qwen3-Next were refused on reading back, Llama 4
// Scout and Seed-OSS read back 1-3 % lighter), and the sequence length (model_config.seq_length was never written:
// the file's, or MindFormers' default, ran).
TEST(EmitNewFile, BundledModelsReadBackAsPriced) {
  struct Case {
    std::string format, extra;
    std::vector<std::string> models;
  };
  for (const Case& c : {Case{"megatron",
                             "",
                             {"llama4-maverick", "deepseek-v3", "qwen3-8b", "qwen2.5-7b", "nemotron-3-8b", "gpt3-5b", "seed-oss-36b", "llama3-8b",
                              "gpt-oss-20b", "gemma2-9b", "phi3-mini-4k"}},
                        Case{"mindformers", " --zero 3", {"gemma2-9b", "gpt-oss-20b", "phi3-mini-4k", "llama4-scout", "qwen3-next-80b-a3b", "seed-oss-36b"}}}) {
    const std::string file = test::temp_dir() + "/model." + c.format;
    for (const std::string& model : c.models) {
      const bool moe =
          model == "llama4-maverick" || model == "deepseek-v3" || model == "gpt-oss-20b" || model == "llama4-scout" || model == "qwen3-next-80b-a3b";
      const std::string job = "--devices 64 --global-batch 256 --seq 2048 --tp 2 --pp 2" + std::string(moe ? " --ep 4" : "") + c.extra;
      auto r = run_sapp("estimate --model " + model + " " + job + " -f json --emit " + c.format + " -o " + file);
      ASSERT_TRUE(r.status == 0 || r.status == 3) << model << "\n" << r.err;
      const nlohmann::json priced = nlohmann::json::parse(r.out);
      auto back = run_sapp("estimate --from " + file + " --devices 64 --hardware h100-sxm -f json");
      ASSERT_EQ(back.status, r.status) << c.format << " " << model << "\n" << back.err << io::read_text(file);
      const nlohmann::json read = nlohmann::json::parse(back.out);
      const double step = priced["step_time_s"].get<double>();
      const double peak = priced["peak_memory_bytes"].get<double>();
      EXPECT_NEAR(read["step_time_s"].get<double>(), step, 1e-9 * step) << c.format << " " << model << "\n" << io::read_text(file);
      EXPECT_NEAR(read["peak_memory_bytes"].get<double>(), peak, 1e-9 * peak) << c.format << " " << model << "\n" << io::read_text(file);
    }
  }
}

// An edited file takes the plan's sequence length (MindFormers' model_config.seq_length and HyperParallel's
// dataset.data_transform.max_seq_len had kept the file's: each example, priced at 8192 tokens, read back at 4096).
TEST(EmitEditedFile, TheSequenceLengthIsThePlans) {
  const std::string dir = test::temp_dir();
  for (const auto& [example, format] : std::vector<std::pair<std::string, std::string>>{{"hyperparallel/qwen3-32b-train.yaml", "hyperparallel"},
                                                                                        {"mindformers/deepseek-v3-1024.yaml", "mindformers"},
                                                                                        {"torchtitan/llama3-8b.toml", "torchtitan"},
                                                                                        {"automodel/qwen3-30b-a3b-h100x8.yaml", "automodel"},
                                                                                        {"megatron/llama3-70b-h100x64.sh", "megatron"}}) {
    const std::string file = dir + "/edited." + format;
    auto r = run_sapp("estimate --from " + std::string(SAPP_SOURCE_DIR) + "/examples/" + example + " --seq 8192 -f json --emit " + format + " -o " + file);
    ASSERT_TRUE(r.status == 0 || r.status == 3) << example << "\n" << r.err;
    const nlohmann::json priced = nlohmann::json::parse(r.out);
    auto back = run_sapp("estimate --from " + file + " -f json");
    ASSERT_EQ(back.status, r.status) << example << "\n" << back.err;
    const nlohmann::json read = nlohmann::json::parse(back.out);
    EXPECT_NEAR(read["step_time_s"].get<double>(), priced["step_time_s"].get<double>(), 1e-9 * priced["step_time_s"].get<double>()) << example;
    EXPECT_NEAR(read["peak_memory_bytes"].get<double>(), priced["peak_memory_bytes"].get<double>(), 1e-9 * priced["peak_memory_bytes"].get<double>())
        << example;
  }
}

// GPT-3's learned position table (2048 rows) has no row past its length: a longer sequence is priced with the table
// as stated, and said (a Megatron script written for it states a table of the run's length instead).
TEST(Estimate, ALearnedPositionTableShorterThanTheSequenceIsSaid) {
  auto longer = run_sapp("estimate --model gpt3-5b --devices 8 --global-batch 64 --seq 4096");
  EXPECT_EQ(longer.status, 0) << longer.err;
  EXPECT_NE(longer.err.find("learns 2048 positions, fewer than the 4096-token sequence"), std::string::npos) << longer.err;
  auto within = run_sapp("estimate --model gpt3-5b --devices 8 --global-batch 64 --seq 2048");
  EXPECT_EQ(within.err.find("positions"), std::string::npos) << within.err;
}

// What a new file cannot state is refused before the search, and no file is left: a vision tower in a Megatron
// script or a MindFormers config (Qwen2.5-VL read back 0.7 B parameters short, without its tower), or in AutoModel's
// per-stage module names under PP. torchtitan's flavours have no MTP: written with a warning saying so.
TEST(EmitNewFile, WhatTheFormatCannotStateIsRefusedOrSaid) {
  const std::string dir = test::temp_dir();
  for (const std::string format : {"megatron", "mindformers"}) {
    const std::string file = dir + "/vl." + format;
    auto r = run_sapp("search --model qwen2.5-vl-7b --devices 16 --global-batch 64 --zero 3 -q --emit " + format + " -o " + file);
    EXPECT_EQ(r.status, 1) << format << "\n" << r.err;
    EXPECT_NE(r.err.find("has a vision tower"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(std::filesystem::exists(file)) << format;
  }
  // Gemma 3's one global layer in six: no Megatron-LM or MindSpeed-LLM flag sapp reads states it.
  auto gemma3 = run_sapp("search --model gemma3-12b --devices 16 --global-batch 64 --seq 8192 -q --emit megatron -o " + dir + "/g3.sh");
  EXPECT_TRUE(gemma3.out.empty()) << gemma3.out;  // refused before the search
  EXPECT_EQ(gemma3.status, 1) << gemma3.err;
  EXPECT_NE(gemma3.err.find("attends a sliding window in 40 of its 48 layers"), std::string::npos) << gemma3.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/g3.sh"));
  auto pp = run_sapp("estimate --model qwen2.5-vl-7b --devices 16 --global-batch 64 --pp 2 --zero 3 --emit automodel -o " + dir + "/vl.yaml");
  EXPECT_EQ(pp.status, 1) << pp.err;
  EXPECT_NE(pp.err.find("vision tower"), std::string::npos) << pp.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/vl.yaml"));
  // The search keeps such a model to PP 1 (it had picked PP 2 and then failed to write it); PP 2 alone is a usage error.
  auto kept = run_sapp("search --model qwen2.5-vl-7b --devices 16 --global-batch 64 --pp 1,2 --top 1 -q -f json --emit automodel -o " + dir + "/vl.yaml");
  ASSERT_EQ(kept.status, 0) << kept.err;
  EXPECT_EQ(nlohmann::json::parse(kept.out)["candidates"].at(0)["layout"]["pp"], 1) << kept.out;
  auto only = run_sapp("search --model qwen2.5-vl-7b --devices 16 --global-batch 64 --pp 2 -q --emit automodel -o " + dir + "/vl2.yaml");
  EXPECT_EQ(only.status, 2) << only.err;
  EXPECT_NE(only.err.find("a vision model without PP"), std::string::npos) << only.err;
  auto mtp =
      run_sapp("estimate --model deepseek-v3 --devices 256 --global-batch 512 --tp 2 --sp --pp 8 --ep 8 --zero 3 --emit torchtitan -o " + dir + "/v3.toml");
  EXPECT_TRUE(mtp.status == 0 || mtp.status == 3) << mtp.err;
  EXPECT_NE(mtp.err.find("has no multi-token prediction"), std::string::npos) << mtp.err;
}

// FP8 plans too, in the formats that state FP8 (MindFormers and HyperParallel refuse it): Megatron's --fp8-format,
// torchtitan's float8 converters, AutoModel's torchao fp8 section (its profile's route), each priced as its framework
// runs FP8 (Transformer Engine's FP8 copies of the GEMM inputs, or torchao's BF16 ones).
class EmitReadBackFp8 : public ::testing::TestWithParam<std::string> {};

TEST_P(EmitReadBackFp8, TheWrittenConfigIsPricedAsTheSearchPricedIt) {
  const std::string format = GetParam();
  const std::string file = test::temp_dir() + "/plan." + format;
  // torchao's FSDP float8 all-gather (one byte per gathered weight) is written where it was priced.
  for (const std::string& gather : format == "megatron" ? std::vector<std::string>{""} : std::vector<std::string>{"", " --gather-bytes 1"}) {
    const std::string job = "--model llama3-8b --devices 16 --global-batch 64 --seq 8192 --fp8 --hardware h100-sxm" + gather;
    auto r = run_sapp("search " + job + " --pp 1,2 --top 1 -q -f json --emit " + format + " -o " + file);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json best = nlohmann::json::parse(r.out)["candidates"].at(0);
    auto back = run_sapp("estimate --from " + file + " " + job.substr(0, job.find(" --gather-bytes")) + " -f json");
    ASSERT_EQ(back.status, 0) << back.err << io::read_text(file);
    const nlohmann::json est = nlohmann::json::parse(back.out);
    EXPECT_EQ(est["layout"], best["layout"]);
    const double step = best["step_time_s"].get<double>(), peak = best["peak_memory_bytes"].get<double>();
    EXPECT_NEAR(est["step_time_s"].get<double>(), step, 1e-9 * step) << gather << "\n" << io::read_text(file);
    EXPECT_NEAR(est["peak_memory_bytes"].get<double>(), peak, 1e-9 * peak) << gather << "\n" << io::read_text(file);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EmitReadBackFp8, ::testing::Values("megatron", "torchtitan", "automodel"));
