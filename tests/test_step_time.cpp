// Step-time terms a layout changes: recompute repeats the forward collectives, interleaving hides more of the
// gradient reduce, ZeRO shards are reduced and gathered, flash attention's backward, FP8 casts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cost/calibrate.hpp"
#include "cost/memory.hpp"
#include "cost/terms.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"

using namespace sapp;
using test::training;

TEST(StepTime, FullRecomputeRepeatsTheForwardCollectives) {
  // Megatron's full recompute re-runs each layer's forward, its TP collectives included: one more forward's
  // worth on top of forward + backward, i.e. 1.5x the exposed TP time.
  auto m = test::bundled("llama3-70b");
  auto hw = test::device("h100-sxm");
  plan::Training t = training(64, 4096);
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
  plan::Training t = training(128, 4096);
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
    plan::Training t = training(8LL * micro_batches, 4096);
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
  // is tens of GB per micro-batch, far more than its compute can hide (the compute itself is slow here: expert TP 1
  // under TP 2 leaves each expert 128 rows per micro-batch).
  auto m = test::bundled("qwen3-235b-a22b");
  auto hw = test::device("h100-sxm");
  plan::Training t = training(512, 4096);
  plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.pp = 8;
  l.vpp = 4;
  l.dp = 16;
  l.micro_batches = 32;
  l.zero = 3;
  auto time = cost::estimate_time(m, l, t, hw);
  EXPECT_GT(time.breakdown.dp_comm_s, 1.5 * time.breakdown.compute_s);
}

TEST(StepTime, ExpertTpOneUnderTpRunsEachExpertOnTheRanksOwnTokens) {
  // Megatron-Core's dispatcher gathers tokens over the expert-TP group, not the TP group (moe/token_dispatcher.py,
  // core_v0.14.0): under TP 4 + SP with expert TP 1 and no EP, each rank runs all 128 experts at full width on its
  // own quarter of a 4-sequence micro-batch, exactly what one rank without TP runs on one sequence. The grouped
  // GEMM's rows per expert, and so its weight-gradient floor (every local expert's gradient moved per micro-batch),
  // are the same both ways.
  auto m = test::bundled("qwen3-30b-a3b");
  auto hw = test::device("h100-sxm");
  plan::Layout one;
  one.micro_batches = 8;
  plan::Layout tp4 = one;
  tp4.tp = 4;
  tp4.sp = true;
  tp4.mbs = 4;
  const auto single = cost::kind_times(m, one, training(8, 4096), hw).kinds.at(0);
  const auto sharded = cost::kind_times(m, tp4, training(32, 4096), hw).kinds.at(0);
  ASSERT_GT(single.wgrad_floor_s, 0.0);
  EXPECT_NEAR(sharded.wgrad_floor_s, single.wgrad_floor_s, 1e-9 * single.wgrad_floor_s);
  // With expert TP 4 the experts are a quarter as wide and see the TP group's gathered tokens: less floor per rank.
  tp4.etp = 4;
  EXPECT_LT(cost::kind_times(m, tp4, training(32, 4096), hw).kinds.at(0).wgrad_floor_s, single.wgrad_floor_s);
}

namespace {

// The first layer kind of a bundled model on one H100 SXM (no parallelism, 8 micro-batches), priced under `t`.
cost::KindTime first_kind_on_one_h100(const std::string& model, const plan::Training& t) {
  plan::Layout l;
  l.micro_batches = 8;
  return cost::kind_times(test::bundled(model), l, t, test::device("h100-sxm")).kinds.at(0);
}
cost::KindTime llama8b_layer(const plan::Training& t) { return first_kind_on_one_h100("llama3-8b", t); }

// That layer's causal attention forward at the device's attention efficiency: 2 matmuls x 2 FLOPs x s x ctx x a x dh,
// ctx = (s + 1) / 2, s = 8192, a = 32, dh = 128.
double llama8b_attention_forward_s() {
  const hardware::Hardware hw = test::device("h100-sxm");
  double s = 8192, ctx = (s + 1) / 2, a = 32, dh = 128;
  return 2 * 2 * s * ctx * a * dh / (hw.peak_flops * hw.efficiency.attention);
}

}  // namespace

TEST(StepTime, FlashAttentionBackwardRecomputesTheScores) {
  // FlashAttention-2's backward runs five matmuls against the forward's two (2.5x); eager attention's four
  // (2x), like every GEMM. So backward - 2 x forward is half the attention forward with flash, zero without. At the
  // device's fitted attention rate (the default, auto, takes cuDNN 9.19's on an H100 SXM).
  plan::Training t = training(8, 8192);
  t.attention_kernel = plan::AttentionKernel::Fused;
  auto flash = llama8b_layer(t);
  double attention_s = llama8b_attention_forward_s();
  EXPECT_NEAR(flash.bwd_s - 2 * flash.fwd_s, 0.5 * attention_s, 1e-3 * attention_s);
  t.flash_attention = false;
  auto eager = llama8b_layer(t);
  EXPECT_NEAR(eager.bwd_s, 2 * eager.fwd_s, 1e-12 * eager.fwd_s);
}

TEST(StepTime, TorchSdpaSlowsTheCoreAttentionOnly) {
  // F.scaled_dot_product_attention ran FlashAttention-2 on H100 at 329.5 TFLOPS where cuDNN's fused attention
  // (Transformer Engine's, which the device efficiencies were fitted with) ran 631.3 (pytorch/pytorch issue #142132):
  // the attention forward takes 631.3 / 329.5 as long, nothing else changes.
  plan::Training t = training(8, 8192);
  t.attention_kernel = plan::AttentionKernel::Fused;
  auto te = llama8b_layer(t);
  t.attention_kernel = plan::AttentionKernel::TorchSdpa;
  auto sdpa = llama8b_layer(t);
  double attention_s = llama8b_attention_forward_s();
  EXPECT_NEAR(sdpa.fwd_s - te.fwd_s, attention_s * (631.3 / 329.5 - 1), 1e-3 * attention_s);
  EXPECT_EQ(sdpa.fwd_flops, te.fwd_flops);
}

