// Families added as data (data/op_profiles): MiniMax-M2, GLM-4-0414, Seed-OSS, ERNIE 4.5 (dense and MoE) and OLMo 3.
// Each bundled config against its publisher's count; a family without a bundled config against a small config
// whose count is derived by hand from the architecture.
// Tolerance: 0.5 %, or half a unit of the last published digit when the publisher rounds coarser than that
// (a "36B" is any count in [35.5, 36.5) B); each test says which applies.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "core/error.hpp"
#include "helpers.hpp"

using sapp::test::bundled;
using sapp::test::near_published;

namespace {

sapp::model::Model resolve_json(const std::string& text) {
  const auto& cat = sapp::test::catalog();
  return sapp::model::resolve(sapp::model::model_from_json(nlohmann::json::parse(text), "synthetic.json"), cat.records, cat.profiles);
}

// A config resolve_json must refuse, with an error naming every word of `names` (the file, the key, the value).
void expect_refused(const std::string& text, const std::vector<std::string>& names) {
  try {
    (void)resolve_json(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const sapp::Error& e) {
    for (const auto& name : names) EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << name << " not in: " << e.what();
  }
}

// The kind name of every body layer, in model order.
std::vector<std::string> layer_kinds(const sapp::model::Model& m) {
  std::vector<std::string> out;
  for (const auto& g : m.stack) {
    if (g.mtp || g.vision) continue;
    for (long long i = 0; i < g.count; ++i) out.push_back(m.kinds.at(static_cast<std::size_t>(g.kind)).kind.name);
  }
  return out;
}

}  // namespace

// MiniMax, model card of MiniMaxAI/MiniMax-M2 (and Transformers' model_doc/minimax_m2.md): 230 billion total parameters,
// 10 billion activated. sapp counts 228.7 B total (the card's "230" is two significant figures: half of 10 B) and
// 10.4 B activated without the input embedding (the DeepSeek convention, as for Kimi K2; half of 1 B).
TEST(PublishedParams, MiniMaxM2_230B_total_10B_active) {
  auto m = bundled("minimax-m2");
  EXPECT_EQ(m.profile.arch, "minimax_m2");
  ASSERT_EQ(m.stack.size(), 1u);
  EXPECT_EQ(m.stack.front().count, 62);
  auto p = m.params();
  near_published(p.total, 230, 10, "total");
  near_published(p.active_no_embedding, 10, 1, "activated without the input embedding");
}

// ByteDance Seed, model card of ByteDance-Seed/Seed-OSS-36B-Base: 36 B parameters (half of 1 B). sapp: 36.15 B.
TEST(PublishedParams, SeedOss36B_36B) {
  auto m = bundled("seed-oss-36b");
  EXPECT_EQ(m.profile.arch, "seed_oss");
  near_published(m.params().total, 36, 1, "total");
}

// Baidu, model card of baidu/ERNIE-4.5-0.3B-Base (Model Overview table): 0.36 B parameters, tied embeddings (0.5 %,
// as half of 0.01 B). sapp: 0.361 B.
TEST(PublishedParams, Ernie45_0_3B_0_36B) {
  auto m = bundled("ernie-4.5-0.3b");
  EXPECT_EQ(m.profile.arch, "ernie4_5");
  auto p = m.params();
  near_published(p.total, 0.36, 0.01, "total");
  EXPECT_DOUBLE_EQ(p.head, 1024.0);  // tied: the final norm only
}

// Ai2, OLMo-core's Olmo 3 README (src/scripts/official/OLMo3): "a new family of 7B and 32B models"; Olmo 3 7B has 32
// layers of width 4096 with 32 query and 32 KV heads (half of 1 B). sapp: 7.30 B. Three of every four layers attend a
// sliding window of 4096 keys.
TEST(PublishedParams, Olmo3_7B_7B) {
  auto m = bundled("olmo3-7b");
  EXPECT_EQ(m.profile.arch, "olmo3");
  near_published(m.params().total, 7, 1, "total");
  auto kinds = layer_kinds(m);
  ASSERT_EQ(kinds.size(), 32u);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "local"), 24);
  EXPECT_EQ(kinds[3], "global");
  EXPECT_EQ(kinds[31], "global");
  for (const auto& k : m.kinds) EXPECT_EQ(k.kind.sliding, k.kind.name == "local") << k.kind.name;
}

