#include "model/model_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"

namespace sapp::model {

using nlohmann::json;

bool ModelSpec::routes_layer(Count i) const {
  if (!is_moe() || i < first_k_dense.value_or(0)) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end()) return false;
  return (i + 1) % moe_layer_step.value_or(1) == 0;
}

Count ModelSpec::shared_expert_width() const {
  if (shared_expert_intermediate_size) return *shared_expert_intermediate_size;
  if (num_shared_experts.value_or(0) > 0) return *num_shared_experts * routed_expert_width();
  return 0;
}

double ModelSpec::kv_exchange_width(bool repeated_to_query_heads) const {
  if (is_mla()) return static_cast<double>(num_heads) * static_cast<double>(*qk_nope_head_dim + *qk_rope_head_dim + *v_head_dim);
  return 2.0 * static_cast<double>((repeated_to_query_heads ? num_heads : kv_heads()) * effective_head_dim());
}

double ModelSpec::attention_value_width() const { return static_cast<double>(is_mla() ? *v_head_dim : effective_head_dim()); }

namespace {

// The Mamba-2 scan's block length where the config states no chunk_size: Transformers' NemotronHConfig and
// Megatron-Core's MambaMixer (megatron/core/ssm/mamba_mixer.py) default to 128.
constexpr Count kMamba2ChunkTokens = 128;

struct Source {
  const json& node;
  const std::string& file;
  std::string prefix;

  [[nodiscard]] std::string path(const std::string& key) const { return prefix.empty() ? key : prefix + "." + key; }

  // First stated (non-null) alias wins; returns the key it was found under.
  [[nodiscard]] const json* first(std::initializer_list<const char*> keys, std::string& found) const {
    for (const char* key : keys) {
      if (node.contains(key) && !node.at(key).is_null()) {
        found = key;
        return &node.at(key);
      }
    }
    return nullptr;
  }

  // A count in its plausible range (core/units.hpp); whole numbers only, so the conversion is exact.
  std::optional<Count> count(std::initializer_list<const char*> keys, const units::Quantity& q) const {
    std::string key;
    const json* v = first(keys, key);
    if (v == nullptr) return std::nullopt;
    if (v->is_boolean() || !v->is_number()) fail(at(file, path(key)), "expected a whole number, got {}", v->dump());
    double d = units::check(v->get<double>(), q, at(file, path(key)), v->is_number_integer() ? v->dump() : "");
    if (v->is_number_integer()) return v->get<Count>();
    return static_cast<Count>(d);
  }

  // A group of dimensions a config states all or none of (one mixer's or indexer's sizes): their counts in key order
  // when all are stated, nothing when none is; an error at the first missing key, naming the group's keys, otherwise.
  struct Dimension {
    const char* key;
    const units::Quantity& quantity;
  };
  std::optional<std::vector<Count>> all_or_none(const char* what, std::initializer_list<Dimension> dims) const {
    std::vector<Count> values;
    const char* missing = nullptr;
    std::string keys;
    for (const Dimension& d : dims) {
      keys += (keys.empty() ? "" : ", ") + std::string(d.key);
      if (auto v = count({d.key}, d.quantity))
        values.push_back(*v);
      else if (missing == nullptr)
        missing = d.key;
    }
    if (values.empty()) return std::nullopt;
    if (missing != nullptr) fail(at(file, path(missing)), "{} states {} of its {} dimensions; state all of {}", what, values.size(), dims.size(), keys);
    return values;
  }

  Count required(std::initializer_list<const char*> keys, const units::Quantity& q) const {
    auto v = count(keys, q);
    if (!v) {
      std::string names;
      for (const char* k : keys) names += (names.empty() ? "" : " or ") + std::string(k);
      fail(at(file, path(*keys.begin())), "is required and was not supplied (looked for {})", names);
    }
    return *v;
  }

  std::optional<bool> flag(std::initializer_list<const char*> keys) const {
    std::string key;
    const json* v = first(keys, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) fail(at(file, path(key)), "expected true or false, got {}", v->dump());
    return v->get<bool>();
  }

  std::optional<double> real(std::initializer_list<const char*> keys, const units::Quantity& q) const {
    std::string key;
    const json* v = first(keys, key);
    if (v == nullptr) return std::nullopt;
    if (v->is_boolean() || !v->is_number()) fail(at(file, path(key)), "expected a number, got {}", v->dump());
    return units::check(v->get<double>(), q, at(file, path(key)));
  }

