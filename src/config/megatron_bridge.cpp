// config/megatron_bridge: NVIDIA Megatron-Bridge's ConfigContainer YAML (the run_config.yaml a run writes beside its
// checkpoints, ConfigContainer.to_yaml(), or a recipe's override YAML) read as the Megatron-LM launch its fields are
// the arguments of. Megatron-Bridge's model section is Megatron-Core's TransformerConfig and its train / ddp /
// mixed_precision sections the arguments Megatron-LM's arguments.py turns into them
// (github.com/NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/config.py and mixed_precision.py): each field
// sapp prices is translated to its Megatron-LM flag (kBridgeFields), the flags are read by the Megatron reader, and every
// flag in what it reports (values' origins, warnings, errors, unused keys) is turned back into the field's key path.
// docs/configs.md.
#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::config::detail {

namespace {

// The fields sapp prices beyond Megatron-Core's shared model fields (core_model_fields), with the Megatron-LM flag each
// one is (arguments.py names them after the field).
constexpr FlagField kBridgeFields[] = {
    {"model.normalization", "--normalization", FlagKind::Value},
    {"model.position_embedding_type", "--position-embedding-type", FlagKind::Value},
    {"model.add_bias_linear", "--disable-bias-linear", FlagKind::Negated},
    {"model.add_qkv_bias", "--add-qkv-bias", FlagKind::Switch},
    {"model.multi_latent_attention", "--multi-latent-attention", FlagKind::Switch},
    {"model.q_lora_rank", "--q-lora-rank", FlagKind::Value},
    {"model.kv_lora_rank", "--kv-lora-rank", FlagKind::Value},
    {"model.qk_head_dim", "--qk-head-dim", FlagKind::Value},
    {"model.qk_pos_emb_head_dim", "--qk-pos-emb-head-dim", FlagKind::Value},
    {"model.v_head_dim", "--v-head-dim", FlagKind::Value},
    {"model.moe_layer_freq", "--moe-layer-freq", FlagKind::Pattern},
    {"model.moe_flex_dispatcher_backend", "--moe-flex-dispatcher-backend", FlagKind::Value},
    {"model.moe_enable_deepep", "--moe-enable-deepep", FlagKind::Switch},
    {"model.moe_shared_expert_overlap", "--moe-shared-expert-overlap", FlagKind::Switch},
    {"model.mtp_num_layers", "--mtp-num-layers", FlagKind::Value},
    {"model.window_attn_skip_freq", "--window-attn-skip-freq", FlagKind::Pattern},
    {"model.softmax_type", "--softmax-type", FlagKind::Value},
    {"model.hybrid_layer_pattern", "--hybrid-layer-pattern", FlagKind::Value},  // its newer name (core_v0.17)
    {"model.mamba_state_dim", "--mamba-state-dim", FlagKind::Value},
    {"model.mamba_head_dim", "--mamba-head-dim", FlagKind::Value},
    {"model.mamba_num_groups", "--mamba-num-groups", FlagKind::Value},
    {"model.mamba_num_heads", "--mamba-num-heads", FlagKind::Value},
    {"model.cp_comm_type", "--cp-comm-type", FlagKind::Value},
    {"model.pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", FlagKind::Layout},
    {"model.recompute_granularity", "--recompute-granularity", FlagKind::Value},
    {"model.recompute_method", "--recompute-method", FlagKind::Value},
    {"model.recompute_num_layers", "--recompute-num-layers", FlagKind::Value},
    {"model.recompute_modules", "--recompute-modules", FlagKind::Value},
    {"model.tp_comm_overlap", "--tp-comm-overlap", FlagKind::Switch},
    {"comm_overlap.tp_comm_overlap", "--tp-comm-overlap", FlagKind::Switch},
    {"train.global_batch_size", "--global-batch-size", FlagKind::Value},
    {"train.micro_batch_size", "--micro-batch-size", FlagKind::Value},
    {"ddp.use_distributed_optimizer", "--use-distributed-optimizer", FlagKind::Switch},
    {"optimizer.use_distributed_optimizer", "--use-distributed-optimizer", FlagKind::Switch},
    {"ddp.overlap_grad_reduce", "--overlap-grad-reduce", FlagKind::Switch},
    {"ddp.overlap_param_gather", "--overlap-param-gather", FlagKind::Switch},
    {"ddp.grad_reduce_in_fp32", "--accumulate-allreduce-grads-in-fp32", FlagKind::Switch},
    {"ddp.data_parallel_sharding_strategy", "--data-parallel-sharding-strategy", FlagKind::Value},
    {"ddp.use_megatron_fsdp", "--use-megatron-fsdp", FlagKind::Switch},
    {"dist.use_megatron_fsdp", "--use-megatron-fsdp", FlagKind::Switch},
    {"dist.use_torch_fsdp2", "--use-torch-fsdp2", FlagKind::Switch},
    // megatron/bridge/peft/lora.py: LoRA (and DoRA) of rank `dim` on every linear layer by default.
    {"peft.dim", "--lora-r", FlagKind::Value},
};

// Megatron-Core's pipeline layout as a list of stages of layer names (PipelineParallelLayerLayout: embedding,
// decoder, mtp, loss, or their letters E, t, m, L; Megatron-Bridge's DeepSeek recipes state it so) as its string.
std::string layout_text(const json& stages, const std::string& where) {
  static const std::map<std::string, std::string> letters = {{"embedding", "E"}, {"decoder", "t"}, {"mtp", "m"}, {"loss", "L"},
                                                             {"E", "E"},         {"t", "t"},       {"m", "m"},   {"L", "L"}};
  std::vector<std::string> out;
  for (const json& stage : stages) {
    if (!stage.is_array()) fail(where, "a stage is {} where a list of layer names was expected", stage.type_name());
    std::vector<std::string> layers;
    for (const json& layer : stage) {
      auto it = layer.is_string() ? letters.find(layer.get<std::string>()) : letters.end();
      if (it == letters.end()) fail(where, "'{}' is not a layer of Megatron-Core's layout (embedding, decoder, mtp, loss)", layer.dump());
      layers.push_back(it->second);
    }
    out.push_back(fmt::format("{}", fmt::join(layers, ",")));
  }
  return fmt::format("{}", fmt::join(out, "|"));
}

}  // namespace

