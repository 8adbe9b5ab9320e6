// Activation memory against Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models" (arXiv:2205.05198), section 4 and table 2, in bytes, for the GPT-3 175B shape they use
// (h = 12288, a = 96, s = 2048, 16-bit activations, dropout on): exact equality, no tolerance.
// Weight + optimizer bytes against Megatron-LM's megatron/training/theoretical_memory_usage.py
// (18 bytes per parameter without the distributed optimizer, 6 + 12/DP with it).
#include <map>
#include <tuple>

#include <gtest/gtest.h>

#include "cost/terms.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"

using namespace sapp;

namespace {

struct Gpt3 {
  model::Model m = test::bundled("gpt3-175b");
  plan::Training training;
  double s = 2048, b = 1, h = 12288, a = 96;
  Gpt3() {
    training.seq = 2048;
    training.global_batch = 0;
    training.flash_attention = false;  // the paper's attention materialises the s x s scores
    training.compute_bytes = 2;
    training.recompute_modules = {"core_attn"};  // the paper's selective recompute: the core attention
  }
  double layer(const plan::Layout& l, plan::Recompute mode) { return cost::layer_activation(m, 0, l, training, mode).total(); }
};

plan::Layout tp(int t, bool sp) {
  plan::Layout l;
  l.tp = t;
  l.sp = sp;
  return l;
}

}  // namespace

TEST(Korthikanti2022, NoParallelism_sbh_34_plus_5as_over_h) {
  Gpt3 g;
  EXPECT_EQ(g.layer(tp(1, false), plan::Recompute::Off), g.s * g.b * g.h * (34 + 5 * g.a * g.s / g.h));
}

TEST(Korthikanti2022, MicroBatchScalesLinearly) {
  Gpt3 g;
  plan::Layout l = tp(1, false);
  l.mbs = 4;
  EXPECT_EQ(g.layer(l, plan::Recompute::Off), g.s * 4 * g.h * (34 + 5 * g.a * g.s / g.h));
}

TEST(Korthikanti2022, TensorParallel_sbh_10_plus_24_over_t_plus_5as_over_ht) {
  Gpt3 g;
  double t = 8;
  EXPECT_EQ(g.layer(tp(8, false), plan::Recompute::Off), g.s * g.b * g.h * (10 + 24 / t + 5 * g.a * g.s / (g.h * t)));
}

TEST(Korthikanti2022, TensorPlusSequenceParallel_sbh_34_over_t_plus_5as_over_ht) {
  Gpt3 g;
  double t = 8;
  EXPECT_EQ(g.layer(tp(8, true), plan::Recompute::Off), g.s * g.b * g.h * (34 / t + 5 * g.a * g.s / (g.h * t)));
}

TEST(Korthikanti2022, SelectiveRecomputePlusSequenceParallel_34sbh_over_t) {
  Gpt3 g;
  double t = 8;
  EXPECT_EQ(g.layer(tp(8, true), plan::Recompute::Selective), 34 * g.s * g.b * g.h / t);
}

TEST(Korthikanti2022, FullRecomputeStoresTheInput_2sbh) {
  Gpt3 g;
  EXPECT_EQ(g.layer(tp(1, false), plan::Recompute::Full), 2 * g.s * g.b * g.h);
}

TEST(Korthikanti2022, FirstStageOf1F1BHoldsPMicroBatches) {
  Gpt3 g;
  plan::Layout l;
  l.pp = 4;
  l.dp = 1;
  l.micro_batches = 8;
  auto flight = plan::in_flight(l, plan::Training{});
  EXPECT_EQ(flight[0][0], 4);  // p micro-batches on the first stage
  EXPECT_EQ(flight[0][3], 1);  // one on the last
  g.training.global_batch = 8;
  cost::MemoryEstimate est = cost::estimate_memory(g.m, l, g.training, 1e15);
  double per_layer = g.layer(l, plan::Recompute::Off);
  EXPECT_EQ(est.stages[0].layers, 24);
  EXPECT_EQ(est.stages[0].layer_activations, 4 * 24 * per_layer);
}

TEST(FlashAttention, RemovesThe5asOverhTerm) {
  Gpt3 g;
  g.training.flash_attention = true;
  double with_fa = g.layer(tp(1, false), plan::Recompute::Off);
  // 34 sbh stays; the s x s scores, mask and dropout output go; the kernel keeps fp32 softmax statistics
  // (4 bytes per head per query): O(s), not O(s^2).
  EXPECT_EQ(with_fa, g.s * g.b * g.h * 34 + 4 * g.a * g.s * g.b);
  EXPECT_LT(with_fa, g.s * g.b * g.h * (34 + 5 * g.a * g.s / g.h));
}