  std::optional<std::string> text(std::initializer_list<const char*> keys) const {
    std::string key;
    const json* v = first(keys, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(at(file, path(key)), "expected a string, got {}", v->dump());
    return v->get<std::string>();
  }
};

// Gemma 3's SigLIP tower (transformers SiglipVisionModel as Gemma3ForConditionalGeneration builds it): patches of
// image_size / patch_size squared per image through a pre-norm ViT (LayerNorms, biased attention and GELU MLP:
// the vision profile's `plain` kind), learned positions, a post LayerNorm; the projector average-pools each image
// to mm_tokens_per_image and maps it with RMSNorm + one linear (Gemma3MultiModalProjector).
VisionSpec read_siglip(const Source& src, const std::string& file, Count llm_hidden) {
  VisionSpec v;
  v.hidden_size = src.required({"hidden_size"}, units::kHiddenSize);
  v.num_layers = src.required({"num_hidden_layers"}, units::kLayers);
  v.num_heads = src.required({"num_attention_heads"}, units::kHeads);
  v.intermediate_size = src.required({"intermediate_size"}, units::kFfnWidth);
  v.patch_size = src.count({"patch_size"}, units::kKernel).value_or(16);  // SiglipVisionConfig's defaults
  Count image = src.count({"image_size"}, units::kImageSize).value_or(224);
  v.in_channels = src.count({"num_channels"}, units::kChannels).value_or(3);
  if (image % v.patch_size != 0) fail(at(file, "vision_config.image_size"), "{} is not a multiple of patch_size {}", image, v.patch_size);
  if (src.flag({"vision_use_head"}).value_or(false)) {
    fail(at(file, "vision_config.vision_use_head"), "true (SigLIP's attention-pooling head) is not priced; Gemma 3 runs the tower without it");
  }
  v.temporal_patch_size = 1;
  v.spatial_merge_size = 1;
  v.gated_mlp = false;
  v.out_hidden_size = llm_hidden;
  v.projector = VisionProjector::GemmaPooled;
  v.image_tokens = (image / v.patch_size) * (image / v.patch_size);
  v.position_embeddings = v.image_tokens;
  v.patch_bias = true;
  v.post_norm = true;
  auto tokens = src.count({"visual_tokens"}, units::kVisualTokens);
  v.tokens = tokens.value_or(v.image_tokens);  // one image per sample unless stated
  v.tokens_stated = tokens.has_value();
  if (v.tokens % v.image_tokens != 0) {
    fail(at(file, "vision_config.visual_tokens"), "{} is not a whole number of images: the tower sees {} patches per {}-pixel image (before pooling)", v.tokens,
         v.image_tokens, image);
  }
  if (v.hidden_size % v.num_heads != 0) {
    fail(at(file, "vision_config.num_attention_heads"), "{} does not divide the tower width {}", v.num_heads, v.hidden_size);
  }
  return v;
}

VisionSpec read_vision(const json& node, const std::string& file, Count llm_hidden) {
  Source src{node, file, "vision_config"};
  auto type = src.text({"model_type"});
  if (type == "siglip_vision_model") return read_siglip(src, file, llm_hidden);
  // Llama 4's tower (a ViT over 336-pixel tiles, pixel-shuffled to a quarter of the tokens and adapted by an MLP)
  // is not modelled: refused rather than priced as a Qwen-VL tower.
  if (type == "llama4_vision_model") {
    fail(at(file, "vision_config.model_type"), "{} is a vision tower sapp does not price; estimate the language model from its text_config alone", *type);
  }
  VisionSpec v;
  // Qwen2-VL states the tower width as embed_dim and the LLM width as hidden_size (reference defect: it read
  // hidden_size as the tower width); Qwen2.5-VL states hidden_size = tower width and out_hidden_size.
  bool qwen2_vl_layout = node.contains("embed_dim");
  v.hidden_size = qwen2_vl_layout ? src.required({"embed_dim"}, units::kHiddenSize) : src.required({"hidden_size"}, units::kHiddenSize);
  v.num_layers = src.required({"depth", "num_hidden_layers"}, units::kLayers);
  v.num_heads = src.required({"num_heads", "num_attention_heads"}, units::kHeads);
  if (qwen2_vl_layout) {
    // Qwen2-VL: a plain GELU MLP of width embed_dim * mlp_ratio; merger projects to the LLM's hidden_size.
    double ratio = src.real({"mlp_ratio"}, units::kMlpRatio).value_or(4.0);
    v.intermediate_size = static_cast<Count>(std::llround(static_cast<double>(v.hidden_size) * ratio));
    v.out_hidden_size = src.count({"hidden_size"}, units::kHiddenSize).value_or(llm_hidden);
    v.gated_mlp = false;
  } else {
    v.intermediate_size = src.count({"intermediate_size"}, units::kFfnWidth);
    v.out_hidden_size = src.count({"out_hidden_size"}, units::kHiddenSize).value_or(llm_hidden);
    // Qwen2.5-VL's tower runs SwiGLU (hidden_act silu); Qwen3-VL's a plain GELU MLP (gelu_pytorch_tanh).
    std::string act = src.text({"hidden_act"}).value_or("silu");
    v.gated_mlp = act == "silu" || act == "swiglu";
  }
  if (!v.intermediate_size) fail(at(file, "vision_config.intermediate_size"), "is required for the tower's MLP and was not supplied");
  v.patch_size = src.count({"patch_size", "spatial_patch_size"}, units::kKernel).value_or(14);
  v.temporal_patch_size = src.count({"temporal_patch_size"}, units::kKernel).value_or(2);
  v.in_channels = src.count({"in_channels", "in_chans"}, units::kChannels).value_or(3);
  v.spatial_merge_size = src.count({"spatial_merge_size"}, units::kKernel).value_or(2);
  auto tokens = src.count({"visual_tokens"}, units::kVisualTokens);
  v.tokens = tokens.value_or(v.tokens);
  v.tokens_stated = tokens.has_value();
  if (v.num_heads > 0 && v.hidden_size % v.num_heads != 0) {
    fail(at(file, "vision_config.num_heads"), "{} does not divide the tower width {}", v.num_heads, v.hidden_size);
  }
  return v;
}

}  // namespace

std::vector<std::string> architectures_of(const json& config) {
  std::vector<std::string> out;
  if (config.contains("architectures") && config.at("architectures").is_array()) {
    for (const auto& a : config.at("architectures"))
      if (a.is_string()) out.push_back(a.get<std::string>());
  }
  return out;
}

ModelSpec model_from_json(const json& config, const std::string& file) {
  if (!config.is_object()) fail(file, "a model config must be a JSON/YAML mapping, got {}", config.type_name());
  ModelSpec m;
  m.source = file;
  Source top{config, file, ""};
  m.model_type = top.text({"model_type"}).value_or("");
  m.arch = top.text({"arch", "sapp_arch"}).value_or("");
  m.architectures = architectures_of(config);
  m.name = top.text({"name", "_name_or_path"}).value_or(io::stem(file));

  // Composite configs (VL models) keep the language model under text_config in newer Transformers.
  const json* text_node = &config;
  std::string text_prefix;
  if (config.contains("text_config") && config.at("text_config").is_object()) {
    text_node = &config.at("text_config");
    text_prefix = "text_config";
  }
  Source src{*text_node, file, text_prefix};
  // Keys may sit on the composite or on text_config (Qwen2.5-VL states both); the text tower wins.
  auto pick_count = [&](std::initializer_list<const char*> keys, const units::Quantity& q) {
    auto v = src.count(keys, q);
    return v ? v : top.count(keys, q);
  };

  m.hidden_size = src.count({"hidden_size", "n_embd", "d_model"}, units::kHiddenSize).value_or(0);
  if (m.hidden_size == 0) m.hidden_size = top.required({"hidden_size", "n_embd", "d_model"}, units::kHiddenSize);
  m.num_layers = pick_count({"num_hidden_layers", "n_layer", "num_layers"}, units::kLayers).value_or(0);
  if (m.num_layers == 0) top.required({"num_hidden_layers", "n_layer", "num_layers"}, units::kLayers);
  m.num_heads = pick_count({"num_attention_heads", "n_head", "num_heads"}, units::kHeads).value_or(0);
  if (m.num_heads == 0) top.required({"num_attention_heads", "n_head", "num_heads"}, units::kHeads);
  // ChatGLM states the embedding's rows as padded_vocab_size (newer copies of its config also say vocab_size).
  m.vocab_size = pick_count({"padded_vocab_size", "vocab_size"}, units::kVocab).value_or(0);
  // Gemma 3's published multimodal configs leave vocab_size out of text_config: Transformers' Gemma3TextConfig
  // defaults it to 262208 (configuration_gemma3.py).
  if (m.vocab_size == 0 && text_node != &config && text_node->value("model_type", "") == "gemma3_text") m.vocab_size = 262208;
  if (m.vocab_size == 0) top.required({"vocab_size", "padded_vocab_size"}, units::kVocab);
  m.num_kv_heads = pick_count({"num_key_value_heads", "num_kv_heads", "n_kv_heads"}, units::kHeads);
  // ChatGLM: multi_query_attention with multi_query_group_num KV groups (without it every head has its own K and V).
  if (!m.num_kv_heads && src.flag({"multi_query_attention"}).value_or(false)) m.num_kv_heads = src.count({"multi_query_group_num"}, units::kHeads);
  m.head_dim = pick_count({"head_dim", "kv_channels"}, units::kHeadDim);
  m.intermediate_size = pick_count({"intermediate_size", "ffn_hidden_size", "n_inner"}, units::kFfnWidth);
  m.max_position_embeddings = pick_count({"max_position_embeddings", "n_positions", "seq_length"}, units::kPositions);

  m.num_experts = pick_count({"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"}, units::kExperts);
  m.experts_per_token = pick_count({"num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_topk", "moe_k"}, units::kExperts);
  m.num_shared_experts = src.count({"n_shared_experts", "num_shared_experts", "moe_num_shared_experts"}, units::kSharedExperts);
  m.moe_intermediate_size = pick_count({"moe_intermediate_size"}, units::kFfnWidth);
  // 0 states no shared expert (Qwen3-Coder-480B-A35B's published config).
  if (const json* shared = text_node->contains("shared_expert_intermediate_size") ? &text_node->at("shared_expert_intermediate_size") : nullptr;
      !(shared && shared->is_number_integer() && shared->get<Count>() == 0))
    m.shared_expert_intermediate_size = pick_count({"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"}, units::kFfnWidth);
  // ERNIE 4.5 (Transformers' configuration_ernie4_5_moe.py) states its experts under its own keys: moe_num_experts,
  // moe_k, moe_num_shared_experts (of the routed width), and the MoE layers as moe_layer_start_index <= i <=
  // moe_layer_end_index with (i + 1) % moe_layer_interval == 0.
  m.first_k_dense = src.count({"first_k_dense_replace", "moe_layer_start_index"}, units::kLayerIndex);
  // A count whose 0 means "none" (MindFormers' and torchtitan's DeepSeek configs state 0 for no group-limited routing
  // and no query compression): unset, not refused as a zero count.
  auto count_or_none = [&](std::initializer_list<const char*> keys, const units::Quantity& q) -> std::optional<Count> {
    std::string key;
    if (const json* v = src.first(keys, key); v && v->is_number_integer() && v->get<Count>() == 0) return std::nullopt;
    return src.count(keys, q);
  };
  m.routing_groups = count_or_none({"n_group", "moe_router_num_groups"}, units::kExperts);
  m.routing_group_limit = count_or_none({"topk_group", "moe_router_group_topk"}, units::kExperts);
  if (text_node->contains("mlp_only_layers")) {
    const json& list = text_node->at("mlp_only_layers");
    if (!list.is_array()) fail(at(file, src.path("mlp_only_layers")), "expected a list of layer indices, got {}", list.dump());
    for (const auto& item : list) {
      if (!item.is_number_integer() || item.get<Count>() < 0) fail(at(file, src.path("mlp_only_layers")), "expected layer indices, got {}", item.dump());
      m.mlp_only_layers.push_back(item.get<Count>());
    }
  }
  m.moe_layer_step = src.count({"interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_interval"}, units::kSparseStep);
  if (auto last_moe = src.count({"moe_layer_end_index"}, units::kLayerIndex)) {
    for (Count i = *last_moe + 1; i < m.num_layers; ++i) m.mlp_only_layers.push_back(i);
  }
  // Llama 4 states the routed experts' width as intermediate_size and the dense layers' as intermediate_size_mlp.
  if (auto dense_width = src.count({"intermediate_size_mlp"}, units::kFfnWidth)) {
    if (!m.moe_intermediate_size) m.moe_intermediate_size = m.intermediate_size;
    m.intermediate_size = dense_width;
  }
  if (text_node->contains("moe_layers") && m.is_moe()) {
    // The MoE layers by index (Llama 4): every other layer is dense.
    const json& list = text_node->at("moe_layers");
    if (!list.is_array()) fail(at(file, src.path("moe_layers")), "expected a list of layer indices, got {}", list.dump());
    std::vector<bool> moe(static_cast<std::size_t>(m.num_layers), false);
    for (const auto& item : list) {
      if (!item.is_number_integer() || item.get<Count>() < 0 || item.get<Count>() >= m.num_layers) {
        fail(at(file, src.path("moe_layers")), "expected layer indices below {}, got {}", m.num_layers, item.dump());
      }
      moe[static_cast<std::size_t>(item.get<Count>())] = true;
    }
    m.mlp_only_layers.clear();
    for (Count i = 0; i < m.num_layers; ++i) {
      if (!moe[static_cast<std::size_t>(i)]) m.mlp_only_layers.push_back(i);
    }
    m.moe_layer_step.reset();
  }

  m.q_lora_rank = count_or_none({"q_lora_rank"}, units::kRank);  // null or 0: queries projected directly (DeepSeek-V2-Lite)
  m.kv_lora_rank = src.count({"kv_lora_rank"}, units::kRank);
  m.qk_rope_head_dim = src.count({"qk_rope_head_dim"}, units::kHeadDim);
  m.qk_nope_head_dim = src.count({"qk_nope_head_dim"}, units::kHeadDim);
  m.v_head_dim = src.count({"v_head_dim"}, units::kHeadDim);

  if (auto d = src.all_or_none("linear attention", {{"linear_num_key_heads", units::kHeads},
                                                    {"linear_key_head_dim", units::kHeadDim},
                                                    {"linear_num_value_heads", units::kHeads},
                                                    {"linear_value_head_dim", units::kHeadDim},
                                                    {"linear_conv_kernel_dim", units::kKernel}}))
    m.linear = LinearAttentionDims{(*d)[0], (*d)[1], (*d)[2], (*d)[3], (*d)[4]};

  // Nemotron-H and Nemotron 3 (Transformers' NemotronHConfig): hybrid_override_pattern gives each layer one block,
  // Mamba-2 (M), attention (*), MLP (-) or MoE (E), read as layer types. The Mamba-2 mixer is priced as linear
  // attention: n_groups key heads of ssm_state_size (its B and C), mamba_num_heads value heads of mamba_head_dim (its
  // x), conv_kernel (d_inner = mamba_num_heads x mamba_head_dim; `expand` is not read, as NemotronH does not).
  auto mamba_chunk = src.count({"chunk_size"}, units::kPositions);
  if (auto d = src.all_or_none("the Mamba-2 mixer", {{"mamba_num_heads", units::kHeads},
                                                     {"mamba_head_dim", units::kHeadDim},
                                                     {"ssm_state_size", units::kHeadDim},
                                                     {"n_groups", units::kHeads},
                                                     {"conv_kernel", units::kKernel}})) {
    if (m.linear) fail(at(file, src.path("mamba_num_heads")), "states both Mamba-2 and linear-attention (linear_*) dimensions; sapp prices one mixer");
    if (src.flag({"mamba_proj_bias"}).value_or(false))
      fail(at(file, src.path("mamba_proj_bias")), "true is not priced (the Mamba-2 projections without biases)");
    if (!src.flag({"use_conv_bias"}).value_or(true)) fail(at(file, src.path("use_conv_bias")), "false is not priced (the Mamba-2 convolution with its bias)");
    const auto [heads, head_dim, state, groups, conv] = std::array{(*d)[0], (*d)[1], (*d)[2], (*d)[3], (*d)[4]};
    m.linear = LinearAttentionDims{groups, state, heads, head_dim, conv, mamba_chunk.value_or(kMamba2ChunkTokens)};
  }
  // Nemotron 3 Super's LatentMoE: the routed experts run in a projected latent width, which sapp does not price.
  if (text_node->contains("moe_latent_size") && !text_node->at("moe_latent_size").is_null())
    fail(at(file, src.path("moe_latent_size")), "{} is not priced: LatentMoE (experts in a projected latent space) is not modelled",
         text_node->at("moe_latent_size").dump());
  if (text_node->contains("hybrid_override_pattern")) {
    const json& pattern = text_node->at("hybrid_override_pattern");
    const std::string where = at(file, src.path("hybrid_override_pattern"));
    if (!pattern.is_string()) fail(where, "expected a string of M, *, - and E (one per layer), got {}", pattern.dump());
    const std::string text = pattern.get<std::string>();
    if (static_cast<Count>(text.size()) != m.num_layers) fail(where, "'{}' has {} layers, but num_hidden_layers is {}", text, text.size(), m.num_layers);
    if (text_node->contains("layer_types")) fail(where, "is stated beside layer_types; state one");
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (c != 'M' && c != '*' && c != '-' && c != 'E')
        fail(where, "'{}' at layer {} is none of M (Mamba-2), * (attention), - (MLP), E (MoE)", std::string(1, c), i);
      m.layer_types.emplace_back(c == 'M' ? "mamba" : c == '*' ? "attention" : c == '-' ? "mlp" : "moe");
    }
    m.hybrid_pattern = text;
  }