bool is_megatron_bridge(const json& tree) {
  if (!tree.is_object()) return false;
  auto bridge_target = [](const json& node) {
    return node.is_object() && node.contains("_target_") && node.at("_target_").is_string() &&
           node.at("_target_").get<std::string>().rfind("megatron.bridge.", 0) == 0;
  };
  if (bridge_target(tree)) return true;
  const json* model = stated_at(tree, "model");
  if (model && bridge_target(*model)) return true;
  // A recipe's override YAML: Megatron-Core's field names under model, the batch under train (HyperParallel's train
  // section states its accelerator, AutoModel's recipes a step scheduler or a distributed section).
  const json* train = stated_at(tree, "train");
  if (tree.contains("step_scheduler") || tree.contains("distributed") || (train && train->is_object() && train->contains("accelerator"))) return false;
  return model && model->is_object() && train && train->is_object() && (train->contains("global_batch_size") || train->contains("micro_batch_size")) &&
         (model->contains("tensor_model_parallel_size") || model->contains("pipeline_model_parallel_size") || model->contains("num_layers") ||
          model->contains("seq_length"));
}

Loaded read_megatron_bridge(const json& tree, const std::string& file) {
  // Knowledge distillation (examples/distillation: a teacher model trained beside the student) is not priced.
  for (const char* path : {"model.teacher", "model.kd_config"}) {
    if (const json* v = stated_at(tree, path); v && !v->is_null())
      fail(at(file, path),
           "knowledge distillation runs a teacher model beside the student, which sapp does not price (it would price the student alone: too fast "
           "and too small); price the student with the file without it");
  }
  FlagLaunch launch(tree, file, {"torchrun", "pretrain_gpt.py"});
  auto add = [&launch](const std::string& flag, const std::string& path, const std::vector<std::string>& values) { launch.add(flag, path, values); };
  std::string layout_object;  // a layout stated as an object, not read
  // Precision first (Megatron-Bridge lays mixed_precision over the model's and ddp's fields): a preset's name
  // (mixed_precision.py: bf16_mixed, bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed,
  // bf16_with_nvfp4_mixed, ...; '-' for '_' as well) or the dump's mapping, else the model's own fields.
  const json* mixed = stated_at(tree, "mixed_precision");
  std::string preset;  // the preset's name, '-' read as '_'; empty: none
  if (mixed && mixed->is_string()) {
    preset = mixed->get<std::string>();
    std::ranges::replace(preset, '-', '_');
  }
  if (!preset.empty()) {
    if (preset.rfind("fp16", 0) == 0) {
      add("--fp16", "mixed_precision", {});
    } else if (preset.find("bf16") != std::string::npos) {
      add("--bf16", "mixed_precision", {});
    } else {
      fail(at(file, "mixed_precision"), "'{}' is not one of Megatron-Bridge's mixed-precision presets (bf16_mixed, fp16_mixed, bf16_with_*_mixed)", preset);
    }
    if (preset.find("fp8") != std::string::npos) add("--fp8-format", "mixed_precision", {preset.find("mxfp8") != std::string::npos ? "e4m3" : "hybrid"});
    if (preset.find("nvfp4") != std::string::npos) add("--fp4-format", "mixed_precision", {"e2m1"});
    if (preset.find("current_scaling") != std::string::npos) add("--first-last-layers-bf16", "mixed_precision", {});
    add("--accumulate-allreduce-grads-in-fp32", "mixed_precision", {});  // every preset reduces in fp32
  }
  // Megatron-Bridge sets every precision field of the model from mixed_precision when it is stated
  // (update_config_with_precision_overrides): the model's own fields count only without it.
  if (preset.empty()) {
    const std::string prefix = mixed && mixed->is_object() ? "mixed_precision." : "model.";
    for (const char* key : {"fp8", "fp4"}) {
      if (const json* v = stated_at(tree, prefix + key); v && v->is_string()) add(fmt::format("--{}-format", key), prefix + key, {v->get<std::string>()});
    }
    for (const auto& [key, flag] :
         {std::pair{"bf16", "--bf16"}, std::pair{"fp16", "--fp16"}, std::pair{"first_last_layers_bf16", "--first-last-layers-bf16"}}) {
      if (const json* v = stated_at(tree, prefix + key); v && v->is_boolean() && v->get<bool>()) add(flag, prefix + key, {});
    }
  }
  if (const json* v = stated_at(tree, "mixed_precision.grad_reduce_in_fp32"); v && v->is_boolean()) {
    if (v->get<bool>())
      add("--accumulate-allreduce-grads-in-fp32", "mixed_precision.grad_reduce_in_fp32", {});
    else  // false: it wins over ddp's (the flag is then taken, unstated)
      launch.taken("--accumulate-allreduce-grads-in-fp32", "mixed_precision.grad_reduce_in_fp32");
  }
  // The softmax field's default is in every dump (core_v0.14.0 has no such flag): taken, not added.
  if (const json* v = stated_at(tree, "model.softmax_type"); v && *v == "vanilla") launch.taken("--softmax-type", "model.softmax_type");
  launch.add_fields(core_model_fields());
  launch.add_fields(kBridgeFields);
  // Megatron-Core's layout: its string, or its list of stages of layer names.
  if (const json* v = stated_at(tree, "model.pipeline_model_parallel_layout"); v && !v->is_null()) {
    const std::string path = "model.pipeline_model_parallel_layout";
    if (v->is_string()) {
      add("--pipeline-model-parallel-layout", path, {v->get<std::string>()});
    } else if (v->is_array()) {
      add("--pipeline-model-parallel-layout", path, {layout_text(*v, at(file, path))});
    } else {
      // A PipelineParallelLayerLayout object as a dump writes it: Megatron-Bridge's own loader drops it too
      // (training/model_load_save.py).
      layout_object = path;
    }
  }
  // Grouped-query attention: Megatron-LM's --group-query-attention with --num-query-groups.
  if (const json* groups = stated_at(tree, "model.num_query_groups"); groups && groups->is_number_integer()) {
    const json* heads = stated_at(tree, "model.num_attention_heads");
    if (!heads || *groups != *heads) {
      add("--group-query-attention", "model.num_query_groups", {});
      add("--num-query-groups", "model.num_query_groups", {scalar_text(*groups, at(file, "model.num_query_groups"))});
    }
  }
  // A gated linear unit of SiLU is Megatron-LM's --swiglu (a torch.nn.functional.silu target in a dump).
  if (const json* glu = stated_at(tree, "model.gated_linear_unit"); glu && glu->is_boolean() && glu->get<bool>()) {
    const json* act = stated_at(tree, "model.activation_func");
    std::string target = act && act->is_object() && act->contains("_target_") && act->at("_target_").is_string() ? act->at("_target_").get<std::string>() : "";
    if (target.empty() || target.ends_with("silu")) {
      add("--swiglu", "model.gated_linear_unit", {});
    } else if (target.find("gelu") != std::string::npos) {
      add("--geglu", "model.gated_linear_unit", {});
    } else {
      fail(at(file, "model.activation_func"), "'{}' under gated_linear_unit: sapp prices SwiGLU and GeGLU", target);
    }
  }
  // Sequence length: the samples the dataset makes (what the run trains on), else the model's. Megatron-Bridge's
  // ConfigContainer.validate now refuses the two apart; earlier releases trained the dataset's (a run_config.yaml of
  // v0.2.0rc7 states model.seq_length 131072 beside dataset.sequence_length 1024).
  std::string seq_path;
  for (const char* path : {"dataset.seq_length", "dataset.sequence_length", "model.seq_length"}) {
    if (const json* v = stated_at(tree, path); v && !v->is_null()) {
      add("--seq-length", path, {scalar_text(*v, at(file, path))});
      seq_path = path;
      break;
    }
  }
  std::vector<std::string> seq_notes;
  if (const json* m = stated_at(tree, "model.seq_length"); m && !m->is_null() && seq_path != "model.seq_length" && *m != *stated_at(tree, seq_path))
    seq_notes.push_back(fmt::format("model.seq_length {} differs from {} {}: priced at the dataset's (the samples the run trains on)", m->dump(), seq_path,
                                    stated_at(tree, seq_path)->dump()));
  for (const char* path : {"model.vocab_size", "tokenizer.vocab_size"}) {
    if (const json* v = stated_at(tree, path); v && !v->is_null()) {
      add("--vocab-size", path, {scalar_text(*v, at(file, path))});
      break;
    }
  }
  Loaded out = launch.read();
  out.dialect = kMegatronBridgeDialect;
  out.warnings.insert(out.warnings.end(), seq_notes.begin(), seq_notes.end());
  if (!layout_object.empty())
    out.warnings.push_back(
        fmt::format("{}: a layout object (as a dump writes Megatron-Core's PipelineParallelLayerLayout) is not read, as "
                    "Megatron-Bridge's own loader drops it: the even split is priced",
                    layout_object));
  // The run's runtime: Megatron-Bridge's profile (its recipes' defaults), not Megatron-LM's.
  put(out, "framework", "megatron_bridge", "Megatron-Bridge ConfigContainer");
  // A recipe's override YAML (no ConfigContainer target): what it leaves unsaid is its recipe's, a Python function
  // sapp does not run.
  const json* root_target = stated_at(tree, "_target_");
  if (!root_target || !root_target->is_string()) {
    out.warnings.emplace_back(
        "a recipe's override YAML (no ConfigContainer _target_): what it leaves unsaid (the distributed optimizer, precision, recompute, overlaps) "
        "is the recipe's, which sapp does not read; priced with Megatron-LM's defaults there. The run_config.yaml the run writes beside its "
        "checkpoints states everything");
  }
  if (!stated_at(tree, "model.hidden_size") && out.model_error.empty() && !out.values.contains("model"))
    out.model_error =
        fmt::format("{}: states no model (model.num_layers, model.hidden_size, ...: an override YAML leaves it to its recipe); give --model", file);
  // The world size is the launch's (torchrun / the Slurm job), not the config's.
  if (!out.values.contains("devices")) out.devices_hint = "a Megatron-Bridge config states no device count (its launch does)";
  // Gradients and FP8 weights as the file states them (mixed_precision laid over ddp and the model; a preset as
  // mixed_precision.py builds it: every one reduces in fp32, and every FP8 one gathers FP8 weights but the
  // sub-channel (blockwise) ones, fp8_param_gather False; the current-scaling ones set it True since they were added,
  // f7ddd7918), over the megatron_bridge profile's perf-recipe defaults.
  auto first_bool = [&tree](std::initializer_list<const char*> paths) -> std::optional<std::pair<bool, std::string>> {
    for (const char* path : paths) {
      if (const json* v = stated_at(tree, path); v && v->is_boolean()) return std::make_pair(v->get<bool>(), std::string(path));
    }
    return std::nullopt;
  };
  auto fp32_reduce =
      !preset.empty() ? std::make_pair(true, std::string("mixed_precision")) : first_bool({"mixed_precision.grad_reduce_in_fp32", "ddp.grad_reduce_in_fp32"});
  if (fp32_reduce && !out.values.contains("param_bytes")) put(out, "grad_bytes", fp32_reduce->first ? 4 : 2, fp32_reduce->second);
  auto fp8_gather = !preset.empty() ? std::make_pair(preset.find("subchannel") == std::string::npos, std::string("mixed_precision"))
                                    : first_bool({"mixed_precision.fp8_param_gather", "ddp.fp8_param_gather", "mixed_precision.fp8_param", "model.fp8_param"});
  if (fp8_gather && out.values.value("fp8", false)) put(out, "fp8_param_gather", fp8_gather->first, fp8_gather->second);
  // Fields that change memory or time in ways sapp does not price.
  for (const char* path : {"model.cpu_offloading", "optimizer.optimizer_cpu_offload"}) {
    if (const json* v = stated_at(tree, path); v && v->is_boolean() && v->get<bool>())
      out.warnings.push_back(fmt::format("{}: true is not priced (sapp prices the run as if it were false)", path));
  }
  // A vision-language model (the Qwen-VL and Nemotron VL providers): its vision tower is priced only through a --model
  // that has one.
  if (const json* model = stated_at(tree, "model"); model && model->is_object()) {
    for (const auto& [key, value] : model->items()) {
      if (key.find("vision") == std::string::npos || value.is_null()) continue;
      out.warnings.push_back(
          fmt::format("model.{}: a vision-language model; sapp prices its vision tower only when --model names one that has it "
                      "(e.g. qwen2.5-vl-7b), else the language model alone",
                      key));
      break;
    }
  }
  if (const json* peft = stated_at(tree, "peft._target_"); peft && peft->is_string()) {
    const std::string target = peft->get<std::string>();
    if (target.find("LoRA") == std::string::npos && target.find("DoRA") == std::string::npos)
      out.warnings.push_back(fmt::format("peft._target_: {} is priced as LoRA of rank peft.dim on every linear layer", target));
  }
  return out;
}