TEST(StepTime, NarrowAttentionHeadsRunAtThePublishedKernelRate) {
  // cuDNN's flash attention forward on H100 at sequence 4k: 408 TFLOPS at head dimension 64 against 609 at 128
  // (FlashAttention-3, arXiv:2407.08608, Figure 5); FlashAttention-2: 321 against 368. Between the published head
  // dimensions the rate is interpolated; outside them it stays at the nearest.
  using plan::AttentionKernel;
  EXPECT_DOUBLE_EQ(cost::terms::attention_kernel_rate(AttentionKernel::Fused, 128), 1.0);
  EXPECT_NEAR(cost::terms::attention_kernel_rate(AttentionKernel::Fused, 64), 408.0 / 609, 1e-12);
  EXPECT_NEAR(cost::terms::attention_kernel_rate(AttentionKernel::Fused, 32), 408.0 / 609, 1e-12);
  EXPECT_NEAR(cost::terms::attention_kernel_rate(AttentionKernel::Fused, 192), (609.0 + 581) / 2 / 609, 1e-12);  // MLA's q-k
  EXPECT_NEAR(cost::terms::attention_kernel_rate(AttentionKernel::TorchSdpa, 128), cost::terms::kTorchSdpaAttentionRate, 1e-12);
  EXPECT_NEAR(cost::terms::attention_kernel_rate(AttentionKernel::TorchSdpa, 64), cost::terms::kTorchSdpaAttentionRate * 321 / 368, 1e-12);
  // Llama 3 8B with its query width 4096 and key-value width 1024 cut into 64 heads of 64: the same FLOPs everywhere,
  // and the core attention at cuDNN's head-dimension-64 rate.
  const std::string dir = test::temp_dir();
  test::write_file(dir + "/narrow.json", R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 64,
    "head_dim": 64, "num_hidden_layers": 32, "num_key_value_heads": 16, "vocab_size": 128256, "tie_word_embeddings": false})");
  const model::Model narrow = model::resolve(model::load_model(dir + "/narrow.json", test::data_dir()), test::catalog().records, test::catalog().profiles);
  plan::Training t = training(8, 8192);
  t.attention_kernel = plan::AttentionKernel::Fused;
  plan::Layout l;
  l.micro_batches = 8;
  const cost::KindTime wide_heads = llama8b_layer(t);
  const cost::KindTime narrow_heads = cost::kind_times(narrow, l, t, test::device("h100-sxm")).kinds.at(0);
  const double attention_s = llama8b_attention_forward_s();
  EXPECT_EQ(narrow_heads.fwd_flops, wide_heads.fwd_flops);
  EXPECT_NEAR(narrow_heads.fwd_s - wide_heads.fwd_s, attention_s * (609.0 / 408 - 1), 1e-3 * attention_s);
}

TEST(StepTime, Cudnn919AttentionRunsAtItsPublishedBenchmarkRate) {
  // NVIDIA's published cuDNN 9.19 SDPA training benchmark (NVIDIA/cudnn-frontend at df73764, benchmark/
  // sdpa_benchmark_training/results/{h200,gb200,gb300}_919_only_cudnn/llama3.1_*.csv, every BF16 row: batch 1, 64 query and 8
  // key-value heads of 128; sequence, causal or unmasked, forward and backward ms, forward and backward TFLOPS). A
  // causal call's queries attend s / 2 keys on average, an unmasked one's s. The law the device files state
  // (attention_cudnn919 x k / (k + attention_cudnn919_half_keys)) meets each row's forward + backward rate within 6 %
  // on H200 (its fit: -5.6 to +5.6 %), 3 % on GB200 and 3.5 % on GB300 (-2.2 to +3.1 %).
  struct Row {
    const char* device;
    double seq;
    bool causal;
    double fwd_ms, bwd_ms, fwd_tflops, bwd_tflops;
  };
  const Row rows[] = {
      {"h200", 32768, true, 25.566, 75.688, 688, 581},    {"h200", 32768, false, 50.769, 153.841, 693, 572},
      {"h200", 16384, true, 6.531, 19.002, 673, 579},     {"h200", 16384, false, 12.524, 35.947, 702, 612},
      {"h200", 8192, true, 1.708, 5.083, 644, 541},       {"h200", 8192, false, 3.182, 9.262, 691, 594},
      {"h200", 4096, true, 0.465, 1.450, 591, 474},       {"h200", 4096, false, 0.819, 2.453, 671, 560},
      {"h200", 2048, true, 0.142, 0.464, 484, 370},       {"h200", 2048, false, 0.217, 0.681, 633, 504},
      {"gb200", 32768, true, 10.226, 29.863, 1720, 1473}, {"gb200", 32768, false, 19.759, 58.606, 1781, 1501},
      {"gb200", 16384, true, 2.606, 7.845, 1687, 1402},   {"gb200", 16384, false, 4.972, 15.111, 1769, 1455},
      {"gb200", 8192, true, 0.688, 2.097, 1598, 1311},    {"gb200", 8192, false, 1.286, 3.901, 1709, 1409},
      {"gb200", 4096, true, 0.206, 0.607, 1335, 1132},    {"gb200", 4096, false, 0.345, 1.068, 1593, 1287},
      {"gb200", 2048, true, 0.066, 0.206, 1042, 836},     {"gb200", 2048, false, 0.110, 0.315, 1245, 1089},
      {"gb300", 32768, true, 8.734, 28.390, 2014, 1549},  {"gb300", 32768, false, 18.719, 56.571, 1880, 1555},
      {"gb300", 16384, true, 2.235, 7.380, 1968, 1490},   {"gb300", 16384, false, 4.415, 14.110, 1992, 1559},
      {"gb300", 8192, true, 0.583, 1.985, 1887, 1385},    {"gb300", 8192, false, 1.140, 3.663, 1930, 1501},
      {"gb300", 4096, true, 0.164, 0.575, 1672, 1195},    {"gb300", 4096, false, 0.294, 1.016, 1872, 1353},
      {"gb300", 2048, true, 0.054, 0.190, 1266, 906},     {"gb300", 2048, false, 0.088, 0.294, 1568, 1168},
  };
  for (const Row& r : rows) {
    const hardware::Hardware hw = test::device(r.device);
    const double published_tflops = (r.fwd_tflops * r.fwd_ms + r.bwd_tflops * r.bwd_ms) / (r.fwd_ms + r.bwd_ms);
    const double priced_tflops = cost::terms::cudnn919_attention_efficiency(hw, r.causal ? r.seq / 2 : r.seq, 128) * hw.peak_flops / 1e12;
    EXPECT_NEAR(priced_tflops / published_tflops, 1.0, std::string(r.device) == "h200" ? 0.06 : 0.035)
        << r.device << " " << r.seq << (r.causal ? " causal" : " unmasked");
  }
  // In a layer: Llama 3 8B at 8192 on one H100 SXM (H200's law, same SMs and clock): the core attention's forward runs
  // at 0.654 x 4096.5 / (4096.5 + 575) of the BF16 peak instead of the fitted 0.317, nothing else changes.
  plan::Training t = training(8, 8192);
  t.attention_kernel = plan::AttentionKernel::Fused;
  const cost::KindTime fused = llama8b_layer(t);
  t.attention_kernel = plan::AttentionKernel::Cudnn919;
  const cost::KindTime cudnn919 = llama8b_layer(t);
  // The default, auto, is cuDNN 9.19's rate on a device whose file states it (h100-sxm), the fitted one elsewhere.
  t.attention_kernel = plan::AttentionKernel::Auto;
  EXPECT_EQ(llama8b_layer(t).fwd_s, cudnn919.fwd_s);
  EXPECT_EQ(cost::terms::resolved_attention_kernel(plan::AttentionKernel::Auto, test::device("b200")), plan::AttentionKernel::Fused);
  EXPECT_EQ(cost::terms::resolved_attention_kernel(plan::AttentionKernel::TorchSdpa, test::device("h100-sxm")), plan::AttentionKernel::TorchSdpa);
  const hardware::Hardware h100 = test::device("h100-sxm");
  const double keys = (8192.0 + 1) / 2;
  const double ratio = h100.efficiency.attention / (0.654 * keys / (keys + 575));
  const double attention_s = llama8b_attention_forward_s();
  EXPECT_NEAR(cudnn919.fwd_s - fused.fwd_s, attention_s * (ratio - 1), 1e-3 * attention_s);
  EXPECT_EQ(cudnn919.fwd_flops, fused.fwd_flops);
  // A device whose file states no published rate refuses the kernel, naming itself and the two keys.
  try {
    (void)cost::terms::cudnn919_attention_efficiency(test::device("b200"), 4096, 128);
    ADD_FAILURE() << "b200 states no cuDNN 9.19 rate";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b200"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attention_cudnn919_half_keys"), std::string::npos) << e.what();
  }
}

