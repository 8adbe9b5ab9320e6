// Parameter counts of the bundled configs against the published totals.
// Tolerance: 0.5 %, or half a unit of the last published digit when the publisher rounds coarser than that
// (a "37B" is any count in [36.5, 37.5) B); each test says which applies.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "helpers.hpp"

using sapp::test::bundled;
using sapp::test::near_published;

// Meta Llama 3 model card: 8B (8.03 B as HuggingFace lists the safetensors).
TEST(PublishedParams, Llama3_8B_8_03B) { near_published(bundled("llama3-8b").params().total, 8.03, 0.01, "total"); }
// HuggingFace meta-llama/Meta-Llama-3-70B: 70.6 B.
TEST(PublishedParams, Llama3_70B_70_6B) { near_published(bundled("llama3-70b").params().total, 70.6, 0.1, "total"); }
// HuggingFace meta-llama/Llama-3.1-405B: 405.9 B (Llama 3 paper: 405B).
TEST(PublishedParams, Llama31_405B_405_9B) { near_published(bundled("llama3.1-405b").params().total, 405.9, 0.1, "total"); }
// Nemotron-4 340B (arXiv:2406.11704, "340B"; NeMo's Nemotron4Config340B): 96 layers of hidden 18432, FFN 73728, 96
// heads with 8 KV groups, 256k vocabulary, untied.
TEST(PublishedParams, Nemotron4_340B) { near_published(bundled("nemotron-4-340b").params().total, 340, 5, "total"); }
// Mistral AI, "Mixtral of experts" (2024): 46.7 B total, 12.9 B active per token (embedding included).
TEST(PublishedParams, Mixtral8x7B_46_7B_total_12_9B_active) {
  auto p = bundled("mixtral-8x7b").params();
  near_published(p.total, 46.7, 0.1, "total");
  near_published(p.active, 12.9, 0.1, "active");
}
// DeepSeek-V3 technical report: 671 B total, 37 B activated; the HF model card: 685 B = 671 B main model + 14 B
// MTP module, the module including its own copies of the embedding and head. sapp shares those with the main
// model (as DeepSeek trains it), so its MTP count plus the two V x h tables is compared with 14 B; 14 is the
// difference of two numbers rounded to 1 B, hence +-1 B. Activated parameters are counted without the input
// embedding (the rounding of both the V2 and V3 papers agrees with that convention; with it, V3 gives 37.55 B).
TEST(PublishedParams, DeepSeekV3_671B_total_37B_active_plus_MTP) {
  auto m = bundled("deepseek-v3");
  auto p = m.params();
  near_published(p.total - p.mtp, 671, 1, "main model");
  double tables = 2.0 * 129280 * 7168;
  near_published(p.mtp + tables, 14, 2, "MTP module as the checkpoint stores it");
  near_published(p.active_no_embedding, 37, 1, "activated");
  EXPECT_EQ(m.mtp_layers(), 1);
}
// DeepSeek-V2 paper: 236 B total, 21 B activated.
TEST(PublishedParams, DeepSeekV2_236B_total_21B_active) {
  auto p = bundled("deepseek-v2").params();
  near_published(p.total, 236, 1, "total");
  near_published(p.active_no_embedding, 21, 1, "activated");
}
// Qwen2.5 model card (Qwen/Qwen2.5-72B): 72.7 B.
TEST(PublishedParams, Qwen25_72B_72_7B) { near_published(bundled("qwen2.5-72b").params().total, 72.7, 0.1, "total"); }
// Qwen3 model card (Qwen/Qwen3-235B-A22B): 235 B total, 22 B activated.
TEST(PublishedParams, Qwen3_235B_A22B) {
  auto p = bundled("qwen3-235b-a22b").params();
  near_published(p.total, 235, 1, "total");
  near_published(p.active, 22, 1, "active");
}
// OpenAI gpt-oss model card, table 1: gpt-oss-120b 116.83 B total, 5.13 B active per token (the card counts
// the unembedding but not the embedding as active).
TEST(PublishedParams, GptOss120B_117B_total_5_1B_active) {
  auto p = bundled("gpt-oss-120b").params();
  near_published(p.total, 116.83, 0.01, "total");
  near_published(p.active_no_embedding, 5.13, 0.01, "active");
}
// Qwen3-Next model card: 80 B total, 3 B activated (without MTP, which the bundled config leaves out). Qwen's
// cards count activated parameters without the embedding and the LM head (non-embedding parameters).
TEST(PublishedParams, Qwen3Next_80B_A3B) {
  auto p = bundled("qwen3-next-80b-a3b").params();
  near_published(p.total, 80, 1, "total");
  near_published(p.active - p.embedding - p.head, 3, 1, "active");
}
// Qwen2.5-VL-7B-Instruct on HuggingFace: 8.29 B (language model 7.6 B + vision tower 0.68 B).
TEST(PublishedParams, Qwen25VL_7B_8_29B) {
  auto m = bundled("qwen2.5-vl-7b");
  near_published(m.params().total, 8.29, 0.01, "total");
  EXPECT_EQ(m.vision_layers(), 32);
}
// Brown et al. 2020, table 2.1: GPT-3 175B.
TEST(PublishedParams, GPT3_175B) { near_published(bundled("gpt3-175b").params().total, 175, 1, "total"); }

