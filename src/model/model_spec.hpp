// model/model_spec (layer model: what a model is, from its config and the family data files): the typed model IR (ModelSpec) and how it is read from a
// HuggingFace config.json or YAML.
//
// Absent is not zero: every field a config may leave out is optional, and a contradiction is refused by name
// when the file is read, never priced as 0 later. The family (op profile) is chosen from `model_type` or an
// explicit `arch` through the profiles' own `model_types` lists (data), never by matching a name's substring.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sapp::model {

using Count = std::int64_t;

// DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2): its heads and head dimension score every earlier
// key, and each query then attends the `topk` keys it selects. All three or none.
struct IndexerDims {
  Count heads = 0;
  Count head_dim = 0;
  Count topk = 0;
};

// Linear-attention mixer dimensions (Gated DeltaNet's, or a Mamba-2 mixer's as linear attention): all five or none.
struct LinearAttentionDims {
  Count num_key_heads = 0;
  Count key_head_dim = 0;
  Count num_value_heads = 0;
  Count value_head_dim = 0;
  Count conv_kernel_dim = 0;
  // Tokens per block of the chunked scan: flash-linear-attention's chunk_gated_delta_rule runs blocks of 64 (Gated
  // DeltaNet); Mamba-2's SSD kernels the config's chunk_size (128 in Transformers' NemotronHConfig and Megatron-Core's
  // MambaMixer). Each token attends its block's tokens quadratically (cost::terms, record linear_recurrence).
  Count scan_chunk_tokens = 64;
};

// How a tower's output reaches the language model.
enum class VisionProjector {
  QwenMerger,   // Qwen2-VL / Qwen2.5-VL / Qwen3-VL: 2x2 patches concatenated, LayerNorm/RMSNorm, two-layer MLP
  GemmaPooled,  // Gemma 3: the SigLIP output average-pooled to mm_tokens_per_image, RMSNorm, one linear
};

// A vision tower in front of the language model: a ViT (Qwen-VL's, or SigLIP as Gemma 3 runs it) and its projector.
struct VisionSpec {
  Count hidden_size = 0;
  Count num_layers = 0;
  Count num_heads = 0;
  std::optional<Count> intermediate_size;
  Count out_hidden_size = 0;  // the LLM width the merger projects to
  Count patch_size = 14;
  Count temporal_patch_size = 2;
  Count in_channels = 3;
  Count spatial_merge_size = 2;
  bool gated_mlp = false;      // Qwen2.5-VL's tower uses SwiGLU; Qwen2-VL's uses a plain GELU MLP
  Count tokens = 1024;         // visual tokens per sample at the tower's input (before merging)
  bool tokens_stated = false;  // false: `tokens` is the default, which the report warns about
  VisionProjector projector = VisionProjector::QwenMerger;
  // A fixed-resolution tower (SigLIP): patches per image; each image attends within itself. 0: not fixed (the
  // sample's tokens attend as one).
  Count image_tokens = 0;
  Count position_embeddings = 0;  // learned positions (SigLIP: one per patch)
  bool patch_bias = false;        // the patch embedding's convolution has a bias (SigLIP)
  bool post_norm = false;         // a LayerNorm after the last layer (SigLIP's post_layernorm)
};

struct ModelSpec {
  std::string name;                        // bundled name or file stem
  std::string source;                      // file it was read from
  std::string model_type;                  // HF model_type, e.g. "llama"
  std::vector<std::string> architectures;  // HF architectures, e.g. "LlamaForCausalLM" (the family when model_type is unknown)
  std::string arch;                        // op-profile family, resolved from model_type or stated

  Count hidden_size = 0;
  Count num_layers = 0;
  Count num_heads = 0;
  Count vocab_size = 0;
  std::optional<Count> num_kv_heads;
  std::optional<Count> head_dim;
  std::optional<Count> intermediate_size;
  std::optional<Count> max_position_embeddings;

  // MoE
  std::optional<Count> num_experts;
  std::optional<Count> experts_per_token;
  std::optional<Count> num_shared_experts;
  std::optional<Count> moe_intermediate_size;
  std::optional<Count> shared_expert_intermediate_size;
  std::optional<Count> first_k_dense;
  // Group-limited routing (DeepSeek-V2/V3 n_group / topk_group): the experts form n_group equal groups in
  // expert order and a token's experts come from at most topk_group of them.
  std::optional<Count> routing_groups;
  std::optional<Count> routing_group_limit;
  std::vector<Count> mlp_only_layers;
  // Every step-th layer MoE, the others dense (interleave_moe_layer_step of Llama 4, decoder_sparse_step of
  // Qwen2/3-MoE): layer i is MoE when (i + 1) % step == 0, as in Transformers.
  std::optional<Count> moe_layer_step;

  // MLA
  std::optional<Count> q_lora_rank;
  std::optional<Count> kv_lora_rank;
  std::optional<Count> qk_rope_head_dim;
  std::optional<Count> qk_nope_head_dim;
  std::optional<Count> v_head_dim;