TEST(StepTime, ClampedSwigluAndExpertBiasesRunAsEagerPasses) {
  // GPT-OSS-120B's experts as Megatron-Core runs them (data/op_records.yaml, expert_clamp_eager and
  // expert_bias_eager): the clamps and concatenation move 8 ffn elements per routed copy forward and 6 backward, the
  // per-expert bias loop 6 h forward and 2 backward. Without those two terms the layer is that much faster.
  const hardware::Hardware hw = test::device("h100-sxm");
  const plan::Training t = training(8, 8192);
  plan::Layout l;
  l.micro_batches = 8;
  const model::Model eager = test::bundled("gpt-oss-120b");
  model::Model fused = eager;
  auto eager_term = [](const model::WorkTerm& w) { return w.name == "expert_clamp_eager" || w.name == "expert_bias_eager"; };
  for (auto& kind : fused.kinds) std::erase_if(kind.work, eager_term);
  const cost::KindTime with = cost::kind_times(eager, l, t, hw).kinds.at(0);
  const cost::KindTime without = cost::kind_times(fused, l, t, hw).kinds.at(0);
  const double routed = 8192.0 * 4 * 2;  // tokens x top-k x bf16 bytes
  const double ffn = 2880, h = 2880, rate = hw.hbm_bandwidth * hw.efficiency.memory;
  const double forward_s = routed * (8 * ffn + 6 * h) / rate;
  const double backward_s = routed * (6 * ffn + 2 * h) / rate;
  EXPECT_NEAR(with.fwd_s - without.fwd_s, forward_s, 1e-6 * forward_s);
  EXPECT_NEAR(with.bwd_s - without.bwd_s, backward_s, 1e-6 * backward_s);
  // Qwen3-30B-A3B's SwiGLU has no clamp and its experts no biases: the two terms add nothing there.
  const model::Model qwen = test::bundled("qwen3-30b-a3b");
  model::Model qwen_without = qwen;
  for (auto& kind : qwen_without.kinds) std::erase_if(kind.work, eager_term);
  EXPECT_EQ(cost::kind_times(qwen, l, t, hw).kinds.at(0).fwd_s, cost::kind_times(qwen_without, l, t, hw).kinds.at(0).fwd_s);
}

TEST(StepTime, EagerRmsNormMovesNineTimesTheBytes) {
  // torchtitan's eager RMSNorm (x.float(), pow, mean, x * rsqrt, type_as, * weight) moves 36 bytes per bf16 element
  // where a fused norm moves 4 (data/op_records.yaml, norms): Llama's two norms per layer, s = 8192, h = 4096.
  const hardware::Hardware hw = test::device("h100-sxm");
  plan::Training t = training(8, 8192);
  auto fused = llama8b_layer(t);
  t.eager_norms = true;
  auto eager = llama8b_layer(t);
  double fused_norm_bytes = 2 * 2 * 8192.0 * 2 * 4096;
  double extra_s = 8 * fused_norm_bytes / (hw.hbm_bandwidth * hw.efficiency.memory);
  EXPECT_NEAR(eager.fwd_s - fused.fwd_s, extra_s, 1e-6 * extra_s);
  EXPECT_NEAR(eager.bwd_s - fused.bwd_s, 2 * extra_s, 1e-6 * extra_s);  // a memory op's backward: twice its bytes
  EXPECT_EQ(eager.fwd_flops, fused.fwd_flops);
}

TEST(StepTime, NarrowExpertGroupedGemmRunsAtThePublishedKernelRate) {
  // Qwen3-30B-A3B's routed experts (h 2048, expert width 768, 128 experts, top-8) on one H100 in BF16, 32768 tokens:
  // torch._grouped_mm's fused MoE forward ran 242.12 TFLOP/s on that shape (ByteDance-Seed/VeOmni PR #460, "Torch
  // Fused MoE", B=1 S=32768 H=2048 FFN=768 Experts=128 TopK=8). sapp's price of the experts' grouped GEMMs (the dense
  // rate ramped on 2048 rows per expert, plus the narrow-width loss grouped_gemm_half_width / 768, h100-sxm.yaml) must agree within
  // 10 %. The routed work is isolated as what doubles with moe_imbalance, minus the permutation's bytes.
  const hardware::Hardware hw = test::device("h100-sxm");
  plan::Training t = training(8, 32768);
  t.moe_imbalance = 1.0;
  auto once = first_kind_on_one_h100("qwen3-30b-a3b", t);
  t.moe_imbalance = 2.0;
  auto twice = first_kind_on_one_h100("qwen3-30b-a3b", t);
  const double s = 32768, topk = 8, h = 2048, width = 768;
  double permute_s = s * topk * 2 * h * 5 / (hw.hbm_bandwidth * hw.efficiency.memory);  // moe_permute: 5 h-wide bf16 passes
  double experts_s = (twice.fwd_s - once.fwd_s) - permute_s;
  double experts_flops = 2 * s * topk * h * width * 3;  // gate, up and down projections
  std::printf("Qwen3-30B-A3B experts, H100 BF16: %.1f TFLOP/s priced, 242.1 published\n", experts_flops / experts_s / 1e12);
  EXPECT_NEAR(experts_flops / experts_s / 1e12, 242.12, 0.10 * 242.12);
}