// OLMo 3 configs that state no layer_types: Olmo3Config's pattern, every 4th layer full.
TEST(ModelFamilies, Olmo3WithoutLayerTypesAttendsFullyEveryFourthLayer) {
  auto m = resolve_json(R"({"model_type":"olmo3","hidden_size":64,"num_hidden_layers":8,"num_attention_heads":4,"vocab_size":1000,
      "intermediate_size":128,"sliding_window":16})");
  std::vector<std::string> want = {"local", "local", "local", "global", "local", "local", "local", "global"};
  EXPECT_EQ(layer_kinds(m), want);
}

// GLM-4-0414 (Transformers' modeling_glm4.py): no bundled config (GLM-4-9B-0414's and GLM-4-32B-0414's config.json were
// not found in a public source), so a small one priced by hand. Per layer: q with bias a*dh*h + a*dh, k and v with
// biases 2*(kv*dh*h + kv*dh), o without bias a*dh*h; the fused gate_up and down projections 3*h*f; four RMSNorms 4h.
// Plus the embedding and the untied head V*h each and the final norm h. The configs state attention_bias: true, which
// switches the q, k and v biases only (the profile's attention_bias list).
TEST(ModelFamilies, Glm4LayerHasFourNormsAndBiasesOnQkvOnly) {
  auto m = resolve_json(R"({"model_type":"glm4","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":16,"vocab_size":1000,"intermediate_size":128,"partial_rotary_factor":0.5,"attention_bias":true})");
  EXPECT_EQ(m.profile.arch, "glm4");
  double h = 64, a = 4, kv = 2, dh = 16, f = 128, v = 1000;
  double layer = (h * a * dh + a * dh) + 2 * (h * kv * dh + kv * dh) + a * dh * h + 3 * h * f + 4 * h;
  EXPECT_DOUBLE_EQ(m.params().total, 2 * layer + 2 * v * h + h);
}

// MiniMax-M2's layer by hand (Transformers' modeling_minimax_m2.py): bias-free GQA, q/k norms over the whole q and k
// projections (qk_norm_type per_layer: RMSNorm(a*dh) and RMSNorm(kv*dh)), two RMSNorms, a sigmoid router with one bias
// per expert, experts of width intermediate_size and no shared expert. A token runs top-k of them.
TEST(ModelFamilies, MiniMaxM2LayerByHand) {
  auto m = resolve_json(R"({"model_type":"minimax_m2","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":8,"intermediate_size":16,"num_local_experts":4,"num_experts_per_tok":2,"use_qk_norm":true,"qk_norm_type":"per_layer",
      "vocab_size":100})");
  double h = 32, a = 4, kv = 2, dh = 8, f = 16, e = 4, k = 2, v = 100;
  double dense = 2 * h * a * dh + 2 * h * kv * dh + (a + kv) * dh + 2 * h + (h * e + e);  // attention, q/k norms, norms, router
  double expert = 3 * h * f;
  auto p = m.params();
  EXPECT_DOUBLE_EQ(p.total, dense + e * expert + 2 * v * h + h);
  EXPECT_DOUBLE_EQ(p.active, dense + k * expert + 2 * v * h + h);
}

