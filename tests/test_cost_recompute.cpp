// Recompute as the frameworks run it: named modules (Megatron's recompute_modules) and the search's twins; MoE capacity padding.
#include <algorithm>
#include <cstdio>
#include <map>

#include <gtest/gtest.h>

#include "cost/terms.hpp"
#include "cost/time.hpp"
#include "helpers.hpp"
#include "search/search.hpp"

using namespace sapp;

namespace {

// Megatron's `selective` (core attention) under flash attention keeps exactly the bytes of `off` (flash attention
// keeps O(s) softmax statistics, Dao et al. 2022; Korthikanti et al. 2022 section 4.2 recomputes only the s x s
// score tensors, which flash attention never stores) and adds time, so the search never lists it beside its `off` twin.
TEST(CostRecompute, SearchNeverListsATwinThatAnotherModeDominates) {
  model::Model m = test::bundled("llama3-8b");
  hardware::Hardware hw = test::device("h100-sxm");
  plan::Training t;
  t.seq = 8192;
  t.global_batch = 64;
  t.recompute_modules = cost::terms::recompute_switches({"core_attn"});  // Megatron's selective (--framework megatron)
  search::Space space;
  space.recompute = {plan::Recompute::Off, plan::Recompute::Selective, plan::Recompute::Full};
  search::Options opt;
  opt.threads = 2;
  auto r = search::search(m, space, t, hw, 8, hw.memory_bytes, opt);
  ASSERT_FALSE(r.ranked.empty());
  std::map<std::string, std::vector<const search::Candidate*>> twins;
  for (const auto& c : r.ranked) {
    plan::Layout key = c.layout;
    key.recompute = plan::Recompute::Off;
    twins[key.describe()].push_back(&c);
  }
  int selective_listed = 0;
  for (const auto& [key, group] : twins) {
    for (const auto* a : group) {
      if (a->layout.recompute == plan::Recompute::Selective) ++selective_listed;
      for (const auto* b : group) {
        if (a == b) continue;
        EXPECT_FALSE(b->peak_memory_bytes <= a->peak_memory_bytes && b->time.step_s < a->time.step_s)
            << a->layout.describe() << " is listed although " << b->layout.describe() << " needs no more memory and is faster";
      }
    }
  }
  EXPECT_GT(r.rejected["recompute twin dominated"], 0);
  // Under flash attention selective (core attention) saves nothing: next to a listed `off` twin it may only stand
  // when it is not slower (its recompute can widen the window that hides CP/EP traffic, see CostOverlap).
  for (const auto& [key, group] : twins) {
    const search::Candidate *off = nullptr, *sel = nullptr;
    for (const auto* c : group) {
      if (c->layout.recompute == plan::Recompute::Off) off = c;
      if (c->layout.recompute == plan::Recompute::Selective) sel = c;
    }
    if (off && sel) {
      EXPECT_LE(sel->time.step_s, off->time.step_s) << key;
    }
  }
  std::printf("%d selective candidates listed (each as fast as its off twin or faster)\n", selective_listed);
}

// Named modules drop what Megatron's recompute_modules say (transformer_config.py): `mla_up_proj` drops the MLA
// up-projection outputs and `moe_act` the routed experts' activation input, so each saves memory on DeepSeek-V3 and
// adds recompute time; `core_attn` alone saves nothing under flash attention.
TEST(CostRecompute, NamedModulesDropWhatTheyNameAndCostTheirForward) {
  model::Model m = test::bundled("deepseek-v3");
  plan::Layout l;
  l.tp = 2;
  l.sp = true;
  l.ep = 8;
  l.dp = 4;
  l.recompute = plan::Recompute::Selective;
  plan::Training t;
  t.seq = 4096;
  int moe = -1;
  for (std::size_t k = 0; k < m.kinds.size(); ++k)
    if (m.kinds[k].kind.ffn == model::FfnFlavour::Moe) moe = static_cast<int>(k);
  ASSERT_GE(moe, 0);
  double off = cost::layer_activation(m, moe, l, t, plan::Recompute::Off).total();
  auto with = [&](std::vector<std::string> modules) {
    plan::Training u = t;
    u.recompute_modules = std::move(modules);
    return cost::layer_activation(m, moe, l, u, plan::Recompute::Selective).total();
  };
  EXPECT_EQ(with({"core_attn"}), off);
  EXPECT_LT(with({"attn_up"}), off);
  EXPECT_LT(with({"act"}), off);
  EXPECT_LT(with({"attn_up", "act"}), with({"attn_up"}));
  plan::Training u = t;
  u.recompute_modules = {"attn_up"};
  hardware::Hardware hw = test::device("h100-sxm");
  auto kt = cost::kind_times(m, l, u, hw);
  EXPECT_GT(kt.kinds[static_cast<std::size_t>(moe)].recompute_s[static_cast<int>(plan::Recompute::Selective)], 0.0);
  u.recompute_modules = {"no_such_module"};
  EXPECT_THROW(cost::layer_activation(m, moe, l, u, plan::Recompute::Selective), Error);
}

// Megatron's `moe` module checkpoints the whole MoE layer but its input (moe_layer.py: route, dispatch, routed
// experts, combine and the shared experts in one custom_forward): on DeepSeek-V3 it keeps only the layer's FFN input
// and the norm's (the router's scores and the shared expert's internals go too, which `moe_act` keeps), and its recompute runs the
// dispatch and combine again (EP x 1.5, as full recompute does), which `moe_act` does not.
TEST(CostRecompute, MoeModuleRecomputesTheWholeMoeLayer) {
  model::Model m = test::bundled("deepseek-v3");
  plan::Layout l;
  l.tp = 1;
  l.ep = 8;
  l.dp = 8;
  l.recompute = plan::Recompute::Selective;
  plan::Training t;
  t.seq = 4096;
  std::size_t moe = 0;
  for (std::size_t k = 0; k < m.kinds.size(); ++k)
    if (m.kinds[k].kind.ffn == model::FfnFlavour::Moe) moe = k;
  auto with = [&](const std::vector<std::string>& modules) {
    plan::Training u = t;
    u.recompute_modules = cost::terms::recompute_switches(modules);
    return u;
  };
  const double h = static_cast<double>(m.spec.hidden_size);
  // What stays: the FFN norm's input and its output (the MoE layer's input), s x b x h each in the compute dtype.
  const double input_bytes = 2 * 4096.0 * h * t.compute_bytes;
  const cost::LayerActivation whole = cost::layer_activation(m, static_cast<int>(moe), l, with({"moe"}), plan::Recompute::Selective);
  const cost::LayerActivation act = cost::layer_activation(m, static_cast<int>(moe), l, with({"moe_act"}), plan::Recompute::Selective);
  EXPECT_DOUBLE_EQ(whole.ffn, input_bytes);
  EXPECT_GT(act.ffn, whole.ffn);
  hardware::Hardware hw = test::device("h100-sxm");
  const cost::KindTimes moe_times = cost::kind_times(m, l, with({"moe"}), hw);
  const cost::KindTimes act_times = cost::kind_times(m, l, with({"moe_act"}), hw);
  EXPECT_TRUE(moe_times.kinds[moe].selective_redispatches);
  EXPECT_FALSE(act_times.kinds[moe].selective_redispatches);
  std::vector<cost::StageTime> moe_stage, act_stage;
  (void)cost::estimate_time(m, l, with({"moe"}), hw, cost::estimate_memory(m, l, with({"moe"}), 1e15), {}, &moe_times, &moe_stage);
  (void)cost::estimate_time(m, l, with({"moe_act"}), hw, cost::estimate_memory(m, l, with({"moe_act"}), 1e15), {}, &act_times, &act_stage);
  EXPECT_NEAR(moe_stage[0].ep_raw, 1.5 * act_stage[0].ep_raw, 1e-9 * act_stage[0].ep_raw);
}

// Capacity-padded experts (MindFormers' capacity_factor, Megatron's --moe-pad-expert-input-to-capacity) compute,
// store and exchange capacity_factor times the routed tokens: the EP all-to-alls and their buffer grow with it.
TEST(CostMoe, CapacityPaddingScalesTheExchange) {
  model::Model m = test::bundled("mixtral-8x7b");
  plan::Layout l;
  l.ep = 8;
  l.dp = 8;
  plan::Training t;
  t.seq = 4096;
  plan::Training padded = t;
  padded.capacity_factor = 1.5;
  hardware::Hardware hw = test::device("h100-sxm");
  std::size_t moe = 0;
  for (std::size_t k = 0; k < m.kinds.size(); ++k)
    if (m.kinds[k].kind.ffn == model::FfnFlavour::Moe) moe = k;
  const double even = cost::kind_times(m, l, t, hw).kinds[moe].ep_raw_s;
  const double capped = cost::kind_times(m, l, padded, hw).kinds[moe].ep_raw_s;
  EXPECT_GT(capped, even * 1.4);  // 1.5 x the bytes, the same latency
  EXPECT_LT(capped, even * 1.5 + 1e-12);
  EXPECT_DOUBLE_EQ(cost::estimate_memory(m, l, padded, 1e15).stages[0].ep_buffer, 1.5 * cost::estimate_memory(m, l, t, 1e15).stages[0].ep_buffer);
}

// Without a framework stating its own, `selective` is HyperParallel's (the cheap ops: norms and activations, with
// the core attention): on every layer kind of every bundled model it keeps fewer bytes than `off`.
TEST(CostRecompute, DefaultSelectiveSavesMemoryOnEveryBundledModel) {
  for (const auto& name : model::bundled_models(test::data_dir())) {
    model::Model m = test::bundled(name);
    plan::Layout l;
    l.dp = 8;
    plan::Training t;
    t.seq = 4096;
    for (std::size_t k = 0; k < m.kinds.size(); ++k) {
      double off = cost::layer_activation(m, static_cast<int>(k), l, t, plan::Recompute::Off).total();
      double sel = cost::layer_activation(m, static_cast<int>(k), l, t, plan::Recompute::Selective).total();
      EXPECT_LT(sel, off) << name << " kind " << m.kinds[k].kind.name;
    }
  }
}

// The named module `hyperparallel_selective` (MindFormers' profile, --recompute-modules) and the op records'
// default selective list (data/op_records.yaml) state the same rule twice; they must agree.
TEST(CostRecompute, HyperParallelSelectiveModuleIsTheRecordsDefault) {
  std::vector<std::string> named = cost::terms::recompute_switches({"hyperparallel_selective"});
  std::vector<std::string> data = test::catalog().records->selective;
  std::sort(named.begin(), named.end());
  std::sort(data.begin(), data.end());
  EXPECT_EQ(named, data);
}

}  // namespace