  if (auto d = src.all_or_none("the sparse-attention indexer",
                               {{"index_n_heads", units::kHeads}, {"index_head_dim", units::kHeadDim}, {"index_topk", units::kPositions}}))
    m.indexer = IndexerDims{(*d)[0], (*d)[1], (*d)[2]};
  // GLM-5.2's indexers shared across layers (a layer reusing an earlier one's top-k): not priced, refused by key.
  if (auto freq = src.count({"index_topk_freq"}, units::kSparseStep); freq && *freq > 1)
    fail(at(file, src.path("index_topk_freq")), "{} is not priced: sapp prices every sparse-attention layer with its own indexer", *freq);
  if (text_node->contains("indexer_types")) {
    const json& types = text_node->at("indexer_types");
    if (!types.is_array() || std::any_of(types.begin(), types.end(), [](const json& t) { return !t.is_string() || t.get<std::string>() != "full"; }))
      fail(at(file, src.path("indexer_types")), "{} is not priced: sapp prices every sparse-attention layer with its own indexer (all \"full\")",
           types.dump().substr(0, 80));
  }

  if (text_node->contains("layer_types")) {
    const json& list = text_node->at("layer_types");
    if (!list.is_array() || list.empty()) fail(at(file, src.path("layer_types")), "expected a non-empty list of layer type names, got {}", list.dump());
    for (const auto& item : list) {
      if (!item.is_string()) fail(at(file, src.path("layer_types")), "expected layer type names, got {}", item.dump());
      m.layer_types.push_back(item.get<std::string>());
    }
  }
  m.sliding_window = src.count({"sliding_window", "sliding_window_size"}, units::kPositions);
  m.attention_chunk = src.count({"attention_chunk_size"}, units::kPositions);
  // Llama 4's no_rope_layers: 1 for a RoPE layer, which attends within its chunk, 0 for a global NoPE layer
  // (Transformers' Llama4TextConfig); read as layer types when the config states none.
  if (m.layer_types.empty() && text_node->contains("no_rope_layers") && text_node->at("no_rope_layers").is_array() &&
      !text_node->at("no_rope_layers").empty()) {
    for (const auto& item : text_node->at("no_rope_layers")) {
      if (!item.is_number_integer()) fail(at(file, src.path("no_rope_layers")), "expected 0 or 1 per layer, got {}", item.dump());
      m.layer_types.push_back(item.get<Count>() != 0 ? "chunked_attention" : "full_attention");
    }
  }
  // Qwen2/Qwen3 state a window but switch it off with use_sliding_window: false (the attention is then full).
  if (src.flag({"use_sliding_window"}) == false) m.sliding_window.reset();
  m.attention_period = src.count({"full_attention_interval", "sliding_window_pattern", "no_rope_layer_interval"}, units::kSparseStep);
  m.mtp_depth = src.count({"num_nextn_predict_layers", "mtp_depth", "mtp_num_hidden_layers"}, units::kLayerIndex);