  std::optional<LinearAttentionDims> linear;
  std::optional<IndexerDims> indexer;  // index_n_heads, index_head_dim, index_topk
  std::vector<std::string> layer_types;
  std::string hybrid_pattern;             // Nemotron-H's hybrid_override_pattern (one symbol a layer; layer_types from it), else empty
  std::optional<Count> sliding_window;    // none when the config states use_sliding_window: false (Qwen2/Qwen3)
  std::optional<Count> attention_period;  // every N-th layer full attention: full_attention_interval (Qwen3-Next),
                                          // sliding_window_pattern (Gemma 3)
  std::optional<Count> attention_chunk;   // chunked local attention (Llama 4's attention_chunk_size)
  std::optional<Count> mtp_depth;

  bool tie_word_embeddings = false;
  bool tie_word_embeddings_stated = false;  // false: the family's default applies (Gemma ties, Llama does not)
  std::optional<bool> attention_bias;       // the q, k, v (and, as the profile says, o) projections' biases
  std::optional<bool> attention_out_bias;   // the o projection's bias, where stated apart (Seed-OSS)
  std::optional<bool> mlp_bias;
  std::optional<bool> norm_bias;  // LayerNorm (weight and bias) instead of RMSNorm, where stated (ChatGLM's rmsnorm: false)
  std::optional<bool> qk_norm;
  std::optional<bool> qk_norm_whole;  // q/k norms over the whole projection (qk_norm_type per_layer), not per head
  std::optional<bool> attn_output_gate;
  std::optional<bool> router_bias;  // a bias per expert on the router's scores (MiniMax-M2's use_routing_bias)
  std::optional<std::string> hidden_act;
  std::optional<double> dropout;                     // attention/hidden dropout probability, when stated
  std::optional<Count> learned_position_embeddings;  // GPT-style absolute position table rows

  std::optional<VisionSpec> vision;
  // Keys of the file it was read from that sapp neither reads nor knows to be cost-neutral (a misspelling, or
  // a feature it does not model); filled by read_model_file, reported as a warning.
  std::vector<std::string> unread_keys;

  [[nodiscard]] Count kv_heads() const { return num_kv_heads.value_or(num_heads); }
  [[nodiscard]] Count effective_head_dim() const { return head_dim.value_or(hidden_size / num_heads); }
  [[nodiscard]] bool is_moe() const { return num_experts.value_or(0) > 1; }
  [[nodiscard]] bool is_mla() const { return kv_lora_rank.value_or(0) > 0; }
  // Whether body layer i runs the routed experts: a MoE model's layer not among the first first_k_dense_replace,
  // not in mlp_only_layers, and on the MoE layer step ((i + 1) % step == 0, Transformers' convention).
  [[nodiscard]] bool routes_layer(Count i) const;
  [[nodiscard]] Count routed_expert_width() const { return moe_intermediate_size.value_or(intermediate_size.value_or(0)); }
  // Total width of the shared expert(s): Qwen states one shared expert's whole width, DeepSeek a count of
  // routed-width experts. Never a floor division of one by the other (a reference defect).
  [[nodiscard]] Count shared_expert_width() const;
  // Elements per token of the K and V a context-parallel ring passes on: the up-projected heads for MLA, the
  // KV heads otherwise (the query heads when the framework repeats GQA's K,V before attention:
  // plan::Training::cp_kv_repeated).
  [[nodiscard]] double kv_exchange_width(bool repeated_to_query_heads = false) const;
  // The width of one head's attention output (MLA's v_head_dim, else the head dimension).
  [[nodiscard]] double attention_value_width() const;
};

// The keys of a HuggingFace-style config (text_config included, vision_config left to its reader) that
// model_from_json does not read and that are not known to leave the cost unchanged.
std::vector<std::string> unread_keys(const nlohmann::json& config);
// Reads a model file (.json HF config, or .yaml/.yml with the same keys). Errors name the file, key and value.
ModelSpec read_model_file(const std::string& path);
// Builds a spec from parsed JSON; `where` is the file name for errors.
ModelSpec model_from_json(const nlohmann::json& config, const std::string& where);
// A bundled name (e.g. "llama3-8b") or a path.
// A HuggingFace config's `architectures` (class names), empty when it states none.
std::vector<std::string> architectures_of(const nlohmann::json& config);
ModelSpec load_model(const std::string& name_or_path, const std::string& data_dir);
std::vector<std::string> bundled_models(const std::string& data_dir);
// The bundled model a HuggingFace id names ("meta-llama/Llama-3.1-70B" -> "llama3-70b"), matched without case against
// each bundled file's `_source` (its first word) and `_hf_ids` (ids of the same architecture); none when no file names it.
std::optional<std::string> bundled_model_of_hf_id(const std::string& id, const std::string& data_dir);
// The HuggingFace id a bundled model was taken from (the first word of its file's `_source` when that names one,
// org/name), as a framework config that loads the checkpoint names it; none for another name or a source that is
// not a HuggingFace repository (a paper, a framework's recipe).
std::optional<std::string> hf_id_of_bundled(const std::string& name, const std::string& data_dir);
// The bundled model a name or HuggingFace id means, as framework configs name models: the lower-cased last path
// component as a data file's name ("Qwen/Qwen3-8B" -> "qwen3-8b"), with underscores as dashes ("qwen3_30b_a3b"),
// or bundled_model_of_hf_id; none when no bundled file matches.
std::optional<std::string> bundled_model_named(const std::string& id, const std::string& data_dir);
// The file a --model path names: the path itself, or a HuggingFace model folder's config.json (a folder without one
// is refused).
std::string model_file(const std::string& path);

}  // namespace sapp::model
