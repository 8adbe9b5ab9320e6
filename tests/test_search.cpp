// The ND search: auto equals the explicit full lists, every rejection reason fires, SP matters, gradient
// accumulation without PP is searched, and results do not depend on the thread count.
#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cost/memory.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;
using test::training;

namespace {

search::Result run(const model::Model& m, const search::Space& space, const plan::Training& t, long long devices, int threads = 1, double capacity = 0) {
  auto hw = test::device("h100-sxm");
  search::Options o;
  o.threads = threads;
  return search::search(m, space, t, hw, devices, capacity > 0 ? capacity : hw.memory_bytes, o);
}

bool same_ranking(const search::Result& a, const search::Result& b) {
  if (a.ranked.size() != b.ranked.size()) return false;
  for (std::size_t i = 0; i < a.ranked.size(); ++i) {
    const auto& x = a.ranked[i];
    const auto& y = b.ranked[i];
    if (x.layout.describe() != y.layout.describe() || x.time.step_s != y.time.step_s || x.peak_memory_bytes != y.peak_memory_bytes) return false;
  }
  return true;
}

// Runs `space` without and with a rule it switches on (`ruled`): the rule rejects some candidates (counted under
// `rejection`), and the ruled run keeps exactly the unruled run's candidates whose layout `keeps` accepts.
search::Result expect_rule_keeps(const model::Model& m, const search::Space& space, const search::Space& ruled, const plan::Training& t, long long devices,
                                 const std::string& rejection, const std::function<bool(const plan::Layout&)>& keeps) {
  const auto every = run(m, space, t, devices);
  auto kept = run(m, ruled, t, devices);
  EXPECT_GT(kept.rejected.count(rejection), 0U);
  const auto expected = std::count_if(every.ranked.begin(), every.ranked.end(), [&](const auto& c) { return keeps(c.layout); });
  EXPECT_EQ(static_cast<long long>(kept.ranked.size()), static_cast<long long>(expected));
  return kept;
}

}  // namespace

TEST(Search, AutoEqualsTheExplicitFullLists) {
  auto m = test::bundled("llama3-8b");
  plan::Training t = training(64, 4096);
  search::Space automatic;
  search::Space listed;
  listed.tp = std::vector<int>{1, 2, 4, 8};
  listed.cp = std::vector<int>{1, 2, 4, 8, 16};
  listed.pp = std::vector<int>{1, 2, 4, 8, 16};
  listed.ep = std::vector<int>{1};
  listed.etp = std::vector<int>{1};
  listed.vpp = std::vector<int>{1, 2, 3, 4, 8, 16};  // 32 layers: 8 and 16 chunks split PP 2 and 4 stages evenly
  listed.mbs = std::vector<int>{1, 2, 4, 8};
  listed.zero = std::vector<int>{0, 1, 2, 3};
  listed.recompute = plan::read_recompute_modes(nlohmann::json("auto"), "test");
  auto a = run(m, automatic, t, 16);
  auto b = run(m, listed, t, 16);
  ASSERT_FALSE(a.ranked.empty());
  EXPECT_TRUE(same_ranking(a, b));
}

// A format whose DDP takes no other dimension and which shards over CP (torchtitan): replication (ZeRO 0) only over
// DP alone, never beside CP even at DP 1; every other layout is kept as it would be without the rule.
TEST(Search, ReplicationAloneKeepsZeroZeroToDataParallelism) {
  auto m = test::bundled("llama3-8b");
  plan::Training t = training(16, 32768);
  search::Space all;
  all.zero = std::vector<int>{0, 3};
  search::Space alone = all;
  alone.replication_alone = true;
  const auto kept = expect_rule_keeps(m, all, alone, t, 8, "replication beside other dimensions",
                                      [](const plan::Layout& l) { return !plan::replicates_beside_other_dimensions(l); });
  for (const auto& c : kept.ranked) {
    const plan::Layout& l = c.layout;
    EXPECT_FALSE(l.zero == 0 && l.cp > 1) << l.describe();
    EXPECT_FALSE(l.zero == 0 && l.dp > 1 && (l.tp > 1 || l.pp > 1)) << l.describe();
  }
}