// A weight-gradient GEMM reads and writes its accumulated gradient every micro-batch (Megatron-Core's
// gradient_accumulation_fusion into main_grad; terms::wgrad_pass_min_bytes). Qwen3-235B-A22B's 128 experts (h 4096,
// width 1536, gate, up and down) all on one H100 in BF16 with fp32 gradients, 4096 tokens: 256 rows per expert, so the
// pass moves 128 x 4096 x 1536 x 3 weights x 2 x 4 bytes plus 4096 x 8 routed copies x (2 x 4096 + 3 x 1536) BF16
// inputs, more than its GEMM's time at the device's memory rate; the backward pays the difference. At 65536 tokens
// (4096 rows per expert) the GEMM is the longer and nothing is added.
TEST(StepTime, ExpertWeightGradientsMoveTheirGradientsEveryMicroBatch) {
  const hardware::Hardware hw = test::device("h100-sxm");
  const double rate = hw.hbm_bandwidth * hw.efficiency.memory;
  const double h = 4096, width = 1536, experts = 128, topk = 8;
  for (double s : {4096.0, 65536.0}) {
    plan::Training t = training(8, static_cast<long long>(s));
    t.moe_imbalance = 1.0;
    const cost::KindTime once = first_kind_on_one_h100("qwen3-235b-a22b", t);
    t.moe_imbalance = 2.0;
    const cost::KindTime twice = first_kind_on_one_h100("qwen3-235b-a22b", t);
    const double permute_s = s * topk * 2 * h * 5 / rate;  // moe_permute: 5 h-wide bf16 passes
    const double experts_s = (twice.fwd_s - once.fwd_s) - permute_s;
    const double bytes = experts * h * width * 3 * 2 * 4 + s * topk * (2 * h + 3 * width) * 2;
    std::printf("Qwen3-235B-A22B experts at %.0f tokens, H100 BF16: weight-gradient pass %.3f ms at the memory rate, GEMM %.3f ms\n", s, 1e3 * bytes / rate,
                1e3 * experts_s);
    EXPECT_NEAR(once.wgrad_floor_s, std::max(0.0, bytes / rate - experts_s), 1e-6) << s;
  }
  EXPECT_GT(first_kind_on_one_h100("qwen3-235b-a22b", training(8, 4096)).wgrad_floor_s, 0.0);
  plan::Training lora = training(8, 4096);
  lora.lora_rank = 16;  // frozen experts: no weight gradients
  EXPECT_EQ(first_kind_on_one_h100("qwen3-235b-a22b", lora).wgrad_floor_s, 0.0);
}

// Megatron-Core overlaps pipeline sends only in its interleaved schedule (overlap_p2p_comm); in 1F1B each steady-state
// micro-batch blocks on one activation send forward and one gradient send backward. Llama 3 8B over PP 4 on H100
// nodes (PP neighbours on the node's NVLink, 450 GB/s at the device's comm efficiency): one send is 4096 x 4096 x 2 bytes.
// Under the Megatron-Bridge profile the 1F1B step pays them all, the interleaved one only its fill and drain;
// --overlap-pp, when stated, holds for both schedules.
TEST(StepTime, OneFOneBBlocksOnItsPipelineSendsUnderMegatron) {
  const auto hw = test::device("h100-sxm");
  const auto m = test::bundled("llama3-8b");
  const auto& profile = cost::terms::framework_profile("megatron_bridge");
  plan::Training t = training(32, 4096);
  cost::terms::apply_profile(profile, t);
  plan::Layout l;
  l.pp = 4;
  l.dp = 1;
  l.micro_batches = 32;
  const hardware::Level link = hw.level_for_span(4);
  const double one = 4096.0 * 4096 * 2 / (link.bandwidth * hw.efficiency.comm) + link.latency;
  EXPECT_NEAR(cost::estimate_time(m, l, t, hw, profile.overlap).breakdown.pp_comm_s, 2 * 3 * one + 2 * 32 * one, 1e-9);
  plan::Layout interleaved = l;
  interleaved.vpp = 2;
  EXPECT_NEAR(cost::estimate_time(m, interleaved, t, hw, profile.overlap).breakdown.pp_comm_s, 2 * 3 * 2 * one, 1e-9);
  cost::Overlap stated = profile.overlap;
  stated.pp = 1.0;
  stated.pp_1f1b = -1.0;  // what --overlap-pp 1 sets
  EXPECT_NEAR(cost::estimate_time(m, l, t, hw, stated).breakdown.pp_comm_s, 2 * 3 * one, 1e-9);
  const cost::Overlap titan = cost::terms::framework_profile("torchtitan").overlap;
  EXPECT_EQ(titan.pp_for(1), titan.pp);
  EXPECT_EQ(profile.overlap.pp_for(1), 0.0);
  EXPECT_EQ(profile.overlap.pp_for(2), profile.overlap.pp);
}