TEST(InterleavedInFlight, ReferencePins) {
  // docs/reference-planner.md §6.4: a(S=3, V=2, m=2) = [[2,2,2],[2,2,1]]; less-memory (3, 2) = [[3,3,3],[3,2,1]].
  plan::Layout l;
  l.pp = 3;
  l.vpp = 2;
  l.micro_batches = 2;
  plan::Training less;
  less.interleave_less_memory = true;
  auto a = plan::in_flight(l, plan::Training{});
  EXPECT_EQ(a, (std::vector<std::vector<long long>>{{2, 2, 2}, {2, 2, 1}}));
  l.micro_batches = 12;
  auto lm = plan::in_flight(l, less);
  EXPECT_EQ(lm, (std::vector<std::vector<long long>>{{3, 3, 3}, {3, 2, 1}}));
  // Megatron's interleaved warm-up: stage i holds (p - i - 1) * 2 + (v - 1) * p + 1 chunk-micro-batches.
  auto big = plan::in_flight(l, plan::Training{});
  for (int s = 0; s < 3; ++s) EXPECT_EQ(big[0][s] + big[1][s], (3 - s - 1) * 2 + (2 - 1) * 3 + 1);
}

TEST(MegatronTheoreticalMemory, EighteenBytesPerParameterWithoutDistributedOptimizer) {
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 8;
  plan::Layout l;
  l.dp = 8;
  l.micro_batches = 1;
  l.zero = 0;
  auto est = cost::estimate_memory(m, l, t, 1e15);
  const auto& st = est.stages[0];
  EXPECT_DOUBLE_EQ((st.params + st.grads + st.optimizer) / st.param_elements, 18.0);
}

TEST(MegatronTheoreticalMemory, SixPlusTwelveOverDPWithDistributedOptimizer) {
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 8;
  plan::Layout l;
  l.dp = 8;
  l.micro_batches = 1;
  l.zero = 1;
  auto est = cost::estimate_memory(m, l, t, 1e15);
  const auto& st = est.stages[0];
  EXPECT_DOUBLE_EQ((st.params + st.grads + st.optimizer) / st.param_elements, 6.0 + 12.0 / 8.0);
}

TEST(Memory, HalfPrecisionGradientsGetAnFp32CopyAtTheOptimizerStep) {
  // Megatron's mixed-precision optimizer sets main_param.grad = grad.float(): with 2-byte gradients the step
  // holds 4 more bytes per parameter of its shard (all of them without the distributed optimizer), after the
  // activations are gone. 2021 fp16 Megatron without ZeRO therefore peaks at 2 + 2 + 12 + 4 = 20 B/param when
  // the activations are small; with 4-byte gradients there is no copy (18 B/param, Megatron's figure).
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 1024;
  t.global_batch = 8;
  t.grad_bytes = 2;
  plan::Layout l;
  l.dp = 8;
  l.micro_batches = 1;
  l.zero = 0;
  l.recompute = plan::Recompute::Full;
  auto est = cost::estimate_memory(m, l, t, 1e15);
  const auto& st = est.stages[0];
  EXPECT_DOUBLE_EQ(st.optimizer_step / st.param_elements, 4.0);
  ASSERT_GT(st.optimizer_step, st.activations + st.buffers);
  EXPECT_DOUBLE_EQ((st.total() - st.reserve) / st.param_elements, 20.0);
  l.zero = 1;  // distributed optimizer: the copy covers the shard only
  auto sharded = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(sharded.optimizer_step / sharded.param_elements, 4.0 / 8.0);
  t.grad_bytes = 4;
  l.zero = 0;
  EXPECT_DOUBLE_EQ(cost::estimate_memory(m, l, t, 1e15).stages[0].optimizer_step, 0.0);
}

TEST(Memory, ZeroStagesShardMore) {
  auto m = test::bundled("llama3-70b");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 64;
  plan::Layout l;
  l.dp = 8;
  l.tp = 8;
  l.micro_batches = 8;
  double previous = 1e300;
  for (int z = 0; z <= 3; ++z) {
    l.zero = z;
    double peak = cost::estimate_memory(m, l, t, 1e15).peak_bytes;
    EXPECT_LT(peak, previous) << "zero " << z;
    previous = peak;
  }
}

TEST(Memory, RecomputeModesOrderActivations) {
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 8192;
  t.global_batch = 8;
  t.flash_attention = false;
  plan::Layout l;
  l.dp = 8;
  double off = cost::layer_activation(m, 0, l, t, plan::Recompute::Off).total();
  double sel = cost::layer_activation(m, 0, l, t, plan::Recompute::Selective).total();
  double full = cost::layer_activation(m, 0, l, t, plan::Recompute::Full).total();
  EXPECT_GT(off, sel);
  EXPECT_GT(sel, full);
}