// qk_norm_type per_head is Qwen3's norm of one head's width (dh weights for q and for k); any other value is refused
// with the file, key and value.
TEST(ModelFamilies, QkNormTypePerHeadAndAMisspeltValue) {
  const std::string base = R"({"model_type":"minimax_m2","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":8,"intermediate_size":16,"num_local_experts":4,"num_experts_per_tok":2,"use_qk_norm":true,
      "vocab_size":100,"qk_norm_type":)";
  double whole = resolve_json(base + R"("per_layer"})").params().total;
  double per_head = resolve_json(base + R"("per_head"})").params().total;
  EXPECT_DOUBLE_EQ(whole - per_head, (4 + 2) * 8 - 2 * 8);
  expect_refused(base + R"("per_token"})", {"synthetic.json", "qk_norm_type", "per_token"});
}

// MiniMax-M2's use_routing_bias switches the router's per-expert biases (e per layer); attn_type_list may only hold
// softmax attention layers (1): MiniMax-01's lightning attention (0) is refused with the file and key.
TEST(ModelFamilies, MiniMaxRoutingBiasAndAttentionTypes) {
  const std::string base = R"({"model_type":"minimax_m2","hidden_size":32,"num_hidden_layers":2,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":8,"intermediate_size":16,"num_local_experts":4,"num_experts_per_tok":2,"vocab_size":100,)";
  double biased = resolve_json(base + R"("use_routing_bias":true,"attn_type_list":[1,1]})").params().total;
  double plain = resolve_json(base + R"("use_routing_bias":false})").params().total;
  EXPECT_DOUBLE_EQ(biased - plain, 2 * 4);
  expect_refused(base + R"("attn_type_list":[0,1]})", {"synthetic.json", "attn_type_list"});
}

// Seed-OSS (Transformers' configuration_seed_oss.py) states the o projection's bias apart: attention_bias switches q, k
// and v, attention_out_bias o (h weights per layer). Llama's attention_bias switches all four (modeling_llama.py).
TEST(ModelFamilies, AttentionOutBiasIsTheOProjectionsBias) {
  const std::string seed = R"({"model_type":"seed_oss","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"vocab_size":1000,"intermediate_size":128,"attention_bias":true,"attention_out_bias":)";
  double without = resolve_json(seed + "false}").params().total;
  double with = resolve_json(seed + "true}").params().total;
  EXPECT_DOUBLE_EQ(with - without, 3 * 64);
  const std::string llama = R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":16,"vocab_size":1000,"intermediate_size":128,"attention_bias":)";
  double biased = resolve_json(llama + "true}").params().total;
  double plain = resolve_json(llama + "false}").params().total;
  EXPECT_DOUBLE_EQ(biased - plain, 3 * (4 * 16 + 2 * 2 * 16 + 64));  // q, k, v and o biases per layer
}

// ERNIE 4.5 MoE (Transformers' modeling_ernie4_5_moe.py) stated under the generic keys: layer 0 dense (the configs'
// moe_layer_start_index 1), then MoE layers with a biased softmax router, routed experts of moe_intermediate_size and
// shared experts of n_shared_experts times that width; tied embeddings (Ernie4_5_MoeConfig's default).
TEST(ModelFamilies, Ernie45MoeFromGenericKeysByHand) {
  auto m = resolve_json(R"({"model_type":"ernie4_5_moe","hidden_size":32,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":8,"intermediate_size":64,"moe_intermediate_size":16,"num_experts":4,"num_experts_per_tok":2,"n_shared_experts":2,
      "first_k_dense_replace":1,"vocab_size":100})");
  EXPECT_EQ(m.profile.arch, "ernie4_5_moe");
  double h = 32, a = 4, kv = 2, dh = 8, f = 64, fe = 16, e = 4, shared = 2, v = 100;
  double common = 2 * h * a * dh + 2 * h * kv * dh + 2 * h;  // bias-free attention and two RMSNorms
  double dense = common + 3 * h * f;
  double moe = common + (h * e + e) + 3 * h * shared * fe + e * 3 * h * fe;
  EXPECT_DOUBLE_EQ(m.params().total, dense + 2 * moe + v * h + h);
  std::vector<std::string> want = {"dense", "moe", "moe"};
  EXPECT_EQ(layer_kinds(m), want);
}