// Gemma 2 report (arXiv:2408.00118) table 1, non-embedding parameters: 9B 8,324,201,984; 27B 26,047,480,320
// (exact counts; the report's embedding counts use a 256128-row table, the released configs 256000 rows).
TEST(PublishedParams, Gemma2_9B_and_27B_NonEmbedding) {
  auto g9 = bundled("gemma2-9b").params();
  EXPECT_NEAR(g9.total - g9.embedding, 8324201984.0, 1.0);
  auto g27 = bundled("gemma2-27b").params();
  EXPECT_NEAR(g27.total - g27.embedding, 26047480320.0, 1.0);
  EXPECT_EQ(g9.head, 3584.0);  // tied: the head is the final norm only (Gemma's configs do not state tying)
}
// Gemma 3 report (arXiv:2503.19786) table 1: 12B has 10,759 M non-embedding parameters (language model).
TEST(PublishedParams, Gemma3_12B_NonEmbedding_10759M) {
  auto p = bundled("gemma3-12b").params();
  near_published(p.total - p.embedding, 10.759, 0.001, "non-embedding");
}
// HuggingFace mistralai/Mistral-7B-v0.1: 7.24 B.
TEST(PublishedParams, Mistral7B_7_24B) { near_published(bundled("mistral-7b-v0.1").params().total, 7.24, 0.01, "total"); }
// Qwen1.5-MoE blog (2024): 14.3 B in total, 2.7 B activated (embedding and head included, as its name says).
TEST(PublishedParams, Qwen15MoE_A2_7B_14_3B_total) {
  auto p = bundled("qwen1.5-moe-a2.7b").params();
  near_published(p.total, 14.3, 0.1, "total");
  near_published(p.active, 2.7, 0.1, "active");
}

// Meta's Llama 4 model cards: Scout 17B active / 109B total, Maverick 17B active / 400B total, both counts rounded
// to whole billions and including the vision encoder (about 0.8 B), which sapp does not price: the language models'
// totals are checked within 1.5 % below the cards', the active counts within half a billion.
TEST(PublishedParams, Llama4_Scout_And_Maverick_17B_Active) {
  auto scout = bundled("llama4-scout").params();
  EXPECT_LT(scout.total, 109e9);
  EXPECT_GT(scout.total, 109e9 * (1 - 0.015)) << scout.total / 1e9;
  near_published(scout.active, 17, 1, "Scout active");
  auto maverick = bundled("llama4-maverick").params();
  EXPECT_NEAR(maverick.total, 400e9, 400e9 * 0.015) << maverick.total / 1e9;
  near_published(maverick.active, 17, 1, "Maverick active");
}

TEST(LayerStack, Llama4InterleavesChunkedAttentionAndExperts) {
  // Scout: every layer MoE, every 4th global. Maverick: every other layer MoE (dense ones at intermediate_size_mlp),
  // every 4th global: chunked dense, chunked MoE, chunked dense, global MoE, repeated.
  auto kind_of = [](const sapp::model::Model& m, std::size_t group) { return m.kinds[static_cast<std::size_t>(m.stack[group].kind)].kind; };
  auto scout = bundled("llama4-scout");
  ASSERT_EQ(scout.stack.size(), 24u);
  EXPECT_EQ(scout.stack[0].count, 3);
  EXPECT_TRUE(kind_of(scout, 0).chunked);
  EXPECT_EQ(kind_of(scout, 0).ffn, sapp::model::FfnFlavour::Moe);
  EXPECT_FALSE(kind_of(scout, 1).chunked);
  auto maverick = bundled("llama4-maverick");
  ASSERT_EQ(maverick.stack.size(), 48u);
  const std::vector<std::pair<bool, sapp::model::FfnFlavour>> cycle = {{true, sapp::model::FfnFlavour::Dense},
                                                                       {true, sapp::model::FfnFlavour::Moe},
                                                                       {true, sapp::model::FfnFlavour::Dense},
                                                                       {false, sapp::model::FfnFlavour::Moe}};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(kind_of(maverick, i).chunked, cycle[i % 4].first) << "layer " << i;
    EXPECT_EQ(kind_of(maverick, i).ffn, cycle[i % 4].second) << "layer " << i;
  }
  EXPECT_EQ(maverick.spec.intermediate_size.value_or(0), 16384);  // dense layers: intermediate_size_mlp
  EXPECT_EQ(maverick.spec.routed_expert_width(), 8192);
  EXPECT_EQ(maverick.spec.shared_expert_width(), 8192);  // one shared expert, from the family's data
}