TEST(Memory, MoELayersDivideExpertsByEP) {
  auto m = test::bundled("mixtral-8x7b");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 64;
  plan::Layout a;
  a.dp = 8;
  a.micro_batches = 8;
  plan::Layout b = a;
  b.ep = 8;
  auto ea = cost::estimate_memory(m, a, t, 1e15);
  auto eb = cost::estimate_memory(m, b, t, 1e15);
  EXPECT_NEAR(ea.stages[0].expert_param_elements / eb.stages[0].expert_param_elements, 8.0, 1e-9);
}

TEST(Memory, LayoutRulesNameTheRule) {
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 16;
  plan::Layout l;
  l.tp = 3;
  l.dp = 2;
  l.micro_batches = 8;
  auto v = plan::check_layout(m, l, t, 6);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.front().rule, "tp/heads");
}

// Megatron's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split count the embedding and
// the loss as one layer each: Llama 3.1 405B's 126 layers fill PP 16 x VPP 8 = 128 chunks, the first holding the
// embedding alone and the last the loss alone (Megatron-Bridge's LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_MX_V2, whose
// 26.04 run published 793 tokens/s per GPU). Without them 126 layers cannot fill 128 chunks.
TEST(Memory, EmbeddingAndLossUnitsFillAChunkAlone) {
  auto m = test::bundled("llama3.1-405b");
  plan::Training t = test::training(1536, 8192);
  plan::Layout l;
  l.tp = 4;
  l.sp = true;
  l.pp = 16;
  l.vpp = 8;
  l.dp = 4;
  l.micro_batches = 384;
  auto refused = plan::check_layout(m, l, t, 256);
  ASSERT_EQ(refused.size(), 1U);
  EXPECT_EQ(refused.front().rule, "layers < pp x vpp");
  t.pipeline_split_counts_head = true;
  EXPECT_TRUE(plan::check_layout(m, l, t, 256).empty());
  std::map<std::pair<int, int>, long long> layers;  // (chunk, stage) -> decoder layers
  plan::for_each_chunk_group(m, l, t, [&](int stage, int chunk, int, long long count) { layers[{chunk, stage}] += count; });
  long long total = 0;
  for (auto& [key, count] : layers) {
    EXPECT_EQ(count, 1) << "chunk " << key.first << " stage " << key.second;
    total += count;
  }
  EXPECT_EQ(total, 126);
  EXPECT_EQ(layers.count({0, 0}), 0U);   // the embedding alone
  EXPECT_EQ(layers.count({7, 15}), 0U);  // the loss alone
}