// ERNIE 4.5 MoE as its config.json states it: the experts under moe_num_experts / moe_k / moe_num_shared_experts /
// moe_layer_start_index / moe_layer_interval (Transformers' configuration_ernie4_5_moe.py): the same model, priced the
// same as with the generic keys above; moe_layer_end_index makes the layers after it dense.
TEST(ModelFamilies, Ernie45MoeOwnKeysReadAsTheGenericOnes) {
  auto own = resolve_json(R"({"model_type":"ernie4_5_moe","hidden_size":32,"num_hidden_layers":3,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":8,"intermediate_size":64,"moe_intermediate_size":16,"moe_num_experts":4,"moe_k":2,
      "moe_num_shared_experts":2,"moe_layer_start_index":1,"moe_layer_interval":1,"use_bias":false,"vocab_size":100})");
  auto generic = resolve_json(R"({"model_type":"ernie4_5_moe","hidden_size":32,"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,
      "head_dim":8,"intermediate_size":64,"moe_intermediate_size":16,"num_experts":4,"num_experts_per_tok":2,"n_shared_experts":2,
      "first_k_dense_replace":1,"vocab_size":100})");
  EXPECT_DOUBLE_EQ(own.params().total, generic.params().total);
  EXPECT_DOUBLE_EQ(own.params().active, generic.params().active);
  EXPECT_EQ(layer_kinds(own), layer_kinds(generic));
  auto ended = resolve_json(R"({"model_type":"ernie4_5_moe","hidden_size":32,"num_hidden_layers":4,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":8,"intermediate_size":64,"moe_intermediate_size":16,"moe_num_experts":4,"moe_k":2,
      "moe_layer_start_index":1,"moe_layer_end_index":2,"moe_layer_interval":1,"vocab_size":100})");
  std::vector<std::string> want = {"dense", "moe", "moe", "dense"};
  EXPECT_EQ(layer_kinds(ended), want);
}

// THUDM/glm-4-9b-chat on the Hugging Face hub: model size 9.4 B parameters (the hub's figure from the safetensors;
// "9B" in the name); half of 0.1 B.
// By hand from its config (modeling_chatglm.py): 40 layers of GQA (32 heads of 128, 2 KV groups) with q, k, v biases,
// SwiGLU of 13696, two RMSNorms; 151552-row embedding and untied output layer:
// 40 x (4096 x 4096 + 4608 + 2 x 4096 x 256 + 4096 x 4096 + 3 x 4096 x 13696 + 2 x 4096) + 2 x 151552 x 4096 + 4096
// = 9.39995 B. sapp must give exactly that.
TEST(PublishedParams, Glm4_9bChat_9_40B) {
  auto m = bundled("glm-4-9b-chat");
  EXPECT_EQ(m.profile.arch, "chatglm");
  double h = 4096, a = 32, kv = 2, dh = 128, f = 13696, v = 151552, layers = 40;
  double layer = h * a * dh + (a + 2 * kv) * dh + 2 * h * kv * dh + a * dh * h + 3 * h * f + 2 * h;
  EXPECT_DOUBLE_EQ(m.params().total, layers * layer + 2 * v * h + h);
  near_published(m.params().total, 9.40, 0.005, "total");
}