TEST(StepTime, Fp8AddsTheCastTrafficOfEveryGemmInput) {
  // Transformer Engine casts each GEMM input to FP8 with its transpose (4 bytes moved per element); on a
  // dense Llama layer at TP 1 the inputs are h (QKV), a x dv (output projection), h (FFN in), ffn (FFN out).
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t = training(8, 4096);
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

// NVFP4 GEMMs (Transformer Engine's GEMM profiling guide, B300, a hidden-4096 FFN-16384 layer at 15872 tokens, per
// layer of 12 GEMMs): pre-quantised kernels 7.161 ms in MXFP8 against 3.764 ms in NVFP4; the quantisation on top
// (autocast minus pre-quantised) 8.984 - 7.161 against 6.453 - 3.764 ms. On a device whose file states no gemm_fp4
// a large GEMM runs that kernel ratio faster in NVFP4 than in FP8, and the casts move that overhead ratio more bytes.
// A device without FP4 tensor cores refuses NVFP4, naming the key.
TEST(StepTime, Nvfp4RunsTheGemmsAtThePublishedKernelRatioOverMxfp8) {
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("b300");
  plan::Training t = training(8, 4096);
  plan::Layout l;
  l.micro_batches = 8;
  t.fp8 = true;
  const double fp8_s = cost::estimate_time(m, l, t, hw).breakdown.compute_s;
  t.fp4 = true;
  const double fp4_s = cost::estimate_time(m, l, t, hw).breakdown.compute_s;
  EXPECT_LT(fp4_s, fp8_s);
  // The GEMM rates alone: one large GEMM priced through a device with no other work.
  EXPECT_NEAR(hw.fp4_gemm_efficiency() * hw.peak_flops_fp4 / (hw.efficiency.gemm_fp8 * hw.peak_flops_fp8), 7.161 / 3.764, 1e-12);
  EXPECT_NEAR(t.quantize_cast_bytes() / 4.0, (6.453 - 3.764) / (8.984 - 7.161), 1e-12);
  EXPECT_DOUBLE_EQ(t.quantized_bytes(), 0.5 + 1.0 / 16);  // E2M1 values and one E4M3 scale per 16
  try {
    (void)cost::estimate_time(m, l, t, test::device("h100-sxm"));
    ADD_FAILURE() << "NVFP4 priced on H100";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("peak_flops_fp4"), std::string::npos) << e.what();
  }
}

namespace {

// Local attention (a sliding window or chunks of `span` tokens) against the same model attending fully: equal
// step time at `span` tokens, where the window or chunk is the whole causal context; at `long_seq` the local
// model is faster by more than a fifth (attention core only; GEMMs and memory are the same).
void expect_local_attention_pays_only_beyond_its_span(const model::Model& local, const model::Model& full, long long span, long long long_seq, int ep) {
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.tp = 8;
  l.ep = ep;
  l.dp = 1;
  l.micro_batches = 8;
  l.sp = true;
  plan::Training at_span = training(8, span);
  EXPECT_DOUBLE_EQ(cost::estimate_time(local, l, at_span, hw).step_s, cost::estimate_time(full, l, at_span, hw).step_s);
  plan::Training beyond = training(8, long_seq);
  EXPECT_LT(cost::estimate_time(local, l, beyond, hw).step_s, 0.8 * cost::estimate_time(full, l, beyond, hw).step_s) << "seq " << long_seq;
}

}  // namespace

TEST(StepTime, MistralsSlidingWindowCutsLongSequenceAttentionOnly) {
  // Mistral 7B v0.1 attends the last 4096 keys in every layer (arXiv:2310.06825 §2): at 32768 tokens a query
  // attends at most 4096 keys instead of 16384 on average.
  auto windowed = test::bundled("mistral-7b-v0.1");
  auto spec = windowed.spec;
  spec.sliding_window.reset();
  expect_local_attention_pays_only_beyond_its_span(windowed, model::resolve(spec, test::catalog().records, test::catalog().profiles), 4096, 32768, 1);
}

TEST(StepTime, Llama4sChunkedAttentionCutsLongSequenceAttentionOnly) {
  // Three of four Llama 4 layers attend within chunks of 8192 tokens: at 65536 a query attends 4096 keys on
  // average instead of 32768.
  auto chunked = test::bundled("llama4-scout");
  auto spec = chunked.spec;
  spec.attention_chunk = 1LL << 40;  // one chunk longer than any sequence: plain causal attention
  expect_local_attention_pays_only_beyond_its_span(chunked, model::resolve(spec, test::catalog().records, test::catalog().profiles), 8192, 65536, 8);
}

namespace {
// Exposed EP all-to-all seconds of one step on H100 nodes, nothing overlapped, with DeepEP's deduplicated dispatch
// or the alltoall dispatcher's copy per routed expert.
double exposed_ep_s(const model::Model& m, const plan::Layout& l, plan::Training t, bool deepep) {
  cost::Overlap none;
  none.ep = 0;
  t.ep_dedup_per_node = deepep;
  return cost::estimate_time(m, l, t, test::device("h100-sxm"), none).breakdown.ep_comm_s;
}
// EP 64 over 8 H100 nodes (PP 16, DP 64, 16 micro-batches), as DeepSeek-V3 runs in the tests below.
plan::Layout ep64_over_eight_nodes() {
  plan::Layout l;
  l.tp = 1;
  l.pp = 16;
  l.ep = 64;
  l.dp = 64;
  l.micro_batches = 16;
  return l;
}
// EP 8 within one node (DP 8, 4 micro-batches), as Qwen3-30B-A3B runs in the tests below.
plan::Layout ep8_in_one_node() {
  plan::Layout l;
  l.dp = 8;
  l.ep = 8;
  l.micro_batches = 4;
  return l;
}
}  // namespace

TEST(StepTime, NodeLimitedRoutingCutsDeepEPsInterNodeCopies) {
  // DeepSeek-V3 routes each token to experts on at most topk_group = 4 of n_group = 8 groups (arXiv:2412.19437
  // §2.1.2). With EP 64 over 8 H100 nodes a group is a node; DeepEP sends one copy per remote node, so a token's
  // inter-node copies are 4 x 7/8 = 3.5 instead of 7 (1 - (7/8)^8) = 4.59 for unrestricted top-8 routing. The
  // alltoall dispatcher sends every routed copy either way.
  auto limited = test::bundled("deepseek-v3");
  ASSERT_EQ(limited.spec.routing_group_limit.value_or(0), 4);
  auto spec = limited.spec;
  spec.routing_groups.reset();
  spec.routing_group_limit.reset();
  auto unlimited = model::resolve(spec, test::catalog().records, test::catalog().profiles);
  const plan::Layout l = ep64_over_eight_nodes();
  const plan::Training t = training(1024, 4096);
  EXPECT_NEAR(exposed_ep_s(limited, l, t, true) / exposed_ep_s(unlimited, l, t, true), 3.5 / (7.0 * (1.0 - std::pow(7.0 / 8.0, 8))), 0.02);
  EXPECT_DOUBLE_EQ(exposed_ep_s(limited, l, t, false), exposed_ep_s(unlimited, l, t, false));
}