namespace sapp {

// LoRA (Hu et al. 2021, arXiv:2106.09685): the base weights are frozen. Llama 3 8B (h 4096, 32 query and 8 KV heads
// of 128, SwiGLU width 14336) with rank-16 adapters: a trained share of 2 x 16 / 4096 = 1/128. Memory: the weights
// stay in full, the gradients and optimizer states shrink to that share. Time: a frozen weight's GEMM runs its input
// gradient only, so the backward loses (1 - 1/128) of the forward GEMM work, 2 s h (32x128 + 2x8x128 + 32x128 + 3 x
// 14336) FLOPs per layer and sequence, while attention's own backward stays as it was.
TEST(Lora, FrozenWeightsKeepNoStatesAndSkipTheirWeightGradients) {
  auto m = test::bundled("llama3-8b");
  hardware::Hardware hw = test::device("h100-sxm");
  plan::Training full = test::training(8, 4096);
  plan::Training lora = full;
  lora.lora_rank = 16;
  plan::Layout l;
  l.dp = 8;
  l.micro_batches = 1;
  l.zero = 1;
  const auto a = cost::estimate_memory(m, l, full, 1e15).stages[0];
  const auto b = cost::estimate_memory(m, l, lora, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(b.params, a.params);
  EXPECT_NEAR(b.grads, a.grads / 128.0, 1e-6 * a.grads);
  EXPECT_NEAR(b.optimizer, a.optimizer / 128.0, 1e-6 * a.optimizer);
  EXPECT_DOUBLE_EQ(b.activations, a.activations);
  const cost::KindTimes kf = cost::kind_times(m, l, full, hw);
  const cost::KindTimes kl = cost::kind_times(m, l, lora, hw);
  const double gemm_forward = 2.0 * 4096 * 4096 * (32 * 128 + 2 * 8 * 128 + 32 * 128 + 3 * 14336);
  ASSERT_FALSE(kf.kinds.empty());
  EXPECT_NEAR(kf.kinds[0].bwd_flops - kl.kinds[0].bwd_flops, (1.0 - 1.0 / 128.0) * gemm_forward, 1e-9 * gemm_forward);
  EXPECT_DOUBLE_EQ(kl.kinds[0].fwd_flops, kf.kinds[0].fwd_flops);
  const cost::StepTime tf = cost::estimate_time(m, l, full, hw);
  const cost::StepTime tl = cost::estimate_time(m, l, lora, hw);
  EXPECT_LT(tl.step_s, tf.step_s);
  EXPECT_LT(tl.breakdown.dp_comm_s, tf.breakdown.dp_comm_s / 64.0);
}

}  // namespace sapp

TEST(Memory, TheLossBackwardIsPricedAsEachFrameworkComputesIt) {
  // Bytes per local logit the loss backward adds on the last stage, for one micro-batch (cost/terms.hpp):
  // Megatron's fused vocab-parallel cross entropy 0; torch's F.cross_entropy on fp32 logits (torchtitan at TP 1)
  // 8 (the saved fp32 log-softmax and its fp32 gradient); torch's loss_parallel (torchtitan at TP > 1) 10: its
  // backward, (grad_input + exp(x)) * grad_output, holds x, grad_input, their sum and the product in fp32 (16 B)
  // where the bf16 logits and their fp32 upcast (6 B, counted as the head's activations) are gone.
  auto m = test::bundled("llama3-8b");
  const double vocab = 128256;
  for (auto [fused, tp, bytes] : {std::tuple{true, 1, 0.0}, std::tuple{true, 8, 0.0}, std::tuple{false, 1, 8.0}, std::tuple{false, 8, 10.0}}) {
    plan::Training t;
    t.seq = 8192;
    t.global_batch = 64;
    t.loss_fused = fused;
    plan::Layout l;
    l.tp = tp;
    l.sp = tp > 1;
    l.dp = 64 / tp;
    l.mbs = 2;
    l.micro_batches = 1;
    l.recompute = plan::Recompute::Full;
    auto st = cost::estimate_memory(m, l, t, 1e15).stages[0];
    EXPECT_DOUBLE_EQ(st.loss_backward, 2.0 * 8192 * vocab / tp * bytes) << "fused " << fused << " tp " << tp;
  }
}

TEST(Memory, TorchtitanPipelineKeepsTheStageGatheredAndSyncsOnce) {
  // torchtitan under PP (torchtitan/distributed/fsdp.py: reshard_after_forward = not pp_enabled by default) with
  // torch.distributed.pipelining (stage.py backward_maybe_with_nosync: no gradient sync and no reshard after any
  // backward but the last): a stage's parameters are gathered once per step and kept in bf16, its gradients
  // accumulate unsharded in the fp32 reduce dtype, and one reduce-scatter runs at the end. So the DP buffers hold
  // 2 + 4 bytes per parameter of the stage, and the DP time does not grow with the micro-batches.
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Training t;
  t.seq = 4096;
  cost::terms::apply_profile(cost::terms::framework_profile("torchtitan"), t);
  plan::Layout l;
  l.dp = 4;
  l.pp = 2;
  l.zero = 3;
  l.recompute = plan::Recompute::Full;
  auto dp_time = [&](int micro) {
    l.micro_batches = micro;
    t.global_batch = l.dp * micro;
    return cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  };
  l.micro_batches = 8;
  t.global_batch = 32;
  auto st = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(st.dp_buffer, (2.0 + 4.0) * (st.param_elements + st.expert_param_elements));
  EXPECT_DOUBLE_EQ(dp_time(8), dp_time(32));
  // Without PP (or in a framework that reshards per layer) each micro-batch gathers and reduce-scatters again.
  l.pp = 1;
  EXPECT_GT(dp_time(32), dp_time(8));
  EXPECT_LT(cost::estimate_memory(m, l, t, 1e15).stages[0].dp_buffer, st.dp_buffer / 4);
}

namespace {

// One replica of PP2 with `vpp` chunks, micro-batches of one sequence of `seq` tokens, `micro_batches` per step.
std::pair<plan::Layout, plan::Training> pp2_interleaved(int vpp, long long micro_batches, long long seq) {
  plan::Training t;
  t.seq = seq;
  t.global_batch = micro_batches;
  plan::Layout l;
  l.dp = 1;
  l.pp = 2;
  l.vpp = vpp;
  l.micro_batches = static_cast<int>(micro_batches);
  return {l, t};
}

// Stage s's activation at the closed form's counts (plan::in_flight_count: the first prefix of the most
// micro-batches) for per-chunk activations `chunks`.
double closed_form_activation(const plan::Layout& l, const plan::Training& t, int s, const std::vector<double>& chunks) {
  double out = 0;
  for (int v = 0; v < l.vpp; ++v) out += static_cast<double>(plan::in_flight_count(l, t, v, s)) * chunks[static_cast<std::size_t>(v)];
  return out;
}

}  // namespace

// A stated split whose chunks hold unequal activations: the stage's peak is the schedule's prefix of the most
// activation, not the first prefix of the most micro-batches. Llama 3 8B at PP2 VPP2 with the last stage's chunks
// of 24 and 2 layers (the logits on the second): its peak holds more micro-batches of the 24-layer chunk than the
// closed-form counts (plan::in_flight_count) give, and equals plan::in_flight_peak over the chunks' activations.
TEST(Memory, AStatedUnevenSplitPeaksAtTheSchedulesHeaviestPrefix) {
  auto m = test::bundled("llama3-8b");
  auto [l, t] = pp2_interleaved(2, 32, 4096);
  plan::StageSplit split;
  split.layers = {{2, 24}, {4, 2}};
  l.split = std::make_shared<const plan::StageSplit>(split);
  const cost::StageMemory last = cost::estimate_memory(m, l, t, 1e15).stages[1];
  const double layer = cost::kind_memory(m, l, t)[0].act[static_cast<int>(plan::Recompute::Off)];
  const double head = last.head_activation_one;  // one micro-batch's final norm input and logits
  const std::vector<double> chunks = {24 * layer, 2 * layer + head};
  const double exact = plan::in_flight_peak(plan::schedule_of(l, false), 2, 2, 32, 1, chunks);
  EXPECT_NEAR(last.layer_activations + last.head_activations, exact, 1e-6 * exact);
  // The closed-form counts (the first prefix of the most micro-batches) hold less.
  EXPECT_GT(exact, closed_form_activation(l, t, 1, chunks) * 1.05);
}

// A layout without a stated split is counted the same way: Llama 3 8B's 32 layers over PP2 VPP3 (chunks of 6 and 5
// layers, the logits on the last): each stage's layer, embedding and logits activations are plan::in_flight_peak
// over its chunks' activations, the balancer's count, not the closed form's first peak (2.8 % less on stage 0).
TEST(Memory, AnUnstatedSplitPeaksAtTheSchedulesHeaviestPrefix) {
  auto m = test::bundled("llama3-8b");
  const auto [l, t] = pp2_interleaved(3, 24, 8192);
  const cost::MemoryEstimate mem = cost::estimate_memory(m, l, t, 1e15);
  const double layer = cost::kind_memory(m, l, t)[0].act[static_cast<int>(plan::Recompute::Off)];
  for (int s = 0; s < 2; ++s) {
    SCOPED_TRACE(s);
    std::vector<double> chunks(3, 0.0);
    plan::for_each_chunk_group(m, l, t, [&](int stage, int chunk, int, long long count, plan::Recompute) {
      if (stage == s) chunks[static_cast<std::size_t>(chunk)] += static_cast<double>(count) * layer;
    });
    const cost::StageMemory& st = mem.stages[static_cast<std::size_t>(s)];
    chunks[0] += st.embedding_activation_one;
    chunks[2] += st.head_activation_one;
    const double exact = plan::in_flight_peak(plan::schedule_of(l, false), 2, 3, 24, s, chunks);
    EXPECT_NEAR(st.layer_activations + st.embedding_activations + st.head_activations, exact, 1e-6 * exact);
    if (s == 0) {
      EXPECT_GT(exact, 1.02 * closed_form_activation(l, t, s, chunks));  // the closed form's first peak held 2.8 % less on the first stage
    }
  }
}

TEST(Memory, Fsdp2ZeroTwoKeepsTheWeightsShardedAndTheStageGatheredPerMicroBatch) {
  // FSDP2's reshard_after_forward=False (torchtitan's fsdp_reshard_after_forward "never"): the fp32 weights stay
  // sharded as under ZeRO-3 (torch/distributed/fsdp/_fully_shard: the sharded DTensor is the parameter), and each
  // layer's bf16 gather is kept from its forward to its backward, so the stage is held gathered (2 B per parameter)
  // within a micro-batch; reshard_after_backward gathers it again for the next forward, while the backward gathers
  // nothing. Megatron FSDP's ZeRO-2 (optim_grads) keeps the bf16 weights whole instead.
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("h100-sxm");
  plan::Layout l;
  l.dp = 16;
  l.micro_batches = 4;
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 64;
  cost::terms::apply_profile(cost::terms::framework_profile("torchtitan"), t);
  l.zero = 3;
  const cost::StageMemory zero3 = cost::estimate_memory(m, l, t, 1e15).stages[0];
  const double zero3_dp = cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  l.zero = 2;
  const cost::StageMemory zero2 = cost::estimate_memory(m, l, t, 1e15).stages[0];
  const double zero2_dp = cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  const double elements = zero2.param_elements + zero2.expert_param_elements;
  EXPECT_DOUBLE_EQ(zero2.params, zero3.params);
  EXPECT_DOUBLE_EQ(zero2.params, 4.0 * elements / 16);
  EXPECT_DOUBLE_EQ(zero2.dp_buffer, 2.0 * elements);  // the stage gathered in bf16, in place of the gradient bucket
  EXPECT_DOUBLE_EQ(zero2.dp_stage, zero2.dp_buffer);
  EXPECT_LT(zero2_dp, zero3_dp);  // one gather per micro-batch, not two
  cost::terms::apply_profile(cost::terms::framework_profile("megatron"), t);
  const cost::StageMemory megatron = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(megatron.params, 2.0 * elements);
  EXPECT_DOUBLE_EQ(megatron.dp_stage, 0.0);
}

TEST(Memory, MindSporeParallelOptimizerSlicesWeightsAndKeepsThemGathered) {
  // MindSpore's parallel optimizer (MindFormers' enable_parallel_optimizer, optimizer_level level1, gradient
  // accumulation not sharded): "the framework saves the parameters as minimal slices and updates them in the
  // optimizer" (MindSpore docs, Optimizer Parallel, r2.6.0), so weights and Adam's two fp32 moments (mindformers
  // core/optim/adamw.py clone_state) are 1/DP each; every weight is all-gathered after its cast to the compute dtype
  // (mindspore step_parallel.cc) and kept from its forward to its backward: the whole stage in 2 bytes at the peak.
  // Accumulated gradients (accu_grads, the parameters' dtype) exist only when there is something to accumulate.
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 4096;
  cost::terms::apply_profile(cost::terms::framework_profile("mindformers"), t);
  t.param_bytes = 4;  // param_init_type float32
  t.grad_bytes = 4;
  plan::Layout l;
  l.dp = 8;
  l.zero = 3;
  l.recompute = plan::Recompute::Full;
  l.micro_batches = 1;
  t.global_batch = 8;
  auto st = cost::estimate_memory(m, l, t, 1e15).stages[0];
  const double p = st.param_elements;
  EXPECT_DOUBLE_EQ(st.params, 4.0 * p / 8);
  EXPECT_DOUBLE_EQ(st.optimizer, 8.0 * p / 8);
  EXPECT_DOUBLE_EQ(st.grads, 4.0 * p / 8);  // nothing accumulates: only the reduce-scattered slices
  EXPECT_DOUBLE_EQ(st.dp_buffer, 2.0 * p);  // the gathered weights, kept until their backward
  // Pipelined (micro-batches accumulate): accu_grads whole in fp32 beside the stage gathered once per step.
  l.pp = 2;
  l.micro_batches = 8;
  t.global_batch = 64;
  auto piped = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(piped.grads, 4.0 * piped.param_elements);
  EXPECT_DOUBLE_EQ(piped.dp_buffer, 2.0 * piped.param_elements);
  EXPECT_DOUBLE_EQ(piped.params, 4.0 * piped.param_elements / 8);
}

TEST(Memory, MindSporeCommRecomputeRegathersAndTheOptimizerCastsPerParameter) {
  // parallel_optimizer_comm_recompute (MindFormers' recompute_config; optimizer_level level3): the gathered weights
  // are released after their forward use and gathered again for the backward, so one layer's are held (with the
  // prefetch), not the stage's; accumulated gradients stay whole. MindFormers' AdamW casts each parameter's
  // half-precision gradient to fp32 inside its own update (mindformers core/optim/adamw.py _update_run_op, applied
  // parameter by parameter by hyper_map): no whole fp32 gradient copy at the step.
  auto m = test::bundled("llama3-8b");
  auto hw = test::device("ascend-910b");
  plan::Training t;
  t.seq = 4096;
  cost::terms::apply_profile(cost::terms::framework_profile("mindformers"), t);
  plan::Layout l;
  l.dp = 8;
  l.pp = 2;
  l.zero = 3;
  l.recompute = plan::Recompute::Full;
  l.micro_batches = 8;
  t.global_batch = 64;
  auto kept = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(kept.optimizer_step, 0.0);  // fp16 gradients (grad_bytes 2), cast per parameter
  const double dp_kept = cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s;
  t.zero3_regathers_in_backward = true;
  auto regathered = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(regathered.grads, kept.grads);  // accu_grads whole either way
  EXPECT_LT(regathered.dp_buffer, kept.dp_buffer / 4);
  EXPECT_GT(cost::estimate_time(m, l, t, hw).breakdown.dp_comm_s, dp_kept);  // gathers per micro-batch
}

TEST(Memory, TransformerEngineFp8KeepsTheQuantizedInputsOfItsLinearLayers) {
  // Llama 3 8B (h 4096, 32 query and 8 key/value heads of 128, SwiGLU width 14336), s = 8192, b = 1, TP 1, flash
  // attention, no recompute, bytes per token of one layer, counted by hand from what each module saves for its
  // backward. BF16: the attention norm's input and output (2h + 2h), q, k, v (2 x 4096 + 2 x 2 x 1024), the
  // attention output (2 x 4096), the softmax statistics (4 x 32 fp32); the FFN norm's input and output (2h + 2h),
  // the two up-projections' outputs (2 x 2 x 14336) and the activation's output (2 x 14336).
  // Transformer Engine under FP8 (transformer_engine/pytorch/module/linear.py and layernorm_linear.py: the input
  // kept for the weight gradient is the quantized copy, one byte per element): the norms' outputs and the
  // down-projection's input in one byte each, and the output projection's FP8 copy beside the BF16 attention output
  // that flash attention keeps. torchao's Float8Linear (torchtitan's float8) keeps the BF16 inputs: nothing changes.
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 8192;
  plan::Layout l;
  const double tokens = 8192;
  const double bf16_attention = 2 * 4096 + 2 * 4096 + 2 * 4096 + 2 * 2 * 1024 + 2 * 4096 + 4 * 32;
  const double bf16_ffn = 2 * 4096 + 2 * 4096 + 2 * 2 * 14336 + 2 * 14336;
  auto bf16 = cost::layer_activation(m, 0, l, t, plan::Recompute::Off);
  EXPECT_DOUBLE_EQ(bf16.attention, tokens * bf16_attention);
  EXPECT_DOUBLE_EQ(bf16.ffn, tokens * bf16_ffn);
  t.fp8 = true;
  auto te = cost::layer_activation(m, 0, l, t, plan::Recompute::Off);
  EXPECT_DOUBLE_EQ(te.attention, tokens * (bf16_attention - 4096 + 4096));  // norm output 2 -> 1 byte, +1 FP8 copy
  EXPECT_DOUBLE_EQ(te.ffn, tokens * (bf16_ffn - 4096 - 14336));             // norm output and activation output
  cost::terms::apply_profile(cost::terms::framework_profile("torchtitan"), t);
  EXPECT_DOUBLE_EQ(cost::layer_activation(m, 0, l, t, plan::Recompute::Off).total(), bf16.total());
}

TEST(Memory, TransformerEngineCachesFp8WeightsUnlessTheWeightsAreFp8) {
  // Megatron passes is_first_microbatch to Transformer Engine, which then keeps each linear weight's FP8 copy and its
  // transpose (one byte each) across the step's micro-batches (megatron/core/extensions/transformer_engine.py;
  // disable_parameter_transpose_cache False by default). With fp8_param_gather the weights are FP8 themselves.
  // Llama 3 8B, TP 1, PP 1: 32 layers of 2 x 4096 x 4096 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 elements.
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 8192;
  t.global_batch = 8;
  plan::Layout l;
  l.dp = 8;
  l.zero = 1;
  l.micro_batches = 1;
  const double layer_elements = 32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096);
  const double bf16 = cost::estimate_memory(m, l, t, 1e15).stages[0].params;
  t.fp8 = true;
  auto megatron = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(megatron.fp8_weight_cache, 2 * layer_elements);
  EXPECT_DOUBLE_EQ(megatron.params, bf16 + 2 * layer_elements);
  t.fp8_param_gather = true;
  EXPECT_DOUBLE_EQ(cost::estimate_memory(m, l, t, 1e15).stages[0].params, bf16);
  plan::Training nemo = t;
  cost::terms::apply_profile(cost::terms::framework_profile("nemo"), nemo);  // its FP8 recipes set fp8_param_gather
  EXPECT_TRUE(nemo.fp8_param_gather);
  plan::Training titan = t;
  cost::terms::apply_profile(cost::terms::framework_profile("torchtitan"), titan);  // torchao caches no weight
  titan.fp8_param_gather = false;
  EXPECT_DOUBLE_EQ(cost::estimate_memory(m, l, titan, 1e15).stages[0].fp8_weight_cache, 0.0);
}