// ChatGLM's own keys: without multi_query_attention every head has its K and V (multi_query_group_num is then not
// read); add_bias_linear adds the o and FFN biases (h + 2f + h per layer) and keeps the q, k, v biases on even
// without add_qkv_bias; rmsnorm: false is LayerNorm, a bias per norm weight.
TEST(ModelFamilies, ChatGlmKeys) {
  const std::string base = R"({"model_type":"chatglm","hidden_size":64,"num_layers":2,"num_attention_heads":4,"kv_channels":16,
      "ffn_hidden_size":128,"padded_vocab_size":1000,"multi_query_group_num":2,)";
  double h = 64, a = 4, dh = 16, f = 128, v = 1000;
  double mqa = resolve_json(base + R"("multi_query_attention":true,"add_qkv_bias":true,"add_bias_linear":false,"rmsnorm":true})").params().total;
  double mha = resolve_json(base + R"("multi_query_attention":false,"add_qkv_bias":true,"add_bias_linear":false,"rmsnorm":true})").params().total;
  EXPECT_DOUBLE_EQ(mha - mqa, 2 * (2 * h * (a - 2) * dh + 2 * (a - 2) * dh));  // the K and V weights and biases of 2 more groups
  double linear = resolve_json(base + R"("multi_query_attention":true,"add_qkv_bias":false,"add_bias_linear":true,"rmsnorm":true})").params().total;
  EXPECT_DOUBLE_EQ(linear - mqa, 2 * (h + 2 * f + h));
  double layernorm = resolve_json(base + R"("multi_query_attention":true,"add_qkv_bias":true,"add_bias_linear":false,"rmsnorm":false})").params().total;
  EXPECT_DOUBLE_EQ(layernorm - mqa, 2 * 2 * h);
  EXPECT_DOUBLE_EQ(mqa, 2 * (h * a * dh + (a + 4) * dh + 2 * h * 2 * dh + a * dh * h + 3 * h * f + 2 * h) + 2 * v * h + h);
}

// A model_type no profile covers: the family of its Transformers class (architectures, CamelCase before "For"
// snake-cased: Glm4MoeForCausalLM is glm4_moe's); refused, naming both, when that is unknown too.
TEST(ModelFamilies, UnknownModelTypeFallsBackToItsArchitecture) {
  auto m = resolve_json(R"({"model_type":"glm4moe_custom","architectures":["Glm4MoeForCausalLM"],"hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"vocab_size":1000,"intermediate_size":128,"moe_intermediate_size":32,
      "n_routed_experts":4,"num_experts_per_tok":2,"n_shared_experts":1})");
  EXPECT_EQ(m.profile.arch, "glm4_moe");
  expect_refused(R"({"model_type":"falcon_h1","architectures":["FalconH1ForCausalLM"],"hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":1000,"intermediate_size":128})",
                 {"synthetic.json", "model_type", "falcon_h1", "FalconH1ForCausalLM"});
  // nemotron_h is a family now; without its hybrid pattern it names the missing key.
  expect_refused(R"({"model_type":"nemotron_h","architectures":["NemotronHForCausalLM"],"hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"vocab_size":1000,"intermediate_size":128})",
                 {"synthetic.json", "layer_types", "nemotron_h"});
}

// A squared-ReLU MLP (hidden_act relu2, Nemotron's; Megatron's --squared-relu) has no gate: h x f fewer weights per
// layer than the family's SwiGLU. MindSpeed-LLM's PLM-1.8B (MLA, --squared-relu) had been priced gated: 2.36 B
// against its 1.8 B.
TEST(ModelFamilies, SquaredReluIsUngated) {
  const std::string base = R"({"model_type":"llama","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,"vocab_size":1000,
      "intermediate_size":128,"hidden_act":)";
  double gated = resolve_json(base + R"("silu"})").params().total;
  double plain = resolve_json(base + R"("relu2"})").params().total;
  EXPECT_DOUBLE_EQ(gated - plain, 3 * 64 * 128);
  sapp::config::Loaded l = sapp::config::read_text(
      "torchrun pretrain_gpt.py --num-layers 3 --hidden-size 64 --num-attention-heads 4 --vocab-size 1000 --ffn-hidden-size 128 --squared-relu\n", "plm.sh",
      sapp::config::Format::Megatron);
  EXPECT_EQ(l.model_config.at("hidden_act"), "relu2");
}