// Ring CP hides each step's K,V transfer behind that step's attention, no more (issue 9, physical overlap): over
// random blocks and attention times, the exposed time is at least the transfers minus the attention they run
// beside, never more than the transfers, and nothing when every transfer is shorter than its step's attention.
TEST(StepTime, RingContextParallelHidesOnlyBehindEachStepsAttention) {
  unsigned state = 12345;
  auto uniform = [&](double lo, double hi) {
    state = state * 1103515245u + 12345u;
    return lo + (hi - lo) * static_cast<double>((state >> 8) & 0xFFFF) / 65535.0;
  };
  for (int i = 0; i < 500; ++i) {
    double cp = static_cast<double>(1 << static_cast<int>(uniform(1, 5.99)));
    double block = uniform(1e-5, 1e-2), fwd = uniform(1e-4, 1e-1), bwd = uniform(1.0, 3.0) * fwd, overlap = uniform(0, 1);
    double raw = cost::terms::kRingCpPassesPerStep * (cp - 1) * block;
    double exposed = cost::terms::ring_cp_exposed_seconds(cp, block, fwd, bwd, overlap);
    EXPECT_GE(exposed, raw - overlap * (fwd + bwd) * (cp - 1) / cp - 1e-15);
    EXPECT_LE(exposed, raw + 1e-15);
    if (block <= overlap * fwd / cp && 2 * block <= overlap * bwd / cp) {
      EXPECT_EQ(exposed, 0.0);
    }
  }
  EXPECT_EQ(cost::terms::ring_cp_exposed_seconds(1, 1.0, 0, 0, 1), 0.0);
  // A step whose attention is half its transfer leaves the other half exposed, forward and backward.
  EXPECT_DOUBLE_EQ(cost::terms::ring_cp_exposed_seconds(2, 1.0, 1.0, 2.0, 1.0), 0.5 + 1.0);
}

// Ring CP merges each step's partial output, and in the backward each step's dQ and the dK,dV passed along, in one
// pass of 3 elements per element (Transformer Engine's AttnFuncWithCPAndKVP2P): Llama 3 8B at 32k over CP 4, TP 2,
// 8192 local tokens x 16 heads x 128 of output and 8192 x 2 x 4 x 128 of K,V per rank, (3 x 4 + 1) / 4 steps' worth,
// BF16, at the device's element-wise rate; in the forward and backward times, a full recompute repeats the forward's.
TEST(StepTime, RingContextParallelPaysItsMerges) {
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.cp = 4;
  l.dp = 1;
  l.micro_batches = 4;
  const plan::Training t = training(4, 32768);
  const cost::KindTime k = cost::kind_times(test::bundled("llama3-8b"), l, t, hw).kinds.at(0);
  const double rate = hw.hbm_bandwidth * hw.efficiency.memory;
  const double out = 8192.0 * 16 * 128, kv = 8192.0 * 2 * 4 * 128, steps = 13.0 / 4.0;
  EXPECT_NEAR(k.cp_merge_fwd_s, 3 * 2 * out * steps / rate, 1e-12);
  EXPECT_NEAR(k.cp_merge_bwd_s, 3 * 2 * (out + kv) * steps / rate, 1e-12);
  plan::Layout ulysses = l;
  ulysses.cp_algo = plan::CpAlgo::AllToAll;
  EXPECT_EQ(cost::kind_times(test::bundled("llama3-8b"), ulysses, t, hw).kinds.at(0).cp_merge_fwd_s, 0.0);
  plan::Layout no_cp = l;
  no_cp.cp = 1;
  EXPECT_EQ(cost::kind_times(test::bundled("llama3-8b"), no_cp, t, hw).kinds.at(0).cp_merge_bwd_s, 0.0);
}

// PyTorch's ring attention with its all-gather rotater (torchtitan's default context_parallel_rotate_method) gathers
// every rank's K,V once per pass and hides it behind the first step's attention only; the backward gathers again and
// passes the fp32 dK,dV beside each step. CP 4, a 1 ms block, 2 ms of fp32 dK,dV, 2 ms of attention forward and 4 ms
// backward (1/4 of each per step): the gather (3 ms) shows 2.5 ms forward; backward 2 ms of the gather + 3 x 1 ms.
TEST(StepTime, GatheredContextParallelHidesOnlyBehindTheFirstStep) {
  const cost::terms::GatheredCp g = cost::terms::gathered_cp_seconds(4, 1e-3, 2e-3, 2e-3, 4e-3, 1.0);
  EXPECT_NEAR(g.forward_s, 2.5e-3, 1e-15);
  EXPECT_NEAR(g.backward_s, 2e-3 + 3e-3, 1e-15);
  EXPECT_NEAR(g.raw_s, 2 * 3e-3 + 3 * 2e-3, 1e-15);
  EXPECT_EQ(cost::terms::gathered_cp_seconds(1, 1.0, 1.0, 0, 0, 1).raw_s, 0.0);
  // Attention long enough for every transfer hides all of it.
  const cost::terms::GatheredCp hidden = cost::terms::gathered_cp_seconds(4, 1e-3, 2e-3, 1.0, 2.0, 1.0);
  EXPECT_EQ(hidden.forward_s + hidden.backward_s, 0.0);
}

// torchtitan (TOML era) runs ring CP on K,V repeated to the query heads (repeat_kv before SDPA) and gathered once per
// pass: Llama 3.1 405B at 256k over CP 8 and TP 8, across nodes, exposes CP time that Transformer Engine's ring (GQA
// heads, a block per step) hides, and the gathered K,V (8 ranks x 32768 tokens x 16 heads x 128 x 2 (K,V) x 2 B, plus
// two fp32 dK,dV blocks: 3 GiB) are the CP buffer of a stage without the loss; Llama 3 8B at 32k moves 4 x the K,V.
TEST(StepTime, TorchtitanContextParallelAsItRanIt) {
  auto hw = test::device("h100-96g");
  plan::Layout l;
  l.tp = 8;
  l.sp = true;
  l.cp = 8;
  l.pp = 8;
  l.dp = 1;
  l.micro_batches = 8;
  plan::Training titan = training(8, 262144);
  titan.cp_kv_gathered_once = true;
  titan.cp_kv_repeated = true;
  const plan::Training engine = training(8, 262144);
  const auto m = test::bundled("llama3.1-405b");
  const cost::KindTime torch = cost::kind_times(m, l, titan, hw).kinds.at(0);
  const cost::KindTime te = cost::kind_times(m, l, engine, hw).kinds.at(0);
  EXPECT_EQ(te.cp_s, 0.0);
  EXPECT_GT(torch.cp_s, 0.0);
  EXPECT_NEAR(torch.cp_raw_fwd_s / (te.cp_raw_s / 3.0), 16.0, 0.5);  // 16 repeated heads per TP rank against 1 KV head
  const double gathered = 8.0 * 32768 * 16 * 128 * 2 * 2 + 2.0 * 32768 * 16 * 128 * 2 * 4;
  EXPECT_NEAR(cost::estimate_memory(m, l, titan, 1e15).stages.at(0).cp_buffer, gathered, 1e-6 * gathered);
}