// NVFP4 through Transformer Engine keeps the same copies as FP8, at 0.5 + 1/16 bytes per element (an E2M1 value, an
// E4M3 scale per 16): Llama 3 8B as in the two tests above (s = 8192, TP 1), the quantised inputs of the norms'
// outputs, the down projection's input and the output projection's extra copy; the weight cache two such copies.
TEST(Memory, TransformerEngineNvfp4KeepsItsCopiesAtFourBitsAndAScale) {
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 8192;
  t.global_batch = 8;
  plan::Layout l;
  const double tokens = 8192, q = 0.5 + 1.0 / 16;
  t.fp8 = true;
  auto fp8 = cost::layer_activation(m, 0, l, t, plan::Recompute::Off);
  t.fp4 = true;
  auto fp4 = cost::layer_activation(m, 0, l, t, plan::Recompute::Off);
  EXPECT_DOUBLE_EQ(fp8.attention - fp4.attention, tokens * (1 - q) * (4096 + 4096));  // norm output, output projection copy
  EXPECT_DOUBLE_EQ(fp8.ffn - fp4.ffn, tokens * (1 - q) * (4096 + 14336));             // norm output, down projection input
  l.dp = 8;
  l.zero = 1;
  l.micro_batches = 1;
  const double layer_elements = 32.0 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096);
  EXPECT_DOUBLE_EQ(cost::estimate_memory(m, l, t, 1e15).stages[0].fp8_weight_cache, 2 * q * layer_elements);
}