// A target that splits a hybrid stack evenly over PP and runs no virtual pipeline for it (Megatron-Core's MambaStack,
// core_v0.14.0 to core_v0.16.x): Nemotron 3 Nano's 52 layers keep PP 1, 2 or 4 with one chunk per stage; every other
// layout is kept as it would be without the rule. A stack of one kind (Llama) is not touched.
TEST(Search, HybridStacksKeepAnEvenSplitWithoutVirtualPipeline) {
  auto m = test::bundled("nemotron-3-nano-30b-a3b");
  plan::Training t = training(512, 8192);
  search::Space all;
  all.pp = std::vector<int>{1, 2, 4, 8};
  search::Space even = all;
  even.hybrid_even_pipeline = true;
  const auto kept =
      expect_rule_keeps(m, all, even, t, 64, "hybrid stack split unevenly or interleaved", [](const plan::Layout& l) { return l.vpp == 1 && 52 % l.pp == 0; });
  ASSERT_FALSE(kept.ranked.empty());
  for (const auto& c : kept.ranked) {
    EXPECT_EQ(c.layout.vpp, 1) << c.layout.describe();
    EXPECT_EQ(52 % c.layout.pp, 0) << c.layout.describe();
  }
  auto llama = test::bundled("llama3-8b");
  search::Space llama_even;
  llama_even.pp = std::vector<int>{1, 2, 4};
  const auto plain = run(llama, llama_even, training(64, 4096), 16);
  llama_even.hybrid_even_pipeline = true;
  const auto ruled = run(llama, llama_even, training(64, 4096), 16);
  EXPECT_EQ(ruled.ranked.size(), plain.ranked.size());
  EXPECT_EQ(ruled.rejected.count("hybrid stack split unevenly or interleaved"), 0U);
}

// DP and the micro-batch count follow from the devices, the batch and the other degrees; stated lists keep only the
// candidates among them, and the rows kept are exactly the unfiltered rows that satisfy the lists.
TEST(Search, DataParallelAndMicroBatchListsFilter) {
  auto m = test::bundled("llama3-8b");
  plan::Training t = training(64, 4096);
  search::Space all;
  search::Space some;
  some.dp = std::vector<int>{2, 4};
  some.micro_batches = std::vector<int>{8};
  auto a = run(m, all, t, 16);
  auto b = run(m, some, t, 16);
  ASSERT_FALSE(b.ranked.empty());
  std::vector<std::string> expected;
  for (const auto& c : a.ranked)
    if ((c.layout.dp == 2 || c.layout.dp == 4) && c.layout.micro_batches == 8) expected.push_back(c.layout.describe());
  std::vector<std::string> kept;
  for (const auto& c : b.ranked) kept.push_back(c.layout.describe());
  EXPECT_EQ(kept, std::vector<std::string>(expected.begin(), expected.begin() + static_cast<long>(std::min(expected.size(), kept.size()))));
  EXPECT_GT(b.rejected.at("dp not listed"), 0);
  EXPECT_GT(b.rejected.at("micro-batch count not listed"), 0);
}

TEST(Search, ResultsAreIdenticalForAnyThreadCount) {
  auto m = test::bundled("mixtral-8x7b");
  plan::Training t = training(256, 4096);
  search::Space space;
  auto one = run(m, space, t, 64, 1);
  auto two = run(m, space, t, 64, 2);
  auto five = run(m, space, t, 64, 5);
  ASSERT_GT(one.ranked.size(), 100u);
  EXPECT_TRUE(same_ranking(one, two));
  EXPECT_TRUE(same_ranking(one, five));
  EXPECT_EQ(one.rejected, two.rejected);
  EXPECT_EQ(one.rejected, five.rejected);
  EXPECT_EQ(one.evaluated, five.evaluated);
}