// LoRA adapters on Llama 3 8B's linear layers (op record lora_adapters, from NeMo AutoModel's TritonLinearLoRA): the
// forward reads each linear's input once more and writes, reads and adds an output-wide result, in + 4 out elements
// per token: q, k, v read h = 4096 each, o reads 4096, gate and up 4096 each, down 14336 (in 38912); out 4096 + 1024
// + 1024 + 4096 + 14336 + 14336 + 4096 (43008). The frozen layers' forward GEMMs are unchanged, so that is the
// whole forward difference, at the device's element-wise rate.
TEST(StepTime, LoraAdaptersPayTheirElementwisePasses) {
  auto hw = test::device("h100-sxm");
  plan::Training full = training(8, 4096);
  plan::Training lora = full;
  lora.lora_rank = 16;
  const double tokens = 4096.0;
  const double expected = tokens * 2 * (38912.0 + 4 * 43008.0) / (hw.hbm_bandwidth * hw.efficiency.memory);
  EXPECT_NEAR(llama8b_layer(lora).fwd_s - llama8b_layer(full).fwd_s, expected, 1e-9 * expected);
}

TEST(StepTime, DeepEPSendsATokenOncePerRankWithinANode) {
  // DeepEP's intranode dispatch sends a token once to each other rank holding any of its experts (get_dispatch_layout's
  // is_token_in_rank) and its combine returns one reduced copy per rank; the alltoall dispatcher moves each of the k
  // routed copies. Qwen3-30B-A3B, top-8 of 128 experts over EP 8 in one H100 node: 7 (1 - (7/8)^8) = 4.59 other ranks
  // reached against 8 x 7/8 = 7 remote copies.
  auto m = test::bundled("qwen3-30b-a3b");
  const plan::Layout l = ep8_in_one_node();
  const plan::Training t = training(32, 4096);
  EXPECT_NEAR(exposed_ep_s(m, l, t, true) / exposed_ep_s(m, l, t, false), 1.0 - std::pow(7.0 / 8.0, 8), 0.01);
}

TEST(StepTime, ContiguousRoutingReachesOneUnitPerToken) {
  // NeMo AutoModel's FakeBalancedGate (nemo_automodel/components/moe/layers.py at 8d9bfb90e) gives token i the
  // experts (i k + j) mod n, k consecutive ones: DeepSeek-V3's top-8 of 256 over EP 64 on 8 H100 nodes (32 experts
  // a node, 4 a rank) lands every token on one node, 7/8 of the time a remote one, where node-limited routing
  // reaches 4 x 7/8 = 3.5 remote nodes (the test above). Qwen3-30B-A3B's top-8 of 128 over EP 8 in one node (16
  // experts a rank): one rank, 7/8 remote, against 7 (1 - (7/8)^8) = 4.59 for random routing. The alltoall
  // dispatcher sends every routed copy either way.
  auto with_routing = [](plan::Training t, bool contiguous) {
    t.moe_contiguous_routing = contiguous;
    return t;
  };
  auto dsv3 = test::bundled("deepseek-v3");
  const plan::Layout l = ep64_over_eight_nodes();
  const plan::Training t = training(1024, 4096);
  EXPECT_NEAR(exposed_ep_s(dsv3, l, with_routing(t, true), true) / exposed_ep_s(dsv3, l, with_routing(t, false), true), 0.875 / 3.5, 0.01);
  EXPECT_DOUBLE_EQ(exposed_ep_s(dsv3, l, with_routing(t, true), false), exposed_ep_s(dsv3, l, with_routing(t, false), false));
  auto qwen = test::bundled("qwen3-30b-a3b");
  const plan::Layout one_node = ep8_in_one_node();
  const plan::Training q = training(32, 4096);
  EXPECT_NEAR(exposed_ep_s(qwen, one_node, with_routing(q, true), true) / exposed_ep_s(qwen, one_node, with_routing(q, false), true),
              0.875 / (7.0 * (1.0 - std::pow(7.0 / 8.0, 8))), 0.015);  // the all-to-alls' fixed latency apart
}

// A fixed-resolution tower (Gemma 3's SigLIP) attends within each image: two images per sample cost twice one
// image's tower FLOPs. A Qwen-VL tower, whose tokens attend as one, costs more than twice (quadratic attention).
TEST(StepTime, FixedResolutionTowersAttendWithinEachImage) {
  auto tower_flops = [](const std::string& config, long long tokens) {
    auto spec = model::read_model_file(test::data_dir() + "/../tests/configs/" + config);
    spec.vision->tokens = tokens;
    model::Model m = model::resolve(spec, test::catalog().records, test::catalog().profiles);
    plan::Training t = training(64, 4096);
    plan::Layout l;
    l.dp = 8;
    l.micro_batches = 8;
    cost::KindTimes kt = cost::kind_times(m, l, t, test::device("h100-sxm"));
    double flops = 0;
    for (std::size_t k = 0; k < m.kinds.size(); ++k)
      if (m.kinds[k].vision) flops += kt.kinds[k].fwd_flops;
    return flops;
  };
  double one = tower_flops("gemma-3-12b-vision.json", 4096), two = tower_flops("gemma-3-12b-vision.json", 8192);
  ASSERT_GT(one, 0);
  EXPECT_NEAR(two / one, 2.0, 1e-9);
  double q1 = tower_flops("qwen3-vl-2b.json", 4096), q2 = tower_flops("qwen3-vl-2b.json", 8192);
  EXPECT_GT(q2 / q1, 2.05);
}