// InternLM2 (arXiv:2403.17297 §2.2, its remote modeling_internlm2.py): Llama's layer with q, k, v fused into wqkv,
// `bias` on wqkv and wo. By hand, hidden 64, 4 heads of 16, 2 KV heads, FFN 128, 2 layers, vocabulary 1000,
// untied: embedding and head 2 x 1000 x 64 = 128000; per layer q 64 x 64 + k, v 2 x 64 x 32 + o 64 x 64 + SwiGLU
// 3 x 64 x 128 + two RMSNorms 2 x 64 = 36992, twice 73984; final norm 64: 202048. With bias: wqkv's 64 + 2 x 32 and
// wo's 64 per layer, 384 more.
TEST(ModelFamilies, InternLM2ByHand) {
  const std::string base = R"({"model_type":"internlm2","architectures":["InternLM2ForCausalLM"],"hidden_size":64,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":1000,"tie_word_embeddings":false,
      "attn_implementation":"eager","bias":)";
  auto plain = resolve_json(base + "false}");
  EXPECT_EQ(plain.profile.arch, "internlm2");
  EXPECT_DOUBLE_EQ(plain.params().total, 202048);
  EXPECT_DOUBLE_EQ(resolve_json(base + "true}").params().total, 202048 + 384);
}

// StarCoder2 (Transformers' modeling_starcoder2.py): LayerNorm with bias, an ungated GELU MLP c_fc / c_proj, biases
// on every linear layer (use_bias). By hand, hidden 64, 4 heads, 2 KV heads, FFN 256, 2 layers, vocabulary 1000,
// untied: embedding and head 128000; per layer q 4096 + 64, k and v 2 x (2048 + 32), o 4096 + 64, MLP 2 x 64 x 256 +
// 256 + 64, two LayerNorms 2 x 128: 45824, twice 91648; final LayerNorm 128: 219776. Every layer sliding when
// sliding_window is stated.
// Nemotron (NeMo's NemotronConfig; Transformers' modeling_nemotron.py): per layer q 64 x 64, k and v 64 x 32 each (2
// KV heads of 16), o 64 x 64 = 12288; an ungated squared-ReLU MLP 2 x 64 x 256 = 32768; two LayerNorms with bias
// 2 x 128; untied embedding and head 2 x 64000; final LayerNorm 128: 2 x 45312 + 128000 + 128 = 218752.
TEST(ModelFamilies, NemotronByHand) {
  auto m = resolve_json(R"({"model_type":"nemotron","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "intermediate_size":256,"vocab_size":1000,"hidden_act":"relu2","partial_rotary_factor":0.5,"tie_word_embeddings":false})");
  EXPECT_EQ(m.profile.arch, "nemotron");
  EXPECT_DOUBLE_EQ(m.params().total, 218752);
}

TEST(ModelFamilies, StarCoder2ByHand) {
  auto m = resolve_json(R"({"model_type":"starcoder2","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "intermediate_size":256,"vocab_size":1000,"use_bias":true,"sliding_window":16,"hidden_act":"gelu_pytorch_tanh","tie_word_embeddings":false})");
  EXPECT_EQ(m.profile.arch, "starcoder2");
  EXPECT_DOUBLE_EQ(m.params().total, 219776);
  EXPECT_EQ(layer_kinds(m), (std::vector<std::string>{"sliding", "sliding"}));
  // The published configs leave tie_word_embeddings out: Starcoder2Config ties (default True), one 64000 matrix less.
  auto tied = resolve_json(R"({"model_type":"starcoder2","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,
      "intermediate_size":256,"vocab_size":1000,"use_bias":true,"sliding_window":16,"hidden_act":"gelu_pytorch_tanh"})");
  EXPECT_DOUBLE_EQ(tied.params().total, 219776 - 64000);
}

