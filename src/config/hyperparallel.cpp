// config/hyperparallel: the reference planner's (HyperParallel) train YAML, current ("AutoModels") and legacy
// layouts, and its search-config YAML (cluster, parallelism with an int, a list or auto per dimension,
// constraint, recompute, pp_config). Key meanings restated in docs/configs.md.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "model/model_spec.hpp"

namespace sapp::config::detail {

namespace {

// Canonical HyperParallel model field names and the HuggingFace keys model_from_json reads.
const std::vector<std::pair<std::string, std::string>>& canonical() {
  static const std::vector<std::pair<std::string, std::string>> names = {{"hidden_size", "hidden_size"},
                                                                         {"num_hidden_layers", "num_hidden_layers"},
                                                                         {"num_attention_heads", "num_attention_heads"},
                                                                         {"num_key_value_heads", "num_key_value_heads"},
                                                                         {"head_dim", "head_dim"},
                                                                         {"intermediate_size", "intermediate_size"},
                                                                         {"vocab_size", "vocab_size"},
                                                                         {"max_position_embeddings", "max_position_embeddings"},
                                                                         {"num_experts", "num_experts"},
                                                                         {"n_routed_experts", "num_experts"},
                                                                         {"num_experts_per_tok", "num_experts_per_tok"},
                                                                         {"num_shared_experts", "n_shared_experts"},
                                                                         {"n_shared_experts", "n_shared_experts"},
                                                                         {"moe_intermediate_size", "moe_intermediate_size"},
                                                                         {"shared_expert_intermediate_size", "shared_expert_intermediate_size"},
                                                                         {"first_k_dense_replace", "first_k_dense_replace"},
                                                                         {"mtp_depth", "num_nextn_predict_layers"},
                                                                         {"num_nextn_predict_layers", "num_nextn_predict_layers"},
                                                                         {"kv_lora_rank", "kv_lora_rank"},
                                                                         {"q_lora_rank", "q_lora_rank"},
                                                                         {"qk_rope_head_dim", "qk_rope_head_dim"},
                                                                         {"v_head_dim", "v_head_dim"},
                                                                         {"qk_nope_head_dim", "qk_nope_head_dim"},
                                                                         {"tie_word_embeddings", "tie_word_embeddings"},
                                                                         {"qk_norm", "qk_norm"},
                                                                         {"model_type", "model_type"},
                                                                         {"layer_types", "layer_types"},
                                                                         {"attn_output_gate", "attn_output_gate"},
                                                                         {"linear_num_key_heads", "linear_num_key_heads"},
                                                                         {"linear_key_head_dim", "linear_key_head_dim"},
                                                                         {"linear_num_value_heads", "linear_num_value_heads"},
                                                                         {"linear_value_head_dim", "linear_value_head_dim"},
                                                                         {"linear_conv_kernel_dim", "linear_conv_kernel_dim"},
                                                                         {"dim", "hidden_size"},
                                                                         {"n_layers", "num_hidden_layers"},
                                                                         {"n_heads", "num_attention_heads"},
                                                                         {"n_kv_heads", "num_key_value_heads"},
                                                                         {"inter_dim", "intermediate_size"},
                                                                         {"moe_inter_dim", "moe_intermediate_size"},
                                                                         {"sliding_window", "sliding_window"},
                                                                         {"full_attention_interval", "full_attention_interval"},
                                                                         {"attention_bias", "attention_bias"},
                                                                         {"attention_dropout", "attention_dropout"},
                                                                         {"hidden_dropout", "hidden_dropout"},
                                                                         {"num_local_experts", "num_experts"},
                                                                         {"experts_per_token", "num_experts_per_tok"},
                                                                         {"interleave_moe_layer_step", "interleave_moe_layer_step"},
                                                                         {"intermediate_size_mlp", "intermediate_size_mlp"},
                                                                         {"name", "name"}};
  return names;
}

// Model fields stated under the prefixes (later ones winning), as HuggingFace keys; an empty object when none is.
json stated_model_fields(Tree& t, const std::vector<std::string>& prefixes) {
  json m = json::object();
  for (const std::string& prefix : prefixes) {
    for (const auto& [name, hf] : canonical()) {
      if (const json* v = t.get(prefix + "." + name)) m[hf] = *v;
    }
  }
  return m;
}

// Model fields stated under `prefix` (direct keys, then config_overrides winning); empty when none define a model.
json model_fields(Tree& t, const std::vector<std::string>& prefixes, std::vector<std::string>* warnings = nullptr) {
  json m = stated_model_fields(t, prefixes);
  if (!m.contains("hidden_size")) return json();
  if (m.contains("kv_lora_rank") && !m.contains("qk_nope_head_dim") && m.contains("v_head_dim")) {
    // HyperParallel's planner takes an MLA head's non-rotary width as qk_nope_head_dim, else its head dimension
    // (v_head_dim when stated): 128 for DeepSeek-V2/V3, whose search examples leave it out.
    m["qk_nope_head_dim"] = m["v_head_dim"];
    if (warnings)
      warnings->push_back(
          fmt::format("an MLA model without qk_nope_head_dim: taken as v_head_dim {}, as HyperParallel's planner does", m["v_head_dim"].dump()));
  }
  if (!m.contains("model_type")) {
    m["model_type"] = m.contains("kv_lora_rank")  ? "deepseek_v3"
                      : m.contains("num_experts") ? (m.value("qk_norm", false) ? "qwen3_moe" : "mixtral")
                      : m.value("qk_norm", false) ? "qwen3"
                                                  : "llama";
  }
  return m;
}

void stage_split(Tree& t, Loaded& out, const std::string& prefix, long long layers, int pp, int vpp) {
  const json* offset = t.get(prefix + ".offset");
  const json* full = t.get(prefix + ".full_rec");
  const json* sel = t.get(prefix + ".sel_rec");
  if (!offset && !full && !sel) return;
  plan::StageSplit split;
  split.layers = offset_layers(layers, pp, vpp, offset ? *offset : json(), at(t.file, prefix + ".offset"));
  if (full) split.full = recompute_layers(split.layers, *full, at(t.file, prefix + ".full_rec"));
  if (sel) {
    split.selective = recompute_layers(split.layers, *sel, at(t.file, prefix + ".sel_rec"));
    for (std::size_t c = 0; c < split.selective.size(); ++c)
      for (std::size_t s = 0; s < split.selective[c].size(); ++s)
        split.selective[c][s] = std::max(0LL, split.selective[c][s] - (split.full.empty() ? 0 : split.full[c][s]));
  }
  out.split = split;
}

// Training-state bytes per parameter as HyperParallel's trainer holds them (the hyperparallel profile's source):
// the shards in the stored dtype S (model_init_dtype, else model.torch_dtype, else model.param_init_type; fp32 when
// none is stated, as torch creates parameters), gathered in mix_precision.param_dtype (else S); each reduced
// gradient kept in S; AdamW's two moments (Muon's one) zeros_like the gradient, in S. optimizer.fp32_main_params
// adds an fp32 main copy of a narrower parameter and keeps fp32 states and main gradients (the trainer requires
// reduce_dtype float32 with it).
void train_state_bytes(Tree& t, Loaded& out) {
  auto set = setter(out);
  double stored = 4;
  std::string stored_from = "fp32: no model_init_dtype, model.torch_dtype or model.param_init_type";
  for (const char* key : {"model_init_dtype", "model.torch_dtype", "model.param_init_type"}) {
    auto dt = t.text(key);
    if (!dt || *dt == "auto") continue;
    stored = dtype_bytes(*dt, at(t.file, key));
    stored_from = key;
    break;
  }
  if (auto td = t.text("model.torch_dtype"); td && *td == "auto" && stored_from.rfind("fp32", 0) == 0)
    out.warnings.push_back(
        "model.torch_dtype: auto loads the checkpoint's dtype, which sapp does not open; the parameters are priced as fp32 (state model_init_dtype)");
  const bool fp32_main = t.flag("optimizer.fp32_main_params").value_or(false);
  const std::string target = io::lower(t.text("optimizer._target_").value_or(""));
  const double states = target.find("muon") != std::string::npos ? 1 : 2;
  set("param_bytes", stored, stored_from);
  set("grad_bytes", fp32_main ? 4.0 : stored, fp32_main ? "optimizer.fp32_main_params (fp32 main gradients)" : stored_from + " (gradients as stored)");
  set("optimizer_bytes", states * (fp32_main ? 4.0 : stored) + (fp32_main && stored < 4 ? 4.0 : 0.0),
      fmt::format("{} state{} {}{}", states, states > 1 ? "s" : "", fp32_main ? "in fp32" : "as the gradient",
                  fp32_main && stored < 4 ? " + an fp32 main copy (optimizer.fp32_main_params)" : ""));
  double gather = stored;
  if (auto dt = t.text("fsdp_config.mix_precision.param_dtype")) {
    gather = dtype_bytes(*dt, at(t.file, "fsdp_config.mix_precision.param_dtype"));
    if (gather != stored) set("gather_bytes", gather, "fsdp_config.mix_precision.param_dtype");
  }
  // The gradients are reduced in mix_precision.reduce_dtype, unset: as the backward produced them, in the gathered
  // dtype (hyper_parallel/core/fully_shard/hsdp_grad_hook.py at fdd0a80 casts only when it is set, as FSDP2's
  // MixedPrecisionPolicy), and kept as stored.
  const std::string reduce_key = "fsdp_config.mix_precision.reduce_dtype";
  const double reduce = t.text(reduce_key) ? dtype_bytes(*t.text(reduce_key), at(t.file, reduce_key)) : gather;
  if (reduce != (fp32_main ? 4.0 : stored))
    set("reduce_bytes", reduce, t.text(reduce_key) ? reduce_key : "fsdp_config.mix_precision.param_dtype (reduce_dtype unset)");
  t.use("optimizer._target_");
}

// The legacy layout (train.accelerator.*, MindSpore's parallel optimizer or the torch backend): a train.accelerator section
// without a top-level one, or none of the current layout's sections.
bool legacy_tree(const json& tree) {
  if (tree.contains("train") && tree["train"].is_object() && tree["train"].contains("accelerator") && !tree.contains("accelerator")) return true;
  return !(tree.contains("accelerator") || tree.contains("fsdp_config") || tree.contains("training") ||
           (tree.contains("model") && tree["model"].is_object() && tree["model"].contains("pretrained_model_name_or_path")));
}

}  // namespace

Loaded read_hyperparallel(const json& tree, const std::string& file) {
  Tree t{tree, file, {}};
  Loaded out;
  auto set = setter(out);
  const bool legacy = legacy_tree(tree);
  std::string acc = legacy ? "train.accelerator" : "accelerator";
  // A degree under the accelerator section: one key in the current layout; in the legacy layout its long name or
  // the short one (tp, pp, cp, ep, etp) of the three-tier examples.
  auto deg = [&](const char* legacy_key, const char* short_key, const char* key, std::string& from) {
    if (!legacy) {
      from = acc + "." + key;
      return t.whole(from).value_or(1);
    }
    const std::string long_name = acc + "." + legacy_key, short_name = acc + "." + short_key;
    auto v = t.whole_of({long_name.c_str(), short_name.c_str()}, from);
    if (from.empty()) from = long_name;
    return v.value_or(1);
  };
  std::string tp_from, pp_from, cp_from, ep_from, etp_from, rep_from;
  long long tp = deg("tp_degree", "tp", "tp_size", tp_from);
  long long pp = deg("pipeline_parallel_degree", "pp", "pp_size", pp_from);
  long long cp = deg("context_parallel_degree", "cp", "cp_size", cp_from);
  long long ep = deg("expert_parallel_degree", "ep", "ep_size", ep_from);
  long long etp = deg("expert_tensor_parallel_degree", "etp", "etp_size", etp_from);
  const std::string replicate = acc + ".dp_replicate", replicate_size = acc + ".dp_replicate_size";
  long long rep = t.whole_of({replicate.c_str(), replicate_size.c_str()}, rep_from).value_or(1);
  const bool rep_stated = !rep_from.empty();
  if (!rep_stated) rep_from = replicate;
  // dp_shard: fsdp_config.dp_shard_size, or accelerator.dp_shard_size in the training-skeleton schema; -1 takes the
  // data-parallel ranks the world size leaves.
  std::string shard_from = legacy ? "train.accelerator.dp_shard" : "fsdp_config.dp_shard_size";
  long long shard =
      legacy ? t.whole(shard_from, -1).value_or(1) : t.whole_of({"fsdp_config.dp_shard_size", "accelerator.dp_shard_size"}, shard_from, -1).value_or(1);
  if (shard == 0) t.bad(shard_from, "0 is not a shard degree (1 or more, or -1 for what the world size leaves)");
  const bool shard_from_world = shard == -1;
  if (shard_from_world && rep > 1)
    t.bad(shard_from, fmt::format("-1 with {} {}: the shard group then follows from the world size; state dp_shard as a number", rep_from, rep));
  long long dp = rep * shard;
  if (shard_from_world) {
    out.devices_hint = fmt::format("{} -1 takes the data-parallel ranks the world size leaves", shard_from);
    dp = 0;  // from the devices the command line gives
  } else if (legacy) {
    set("devices", dp * tp * pp * cp, fmt::format("{} x {} x {} x {} x {}", rep_from, shard_from, tp_from, pp_from, cp_from));
  } else if (!rep_stated && (dp * tp) % (ep * etp) != 0) {
    // Experts are carved out of DP x CP x TP: a file whose dp_shard x TP cannot hold them runs on more devices, the
    // replicas (dp_replicate, unstated) following from the world size.
    out.devices_hint = fmt::format(
        "{} x {} = {} cannot hold {} x {} = {} (experts are carved out of DP x CP x TP); {} is unstated and "
        "follows from the world size",
        shard_from, tp_from, dp * tp, ep_from, etp_from, ep * etp, rep_from);
    dp = 0;
  } else if (dp % cp == 0) {
    // The trainer's mesh folds CP into the FSDP dimensions: dp_replicate x dp_shard = DP x CP, world = that x TP x PP
    // (hyper_parallel/distributed/mesh.py build_meshs; dp_replicate defaults to DP x CP / dp_shard from the world).
    dp /= cp;
    set("devices", rep * shard * tp * pp, fmt::format("{} x {} x {} x {}", rep_from, shard_from, tp_from, pp_from));
  } else {
    out.devices_hint = fmt::format(
        "{} x {} = {} is not a multiple of {} {} (the trainer's mesh has dp_replicate x dp_shard = DP x CP, "
        "dp_replicate following from the world size)",
        rep_from, shard_from, rep * shard, cp_from, cp);
    dp = 0;  // from the devices the command line gives
  }
  set("tp", tp, tp_from);
  set("pp", pp, pp_from);
  set("cp", cp, cp_from);
  set("ep", ep, ep_from);
  set("etp", etp, etp_from);
  // FSDP shards parameters, gradients and optimizer states over dp_shard (ZeRO-3). The legacy layout hands its
  // keys to MindSpore's parallel optimizer (enable_parallel_optimizer, optimizer_weight_shard_size,
  // gradient_accumulation_shard are set_auto_parallel_context's), which slices weights and optimizer states: ZeRO-3 as
  // MindSpore runs it, in the MindSpore runtime profile (plan::Training::zero3_gathers_once_per_step); the reference
  // planner prices it alike (its shard_p_os_non_exp = d x cp x t).
  // A legacy layout whose train.backend is torch runs HyperParallel's PyTorch trainer (its fully_shard over
  // dp_shard: the hyperparallel profile, as the current layout); otherwise MindSpore.
  const bool legacy_torch = legacy && io::lower(t.text("train.backend").value_or("")) == "torch";
  if (legacy_torch) {
    set("framework", "hyperparallel", "train.backend torch (HyperParallel's PyTorch trainer and its fully_shard)");
    set("zero", shard > 1 || shard_from_world ? 3 : 0, "train.accelerator.dp_shard");
    if (auto dt = t.text("train.mixed_precision.param_dtype"); dt && t.flag("train.mixed_precision.enabled").value_or(true))
      set("gather_bytes", dtype_bytes(*dt, at(file, "train.mixed_precision.param_dtype")), "train.mixed_precision.param_dtype");
    bool sp = t.flag("train.accelerator.sequence_parallel").value_or(false);
    if (sp && tp > 1) set("sp", true, "train.accelerator.sequence_parallel");
  } else if (legacy) {
    bool op = t.flag("train.accelerator.enable_parallel_optimizer").value_or(true);
    set("zero", op && (dp > 1 || shard_from_world) ? 3 : 0, "train.accelerator.enable_parallel_optimizer");
    set("framework", "mindformers", "a HyperParallel legacy YAML (MindSpore's runtime and parallel optimizer)");
    if (auto s = t.whole("train.accelerator.optimizer_weight_shard_size", -1); s && *s > 0)
      set("optimizer_shard", *s, "train.accelerator.optimizer_weight_shard_size");
    bool sp = t.flag("train.accelerator.use_seq_parallel").value_or(t.flag("train.accelerator.sequence_parallel").value_or(false));
    if (sp && tp > 1) set("sp", true, "train.accelerator.use_seq_parallel");
  } else {
    set("framework", "hyperparallel", "a HyperParallel train YAML (its fully_shard and training state)");
    // reshard_after_forward false keeps each unit's gathered parameters from its forward to its backward, and
    // reshard_after_backward false from its backward to the next micro-batch's forward (the trainer's FSDP2Config,
    // both true by default): the parameters whole for the step, the gradients and optimizer states sharded (ZeRO-2,
    // as the AutoModel and torchtitan readers take it). Without a second micro-batch the second keeps nothing.
    const bool after_forward = !t.flag("fsdp_config.reshard_after_forward").value_or(true);
    const auto gbs_stated = t.whole("training.global_batch_size");
    const auto mbs_stated = t.whole("training.micro_batch_size");
    const bool several = !gbs_stated || dp == 0 || *gbs_stated > mbs_stated.value_or(1) * dp;
    const bool after_backward = !t.flag("fsdp_config.reshard_after_backward").value_or(true) && several;
    const bool keep_gathered = after_forward || after_backward;
    set("zero", shard > 1 || shard_from_world ? (keep_gathered ? 2 : 3) : 0,
        after_forward    ? "fsdp_config.reshard_after_forward"
        : after_backward ? "fsdp_config.reshard_after_backward (with several micro-batches)"
                         : "fsdp_config.dp_shard_size");
    if (auto lp = t.flag(acc + ".loss_parallel")) set("loss_parallel", *lp, acc + ".loss_parallel");
    // The trainer's AcceleratorConfig.sequence_parallel (default false): Megatron-style sequence parallelism with TP.
    if (auto sp = t.flag(acc + ".sequence_parallel")) set("sp", *sp && tp > 1, acc + ".sequence_parallel");
    // FSDP shards over dp_shard only, replicating over dp_replicate (HSDP): the ZeRO group is dp_shard whenever it
    // is narrower than DP x CP.
    if (shard > 1 && (rep > 1 || dp == 0)) set("optimizer_shard", shard, "fsdp_config.dp_shard_size (FSDP shards over dp_shard)");
  }
  // Interleaving: pp_interleave_num (legacy and earlier current layouts) or the trainer's AcceleratorConfig.pp_vpp.
  std::string vpp_from = acc + ".pp_interleave_num";
  long long vpp = legacy ? t.whole(vpp_from).value_or(1) : t.whole_of({"accelerator.pp_interleave_num", "accelerator.pp_vpp"}, vpp_from).value_or(1);
  set("vpp", vpp, vpp_from);
  if (cp > 1) {
    if (auto algo = t.text(acc + ".context_parallel_algo")) {
      set("cp_algo", *algo == "ulysses_cp" ? "all2all" : "ring", acc + ".context_parallel_algo");
    } else if (auto batch_algo = t.text("dataloader.get_batch.cp_algorithm")) {
      set("cp_algo", *batch_algo == "ulysses" ? "all2all" : "ring", "dataloader.get_batch.cp_algorithm");
    }
  }
  if (!legacy) {
    // AcceleratorConfig.pp_schedule: gpipe or 1f1b (default). GPipe runs every micro-batch's forward before any
    // backward, holding all of their activations: sapp's schedules are 1F1B's.
    if (auto schedule = t.text("accelerator.pp_schedule"); schedule && io::lower(*schedule) == "gpipe" && pp > 1)
      out.warnings.push_back(
          "accelerator.pp_schedule: gpipe is priced as 1F1B (sapp has no GPipe schedule): GPipe holds every micro-batch's activations, so its peak "
          "memory is above the estimate");
  }
  // Batch. The current trainer's pipeline states its micro-batches as accelerator.pp_micro_batch_num (global batch =
  // pp_micro_batch_num x micro_batch_size x DP; its TrainingConfig has no micro_batch_num).
  std::string batch = legacy ? "train" : "training";
  std::string gbs_from = batch + ".global_batch_size";
  std::string mbs_from = batch + ".micro_batch_size";
  if (!legacy && !t.get(gbs_from) && t.get("step_scheduler.global_batch_size")) {
    // The training-skeleton schema: step_scheduler.global_batch_size and local_batch_size (samples per
    // data-parallel rank and forward, as NeMo AutoModel's step scheduler, whose shape it follows).
    gbs_from = "step_scheduler.global_batch_size";
    mbs_from = "step_scheduler.local_batch_size";
  }
  auto gbs = t.whole(gbs_from);
  long long mbs = t.whole(mbs_from).value_or(t.whole("micro_batch_size").value_or(1));
  std::string m_from = batch + ".micro_batch_num";
  auto m = t.whole(m_from, 0);
  if (!m && pp > 1) {
    m_from = acc + ".pp_micro_batch_num";
    m = t.whole(m_from);
  }
  set("mbs", mbs, mbs_from);
  if (gbs) {
    set("global_batch", *gbs, gbs_from);
    if (m && *m > 0 && dp > 0 && *m * mbs * dp != *gbs) {
      fail(file, "{} = {} but {} x {} x DP = {} x {} x {} = {}", gbs_from, *gbs, m_from, mbs_from, *m, mbs, dp, *m * mbs * dp);
    }
  } else if (m && *m > 0 && dp > 0) {
    set("global_batch", *m * mbs * dp, m_from + " x micro_batch_size x DP");
  }
  // Recompute.
  std::string ac = legacy ? "train.gradient_checkpointing.activation_checkpoint" : "activation_checkpoint.mode";
  if (const json* mode = t.get(ac)) {
    json v = *mode;
    if (v.is_string() && io::lower(v.get<std::string>()) == "none") v = "off";
    if (v.is_boolean() && !v.get<bool>()) v = "off";
    set("recompute", v, ac);
  }
  // Sequence, precision, memory.
  for (const char* k : {"dataset.data_transform.max_seq_len", "dataset.data_transform.seq_len", "dataset.data_config.seq_length", "dataset.seq_len",
                        "data.max_seq_len", "data_transform.seq_len", "data_transform.max_seq_len", "model.config_overrides.seq_length"}) {
    if (auto s = t.whole(k)) {
      set("seq", *s, k);
      break;
    }
  }
  if (legacy && !legacy_torch) {
    // The legacy layout runs on MindSpore: parameters in param_dtype, else the model's torch_dtype (not "auto"), else
    // the mindformers profile's.
    if (auto dt = t.text("fsdp_config.mix_precision.param_dtype")) {
      set("param_bytes", dtype_bytes(*dt, at(file, "fsdp_config.mix_precision.param_dtype")), "fsdp_config.mix_precision.param_dtype");
    } else if (auto td = t.text("model.torch_dtype"); td && *td != "auto") {
      set("param_bytes", dtype_bytes(*td, at(file, "model.torch_dtype")), "model.torch_dtype");
    }
  } else {
    train_state_bytes(t, out);
  }
  if (auto mem = t.text("context.max_device_memory")) {
    std::size_t g = mem->find("GB");
    if (g == std::string::npos) fail(at(file, "context.max_device_memory"), "'{}' is not a size like 58GB", *mem);
    set("memory_limit_gib", std::stod(mem->substr(0, g)), "context.max_device_memory");
  }
  // The model: fields stated here, or a model the file names (a bundled model, a HuggingFace id or a config.json
  // path) with the fields stated here laid over it (e.g. model.config_overrides.num_hidden_layers cropping it).
  json model = model_fields(t, {"model", "model.config_overrides"}, &out.warnings);
  std::string id_from;
  std::optional<std::string> id;
  for (const char* k : {"model.pretrained_model_name_or_path", "model.config_path", "model.name"}) {
    if ((id = t.text(k))) {
      id_from = k;
      break;
    }
  }
  if (!model.is_null()) {
    model["_source"] = file;
    out.model_config = model;
    set("model", file, "model.config_overrides");
    // the fields stated here define the model
    for (const char* k : {"model.pretrained_model_name_or_path", "model.config_path", "model.name"}) t.use(k);
  } else if (id) {
    if (auto name = bundled_name(*id, at(file, id_from), "state the model's fields under model.config_overrides, or give sapp --model", out)) {
      json overrides = stated_model_fields(t, {"model", "model.config_overrides"});
      overrides.erase("name");
      if (overrides.empty()) {
        set("model", *name, id_from);
      } else {
        json base = model_tree(*name);
        std::vector<std::string> keys;
        for (const auto& [key, value] : overrides.items()) {
          base[key] = value;
          keys.push_back(key);
        }
        base["_source"] = fmt::format("{} ({} with {} from {})", file, *name, fmt::join(keys, ", "), file);
        base.erase("_hf_ids");
        out.model_config = base;
        model = base;
        set("model", file, fmt::format("{} with {}", id_from, fmt::join(keys, ", ")));
      }
    }
  } else if (!out.values.contains("model")) {
    out.model_error = fmt::format(
        "{}: names no model: state model.pretrained_model_name_or_path (a bundled model or a HuggingFace id), model.config_path (a "
        "config.json) or the model's fields under model.config_overrides; or give --model",
        file);
  }
  long long layers = model.is_object() && model.contains("num_hidden_layers") && model.at("num_hidden_layers").is_number_integer()
                         ? model.at("num_hidden_layers").get<long long>()
                         : 0;
  const json* layer_split = legacy ? nullptr : t.get("accelerator.pp_layer_split");
  if (layer_split && layer_split->is_null()) layer_split = nullptr;
  if (layers == 0 && out.values.contains("model") &&
      (t.get("model.config_overrides.offset") || t.get("model.config_overrides.full_rec") || t.get("model.config_overrides.sel_rec") || layer_split)) {
    // A named model (bundled or a config.json) with a stage split: the split's arithmetic needs its layer count.
    layers = model::load_model(out.values.at("model").get<std::string>(), io::data_dir()).num_layers;
  }
  if (layers > 0) stage_split(t, out, "model.config_overrides", layers, static_cast<int>(pp), static_cast<int>(vpp));
  if (layer_split && layers > 0) {
    // AcceleratorConfig.pp_layer_split: the decoder layers of each pipeline stage, first to last.
    const std::string where = at(file, "accelerator.pp_layer_split");
    if (out.split) fail(where, "states the stage split that model.config_overrides.offset also states: keep one");
    if (!layer_split->is_array() || static_cast<long long>(layer_split->size()) != pp || vpp != 1)
      fail(where, "{} is not a list of {} layer counts, one per pipeline stage (without interleaving)", layer_split->dump(), pp);
    plan::StageSplit split;
    split.layers.emplace_back();
    long long total = 0;
    for (const json& n : *layer_split) {
      if (!n.is_number_integer() || n.get<long long>() < 0) fail(where, "{} is not a whole layer count", n.dump());
      split.layers[0].push_back(n.get<long long>());
      total += n.get<long long>();
    }
    if (total != layers) fail(where, "places {} layers; the model has {}", total, layers);
    out.split = split;
  }
  for (const char* k : {"model._target_", "model.trust_remote_code", "model.torch_dtype", "model.attn_implementation"}) t.use(k);
  out.unused = t.unused();
  return out;
}

Loaded read_reference_search(const json& tree, const std::string& file) {
  Tree t{tree, file, {}};
  Loaded out;
  auto set = setter(out);
  // A train YAML it inherits fixed degrees from.
  if (auto train = t.text("train_yaml")) {
    std::filesystem::path p = *train;
    if (p.is_relative()) p = std::filesystem::path(file).parent_path() / p;
    Loaded base = read_text(io::read_text(p.string()), p.string(), Format::HyperParallel);
    out.values = base.values;
    out.origin = base.origin;
    out.model_config = base.model_config;
    out.split = base.split;
  }
  // The reference prices its search with HyperParallel's own parser and runtime (Parallelize("hyper_v2", ...)):
  // the hyperparallel profile, and the model's training-state dtypes as a train YAML states them.
  // (A train_yaml the search inherits from states its own framework and dtypes.)
  if (!t.get("train_yaml")) {
    set("framework", "hyperparallel", "a search YAML (the reference prices it as a HyperParallel train YAML)");
    train_state_bytes(t, out);
  }
  if (auto cd = t.text("model.compute_dtype")) set("compute_bytes", dtype_bytes(*cd, at(file, "model.compute_dtype")), "model.compute_dtype");
  if (const json* cf = t.get("model.capacity_factor"); cf && cf->is_number() && cf->get<double>() > 0)
    set("capacity_factor", std::max(1.0, cf->get<double>()), "model.capacity_factor");
  json model = model_fields(t, {"model"}, &out.warnings);
  if (!model.is_null()) {
    model["_source"] = file;
    if (!model.contains("max_position_embeddings")) t.use("model.max_position_embeddings");
    if (model.contains("intermediate_size")) t.use("model.multiple_of");  // it rounds a derived FFN width only
    out.model_config = model;
    set("model", file, "model");
    if (auto seq = t.whole("model.seq_length"))
      set("seq", *seq, "model.seq_length");
    else if (auto seq_len = t.whole("model.seq_len"))  // the older examples' name (with n_layers, dim, n_heads)
      set("seq", *seq_len, "model.seq_len");
    else if (auto pos = t.whole("model.max_position_embeddings"))
      set("seq", *pos, "model.max_position_embeddings");
  }
  if (auto nodes = t.whole("cluster.num_nodes")) {
    long long cards = t.whole("cluster.cards_per_node").value_or(8);
    set("devices", *nodes * cards, "cluster.num_nodes x cluster.cards_per_node");
  }
  if (auto type = t.text("cluster.device_type")) {
    // The reference's names: A2 (Atlas 800T A2, the 910B) and A3 (the 910C), or ascend910b / ascend910c /
    // ascend910_93; a bundled device name otherwise.
    std::string d = io::lower(*type);
    std::string hw = d == "a3" || d == "ascend910c" || d == "ascend910_93" ? "ascend-910c" : d == "a2" || d.rfind("ascend", 0) == 0 ? "ascend-910b" : d;
    set("hardware", hw, "cluster.device_type");
  }
  if (auto mem = t.get("cluster.device_memory_gb"); mem && mem->is_number()) set("memory_limit_gib", mem->get<double>(), "cluster.device_memory_gb");
  for (const char* k : {"cluster.intra_node_bandwidth_gbps", "cluster.inter_node_bandwidth_gbps"}) t.use(k);
  // Degrees: an int (fixed), a list (candidates) or auto (searched).
  for (const auto& [key, name] : std::vector<std::pair<std::string, std::string>>{{"tp", "tp"}, {"pp", "pp"}, {"cp", "cp"}, {"ep", "ep"}, {"etp", "etp"}}) {
    const json* v = t.get("parallelism." + key);
    // etp 0 is the reference's "unset" (its parser defaults expert TP to 1 for a MoE model and to TP for a dense
    // one): sapp's default.
    if (v && key == "etp" && v->is_number_integer() && v->get<long long>() == 0) continue;
    if (v) set(name, *v, "parallelism." + key);
  }
  if (const json* fsdp = t.get("parallelism.fsdp")) {
    if (fsdp->is_number_integer())
      set("zero", fsdp->get<long long>() > 1 ? json(3) : json(0), "parallelism.fsdp");
    else if (fsdp->is_array()) {
      json zs = json::array();
      for (const auto& f : *fsdp) zs.push_back(f.is_number_integer() && f.get<long long>() > 1 ? 3 : 0);
      std::sort(zs.begin(), zs.end());
      zs.erase(std::unique(zs.begin(), zs.end()), zs.end());
      set("zero", zs, "parallelism.fsdp");
    }
  }
  // DP follows from the devices and the other degrees; the reference keeps only its results among the candidates
  // stated (its post-filter): DP = dp (replicate) x fsdp (shard), every pair.
  auto candidates = [&](const char* key) {
    std::vector<long long> listed;
    const json* v = t.get(key);
    if (!v || (v->is_string() && v->get<std::string>() == "auto")) return listed;
    for (const json& x : v->is_array() ? *v : json::array({*v})) {
      if (!x.is_number_integer() || x.get<long long>() < 1) t.bad(key, fmt::format("{} is not a whole degree or count of 1 or more", x.dump()));
      listed.push_back(x.get<long long>());
    }
    return listed;
  };
  std::vector<long long> dps = candidates("parallelism.dp");
  std::vector<long long> shards = candidates("parallelism.fsdp");
  if (!dps.empty() || !shards.empty()) {
    if (dps.empty()) dps = {1};
    if (shards.empty()) shards = {1};
    json products = json::array();
    for (long long d : dps)
      for (long long f : shards) products.push_back(d * f);
    set("dp", products, shards.size() > 1 || shards[0] > 1 ? "parallelism.dp x parallelism.fsdp" : "parallelism.dp");
  }
  // Its micro_batch_num is the pipeline's count with any accumulation left over (it only asks that the global batch
  // divide by it), not sapp's micro-batches per step (global batch / (DP x micro-batch size)): not a filter.
  for (const char* k : {"parallelism.micro_batch_num", "pp_config.micro_batch_num"}) {
    if (t.get(k))
      out.warnings.push_back(
          fmt::format("{}: sapp takes the micro-batches per step as global batch / (DP x micro-batch size), every one in the "
                      "pipeline; the stated counts are not used",
                      k));
  }
  if (auto gbs = t.whole("constraint.global_batch_size")) set("global_batch", *gbs, "constraint.global_batch_size");
  if (auto lim = t.get("constraint.memory_limit_gb"); lim && lim->is_number()) {
    if (lim->get<double>() < 0) t.bad("constraint.memory_limit_gb", fmt::format("{} is below 0", lim->dump()));
    set("memory_limit_gib", lim->get<double>(), "constraint.memory_limit_gb");
  }
  if (const json* rc = t.get("recompute")) set("recompute", *rc, "recompute");
  if (auto mbs = t.get("model.local_batch_size")) set("mbs", *mbs, "model.local_batch_size");
  // pp_config: the degree, interleave and a manual partition.
  if (auto ppd = t.whole("pp_config.pp_degree")) set("pp", *ppd, "pp_config.pp_degree");
  if (auto v = t.whole("pp_config.pp_interleave_num")) {
    set("vpp", *v, "pp_config.pp_interleave_num");
  } else if (auto schedule = t.text("pp_config.pipeline_schedule"); schedule && io::lower(*schedule) == "1f1b") {
    set("vpp", 1, "pp_config.pipeline_schedule 1F1B (not interleaved)");  // as the reference runs it: no VPP searched
  }
  std::string mode = t.text("pp_config.stage_partition_mode").value_or("uniform");
  if (mode == "manual") {
    const json* parts = t.get("pp_config.stage_partition");
    if (!parts || !parts->is_array()) t.bad("pp_config.stage_partition", "stage_partition_mode manual needs a list of per-stage layer-index lists");
    plan::StageSplit split;
    split.layers.emplace_back();
    long long next = 0;
    for (std::size_t s = 0; s < parts->size(); ++s) {
      const json& stage = (*parts)[s];
      if (!stage.is_array()) t.bad("pp_config.stage_partition", fmt::format("stage {} is {}, not a list of layer indices", s, stage.dump()));
      for (const auto& idx : stage) {
        if (!idx.is_number_integer() || idx.get<long long>() != next)
          t.bad("pp_config.stage_partition", fmt::format("stage {} lists {}; the stages must cover layers 0..L-1 in order (expected {})", s, idx.dump(), next));
        ++next;
      }
      split.layers[0].push_back(static_cast<long long>(stage.size()));
    }
    if (auto rl = t.get("pp_config.layer_recompute_layers")) {
      if (!rl->is_array()) t.bad("pp_config.layer_recompute_layers", "expected a list of layer indices");
      split.full.assign(1, std::vector<long long>(split.layers[0].size(), 0));
      for (const auto& idx : *rl) {
        if (!idx.is_number_integer() || idx.get<long long>() < 0 || idx.get<long long>() >= next)
          t.bad("pp_config.layer_recompute_layers", fmt::format("{} is not a layer index in [0, {})", idx.dump(), next));
        long long i = idx.get<long long>();
        long long start = 0;
        for (std::size_t s = 0; s < split.layers[0].size(); ++s) {
          if (i < start + split.layers[0][s]) {
            ++split.full[0][s];
            break;
          }
          start += split.layers[0][s];
        }
      }
    }
    out.split = split;
  }
  for (const char* k : {"pp_config.pipeline_schedule", "pp_config.layer_offset_range", "model.name", "model.moe_enabled"}) t.use(k);
  // Without flash attention the s x s scores are kept; with it the softmax's dtype keeps no score tensor.
  if (t.flag("model.use_flash_attention").value_or(true)) {
    t.use("model.softmax_compute_type");
  } else {
    set("no_flash_attention", true, "model.use_flash_attention");
  }
  out.unused = t.unused();
  return out;
}

bool legacy_layout(const Loaded* original) {
  if (!original) return false;
  return legacy_tree(io::parse_yaml(original->text, original->file));
}

Expressible expressible_hyperparallel(const Loaded* original) {
  // Its pipeline schedules are gpipe and 1f1b (AcceleratorConfig.pp_schedule), interleaved by pp_vpp.
  Expressible e = legacy_layout(original)
                      ? Expressible{std::vector<int>{0, 3}, std::nullopt,
                                    "HyperParallel's legacy YAML states MindSpore's parallel optimizer (enable_parallel_optimizer: weights and optimizer "
                                    "states sliced, ZeRO-3) or none"}
                      : Expressible{std::vector<int>{0, 2, 3}, std::vector<bool>{false, true},
                                    "HyperParallel's train YAML states FSDP (fsdp_config.dp_shard_size: ZeRO-3; reshard_after_forward false: ZeRO-2) or "
                                    "replication"};
  e.dualpipe_v = false;
  e.fp8 = false;  // neither its train YAML nor the legacy one has an FP8 key
  return e;
}

std::string emit_hyperparallel(const Plan& plan, const Loaded* original, const std::string& model_name) {
  const plan::Layout& l = plan.layout;
  std::string text;
  // The file sapp edits, parsed once: which keys it states.
  const json stated = original ? io::parse_yaml(original->text, original->file) : json::object();
  auto original_states = [&](const std::string& path) { return stated_at(stated, path) != nullptr; };
  const bool legacy = original && legacy_tree(stated);  // (what this layout cannot state, emit() has refused)
  if (original) {
    text = original->text;
  } else if (plan.model_config.is_null()) {
    // A bundled model (by the HuggingFace id it was taken from, which HyperParallel loads) or a config.json: named, as
    // HyperParallel names its model.
    text = fmt::format("# HyperParallel train YAML for {} on {} devices, written by sapp.\nmodel:\n  pretrained_model_name_or_path: {}\n", model_name,
                       plan.devices, model::hf_id_of_bundled(model_name, io::data_dir()).value_or(model_name));
    text += fmt::format("dataset:\n  data_transform:\n    max_seq_len: {}\n", plan.seq);
  } else {
    // A model a framework config defined inline: its keys under config_overrides, as the reader takes them.
    text = fmt::format("# HyperParallel train YAML for {} on {} devices, written by sapp.\nmodel:\n  config_overrides:\n", model_name, plan.devices);
    std::vector<std::string> left;
    for (const auto& item : plan.model_config.items()) {
      const std::string& key = item.key();
      const json& value = item.value();
      if (key.rfind('_', 0) == 0) continue;  // _source, _comment
      bool read = std::any_of(canonical().begin(), canonical().end(), [&](const auto& entry) { return entry.first == key; });
      if (read) {
        text += fmt::format("    {}: {}\n", key, value.dump());
      } else {
        left.push_back(key);
      }
    }
    if (!left.empty()) {
      fail("--emit hyperparallel", "the model's {} cannot be stated under model.config_overrides: write another format", fmt::join(left, ", "));
    }
    text += fmt::format("dataset:\n  data_transform:\n    max_seq_len: {}\n", plan.seq);
  }
  long long m = plan.global_batch / (1LL * l.dp * l.mbs);
  if (legacy) {
    // The key the file states a value under (the three-tier examples' short names, tp, pp, ...), else `path`.
    auto key = [&](const char* path, const char* short_name) { return original_states(short_name) && !original_states(path) ? short_name : path; };
    text = yaml_set_all(text, {
                                  {"train.accelerator.dp_replicate", std::to_string(l.zero >= 1 ? 1 : l.dp)},
                                  {"train.accelerator.dp_shard", std::to_string(l.zero >= 1 ? l.dp : 1)},
                                  {key("train.accelerator.tp_degree", "train.accelerator.tp"), std::to_string(l.tp)},
                                  {key("train.accelerator.pipeline_parallel_degree", "train.accelerator.pp"), std::to_string(l.pp)},
                                  {key("train.accelerator.context_parallel_degree", "train.accelerator.cp"), std::to_string(l.cp)},
                                  {key("train.accelerator.expert_parallel_degree", "train.accelerator.ep"), std::to_string(l.ep)},
                                  {key("train.accelerator.expert_tensor_parallel_degree", "train.accelerator.etp"), std::to_string(l.etp)},
                                  {"train.accelerator.pp_interleave_num", std::to_string(l.vpp)},
                                  {"train.accelerator.use_seq_parallel", l.sp ? "true" : "false"},
                                  {"train.accelerator.enable_parallel_optimizer", l.zero >= 3 ? "true" : "false"},
                                  {"train.global_batch_size", std::to_string(plan.global_batch)},
                                  {key("train.micro_batch_num", "train.accelerator.pp_micro_batch_num"), std::to_string(m)},
                                  {"train.micro_batch_size", std::to_string(l.mbs)},
                                  {"train.gradient_checkpointing.activation_checkpoint", plan::to_string(l.recompute)},
                              });
    // The CP algorithm as the reader takes it (ulysses_cp: all-to-all; MindFormers' colossalai_cp: ring).
    if (l.cp > 1 || original_states("train.accelerator.context_parallel_algo"))
      text = yaml_set(text, "train.accelerator.context_parallel_algo", l.cp_algo == plan::CpAlgo::AllToAll ? "ulysses_cp" : "colossalai_cp");
  } else {
    // FSDP: dp_shard shards parameters, gradients and optimizer states (ZeRO-3); dp_replicate replicates.
    // The trainer's mesh: dp_replicate x dp_shard = DP x CP.
    const long long dp_cp = 1LL * l.dp * l.cp;
    long long shard = l.zero >= 1 ? (l.optimizer_shard > 0 ? l.optimizer_shard : dp_cp) : 1;
    text = yaml_set(text, "accelerator.tp_size", std::to_string(l.tp));
    text = yaml_set(text, "accelerator.pp_size", std::to_string(l.pp));
    text = yaml_set(text, "accelerator.cp_size", std::to_string(l.cp));
    // All-to-all CP is the data loader's ulysses split; ring is its default (a stated ulysses is taken out).
    if (l.cp > 1 && l.cp_algo == plan::CpAlgo::AllToAll)
      text = yaml_set(text, "dataloader.get_batch.cp_algorithm", "ulysses");
    else if (original_states("dataloader.get_batch.cp_algorithm"))
      text = yaml_set(text, "dataloader.get_batch.cp_algorithm", "null");
    text = yaml_set(text, "accelerator.ep_size", std::to_string(l.ep));
    if (l.etp > 1) text = yaml_set(text, "accelerator.etp_size", std::to_string(l.etp));
    // dp_replicate (unstated: it follows from the world size) is written where the file states it or replicas exist.
    const bool replicate_stated = original_states("accelerator.dp_replicate");
    if (dp_cp / shard > 1 || replicate_stated || original_states("accelerator.dp_replicate_size"))
      text = yaml_set(text, replicate_stated ? "accelerator.dp_replicate" : "accelerator.dp_replicate_size", std::to_string(dp_cp / shard));
    // The trainer's AcceleratorConfig states interleaving as pp_vpp and the pipeline's micro-batches as
    // pp_micro_batch_num; its TrainingConfig has no micro_batch_num and its resolver refuses unknown fields, so the
    // older keys are written only where the file already has them.
    const bool old_vpp = original_states("accelerator.pp_interleave_num");
    if (l.vpp > 1 || old_vpp || original_states("accelerator.pp_vpp"))
      text = yaml_set(text, old_vpp ? "accelerator.pp_interleave_num" : "accelerator.pp_vpp", std::to_string(l.vpp));
    const bool old_m = original_states("training.micro_batch_num");
    if (old_m) text = yaml_set(text, "training.micro_batch_num", std::to_string(m));
    if (!old_m && (l.pp > 1 || original_states("accelerator.pp_micro_batch_num"))) text = yaml_set(text, "accelerator.pp_micro_batch_num", std::to_string(m));
    if (l.sp || (original && original->origin.count("sp"))) text = yaml_set(text, "accelerator.sequence_parallel", l.sp ? "true" : "false");
    text = yaml_set_all(text, {
                                  {original_states("accelerator.dp_shard_size") && !original_states("fsdp_config.dp_shard_size") ? "accelerator.dp_shard_size"
                                                                                                                                 : "fsdp_config.dp_shard_size",
                                   std::to_string(shard)},
                                  {"training.global_batch_size", std::to_string(plan.global_batch)},
                                  {"training.micro_batch_size", std::to_string(l.mbs)},
                                  {"activation_checkpoint.mode", plan::to_string(l.recompute)},
                              });
    // ZeRO-2 keeps the gathered parameters (reshard_after_forward false); a ZeRO-3 plan written over a file that kept
    // them turns both keys back.
    const bool stated_keep = original && original->origin.count("zero") && original->origin.at("zero").rfind("fsdp_config.reshard_after", 0) == 0;
    if (l.zero == 2 || stated_keep) text = yaml_set(text, "fsdp_config.reshard_after_forward", l.zero == 2 ? "false" : "true");
    if (l.zero != 2 && stated_keep) text = yaml_set(text, "fsdp_config.reshard_after_backward", "true");
  }
  if (plan.split) {
    const plan::StageSplit& s = *plan.split;
    long long total = s.total();
    long long base = total / (1LL * l.pp * l.vpp);
    json offset = json::array();
    for (const auto& row : s.layers) {
      json r = json::array();
      for (long long c : row) r.push_back(c - base);
      offset.push_back(r);
    }
    if (!legacy && l.vpp == 1 && original_states("accelerator.pp_layer_split")) {
      text = yaml_set(text, "accelerator.pp_layer_split", flow(json(s.layers[0])));  // the file's own key for the split
    } else {
      text = yaml_set(text, "model.config_overrides.offset", flow(l.vpp > 1 ? offset : offset[0]));
    }
    if (s.states_recompute()) {
      auto rows = [&](const plan::ChunkCounts& c, bool add_full) {
        json out = json::array();
        for (std::size_t i = 0; i < s.layers.size(); ++i) {
          json r = json::array();
          for (std::size_t j = 0; j < s.layers[i].size(); ++j) {
            long long v = c.empty() ? 0 : c[i][j];
            if (add_full && v > 0 && !s.full.empty()) v += s.full[i][j];
            r.push_back(v);
          }
          out.push_back(r);
        }
        return l.vpp > 1 ? out : out[0];
      };
      text = yaml_set(text, "model.config_overrides.full_rec", flow(rows(s.full, false)));
      if (!s.selective.empty()) text = yaml_set(text, "model.config_overrides.sel_rec", flow(rows(s.selective, true)));
    }
  }
  // The sequence length, under the key the edited file states it (a new file states it above); it had been left at
  // the file's length whatever the plan's.
  if (original) {
    const auto from = original->origin.find("seq");
    const bool keyed = from != original->origin.end() && from->second.find(' ') == std::string::npos && from->second != "model.max_position_embeddings";
    const std::string key = keyed ? from->second : legacy ? "model.seq_length" : "dataset.data_transform.max_seq_len";
    text = yaml_set(text, key, std::to_string(plan.seq));
  }
  return text;
}

}  // namespace sapp::config::detail