  std::optional<bool> tied = top.flag({"tie_word_embeddings"});
  if (!tied) tied = src.flag({"tie_word_embeddings"});
  m.tie_word_embeddings = tied.value_or(false);
  m.tie_word_embeddings_stated = tied.has_value();
  // InternLM2 / InternLM3 (their remote modeling_internlm2.py / modeling_internlm3.py) state one `bias` for the
  // attention projections (InternLM3: the output projection's, its q, k, v taking qkv_bias).
  m.attention_bias = src.flag({"attention_bias", "qkv_bias", "use_bias", "bias"});
  // Seed-OSS states the output projection's bias apart (Transformers' configuration_seed_oss.py).
  m.attention_out_bias = src.flag({"attention_out_bias", "bias"});
  m.mlp_bias = src.flag({"mlp_bias", "use_bias"});
  // ChatGLM (modeling_chatglm.py): query_key_value has a bias when add_qkv_bias or add_bias_linear is set; the dense
  // (o) and FFN projections when add_bias_linear is; rmsnorm: false means LayerNorm with biases.
  auto add_qkv = src.flag({"add_qkv_bias"});
  auto add_linear = src.flag({"add_bias_linear"});
  if (!m.attention_bias && (add_qkv || add_linear)) m.attention_bias = add_qkv.value_or(false) || add_linear.value_or(false);
  if (!m.attention_out_bias && add_linear) m.attention_out_bias = *add_linear;
  if (!m.mlp_bias && add_linear) m.mlp_bias = *add_linear;
  if (auto rms = src.flag({"rmsnorm"})) m.norm_bias = !*rms;
  m.qk_norm = src.flag({"qk_norm", "use_qk_norm", "qk_layernorm"});
  // MiniMax-M2 (Transformers' modeling_minimax_m2.py): qk_norm_type per_layer normalises the whole q and k
  // projections (a*dh and kv*dh weights), per_head one head's width (dh weights each, as Qwen3's).
  if (auto type = src.text({"qk_norm_type"})) {
    if (*type == "per_layer")
      m.qk_norm_whole = true;
    else if (*type == "per_head")
      m.qk_norm_whole = false;
    else
      fail(at(file, src.path("qk_norm_type")), "expected per_layer or per_head, got {}", *type);
  }
  m.attn_output_gate = src.flag({"attn_output_gate"});
  // MiniMax-M2 (Transformers' configuration_minimax_m2.py): expert biases on the router, and a per-layer attention
  // type where 1 is softmax attention; 0 (MiniMax-01's lightning attention) is not priced.
  m.router_bias = src.flag({"use_routing_bias"});
  if (text_node->contains("attn_type_list")) {
    const json& list = text_node->at("attn_type_list");
    if (!list.is_array()) fail(at(file, src.path("attn_type_list")), "expected a list of attention types (1: softmax attention), got {}", list.dump());
    for (const auto& item : list) {
      if (!item.is_number_integer() || item.get<long long>() != 1)
        fail(at(file, src.path("attn_type_list")), "{} is not priced: only softmax attention layers (1) are; MiniMax-01's lightning attention (0) is not",
             item.dump());
    }
  }
  m.hidden_act = src.text({"hidden_act", "hidden_activation", "activation_function", "mlp_hidden_act"});
  auto drop = src.real({"hidden_dropout", "resid_pdrop", "residual_dropout", "attention_dropout", "attn_pdrop"}, units::kProbability);
  m.dropout = drop;
  m.learned_position_embeddings = src.count({"learned_position_embeddings"}, units::kPositions);
  // GPT-2 learns a position table of n_positions rows (Transformers' modeling_gpt2.py: wpe).
  if (!m.learned_position_embeddings && m.model_type == "gpt2") m.learned_position_embeddings = m.max_position_embeddings;

