// Topology: which link each group's collectives use (rank order, NICs of a node, all-to-all levels), and a user's
// hardware file.
#include <algorithm>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cost/calibrate.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"

using namespace sapp;
using test::training;

TEST(Topology, RankOrderDecidesWhichLinkAGroupUses) {
  // TP 8 innermost stays on NVLink; with PP innermost the TP group is strided across 8 nodes and its
  // collectives run on the inter-node link.
  auto m = test::bundled("llama3-70b");
  auto hw = test::device("h100-sxm");
  plan::Training t = training(64, 8192);
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
  plan::Training t = training(256, 4096);
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

TEST(Topology, AGB200RackIsOneNVLinkDomainOf72) {
  // GB200 NVL72 (data/hardware/gb200.yaml, NVIDIA's NVL72 specifications): a ring of 64 GPUs stays on NVLink's
  // 900 GB/s per direction; on HGX B200 (8 GPUs per NVLink domain) the same ring crosses nodes, 8 NICs of 50 GB/s.
  auto gb = test::device("gb200");
  EXPECT_DOUBLE_EQ(gb.ring_link(64, 1).bandwidth, 900e9);
  EXPECT_LT(test::device("b200").ring_link(64, 1).bandwidth, 900e9);
  EXPECT_DOUBLE_EQ(gb.peak_flops, 2.5e15);
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
