// config/automodel: NeMo AutoModel's recipe YAML (its `distributed`, `step_scheduler`, `model` and `dataset`
// sections) read as AutoModel's recipes resolve it, and a plan written back into one. The rules restated here are
// AutoModel's (github.com/NVIDIA-NeMo/Automodel, 36044ad): recipes/_dist_utils.py parse_distributed_section (sizes
// and their defaults, activation_checkpointing true / "full" / "selective"), components/distributed/mesh_utils.py
// (dp_size null: the devices over TP x CP x PP; the FSDP mesh is dp_shard x CP), training/step_scheduler.py
// (gradient accumulation = global_batch_size / (local_batch_size x dp_size)), recipes/llm/train_ft.py (under PP
// the pipeline runs local_batch_size / pp_microbatch_size micro-batches), pipelining/functional.py
// (calculate_virtual_stages, generate_hf_model_split) and docs/guides/mixed-precision-training.mdx (model.torch_dtype
// is the resident parameter's dtype; torch.optim keeps its moments in it, TE's FusedAdam in fp32). docs/configs.md.
#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "model/model_spec.hpp"

namespace sapp::config::detail {

namespace {

// calculate_virtual_stages' rounding of a virtual-stage count to a multiple of pp (round_virtual_stages_to_pp_multiple
// up or down); unchanged when it divides or `round` is neither.
long long rounded_to_pp(long long stages, long long pp, const std::string& round) {
  if (stages % pp == 0) return stages;
  if (round == "up") return stages + pp - stages % pp;
  if (round == "down") return stages - stages % pp;
  return stages;
}

// The layers each virtual stage holds: the split a list of module names per stage states
// (distributed.pipeline.module_fqns_per_model_part), or calculate_virtual_stages / generate_hf_model_split's even
// split (the first stages one more when they do not divide).
std::vector<long long> virtual_stage_layers(Tree& t, const std::string& pipeline, long long layers, long long pp, bool multi) {
  if (const json* parts = t.get(pipeline + ".module_fqns_per_model_part")) {
    if (!parts->is_array() || parts->empty()) t.bad(pipeline + ".module_fqns_per_model_part", "expected a list of module-name lists");
    std::vector<long long> per_stage;
    long long total = 0;
    for (const json& part : *parts) {
      if (!part.is_array()) t.bad(pipeline + ".module_fqns_per_model_part", "expected a list of module-name lists");
      long long n = 0;
      for (const json& fqn : part) {
        if (fqn.is_string() && fqn.get<std::string>().find("layers.") != std::string::npos) ++n;
      }
      per_stage.push_back(n);
      total += n;
    }
    if (total != layers) t.bad(pipeline + ".module_fqns_per_model_part", fmt::format("names {} layers.N modules, but the model has {} layers", total, layers));
    return per_stage;
  }
  long long stages = pp * (multi ? 2 : 1);
  if (auto per = t.whole(pipeline + ".layers_per_stage")) {
    stages = (layers + *per - 1) / *per;
    if (stages % pp != 0) {
      auto round = t.text(pipeline + ".round_virtual_stages_to_pp_multiple");
      if (!round)
        t.bad(pipeline + ".layers_per_stage",
              fmt::format("{} layers at {} per stage make {} virtual stages, which do not divide over pp_size {} (AutoModel refuses it too; "
                          "round_virtual_stages_to_pp_multiple up or down rounds them)",
                          layers, *per, stages, pp));
      if (*round != "up" && *round != "down") t.bad(pipeline + ".round_virtual_stages_to_pp_multiple", fmt::format("'{}' is neither up nor down", *round));
      stages = rounded_to_pp(stages, pp, *round);
    }
    if (stages > layers) t.bad(pipeline + ".layers_per_stage", fmt::format("{} virtual stages for {} layers", stages, layers));
  }
  std::vector<long long> per_stage(static_cast<std::size_t>(stages), layers / stages);
  for (long long s = 0; s < layers % stages; ++s) ++per_stage[static_cast<std::size_t>(s)];
  return per_stage;
}

const char* const kRecipe = "a NeMo AutoModel recipe YAML";

// The 2025 recipes (examples/benchmark/configs at 89e3a9fdd) state the pipeline as a top-level `autopipeline` section
// and activation checkpointing under `parallelizer`; today's under `distributed`. Each is read, and written back, by
// the name the file uses.
struct SchemaKeys {
  std::string pipeline = "distributed.pipeline";
  std::string checkpointing = "distributed.activation_checkpointing";
};
SchemaKeys schema_keys(const json& tree) {
  SchemaKeys k;
  if (stated_at(tree, "autopipeline") != nullptr && stated_at(tree, "distributed.pipeline") == nullptr) k.pipeline = "autopipeline";
  if (stated_at(tree, "parallelizer.activation_checkpointing") != nullptr && stated_at(tree, "distributed.activation_checkpointing") == nullptr)
    k.checkpointing = "parallelizer.activation_checkpointing";
  return k;
}

// AutoModel's loader turns string values into Python ones (components/config/loader.py translate_value): none /
// None to null, true / True / false / False to booleans, numerals to numbers; `dp_size: none` is the launch's.
json translated(const json& node) {
  if (node.is_object() || node.is_array()) {
    json out = node;
    for (auto& child : out) child = translated(child);
    return out;
  }
  if (!node.is_string()) return node;
  const std::string& v = node.get_ref<const std::string&>();
  if (v == "none" || v == "None") return nullptr;
  if (v == "true" || v == "True") return true;
  if (v == "false" || v == "False") return false;
  static const std::regex whole(R"([+-]?[0-9]+)"), real(R"([+-]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+)");
  if (v.size() < 19 && std::regex_match(v, whole)) return std::stoll(v);
  if (v.size() < 40 && std::regex_match(v, real)) return std::stod(v);
  return node;
}

}  // namespace

namespace {

// Where a model defined inline is: model.config (from_config), else model itself (a builder's fields); the node
// holds a hidden size under one of its HuggingFace names. None when neither does.
std::pair<const json*, std::string> inline_model_node(const Tree& t) {
  auto sized = [](const json* n) { return n != nullptr && n->is_object() && (n->contains("hidden_size") || n->contains("n_embd") || n->contains("d_model")); };
  if (const json* config = t.peek("model.config"); sized(config)) return {config, "model.config"};
  if (const json* model = t.peek("model"); sized(model)) return {model, "model"};
  return {nullptr, ""};
}

}  // namespace

Loaded read_automodel(const json& stated, const std::string& file) {
  const json tree = translated(stated);
  Tree t{tree, file, {}};
  const SchemaKeys keys = schema_keys(tree);
  Loaded out;
  auto set = setter(out);
  set("framework", "automodel", kRecipe);

  // The recipe (its class name, perhaps module-qualified): sapp prices one model trained for next-token prediction
  // (pre-training, fine-tuning, LoRA, benchmarking, VLM fine-tuning). A recipe that runs a second model beside the
  // one trained (knowledge distillation's teacher forward and logits, a speculative-decoding drafter's frozen
  // target) or another objective (diffusion LMs' bidirectional masked-token loss, retrieval encoders' contrastive
  // loss over queries and passages) is refused by name rather than priced as if it were the trained model alone.
  std::string recipe_path;  // `recipe: Class`, or `recipe: {_target_: module.Class}`
  if (const json* r = t.peek("recipe"); r != nullptr) {
    const json* name = r->is_object() && r->contains("_target_") ? &r->at("_target_") : r;
    if (name->is_string()) recipe_path = name->get<std::string>();
  }
  const std::string recipe_class = recipe_path.substr(recipe_path.rfind('.') + 1);
  for (const char* kind :
       {"KnowledgeDistillation", "Distill", "Eagle", "DFlash", "DSpark", "Domino", "JetSpec", "Vispec", "Diffusion", "BiEncoder", "CrossEncoder"}) {
    if (recipe_class.find(kind) != std::string::npos)
      fail(at(file, "recipe"),
           "'{}' is not a recipe sapp prices: it trains with a second model or objective (distillation's teacher, a speculative drafter's "
           "target, diffusion or retrieval losses) that sapp does not model; sapp prices next-token pre-training and fine-tuning of one "
           "model (give --model and the layout to price the trained model alone)",
           recipe_path);
  }
  if (t.peek("teacher_model") != nullptr)
    fail(at(file, "teacher_model"),
         "knowledge distillation runs the teacher's forward and keeps its weights and logits beside the student's, which sapp does not "
         "price; give --model and the layout to price the student alone");
  if (recipe_class.find("SequenceClassification") != std::string::npos)
    out.warnings.push_back(
        fmt::format("recipe {}: priced as next-token prediction (an LM head and loss over the vocabulary); a "
                    "classification head over a few labels costs less time and memory",
                    recipe_path));

  // Degrees. AutoModel's DDP and Megatron-FSDP strategies take no TP / PP / EP (mesh_utils.py); FSDP2 takes all.
  const std::string strategy = io::lower(t.text("distributed.strategy").value_or("fsdp2"));
  if (strategy != "fsdp2" && strategy != "megatron_fsdp" && strategy != "ddp")
    t.bad("distributed.strategy", fmt::format("'{}' is none of fsdp2, megatron_fsdp, ddp", strategy));
  const Degrees d = read_degrees(t, out, {"distributed.tp_size", "distributed.pp_size", "distributed.cp_size", "distributed.ep_size"});
  set("etp", 1, "distributed.ep_size (AutoModel's experts are not tensor-parallel)");
  if (t.flag("distributed.sequence_parallel").value_or(false) && d.tp > 1) set("sp", true, "distributed.sequence_parallel");
  // What AutoModel's mesh refuses (components/distributed/mesh_utils.py): PP or EP under Megatron-FSDP, TP, PP, CP or
  // EP under DDP, replicas without FSDP2, and as many replicas as data-parallel ranks.
  auto refuse_degree = [&](const char* key, long long value, const char* what) {
    if (value > 1) t.bad(key, fmt::format("{} with strategy {}: AutoModel's {} takes no {}", value, strategy, strategy, what));
  };
  if (strategy == "megatron_fsdp") {
    refuse_degree("distributed.pp_size", d.pp, "pipeline parallelism");
    refuse_degree("distributed.ep_size", d.ep, "expert parallelism");
  } else if (strategy == "ddp") {
    refuse_degree("distributed.tp_size", d.tp, "tensor parallelism");
    refuse_degree("distributed.pp_size", d.pp, "pipeline parallelism");
    refuse_degree("distributed.cp_size", d.cp, "context parallelism");
    refuse_degree("distributed.ep_size", d.ep, "expert parallelism");
  }
  // The benchmark recipe's MFU denominator: the device it was written for (989: H100; 2500: GB200), said in fill().
  if (const json* peak = t.get("benchmark.peak_tflops"); peak && peak->is_number() && peak->get<double>() > 0) {
    out.stated_peak_tflops = peak->get<double>();
    out.stated_peak_key = "benchmark.peak_tflops";
  }
  const auto dp = t.whole("distributed.dp_size");
  const long long replicate = t.whole("distributed.dp_replicate_size").value_or(1);
  if (replicate > 1 && strategy != "fsdp2")
    t.bad("distributed.dp_replicate_size", fmt::format("{} with strategy {}: AutoModel replicates only under fsdp2", replicate, strategy));
  if (dp && replicate > 1 && replicate >= *dp)
    t.bad("distributed.dp_replicate_size", fmt::format("{} is not below distributed.dp_size {} (AutoModel's FSDP2 refuses plain replication)", replicate, *dp));
  const long long model_ranks = t.product("distributed.tp_size", {d.tp, d.cp, d.pp});
  if (dp) {
    if (*dp % replicate != 0) t.bad("distributed.dp_replicate_size", fmt::format("{} does not divide distributed.dp_size {}", replicate, *dp));
    set("devices", t.product("distributed.dp_size", {*dp, model_ranks}), "distributed.dp_size x tp_size x cp_size x pp_size");
  } else {
    // The recipe leaves the data-parallel degree to the launch (torchrun's processes); its benchmark section may
    // name the nodes, not the GPUs per node (8 on H100 and B200 nodes, 4 on GB200 trays).
    auto nodes = t.whole("benchmark.num_nodes");
    out.devices_hint = nodes ? fmt::format(
                                   "distributed.dp_size is null (the launch decides it) and benchmark.num_nodes {} does not say the GPUs per node "
                                   "(--devices {} with 8 per H100 / B200 node, {} with 4 per GB200 tray)",
                                   *nodes, t.product("benchmark.num_nodes", {*nodes, 8}), t.product("benchmark.num_nodes", {*nodes, 4}))
                             : "distributed.dp_size is null (the launch decides it)";
  }

  // ZeRO: FSDP2 shards parameters, gradients and optimizer states over dp_shard x CP (ZeRO-3; with
  // reshard_after_forward false the gathered parameters stay until backward: ZeRO-2 as FSDP2 runs it, priced as
  // ZeRO-3 kept gathered under PP, where AutoModel keeps them gathered anyway); DDP replicates.
  if (strategy == "ddp") {
    set("zero", 0, "distributed.strategy");
  } else {
    // reshard_after_forward unset: resharded after every forward but the last layer's, except for an EP model, which
    // AutoModel's MoE parallelizer shards with MoEParallelizerConfig.reshard_after_forward (default False:
    // components/distributed/config.py, _transformers/infrastructure.py; distributed.moe.reshard_after_forward).
    const bool reshard =
        t.flag("distributed.reshard_after_forward").value_or(d.ep > 1 ? t.flag("distributed.moe.reshard_after_forward").value_or(false) : true);
    const bool keep_gathered = !reshard;
    const long long zero = strategy == "megatron_fsdp" ? t.whole("distributed.zero_dp_strategy", 0).value_or(3) : keep_gathered ? 2 : 3;
    if (zero > 3) t.bad("distributed.zero_dp_strategy", fmt::format("{} is not a ZeRO stage 0-3", zero));
    set("zero", zero, strategy == "megatron_fsdp" ? "distributed.zero_dp_strategy" : "distributed.strategy");
    if (replicate > 1 && dp) {
      set("optimizer_shard", t.product("distributed.cp_size", {*dp / replicate, d.cp}), "distributed.dp_replicate_size (HSDP: sharded within dp_shard x CP)");
    } else if (replicate > 1) {
      // dp_size left to the launch: the shard group is (the devices over TP x CP x PP) / replicas x CP once --devices
      // says the devices (mesh_utils.py infers dp_size the same way).
      out.shard_from_devices = Loaded::ShardFromDevices{replicate, t.product("distributed.dp_replicate_size", {replicate, model_ranks}), d.cp,
                                                        "distributed.dp_replicate_size with dp_size null"};
    }
  }

  // defer_fsdp_grad_sync (default True, components/distributed/config.py; recipes/llm/train_ft.py): the backwards
  // of all but a step's last micro-batch skip FSDP's gradient sync, so gradients accumulate unsharded and are
  // reduce-scattered once per step.
  if (strategy != "ddp" && strategy != "megatron_fsdp")
    set("defer_grad_sync", t.flag("distributed.defer_fsdp_grad_sync").value_or(true), "distributed.defer_fsdp_grad_sync (default true)");

  // Recompute: whole decoder blocks (true, "full"), or torchtitan's op-level policy ("selective").
  if (const json* ac = t.get(keys.checkpointing)) {
    std::string mode = ac->is_boolean() ? (ac->get<bool>() ? "full" : "off") : ac->is_string() ? io::lower(ac->get<std::string>()) : "";
    if (mode == "true" || mode == "on" || mode == "enabled" || mode == "yes") mode = "full";
    if (mode == "false" || mode == "none" || mode == "disabled" || mode == "no") mode = "off";
    if (mode != "full" && mode != "off" && mode != "selective")
      t.bad(keys.checkpointing, fmt::format("'{}' is none of true, false, full, selective", ac->dump()));
    set("recompute", mode, keys.checkpointing);
    if (mode == "selective") set("recompute_modules", json::array({"torchtitan_op_sac"}), keys.checkpointing);
  } else {
    set("recompute", "off", keys.checkpointing + " (absent: off)");
  }

  // Batch: local_batch_size samples per data-parallel rank per forward (without PP) or per pipeline run (with PP,
  // in micro-batches of pp_microbatch_size); the global batch accumulates the rest.
  auto global = t.whole("step_scheduler.global_batch_size");
  const long long local = t.whole("step_scheduler.local_batch_size").value_or(1);
  long long mbs = local;
  if (d.pp > 1) {
    mbs = t.whole(keys.pipeline + ".pp_microbatch_size").value_or(1);
    if (local % mbs != 0) t.bad(keys.pipeline + ".pp_microbatch_size", fmt::format("{} does not divide step_scheduler.local_batch_size {}", mbs, local));
    if (local / mbs < d.pp)
      t.bad("step_scheduler.local_batch_size",
            fmt::format("{} / pp_microbatch_size {} = {} micro-batches, fewer than pp_size {} (AutoModel asserts the same)", local, mbs, local / mbs, d.pp));
  }
  set("mbs", mbs, d.pp > 1 ? keys.pipeline + ".pp_microbatch_size" : "step_scheduler.local_batch_size");
  if (global) {
    set("global_batch", *global, "step_scheduler.global_batch_size");
    if (dp && *global % t.product("step_scheduler.local_batch_size", {local, *dp}) != 0)
      t.bad("step_scheduler.global_batch_size",
            fmt::format("{} is not a multiple of local_batch_size x dp_size = {} x {} (AutoModel refuses it too)", *global, local, *dp));
    // Each accumulation step runs the pipeline schedule once, with its own fill and drain (train_ft.py).
    if (dp && d.pp > 1 && *global / (local * *dp) > 1)  // local x dp checked above
      set("pipeline_runs", *global / (local * *dp), "step_scheduler.global_batch_size / (local_batch_size x dp_size)");
    if (!dp && d.pp > 1)
      out.runs_from_devices =
          Loaded::RunsFromDevices{*global, local, model_ranks, "step_scheduler.global_batch_size / (local_batch_size x the devices over TP x CP x PP)"};
  } else if (dp) {
    set("global_batch", t.product("step_scheduler.local_batch_size", {local, *dp}), "step_scheduler.local_batch_size x dp_size");
  } else {
    out.batch_from_devices = Loaded::BatchFromDevices{local, model_ranks, "step_scheduler.local_batch_size x dp_size (the devices over TP x CP x PP)"};
  }
  std::string seq_from;
  // packed_sequence_size 0 turns packing off.
  if (auto packed = t.whole("packed_sequence.packed_sequence_size", 0); packed && *packed > 0)
    set("seq", *packed, "packed_sequence.packed_sequence_size");
  else if (auto seq = t.whole_of({"dataset.seq_len", "dataset.seq_length", "dataset.max_length"}, seq_from))
    set("seq", *seq, seq_from);
  else
    out.warnings.push_back(
        "no sequence length stated (dataset.seq_len, packed_sequence.packed_sequence_size): priced at --seq (default 4096 tokens); a fine-tuning "
        "dataset's batches are padded to their longest sequence, which the file does not say");

  // Model: a HuggingFace id (model.pretrained_model_name_or_path, or model.config's for from_config) resolved to a
  // bundled model or a local config.
  std::string id_from;
  auto id = t.text("model.pretrained_model_name_or_path");
  id_from = "model.pretrained_model_name_or_path";
  if (!id) {
    id = t.text("model.config.pretrained_model_name_or_path");
    id_from = "model.config.pretrained_model_name_or_path";
  }
  long long inline_layers = 0;
  if (id) {
    if (auto name = bundled_name(*id, at(file, id_from), "give sapp --model NAME or a config.json", out)) set("model", *name, id_from);
  } else if (const auto [node, path] = inline_model_node(t); node != nullptr) {
    // A model defined inline: from_config with a Transformers config class and its fields (model.config), or one of
    // AutoModel's builders with its fields (model._target_ nemo_automodel.components.models.gpt2.build_gpt2_model:
    // GPT-2's n_embd, n_layer, ...). HuggingFace keys; the family named by the class's module
    // (transformers.models.<model_type>.configuration_..., nemo_automodel.components.models.<model_type>.) or, for a
    // bare class name, by the class (GPT2Config: gpt2).
    json m = *node;
    const std::string target = m.value("_target_", "");
    for (const char* key : {"_target_", "torch_dtype", "attn_implementation", "backend", "config", "pretrained_model_name_or_path"}) m.erase(key);
    if (!m.contains("model_type")) {
      const std::size_t at_models = target.find("models.");
      const std::string last = target.substr(target.rfind('.') + 1);
      if (at_models != std::string::npos) {
        const std::size_t begin = at_models + 7;
        m["model_type"] = target.substr(begin, target.find('.', begin) - begin);
      } else if (last.size() > 6 && last.compare(last.size() - 6, 6, "Config") == 0) {
        m["model_type"] = io::lower(last.substr(0, last.size() - 6));
      }
    }
    m["_source"] = file;
    for (const char* key : {"num_hidden_layers", "n_layer", "num_layers"}) {
      if (m.contains(key) && m.at(key).is_number_integer()) {
        inline_layers = m.at(key).get<long long>();
        break;
      }
    }
    for (const auto& [key, unused] : node->items()) t.use(path + "." + key);
    out.model_config = m;
    set("model", file, path);
  } else if (t.peek("model") != nullptr) {
    fail(at(file, "model"),
         "names no model sapp reads: a HuggingFace id (pretrained_model_name_or_path, or config.pretrained_model_name_or_path), or a model defined "
         "inline with its hidden size (config.hidden_size / n_embd / d_model, or the builder's own fields)");
  }

  // Bytes: model.torch_dtype is the resident (sharded) parameter's dtype, unset or auto resolving to bf16;
  // torch.optim keeps Adam's two moments in it, Transformer Engine's FusedAdam in fp32.
  std::string dtype = t.text("model.torch_dtype").value_or("auto");
  const double param_bytes = io::lower(dtype) == "auto" ? 2 : dtype_bytes(dtype, at(file, "model.torch_dtype"));
  const std::string optimizer = t.text("optimizer._target_").value_or("torch.optim.AdamW");
  const bool te_adam = optimizer.find("transformer_engine") != std::string::npos;
  set("param_bytes", param_bytes, "model.torch_dtype");
  set("grad_bytes", param_bytes, "model.torch_dtype (gradients in the parameter's dtype)");
  set("optimizer_bytes", te_adam ? 8.0 : 2 * param_bytes, "optimizer._target_ and model.torch_dtype");
  // FSDP2's MixedPrecisionPolicy default (components/distributed/config.py): gradients reduced (and, when their sync
  // is deferred, accumulated) in fp32.
  if (strategy == "fsdp2") set("reduce_bytes", 4, "distributed mp_policy (reduce_dtype float32)");

  // The loss: FusedLinearCrossEntropy (components/loss/linear_ce.py, Cut Cross-Entropy) never builds the logits;
  // MaskedCrossEntropy (components/loss/masked_ce.py; the recipes' default loss, recipes/llm/train_ft.py) casts the
  // logits to fp32 unless fp32_upcast is false and runs F.cross_entropy, whose log-softmax and gradient are fp32
  // (loss_fused false); with fp32_upcast false they stay in bf16, the bytes of the fused price (the head's kept
  // bf16 logits and a 4-byte copy against bf16 logits, log-softmax and gradient); TEParallelCrossEntropy is fused.
  const std::string loss = t.text("loss_fn._target_").value_or("MaskedCrossEntropy");
  if (loss.find("FusedLinearCrossEntropy") != std::string::npos) {
    set("loss_chunked", true, "loss_fn._target_");
  } else if (loss.find("MaskedCrossEntropy") != std::string::npos) {
    const bool upcast = t.flag("loss_fn.fp32_upcast").value_or(true);
    set("loss_fused", !upcast,
        t.get("loss_fn._target_") ? "loss_fn._target_ MaskedCrossEntropy, loss_fn.fp32_upcast" : "the recipes' default loss (MaskedCrossEntropy)");
  }

  // Kernels and precision. Transformer Engine's attention (model.backend.attn te) and Transformers' flash_attention_3
  // run at today's fused kernels' rate (--attention-kernel auto), flash_attention_2 and sdpa at FlashAttention-2's
  // (torch_sdpa).
  // AutoModel's own Llama (model._target_ nemo_automodel.components.models.llama.model.build_llama_model,
  // components/models/llama/model.py) builds its layers from Transformers' LlamaRMSNorm, run as eager PyTorch ops,
  // and sets attn_implementation flash_attention_2 unless the config names one.
  const std::string model_target = t.text("model._target_").value_or("");
  const bool automodel_llama = model_target.size() >= 17 && model_target.compare(model_target.size() - 17, 17, "build_llama_model") == 0;
  if (automodel_llama) set("eager_norms", true, "model._target_ build_llama_model (Transformers' LlamaRMSNorm, eager)");
  std::string attention_from;  // the key that says the attention is not Transformer Engine's, if one does
  if (auto attn = t.text("model.backend.attn")) {
    set("attention_kernel", *attn == "sdpa" || *attn == "flex" ? "torch_sdpa" : "auto", "model.backend.attn");
    if (*attn != "te") attention_from = "model.backend.attn";
  } else if (auto impl = t.text("model.attn_implementation")) {
    set("attention_kernel", impl->find("flash_attention_3") != std::string::npos ? "auto" : "torch_sdpa", "model.attn_implementation");
    attention_from = "model.attn_implementation";
  } else if (automodel_llama) {
    set("attention_kernel", "torch_sdpa", "model._target_ build_llama_model (flash_attention_2 unless model.attn_implementation names another)");
    attention_from = "model._target_";
  }
  // CP without Transformer Engine's attention runs PyTorch's context parallelism with the all-gather rotater
  // (components/distributed/cp_utils.py at 2013a4dd6: make_cp_batch_and_ctx, cp_rotate_method "allgather"); with it
  // (and the THD collater) Transformer Engine's ring.
  if (d.cp > 1 && !attention_from.empty()) set("cp_kv_gathered_once", true, attention_from + " (PyTorch's CP, K,V all-gathered)");
  if (auto dispatcher = t.text("model.backend.dispatcher")) {
    set("moe_dispatcher", *dispatcher == "deepep" || *dispatcher == "hybridep" ? "deepep" : "alltoall", "model.backend.dispatcher");
  } else if (auto deepep = t.flag("model.backend.enable_deepep")) {
    set("moe_dispatcher", *deepep ? "deepep" : "alltoall", "model.backend.enable_deepep");  // the recipes of 2025
  }
  if (t.flag("model.backend.fake_balanced_gate").value_or(false)) {
    set("moe_contiguous_routing", true, "model.backend.fake_balanced_gate");
    out.warnings.push_back(
        "model.backend.fake_balanced_gate: a benchmark gate (each token's experts consecutive, every expert equally loaded); "
        "the dispatch is priced as it routes, which trained routing does not do");
  }
  // Two FP8 routes (components/models/common/utils.py TEFp8Config; components/quantization/fp8.py): Transformer
  // Engine's autocast over the TE layers of AutoModel's own models, or torchao's Float8Linear swapped in for the
  // nn.Linear layers (its filter_fqns kept out; FSDP2 may gather the converted weights in float8).
  if (auto recipe = t.text("model.backend.te_fp8.recipe")) {
    set("fp8", true, "model.backend.te_fp8.recipe");
    set("fp8_transformer_engine", true, "model.backend.te_fp8.recipe");
    out.warnings.push_back(fmt::format("model.backend.te_fp8.recipe {}: the Transformer Engine layers' GEMMs are priced at the device's FP8 rate", *recipe));
  } else if (t.flag("fp8.enabled").value_or(false)) {
    set("fp8", true, "fp8.enabled");
    set("fp8_transformer_engine", false, "fp8.enabled (torchao Float8Linear)");
    if (t.flag("fp8.enable_fsdp_float8_all_gather").value_or(false)) set("gather_bytes", 1, "fp8.enable_fsdp_float8_all_gather");
    if (stated_at(t.root, "model.backend") != nullptr)
      out.warnings.push_back(
          "fp8.enabled: torchao converts nn.Linear layers only; the model's Transformer Engine layers and grouped experts "
          "(model.backend) run in BF16 but are priced in FP8 with the rest");
  }
  for (const char* k : {"fp8.recipe_name", "fp8.precompute_float8_dynamic_scale_for_fsdp", "fp8.force_recompute_fp8_weight_in_bwd", "fp8.filter_fqns",
                        "fp8.emulate", "fp8.enabled", "fp8.enable_fsdp_float8_all_gather"})
    t.use(k);
  if (auto rank = t.whole("peft.dim")) set("lora_rank", *rank, "peft.dim");

  // Pipeline stages (looped placement: virtual stage s on rank s mod PP; the V schedules fold the second half back).
  long long vpp = 1;
  if (d.pp > 1) {
    const std::string schedule = t.text(keys.pipeline + ".pp_schedule").value_or("1f1b");
    // The split is read here, from the model's layer count: --model on the command line comes too late for it.
    if (!out.values.contains("model"))
      t.bad("distributed.pp_size",
            fmt::format("the stage split needs the model's layers, and {}: point model.pretrained_model_name_or_path at a bundled model or a local "
                        "config.json (under PP --model cannot stand in for it)",
                        id ? fmt::format("'{}' is neither a bundled model nor a local config", *id) : std::string("the recipe names no model")));
    const long long layers = inline_layers > 0 ? inline_layers : model::load_model(out.values.at("model").get<std::string>(), io::data_dir()).num_layers;
    std::vector<long long> per_stage = virtual_stage_layers(t, keys.pipeline, layers, d.pp, torch_multi_stage_schedule(schedule));
    if (static_cast<long long>(per_stage.size()) % d.pp != 0)
      t.bad(keys.pipeline, fmt::format("{} virtual stages do not divide over pp_size {}", per_stage.size(), d.pp));
    vpp = static_cast<long long>(per_stage.size()) / d.pp;
    // From a1e232161 (2025-08-27) to b3c51c328 (2025-11-12) calculate_virtual_stages made one stage more,
    // ceil(layers / layers_per_stage) + 1; an `autopipeline` file may come from either side of that change.
    if (auto per = t.whole(keys.pipeline + ".layers_per_stage"); per && keys.pipeline == "autopipeline") {
      const long long earlier =
          rounded_to_pp((layers + *per - 1) / *per + 1, d.pp, t.text(keys.pipeline + ".round_virtual_stages_to_pp_multiple").value_or(""));
      if (earlier % d.pp == 0 && earlier / d.pp != vpp)
        out.warnings.push_back(
            fmt::format("{}.layers_per_stage {}: priced as AutoModel splits since b3c51c328 (2025-11-12), {} virtual stages "
                        "(interleave {}); from a1e232161 to then it made {} (interleave {}): give --vpp {} for such a checkout",
                        keys.pipeline, *per, vpp * d.pp, vpp, earlier, earlier / d.pp, earlier / d.pp));
    }
    plan::StageSplit split = looped_split(per_stage, d.pp, torch_v_schedule(schedule));
    if (torch_dualpipe_v(schedule)) set("dualpipe_v", true, keys.pipeline + ".pp_schedule DualPipeV");
    if (split.layers != plan::even_split(layers, static_cast<int>(d.pp), static_cast<int>(vpp)).layers) out.split = split;
  }
  set("vpp", vpp, keys.pipeline + ".pp_schedule");

  for (const char* k : {"recipe",
                        "seed",
                        "benchmark",
                        "dist_env",
                        "checkpoint",
                        "loss_fn",
                        "dataloader",
                        "ci",
                        "rng",
                        "lr_scheduler",
                        "optimizer",
                        "validation_dataset",
                        "validation_dataloader",
                        "dataset._target_",
                        "dataset.num_samples",
                        "dataset.vocab_size",
                        "dataset.batch_size",
                        "model._target_",
                        "model.config._target_",
                        "model.trust_remote_code",
                        "model.backend._target_",
                        "step_scheduler.max_steps",
                        "step_scheduler.num_epochs",
                        "step_scheduler.ckpt_every_steps",
                        "step_scheduler.val_every_steps",
                        "step_scheduler.gc_every_steps",
                        "peft._target_",
                        "peft.alpha",
                        "peft.dropout",
                        "peft.target_modules"})
    t.use(k);
  for (const char* k : {"patch_inner_model", "patch_causal_lm_model", "scale_grads_in_schedule", "_target_"}) t.use(keys.pipeline + "." + k);
  for (const char* k : {"parallelizer._target_", "distributed._target_"}) t.use(k);  // the 2025 schema's classes (FSDP2Manager)
  out.unused = t.unused();
  return out;
}

Expressible expressible_automodel() {
  Expressible e{std::vector<int>{2, 3}, std::nullopt,
                "AutoModel states FSDP2 (ZeRO-3; reshard_after_forward false: ZeRO-2); its DDP strategy takes no TP, PP, CP or EP, so plain "
                "replication is not written; its cp_size runs PyTorch's ring context parallelism (no all-to-all algorithm key); "
                "activation_checkpointing is one mode for every layer",
                plan::RecomputeStated::OneModeForAll};
  e.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
  e.deepep = true;  // model.backend.dispatcher
  return e;
}

std::string emit_automodel(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes) {
  const plan::Layout& l = plan.layout;
  if (l.ep > 1 && l.etp > 1)
    fail("--emit automodel", "the plan's expert tensor parallelism {} cannot be written: AutoModel's experts are not tensor-parallel; search with --etp 1",
         l.etp);
  std::string text = original ? original->text
                              : fmt::format(
                                    "# NeMo AutoModel recipe for {} on {} devices, written by sapp.\nrecipe: TrainFinetuneRecipeForNextTokenPrediction\n"
                                    "model:\n  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained\n  pretrained_model_name_or_path: {}\n",
                                    model_name, plan.devices, model::hf_id_of_bundled(model_name, io::data_dir()).value_or(model_name));
  const json stated = original ? io::parse_yaml(original->text, original->file) : json::object();
  const SchemaKeys keys = schema_keys(stated);
  YamlEdits edits = {{"distributed.strategy", "fsdp2"},
                     {"distributed.dp_size", std::to_string(l.dp)},
                     {"distributed.tp_size", std::to_string(l.tp)},
                     {"distributed.pp_size", std::to_string(l.pp)},
                     {"distributed.cp_size", std::to_string(l.cp)},
                     {"distributed.ep_size", std::to_string(l.ep)},
                     {"distributed.sequence_parallel", l.sp ? "true" : "false"}};
  const long long shard = l.optimizer_shard > 0 ? l.optimizer_shard : l.dp * l.cp;
  edits.emplace_back("distributed.dp_replicate_size", std::to_string(std::max<long long>(1, static_cast<long long>(l.dp) * l.cp / shard)));
  // ZeRO 2 keeps the gathered weights after the forward. ZeRO 3 is AutoModel's default only without EP: its MoE
  // parallelizer keeps them (MoEParallelizerConfig.reshard_after_forward False) unless distributed.reshard_after_forward
  // says otherwise (FSDP2Config overrides it: _transformers/infrastructure.py), so it is written there, as it is where
  // the file states it.
  if (l.zero == 2) edits.emplace_back("distributed.reshard_after_forward", "false");
  if (l.zero == 3 && (l.ep > 1 || stated_at(stated, "distributed.reshard_after_forward") != nullptr))
    edits.emplace_back("distributed.reshard_after_forward", "true");
  // The EP dispatcher priced: DeepEP, or AutoModel's torch dispatcher (sapp prices it as alltoall); its default is
  // whichever library the machine has installed (BackendConfig.dispatcher).
  if (l.ep > 1) {
    if (stated_at(stated, "model.backend") == nullptr) edits.emplace_back("model.backend._target_", "nemo_automodel.components.models.common.BackendConfig");
    edits.emplace_back("model.backend.dispatcher", plan.moe_deepep ? "deepep" : "torch");
  }
  std::string mode = plan::to_string(l.recompute);
  if (plan.split && plan.split->states_recompute()) {
    const long long full = plan.split->full_total();
    mode = full == 0 ? (plan.split->selective_total() > 0 ? "selective" : "off") : "full";
    if (full > 0 && full < plan.split->total() && notes)
      notes->push_back(fmt::format("AutoModel checkpoints every decoder layer or none: the plan recomputes {} of {} layers, written as every layer", full,
                                   plan.split->total()));
  }
  edits.emplace_back(keys.checkpointing, mode == "off" ? "false" : mode == "full" ? "true" : "selective");
  // local_batch_size: one forward's batch per DP rank without PP; the pipeline's micro-batches together with PP.
  edits.emplace_back("step_scheduler.global_batch_size", std::to_string(plan.global_batch));
  edits.emplace_back("step_scheduler.local_batch_size", std::to_string(l.pp > 1 ? plan.global_batch / (1LL * l.dp * plan.pipeline_runs) : l.mbs));
  edits.emplace_back("dataset.seq_len", std::to_string(plan.seq));
  if (l.pp > 1 && plan.model && plan.model->vision)
    fail("--emit automodel",
         "PP {}: {}'s vision tower is placed on the pipeline's first stages in sapp's split, which AutoModel's module names per stage "
         "(model.layers.N) do not state; price it with --pp 1, or write hyperparallel",
         l.pp, model_name);
  if (l.pp > 1) {
    edits.emplace_back(keys.pipeline + ".pp_schedule", plan.dualpipe_v ? "dualpipev" : l.vpp > 1 ? "interleaved1f1b" : "1f1b");
    edits.emplace_back(keys.pipeline + ".pp_microbatch_size", std::to_string(l.mbs));
    // The split as HuggingFace module names per virtual stage (rank r holds stages r, r + PP, ...): it overrides
    // layers_per_stage.
    edits.emplace_back(keys.pipeline + ".module_fqns_per_model_part",
                       flow(module_names_per_stage(placed_split(plan), {"model.embed_tokens", "model.layers.", "model.norm", "lm_head"}, plan.dualpipe_v)));
  }
  // What the plan was priced with where the file states nothing (its defaults may differ from the profile's): the
  // weights' dtype (the gradients' and torch Adam's moments follow it), FSDP's deferred gradient sync, and the loss
  // (the recipes' default, MaskedCrossEntropy with its fp32 upcast, is the unfused price).
  if (stated_at(stated, "model.torch_dtype") == nullptr && (plan.param_bytes == 4 || plan.param_bytes == 2))
    edits.emplace_back("model.torch_dtype", plan.param_bytes == 4 ? "float32" : "bfloat16");
  if (stated_at(stated, "distributed.defer_fsdp_grad_sync") == nullptr)
    edits.emplace_back("distributed.defer_fsdp_grad_sync", plan.defer_grad_sync ? "true" : "false");
  if (stated_at(stated, "loss_fn") == nullptr) {
    if (plan.loss_chunked) {
      edits.emplace_back("loss_fn._target_", "nemo_automodel.components.loss.linear_ce.FusedLinearCrossEntropy");
    } else if (plan.loss_fused) {
      edits.emplace_back("loss_fn._target_", "nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy");
      edits.emplace_back("loss_fn.fp32_upcast", "false");
    }
  }
  // FP8 by the route it was priced with: Transformer Engine's current scaling over the TE layers, or torchao's
  // tensorwise Float8Linear (the LM head kept in BF16, as priced), its weights gathered in float8 when so priced.
  if (plan.fp8 && plan.fp8_transformer_engine) {
    edits.emplace_back("model.backend.te_fp8.recipe", "current");
    if (notes && stated_at(stated, "model.backend") == nullptr)
      notes->push_back("FP8 is written as model.backend.te_fp8, which applies to AutoModel's own models with Transformer Engine layers");
  } else if (plan.fp8) {
    edits.emplace_back("fp8.enabled", "true");
    edits.emplace_back("fp8.recipe_name", "tensorwise");
    const bool float8_gather = plan.gather_bytes == 1;
    edits.emplace_back("fp8.enable_fsdp_float8_all_gather", float8_gather ? "true" : "false");
    edits.emplace_back("fp8.precompute_float8_dynamic_scale_for_fsdp", float8_gather ? "true" : "false");
    if (stated_at(stated, "fp8.filter_fqns") == nullptr) edits.emplace_back("fp8.filter_fqns", "[lm_head]");
  } else {
    if (stated_at(stated, "fp8.enabled") != nullptr) edits.emplace_back("fp8.enabled", "false");
    if (stated_at(stated, "model.backend.te_fp8") != nullptr) edits.emplace_back("model.backend.te_fp8", "null");
  }
  return yaml_set_all(text, edits);
}

}  // namespace sapp::config::detail