  if (config.contains("vision_config") && config.at("vision_config").is_object()) {
    m.vision = read_vision(config.at("vision_config"), file, m.hidden_size);
  }

  // Contradictions are refused here, by name.
  if (m.num_kv_heads && m.num_heads % *m.num_kv_heads != 0) {
    fail(at(file, src.path("num_key_value_heads")), "{} does not divide num_attention_heads {}", *m.num_kv_heads, m.num_heads);
  }
  if (!m.head_dim && m.hidden_size % m.num_heads != 0 && !m.is_mla()) {
    fail(at(file, src.path("num_attention_heads")), "{} does not divide hidden_size {} and no head_dim is stated", m.num_heads, m.hidden_size);
  }
  if (m.is_moe()) {
    if (m.routed_expert_width() <= 0)
      fail(at(file, src.path("moe_intermediate_size")),
           "no width resolves for {} routed experts; state moe_intermediate_size, or intermediate_size if the experts run at the dense width", *m.num_experts);
    if (!m.experts_per_token)
      fail(at(file, src.path("num_experts_per_tok")), "an MoE model with {} experts must state how many each token uses", *m.num_experts);
    if (*m.experts_per_token > *m.num_experts)
      fail(at(file, src.path("num_experts_per_tok")), "{} is more than the {} experts", *m.experts_per_token, *m.num_experts);
  } else if (!m.intermediate_size && m.model_type == "gpt2") {
    m.intermediate_size = 4 * m.hidden_size;  // GPT2Config's n_inner None: 4 x n_embd (Transformers' modeling_gpt2.py, GPT2Block)
  } else if (!m.intermediate_size) {
    fail(at(file, src.path("intermediate_size")), "is required for a dense model and was not supplied");
  }
  if (m.routing_groups && m.is_moe() && *m.num_experts % *m.routing_groups != 0) {
    fail(at(file, src.path("n_group")), "{} groups do not divide the {} experts", *m.routing_groups, *m.num_experts);
  }
  if (m.routing_group_limit && m.routing_groups && *m.routing_group_limit > *m.routing_groups) {
    fail(at(file, src.path("topk_group")), "{} is more than the {} groups (n_group)", *m.routing_group_limit, *m.routing_groups);
  }
  if (m.is_mla()) {
    if (!m.qk_rope_head_dim) fail(at(file, src.path("qk_rope_head_dim")), "an MLA model (kv_lora_rank {}) must state it", *m.kv_lora_rank);
    if (!m.qk_nope_head_dim) fail(at(file, src.path("qk_nope_head_dim")), "an MLA model (kv_lora_rank {}) must state it", *m.kv_lora_rank);
    if (!m.v_head_dim) fail(at(file, src.path("v_head_dim")), "an MLA model (kv_lora_rank {}) must state it", *m.kv_lora_rank);
  }
  if (!m.layer_types.empty() && static_cast<Count>(m.layer_types.size()) < m.num_layers) {
    fail(at(file, src.path("layer_types")), "lists {} layers, but num_hidden_layers is {}", m.layer_types.size(), m.num_layers);
  }
  for (Count layer : m.mlp_only_layers) {
    if (layer >= m.num_layers) fail(at(file, src.path("mlp_only_layers")), "names layer {}, but the model has {}", layer, m.num_layers);
  }
  if (m.first_k_dense && *m.first_k_dense > m.num_layers) {
    fail(at(file, src.path("first_k_dense_replace")), "{} is more than the {} layers", *m.first_k_dense, m.num_layers);
  }
  return m;
}