TEST(LayerStack, Qwen3VLReadsAsQwen3WithAPlainMlpTower) {
  // model_type qwen3_vl: the language model is Qwen3's (QK-norm, no biases); its tower runs a plain GELU MLP
  // (hidden_act gelu_pytorch_tanh), not Qwen2.5-VL's SwiGLU.
  auto spec = sapp::model::read_model_file(sapp::test::data_dir() + "/../tests/configs/qwen3-vl-2b.json");
  auto m = sapp::model::resolve(spec, sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_EQ(m.spec.arch, "qwen3");
  ASSERT_TRUE(m.spec.vision.has_value());
  EXPECT_FALSE(m.spec.vision->gated_mlp);
  EXPECT_EQ(m.vision_layers(), 24);
  EXPECT_EQ(m.body_layers(), 28);
  EXPECT_TRUE(m.spec.tie_word_embeddings);
  // Its DeepStack mergers and learned position table are not priced, and the reader says so.
  EXPECT_NE(std::find(spec.unread_keys.begin(), spec.unread_keys.end(), "vision_config.deepstack_visual_indexes"), spec.unread_keys.end());
  // Qwen2.5-VL's tower stays gated.
  EXPECT_TRUE(bundled("qwen2.5-vl-7b").spec.vision->gated_mlp);
}

// Gemma 3 12B with its SigLIP tower: KerasHub's presets list 12,187,079,280 parameters for gemma3_12b
// (vision+text) and 11,765,788,416 for gemma3_12b_text (keras_hub/src/models/gemma3/gemma3_presets.py); the
// difference, 421,290,864, is the tower (27 layers, patch embedding, 4096 learned positions, post LayerNorm) and
// the projector (RMSNorm + 1152 x 3840). Exact: both counts are exact integers. (The text counts differ by
// 64 x 3840: KerasHub's vocabulary is 262,144, HuggingFace's config states 262,208.)
TEST(PublishedParams, Gemma3_12B_SigLIPTowerAndProjectorExactly) {
  auto spec = sapp::model::read_model_file(sapp::test::data_dir() + "/../tests/configs/gemma-3-12b-vision.json");
  auto m = sapp::model::resolve(spec, sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_EQ(m.spec.arch, "gemma3");
  ASSERT_TRUE(m.spec.vision.has_value());
  EXPECT_FALSE(m.spec.vision->gated_mlp);
  EXPECT_EQ(m.spec.vision->image_tokens, 4096);  // (896 / 14)^2 patches per image, one image per sample by default
  EXPECT_EQ(m.vision_layers(), 27);
  EXPECT_DOUBLE_EQ(m.params().vision, 12187079280.0 - 11765788416.0);
  EXPECT_TRUE(spec.unread_keys.empty()) << spec.unread_keys.front();
}

// Qwen3.5 (model_type qwen3_5_moe / qwen3_5 and their _text configs) runs Qwen3-Next's hybrid layers: every 4th
// layer gated full attention, the rest gated DeltaNet; the MoE variant Qwen3-Next's MoE FFN, the dense one SwiGLU.
// Qwen3.5-35B-A3B: "35B" total and "A3B" active as its name rounds them (whole billions, +-0.5 B), the main model
// without its MTP layer (as DeepSeek-V3's 671 B excludes its MTP module).
TEST(LayerStack, Qwen35ReadsAsQwen3NextLayers) {
  using sapp::model::AttentionFlavour;
  using sapp::model::FfnFlavour;
  auto spec = sapp::model::read_model_file(sapp::test::data_dir() + "/../tests/configs/qwen3.5-35b-a3b.json");
  auto m = sapp::model::resolve(spec, sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_EQ(m.spec.arch, "qwen3_next");
  EXPECT_EQ(m.body_layers(), 40);
  ASSERT_GE(m.stack.size(), 2u);
  EXPECT_EQ(m.stack[0].count, 3);
  EXPECT_EQ(m.kinds[static_cast<std::size_t>(m.stack[0].kind)].kind.attention, AttentionFlavour::Linear);
  EXPECT_EQ(m.kinds[static_cast<std::size_t>(m.stack[1].kind)].kind.attention, AttentionFlavour::Gqa);
  EXPECT_EQ(m.spec.mtp_depth.value_or(0), 1);
  auto p = m.params();
  near_published(p.total - p.mtp, 35, 1, "total without MTP");
  near_published(p.active, 3, 1, "active");
  EXPECT_TRUE(spec.unread_keys.empty()) << spec.unread_keys.front();

  nlohmann::json dense = {{"model_type", "qwen3_5_text"}, {"hidden_size", 1024},       {"num_hidden_layers", 8},    {"num_attention_heads", 8},
                          {"num_key_value_heads", 2},     {"head_dim", 128},           {"intermediate_size", 3072}, {"vocab_size", 32000},
                          {"linear_conv_kernel_dim", 4},  {"linear_key_head_dim", 64}, {"linear_num_key_heads", 8}, {"linear_num_value_heads", 16},
                          {"linear_value_head_dim", 64}};
  auto d = sapp::model::resolve(sapp::model::model_from_json(dense, "qwen3.5-dense"), sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_EQ(d.spec.arch, "qwen3_5");
  for (const auto& g : d.stack) EXPECT_EQ(d.kinds[static_cast<std::size_t>(g.kind)].kind.ffn, FfnFlavour::Dense);
  EXPECT_EQ(d.kinds[static_cast<std::size_t>(d.stack[1].kind)].kind.attention, AttentionFlavour::Gqa);  // layers 4, 8: full
}

TEST(LayerStack, PeriodsAndWindowsComeFromTheFamilyData) {
  using sapp::model::AttentionFlavour;
  auto kind_of = [](const sapp::model::Model& m, std::size_t group) { return m.kinds[static_cast<std::size_t>(m.stack[group].kind)].kind; };
  // Gemma 2: local, global, local, ... (42 layers alternate).
  auto g2 = bundled("gemma2-9b");
  ASSERT_EQ(g2.stack.size(), 42u);
  EXPECT_TRUE(kind_of(g2, 0).sliding);
  EXPECT_FALSE(kind_of(g2, 1).sliding);
  // Gemma 3: sliding_window_pattern 6: five local layers, then a global one, 8 times.
  auto g3 = bundled("gemma3-12b");
  ASSERT_EQ(g3.stack.size(), 16u);
  EXPECT_EQ(g3.stack[0].count, 5);
  EXPECT_TRUE(kind_of(g3, 0).sliding);
  EXPECT_EQ(g3.stack[1].count, 1);
  EXPECT_FALSE(kind_of(g3, 1).sliding);
  // Qwen3-Next's published config states full_attention_interval: 4, not layer_types.
  auto next = bundled("qwen3-next-80b-a3b");
  ASSERT_EQ(next.stack.size(), 24u);
  EXPECT_EQ(next.stack[0].count, 3);
  EXPECT_EQ(kind_of(next, 0).attention, AttentionFlavour::Linear);
  EXPECT_EQ(kind_of(next, 1).attention, AttentionFlavour::Gqa);
  // Mistral 7B v0.1: a window in every layer; without one, every layer attends fully.
  auto mistral = bundled("mistral-7b-v0.1");
  ASSERT_EQ(mistral.stack.size(), 1u);
  EXPECT_TRUE(kind_of(mistral, 0).sliding);
  auto spec = mistral.spec;
  spec.sliding_window.reset();
  auto full = sapp::model::resolve(spec, sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_FALSE(full.kinds[0].kind.sliding);
}

TEST(ModelSpec, AStatedWindowNoLayerAttendsIsRefused) {
  // Qwen2 with use_sliding_window: true: its profile prices no window, so the config is refused by key.
  auto spec = sapp::model::model_from_json(nlohmann::json::parse(R"({"model_type":"qwen2","hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":100,"intermediate_size":128,"sliding_window":32,"use_sliding_window":true})"),
                                           "qwen2.json");
  try {
    (void)sapp::model::resolve(spec, sapp::test::catalog().records, sapp::test::catalog().profiles);
    FAIL() << "accepted a window no layer attends";
  } catch (const sapp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen2.json: sliding_window"), std::string::npos) << e.what();
  }
  // The same window switched off (as Qwen2.5's configs state it) is full attention.
  auto off = sapp::model::model_from_json(nlohmann::json::parse(R"({"model_type":"qwen2","hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":100,"intermediate_size":128,"sliding_window":32,"use_sliding_window":false})"),
                                          "qwen2.json");
  EXPECT_FALSE(off.sliding_window.has_value());
}

TEST(LayerStack, HybridAndPrefixStacksComeFromData) {
  auto ds = bundled("deepseek-v3");
  ASSERT_EQ(ds.stack.size(), 3u);  // dense x3, moe x58, moe x1 (MTP)
  EXPECT_EQ(ds.stack[0].count, 3);
  EXPECT_EQ(ds.stack[1].count, 58);
  EXPECT_TRUE(ds.stack[2].mtp);
  auto next = bundled("qwen3-next-80b-a3b");
  EXPECT_EQ(next.stack.size(), 24u);  // (3 linear, 1 full) x 12
  EXPECT_EQ(next.kinds[static_cast<std::size_t>(next.stack[0].kind)].kind.attention, sapp::model::AttentionFlavour::Linear);
  auto oss = bundled("gpt-oss-120b");
  EXPECT_EQ(oss.stack.size(), 36u);
  EXPECT_TRUE(oss.kinds[static_cast<std::size_t>(oss.stack[0].kind)].kind.sliding);
  auto vl = bundled("qwen2.5-vl-7b");
  EXPECT_TRUE(vl.stack.front().vision);
}

TEST(ModelSpec, UnsetMeansUnsetNotZero) {
  auto m = sapp::model::model_from_json(nlohmann::json::parse(R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":100,"intermediate_size":128})"),
                                        "tiny.json");
  EXPECT_FALSE(m.num_kv_heads.has_value());
  EXPECT_EQ(m.kv_heads(), 4);  // defaults to the heads, not 0
  EXPECT_FALSE(m.num_experts.has_value());
  EXPECT_FALSE(m.is_moe());
}

TEST(ModelSpec, KeySpellingsOfEveryFamily) {
  // num_local_experts (Mixtral, gpt-oss) and experts_per_token (gpt-oss) read as experts: a reference defect
  // priced Mixtral as dense.
  EXPECT_EQ(bundled("mixtral-8x7b").spec.num_experts.value_or(0), 8);
  EXPECT_EQ(bundled("gpt-oss-120b").spec.experts_per_token.value_or(0), 4);
  EXPECT_EQ(bundled("deepseek-v3").spec.num_experts.value_or(0), 256);  // n_routed_experts
  EXPECT_EQ(bundled("deepseek-v3").spec.qk_nope_head_dim.value_or(0), 128);
  EXPECT_EQ(bundled("deepseek-v3").spec.v_head_dim.value_or(0), 128);
}

TEST(Families, ANewFamilyIsADataFileOnly) {
  // A family sapp has never seen: a parallel-attention-free "toy" with a 2-matmul MLP and biases everywhere,
  // chosen from its model_type by the profile's own list.
  std::string dir = sapp::test::temp_dir();
  sapp::test::write_file(dir + "/toyfam.yaml", R"(
model_types: [toy_lm]
defaults: {qkv_bias: 1, o_bias: 1, mlp_bias: 1, norm_bias: 1}
kinds:
  block: {attention: gqa, ffn: dense, ops: {att_mm: 4, att_bmm: 2, ffn_mm: 2, softmax: 1, norm: 2, tp_comm: 4, act: 1, linrec: 0}}
)");
  const auto& cat = sapp::test::catalog();
  auto profiles = cat.profiles;
  profiles.push_back(sapp::model::load_profile(dir + "/toyfam.yaml", *cat.records));
  auto spec = sapp::model::model_from_json(nlohmann::json::parse(R"({"model_type":"toy_lm","hidden_size":64,"num_hidden_layers":3,
      "num_attention_heads":4,"vocab_size":1000,"intermediate_size":256,"tie_word_embeddings":true})"),
                                           "toy.json");
  auto m = sapp::model::resolve(spec, cat.records, profiles);
  EXPECT_EQ(m.profile.arch, "toyfam");
  // Per layer: attention 4h^2 + 4h biases, MLP 2*h*f + f + h, two LayerNorms 4h; plus embedding V*h and final norm 2h.
  double h = 64, f = 256, v = 1000;
  double layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
  EXPECT_DOUBLE_EQ(m.params().total, 3 * layer + v * h + 2 * h);
}

// Families added as data (data/op_profiles): each bundled config against its publisher's count.
// Microsoft, Phi-3 technical report (arXiv:2404.14219) §2 and the HF model page of Phi-3-mini-4k-instruct: 3.82 B.
TEST(PublishedParams, Phi3Mini_3_82B) {
  auto m = bundled("phi3-mini-4k");
  near_published(m.params().total, 3.82, 0.01, "total");
  EXPECT_TRUE(m.kinds.at(static_cast<std::size_t>(m.stack.front().kind)).kind.sliding);  // sliding_window 2047, every layer
}
// Qwen3 model card (HF Qwen/Qwen3-8B): 8.2 B parameters, 6.95 B without the embeddings.
TEST(PublishedParams, Qwen3_8B_8_2B) {
  auto p = bundled("qwen3-8b").params();
  near_published(p.total, 8.2, 0.1, "total");
}
// OLMo 2 (arXiv:2501.00656), HF allenai/OLMo-2-1124-7B: 7.3 B.
TEST(PublishedParams, Olmo2_7B_7_3B) { near_published(bundled("olmo2-7b").params().total, 7.3, 0.1, "total"); }
// Gemma report (arXiv:2403.08295) table 1, 7B: 786,432,000 embedding and 7,751,248,896 non-embedding parameters.
TEST(PublishedParams, Gemma7B_Exact) {
  auto p = bundled("gemma-7b").params();
  EXPECT_NEAR(p.embedding, 786432000.0, 1.0);
  EXPECT_NEAR(p.total - p.embedding, 7751248896.0, 1.0);
}
// IBM, HF ibm-granite/granite-3.0-8b-base: 8.17 B (tied embeddings).
TEST(PublishedParams, Granite30_8B_8_17B) { near_published(bundled("granite-3.0-8b").params().total, 8.17, 0.01, "total"); }
// OLMoE paper (arXiv:2409.02060) table 1: 6.9 B total, 1.3 B active.
TEST(PublishedParams, OLMoE_1B_7B) {
  auto p = bundled("olmoe-1b-7b").params();
  near_published(p.total, 6.9, 0.1, "total");
  near_published(p.active, 1.3, 0.1, "active");
}
// Moonshot AI, Kimi K2 model card: 1 T total, 32 B activated (counted as DeepSeek counts them, without the input
// embedding: with it the count would be 32.9 B). A "1T" is taken to one decimal of a trillion.
TEST(PublishedParams, KimiK2_1T_total_32B_active) {
  auto p = bundled("kimi-k2").params();
  near_published(p.total, 1000, 100, "total");
  near_published(p.active_no_embedding, 32, 1, "activated");
}
// Zhipu AI, GLM-4.5 announcement and report (arXiv:2508.06471): GLM-4.5-Air has 106 B total and 12 B active
// parameters; the HF listing of zai-org/GLM-4.5-Air says 110 B (the checkpoint, whose MTP layer stores its own
// embedding and head, as DeepSeek-V3's does). sapp's counts agree with 106 B without the MTP layer and the input
// embedding (106.2 B; with the embedding 106.9 B), with 12 B without the embedding and the head (12.2 B), and with
// 110 B for the checkpoint (110.5 B).
TEST(PublishedParams, Glm45Air_106B_total_12B_active) {
  auto p = bundled("glm-4.5-air").params();
  near_published(p.total - p.mtp - p.embedding, 106, 1, "main model without the input embedding");
  near_published(p.active - p.embedding - p.head, 12, 1, "active without embedding and head");
  near_published(p.total + p.embedding + p.head, 110, 1, "checkpoint (MTP layer with its own embedding and head)");
}

// Configs bundled for the HuggingFace ids framework configs name (each dimension from the published config.json,
// cross-checked against a framework's model definition; `_source` in each data file says which).
// Meta's Llama 3.2 model card: 1B "(1.23B)", shared embeddings (HuggingFace lists 1.24 B; sapp's count, 1.2358 B, is
// within 0.5 % of the card's).
TEST(PublishedParams, Llama32_1B_1_23B_TiedEmbeddings) {
  auto p = bundled("llama-3.2-1b").params();
  near_published(p.total, 1.23, 0.01, "total");
  EXPECT_LT(p.head, 1e4);  // tied: the head is the final norm only
}
// OpenAI gpt-oss model card (arXiv:2508.10925) table 1: gpt-oss-20b 20.91 B total, 3.61 B active per token (the
// unembedding counted as active, the embedding not, as for gpt-oss-120b above).
TEST(PublishedParams, GptOss20B_20_91B_total_3_61B_active) {
  auto m = bundled("gpt-oss-20b");
  auto p = m.params();
  near_published(p.total, 20.91, 0.01, "total");
  near_published(p.active_no_embedding, 3.61, 0.01, "active");
  EXPECT_EQ(m.stack.size(), 24u);  // sliding and full attention alternate
  EXPECT_TRUE(m.kinds[static_cast<std::size_t>(m.stack[0].kind)].kind.sliding);
  EXPECT_FALSE(m.kinds[static_cast<std::size_t>(m.stack[1].kind)].kind.sliding);
}
// Qwen2.5 model card (HF Qwen/Qwen2.5-7B): 7.61 B parameters, 6.53 B non-embedding (without the embedding and the
// untied LM head).
TEST(PublishedParams, Qwen25_7B_7_61B) {
  auto p = bundled("qwen2.5-7b").params();
  near_published(p.total, 7.61, 0.01, "total");
  near_published(p.total - p.embedding - p.head, 6.53, 0.01, "non-embedding");
}
// Qwen3 model card (HF Qwen/Qwen3-14B): 14.8 B parameters, 13.2 B non-embedding (without the embedding and the
// untied LM head).
TEST(PublishedParams, Qwen3_14B_14_8B) {
  auto p = bundled("qwen3-14b").params();
  near_published(p.total, 14.8, 0.1, "total");
  near_published(p.total - p.embedding - p.head, 13.2, 0.1, "non-embedding");
}
// Qwen3 model cards: Qwen3-32B 32.8 B (31.2 B non-embedding), Qwen3-4B 4.0 B (3.6 B), Qwen3-0.6B 0.6 B (0.44 B);
// the two small ones tie the LM head to the embedding.
TEST(PublishedParams, Qwen3_32B_4B_0_6B) {
  auto q32 = bundled("qwen3-32b").params();
  near_published(q32.total, 32.8, 0.1, "32B total");
  near_published(q32.total - q32.embedding - q32.head, 31.2, 0.1, "32B non-embedding");
  auto q4 = bundled("qwen3-4b").params();
  near_published(q4.total, 4.0, 0.1, "4B total");
  near_published(q4.total - q4.embedding - q4.head, 3.6, 0.1, "4B non-embedding");
  auto q06 = bundled("qwen3-0.6b").params();
  near_published(q06.total, 0.6, 0.1, "0.6B total");
  near_published(q06.total - q06.embedding - q06.head, 0.44, 0.01, "0.6B non-embedding");
  EXPECT_LT(q4.head, 1e4);
  EXPECT_LT(q06.head, 1e4);
}
// Moonshot AI, "Muon is Scalable for LLM Training" (arXiv:2502.16982) tables 4 and 5 and the Moonlight README:
// 15.29 B total and 2.24 B activated, "the reported parameter counts exclude the embedding parameters" (sapp agrees
// when the untied LM head is left out as well: 15.289 B and 2.244 B); the model card's download table names it 16B
// total, 3B activated (sapp: 15.96 B and 2.91 B with the embedding and head).
TEST(PublishedParams, Moonlight16B_A3B_15_29B_total_2_24B_active) {
  auto m = bundled("moonlight-16b-a3b");
  auto p = m.params();
  near_published(p.total - p.embedding - p.head, 15.29, 0.01, "total without embedding and head");
  near_published(p.active - p.embedding - p.head, 2.24, 0.01, "activated without embedding and head");
  near_published(p.total, 16, 1, "total (model card)");
  near_published(p.active, 3, 1, "activated (model card)");
  EXPECT_EQ(m.mtp_layers(), 0);
  EXPECT_FALSE(m.spec.q_lora_rank.has_value());  // q_lora_rank null: no query compression
}
// Microsoft names phi-4 "14B" (model card; report arXiv:2412.08905 section 3), a count rounded down to the billion
// (phi-3-medium, whose architecture phi-4 follows with a 100,352-token vocabulary, is also "14B"): the HuggingFace
// microsoft/phi-4 page lists 14.7 B parameters for its safetensors, which is what this checks.
TEST(PublishedParams, Phi4_14_7B) {
  auto m = bundled("phi-4");
  near_published(m.params().total, 14.7, 0.1, "total");
  EXPECT_GE(m.params().total, 14e9);
  EXPECT_FALSE(m.spec.sliding_window.has_value());  // full attention
}
// Mistral AI's announcement of Mistral NeMo: a 12B model. Its config states head_dim 128 with hidden 5120 and 32
// heads (queries 4096 wide, not 5120): with hidden/heads = 160 the count would be 12.77 B.
TEST(PublishedParams, MistralNemo12B_ExplicitHeadDim) {
  auto m = bundled("mistral-nemo-base-2407");
  near_published(m.params().total, 12, 1, "total");
  EXPECT_EQ(m.spec.effective_head_dim(), 128);
  EXPECT_LT(m.params().total, 12.5e9);
}

// n_group / topk_group 0 means no group-limited routing and q_lora_rank 0 no query compression (MindFormers'
// DeepSeek configs state 0 for them): read as unset, not refused as zero counts; a positive group count is still
// checked against the experts.
// Keys whose 0 or absence the configs mean as "none" or "the class default": Qwen3-Coder-480B-A35B states
// shared_expert_intermediate_size 0 (no shared expert); Gemma 3's multimodal configs leave vocab_size out of
// text_config (Gemma3TextConfig's default 262208).
TEST(ModelSpec, PublishedConfigsOmissionsAndZeros) {
  const auto coder = sapp::model::model_from_json(
      nlohmann::json::parse(R"({"model_type":"qwen3_moe","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":16,"vocab_size":1000,"intermediate_size":128,"moe_intermediate_size":32,"num_experts":8,"num_experts_per_tok":2,
      "shared_expert_intermediate_size":0})"),
      "coder");
  EXPECT_FALSE(coder.shared_expert_intermediate_size.has_value());
  const auto gemma = sapp::model::model_from_json(
      nlohmann::json::parse(R"({"model_type":"gemma3","text_config":{"model_type":"gemma3_text","hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":128}})"),
      "gemma3");
  EXPECT_EQ(gemma.vocab_size, 262208);
}

TEST(ModelSpec, ZeroRoutingGroupsMeanNone) {
  auto config = [](int groups) {
    return nlohmann::json::parse(R"({"model_type":"deepseek_v3","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":1000,
      "intermediate_size":512,"moe_intermediate_size":64,"n_routed_experts":8,"num_experts_per_tok":2,"n_shared_experts":1,"first_k_dense_replace":1,
      "kv_lora_rank":64,"q_lora_rank":0,"qk_nope_head_dim":32,"qk_rope_head_dim":16,"v_head_dim":32,"topk_group":0,"n_group":)" +
                                 std::to_string(groups) + "}");
  };
  EXPECT_FALSE(sapp::model::model_from_json(config(0), "ds").routing_groups.has_value());
  EXPECT_FALSE(sapp::model::model_from_json(config(0), "ds").q_lora_rank.has_value());
  EXPECT_EQ(sapp::model::model_from_json(config(4), "ds").routing_groups.value_or(0), 4);
  EXPECT_THROW((void)sapp::model::model_from_json(config(3), "ds"), sapp::Error);  // 3 groups do not divide 8 experts
  // TeleChat3 trains as DeepSeek-V3's structure (data/op_profiles/deepseek.yaml states why): the same family.
  nlohmann::json telechat3 = config(0);
  telechat3["model_type"] = "telechat3";
  const auto resolved =
      sapp::model::resolve(sapp::model::model_from_json(telechat3, "telechat3"), sapp::test::catalog().records, sapp::test::catalog().profiles);
  EXPECT_EQ(resolved.spec.arch, "deepseek");
}

// --model takes a HuggingFace model folder (a local checkpoint): its config.json, the model named by the folder; a
// folder without one is refused by name (it failed with "is a directory, not a file").
TEST(BundledModels, AHuggingFaceModelFolderIsItsConfig) {
  const std::string dir = sapp::test::temp_dir() + "/Qwen3-8B";
  std::filesystem::create_directories(dir);
  sapp::test::write_file(dir + "/config.json", sapp::io::read_text(sapp::test::data_dir() + "/models/qwen3-8b.json"));
  for (const std::string& given : {dir, dir + "/"}) {
    const sapp::model::ModelSpec m = sapp::model::load_model(given, sapp::test::data_dir());
    EXPECT_EQ(m.name, "Qwen3-8B");
    EXPECT_EQ(m.num_layers, 36);
  }
  std::filesystem::create_directories(dir + "/empty");
  sapp::test::expect_error([&] { (void)sapp::model::load_model(dir + "/empty", sapp::test::data_dir()); }, "is a folder without a config.json",
                           "an empty folder");
}

// --model takes the HuggingFace id of a bundled config as framework configs name it (the lower-cased last component
// as the data file's name, or its `_source` / `_hf_ids`); an id bundled under neither is refused by name.
TEST(BundledModels, HuggingFaceIdsLoadTheBundledConfig) {
  const std::string dir = sapp::test::data_dir();
  EXPECT_EQ(sapp::model::load_model("Qwen/Qwen3-8B", dir).name, "qwen3-8b");
  EXPECT_EQ(sapp::model::load_model("moonshotai/Moonlight-16B-A3B-Instruct", dir).name, "moonlight-16b-a3b");
  EXPECT_EQ(sapp::model::load_model("mistralai/Mistral-Nemo-Instruct-2407", dir).hidden_size, 5120);
  EXPECT_THROW((void)sapp::model::load_model("nobody/no-such-model", dir), sapp::Error);
}
