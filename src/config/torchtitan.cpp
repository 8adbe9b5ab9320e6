// config/torchtitan: a torchtitan job TOML (v0.2.x schema; v0.1 keys and the 2024 schema's read too). Model dimensions live in
// torchtitan's code, not the TOML: sapp bundles them as data (data/formats/torchtitan-flavors.yaml, from
// torchtitan v0.2.2). Semantics restated in docs/configs.md.
#include <algorithm>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/terms.hpp"

namespace sapp::config::detail {

namespace {

// Layers fully recomputed per chunk under selective_ac_option N: every N-th block a rank builds is checkpointed
// whole, the count running over the rank's chunks in order (torchtitan's apply_ac keeps one counter per process).
plan::ChunkCounts every_nth_block(const plan::StageSplit& split, long long every) {
  plan::ChunkCounts full(split.layers.size(), std::vector<long long>(split.layers.front().size(), 0));
  for (std::size_t s = 0; s < split.layers.front().size(); ++s) {
    long long counter = 0;
    for (std::size_t c = 0; c < split.layers.size(); ++c) {
      for (long long i = 0; i < split.layers[c][s]; ++i) {
        ++counter;
        if (counter % every == 0) ++full[c][s];
      }
    }
  }
  return full;
}

json to_json(const toml::node& node) {
  if (const auto* t = node.as_table()) {
    json j = json::object();
    for (const auto& [k, v] : *t) j[std::string(k.str())] = to_json(v);
    return j;
  }
  if (const auto* a = node.as_array()) {
    json j = json::array();
    for (const auto& v : *a) j.push_back(to_json(v));
    return j;
  }
  if (const auto* v = node.as_integer()) return v->get();
  if (const auto* v = node.as_floating_point()) return v->get();
  if (const auto* v = node.as_boolean()) return v->get();
  if (const auto* v = node.as_string()) return v->get();
  return json();
}

// The schema's sections and keys (torchtitan v0.2.2 job_config.py): anything else is refused by torchtitan too.
const std::map<std::string, std::set<std::string>>& schema() {
  static const std::map<std::string, std::set<std::string>> s = {
      {"job", {"config_file", "dump_folder", "description", "print_config", "save_config_file", "custom_config_module", "use_for_integration_test"}},
      {"profiling",
       {"enable_profiling", "save_traces_folder", "profile_freq", "profiler_active", "profiler_warmup", "enable_memory_snapshot",
        "save_memory_snapshot_folder"}},
      {"metrics", {"log_freq", "enable_tensorboard", "disable_color_printing", "save_tb_folder", "save_for_all_ranks", "enable_wandb"}},
      {"model", {"name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion"}},
      {"optimizer", {"name", "lr", "beta1", "beta2", "eps", "weight_decay", "implementation", "early_step_in_backward"}},
      {"lr_scheduler", {"warmup_steps", "total_steps", "decay_ratio", "decay_type", "min_lr_factor"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "global_batch_size", "seq_len", "max_norm", "steps", "enable_cpu_offload", "dtype",
        "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug", "seed", "deterministic", "batch_size", "compile"}},
      {"training.dataloader", {"num_workers", "persistent_workers", "pin_memory", "prefetch_factor"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "pipeline_parallel_degree",
        "module_fqns_per_model_part",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree",
        "context_parallel_load_balancer",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "expert_parallel_comm_backend",
        "enable_compiled_autograd"}},
      {"checkpoint",
       {"enable", "enable_checkpoint", "enable_ft_dataloader_checkpoints", "folder", "interval", "initial_load_path", "initial_load_model_only",
        "initial_load_in_hf", "initial_load_in_hf_quantized", "last_save_model_only", "last_save_in_hf", "export_dtype", "async_mode", "keep_latest_k",
        "load_step", "exclude_from_loading", "enable_first_step_checkpoint", "create_seed_checkpoint", "load_only"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop", "memory_budget", "visualize_memory_budget_pareto",
        "preserve_rng_state", "determinism_check", "debug"}},
      {"compile", {"enable", "components", "backend"}},
      {"quantize", {}},
      {"quantize.linear", {}},
      {"quantize.linear.float8", {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp", "recipe_name", "filter_fqns", "emulate"}},
      {"quantize.linear.mx", {"mxfp8_dim1_cast_kernel_choice", "recipe_name", "filter_fqns"}},
      {"quantize.grouped_mm", {}},
      {"quantize.grouped_mm.float8", {"fqns"}},
      {"quantize.grouped_mm.mx", {"recipe_name", "fqns"}},
      {"debug", {"seed", "deterministic", "deterministic_warn_only", "moe_force_load_balance"}},
      {"comm", {"init_timeout_seconds", "train_timeout_seconds", "trace_buf_size", "save_traces_folder", "save_traces_file_prefix", "mode"}},
      {"memory_estimation", {"enable", "disable_fake_mode"}},
      {"fault_tolerance", {"enable", "process_group", "process_group_timeout_ms", "replica_id", "group_size", "min_replica_size", "semi_sync_method"}},
      {"experimental", {"custom_import", "custom_args_module"}},
      {"validation", {"enable", "dataset", "dataset_path", "local_batch_size", "seq_len", "freq", "steps"}},
      {"float8", {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp", "recipe_name", "filter_fqns", "emulate"}}};
  return s;
}

// The sections whose keys change the estimate: a key they do not define is refused (a misspelt degree must not
// be priced as its default). Elsewhere (logging, checkpoints, fault tolerance, a newer torchtitan's or an
// experiment's own sections) an unknown key or section is listed in `unknown` and not read.
bool priced_section(const std::string& path) {
  for (const char* s : {"model", "training", "parallelism", "activation_checkpoint", "compile", "quantize", "float8"}) {
    const std::string root(s);
    if (path == root || path.rfind(root + ".", 0) == 0) return true;
  }
  return false;
}

void check_schema(const json& node, const std::string& prefix, const std::string& file, std::vector<std::string>& unknown) {
  for (const auto& [key, value] : node.items()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    const bool known_section = schema().count(path) > 0;
    if (value.is_object() && known_section) {
      check_schema(value, path, file, unknown);
      continue;
    }
    const bool known_key = !prefix.empty() && schema().count(prefix) && schema().at(prefix).count(key);
    if (known_key) continue;
    const std::string owner = value.is_object() ? path : prefix;
    if (!owner.empty() && priced_section(owner)) {
      if (value.is_object()) fail(at(file, path), "is not a torchtitan (v0.2) section");
      fail(at(file, path), "is not a key torchtitan (v0.2) defines in [{}]", prefix);
    }
    unknown.push_back(value.is_object() ? "[" + path + "]" : path);
  }
}

// A flavour's routed experts as Transformers' keys; a shared-expert count other than the one the family's op
// profile prices (`shared`) is refused.
void routed_experts(json& m, const json& moe, long long shared, const std::string& where, const std::string& what) {
  const long long stated = moe.value("num_shared_experts", shared);
  if (stated != shared) fail(where, "{} has {} shared experts; its op profile prices {}", what, stated, shared);
  m["num_local_experts"] = moe.at("num_experts");
  m["num_experts_per_tok"] = moe.at("top_k");
}

// torchtitan's model flavours, bundled as data (read once).
const json& bundled_flavours() {
  static const json flavours = io::read_tree(io::data_dir() + "/formats/torchtitan-flavors.yaml");
  return flavours;
}

// The model a flavour defines, as HuggingFace keys.
json flavour_model(const std::string& name, const std::string& flavour, const std::string& where) {
  const json& flavours = bundled_flavours();
  if (!flavours.contains(name)) {
    std::vector<std::string> known;
    for (const auto& [k, v] : flavours.items()) known.push_back(k);
    fail(where, "model '{}' has no bundled flavours; bundled: {}", name, fmt::join(known, ", "));
  }
  const json& fl = flavours.at(name).at("flavors");
  const json variants = flavours.at(name).value("variants", json::object());
  if (!fl.contains(flavour) && !variants.contains(flavour)) {
    std::vector<std::string> known;
    for (const auto& [k, v] : fl.items()) known.push_back(k);
    for (const auto& [k, v] : variants.items()) known.push_back(k);
    fail(where, "'{}' is not a bundled {} flavour; bundled: {}", flavour, name, fmt::join(known, ", "));
  }
  // A variant: its base flavour with the fields it changes (attention kinds and iRoPE's).
  const json& entry = fl.contains(flavour) ? fl.at(flavour) : fl.at(variants.at(flavour).at("base").get<std::string>());
  json e = entry.at("effective");
  if (variants.contains(flavour)) e.update(variants.at(flavour).value("effective", json::object()));
  const json d = entry.value("derived", json::object());
  json m = json::object();
  m["_source"] = fmt::format("torchtitan v0.2.2 {} flavour {} ({})", name, flavour, flavours.at(name).value("source", ""));
  m["hidden_size"] = e.at("dim");
  m["num_hidden_layers"] = e.at("n_layers");
  m["num_attention_heads"] = e.at("n_heads");
  if (e.contains("n_kv_heads") && !e.at("n_kv_heads").is_null()) m["num_key_value_heads"] = e.at("n_kv_heads");
  m["vocab_size"] = e.at("vocab_size");
  if (name == "llama3") {
    m["model_type"] = "llama";
    m["intermediate_size"] = d.at("ffn_hidden_dim");
  } else if (name == "qwen3") {
    m["head_dim"] = e.at("head_dim");
    m["intermediate_size"] = e.at("hidden_dim");
    m["tie_word_embeddings"] = e.value("enable_weight_tying", false);
    if (e.value("moe_enabled", false)) {
      m["model_type"] = "qwen3_moe";
      m["num_experts"] = e.at("moe_args").at("num_experts");
      m["num_experts_per_tok"] = e.at("moe_args").at("top_k");
      m["moe_intermediate_size"] = e.at("moe_inter_dim");
    } else {
      m["model_type"] = "qwen3";
    }
  } else if (name == "deepseek_v3") {
    m["model_type"] = "deepseek_v3";
    m["intermediate_size"] = e.at("inter_dim");
    m["moe_intermediate_size"] = e.at("moe_inter_dim");
    m["first_k_dense_replace"] = e.at("n_dense_layers");
    m["n_routed_experts"] = e.at("moe_args").at("num_experts");
    m["num_experts_per_tok"] = e.at("moe_args").at("top_k");
    m["n_shared_experts"] = e.at("moe_args").at("num_shared_experts");
    if (!e.at("q_lora_rank").is_null() && e.at("q_lora_rank").get<long long>() > 0) m["q_lora_rank"] = e.at("q_lora_rank");
    m["kv_lora_rank"] = e.at("kv_lora_rank");
    m["qk_nope_head_dim"] = e.at("qk_nope_head_dim");
    m["qk_rope_head_dim"] = e.at("qk_rope_head_dim");
    m["v_head_dim"] = e.at("v_head_dim");
  } else if (name == "llama4") {
    // Llama 4 as Transformers states it (the llama4 op profile): routed and shared experts of the routed width,
    // dense layers of dense_ffn_hidden_dim, every interleave_moe_layer_step-th layer MoE ((layer_id + 1) % step
    // == 0 in torchtitan, the same layers as Transformers' moe_layers). The bundled flavours attend causally in
    // every layer (every_n_layers_nope null): all full-attention layers; the iRoPE ones chunk the others.
    routed_experts(m, e.at("moe_args"), 1, where, fmt::format("{} flavour {}", name, flavour));
    m["model_type"] = "llama4_text";
    m["head_dim"] = e.at("dim").get<long long>() / e.at("n_heads").get<long long>();
    m["intermediate_size"] = d.at("moe_expert_hidden_dim");
    m["intermediate_size_mlp"] = d.at("dense_ffn_hidden_dim");
    m["interleave_moe_layer_step"] = e.at("interleave_moe_layer_step");
    m["tie_word_embeddings"] = false;
    if (e.value("every_n_layers_nope", json()).is_null()) {
      m["layer_types"] = json(std::vector<std::string>(static_cast<std::size_t>(e.at("n_layers").get<long long>()), "full_attention"));
    } else {
      m["attention_chunk_size"] = e.at("fixed_attn_block_size");
      m["no_rope_layer_interval"] = e.at("every_n_layers_nope");
    }
  } else if (name == "gpt_oss") {
    // gpt-oss as Transformers states it (the gpt_oss op profile: biases, sinks, clamped SwiGLU): experts of
    // moe_inter_dim, sliding-window attention on the even layers (torchtitan's layer_id % 2 == 0, as
    // Transformers' layer_types), no shared expert.
    routed_experts(m, e.at("moe_args"), 0, where, fmt::format("{} flavour {}", name, flavour));
    m["model_type"] = "gpt_oss";
    m["head_dim"] = e.at("head_dim");
    m["intermediate_size"] = e.at("moe_inter_dim");
    m["sliding_window"] = e.at("sliding_window_size");
    m["tie_word_embeddings"] = false;
    std::vector<std::string> types;
    for (long long i = 0; i < e.at("n_layers").get<long long>(); ++i) types.emplace_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    m["layer_types"] = types;
  } else {
    fail(where, "model '{}' is not one sapp maps to a HuggingFace family", name);
  }
  return m;
}

// torchtitan's 2024 job TOML (before the [parallelism] section: e.g. 9dec370's train_configs/llama3_8b.toml, the
// runs of its published Llama 3 benchmarks) states the degrees in [training] and [experimental], Float8 as
// float8.enable_float8_linear and the norm as model.norm_type. Moves those keys to where v0.2 reads them, drops the
// ones nothing prices, and returns what it moved, for one note; `eager_norm` says whether model.norm_type names the
// eager RMSNorm (torchtitan/models/norms.py: "rmsnorm", unlike "fused_rmsnorm").
std::vector<std::string> read_2024_keys(json& tree, bool& eager_norm) {
  std::vector<std::string> moved;
  auto move = [&](const char* from_section, const char* key, const char* to_section, const char* to_key) {
    if (!tree.contains(from_section) || !tree[from_section].is_object() || !tree[from_section].contains(key)) return;
    json value = tree[from_section][key];
    tree[from_section].erase(key);
    if (to_section != nullptr) tree[to_section][to_key] = value;
    moved.push_back(to_section != nullptr ? fmt::format("{}.{} as {}.{}", from_section, key, to_section, to_key)
                                          : fmt::format("{}.{} (not priced)", from_section, key));
  };
  for (const char* key :
       {"data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree", "enable_async_tensor_parallel", "disable_loss_parallel"})
    move("training", key, "parallelism", key);
  for (const char* key :
       {"context_parallel_degree", "pipeline_parallel_degree", "pipeline_parallel_schedule", "enable_async_tensor_parallel", "enable_compiled_autograd"})
    move("experimental", key, "parallelism", key);
  move("training", "warmup_steps", "lr_scheduler", "warmup_steps");
  for (const char* key : {"pipeline_parallel_split_points", "pipeline_parallel_microbatches"}) move("experimental", key, nullptr, nullptr);
  if (tree.contains("float8") && tree["float8"].is_object() && tree["float8"].contains("enable_float8_linear")) {
    if (tree["float8"]["enable_float8_linear"] == true) tree["model"]["converters"].push_back("float8");
    move("float8", "enable_float8_linear", nullptr, nullptr);
    for (const char* key : {"scaling_type_input", "scaling_type_weight", "scaling_type_grad_output"}) move("float8", key, nullptr, nullptr);
  }
  if (tree.contains("model") && tree["model"].is_object() && tree["model"].contains("norm_type")) {
    eager_norm = tree["model"]["norm_type"] == "rmsnorm";
    move("model", "norm_type", nullptr, nullptr);
  }
  for (const char* section : {"experimental", "float8"})
    if (tree.contains(section) && tree[section].is_object() && tree[section].empty()) tree.erase(section);
  return moved;
}

}  // namespace

Loaded read_torchtitan(const std::string& text, const std::string& file) {
  json tree;
  try {
    tree = to_json(toml::parse(text, file));
  } catch (const toml::parse_error& e) {
    fail(file, "is not valid TOML: {} (line {})", std::string(e.description()), e.source().begin.line);
  }
  bool eager_norm = false;
  const std::vector<std::string> moved = read_2024_keys(tree, eager_norm);
  std::vector<std::string> unknown;
  check_schema(tree, "", file, unknown);
  Tree t{tree, file, {}};
  Loaded out;
  if (!moved.empty()) {
    out.legacy_schema = "2024";
    out.warnings.push_back(fmt::format("torchtitan's 2024 keys read as v0.2 states them: {}", fmt::join(moved, ", ")));
    // The PyTorch of that torchtitan (2.5.1 / 2.6) ran F.scaled_dot_product_attention as FlashAttention-2 on H100.
    put(out, "attention_kernel", "torch_sdpa", "torchtitan's 2024 schema (its PyTorch's SDPA: FlashAttention-2)");
  }
  // The eager RMSNorm (one PyTorch op per step of the norm) unless torch.compile fuses it.
  const bool compiled = t.flag("training.compile").value_or(false) || t.flag("compile.enable").value_or(false);
  if (eager_norm && !compiled) put(out, "eager_norms", true, "model.norm_type rmsnorm without torch.compile");
  // torchtitan compiles its loss (F.cross_entropy on the fp32-cast logits) with the model since bbb1b616e
  // (2025-04-02, components/loss.py build_cross_entropy_loss; [compile] components names "loss" in the v0.2 schema):
  // Inductor fuses the cast, log-softmax and its gradient, so no fp32 logits or log-softmax are kept, as a fused loss.
  // The 2024 schema's torchtitan (9dec370) left it eager ("compiling loss function causes CUDA errors").
  bool loss_compiled = compiled && out.legacy_schema.empty();
  if (const json* components = t.get("compile.components"); components && components->is_array())
    loss_compiled = compiled && std::ranges::any_of(*components, [](const json& c) { return c == "loss"; });
  if (loss_compiled) put(out, "loss_fused", true, "torch.compile of the loss (torchtitan compiles it with the model since 2025-04)");
  // The transformers_modeling_backend experiment trains a HuggingFace model named in [hf_transformers] model
  // (experiments/transformers_modeling_backend/configs/full.toml at v0.2.2), with the standard parallelism keys.
  const bool hf_backend = t.text("model.name").value_or("") == "transformers_modeling_backend";
  if (hf_backend) std::erase(unknown, std::string("[hf_transformers]"));
  if (!unknown.empty()) {
    out.warnings.push_back(fmt::format("{} section(s) or key(s) torchtitan v0.2.2 does not define (a newer torchtitan's, or an experiment's), not read: {}",
                                       unknown.size(), fmt::join(unknown, ", ")));
  }
  auto set = setter(out);
  std::string name = t.text("model.name").value_or("llama3");
  std::string flavour = t.text("model.flavor").value_or("debugmodel");
  if (!bundled_flavours().contains(name) && !hf_backend) {
    std::vector<std::string> known;
    for (const auto& [k, v] : bundled_flavours().items()) known.push_back(k);
    fail(at(file, "model.name"), "'{}' has no bundled flavours (torchtitan defines its models in code); bundled: {}", name, fmt::join(known, ", "));
  }
  json model = json::object();
  if (hf_backend) {
    // A bundled model (or a local config.json) the id names: its layer count shapes the stage split and the
    // every-N-th-block checkpointing read below, so --model cannot stand in for it.
    const std::string id = t.text("hf_transformers.model").value_or("");
    const auto named = bundled_name(id, at(file, "hf_transformers.model"),
                                    "point it at a local folder holding the model's config.json (a HuggingFace id sapp bundles, or a path)", out);
    if (!named) throw Error(out.model_error);
    model = model_tree(*named);
    set("model", *named, "hf_transformers.model");
  } else {
    model = flavour_model(name, flavour, at(file, "model.flavor"));
    if (bundled_flavours().at(name).value("variants", json::object()).contains(flavour))
      out.warnings.push_back(
          fmt::format("model.flavor {}: flex / varlen attention with block-causal masks (packed documents attend within themselves) "
                      "is priced as causal attention over the whole sequence, the most it can cost",
                      flavour));
    model["name"] = fmt::format("torchtitan {} {}", name, flavour);  // (a label: "1.7B" is no file name to take a stem of)
    out.model_config = model;
    set("model", fmt::format("torchtitan {} {}", name, flavour), "model.name / model.flavor");
  }
  const long long layers = model.at("num_hidden_layers").get<long long>();

  long long rep = t.whole("parallelism.data_parallel_replicate_degree").value_or(1);
  long long shard = t.whole("parallelism.data_parallel_shard_degree", -1).value_or(-1);
  if (shard == 0) t.bad("parallelism.data_parallel_shard_degree", "0 is neither -1 (the rest of the devices) nor a degree");
  const auto [tp, pp, cp, ep] = read_degrees(t, out,
                                             {"parallelism.tensor_parallel_degree", "parallelism.pipeline_parallel_degree",
                                              "parallelism.context_parallel_degree", "parallelism.expert_parallel_degree"});
  long long etp = t.whole("parallelism.expert_tensor_parallel_degree").value_or(1);
  if (ep > 1) {
    if (etp != 1 && etp != tp) t.bad("parallelism.expert_tensor_parallel_degree", fmt::format("{} must be 1 or the TP degree {} when EP > 1", etp, tp));
    set("etp", etp, "parallelism.expert_tensor_parallel_degree");
  } else if (tp > 1 && (model.contains("num_local_experts") || model.contains("n_routed_experts") || model.contains("num_experts"))) {
    // Without EP torchtitan's apply_moe_ep_tp shards the experts over the TP mesh (TensorParallel: experts_mesh =
    // tp_mesh when ep_mesh is None).
    set("etp", tp, "parallelism.tensor_parallel_degree (no EP: the experts are tensor-parallel)");
  }
  if (tp > 1) set("sp", true, "parallelism.tensor_parallel_degree (torchtitan's TP shards the sequence between blocks)");
  // Async TP (torch's micro-pipelined collective matmuls over SymmetricMemory) hides the TP all-gathers and
  // reduce-scatters behind their GEMMs in chunks, as Transformer Engine's userbuffers do.
  if (t.flag("parallelism.enable_async_tensor_parallel").value_or(false) && tp > 1)
    set("overlap_tp", cost::terms::kUserbuffersTpOverlap, "parallelism.enable_async_tensor_parallel");
  // disable_loss_parallel: the output projection's logits Replicate()d over TP (gathered whole) for the loss.
  if (auto off = t.flag("parallelism.disable_loss_parallel"); off && *off) set("loss_parallel", false, "parallelism.disable_loss_parallel");
  if (shard > 0) set("devices", rep * shard * tp * pp * cp, "parallelism (replicate x shard x tensor x pipeline x context degrees)");
  // fsdp_reshard_after_forward (parallelize.py apply_fsdp): never keeps the gathered parameters (ZeRO-2); default
  // reshards unless pipelining (then a stage's parameters are gathered once per step: the torchtitan profile);
  // always reshards after every forward; anything else torchtitan refuses.
  std::string reshard = t.text("parallelism.fsdp_reshard_after_forward").value_or("default");
  if (reshard != "default" && reshard != "always" && reshard != "never")
    t.bad("parallelism.fsdp_reshard_after_forward", fmt::format("'{}' is not default, always or never", reshard));
  if (reshard == "always" && pp > 1)
    out.warnings.push_back(
        "parallelism.fsdp_reshard_after_forward: always under PP re-gathers each stage's parameters per micro-batch; priced as the default (gathered once per "
        "step): "
        "the DP traffic is above the estimate and the memory below");
  // The fsdp mesh is dp_shard x cp ("when cp is used, FSDP is also applied", parallel_dims.py): FSDP whenever either
  // is above 1; with replicas (HSDP) its shard group is dp_shard x cp.
  const bool fsdp = shard != 1 || cp > 1;
  set("zero", fsdp ? (reshard == "never" ? 2 : 3) : 0,
      cp > 1 && shard == 1 ? "parallelism.context_parallel_degree (FSDP over CP)" : "parallelism.data_parallel_shard_degree");
  if (fsdp && rep > 1 && shard > 0) set("optimizer_shard", shard * cp, "parallelism.data_parallel_shard_degree x context_parallel_degree (HSDP)");
  if (fsdp && rep > 1 && shard < 0)
    out.shard_from_devices =
        Loaded::ShardFromDevices{rep, rep * tp * pp * cp, cp, "parallelism.data_parallel_shard_degree -1 with data_parallel_replicate_degree (HSDP)"};
  if (cp > 1) {
    std::string rot = t.text("parallelism.context_parallel_rotate_method").value_or("allgather");
    if (rot != "allgather" && rot != "alltoall") t.bad("parallelism.context_parallel_rotate_method", fmt::format("'{}' is not allgather or alltoall", rot));
    // Both methods exchange K,V shards for ring attention (allgather: all shards after the first sub-SDPA;
    // alltoall: shuffled shard by shard; torchtitan job_config.py): neither is the all-to-all of heads (Ulysses).
    set("cp_algo", "ring", "parallelism.context_parallel_rotate_method");
    // allgather: every K,V shard gathered once per attention pass (the torchtitan profile's cp_kv_gathered_once);
    // alltoall: a shard passed beside each step, as a ring.
    set("cp_kv_gathered_once", rot == "allgather", "parallelism.context_parallel_rotate_method");
  }

  // Batch: local_batch_size per data-parallel rank; PP micro-batches of pipeline_parallel_microbatch_size.
  long long local = t.whole("training.local_batch_size").value_or(t.whole("training.batch_size").value_or(8));
  auto global = t.whole("training.global_batch_size", -1);
  long long mbs = pp > 1 ? t.whole("parallelism.pipeline_parallel_microbatch_size").value_or(1) : local;
  if (pp > 1 && local % mbs != 0)
    t.bad("parallelism.pipeline_parallel_microbatch_size", fmt::format("{} does not divide training.local_batch_size {}", mbs, local));
  set("mbs", mbs, pp > 1 ? "parallelism.pipeline_parallel_microbatch_size" : "training.local_batch_size");
  if (global && *global > 0) {
    set("global_batch", *global, "training.global_batch_size");
  } else {
    // No global batch: local_batch_size per data-parallel rank, the ranks what the devices leave over TP x PP x CP
    // (the file's product, or --devices; with data_parallel_shard_degree -1 known once --devices is).
    out.batch_from_devices =
        Loaded::BatchFromDevices{local, tp * pp * cp,
                                 shard > 0 ? "training.local_batch_size x the data-parallel degree (the devices over TP x PP x CP)"
                                           : "training.local_batch_size x parallelism.data_parallel_shard_degree -1 (the devices over TP x PP x CP)"};
  }
  if (auto seq = t.whole("training.seq_len"))
    set("seq", *seq, "training.seq_len");
  else
    set("seq", 2048, "torchtitan's default training.seq_len (job_config.py Training.seq_len)");
  // torchtitan's runtime profile: FSDP2 keeps fp32 sharded parameters, gradients and Adam moments whatever it
  // computes in; mixed_precision_param is the dtype of the gathered copy, which sapp prices in bf16.
  set("framework", "torchtitan", "a torchtitan TOML");
  std::string param = t.text("training.mixed_precision_param").value_or("bfloat16");
  if (dtype_bytes(param, at(file, "training.mixed_precision_param")) != 2)
    out.warnings.push_back(fmt::format("training.mixed_precision_param {}: the gathered parameters and the compute are priced in bf16", param));
  // training.dtype bfloat16 "puts all parameters, gradients, and optimizer states in bfloat16, without an extra copy
  // of fp32 weights" (job_config.py Training.dtype): 2 + 2 + 2 x 2 bytes; the reduce in mixed_precision_reduce.
  if (auto dt = t.text("training.dtype"); dt && dtype_bytes(*dt, at(file, "training.dtype")) == 2) {
    set("param_bytes", 2, "training.dtype");
    set("grad_bytes", 2, "training.dtype");
    set("optimizer_bytes", 4, "training.dtype (two Adam moments in bf16, no fp32 copy)");
  }
  if (auto reduce = t.text("training.mixed_precision_reduce"); reduce && dtype_bytes(*reduce, at(file, "training.mixed_precision_reduce")) == 2)
    set("reduce_bytes", 2, "training.mixed_precision_reduce");
  if (t.flag("optimizer.early_step_in_backward").value_or(false))
    out.warnings.push_back(
        "optimizer.early_step_in_backward: each parameter steps as soon as its gradient is ready and frees it; not priced: the gradient memory is "
        "below the estimate");
  if (t.flag("training.enable_cpu_offload").value_or(false))
    out.warnings.push_back(
        "training.enable_cpu_offload: FSDP's CPU offload keeps the parameters, gradients and optimizer states in host memory; not priced: the device memory is "
        "below the estimate and the step (host transfers, a CPU optimizer step) above it");
  // Converters (registered names, components/quantization: v0.2's quantize.*, v0.1's float8 and mx); torchtitan
  // refuses a name it has not registered. The Float8 / MX linear converters swap nn.Linear modules, which the
  // grouped experts are not: their FP8 is quantize.grouped_mm.*. sapp's FP8 is one switch for every GEMM.
  if (const json* conv = t.get("model.converters")) {
    if (!conv->is_array()) t.bad("model.converters", fmt::format("{} is not a list of converter names", conv->dump()));
    bool linear = false, grouped = false, mx = false;
    for (const auto& c : *conv) {
      const std::string converter = c.is_string() ? c.get<std::string>() : c.dump();
      if (converter == "float8" || converter == "quantize.linear.float8" || converter == "mx" || converter == "quantize.linear.mx") {
        linear = true;
      } else if (converter == "quantize.grouped_mm.float8" || converter == "quantize.grouped_mm.mx") {
        grouped = true;
      } else {
        t.bad("model.converters", fmt::format("'{}' is not a converter torchtitan registers (quantize.linear.float8, quantize.linear.mx, "
                                              "quantize.grouped_mm.float8, quantize.grouped_mm.mx; v0.1: float8, mx)",
                                              converter));
      }
      mx = mx || converter.find("mx") != std::string::npos;
    }
    const bool experts = model.contains("num_local_experts") || model.contains("n_routed_experts") || model.contains("num_experts");
    if (linear) set("fp8", true, "model.converters");
    // Float8 all-gather: FSDP gathers the converted linears' weights in float8 (one byte; the norms and embeddings,
    // a small share, stay bf16).
    for (const char* section : {"quantize.linear.float8", "float8"}) {
      const std::string key = std::string(section) + ".enable_fsdp_float8_all_gather";
      if (linear && t.flag(key).value_or(false)) set("gather_bytes", 1, key);
    }
    if (mx) out.warnings.push_back("model.converters: MXFP8 is priced at the device's FP8 rate");
    if (linear && experts && !grouped)
      out.warnings.push_back("model.converters: the routed experts run in BF16 (no quantize.grouped_mm converter) but are priced in FP8 with the rest");
    if (grouped && !linear) out.warnings.push_back("model.converters: only the routed experts' grouped GEMMs run in FP8; priced in BF16 throughout");
  }

  // torchtitan runs one pipeline per gradient-accumulation step (train.py train_step: pp_schedule.step per
  // accumulation micro-batch), each over local_batch_size / pipeline_parallel_microbatch_size micro-batches.
  if (pp > 1 && global && *global > 0 && shard > 0 && *global > local * rep * shard)
    set("pipeline_runs", *global / (local * rep * shard), "training.global_batch_size / (training.local_batch_size x data-parallel degree)");
  // Stages: virtual stages per rank and the split (generate_llm_fqn_per_model_part).
  std::string schedule = t.text("parallelism.pipeline_parallel_schedule").value_or("1F1B");
  if (pp > 1) {
    // torch.distributed.pipelining's get_schedule_class names (case-insensitive); any other name raises there.
    static const std::vector<std::string> schedules = {
        "1F1B",          "Interleaved1F1B", "GPipe", "LoopedBFS", "InterleavedZeroBubble", "PipelineScheduleSingle", "PipelineScheduleMulti",
        "ZBVZeroBubble", "DualPipeV"};
    const bool known = std::any_of(schedules.begin(), schedules.end(), [&](const std::string& n) { return io::lower(n) == io::lower(schedule); });
    if (!known)
      t.bad("parallelism.pipeline_parallel_schedule", fmt::format("'{}' is not a torch pipeline schedule ({})", schedule, fmt::join(schedules, ", ")));
    if (torch_dualpipe_v(schedule)) set("dualpipe_v", true, "parallelism.pipeline_parallel_schedule DualPipeV");
    if (io::lower(schedule) == "gpipe")
      out.warnings.push_back(
          "parallelism.pipeline_parallel_schedule: GPipe is priced as 1F1B (sapp has no GPipe schedule): GPipe holds every micro-batch's activations, so its "
          "peak memory "
          "is above the estimate");
  }
  long long first_less = t.whole("parallelism.pipeline_parallel_first_stage_less_layers", 0).value_or(1);
  long long last_less = t.whole("parallelism.pipeline_parallel_last_stage_less_layers", 0).value_or(1);
  long long vpp = 1;
  std::optional<plan::StageSplit> split;
  if (pp > 1) {
    long long stages = pp * (torch_multi_stage_schedule(schedule) ? 2 : 1);
    if (auto per = t.whole("parallelism.pipeline_parallel_layers_per_stage")) stages = (layers + first_less + last_less + *per - 1) / *per;
    if (const json* parts = t.get("parallelism.module_fqns_per_model_part")) {
      if (!parts->is_array()) t.bad("parallelism.module_fqns_per_model_part", "expected a list of module-name lists");
      stages = static_cast<long long>(parts->size());
    }
    if (stages % pp != 0) t.bad("parallelism.pipeline_parallel_schedule", fmt::format("{} virtual stages do not divide over PP {}", stages, pp));
    vpp = stages / pp;
    if (vpp != 1 && !torch_multi_stage_schedule(schedule) && io::lower(schedule) != "pipelineschedulemulti")
      t.bad("parallelism.pipeline_parallel_schedule",
            fmt::format("{} is a single-stage schedule but the split gives {} stages per rank (torchtitan: \"Single stage schedule requires exactly "
                        "1 stage per rank\")",
                        schedule, vpp));
    std::vector<long long> per_stage(static_cast<std::size_t>(stages), 0);
    if (const json* parts = t.get("parallelism.module_fqns_per_model_part")) {
      long long total = 0;
      for (std::size_t s = 0; s < parts->size(); ++s) {
        for (const auto& fqn : (*parts)[s]) {
          if (fqn.is_string() && fqn.get<std::string>().rfind("layers.", 0) == 0) {
            ++per_stage[s];
            ++total;
          }
        }
      }
      if (total != layers)
        t.bad("parallelism.module_fqns_per_model_part",
              fmt::format("names {} layers.N modules, but the {} {} flavour has {} layers", total, name, flavour, layers));
    } else {
      long long effective = layers + first_less + last_less;
      long long base = effective / stages;
      long long extra = effective % stages;
      for (long long s = 0; s < stages; ++s) per_stage[static_cast<std::size_t>(s)] = base + (s < extra ? 1 : 0);
      per_stage.front() -= first_less;
      per_stage.back() -= last_less;
      for (long long n : per_stage) {
        if (n < 0) t.bad("parallelism.pipeline_parallel_first_stage_less_layers", "leaves a stage with fewer than 0 layers");
      }
    }
    split = looped_split(per_stage, pp, torch_v_schedule(schedule));
    if (split->layers == plan::even_split(layers, static_cast<int>(pp), static_cast<int>(vpp)).layers) split.reset();
  } else {
    t.use("parallelism.pipeline_parallel_schedule");
    t.use("parallelism.pipeline_parallel_microbatch_size");
  }
  set("vpp", vpp, "parallelism.pipeline_parallel_schedule");

  // Activation checkpointing.
  std::string mode = t.text("activation_checkpoint.mode").value_or("selective");
  std::string option = t.text("activation_checkpoint.selective_ac_option").value_or("2");
  if (mode == "none") {
    set("recompute", "off", "activation_checkpoint.mode");
  } else if (mode == "full") {
    set("recompute", "full", "activation_checkpoint.mode");
  } else if (mode == "selective" && option == "op") {
    set("recompute", "selective", "activation_checkpoint.selective_ac_option");
  } else if (mode == "selective") {
    if (option.empty() || option.find_first_not_of("0123456789") != std::string::npos)
      t.bad("activation_checkpoint.selective_ac_option", fmt::format("'{}' is neither op nor a layer frequency", option));
    long long every = std::stoll(option);
    if (every <= 1) {
      set("recompute", "full", "activation_checkpoint.selective_ac_option");
    } else {
      if (!split) split = plan::even_split(layers, static_cast<int>(pp), static_cast<int>(vpp));
      split->full = every_nth_block(*split, every);
      set("recompute", "off", "activation_checkpoint.selective_ac_option");
    }
  } else if (mode == "memory_budget") {
    out.warnings.push_back("activation_checkpoint.mode memory_budget is priced as selective recompute");
    set("recompute", "selective", "activation_checkpoint.mode");
  } else {
    t.bad("activation_checkpoint.mode", fmt::format("'{}' is not selective, full, memory_budget or none", mode));
  }
  out.split = split;
  for (const char* k : {"job",
                        "profiling",
                        "metrics",
                        "optimizer",
                        "lr_scheduler",
                        "checkpoint",
                        "comm",
                        "validation",
                        "training.dataset",
                        "training.dataset_path",
                        "training.steps",
                        "training.max_norm",
                        "training.dataloader",
                        "model.hf_assets_path",
                        "model.tokenizer_path",
                        "compile",
                        "training.gc_freq",
                        "training.seed",
                        "training.compile",
                        "debug"})
    t.use(k);
  // Keys of sections or names v0.2.2 does not define are already listed in their own warning: not twice.
  for (const std::string& key : t.unused()) {
    const bool listed = std::any_of(unknown.begin(), unknown.end(), [&](const std::string& u) {
      return u == key || (u.size() > 2 && u.front() == '[' && key.rfind(u.substr(1, u.size() - 2) + ".", 0) == 0);
    });
    if (!listed) out.unused.push_back(key);
  }
  return out;
}

namespace {

// The bundled torchtitan flavour with the dimensions of `spec` (torchtitan defines its models in code: a model none
// of its flavours states cannot be written as a TOML).
std::optional<std::pair<std::string, std::string>> flavour_of(const model::ModelSpec& spec) {
  if (spec.indexer) return std::nullopt;  // no flavour runs DeepSeek Sparse Attention (DeepSeek-V3.2 is not DeepSeek-V3)
  const json& flavours = bundled_flavours();
  auto same = [](const json& m, const char* key, std::optional<long long> v) { return !v || !m.contains(key) || m.at(key).get<long long>() == *v; };
  for (const auto& [name, entry] : flavours.items()) {
    if (!entry.is_object() || !entry.contains("flavors")) continue;
    for (const auto& [flavour, unused] : entry.at("flavors").items()) {
      const json m = flavour_model(name, flavour, "torchtitan flavour");
      if (m.at("hidden_size").get<long long>() == spec.hidden_size && m.at("num_hidden_layers").get<long long>() == spec.num_layers &&
          m.at("num_attention_heads").get<long long>() == spec.num_heads && m.at("vocab_size").get<long long>() == spec.vocab_size &&
          same(m, "num_key_value_heads", spec.num_kv_heads) && same(m, "intermediate_size", spec.intermediate_size))
        return std::pair{name, flavour};
    }
  }
  return std::nullopt;
}

}  // namespace

std::pair<std::string, std::string> torchtitan_model(const model::ModelSpec* spec, const std::string& model_name) {
  if (model_name.rfind("torchtitan ", 0) == 0) {
    const std::string rest = model_name.substr(model_name.find(' ') + 1);
    return {rest.substr(0, rest.find(' ')), rest.substr(rest.find(' ') + 1)};
  }
  if (auto found = spec ? flavour_of(*spec) : std::nullopt) return *found;
  fail("--emit torchtitan",
       "{} is none of torchtitan's bundled flavours (torchtitan defines its models in code, data/formats/torchtitan-flavors.yaml): "
       "start from a torchtitan TOML, or write another format",
       model_name);
}

std::string emit_torchtitan(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes) {
  const plan::Layout& l = plan.layout;
  std::string text;
  if (original) {
    // A 2024-schema file (read_2024_keys) would take v0.2's [parallelism] keys beside its own [training] degrees,
    // which its torchtitan reads instead: refused rather than written half in each schema.
    if (original->legacy_schema == "2024")
      fail("--emit torchtitan",
           "{} states torchtitan's 2024 schema (degrees in [training] and [experimental]); sapp writes the v0.2 schema ([parallelism]): "
           "write the plan as a new TOML (--emit torchtitan without --from), or move the file's degrees to [parallelism] first",
           original->file);
    text = original->text;
  } else {
    const auto [name, flavour] = torchtitan_model(plan.model ? &*plan.model : nullptr, model_name);
    // torchtitan's models have no multi-token prediction (models/deepseek_v3 at v0.2.2 builds none).
    if (plan.model && plan.model->mtp_depth.value_or(0) > 0 && notes)
      notes->push_back(
          fmt::format("torchtitan's {} {} has no multi-token prediction: the file trains {} without its {} MTP layer(s), which sapp priced "
                      "(their weights, activations and time)",
                      name, flavour, model_name, *plan.model->mtp_depth));
    text = fmt::format(
        "# torchtitan (v0.2) job config for {} on {} devices, written by sapp.\n[job]\ndescription = \"{}\"\n\n[model]\nname = \"{}\"\nflavor = \"{}\"\n",
        model_name, plan.devices, model_name, name, flavour);
  }
  if (plan::replicates_beside_other_dimensions(l)) {
    if (l.dp > 1)
      fail("--emit torchtitan",
           "the plan replicates over DP {} without sharding (ZeRO 0) beside TP {} PP {} CP {} EP {}: torchtitan's DDP takes no other "
           "dimension (\"DDP has not supported > 1D parallelism\"); price it with --zero 2 or 3",
           l.dp, l.tp, l.pp, l.cp, l.ep);
    fail("--emit torchtitan", "the plan keeps CP {} without sharding (ZeRO 0): torchtitan applies FSDP over CP; price it with --zero 2 or 3", l.cp);
  }
  long long shard = l.zero >= 1 ? (l.optimizer_shard > 0 ? l.optimizer_shard / l.cp : l.dp) : 1;
  text = toml_set(text, "parallelism", "data_parallel_replicate_degree", std::to_string(l.dp / shard));
  text = toml_set(text, "parallelism", "data_parallel_shard_degree", std::to_string(shard));
  if (l.zero == 2) text = toml_set(text, "parallelism", "fsdp_reshard_after_forward", "\"never\"");
  text = toml_set(text, "parallelism", "tensor_parallel_degree", std::to_string(l.tp));
  text = toml_set(text, "parallelism", "pipeline_parallel_degree", std::to_string(l.pp));
  text = toml_set(text, "parallelism", "context_parallel_degree", std::to_string(l.cp));
  text = toml_set(text, "parallelism", "expert_parallel_degree", std::to_string(l.ep));
  if (l.ep > 1) text = toml_set(text, "parallelism", "expert_tensor_parallel_degree", std::to_string(l.etp));
  // torchtitan's local_batch_size is one forward's batch per DP rank: the micro-batch without PP (global_batch_size
  // then accumulates the rest), one pipeline run's micro-batches together with PP (pipeline_parallel_microbatch_size
  // each; the plan's pipeline runs are the accumulation steps): the reader's rule.
  long long local = l.pp > 1 ? plan.global_batch / (1LL * l.dp * plan.pipeline_runs) : l.mbs;
  text = toml_set(text, "training", "local_batch_size", std::to_string(local));
  text = toml_set(text, "training", "global_batch_size", std::to_string(plan.global_batch));
  text = toml_set(text, "training", "seq_len", std::to_string(plan.seq));
  if (l.pp > 1) {
    text = toml_set(text, "parallelism", "pipeline_parallel_schedule", plan.dualpipe_v ? "\"DualPipeV\"" : l.vpp > 1 ? "\"Interleaved1F1B\"" : "\"1F1B\"");
    text = toml_set(text, "parallelism", "pipeline_parallel_microbatch_size", std::to_string(l.mbs));
    // The split as module names per virtual stage (chunk-major: rank r holds stages r, r + PP, ...).
    text = toml_set(text, "parallelism", "module_fqns_per_model_part",
                    flow(module_names_per_stage(placed_split(plan), {"tok_embeddings", "layers.", "norm", "output"}, plan.dualpipe_v)));
  }
  std::string mode = plan::to_string(l.recompute);
  bool every = false;
  if (plan.split && plan.split->states_recompute()) {
    const long long full = plan.split->full_total();
    const long long selective = plan.split->selective_total();
    mode = full == 0 ? (selective > 0 ? "selective" : "off") : full == plan.split->total() ? "full" : "selective";
    if (full == 0 && selective > 0 && selective < plan.split->total() && notes)
      notes->push_back(
          fmt::format("torchtitan's op-level selective checkpointing is one policy for every block: the plan's {} of {} selectively "
                      "recomputed layers are written as all",
                      selective, plan.split->total()));
    if (mode == "selective" && full > 0) {
      every = true;
      const long long every_n = std::max<long long>(2, plan.split->total() / full);
      text = toml_set(text, "activation_checkpoint", "selective_ac_option", fmt::format("\"{}\"", every_n));
      if (notes && every_nth_block(*plan.split, every_n) != plan.split->full)
        notes->push_back(
            fmt::format("torchtitan checkpoints every N-th block a rank builds (selective_ac_option N): the plan's {} of {} fully recomputed "
                        "layers per stage are written as every {}th block; read back, its peak and step differ",
                        full, plan.split->total(), every_n));
    }
  }
  text = toml_set(text, "activation_checkpoint", "mode", mode == "off" ? "\"none\"" : fmt::format("\"{}\"", mode));
  if (mode == "selective" && !every) text = toml_set(text, "activation_checkpoint", "selective_ac_option", "\"op\"");
  if (plan.fp8) {
    // v0.2's registered names (the linear layers, and the routed experts' grouped GEMMs), or v0.1's where the file
    // states it.
    const bool v01 = original && original->text.find("\"float8\"") != std::string::npos;
    const bool experts = plan.model && plan.model->is_moe();
    text = toml_set(text, "model", "converters",
                    v01       ? "[\"float8\"]"
                    : experts ? "[\"quantize.linear.float8\", \"quantize.grouped_mm.float8\"]"
                              : "[\"quantize.linear.float8\"]");
    // FSDP's gather of the converted weights in float8, as priced (gather_bytes 1; the reader's key).
    const std::string section = v01 ? "float8" : "quantize.linear.float8";
    const bool float8_gather = plan.gather_bytes == 1;
    if (float8_gather || (original && original->text.find("enable_fsdp_float8_all_gather") != std::string::npos)) {
      text = toml_set(text, section, "enable_fsdp_float8_all_gather", float8_gather ? "true" : "false");
      text = toml_set(text, section, "precompute_float8_dynamic_scale_for_fsdp", float8_gather ? "true" : "false");
    }
  }
  return text;
}

}  // namespace sapp::config::detail