namespace {

// Keys model_from_json reads (any alias).
const std::set<std::string>& read_keys() {
  static const std::set<std::string> k = {"model_type",
                                          "arch",
                                          "sapp_arch",
                                          "name",
                                          "_name_or_path",
                                          "hidden_size",
                                          "n_embd",
                                          "d_model",
                                          "num_hidden_layers",
                                          "n_layer",
                                          "num_layers",
                                          "num_attention_heads",
                                          "n_head",
                                          "num_heads",
                                          "vocab_size",
                                          "padded_vocab_size",
                                          "multi_query_attention",
                                          "multi_query_group_num",
                                          "add_qkv_bias",
                                          "add_bias_linear",
                                          "rmsnorm",
                                          "num_key_value_heads",
                                          "num_kv_heads",
                                          "n_kv_heads",
                                          "head_dim",
                                          "kv_channels",
                                          "intermediate_size",
                                          "ffn_hidden_size",
                                          "n_inner",
                                          "max_position_embeddings",
                                          "n_positions",
                                          "seq_length",
                                          "num_experts",
                                          "num_local_experts",
                                          "n_routed_experts",
                                          "moe_num_experts",
                                          "moe_k",
                                          "moe_num_shared_experts",
                                          "moe_layer_start_index",
                                          "moe_layer_end_index",
                                          "moe_layer_interval",
                                          "use_bias",
                                          "bias",
                                          "num_experts_per_tok",
                                          "experts_per_token",
                                          "num_experts_per_token",
                                          "moe_topk",
                                          "n_shared_experts",
                                          "num_shared_experts",
                                          "moe_intermediate_size",
                                          "shared_expert_intermediate_size",
                                          "first_k_dense_replace",
                                          "n_group",
                                          "topk_group",
                                          "moe_router_num_groups",
                                          "moe_router_group_topk",
                                          "mlp_only_layers",
                                          "decoder_sparse_step",
                                          "interleave_moe_layer_step",
                                          "intermediate_size_mlp",
                                          "moe_layers",
                                          "attention_chunk_size",
                                          "no_rope_layers",
                                          "no_rope_layer_interval",
                                          "q_lora_rank",
                                          "kv_lora_rank",
                                          "qk_rope_head_dim",
                                          "qk_nope_head_dim",
                                          "v_head_dim",
                                          "linear_num_key_heads",
                                          "linear_key_head_dim",
                                          "linear_num_value_heads",
                                          "linear_value_head_dim",
                                          "linear_conv_kernel_dim",
                                          "index_n_heads",
                                          "index_head_dim",
                                          "index_topk",
                                          "index_topk_freq",
                                          "indexer_types",
                                          "mamba_num_heads",
                                          "mamba_head_dim",
                                          "ssm_state_size",
                                          "n_groups",
                                          "conv_kernel",
                                          "chunk_size",
                                          "use_conv_bias",
                                          "mamba_proj_bias",
                                          "hybrid_override_pattern",
                                          "moe_latent_size",
                                          "moe_shared_expert_intermediate_size",
                                          "mlp_hidden_act",
                                          "layer_types",
                                          "sliding_window",
                                          "num_nextn_predict_layers",
                                          "mtp_depth",
                                          "mtp_num_hidden_layers",
                                          "tie_word_embeddings",
                                          "attention_bias",
                                          "attention_out_bias",
                                          "qkv_bias",
                                          "mlp_bias",
                                          "qk_norm",
                                          "use_qk_norm",
                                          "qk_layernorm",
                                          "qk_norm_type",
                                          "attn_output_gate",
                                          "use_routing_bias",
                                          "attn_type_list",
                                          "hidden_act",
                                          "activation_function",
                                          "hidden_dropout",
                                          "resid_pdrop",
                                          "residual_dropout",
                                          "attention_dropout",
                                          "attn_pdrop",
                                          "learned_position_embeddings",
                                          "text_config",
                                          "vision_config",
                                          "_source",
                                          "_hf_ids",
                                          "_comment",
                                          "full_attention_interval",
                                          "sliding_window_pattern",
                                          "sliding_window_size",
                                          "hidden_activation",
                                          "use_sliding_window",
                                          "max_window_layers"};
  return k;
}

// Keys that do not change memory or step time (token ids, initialisation, RoPE and norm constants, dtype and
// library bookkeeping).
const std::set<std::string>& neutral_keys() {
  static const std::set<std::string> k = {"architectures",
                                          "bos_token_id",
                                          "eos_token_id",
                                          "pad_token_id",
                                          "torch_dtype",
                                          "dtype",
                                          "transformers_version",
                                          "use_cache",
                                          "attn_implementation",  // Transformers' kernel choice; a run states its own
                                          "initializer_range",
                                          "rms_norm_eps",
                                          "layer_norm_eps",
                                          "layer_norm_epsilon",
                                          "layernorm_epsilon",
                                          "norm_eps",
                                          "norm_epsilon",
                                          "embedding_dropout",  // one mask on the embedding's output, not per layer
                                          "rope_theta",
                                          "rope_scaling",
                                          "rope_parameters",
                                          "partial_rotary_factor",
                                          "pretraining_tp",
                                          "auto_map",
                                          "model_name",
                                          "norm_topk_prob",
                                          "routed_scaling_factor",
                                          "scoring_func",
                                          "topk_method",
                                          "router_aux_loss_coef",
                                          "aux_loss_alpha",
                                          "output_router_logits",
                                          "router_jitter_noise",
                                          "seq_aux",
                                          "ep_size",
                                          "moe_layer_freq",
                                          "embd_pdrop",
                                          "summary_type",
                                          "summary_use_proj",
                                          "summary_activation",
                                          "summary_proj_to_labels",
                                          "summary_first_dropout",
                                          "n_special",               // GPT-2's config.json: special tokens added to
                                          "predict_special_tokens",  // the vocabulary (none), the head predicting them
                                          "scale_attn_weights",
                                          "reorder_and_upcast_attn",
                                          "scale_attn_by_inverse_layer_idx",
                                          "n_ctx",
                                          "task_specific_params",
                                          "quantization_config",
                                          "rope_interleave",
                                          "image_token_id",
                                          "video_token_id",
                                          "vision_start_token_id",
                                          "vision_end_token_id",
                                          "vision_token_id",
                                          "image_token_index",
                                          "boi_token_index",
                                          "eoi_token_index",
                                          "mm_tokens_per_image",  // Gemma 3's pooled tokens per image: part of --seq; pooling has no weights
                                          "bos_token",
                                          "eos_token",
                                          "attention_dropout_prob",
                                          "hidden_dropout_prob",
                                          "max_window_layers",
                                          "use_sliding_window",
                                          "original_max_position_embeddings",
                                          "swiglu_limit",
                                          "embedding_multiplier",  // Granite's scalar multipliers: no weights, no FLOPs
                                          "attention_multiplier",
                                          "residual_multiplier",
                                          "logits_scaling",
                                          "original_rope",  // ChatGLM: RoPE constants and fused-kernel switches, no weights
                                          "rope_ratio",
                                          "post_layer_norm",
                                          "apply_residual_connection_post_layernorm",
                                          "apply_query_key_layer_scaling",
                                          "attention_softmax_in_fp32",
                                          "bias_dropout_fusion",
                                          "fp32_residual_connection",
                                          "classifier_dropout",
                                          "clip_qkv",  // OLMo's optional clamp of q, k, v: an element-wise pass, not priced
                                          "experts_per_token",
                                          "initial_context_length",
                                          "num_local_experts",
                                          "router_bias",
                                          "head_dim_original",
                                          "decoder_start_token_id",
                                          "is_encoder_decoder",
                                          "tokenizer_class",
                                          "output_attentions",
                                          "output_hidden_states",
                                          "return_dict",
                                          "id2label",
                                          "label2id",
                                          "problem_type",
                                          "chunk_size_feed_forward",
                                          "tie_encoder_decoder",
                                          "use_return_dict",
                                          "query_pre_attn_scalar",
                                          "final_logit_softcapping",
                                          "attn_logit_softcapping",
                                          "mlp_only_layers",
                                          "rope_type",
                                          "cache_implementation",
                                          "rope_local_base_freq",
                                          "factor"};
  return k;
}

// Keys read_vision reads, and tower keys that do not change its cost (token ids, initialisation, norms' epsilon).
const std::set<std::string>& vision_keys() {
  static const std::set<std::string> k = {"model_type",
                                          "embed_dim",
                                          "hidden_size",
                                          "depth",
                                          "num_hidden_layers",
                                          "num_heads",
                                          "num_attention_heads",
                                          "mlp_ratio",
                                          "intermediate_size",
                                          "out_hidden_size",
                                          "patch_size",
                                          "spatial_patch_size",
                                          "temporal_patch_size",
                                          "in_channels",
                                          "in_chans",
                                          "spatial_merge_size",
                                          "visual_tokens",
                                          "hidden_act",
                                          "initializer_range",
                                          "layer_norm_eps",
                                          "attention_dropout",
                                          "hidden_dropout",
                                          "torch_dtype",
                                          "dtype",
                                          "tokens_per_second",
                                          "image_size",
                                          "num_channels",
                                          "vision_use_head",
                                          "_comment"};
  return k;
}

void collect_unread(const json& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : node.items()) {
    if (prefix.empty() && key == "text_config" && value.is_object()) {
      collect_unread(value, "text_config", out);
      continue;
    }
    if (prefix.empty() && key == "vision_config" && value.is_object()) {
      // The tower's own keys (e.g. Qwen2.5-VL's window_size and fullatt_block_indexes: its windowed attention is
      // priced as full attention over the tower's tokens).
      // SigLIP's own keys are read only for a SigLIP tower.
      static const std::set<std::string> siglip_only = {"image_size", "num_channels", "vision_use_head"};
      const bool siglip = value.contains("model_type") && value.at("model_type") == "siglip_vision_model";
      for (const auto& item : value.items()) {
        if (!vision_keys().count(item.key()) || (!siglip && siglip_only.count(item.key()))) out.push_back("vision_config." + item.key());
      }
      continue;
    }
    if (!read_keys().count(key) && !neutral_keys().count(key)) out.push_back(prefix.empty() ? key : prefix + "." + key);
  }
}

}  // namespace