TEST(StepTime, DualPipeVHoldsTheHeadOnStageZeroAndAThirdOfTheBubble) {
  // DualPipe-V (DeepSeek's DualPipe repository, its table): the virtual stages run down the ranks and back up, so
  // rank 0 holds the first chunk and the last (the embedding and the head); the bubble is (PP - 1)(F&B + B - 3W) of
  // one chunk, half a stage: with B = 2F and W = B / 2, (PP - 1) x a third of a stage's micro-batch.
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 16;
  plan::Layout l;
  l.pp = 4;
  l.vpp = 2;
  l.micro_batches = 16;
  t.dualpipe_v = true;
  EXPECT_EQ(plan::stage_of_virtual(l, t, 0), 0);
  EXPECT_EQ(plan::stage_of_virtual(l, t, 4), 3);  // virtual stage PP sits on the last rank
  EXPECT_EQ(plan::stage_of_virtual(l, t, 7), 0);
  const auto mem = cost::estimate_memory(m, l, t, 1e15);
  EXPECT_GT(mem.stages[0].head_activations, 0.0);
  EXPECT_EQ(mem.stages[3].head_activations, 0.0);
  const cost::StepTime v = cost::estimate_time(m, l, t, hw);
  const double stage_mb = v.breakdown.compute_s / 16.0;  // TP 1, no recompute: the slowest stage is its compute
  EXPECT_NEAR(v.breakdown.bubble_s, 3.0 * stage_mb / 3.0, 1e-9 * v.step_s);
  plan::Layout few = l;
  few.micro_batches = 4;  // fewer than 2 x PP
  plan::Training four = t;
  four.global_batch = 4;
  EXPECT_FALSE(plan::check_layout(m, few, four, 4).empty());
  EXPECT_TRUE(plan::check_layout(m, l, t, 4).empty());
}

TEST(StepTime, SparseAttentionPaysItsIndexerShortAndSavesAttentionLong) {
  // DeepSeek-V3.2 against DeepSeek-V3 on the same layout: up to index_topk (2048) tokens every query attends the
  // same keys, so V3.2 is V3 plus its indexer (slower, and holding more activations); at 131072 tokens a query
  // attends at most 2048 keys instead of 65536 on average, and the indexer's lighter scoring of every key (64 heads
  // of 128 against MLA's 128 heads of 192 + 128, its backward over the selected keys only) leaves the step at less
  // than half (attention is most of V3's step there).
  auto v32 = test::bundled("deepseek-v3.2");
  auto v3 = test::bundled("deepseek-v3");
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.tp = 8;
  l.sp = true;
  l.pp = 16;
  l.ep = 8;
  l.dp = 8;
  l.micro_batches = 16;
  l.recompute = plan::Recompute::Full;
  plan::Training short_seq = training(128, 2048);
  EXPECT_GT(cost::estimate_time(v32, l, short_seq, hw).step_s, cost::estimate_time(v3, l, short_seq, hw).step_s);
  EXPECT_GT(cost::estimate_memory(v32, l, short_seq, 1e15).peak_bytes, cost::estimate_memory(v3, l, short_seq, 1e15).peak_bytes);
  plan::Training long_seq = training(128, 131072);
  EXPECT_LT(cost::estimate_time(v32, l, long_seq, hw).step_s, 0.5 * cost::estimate_time(v3, l, long_seq, hw).step_s);
}

TEST(StepTime, LinearAttentionUnderContextParallelPaysItsHeadSplit) {
  // A Mamba-2 mixer under CP switches to a head split and back around its scan (terms::kUlyssesAllToAlls, whatever
  // the CP algorithm): Nemotron 3 Nano's 23 Mamba-2 layers pay CP communication where they paid none; its six
  // attention layers pay the ring's K,V exchange (hidden) or Ulysses' all-to-alls.
  auto m = test::bundled("nemotron-3-nano-30b-a3b");
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.tp = 1;
  l.ep = 8;
  l.dp = 8;
  l.cp = 2;
  l.micro_batches = 8;
  l.recompute = plan::Recompute::Full;
  cost::Overlap none;
  none.cp = 0;
  plan::Training t = training(64, 8192);
  const auto& times = cost::kind_times(m, l, t, hw, none);
  for (std::size_t k = 0; k < m.kinds.size(); ++k) {
    const auto& kind = m.kinds[k].kind;
    if (kind.attention == model::AttentionFlavour::Linear || kind.attention == model::AttentionFlavour::Gqa)
      EXPECT_GT(times.kinds[k].cp_s, 0.0) << kind.name;
    else
      EXPECT_EQ(times.kinds[k].cp_s, 0.0) << kind.name;  // the MoE layers run no attention
  }
}

TEST(StepTime, Mamba2ScanPricesTheConfigsChunkLength) {
  // The chunked scan's per-token work is 2 lin_chunk (lin_dk + lin_dv) within a block plus 4 lin_dk lin_dv through the
  // state, per value head (Mamba-2's SSD, Dao and Gu 2024, section 6). Nemotron 3 Nano states no chunk_size: its
  // blocks are Transformers' and Megatron-Core's default 128 tokens; a config stating 256 adds, per token of each
  // Mamba-2 layer's forward, 64 heads x 2 x 128 more tokens x (state 128 + head dimension 64) flops.
  auto spec = model::read_model_file(test::data_dir() + "/models/nemotron-3-nano-30b-a3b.json");
  ASSERT_TRUE(spec.linear.has_value());
  EXPECT_EQ(spec.linear->scan_chunk_tokens, 128);
  plan::Layout l;
  l.dp = 8;
  l.micro_batches = 8;
  plan::Training t = training(64, 4096);
  auto mamba_forward_flops = [&](model::Count chunk) {
    spec.linear->scan_chunk_tokens = chunk;
    model::Model m = model::resolve(spec, test::catalog().records, test::catalog().profiles);
    cost::KindTimes kt = cost::kind_times(m, l, t, test::device("h100-sxm"));
    for (std::size_t k = 0; k < m.kinds.size(); ++k)
      if (m.kinds[k].kind.name == "mamba") return kt.kinds[k].fwd_flops;
    return 0.0;
  };
  double base = mamba_forward_flops(128);
  ASSERT_GT(base, 0);
  double expected = 4096.0 * 64 * 2 * 128 * (128 + 64);
  EXPECT_NEAR(mamba_forward_flops(256) - base, expected, 1e-9 * base);
  // Gated DeltaNet's linear_* keys keep flash-linear-attention's blocks of 64.
  auto next = model::read_model_file(test::data_dir() + "/models/qwen3-next-80b-a3b.json");
  ASSERT_TRUE(next.linear.has_value());
  EXPECT_EQ(next.linear->scan_chunk_tokens, 64);
}