// DeepSeek-V3.2 (deepseek_v32): DeepSeek-V3's layers with DeepSeek Sparse Attention's lightning indexer in every
// layer, the MTP layer included (Transformers' models/deepseek_v32, DeepseekV32Indexer: wq_b from the query latent
// to index_n_heads x index_head_dim, wk from the hidden state to one index_head_dim key, the key's LayerNorm with
// weight and bias, weights_proj to one weight per index head). By hand from the published config (q_lora_rank 1536,
// hidden 7168, 64 index heads of 128): 1536 x 8192 + 7168 x 128 + 2 x 128 + 7168 x 64 = 13959424 per layer, over 61
// layers and the MTP layer, on top of DeepSeek-V3's count, exactly.
TEST(ModelFamilies, DeepSeekV32IsDeepSeekV3PlusOneIndexerPerLayerByHand) {
  auto v32 = bundled("deepseek-v3.2").params();
  auto v3 = bundled("deepseek-v3").params();
  const double per_layer = 1536.0 * 64 * 128 + 7168.0 * 128 + 2.0 * 128 + 7168.0 * 64;
  EXPECT_DOUBLE_EQ(per_layer, 13959424.0);
  EXPECT_DOUBLE_EQ(v32.total - v3.total, 62 * per_layer);
  EXPECT_DOUBLE_EQ(v32.mtp - v3.mtp, per_layer);
  EXPECT_DOUBLE_EQ(v32.active - v3.active, 61 * per_layer);  // every token runs every layer's indexer (MTP not counted, as for V3)
}

TEST(ModelFamilies, SparseAttentionIndexerStatedInFullOrPricedByItsFamily) {
  // Two of the three indexer dimensions: refused, naming the missing one.
  expect_refused(R"({"model_type": "deepseek_v32", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8,
      "num_hidden_layers": 2, "vocab_size": 1000, "q_lora_rank": 256, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
      "qk_nope_head_dim": 64, "v_head_dim": 64, "index_n_heads": 4, "index_head_dim": 64})",
                 {"synthetic.json", "index_topk", "index_n_heads, index_head_dim, index_topk"});
  // An indexer on a family that prices none (DeepSeek-V3's): refused rather than priced as dense attention.
  expect_refused(R"({"model_type": "deepseek_v3", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8,
      "num_hidden_layers": 2, "vocab_size": 1000, "q_lora_rank": 256, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
      "qk_nope_head_dim": 64, "v_head_dim": 64, "index_n_heads": 4, "index_head_dim": 64, "index_topk": 512})",
                 {"synthetic.json", "index_topk", "prices no sparse-attention indexer"});
  // DeepSeek-V3.2's family without the indexer dimensions: refused.
  expect_refused(R"({"model_type": "deepseek_v32", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8,
      "num_hidden_layers": 2, "vocab_size": 1000, "q_lora_rank": 256, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
      "qk_nope_head_dim": 64, "v_head_dim": 64})",
                 {"synthetic.json", "index_topk"});
}

// Nemotron 3 Nano (nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 model card): 31.6 B total parameters, about 3.2 B active
// per token, 3.6 B with the embeddings (half a unit of the last digit: 0.05 B). Its 52 layers each run one block
// (hybrid_override_pattern): 23 Mamba-2, 23 MoE, 6 attention. One Mamba-2 layer by hand from the config (Transformers'
// NemotronH Mamba2 mixer; h 2688, 64 heads of 64, 8 groups of state 128, kernel 4): in_proj 2688 x (2 x 4096 + 2 x 8 x 128
// + 64), the convolution's weights and bias over 4096 + 2048 channels (x 5), dt_bias, A_log and D (3 x 64), the gated
// norm (4096), out_proj 4096 x 2688 and the layer's norm (2688): 38744896.
TEST(PublishedParams, Nemotron3Nano_31_6B_total_3_2B_active) {
  auto m = bundled("nemotron-3-nano-30b-a3b");
  auto p = m.params();
  near_published(p.total, 31.6, 0.1, "total");
  near_published(p.active_no_embedding, 3.2, 0.1, "active");
  near_published(p.active, 3.6, 0.1, "active with the embeddings");
  auto kinds = layer_kinds(m);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "mamba"), 23);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "moe"), 23);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "attention"), 6);
  EXPECT_EQ(kinds.front(), "mamba");
  EXPECT_EQ(kinds[5], "attention");
  for (const auto& k : m.kinds) {
    if (k.kind.name != "mamba") continue;
    EXPECT_DOUBLE_EQ(k.attention_params + k.ffn_params + k.norm_params + k.expert_params,
                     2688.0 * (2 * 4096 + 2 * 8 * 128 + 64) + 5.0 * (4096 + 2 * 8 * 128) + 3 * 64 + 4096 + 4096.0 * 2688 + 2688);
    EXPECT_DOUBLE_EQ(k.ffn_params + k.expert_params, 0.0);  // a Mamba-2 layer runs no FFN
  }
}