TEST(Search, SequenceParallelismChangesTheEstimate) {
  auto m = test::bundled("llama3-70b");
  plan::Training t = training(64, 8192);
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 2;
  l.micro_batches = 32;
  plan::Layout with_sp = l;
  with_sp.sp = true;
  auto mem_off = cost::estimate_memory(m, l, t, hw.memory_bytes);
  auto mem_on = cost::estimate_memory(m, with_sp, t, hw.memory_bytes);
  EXPECT_LT(mem_on.peak_bytes, mem_off.peak_bytes);
  auto time_off = cost::estimate_time(m, l, t, hw);
  auto time_on = cost::estimate_time(m, with_sp, t, hw);
  EXPECT_NE(time_on.step_s, time_off.step_s);
}

TEST(Search, GradientAccumulationWithoutPipelineIsSearched) {
  auto m = test::bundled("llama3-8b");
  plan::Training t = training(128, 4096);
  search::Space space;
  space.pp = std::vector<int>{1};
  auto r = run(m, space, t, 8);
  bool accumulates = false;
  for (const auto& c : r.ranked) accumulates = accumulates || (c.layout.pp == 1 && c.layout.micro_batches > 1);
  EXPECT_TRUE(accumulates);
}

TEST(Search, EveryRejectionReasonFires) {
  struct Probe {
    std::string model;
    long long devices, gbs, seq;
    search::Space space;
    std::string reason;
    double capacity = 0;
  };
  auto sp = [](std::vector<int> tp, std::vector<int> pp, std::vector<int> cp) {
    search::Space s;
    s.tp = tp;
    s.pp = pp;
    s.cp = cp;
    return s;
  };
  std::vector<Probe> probes;
  {
    auto s = sp({1}, {1}, {1});
    s.mbs = std::vector<int>{1};
    probes.push_back({"llama3-8b", 16, 12, 4096, s, "global batch"});  // 12 sequences over 16 replicas
  }
  {
    auto s = sp({16}, {1}, {1});
    probes.push_back({"llama3-8b", 16, 16, 4096, s, "tp across nodes"});
  }
  probes.push_back({"llama3-70b", 8, 8, 8192, sp({1}, {1}, {1}), "out of memory"});
  {
    auto s = sp({16}, {1}, {1});
    s.allow_tp_across_nodes = true;
    probes.push_back({"qwen2.5-vl-7b", 16, 16, 4096, s, "tp/heads"});  // 28 heads
  }
  {
    // 24 heads, 6 KV heads, TP 4: divides the heads, neither divides nor is a multiple of the KV heads.
    probes.push_back({"kv6", 4, 4, 4096, sp({4}, {1}, {1}), "tp/kv heads"});
  }
  probes.push_back({"ffn100", 8, 8, 4096, sp({8}, {1}, {1}), "tp/ffn"});
  probes.push_back({"lin3", 2, 2, 4096, sp({2}, {1}, {1}), "tp/linear heads"});  // 3 linear key heads over TP 2
  probes.push_back({"vis6", 4, 4, 4096, sp({4}, {1}, {1}), "tp/vision heads"});  // 6 vision heads over TP 4
  probes.push_back({"llama3-8b", 8, 8, 1000, sp({1}, {1}, {8}), "seq/cp"});
  {
    auto s = sp({2}, {1}, {4});
    s.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::AllToAll};
    probes.push_back({"qwen2.5-vl-7b", 8, 8, 4096, s, "heads/cp"});  // 28 heads over 2 x 4
  }
  {
    auto s = sp({1}, {1}, {1});
    s.ep = std::vector<int>{2};
    probes.push_back({"llama3-8b", 8, 8, 4096, s, "ep on dense"});
  }
  {
    auto s = sp({1}, {1}, {1});
    s.ep = std::vector<int>{16};
    probes.push_back({"mixtral-8x7b", 16, 16, 4096, s, "experts/ep"});
  }
  {
    auto s = sp({1}, {1}, {1});
    s.etp = std::vector<int>{3};
    probes.push_back({"mixtral-8x7b", 6, 6, 4096, s, "expert width/etp"});  // 14336 % 3 != 0
  }
  {
    auto s = sp({1}, {1}, {1});
    s.ep = std::vector<int>{8};
    probes.push_back({"mixtral-8x7b", 4, 4, 4096, s, "ep/dp"});
  }
  probes.push_back({"llama3-8b", 64, 64, 4096, sp({1}, {64}, {1}), "layers < pp x vpp"});
  {
    auto s = sp({1}, {1}, {1});
    s.vpp = std::vector<int>{2};
    probes.push_back({"llama3-8b", 8, 8, 4096, s, "vpp without pp"});
  }
  {
    auto s = sp({1}, {4}, {1});
    s.vpp = std::vector<int>{2};
    s.mbs = std::vector<int>{1};
    probes.push_back({"llama3-8b", 8, 6, 4096, s, "interleave/micro-batches"});  // 3 micro-batches over PP 4
  }
  {
    auto s = sp({1}, {1}, {1});
    s.zero = std::vector<int>{4};
    probes.push_back({"llama3-8b", 8, 8, 4096, s, "zero stage"});
  }
  {
    auto s = sp({1}, {1}, {1});
    s.optimizer_shard = 3;
    probes.push_back({"llama3-8b", 8, 8, 4096, s, "optimizer shard"});
  }
  std::string dir = test::temp_dir();
  test::write_file(
      dir + "/kv6.json",
      R"({"model_type":"llama","hidden_size":1536,"num_attention_heads":24,"num_key_value_heads":6,"num_hidden_layers":4,"vocab_size":1000,"intermediate_size":4096})");
  test::write_file(dir + "/lin3.json",
                   R"({"model_type":"qwen3_next","hidden_size":256,"num_attention_heads":8,"num_key_value_heads":2,"head_dim":32,"num_hidden_layers":4,
    "layer_types":["linear_attention","linear_attention","linear_attention","full_attention"],"num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":64,
    "intermediate_size":128,"linear_num_key_heads":3,"linear_key_head_dim":16,"linear_num_value_heads":6,"linear_value_head_dim":16,"linear_conv_kernel_dim":4,"vocab_size":1000})");
  test::write_file(dir + "/vis6.json",
                   R"({"model_type":"qwen2_5_vl","hidden_size":256,"num_attention_heads":8,"num_key_value_heads":4,"num_hidden_layers":4,"vocab_size":1000,
    "intermediate_size":128,"vision_config":{"depth":2,"hidden_size":96,"intermediate_size":128,"num_heads":6,"out_hidden_size":256}})");
  test::write_file(
      dir + "/ffn100.json",
      R"({"model_type":"llama","hidden_size":1024,"num_attention_heads":16,"num_key_value_heads":8,"num_hidden_layers":4,"vocab_size":1000,"intermediate_size":100})");
  for (const auto& p : probes) {
    if (p.reason.empty()) continue;
    bool custom = p.model == "kv6" || p.model == "ffn100" || p.model == "lin3" || p.model == "vis6";
    std::string name = custom ? dir + "/" + p.model + ".json" : p.model;
    auto m = model::resolve(model::load_model(name, test::data_dir()), test::catalog().records, test::catalog().profiles);
    auto r = run(m, p.space, training(p.gbs, p.seq), p.devices);
    EXPECT_GT(r.rejected[p.reason], 0) << p.reason << " did not fire for " << p.model;
  }
  // The three rules a search cannot reach (it derives DP from the devices, never generates a degree below 1, and
  // prices TP 1 without SP, the same layout, even under --sp true), checked on layouts directly.
  auto m = test::bundled("llama3-8b");
  plan::Layout l;
  l.sp = true;
  l.dp = 8;
  EXPECT_EQ(plan::check_layout(m, l, training(8, 4096), 8).front().rule, "sp without tp");
  l.sp = false;
  l.dp = 3;
  EXPECT_EQ(plan::check_layout(m, l, training(3, 4096), 8).front().rule, "device count");
  l.mbs = 0;
  EXPECT_EQ(plan::check_layout(m, l, training(3, 4096), 3).front().rule, "degree below 1");
  // Pipeline runs per step (torchtitan's accumulation under PP) split the micro-batches evenly.
  plan::Layout runs_of_two;
  runs_of_two.dp = 4;
  runs_of_two.pp = 2;
  runs_of_two.micro_batches = 2;
  plan::Training three_runs = training(8, 4096);
  three_runs.pipeline_runs = 3;
  EXPECT_EQ(plan::check_layout(m, runs_of_two, three_runs, 8).front().rule, "pipeline runs");
  three_runs.pipeline_runs = 2;
  EXPECT_TRUE(plan::check_layout(m, runs_of_two, three_runs, 8).empty());
}