TEST(Memory, TheSequencePipelineHoldsSegmentsAndTheirKvCache) {
  // MindSpore's seqpipe (Seq1F1B, arXiv:2406.03488) with seq_split k: the schedule's units are segments of seq / k
  // tokens; stage i holds p - i + k - 1 of them (the reference planner's count, docs/reference-planner.md); a unit's
  // attention keeps K and V of the whole sequence; every layer keeps a KV cache and its gradient, 4 x b x kv / t x
  // seq x dh x 2 bytes (mindformers/models/llama/llama_transformer.py). Llama 3 8B (8 key/value heads of 128), TP 1.
  auto m = test::bundled("llama3-8b");
  plan::Training t;
  t.seq = 32768;
  t.global_batch = 32;
  plan::Layout l;
  l.pp = 4;
  l.micro_batches = 32;
  const double whole_seq = cost::layer_activation(m, 0, l, t, plan::Recompute::Off).total();
  t.seq_split = 8;
  const auto unit = cost::layer_activation(m, 0, l, t, plan::Recompute::Off);
  const double kv_whole = 2.0 * 2 * 8 * 128 * 32768;  // K and V of the whole sequence, bf16
  EXPECT_DOUBLE_EQ(unit.total(), (whole_seq - kv_whole) / 8 + kv_whole);
  EXPECT_EQ(plan::in_flight_count(l, t, 0, 0), 4 - 0 + 8 - 1);
  EXPECT_EQ(plan::in_flight_count(l, t, 0, 3), 4 - 3 + 8 - 1);
  const auto est = cost::estimate_memory(m, l, t, 1e15);
  EXPECT_DOUBLE_EQ(est.stages[1].kv_cache, 8 * 4.0 * 8 * 128 * 32768 * 2);  // 8 layers on stage 1
  EXPECT_DOUBLE_EQ(est.stages[1].layer_activations, 8.0 * 10 * unit.total());
  // The bubble shrinks with the unit: (p - 1) units instead of (p - 1) micro-batches; the work stays.
  auto hw = test::device("h100-sxm");
  const cost::StepTime split = cost::estimate_time(m, l, t, hw);
  t.seq_split = 1;
  const cost::StepTime whole = cost::estimate_time(m, l, t, hw);
  EXPECT_NEAR(split.breakdown.compute_s / whole.breakdown.compute_s, 1.0, 0.03);
  EXPECT_NEAR(split.breakdown.bubble_s / whole.breakdown.bubble_s, 1.0 / 8, 0.02);
}