std::vector<std::string> unread_keys(const json& config) {
  std::vector<std::string> out;
  if (config.is_object()) collect_unread(config, "", out);
  return out;
}

ModelSpec read_model_file(const std::string& path) {
  json tree = io::read_tree(path);
  ModelSpec m = model_from_json(tree, path);
  m.unread_keys = unread_keys(tree);
  return m;
}

std::vector<std::string> bundled_models(const std::string& data_dir) {
  std::vector<std::string> names;
  for (const auto& f : io::list_files(data_dir + "/models", ".json")) names.push_back(io::stem(f));
  return names;
}

namespace {
// The first word of a bundled model file's `_source`: the HuggingFace id it was taken from, where it names one.
std::string source_id(const nlohmann::json& j) {
  const std::string source = j.value("_source", "");
  return source.substr(0, source.find(' '));
}
}  // namespace

std::optional<std::string> bundled_model_of_hf_id(const std::string& id, const std::string& data_dir) {
  const std::string wanted = io::lower(id);
  for (const std::string& name : bundled_models(data_dir)) {
    const nlohmann::json j = io::read_tree(data_dir + "/models/" + name + ".json");
    if (io::lower(source_id(j)) == wanted) return name;
    for (const auto& other : j.value("_hf_ids", nlohmann::json::array())) {
      if (other.is_string() && io::lower(other.get<std::string>()) == wanted) return name;
    }
  }
  return std::nullopt;
}

