// The ND search: auto equals the explicit full lists, every rejection reason fires, SP matters, gradient
// accumulation without PP is searched, and results do not depend on the thread count.
#include <algorithm>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cost/calibrate.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;

namespace {

plan::Training job(long long gbs, long long seq) {
  plan::Training t;
  t.global_batch = gbs;
  t.seq = seq;
  return t;
}

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

}  // namespace

TEST(Search, AutoEqualsTheExplicitFullLists) {
  auto m = test::bundled("llama3-8b");
  plan::Training t = job(64, 4096);
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

TEST(Search, ResultsAreIdenticalForAnyThreadCount) {
  auto m = test::bundled("mixtral-8x7b");
  plan::Training t = job(256, 4096);
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
  plan::Training t = job(64, 8192);
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
  plan::Training t = job(128, 4096);
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
  {
    auto s = sp({1}, {1}, {1});
    s.sp = std::vector<bool>{true};
    probes.push_back({"llama3-8b", 8, 8, 4096, s, "sp without tp"});
  }
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
    auto r = run(m, p.space, job(p.gbs, p.seq), p.devices);
    EXPECT_GT(r.rejected[p.reason], 0) << p.reason << " did not fire for " << p.model;
  }
  // The two rules a search cannot reach (it derives DP from the devices and never generates a degree below 1),
  // checked on layouts directly.
  auto m = test::bundled("llama3-8b");
  plan::Layout l;
  l.dp = 3;
  EXPECT_EQ(plan::check_layout(m, l, job(3, 4096), 8).front().rule, "device count");
  l.mbs = 0;
  EXPECT_EQ(plan::check_layout(m, l, job(3, 4096), 3).front().rule, "degree below 1");
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

TEST(Topology, RankOrderDecidesWhichLinkAGroupUses) {
  // TP 8 innermost stays on NVLink; with PP innermost the TP group is strided across 8 nodes and its
  // collectives run on the inter-node link.
  auto m = test::bundled("llama3-70b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(64, 8192);
  plan::Layout l;
  l.tp = 8;
  l.pp = 8;
  l.dp = 1;
  l.micro_batches = 64;
  l.sp = true;
  EXPECT_EQ(plan::group_span(l, t.rank_order, 't'), 8);
  auto inner = cost::estimate_time(m, l, t, hw);
  t.rank_order = plan::parse_rank_order("pp-dp-cp-tp", "test");
  EXPECT_EQ(plan::group_span(l, t.rank_order, 't'), 64);
  auto outer = cost::estimate_time(m, l, t, hw);
  EXPECT_GT(outer.breakdown.tp_comm_s, 4 * inner.breakdown.tp_comm_s);
  EXPECT_THROW(plan::parse_rank_order("tp-tp-dp-pp", "test"), Error);
}

TEST(Topology, RingsCrossingNodesUseTheNicsOfEveryMemberInANode) {
  // DGX H100: NVLink 450 GB/s per GPU and direction, one 50 GB/s NIC per GPU. A ring with k members per node
  // drives k NICs (one NCCL channel each), capped by NVLink.
  auto hw = test::device("h100-sxm");
  EXPECT_DOUBLE_EQ(hw.ring_link(8, 1).bandwidth, 450e9);   // one node
  EXPECT_DOUBLE_EQ(hw.ring_link(16, 1).bandwidth, 400e9);  // 8 per node: 8 NICs, under NVLink
  EXPECT_DOUBLE_EQ(hw.ring_link(32, 2).bandwidth, 200e9);  // 4 per node
  EXPECT_DOUBLE_EQ(hw.ring_link(16, 8).bandwidth, 50e9);   // one per node: its own NIC
  EXPECT_DOUBLE_EQ(hw.ring_link(16, 8).latency, hw.levels.back().latency);
  EXPECT_DOUBLE_EQ(hw.ring_link(4, 2).latency, hw.levels.front().latency);
  // Data parallelism packed in a node (TP 1) therefore reduces its gradients 8x faster per byte than the same
  // DP degree with TP 8 (one member per node), other things equal.
  auto m = test::bundled("llama3-8b");
  plan::Training t = job(256, 4096);
  plan::Layout packed;
  packed.dp = 32;
  packed.micro_batches = 8;
  packed.zero = 1;
  auto one = cost::Overlap{};
  one.dp = 0;  // expose all of it, to compare the collective itself
  double packed_s = cost::estimate_time(m, packed, t, hw, one).breakdown.dp_comm_s;
  plan::Layout strided = packed;
  strided.tp = 8;
  strided.dp = 4;
  strided.micro_batches = 64;
  // 32 ranks of 1/1 of the model vs 4 ranks of 1/8 of it on one NIC each: (31/32) / 400 vs (3/4) / 8 / 50.
  double strided_s = cost::estimate_time(m, strided, t, hw, one).breakdown.dp_comm_s;
  EXPECT_NEAR(packed_s / strided_s, (31.0 / 32 / 400e9) / (3.0 / 4 / 8 / 50e9), 0.05);
}

TEST(Topology, AllToAllSendsEachShareOverItsOwnLevel) {
  // EP 16 over two DGX H100 nodes: 7/16 of a rank's bytes go to node peers over NVLink, 8/16 over its NIC; the
  // NIC share governs. One member per node: 15/16 over the NIC. Within a node: 7/8 over NVLink.
  auto hw = test::device("h100-sxm");
  EXPECT_DOUBLE_EQ(hw.all_to_all(8, 1).seconds_per_byte, 7.0 / 8 / 450e9);
  EXPECT_DOUBLE_EQ(hw.all_to_all(16, 1).seconds_per_byte, 8.0 / 16 / 50e9);
  EXPECT_DOUBLE_EQ(hw.all_to_all(16, 8).seconds_per_byte, 15.0 / 16 / 50e9);
  EXPECT_DOUBLE_EQ(hw.all_to_all(1, 1).seconds_per_byte, 0.0);
  EXPECT_DOUBLE_EQ(hw.all_to_all(16, 1).latency, hw.levels.back().latency);
}

TEST(StepTime, FullRecomputeRepeatsTheForwardCollectives) {
  // Megatron's full recompute re-runs each layer's forward, its TP collectives included: one more forward's
  // worth on top of forward + backward, i.e. 1.5x the exposed TP time.
  auto m = test::bundled("llama3-70b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(64, 4096);
  plan::Layout l;
  l.tp = 8;
  l.pp = 1;
  l.dp = 8;
  l.micro_batches = 8;
  l.sp = true;
  l.recompute = plan::Recompute::Off;
  double off = cost::estimate_time(m, l, t, hw).breakdown.tp_comm_s;
  l.recompute = plan::Recompute::Selective;
  double selective = cost::estimate_time(m, l, t, hw).breakdown.tp_comm_s;
  l.recompute = plan::Recompute::Full;
  double full = cost::estimate_time(m, l, t, hw).breakdown.tp_comm_s;
  EXPECT_GT(off, 0.0);
  EXPECT_DOUBLE_EQ(selective, off);  // core attention only: no collective inside it
  EXPECT_NEAR(full / off, 1.5, 1e-12);
}

TEST(StepTime, InterleavingHidesMoreOfTheGradientReduce) {
  // With v model chunks per stage, a chunk's gradient reduce starts while the later chunks still run their
  // last backwards; without interleaving only the last micro-batch's backward hides it. With nothing
  // overlapped both expose the whole collective.
  auto m = test::bundled("llama3-70b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(128, 4096);
  plan::Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 4;  // strided across nodes: one NIC per member
  l.micro_batches = 32;
  l.sp = true;
  l.zero = 1;
  double plain = cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  l.vpp = 5;
  double interleaved = cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  EXPECT_GT(plain, 0.0);
  EXPECT_LT(interleaved, 0.7 * plain);
  cost::Overlap none;
  none.dp = 0;
  double exposed_interleaved = cost::estimate_time(m, l, t, hw, none).breakdown.dp_comm_s;
  l.vpp = 1;
  double exposed_plain = cost::estimate_time(m, l, t, hw, none).breakdown.dp_comm_s;
  EXPECT_NEAR(exposed_interleaved, exposed_plain, 1e-9 * exposed_plain);
  EXPECT_GT(exposed_plain, plain);
}

TEST(StepTime, ShardedGradientsAreReducedEveryMicroBatch) {
  // With nothing overlapped and gradients as wide as parameters (one collective = x): ZeRO 1 reduce-scatters
  // once and gathers once per step (2x for any micro-batch count m); ZeRO 2 reduce-scatters every micro-batch
  // ((m + 1) x); ZeRO 3 also gathers for every forward and every backward (3m x).
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  cost::Overlap none;
  none.dp = 0;
  auto dp_comm = [&](int zero, int micro_batches) {
    plan::Training t = job(8LL * micro_batches, 4096);
    t.grad_bytes = 2;
    plan::Layout l;
    l.dp = 8;
    l.micro_batches = micro_batches;
    l.zero = zero;
    return cost::estimate_time(m, l, t, hw, none).breakdown.dp_comm_s;
  };
  double x = dp_comm(1, 1) / 2;
  ASSERT_GT(x, 0.0);
  EXPECT_NEAR(dp_comm(1, 8), 2 * x, 1e-12);
  EXPECT_NEAR(dp_comm(2, 1), 2 * x, 1e-12);
  EXPECT_NEAR(dp_comm(2, 8), 9 * x, 1e-12);
  EXPECT_NEAR(dp_comm(3, 1), 3 * x, 1e-12);
  EXPECT_NEAR(dp_comm(3, 8), 24 * x, 1e-12);
}

TEST(StepTime, ZeroThreeGathersTheExpertsToo) {
  // ZeRO 3 without EP gathers every expert of the stage for every micro-batch: for Qwen3-235B on 256 GPUs that
  // is tens of GB per micro-batch, far more than its compute can hide.
  auto m = test::bundled("qwen3-235b-a22b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(512, 4096);
  plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.pp = 8;
  l.vpp = 4;
  l.dp = 16;
  l.micro_batches = 32;
  l.zero = 3;
  auto time = cost::estimate_time(m, l, t, hw);
  EXPECT_GT(time.breakdown.dp_comm_s, 3 * time.breakdown.compute_s);
}

TEST(StepTime, FlashAttentionBackwardRecomputesTheScores) {
  // FlashAttention-2's backward runs five matmuls against the forward's two (2.5x); eager attention's four
  // (2x), like every GEMM. So backward - 2 x forward is half the attention forward with flash, zero without.
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(8, 8192);
  plan::Layout l;
  l.micro_batches = 8;
  auto flash = cost::kind_times(m, l, t, hw).kinds.at(0);
  // Attention forward FLOPs of one layer, causal: 2 matmuls x 2 FLOPs x s x ctx x a x dh, ctx = (s + 1) / 2.
  double s = 8192, ctx = (s + 1) / 2, a = 32, dh = 128;
  double attention_s = 2 * 2 * s * ctx * a * dh / (hw.peak_flops * hw.efficiency.attention);
  EXPECT_NEAR(flash.bwd_s - 2 * flash.fwd_s, 0.5 * attention_s, 1e-3 * attention_s);
  t.flash_attention = false;
  auto eager = cost::kind_times(m, l, t, hw).kinds.at(0);
  EXPECT_NEAR(eager.bwd_s, 2 * eager.fwd_s, 1e-12 * eager.fwd_s);
}

TEST(StepTime, Fp8AddsTheCastTrafficOfEveryGemmInput) {
  // Transformer Engine casts each GEMM input to FP8 with its transpose (4 bytes moved per element); on a
  // dense Llama layer at TP 1 the inputs are h (QKV), a x dv (output projection), h (FFN in), ffn (FFN out).
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t = job(8, 4096);
  plan::Layout l;
  l.micro_batches = 8;
  t.fp8 = true;
  const model::BoundKind& kind = m.kinds.at(0);
  expr::Env env = plan::layer_env(m, kind, l, t);
  double bytes = 0;
  int terms = 0;
  for (const auto& w : kind.work) {
    if (w.name.rfind("fp8_casts", 0) != 0) continue;
    ++terms;
    if (!w.when || w.when->eval(env).truthy()) bytes += w.formula.eval_double(env);
  }
  EXPECT_EQ(terms, 2);
  double h = 4096, ffn = 14336, adv = 32 * 128, s = 4096;
  EXPECT_DOUBLE_EQ(bytes, s * 4 * (2 * h + adv + ffn));
  t.fp8 = false;
  expr::Env bf16 = plan::layer_env(m, kind, l, t);
  for (const auto& w : kind.work) {
    if (w.name.rfind("fp8_casts", 0) == 0) {
      EXPECT_FALSE(w.when->eval(bf16).truthy()) << w.name;
    }
  }
}

TEST(Topology, AUserHardwareFileWorks) {
  std::string dir = test::temp_dir();
  test::write_file(dir + "/my-gpu.yaml", R"(name: My accelerator
peak_flops: 500.0e12
memory_gib: 96
hbm_bandwidth: 4.0e12
levels:
  - {name: node, devices: 4, bandwidth: 200.0e9, latency: 4.0e-6}
  - {name: cluster, devices: 0, bandwidth: 25.0e9, latency: 10.0e-6}
)");
  auto r = test::run_sapp("estimate --model llama3-8b --hardware " + dir + "/my-gpu.yaml --devices 8 --global-batch 8 --tp 4 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["capacity_bytes"].get<double>(), 96.0 * 1073741824.0);
  EXPECT_GT(j["step_time_s"].get<double>(), 0.0);
}

TEST(Calibrate, RecoversAPlantedEfficiencyScale) {
  // Runs "measured" on a device whose compute is 0.7x as efficient as the catalog says: calibration recovers 0.7.
  auto hw = test::device("a100-80g");
  hardware::Hardware slow = hw;
  slow.efficiency.gemm *= 0.7;
  slow.efficiency.attention *= 0.7;
  slow.efficiency.memory *= 0.7;
  std::vector<cost::MeasuredRun> runs;
  for (auto [name, tp, pp] : std::vector<std::tuple<const char*, int, int>>{{"llama3-8b", 1, 1}, {"llama3-8b", 2, 2}, {"llama3-70b", 8, 2}}) {
    cost::MeasuredRun r;
    r.name = name;
    r.model = test::bundled(name);
    r.devices = 16;
    r.training = job(64, 4096);
    r.layout.tp = tp;
    r.layout.pp = pp;
    r.layout.dp = static_cast<int>(16 / (tp * pp));
    r.layout.micro_batches = static_cast<int>(64 / r.layout.dp);
    r.layout.sp = tp > 1;
    r.layout.recompute = plan::Recompute::Full;
    r.step_time_s = cost::estimate_time(r.model, r.layout, r.training, slow).step_s;
    runs.push_back(std::move(r));
  }
  auto c = cost::calibrate(runs, hw);
  EXPECT_NEAR(c.scale, 0.7, 0.01);
  for (double e : c.errors_after) EXPECT_LT(std::fabs(e), 0.02);
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