// FSDP2's ZeRO-2 (NeMo AutoModel's MoE default, reshard_after_forward false) keeps gathered only what it shards: over EP
// 8 on 8 GPUs each expert is whole on its rank (an expert-DP group of 1), so the stage held gathered is the non-expert
// parameters alone, 2 bytes each (the stage had been priced with every expert gathered again: 82 GiB for AutoModel's
// Nemotron 3 Nano recipe that ran on 80 GB H100s); over EP 4 the experts are sharded over 2 ranks and gathered too.
TEST(Memory, Zero2GathersOnlyWhatItShards) {
  auto m = test::bundled("qwen3-30b-a3b");
  plan::Layout l;
  l.dp = 8;
  l.ep = 8;
  l.zero = 2;
  l.micro_batches = 4;
  plan::Training t;
  t.seq = 4096;
  t.global_batch = 32;
  cost::terms::apply_profile(cost::terms::framework_profile("automodel"), t);
  const cost::StageMemory whole_experts = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(whole_experts.dp_stage, 2.0 * whole_experts.param_elements);
  l.ep = 4;
  const cost::StageMemory sharded_experts = cost::estimate_memory(m, l, t, 1e15).stages[0];
  EXPECT_DOUBLE_EQ(sharded_experts.dp_stage, 2.0 * (sharded_experts.param_elements + sharded_experts.expert_param_elements));
}
