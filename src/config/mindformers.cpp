// config/mindformers: a MindFormers (MindSpore Transformers) training YAML: parallel_config, recompute_config,
// runner_config, model.model_config (legacy and mcore key names) and moe_config, with MindFormers' layer
// placement rules (offset, pp_interleave_num) and per-stage recompute arrays; written back in place.
// Rules restated in docs/configs.md from mindformers v1.5.0 / master (LayerSetting, check_rules.py).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "model/model_spec.hpp"

namespace sapp::config::detail {

plan::ChunkCounts offset_layers(long long layers, int pp, int vpp, const json& offset, const std::string& where) {
  long long chunks = 1LL * pp * vpp;
  long long base = layers / chunks;
  long long remainder = layers % chunks;
  plan::ChunkCounts out(static_cast<std::size_t>(vpp), std::vector<long long>(static_cast<std::size_t>(pp), base));
  long long sum = 0;
  auto number = [&](const json& v) {
    if (!v.is_number_integer()) fail(where, "{} is not a whole number of layers", v.dump());
    return v.get<long long>();
  };
  if (offset.is_null() || (offset.is_number() && chunks <= 1)) {
    sum = 0;
  } else if (offset.is_number()) {
    sum = number(offset);
    if (sum != 0) fail(where, "{} as one number is added to every one of the {} chunks; state a list of one offset per stage", sum, chunks);
  } else if (offset.is_array() && !offset.empty() && offset.front().is_array()) {
    if (static_cast<int>(offset.size()) != vpp)
      fail(where, "{} has {} rows, but pp_interleave_num is {} (MindFormers: offset.shape[-2] must equal it)", offset.dump(), offset.size(), vpp);
    for (std::size_t c = 0; c < offset.size(); ++c) {
      if (!offset[c].is_array() || static_cast<int>(offset[c].size()) != pp)
        fail(where, "row {} of {} must hold pipeline_stage {} offsets", c, offset.dump(), pp);
      for (std::size_t s = 0; s < offset[c].size(); ++s) {
        long long o = number(offset[c][s]);
        out[c][s] += o;
        sum += o;
      }
    }
  } else if (offset.is_array()) {
    if (static_cast<int>(offset.size()) != pp) fail(where, "{} has {} entries, but pipeline_stage is {}", offset.dump(), offset.size(), pp);
    for (std::size_t s = 0; s < offset.size(); ++s) {
      long long o = number(offset[s]);
      for (auto& row : out) row[s] += o;
      sum += o;
    }
  } else {
    fail(where, "{} is not an offset (a number, a list per stage, or a list per chunk of lists per stage)", offset.dump());
  }
  if (sum != remainder) {
    fail(where, "{} sums to {}, but MindFormers needs the offsets to sum to num_layers % (pipeline_stage x pp_interleave_num) = {} % ({} x {}) = {}",
         offset.dump(), sum, layers, pp, vpp, remainder);
  }
  for (std::size_t c = 0; c < out.size(); ++c) {
    for (std::size_t s = 0; s < out[c].size(); ++s) {
      if (out[c][s] < 0) fail(where, "{} leaves chunk {} of stage {} with {} layers", offset.dump(), c, s, out[c][s]);
    }
  }
  return out;
}

plan::ChunkCounts recompute_layers(const plan::ChunkCounts& layers, const json& stated, const std::string& where) {
  std::size_t vpp = layers.size();
  std::size_t pp = layers.front().size();
  plan::ChunkCounts out(vpp, std::vector<long long>(pp, 0));
  auto count = [&](const json& v, long long all) -> long long {
    if (v.is_boolean()) return v.get<bool>() ? all : 0;
    if (!v.is_number_integer() || v.get<long long>() < 0) fail(where, "{} is not a layer count or true/false", v.dump());
    return std::min(v.get<long long>(), all);  // clipped to the block, as MindFormers does
  };
  if (stated.is_boolean()) {
    if (stated.get<bool>()) out = layers;
  } else if (stated.is_array() && !stated.empty() && stated.front().is_array()) {
    if (stated.size() != vpp) fail(where, "{} has {} rows, but pp_interleave_num is {}", stated.dump(), stated.size(), vpp);
    for (std::size_t c = 0; c < vpp; ++c) {
      if (!stated[c].is_array() || stated[c].size() != pp) fail(where, "row {} of {} must hold pipeline_stage {} counts", c, stated.dump(), pp);
      for (std::size_t s = 0; s < pp; ++s) out[c][s] = count(stated[c][s], layers[c][s]);
    }
  } else if (stated.is_array()) {
    if (stated.size() != pp) fail(where, "{} has {} entries, but pipeline_stage is {}", stated.dump(), stated.size(), pp);
    for (std::size_t s = 0; s < pp; ++s) {
      long long stage_total = 0;
      for (std::size_t c = 0; c < vpp; ++c) stage_total += layers[c][s];
      long long left = count(stated[s], stage_total);
      // Spread over the stage's chunks one layer at a time, chunk 0 first (MindFormers' _alloc_recompute_layer).
      while (left > 0) {
        bool placed = false;
        for (std::size_t c = 0; c < vpp && left > 0; ++c) {
          if (out[c][s] < layers[c][s]) {
            ++out[c][s];
            --left;
            placed = true;
          }
        }
        if (!placed) break;
      }
    }
  } else {
    fail(where, "{} is not a recompute setting (true/false, a count per stage, or counts per chunk and stage)", stated.dump());
  }
  return out;
}

namespace {

const json* first_of(Tree& t, std::initializer_list<const char*> paths, std::string& found) {
  for (const char* p : paths) {
    if (const json* v = t.get(p)) {
      found = p;
      return v;
    }
  }
  return nullptr;
}

// The HuggingFace keys model_from_json reads, from a MindFormers model_config (legacy or mcore names) and moe_config.
// What the YAML's model config class defaults the keys it leaves out to (data/formats/mindformers-model-defaults.yaml),
// under HuggingFace names; empty for a class the file does not list.
json class_defaults(const std::string& cls, bool mcore) {
  const json all = io::read_tree(io::data_dir() + "/formats/mindformers-model-defaults.yaml");
  const char* api = mcore ? "mcore" : "legacy";
  if (!all.contains(cls) || !all.at(cls).contains(api)) return json::object();
  return all.at(cls).at(api);
}

json model_of(Tree& t, const std::string& file, long long& num_layers, long long& mtp, bool& legacy_mtp_in_split) {
  json m = json::object();
  m["_source"] = file;
  std::string k;
  // Keys the YAML leaves out take its config class's defaults, as MindFormers builds the class.
  const std::string cls = t.text("model.model_config.type").value_or("");
  const json defaults = class_defaults(cls, !t.flag("use_legacy").value_or(true));
  auto fallback = [&](const char* hf) -> std::optional<long long> {
    if (defaults.contains(hf) && defaults.at(hf).is_number_integer()) return defaults.at(hf).get<long long>();
    return std::nullopt;
  };
  auto req = [&](std::initializer_list<const char*> paths, const char* hf) {
    auto v = t.whole_of(paths, k);
    if (!v) v = fallback(hf);
    if (!v) {
      const std::string type = t.text("model.model_config.type").value_or(t.text("model.arch.type").value_or("unstated"));
      fail(at(file, *paths.begin()), "is required: sapp prices decoder-only language models from their model_config (type {}; also looked for {})", type,
           fmt::join(paths, ", "));
    }
    m[hf] = *v;
    return *v;
  };
  auto opt = [&](std::initializer_list<const char*> paths, const char* hf, long long lowest = 1) {
    auto v = t.whole_of(paths, k, lowest);
    if (!v) v = fallback(hf);
    if (v) m[hf] = *v;
    return v;
  };
  long long h = req({"model.model_config.hidden_size"}, "hidden_size");
  num_layers = req({"model.model_config.num_layers", "model.model_config.num_hidden_layers"}, "num_hidden_layers");
  req({"model.model_config.num_heads", "model.model_config.num_attention_heads"}, "num_attention_heads");
  opt({"model.model_config.n_kv_heads", "model.model_config.num_key_value_heads", "model.model_config.num_query_groups"}, "num_key_value_heads");
  opt({"model.model_config.head_dim", "model.model_config.kv_channels"}, "head_dim");
  // LlamaConfig's default 32000; ChatGLM2Config states the embedding's rows as padded_vocab_size.
  m["vocab_size"] = t.whole_of({"model.model_config.vocab_size", "model.model_config.padded_vocab_size"}, k).value_or(fallback("vocab_size").value_or(32000));
  // ChatGLM2Config: multi_query_attention with multi_query_group_num KV groups; q, k, v biases (add_qkv_bias), o and
  // FFN biases (add_bias_linear), RMSNorm or LayerNorm (rmsnorm): the HuggingFace chatglm keys of the same names.
  if (t.flag("model.model_config.multi_query_attention").value_or(false)) {
    opt({"model.model_config.multi_query_group_num"}, "num_key_value_heads");
  } else {
    t.use("model.model_config.multi_query_group_num");
  }
  for (const char* key : {"add_qkv_bias", "add_bias_linear", "rmsnorm"}) {
    if (auto v = t.flag(std::string("model.model_config.") + key)) m[key] = *v;
  }
  opt({"model.model_config.max_position_embeddings", "model.model_config.max_position_embedding"}, "max_position_embeddings");
  auto inter = opt({"model.model_config.intermediate_size", "model.model_config.ffn_hidden_size"}, "intermediate_size");
  if (!inter) {
    // LlamaFeedForward: 4h, x (ffn_dim_multiplier + 0.01), x 2/3, rounded up to multiple_of.
    long long multiple = t.whole_of({"model.model_config.multiple_of"}, k).value_or(256);
    double f = 4.0 * static_cast<double>(h);
    if (const json* mult = t.get("model.model_config.ffn_dim_multiplier"); mult && mult->is_number()) f = std::floor((mult->get<double>() + 0.01) * f);
    long long w = static_cast<long long>(std::floor(2.0 * f / 3.0));
    m["intermediate_size"] = (w + multiple - 1) / multiple * multiple;
  } else {
    t.use("model.model_config.multiple_of");
    t.use("model.model_config.ffn_dim_multiplier");
  }
  opt({"model.model_config.kv_lora_rank"}, "kv_lora_rank");
  opt({"model.model_config.q_lora_rank"}, "q_lora_rank");
  opt({"model.model_config.qk_rope_head_dim", "model.model_config.qk_pos_emb_head_dim"}, "qk_rope_head_dim");
  opt({"model.model_config.qk_nope_head_dim", "model.model_config.qk_head_dim"}, "qk_nope_head_dim");
  opt({"model.model_config.v_head_dim"}, "v_head_dim");
  opt({"model.model_config.index_n_heads"}, "index_n_heads");  // DeepSeek Sparse Attention (DeepSeek-V3.2's HF names)
  opt({"model.model_config.index_head_dim"}, "index_head_dim");
  opt({"model.model_config.index_topk"}, "index_topk");
  mtp = t.whole_of({"model.model_config.mtp_depth", "model.model_config.num_nextn_predict_layers", "model.model_config.mtp_num_layers"}, k, 0)
            .value_or(fallback("num_nextn_predict_layers").value_or(0));
  if (mtp > 0) m["num_nextn_predict_layers"] = mtp;
  auto experts =
      t.whole_of({"moe_config.expert_num", "model.model_config.num_experts", "model.model_config.n_routed_experts", "model.model_config.num_moe_experts"}, k);
  if (!experts) experts = fallback("n_routed_experts");
  if (experts && *experts > 1) {
    m["n_routed_experts"] = *experts;
    opt({"moe_config.num_experts_chosen", "model.model_config.num_experts_per_tok", "model.model_config.moe_router_topk"}, "num_experts_per_tok");
    opt({"moe_config.moe_intermediate_size", "model.model_config.moe_intermediate_size", "model.model_config.moe_ffn_hidden_size"}, "moe_intermediate_size");
    opt({"moe_config.shared_expert_num", "model.model_config.n_shared_experts", "model.model_config.shared_expert_num"}, "n_shared_experts", 0);
    opt({"model.model_config.moe_shared_expert_intermediate_size"}, "shared_expert_intermediate_size");
    if (const json* fk = first_of(t, {"moe_config.first_k_dense_replace", "model.model_config.first_k_dense_replace"}, k)) {
      if (fk->is_number_integer()) m["first_k_dense_replace"] = fk->get<long long>();
    } else if (auto dense = fallback("first_k_dense_replace")) {
      m["first_k_dense_replace"] = *dense;
    }
    // DeepSeek's node-limited routing: n_group expert groups, topk_group of them per token (0: none).
    opt({"model.model_config.n_group", "moe_config.n_group"}, "n_group", 0);
    opt({"model.model_config.topk_group", "moe_config.topk_group"}, "topk_group", 0);
  }
  // HuggingFace keys that shape the layers, as MindFormers lays model_config over a config.json (models/build_config.py
  // merge_model_config): read as they are.
  for (const char* key : {"layer_types", "sliding_window", "use_sliding_window", "full_attention_interval", "sliding_window_pattern", "attention_chunk_size",
                          "linear_num_key_heads", "linear_key_head_dim", "linear_num_value_heads", "linear_value_head_dim", "linear_conv_kernel_dim",
                          "mlp_only_layers", "decoder_sparse_step", "hidden_dropout", "attention_dropout"}) {
    const std::string path = std::string("model.model_config.") + key;
    if (const json* v = t.get(path)) {
      m[key] = *v;
      t.use(path);
    }
  }
  if (auto tie = t.flag("model.model_config.tie_word_embeddings")) m["tie_word_embeddings"] = *tie;
  if (auto bias = t.flag("model.model_config.qkv_has_bias")) m["attention_bias"] = *bias;
  if (auto qk = t.flag("model.model_config.use_qk_norm")) m["qk_norm"] = *qk;
  if (auto qk = t.flag("model.model_config.qk_layernorm")) m["qk_norm"] = *qk;
  // The family: a stated model_type, else from the config class, else from the shape.
  std::string type;
  if (auto mt = t.text("model.model_config.model_type")) type = *mt;
  t.use("model.arch");
  std::string lower = io::lower(cls);
  if (type.empty()) {
    if (m.contains("kv_lora_rank"))
      type = "deepseek_v3";
    else if (lower.find("chatglm") != std::string::npos)
      type = "chatglm";
    else if (lower.find("qwen3moe") != std::string::npos)
      type = "qwen3_moe";
    else if (lower.find("qwen3") != std::string::npos)
      type = "qwen3";
    else if (lower.find("qwen2") != std::string::npos)
      type = "qwen2";
    else if (m.contains("n_routed_experts"))
      type = "mixtral";
    else
      type = "llama";
  }
  m["model_type"] = type;
  // Legacy DeepSeek-V3 places its MTP layers with the body (LayerSetting(num_layers + mtp_depth)).
  legacy_mtp_in_split = mtp > 0 && lower.find("deepseekv3") != std::string::npos;
  return m;
}

}  // namespace

Loaded read_mindformers(const json& tree, const std::string& file) {
  Tree t{tree, file, {}};
  Loaded out;
  auto set = setter(out);
  std::string k;
  long long dp = t.whole_of({"parallel_config.data_parallel", "parallel_config.data_parallel_size"}, k).value_or(1);
  std::string dp_key = k.empty() ? "parallel_config.data_parallel" : k;
  k.clear();
  long long tp = t.whole_of({"parallel_config.model_parallel", "parallel_config.tensor_model_parallel_size"}, k).value_or(1);
  std::string tp_key = k.empty() ? "parallel_config.model_parallel" : k;
  k.clear();
  long long cp = t.whole_of({"parallel_config.context_parallel", "parallel_config.context_parallel_size"}, k).value_or(1);
  k.clear();
  long long pp = t.whole_of({"parallel_config.pipeline_stage", "parallel_config.pipeline_model_parallel_size"}, k).value_or(1);
  std::string pp_key = k.empty() ? "parallel_config.pipeline_stage" : k;
  k.clear();
  long long ep = t.whole_of({"parallel_config.expert_parallel", "parallel_config.expert_model_parallel_size"}, k).value_or(1);
  long long m = t.whole("parallel_config.micro_batch_num").value_or(1);
  set("framework", "mindformers", "a MindFormers YAML");
  set("devices", dp * tp * cp * pp, "parallel_config (data_parallel x model_parallel x context_parallel x pipeline_stage)");
  set("tp", tp, tp_key);
  set("pp", pp, pp_key);
  set("cp", cp, "parallel_config.context_parallel");
  set("ep", ep, "parallel_config.expert_parallel");
  if (auto sp = t.flag("parallel_config.use_seq_parallel")) set("sp", *sp && tp > 1, "parallel_config.use_seq_parallel");
  if (cp > 1 && t.flag("model.model_config.use_ring_attention").value_or(false)) {
    // The legacy models' ring attention (models/llama/llama.py: config.use_ring_attention selects it).
    set("cp_algo", "ring", "model.model_config.use_ring_attention");
    t.use("parallel_config.context_parallel_algo");
  } else if (cp > 1) {
    std::string algo = t.text("parallel_config.context_parallel_algo").value_or("colossalai_cp");
    set("cp_algo", algo == "ulysses_cp" ? "all2all" : "ring", "parallel_config.context_parallel_algo");
    if (algo == "hybrid_cp") out.warnings.push_back("context_parallel_algo hybrid_cp is priced as ring CP");
  } else {
    t.use("parallel_config.context_parallel_algo");
  }
  // Batch: runner_config.batch_size is the micro-batch size; the global batch follows MindFormers' rule.
  long long mbs = t.whole("runner_config.batch_size").value_or(1);
  long long interleave = t.whole("micro_batch_interleave_num").value_or(1);
  long long accumulation = t.whole("runner_config.gradient_accumulation_steps").value_or(1);
  // micro_batch_interleave_num n: MindFormers wraps the network in MicroBatchInterleaved (trainer/base_trainer.py),
  // which runs n slices of batch_size x n samples side by side in one forward and backward (to hide the TP
  // collectives): a micro-batch of batch_size x n, micro_batch_num of them (no more accumulation steps).
  set("mbs", mbs * interleave, interleave > 1 ? "runner_config.batch_size x micro_batch_interleave_num" : "runner_config.batch_size");
  long long steps = pp > 1 ? m : accumulation;
  set("global_batch", mbs * dp * steps * interleave,
      pp > 1 ? "runner_config.batch_size x data_parallel x micro_batch_num x micro_batch_interleave_num"
             : "runner_config.batch_size x data_parallel x gradient_accumulation_steps x micro_batch_interleave_num");
  if (interleave > 1)
    out.warnings.push_back(
        fmt::format("micro_batch_interleave_num {}: priced as micro-batches of batch_size x {} (its slices run side by side); the TP "
                    "communication the interleaving hides is not priced",
                    interleave, interleave));
  // MindSpore's parallel optimizer slices the weights and the optimizer states over DP ("saves the parameters as
  // minimal slices", MindSpore's Optimizer Parallel page): ZeRO-3 as the mindformers profile prices it
  // (plan::Training::zero3_gathers_once_per_step). gradient_accumulation_shard (level2) also slices the accumulated
  // gradients, with a reduce-scatter per micro-batch; every MindFormers YAML sets it False.
  bool op = t.flag("parallel.enable_parallel_optimizer").value_or(false);
  set("zero", op ? 3 : 0, "parallel.enable_parallel_optimizer");
  // It applies whenever the parallel optimizer runs: stated with the optimizer off, it is still what a ZeRO-3
  // candidate of a search (or --zero 3) runs, and what --emit leaves switched on.
  if (t.flag("recompute_config.parallel_optimizer_comm_recompute").value_or(false))
    set("optimizer_comm_recompute", true, "recompute_config.parallel_optimizer_comm_recompute");
  if (op && t.flag("parallel.parallel_optimizer_config.gradient_accumulation_shard").value_or(false))
    out.warnings.push_back("parallel_optimizer_config.gradient_accumulation_shard True is priced as False (accumulated gradients held whole)");
  if (auto shard = t.whole("parallel.parallel_optimizer_config.optimizer_weight_shard_size", -1); shard && *shard > 0) {
    set("optimizer_shard", *shard, "parallel.parallel_optimizer_config.optimizer_weight_shard_size");
  }
  // Sequence and precision.
  if (auto seq = t.whole("model.model_config.seq_length")) set("seq", *seq, "model.model_config.seq_length");
  // The weights' dtype: param_init_type, or the mcore models' params_dtype (parallel_core/model_parallel_config.py
  // params_dtype, default float32; transformer_config_utils.py maps both names to it). A legacy model unstated keeps
  // the mindformers profile's (float16, its default param_init_type).
  std::string pit_from;
  for (const char* key : {"model.model_config.param_init_type", "model.model_config.params_dtype"}) {
    if (t.get(key) && pit_from.empty()) pit_from = key;
  }
  const bool mcore = !t.flag("use_legacy").value_or(true);
  if (!pit_from.empty() || mcore) {
    const double b = pit_from.empty() ? 4.0 : dtype_bytes(*t.text(pit_from), at(file, pit_from));
    const std::string from = pit_from.empty() ? "use_legacy False (the mcore models' default params_dtype float32)" : pit_from;
    set("param_bytes", b, from);
    set("grad_bytes", b, from + " (gradients accumulate in the parameters' dtype)");
  }
  if (auto cd = t.text("model.model_config.compute_dtype"))
    set("compute_bytes", dtype_bytes(*cd, at(file, "model.model_config.compute_dtype")), "model.model_config.compute_dtype");
  if (auto flash = t.flag("model.model_config.use_flash_attention")) set("no_flash_attention", !*flash, "model.model_config.use_flash_attention");
  // Dropless (<= 0) and capacity factors are both priced; MindFormers' default is 1.1. The legacy models'
  // use_gmm selects MoEV3 (modules/transformer/moev3.py), grouped matmuls without a capacity: dropless.
  if (t.flag("moe_config.use_gmm").value_or(false)) {
    t.use("moe_config.capacity_factor");
  } else if (auto cf = t.get("moe_config.capacity_factor"); cf && cf->is_number()) {
    if (cf->get<double>() > 0) set("capacity_factor", cf->get<double>(), "moe_config.capacity_factor");
  }
  if (auto mem = t.text("context.max_device_memory")) {
    std::string v = *mem;
    std::size_t g = v.find("GB");
    if (g == std::string::npos) fail(at(file, "context.max_device_memory"), "'{}' is not a size like 58GB", v);
    set("memory_limit_gib", std::stod(v.substr(0, g)), "context.max_device_memory");
  }
  // The device: its YAMLs do not name the chip: the 910B of the Atlas 800T A2 is assumed and said so (an A3's 910C
  // is -H ascend-910c).
  // MindSpore Transformers runs on Ascend only (its template's own comment on device_target): a YAML that states no
  // target is an Ascend job too.
  const std::string stated = t.text("context.device_target").value_or("Ascend");
  const std::string target = io::lower(stated);
  if (target == "ascend") {
    set("hardware", "ascend-910b", "context.device_target: Ascend, or unstated (MindFormers runs on Ascend; priced as the 910B, -H ascend-910c for an A3)");
  } else if (target != "gpu" && target != "cpu") {
    fail(at(file, "context.device_target"), "'{}' is not Ascend, GPU or CPU", stated);
  }
  // The model.
  long long layers = 0;
  long long mtp = 0;
  bool mtp_in_split = false;
  // MindFormers 1.7's configs name the model's HuggingFace folder (pretrained_model_dir) and state only
  // MindFormers-specific keys in model_config: the folder's config.json defines it.
  // MindFormers lays the YAML's model_config over the config.json (models/build_config.py merge_model_config:
  // hf_dict.update(config_dict)): a key of the config.json, or one of the HuggingFace keys the json may leave out,
  // stated in the YAML wins.
  const auto dir = t.text("pretrained_model_dir");
  const bool has_json = dir && io::exists(*dir + "/config.json");
  if (dir && !has_json && !t.get("model.model_config.hidden_size")) {
    // (Every official fine-tune YAML ships a placeholder here.) --model names the model instead.
    out.model_error = fmt::format("{}: '{}' holds no config.json on this machine: point it at a folder that has the model's config.json, or give --model",
                                  at(file, "pretrained_model_dir"), *dir);
    if (const json* given = t.get("model.model_config"); given && given->is_object()) {
      for (const auto& [key, unused] : given->items()) t.use("model.model_config." + key);
    }
  } else if (has_json) {
    const std::string config = *dir + "/config.json";
    json merged = io::read_tree(config);
    std::vector<std::string> laid;
    if (const json* given = t.get("model.model_config"); given && given->is_object()) {
      static const std::set<std::string> also = {"num_experts",        "n_routed_experts",      "num_experts_per_tok",      "moe_intermediate_size",
                                                 "n_shared_experts",   "first_k_dense_replace", "num_nextn_predict_layers", "head_dim",
                                                 "num_key_value_heads"};
      for (const auto& [key, value] : given->items()) {
        t.use("model.model_config." + key);
        if (merged.contains(key) ? merged.at(key) != value : also.count(key) > 0) {
          merged[key] = value;
          laid.push_back(key);
        }
      }
    }
    if (laid.empty()) {
      set("model", config, "pretrained_model_dir");
    } else {
      merged["_source"] = fmt::format("{} with {} from {}", config, fmt::join(laid, ", "), file);
      out.model_config = merged;
      set("model", file, fmt::format("pretrained_model_dir with model.model_config.{}", fmt::join(laid, ", model.model_config.")));
    }
    layers = model::load_model(config, io::data_dir()).num_layers;
    if (merged.contains("num_hidden_layers") && merged.at("num_hidden_layers").is_number_integer()) layers = merged.at("num_hidden_layers").get<long long>();
  } else {
    out.model_config = model_of(t, file, layers, mtp, mtp_in_split);
    set("model", file, "model.model_config");
  }
  // Parameter-efficient fine-tuning: LoRA adapters (pet_config), the base weights frozen.
  if (auto pet = t.text("model.model_config.pet_config.pet_type")) {
    if (io::lower(*pet) == "lora") {
      if (auto rank = t.whole("model.model_config.pet_config.lora_rank")) set("lora_rank", *rank, "model.model_config.pet_config.lora_rank");
      if (auto targets = t.text("model.model_config.pet_config.target_modules"))
        out.warnings.push_back(
            fmt::format("pet_config LoRA on target_modules '{}' is priced as adapters on every linear layer (the base weights frozen alike)", *targets));
    } else {
      out.warnings.push_back(fmt::format("pet_config pet_type {} is not priced (every weight trains)", *pet));
    }
  }
  // Experts' tensor parallelism. Legacy MoE (experts in moe_config.expert_num): moe_config.expert_model_parallel
  // (1 or model_parallel); unset, every expert's weights are sharded over model_parallel as well as over
  // expert_parallel (strategy (ep, 1, mp) in mindformers/modules/transformer/transformer.py's FeedForward, mp_moe in
  // models/llama/llama_layer.py). The mcore models (experts in model_config.num_experts) default to 1
  // (parallel_core's expert_tensor_parallel_size).
  const json* legacy_experts = t.get("moe_config.expert_num");
  if (t.flag("moe_config.ep_extend_tp").value_or(false) && tp > 1) {
    // TeleChat2's ep_extend_tp (research/telechat2/telechat_transformer.py): the experts' strategy multiplies
    // expert_parallel by model_parallel and keeps each expert whole (expert TP 1), as MindSpeed's --moe-tp-extend-ep.
    set("ep", ep * tp, "parallel_config.expert_parallel x model_parallel (moe_config.ep_extend_tp)");
    set("etp", 1, "moe_config.ep_extend_tp");
  } else if (auto etp = t.whole("moe_config.expert_model_parallel")) {
    set("etp", *etp, "moe_config.expert_model_parallel");
  } else if (legacy_experts && legacy_experts->is_number_integer() && legacy_experts->get<long long>() > 1 && tp > 1) {
    set("etp", tp, "moe_config.expert_model_parallel unset: each expert is sharded over model_parallel");
  }
  // Layer placement.
  bool interleave_on = t.flag("parallel.pipeline_config.pipeline_interleave").value_or(false);
  long long vpp = t.whole("model.model_config.pp_interleave_num").value_or(1);
  if (!interleave_on) vpp = 1;
  if (pp == 1) vpp = 1;
  set("vpp", vpp, "model.model_config.pp_interleave_num");
  // MindSpore's schedulers beyond 1F1B take effect under pipeline_interleave (its pipeline_config): seqpipe splits
  // each micro-batch into parallel_config.seq_split_num segments (the reference planner reads it the same way).
  std::string scheduler = t.text("parallel.pipeline_config.pipeline_scheduler").value_or("1f1b");
  const long long segments = t.whole("parallel_config.seq_split_num").value_or(1);
  // seqvpp / seqsmartvpp are its interleaved variants; zero_bubble_v is DualPipe-V's V (the reference planner
  // prices it so: docs/reference-planner.md).
  const bool sequence_pipeline = scheduler == "seqpipe" || scheduler == "seqvpp" || scheduler == "seqsmartvpp";
  if (sequence_pipeline && interleave_on && pp > 1 && segments > 1) {
    set("seq_split", segments, fmt::format("parallel.pipeline_config.pipeline_scheduler {}, parallel_config.seq_split_num", scheduler));
  } else if (scheduler == "zero_bubble_v" && interleave_on && pp > 1) {
    set("dualpipe_v", true, "parallel.pipeline_config.pipeline_scheduler zero_bubble_v");
  } else if (scheduler != "1f1b") {
    out.warnings.push_back(fmt::format("pipeline_scheduler {} is priced as (interleaved) 1F1B", scheduler));
  }
  long long placed = layers + (mtp_in_split ? mtp : 0);
  const json* offset = t.get("model.model_config.offset");
  const json* full = t.get("recompute_config.recompute");
  if (!full) full = t.get("parallel_config.recompute");
  const json* sel = t.get("recompute_config.select_recompute");
  const json* comm = t.get("recompute_config.select_comm_recompute");
  auto per_layer = [](const json* v) { return v != nullptr && (v->is_array() && !(!v->empty() && v->front().is_string())); };
  if (layers == 0 && (offset || per_layer(full) || per_layer(sel))) {
    // The model is --model's (pretrained_model_dir has no config.json here): per-stage counts of a model whose layer
    // count the file does not give cannot be checked; the even split of --model's layers is priced.
    out.warnings.push_back(
        "model_config.offset and per-stage recompute lists are not read without the model's config.json: the even split of "
        "--model's layers is priced, without those lists' recompute");
    offset = nullptr;
    if (per_layer(full)) full = nullptr;
    if (per_layer(sel)) sel = nullptr;
  }
  plan::ChunkCounts split_layers =
      offset_layers(placed, static_cast<int>(pp), static_cast<int>(vpp), offset ? *offset : json(), at(file, "model.model_config.offset"));
  bool uneven = plan::even_split(placed, static_cast<int>(pp), static_cast<int>(vpp)).layers != split_layers || mtp_in_split;
  plan::StageSplit split;
  split.layers = split_layers;
  if (per_layer(full) || per_layer(sel)) {
    split.full = full ? recompute_layers(split.layers, *full, at(file, "recompute_config.recompute")) : plan::ChunkCounts{};
    plan::ChunkCounts s = sel && (sel->is_boolean() || per_layer(sel)) ? recompute_layers(split.layers, *sel, at(file, "recompute_config.select_recompute"))
                                                                       : plan::ChunkCounts{};
    if (sel && sel->is_object()) s = recompute_layers(split.layers, true, at(file, "recompute_config.select_recompute"));
    bool any = false;
    for (const auto& row : s)
      for (long long c : row) any = any || c > 0;
    if (any) {
      // Selective applies to the first n layers of a block; the fully recomputed ones among them stay full.
      for (std::size_t c = 0; c < s.size(); ++c)
        for (std::size_t j = 0; j < s[c].size(); ++j) s[c][j] = std::max(0LL, s[c][j] - (split.full.empty() ? 0 : split.full[c][j]));
      split.selective = s;
    }
    if (split.full.empty()) split.full = plan::ChunkCounts(split.layers.size(), std::vector<long long>(split.layers.front().size(), 0));
    set("recompute", "off", "recompute_config (per stage)");
    uneven = true;
  } else {
    bool f = full && full->is_boolean() && full->get<bool>();
    bool s = sel && ((sel->is_boolean() && sel->get<bool>()) || sel->is_object() || (sel->is_array() && !sel->empty()));
    if (sel && (sel->is_object() || sel->is_array())) out.warnings.push_back("select_recompute op patterns are priced as sapp's selective recompute");
    set("recompute", f ? "full" : s ? "selective" : "off", f ? "recompute_config.recompute" : "recompute_config.select_recompute");
  }
  if (comm && !(comm->is_boolean() && !comm->get<bool>())) {
    out.warnings.push_back("select_comm_recompute (norm communication recompute) is not priced: those layers keep their activations");
  }
  if (mtp_in_split) {
    // The MTP layers sit in the last block of the last stage; sapp places them there itself.
    auto& last = split.layers.back().back();
    if (last < mtp) fail(at(file, "model.model_config.offset"), "leaves the last stage {} layers, fewer than its {} MTP layer(s)", last, mtp);
    last -= mtp;
    for (auto* counts : {&split.full, &split.selective}) {
      if (!counts->empty()) counts->back().back() = std::min(counts->back().back(), last);
    }
  }
  if (uneven) out.split = split;
  // MindFormers' run modes: train, finetune (training) and predict / eval (no backward, no optimizer).
  if (auto mode = t.text("run_mode"); mode && *mode != "train" && *mode != "finetune") {
    out.warnings.push_back(
        fmt::format("run_mode '{}' is not training: sapp prices training of this model and layout (gradients, optimizer states, "
                    "activations kept for the backward), not the {} job this file describes",
                    *mode, *mode));
  }
  // Keys that do not change the estimate, read so they are not listed as unused.
  for (const char* used : {"model.model_config.type", "model.model_config.batch_size", "parallel_config.vocab_emb_dp", "use_parallel", "run_mode",
                           "parallel.parallel_mode", "parallel.full_batch", "parallel.dataset_strategy", "parallel.pipeline_config"})
    t.use(used);
  out.unused = t.unused();
  return out;
}

std::string emit_mindformers(const Plan& plan, const Loaded* original, const std::string& model_name) {
  const plan::Layout& l = plan.layout;
  // What the file states, so that keys the plan leaves as they were are not rewritten.
  const json stated = original ? io::parse_yaml(original->text, original->file) : json::object();
  auto value_at = [&](const std::string& path) {
    const json* v = stated_at(stated, path);
    return v ? *v : json();
  };
  std::string text;
  if (original) {
    text = original->text;
  } else {
    text =
        fmt::format("# MindFormers training config for {} on {} devices, written by sapp.\nrun_mode: 'train'\nuse_parallel: True\n", model_name, plan.devices);
    if (plan.model) {
      const model::ModelSpec& m = *plan.model;
      text += "model:\n  model_config:\n";
      text += fmt::format("    model_type: \"{}\"\n", m.model_type);
      text += fmt::format("    num_hidden_layers: {}\n    hidden_size: {}\n    num_attention_heads: {}\n", m.num_layers, m.hidden_size, m.num_heads);
      if (m.num_kv_heads) text += fmt::format("    num_key_value_heads: {}\n", *m.num_kv_heads);
      if (m.head_dim) text += fmt::format("    head_dim: {}\n", *m.head_dim);
      if (m.intermediate_size) text += fmt::format("    intermediate_size: {}\n", *m.intermediate_size);
      text += fmt::format("    vocab_size: {}\n", m.vocab_size);
      if (m.is_moe()) {
        text += fmt::format("    num_experts: {}\n    num_experts_per_tok: {}\n    moe_intermediate_size: {}\n", *m.num_experts,
                            m.experts_per_token.value_or(1), m.routed_expert_width());
        if (m.first_k_dense) text += fmt::format("    first_k_dense_replace: {}\n", *m.first_k_dense);
        // The shared experts (they were left out: DeepSeek-V3 read back 2.6 B parameters short).
        if (m.shared_expert_intermediate_size)
          text += fmt::format("    moe_shared_expert_intermediate_size: {}\n", *m.shared_expert_intermediate_size);
        else if (m.num_shared_experts.value_or(0) > 0)
          text += fmt::format("    n_shared_experts: {}\n", *m.num_shared_experts);
      }
      if (m.is_mla()) {
        text += fmt::format("    kv_lora_rank: {}\n    qk_rope_head_dim: {}\n    qk_nope_head_dim: {}\n    v_head_dim: {}\n", *m.kv_lora_rank,
                            *m.qk_rope_head_dim, *m.qk_nope_head_dim, *m.v_head_dim);
        if (m.q_lora_rank) text += fmt::format("    q_lora_rank: {}\n", *m.q_lora_rank);
        if (m.indexer) {
          text += fmt::format("    index_n_heads: {}\n    index_head_dim: {}\n    index_topk: {}\n", m.indexer->heads, m.indexer->head_dim, m.indexer->topk);
        }
      }
      if (m.mtp_depth.value_or(0) > 0) text += fmt::format("    mtp_depth: {}\n", *m.mtp_depth);
      text += fmt::format("    tie_word_embeddings: {}\n", m.tie_word_embeddings ? "True" : "False");
      if (plan.qkv_bias) text += "    qkv_has_bias: True\n";
      if (m.qk_norm.value_or(false)) text += "    use_qk_norm: True\n";
      if (plan.dropout > 0) text += fmt::format("    hidden_dropout: {}\n    attention_dropout: {}\n", plan.dropout, plan.dropout);
      // What else shapes the layers, under the HuggingFace names MindFormers lays over a config.json
      // (models/build_config.py merge_model_config), which model_of reads back (kHuggingFaceLayerKeys).
      if (!m.layer_types.empty()) text += fmt::format("    layer_types: [{}]\n", fmt::join(m.layer_types, ", "));
      if (m.sliding_window) text += fmt::format("    sliding_window: {}\n", *m.sliding_window);
      if (m.attention_period) text += fmt::format("    full_attention_interval: {}\n", *m.attention_period);
      if (m.attention_chunk) text += fmt::format("    attention_chunk_size: {}\n", *m.attention_chunk);
      if (m.linear) {
        text += fmt::format(
            "    linear_num_key_heads: {}\n    linear_key_head_dim: {}\n    linear_num_value_heads: {}\n    linear_value_head_dim: {}\n    "
            "linear_conv_kernel_dim: {}\n",
            m.linear->num_key_heads, m.linear->key_head_dim, m.linear->num_value_heads, m.linear->value_head_dim, m.linear->conv_kernel_dim);
      }
      if (!m.mlp_only_layers.empty()) text += fmt::format("    mlp_only_layers: [{}]\n", fmt::join(m.mlp_only_layers, ", "));
      if (m.moe_layer_step) text += fmt::format("    decoder_sparse_step: {}\n", *m.moe_layer_step);
    }
  }
  long long steps = plan.global_batch / (1LL * l.dp * l.mbs);
  // A file with ep_extend_tp states EP / TP (the experts' strategy multiplies it back): kept where the plan's EP is
  // such a multiple with whole experts, switched off otherwise.
  const bool extend = original && original->origin.count("etp") && original->origin.at("etp") == "moe_config.ep_extend_tp";
  const bool keep_extend = extend && l.tp > 1 && l.etp == 1 && l.ep % l.tp == 0;
  if (extend && !keep_extend) text = yaml_set(text, "moe_config.ep_extend_tp", "False");
  text = yaml_set_all(text, {
                                {"parallel_config.data_parallel", std::to_string(l.dp)},
                                {"parallel_config.model_parallel", std::to_string(l.tp)},
                                {"parallel_config.pipeline_stage", std::to_string(l.pp)},
                                {"parallel_config.context_parallel", std::to_string(l.cp)},
                                {"parallel_config.expert_parallel", std::to_string(keep_extend ? l.ep / l.tp : l.ep)},
                            });
  // With TP 1 sequence parallelism is no layout of its own: the file's switch stays as stated.
  if (l.tp > 1 || value_at("parallel_config.use_seq_parallel").is_null()) text = yaml_set(text, "parallel_config.use_seq_parallel", l.sp ? "True" : "False");
  if (l.cp > 1) text = yaml_set(text, "parallel_config.context_parallel_algo", l.cp_algo == plan::CpAlgo::AllToAll ? "\"ulysses_cp\"" : "\"colossalai_cp\"");
  text = yaml_set(text, "runner_config.batch_size", std::to_string(l.mbs));
  text = yaml_set(text, "model.model_config.seq_length", std::to_string(plan.seq));
  if (l.pp > 1) {
    text = yaml_set(text, "parallel_config.micro_batch_num", std::to_string(steps));
    if (original && original->values.contains("global_batch")) text = yaml_set(text, "runner_config.gradient_accumulation_steps", "1");
  } else {
    text = yaml_set(text, "parallel_config.micro_batch_num", "1");
    text = yaml_set(text, "runner_config.gradient_accumulation_steps", std::to_string(steps));
  }
  text = yaml_set(text, "micro_batch_interleave_num", "1");
  text = yaml_set(text, "parallel.enable_parallel_optimizer", l.zero >= 3 ? "True" : "False");
  if (!keep_extend && (l.etp > 1 || (original && original->values.contains("etp"))))
    text = yaml_set(text, "moe_config.expert_model_parallel", std::to_string(l.etp));
  // Placement: MindFormers' offsets (they sum to num_layers % (pp x interleave)), per chunk when interleaved.
  bool legacy_mtp = false;
  long long mtp = plan.model ? plan.model->mtp_depth.value_or(0) : 0;
  if (original && original->model_config.is_object()) {
    // The legacy DeepSeek-V3 configuration counts MTP layers in its split (read back the same way).
    const json type = value_at("model.model_config.type");
    std::string cls = type.is_string() ? io::lower(type.get<std::string>()) : "";
    legacy_mtp = cls.find("deepseekv3") != std::string::npos && mtp > 0;
  }
  if (l.pp > 1) {
    // pipeline_interleave also switches MindSpore's other schedulers (seqpipe, zero_bubble_v): kept True where the
    // file states it, and set for them.
    const bool other_scheduler = plan.dualpipe_v || plan.seq_split > 1;
    if (l.vpp > 1 || other_scheduler || value_at("parallel.pipeline_config.pipeline_interleave") != json(true))
      text = yaml_set(text, "parallel.pipeline_config.pipeline_interleave", l.vpp > 1 || other_scheduler ? "True" : "False");
    text = yaml_set(text, "model.model_config.pp_interleave_num", std::to_string(l.vpp));
    // The schedule: zero_bubble_v for a DualPipe-V plan; seqpipe (seqvpp interleaved, a stated seqsmartvpp kept)
    // with seq_split_num segments for a sequence pipeline; another plan sets a stated one back to 1f1b.
    const json scheduler = value_at("parallel.pipeline_config.pipeline_scheduler");
    const bool stated_other = scheduler.is_string() && scheduler != json("1f1b");
    if (plan.dualpipe_v) {
      text = yaml_set(text, "parallel.pipeline_config.pipeline_scheduler", "\"zero_bubble_v\"");
    } else if (plan.seq_split > 1) {
      const bool smart = scheduler == json("seqsmartvpp") && l.vpp > 1;
      text = yaml_set(text, "parallel.pipeline_config.pipeline_scheduler", smart ? "\"seqsmartvpp\"" : l.vpp > 1 ? "\"seqvpp\"" : "\"seqpipe\"");
      text = yaml_set(text, "parallel_config.seq_split_num", std::to_string(plan.seq_split));
    } else if (stated_other) {
      text = yaml_set(text, "parallel.pipeline_config.pipeline_scheduler", "\"1f1b\"");
    }
  }
  // Offsets per chunk and physical stage (a DualPipe-V chunk 1 placed back up).
  plan::StageSplit split = placed_split(plan);
  plan::ChunkCounts placed = split.layers;
  if (legacy_mtp) placed.back().back() += mtp;
  long long total = 0;
  for (const auto& row : placed)
    for (long long c : row) total += c;
  long long chunks = 1LL * l.pp * l.vpp;
  long long base = total / chunks;
  json offset = json::array();
  for (const auto& row : placed) {
    json r = json::array();
    for (long long c : row) r.push_back(c - base);
    offset.push_back(r);
  }
  text = yaml_set(text, "model.model_config.offset", flow(l.vpp > 1 ? offset : offset[0]));
  // Recompute: counts per chunk and stage; selective counts cover the fully recomputed layers too.
  if (split.states_recompute()) {
    json full = json::array();
    json sel = json::array();
    for (std::size_t c = 0; c < split.layers.size(); ++c) {
      json fr = json::array();
      json sr = json::array();
      for (std::size_t s = 0; s < split.layers[c].size(); ++s) {
        long long f = split.full.empty() ? 0 : split.full[c][s];
        long long se = split.selective.empty() ? 0 : split.selective[c][s];
        fr.push_back(f);
        sr.push_back(se > 0 ? f + se : 0);
      }
      full.push_back(fr);
      sel.push_back(sr);
    }
    text = yaml_set(text, "recompute_config.recompute", flow(l.vpp > 1 ? full : full[0]));
    text = yaml_set(text, "recompute_config.select_recompute", split.selective.empty() ? "False" : flow(l.vpp > 1 ? sel : sel[0]));
  } else {
    text = yaml_set(text, "recompute_config.recompute", l.recompute == plan::Recompute::Full ? "True" : "False");
    // A selective plan keeps the file's own op patterns (a dict of patterns: MindFormers' True means its defaults).
    if (l.recompute != plan::Recompute::Selective || !value_at("recompute_config.select_recompute").is_object())
      text = yaml_set(text, "recompute_config.select_recompute", l.recompute == plan::Recompute::Selective ? "True" : "False");
  }
  // select_comm_recompute (not priced) per stage: a list of another pipeline's shape is switched off, not left for
  // MindFormers to index out of range.
  if (const json comm = value_at("recompute_config.select_comm_recompute"); comm.is_array()) {
    const bool shaped = l.vpp > 1
                            ? comm.size() == static_cast<std::size_t>(l.vpp) && comm.front().is_array() && comm.front().size() == static_cast<std::size_t>(l.pp)
                            : comm.size() == static_cast<std::size_t>(l.pp) && !comm.front().is_array();
    if (!shaped) text = yaml_set(text, "recompute_config.select_comm_recompute", "False");
  }
  return text;
}

}  // namespace sapp::config::detail