std::string emit_megatron_bridge(const Plan& plan, const Loaded* original, std::vector<std::string>* notes) {
  if (original == nullptr)
    fail("--emit megatron-bridge",
         "edits the Megatron-Bridge YAML given with --from (its model and recipe are its own): give --from that file, or write megatron");
  // The layout as the Megatron writer states it (the same flags a script of this plan would carry), each flag then
  // set on the field it is; the file's model, precision and dispatcher are its own and stay.
  const WrittenFlags flags = megatron_layout_flags(plan, notes);
  auto on = [&flags](const char* flag) { return flags.on(flag); };
  auto value = [&flags](const char* flag, const json& absent) { return flags.value(flag, absent); };
  const json tree = io::parse_yaml(original->text, original->file);
  const plan::Layout& l = plan.layout;
  YamlEdits edits = {
      {"model.tensor_model_parallel_size", flow(l.tp)},
      {"model.pipeline_model_parallel_size", flow(l.pp)},
      // With a layout as well: Megatron-Bridge builds the model chunks from this field, where Megatron-LM's
      // arguments.py derives it from the layout (its recipes set both).
      {"model.virtual_pipeline_model_parallel_size", l.vpp > 1 ? flow(l.vpp) : flow(nullptr)},
      {"model.pipeline_model_parallel_layout", flow(value("--pipeline-model-parallel-layout", nullptr))},
      {"model.context_parallel_size", flow(l.cp)},
      {"model.expert_model_parallel_size", flow(l.ep)},
      {"model.sequence_parallel", flow(on("--sequence-parallel"))},
      {"model.recompute_granularity", flow(value("--recompute-granularity", nullptr))},
      {"model.recompute_method", flow(value("--recompute-method", nullptr))},
      {"model.recompute_num_layers", flow(value("--recompute-num-layers", nullptr))},
      {"train.micro_batch_size", flow(l.mbs)},
      {"train.global_batch_size", flow(plan.global_batch)},
      {"ddp.use_distributed_optimizer", flow(on("--use-distributed-optimizer"))},
      {"ddp.use_megatron_fsdp", flow(on("--use-megatron-fsdp"))},
      {"ddp.data_parallel_sharding_strategy", flow(value("--data-parallel-sharding-strategy", "no_shard"))},
      {"ddp.overlap_grad_reduce", flow(on("--overlap-grad-reduce"))},
      {"ddp.overlap_param_gather", flow(on("--overlap-param-gather"))},
  };
  // A field the plan leaves unset (null) is written only where the file states it.
  std::erase_if(edits, [&tree](const auto& edit) { return edit.second == "null" && !stated_at(tree, edit.first); });
  if (l.cp > 1) edits.emplace_back("model.cp_comm_type", flow(value("--cp-comm-type", nullptr)));
  if (on("--recompute-modules")) {
    json modules = value("--recompute-modules", nullptr);
    edits.emplace_back("model.recompute_modules", flow(modules.is_array() ? modules : json::array({modules})));
  }
  // Expert TP: Megatron-Core takes TP when unset; written when the plan's differs or the file states it.
  if (l.etp != l.tp || stated_at(tree, "model.expert_tensor_parallel_size")) edits.emplace_back("model.expert_tensor_parallel_size", flow(l.etp));
  // The fields a run's dump repeats elsewhere, kept in step where the file states them.
  for (const char* path : {"optimizer.use_distributed_optimizer"}) {
    if (stated_at(tree, path)) edits.emplace_back(path, flow(on("--use-distributed-optimizer")));
  }
  if (stated_at(tree, "dist.use_megatron_fsdp")) edits.emplace_back("dist.use_megatron_fsdp", flow(on("--use-megatron-fsdp")));
  for (const char* path : {"model.num_layers_in_first_pipeline_stage", "model.num_layers_in_last_pipeline_stage"}) {
    if (stated_at(tree, path)) edits.emplace_back(path, flow(nullptr));  // the layout above states the split
  }
  if (notes) notes->push_back(fmt::format("the plan runs on {} devices: launch it on them (a Megatron-Bridge config states no device count)", plan.devices));
  return yaml_set_all(original->text, edits);
}

}  // namespace sapp::config::detail