TEST(Search, YamlConfigReadsRecomputeAsTheTrainerDoes) {
  search::Space s;
  search::space_from_json(test::parse_yaml_for_test("tp: [1, 2]\npp: auto\nrecompute: off\n"), "s.yaml", s);
  EXPECT_EQ(s.recompute, std::vector<plan::Recompute>{plan::Recompute::Off});
  EXPECT_EQ(*s.tp, (std::vector<int>{1, 2}));
  EXPECT_FALSE(s.pp.has_value());
  EXPECT_THROW(search::space_from_json(test::parse_yaml_for_test("recompute: True\n"), "s.yaml", s), Error);
  EXPECT_THROW(search::space_from_json(test::parse_yaml_for_test("tp: []\n"), "s.yaml", s), Error);
  EXPECT_THROW(search::space_from_json(test::parse_yaml_for_test("tpp: 2\n"), "s.yaml", s), Error);
}

TEST(SearchCli, JsonHasTheDocumentedFields) {
  auto r = test::run_sapp("search --model llama3-8b --devices 8 --global-batch 32 --seq 4096 --top 3 --format json -q");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["candidates"].size(), 3u);
  for (const char* key : {"layout", "step_time_s", "tokens_per_s_per_device", "mfu", "breakdown", "peak_memory_bytes", "stages", "params"}) {
    EXPECT_TRUE(j["candidates"][0].contains(key)) << key;
  }
  EXPECT_TRUE(j.contains("rejected"));
  EXPECT_GT(j["evaluated"].get<long long>(), 0);
  EXPECT_TRUE(j.contains("search_seconds"));
  double first = j["candidates"][0]["step_time_s"].get<double>();
  double second = j["candidates"][1]["step_time_s"].get<double>();
  EXPECT_LE(first, second);
}

TEST(SearchCli, OutputIsByteIdenticalForAnyThreadCount) {
  // The CSV carries every ranked candidate's numbers and no timing: the same bytes on 1, 2 and 3 threads.
  std::string dir = test::temp_dir();
  std::string args = "search --model mixtral-8x7b --devices 64 --global-batch 256 --seq 4096 --top 1000 --format csv -q";
  std::vector<std::string> outputs;
  for (int threads : {1, 2, 3}) {
    std::string file = dir + "/t" + std::to_string(threads) + ".csv";
    auto r = test::run_sapp(args + " --threads " + std::to_string(threads) + " --output " + file);
    ASSERT_EQ(r.status, 0) << r.err;
    std::ifstream in(file, std::ios::binary);
    outputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(std::count(outputs[0].begin(), outputs[0].end(), '\n'), 100);
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
}