TEST(ModelFamilies, HybridPatternAndMambaDimensionsRefusedByKey) {
  const std::string head = R"({"model_type": "nemotron_h", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
      "vocab_size": 1000, "intermediate_size": 512, "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16, "conv_kernel": 4, )";
  // A fine config resolves: M, *, - layers.
  EXPECT_EQ(layer_kinds(resolve_json(head + R"("n_groups": 2, "num_hidden_layers": 3, "hybrid_override_pattern": "M*-"})")),
            (std::vector<std::string>{"mamba", "attention", "mlp"}));
  expect_refused(head + R"("n_groups": 2, "num_hidden_layers": 4, "hybrid_override_pattern": "M*-"})",
                 {"synthetic.json", "hybrid_override_pattern", "3 layers"});
  expect_refused(head + R"("n_groups": 2, "num_hidden_layers": 3, "hybrid_override_pattern": "M*X"})", {"synthetic.json", "hybrid_override_pattern", "'X'"});
  expect_refused(head + R"("num_hidden_layers": 3, "hybrid_override_pattern": "M*-"})", {"synthetic.json", "mamba_num_heads", "n_groups"});
  expect_refused(head + R"("n_groups": 2, "num_hidden_layers": 3, "hybrid_override_pattern": "M*-", "mamba_proj_bias": true})",
                 {"synthetic.json", "mamba_proj_bias"});
  // Nemotron 3 Super's LatentMoE: refused by key (null: none).
  expect_refused(head + R"("n_groups": 2, "num_hidden_layers": 3, "hybrid_override_pattern": "M*-", "moe_latent_size": 1024})",
                 {"synthetic.json", "moe_latent_size", "LatentMoE"});
  EXPECT_EQ(layer_kinds(resolve_json(head + R"("n_groups": 2, "num_hidden_layers": 1, "hybrid_override_pattern": "M", "moe_latent_size": null})")).size(), 1u);
  // MoE layers (E) without experts: refused by the family's check.
  expect_refused(head + R"("n_groups": 2, "num_hidden_layers": 2, "hybrid_override_pattern": "ME"})", {"synthetic.json"});
}

// GLM-5 (glm_moe_dsa), the GLM-5 technical report's architecture table: 744 B total parameters; Hugging Face counts
// GLM-5.1, the same architecture with its MTP layer, at 754 B (half a unit of the last digit each). Priced with
// DeepSeek-V3.2's layers (MLA with a DSA indexer in every layer); GLM-5.2's indexers shared across layers are refused.
TEST(PublishedParams, Glm5_744B_total_754B_with_MTP) {
  auto p = bundled("glm-5").params();
  near_published(p.total - p.mtp, 744, 1, "main model");
  near_published(p.total, 754, 1, "with the MTP layer");
  const std::string shared = R"({"model_type": "glm_moe_dsa", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 8,
      "num_hidden_layers": 2, "vocab_size": 1000, "q_lora_rank": 256, "kv_lora_rank": 128, "qk_rope_head_dim": 32,
      "qk_nope_head_dim": 64, "v_head_dim": 64, "index_n_heads": 4, "index_head_dim": 64, "index_topk": 512, )";
  expect_refused(shared + R"("index_topk_freq": 4})", {"synthetic.json", "index_topk_freq"});
  expect_refused(shared + R"("indexer_types": ["full", "shared"]})", {"synthetic.json", "indexer_types"});
  EXPECT_EQ(layer_kinds(resolve_json(shared + R"("indexer_types": ["full", "full"]})")).size(), 2u);
}
