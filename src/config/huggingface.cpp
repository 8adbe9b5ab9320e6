// config/huggingface: a HuggingFace config.json (or the same keys in YAML), nested text_config /
// vision_config included. The model is read by model::model_from_json; this reader only says which keys it
// does not read: a key that would change the cost but is not read is a warning, never silence.
#include <set>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::config::detail {

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
                                          "num_experts_per_tok",
                                          "experts_per_token",
                                          "num_experts_per_token",
                                          "moe_topk",
                                          "n_shared_experts",
                                          "num_shared_experts",
                                          "moe_intermediate_size",
                                          "shared_expert_intermediate_size",
                                          "first_k_dense_replace",
                                          "mlp_only_layers",
                                          "decoder_sparse_step",
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
                                          "layer_types",
                                          "sliding_window",
                                          "num_nextn_predict_layers",
                                          "mtp_depth",
                                          "mtp_num_hidden_layers",
                                          "tie_word_embeddings",
                                          "attention_bias",
                                          "qkv_bias",
                                          "mlp_bias",
                                          "qk_norm",
                                          "use_qk_norm",
                                          "qk_layernorm",
                                          "attn_output_gate",
                                          "hidden_act",
                                          "activation_function",
                                          "hidden_dropout",
                                          "resid_pdrop",
                                          "attention_dropout",
                                          "attn_pdrop",
                                          "learned_position_embeddings",
                                          "text_config",
                                          "vision_config",
                                          "_source",
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
                                          "initializer_range",
                                          "rms_norm_eps",
                                          "layer_norm_eps",
                                          "layer_norm_epsilon",
                                          "norm_eps",
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
                                          "topk_group",
                                          "n_group",
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
                                          "bos_token",
                                          "eos_token",
                                          "attention_dropout_prob",
                                          "hidden_dropout_prob",
                                          "max_window_layers",
                                          "use_sliding_window",
                                          "original_max_position_embeddings",
                                          "swiglu_limit",
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

void unread(const json& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, value] : node.items()) {
    if (prefix.empty() && (key == "text_config")) {
      unread(value, "text_config", out);
      continue;
    }
    if (key == "vision_config") continue;  // read by the vision reader, which names what it needs
    if (!read_keys().count(key) && !neutral_keys().count(key)) out.push_back(prefix.empty() ? key : prefix + "." + key);
  }
}

}  // namespace

Loaded read_huggingface(const std::string& text, const std::string& file) {
  json tree = io::parse_yaml(text, file);
  if (!tree.is_object()) fail(file, "a HuggingFace config must be a mapping, got {}", tree.type_name());
  Loaded out;
  out.values = json::object();
  out.model_config = tree;
  put(out, "model", file, "model_type");
  std::vector<std::string> keys;
  unread(tree, "", keys);
  if (!keys.empty()) {
    out.warnings.push_back(fmt::format("key(s) sapp does not read and cannot price (misspelt, or a feature it does not model): {}", fmt::join(keys, ", ")));
  }
  return out;
}

}  // namespace sapp::config::detail