std::optional<std::string> hf_id_of_bundled(const std::string& name, const std::string& data_dir) {
  const std::string path = data_dir + "/models/" + name + ".json";
  if (name.find('/') != std::string::npos || !io::exists(path)) return std::nullopt;
  const std::string first = source_id(io::read_tree(path));
  const std::size_t slash = first.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == first.size() || first.find('/', slash + 1) != std::string::npos) return std::nullopt;
  return first;
}

std::optional<std::string> bundled_model_named(const std::string& id, const std::string& data_dir) {
  const std::string lower = io::lower(io::last_component(id));
  if (io::exists(data_dir + "/models/" + lower + ".json")) return lower;
  std::string dashed = lower;  // qwen3_30b_a3b names qwen3-30b-a3b
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  if (io::exists(data_dir + "/models/" + dashed + ".json")) return dashed;
  return bundled_model_of_hf_id(id, data_dir);
}

std::string model_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return path;
  std::string config = path + (path.ends_with("/") ? "" : "/") + "config.json";
  if (!io::exists(config)) fail("--model", "'{}' is a folder without a config.json (a HuggingFace model folder holds one)", path);
  return config;
}

ModelSpec load_model(const std::string& name_or_path, const std::string& data_dir) {
  if (io::exists(name_or_path)) {
    const std::string file = model_file(name_or_path);
    ModelSpec m = read_model_file(file);
    if (file != name_or_path) {  // a HuggingFace model folder names the model
      std::string folder = name_or_path;
      while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
      m.name = io::last_component(folder);
    }
    return m;
  }
  std::string bundled = data_dir + "/models/" + name_or_path + ".json";
  if (io::exists(bundled)) {
    ModelSpec m = read_model_file(bundled);
    m.name = name_or_path;
    return m;
  }
  // A HuggingFace id ("Qwen/Qwen3-8B") of a bundled config.
  if (name_or_path.find('/') != std::string::npos) {
    if (auto named = bundled_model_named(name_or_path, data_dir)) return load_model(*named, data_dir);
  }
  std::string list;
  for (const auto& n : bundled_models(data_dir)) list += (list.empty() ? "" : ", ") + n;
  fail("--model", "'{}' is neither a file nor a bundled model; bundled: {}", name_or_path, list);
}

}  // namespace sapp::model
