// config/nemo: NeMo 1.x's GPT training YAML (NeMo Framework Launcher's conf/training/<model>/*.yaml, NeMo's
// examples/nlp/language_modeling/conf/megatron_*_config.yaml: trainer / model / exp_manager sections, the config
// MegatronGPTModel reads) read as the Megatron-LM launch its fields are, and written back with the plan's layout.
// NeMo builds Megatron-Core's TransformerConfig from these fields (github.com/NVIDIA/NeMo at 8cfedd7,
// nemo/collections/nlp/models/language_modeling/megatron_base_model.py build_transformer_config and
// megatron_gpt_model.py): each field sapp prices is translated to its Megatron-LM flag and read by the Megatron reader
// (config/megatron_fields), so that both formats mean the same; docs/configs.md.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::config::detail {

namespace {

// The fields that are a Megatron-LM flag as they stand, beyond Megatron-Core's shared model fields (core_model_fields;
// the rest are translated by hand below).
constexpr FlagField kNemoFields[] = {
    {"model.override_vocab_size", "--vocab-size", FlagKind::Value},
    {"model.vocab_size", "--vocab-size", FlagKind::Value},  // NeMo's Mamba configs state it so
    {"model.bias", "--disable-bias-linear", FlagKind::Negated},
    {"model.add_bias_linear", "--disable-bias-linear", FlagKind::Negated},  // Megatron-Core's names, as NeMo's Mamba configs state them
    {"model.gated_linear_unit", "--swiglu", FlagKind::Switch},
    {"model.mamba_ssm_ngroups", "--mamba-num-groups", FlagKind::Value},
    {"model.qkv_bias", "--add-qkv-bias", FlagKind::Switch},
    {"model.ub_tp_comm_overlap", "--tp-comm-overlap", FlagKind::Switch},
    {"model.micro_batch_size", "--micro-batch-size", FlagKind::Value},
    {"model.global_batch_size", "--global-batch-size", FlagKind::Value},
    {"model.activations_checkpoint_granularity", "--recompute-granularity", FlagKind::Value},
    {"model.activations_checkpoint_method", "--recompute-method", FlagKind::Value},
    {"model.activations_checkpoint_num_layers", "--recompute-num-layers", FlagKind::Value},
    {"model.optim.overlap_grad_sync", "--overlap-grad-reduce", FlagKind::Switch},
    {"model.optim.overlap_param_sync", "--overlap-param-gather", FlagKind::Switch},
};

// A number the file states at `path` (a Hydra interpolation such as ${training.model.encoder_seq_length} is none).
const json* stated_number(const json& tree, const std::string& path) {
  const json* v = stated_at(tree, path);
  return v && v->is_number() ? v : nullptr;
}

// OmegaConf interpolations as NeMo's configs write them (NeMo Framework Launcher nests the file under `training`):
// ${.key} (a sibling), ${model.key} / ${training.model.key} (from the root), and NeMo's multiply resolver
// (${multiply:A, B}, nemo/core/config/... OmegaConf.register_new_resolver("multiply", ...)). Each string that is one
// whole interpolation sapp resolves is replaced by its value; the rest stay as written (a field sapp reads then names it).
class Interpolations {
 public:
  explicit Interpolations(const json& root) : root_(root) {}

  json resolved(const json& node, const std::string& path) {
    if (node.is_object()) {
      json out = json::object();
      for (const auto& [key, value] : node.items()) out[key] = resolved(value, path.empty() ? key : path + "." + key);
      return out;
    }
    if (!node.is_string()) return node;
    const std::string text = node.get<std::string>();
    std::size_t at = 0;
    std::optional<json> v = expression(text, at, parent(path), 0);
    return v && at == text.size() ? *v : node;
  }

 private:
  static std::string parent(const std::string& path) {
    const std::size_t dot = path.rfind('.');
    return dot == std::string::npos ? "" : path.substr(0, dot);
  }
  static void spaces(const std::string& t, std::size_t& at) {
    while (at < t.size() && t[at] == ' ') ++at;
  }
  // ${...} at `at` (or a plain number inside a resolver's arguments); none when sapp does not resolve it.
  std::optional<json> expression(const std::string& t, std::size_t& at, const std::string& here, int depth) {
    if (depth > 8) return std::nullopt;
    spaces(t, at);
    if (t.compare(at, 2, "${") != 0) {
      const std::size_t end = t.find_first_of(",}", at);
      const std::string word = t.substr(at, end == std::string::npos ? std::string::npos : end - at);
      char* stop = nullptr;
      const double d = std::strtod(word.c_str(), &stop);
      if (word.empty() || stop != word.c_str() + word.size()) return std::nullopt;
      at += word.size();
      return std::floor(d) == d && std::abs(d) < 9e15 ? json(static_cast<long long>(d)) : json(d);
    }
    at += 2;
    if (t.compare(at, 9, "multiply:") == 0) {
      at += 9;
      json product = 1LL;
      while (true) {
        std::optional<json> factor = expression(t, at, here, depth + 1);
        if (!factor || !factor->is_number() || !product.is_number()) return std::nullopt;
        long long whole = 0;
        if (factor->is_number_integer() && product.is_number_integer() && !__builtin_mul_overflow(product.get<long long>(), factor->get<long long>(), &whole))
          product = whole;
        else
          product = product.get<double>() * factor->get<double>();
        spaces(t, at);
        if (at < t.size() && t[at] == ',') {
          ++at;
          continue;
        }
        if (at < t.size() && t[at] == '}') {
          ++at;
          return product;
        }
        return std::nullopt;
      }
    }
    const std::size_t end = t.find('}', at);
    if (end == std::string::npos) return std::nullopt;
    std::string key = t.substr(at, end - at);
    at = end + 1;
    if (key.find_first_of("${:") != std::string::npos) return std::nullopt;
    if (key.rfind('.', 0) == 0) {
      key = here.empty() ? key.substr(1) : here + key;
    } else if (key.rfind("training.", 0) == 0) {
      key = key.substr(9);
    }
    const json* target = stated_at(root_, key);
    if (!target) return std::nullopt;
    if (!target->is_string()) return *target;
    std::size_t inner = 0;
    const std::string text = target->get<std::string>();
    std::optional<json> v = expression(text, inner, parent(key), depth + 1);
    return v && inner == text.size() ? v : std::optional<json>(*target);
  }

  const json& root_;
};

// NeMo's optimizers that shard their states over DP (megatron_base_model.py: with_distributed_adam).
bool distributed_optimizer(const std::string& name) { return name == "distributed_fused_adam" || name == "mcore_distributed_optim"; }

}  // namespace

bool is_nemo(const json& tree) {
  if (!tree.is_object()) return false;
  const json* model = stated_at(tree, "model");
  const json* trainer = stated_at(tree, "trainer");
  if (!model || !model->is_object() || !trainer || !trainer->is_object()) return false;
  // MindFormers' trainer section names a trainer class; NeMo's is PyTorch Lightning's Trainer arguments.
  if (trainer->contains("type") || model->contains("model_config")) return false;
  return model->contains("encoder_seq_length") || model->contains("tensor_model_parallel_size") || model->contains("mcore_gpt") ||
         (model->contains("micro_batch_size") && model->contains("global_batch_size"));
}

Loaded read_nemo(const json& stated, const std::string& file) {
  // NeMo's other model classes and tools share the trainer / model shape: refused by name, never priced as a GPT.
  for (const auto& [key, what] :
       {std::pair{"prune", "a NeMo model pruning config, not a training one"}, std::pair{"export", "a NeMo model export config, not a training one"},
        std::pair{"quantization", "a NeMo model quantization config (post-training, or quantization-aware training), which sapp does not price"}}) {
    if (stated.contains(key)) fail(at(file, key), "{}: give sapp the config the model was trained with", what);
  }
  const std::string name = stated.contains("name") && stated.at("name").is_string() ? io::lower(stated.at("name").get<std::string>()) : "";
  struct Other {
    const char* path;
    const char* what;
  };
  for (const Other& o :
       {Other{"model.encoder", "an encoder-decoder model (T5, BART, UL2, T0)"}, Other{"model.decoder", "an encoder-decoder model (T5, BART, UL2, T0)"},
        Other{"model.pipeline_model_parallel_split_rank", "an encoder-decoder model (T5, BART, UL2, T0)"},
        Other{"model.mcore_t5", "an encoder-decoder model (T5)"}, Other{"model.mcore_bert", "BERT, a bidirectional encoder"},
        Other{"model.bert_binary_head", "BERT, a bidirectional encoder"}, Other{"model.hyena", "Hyena operators in place of attention"},
        Other{"model.dec_cross_attention", "RETRO's chunked cross-attention"}}) {
    if (stated_at(stated, o.path)) fail(at(file, o.path), "{}: sapp prices decoder-only language models", o.what);
  }
  for (const auto& [word, what] : {std::pair{"retro", "RETRO's chunked cross-attention"}, std::pair{"griffin", "Griffin's recurrent (RG-LRU) blocks"},
                                   std::pair{"bert", "BERT, a bidirectional encoder"}}) {
    if (name.find(word) != std::string::npos) fail(at(file, "name"), "'{}' is {}: sapp prices decoder-only language models", name, what);
  }
  if (const json* teacher = stated_at(stated, "model.kd_teacher_restore_from_path"); teacher && !teacher->is_null())
    fail(at(file, "model.kd_teacher_restore_from_path"),
         "knowledge distillation runs a teacher model beside the student, which sapp does not price; price the student with the file without it");
  if (name.find("mamba") != std::string::npos || stated_at(stated, "model.mamba_ssm_ngroups")) {
    const json* pattern = stated_at(stated, "model.hybrid_override_pattern");
    if (!pattern || !pattern->is_string())
      fail(at(file, "model.hybrid_override_pattern"),
           "is not stated: NeMo's Mamba stack is then Megatron-Core's MambaStack of its own ratios, which sapp does not price; state the pattern "
           "(M Mamba-2, * attention, - MLP, one symbol per layer)");
  }
  Interpolations interpolations(stated);
  const json tree = interpolations.resolved(stated, "");
  // A field sapp reads that is still an interpolation: named, with what sapp resolves.
  for (const std::span<const FlagField> fields : {core_model_fields(), std::span<const FlagField>(kNemoFields)}) {
    for (const FlagField& f : fields) {
      if (const json* v = stated_at(tree, f.path); v && v->is_string() && v->get<std::string>().find("${") != std::string::npos)
        fail(at(file, f.path),
             "'{}' is an OmegaConf interpolation sapp does not resolve (it resolves ${{.key}}, ${{model.key}}, ${{training.model.key}} and "
             "${{multiply:A, B}}); state the value",
             v->get<std::string>());
    }
  }
  if (const json* peft = stated_at(tree, "model.peft"); peft && peft->is_object())
    fail(at(file, "model.peft"), "fine-tuning configs (megatron_gpt_finetuning_config.yaml) are not read: give sapp the pre-training config, or the options");
  std::vector<std::string> launch_words = {"torchrun"};
  // The world: trainer.devices per node x trainer.num_nodes, as torchrun launches it (devices -1 or a list of ids:
  // the launch's, not stated).
  const json* devices = stated_at(tree, "trainer.devices");
  const json* nodes = stated_at(tree, "trainer.num_nodes");
  const bool world_stated = devices && devices->is_number_integer() && devices->get<long long>() > 0;
  if (world_stated) {
    launch_words.insert(launch_words.end(), {"--nproc_per_node", std::to_string(devices->get<long long>())});
    if (nodes && nodes->is_number_integer()) launch_words.insert(launch_words.end(), {"--nnodes", std::to_string(nodes->get<long long>())});
  }
  launch_words.emplace_back("pretrain_gpt.py");
  FlagLaunch launch(tree, file, launch_words);
  auto add = [&launch](const std::string& flag, const std::string& path, const std::vector<std::string>& values) { launch.add(flag, path, values); };
  launch.taken("--nproc_per_node", "trainer.devices");
  launch.taken("--nnodes", "trainer.num_nodes");

  // Precision: PyTorch Lightning's trainer.precision (bf16, bf16-mixed, 16, 16-mixed; 32: fp32).
  if (const json* p = stated_at(tree, "trainer.precision"); p && !p->is_null()) {
    const std::string text = scalar_text(*p, at(file, "trainer.precision"));
    if (text.rfind("bf16", 0) == 0) {
      add("--bf16", "trainer.precision", {});
    } else if (text.rfind("16", 0) == 0) {
      add("--fp16", "trainer.precision", {});
    } else if (text.rfind("32", 0) != 0) {
      fail(at(file, "trainer.precision"), "'{}' is not one of PyTorch Lightning's precisions NeMo trains in (bf16, bf16-mixed, 16, 16-mixed, 32)", text);
    }
  }
  // FP8 through Transformer Engine (megatron_gpt_model.py: fp8_e4m3 or fp8_hybrid names the format, else NeMo refuses).
  if (const json* fp8 = stated_at(tree, "model.fp8"); fp8 && fp8->is_boolean() && fp8->get<bool>()) {
    auto on = [&tree](const char* path) {
      const json* v = stated_at(tree, path);
      return v && v->is_boolean() && v->get<bool>();
    };
    if (on("model.fp8_e4m3")) {
      add("--fp8-format", "model.fp8_e4m3", {"e4m3"});
    } else if (on("model.fp8_hybrid")) {
      add("--fp8-format", "model.fp8_hybrid", {"hybrid"});
    } else {
      fail(at(file, "model.fp8"), "true without model.fp8_e4m3 or model.fp8_hybrid: NeMo refuses it (\"fp8 enabled but fp8_format is not set\")");
    }
  }
  // Normalization: layernorm, layernorm1p (LayerNorm with zero-centred gamma) or rmsnorm.
  if (const json* n = stated_at(tree, "model.normalization"); n && !n->is_null()) {
    const std::string text = io::lower(scalar_text(*n, at(file, "model.normalization")));
    if (text == "layernorm" || text == "layernorm1p") {  // layernorm1p: zero-centred gamma, the same work
      add("--normalization", "model.normalization", {"LayerNorm"});
    } else if (text == "rmsnorm") {
      add("--normalization", "model.normalization", {"RMSNorm"});
    } else {
      fail(at(file, "model.normalization"), "'{}' is not one of the norms NeMo's Megatron-Core GPT builds (layernorm, layernorm1p, rmsnorm)", text);
    }
  }
  // Activation (nemo/collections/nlp/parts/utils_funcs.py activation_to_func; *glu: a gated linear unit).
  std::vector<std::string> notes;
  if (const json* a = stated_at(tree, "model.activation"); a && !a->is_null()) {
    const std::string text = scalar_text(*a, at(file, "model.activation"));
    if (text == "swiglu" || text == "fast-swiglu") {
      add("--swiglu", "model.activation", {});
    } else if (text == "geglu" || text == "fast-geglu") {
      add("--geglu", "model.activation", {});
    } else if (text == "squared-relu") {
      add("--squared-relu", "model.activation", {});
    } else if (text == "reglu" || text == "fast-reglu") {
      add("--swiglu", "model.activation", {});
      notes.push_back(fmt::format("model.activation: {} priced as SwiGLU (the same gated GEMMs; ReLU for SiLU)", text));
    } else if (text != "gelu" && text != "approx-gelu") {
      fail(at(file, "model.activation"), "'{}' is not one of NeMo's activations (gelu, geglu, reglu, swiglu, squared-relu, fast-*, approx-gelu)", text);
    }
  }
  // Positions: rope and learned_absolute as Megatron-LM names them; ALiBi and NeMo's other relative schemes have no
  // weights (Megatron-LM's none).
  if (const json* p = stated_at(tree, "model.position_embedding_type"); p && !p->is_null()) {
    const std::string text = io::lower(scalar_text(*p, at(file, "model.position_embedding_type")));
    add("--position-embedding-type", "model.position_embedding_type", {text == "rope" || text == "learned_absolute" ? text : "none"});
  }
  // Grouped-query attention: Megatron-LM's --group-query-attention with --num-query-groups.
  if (const json* groups = stated_number(tree, "model.num_query_groups")) {
    const json* heads = stated_at(tree, "model.num_attention_heads");
    if (!heads || *groups != *heads) {
      add("--group-query-attention", "model.num_query_groups", {});
      add("--num-query-groups", "model.num_query_groups", {scalar_text(*groups, at(file, "model.num_query_groups"))});
    }
  }
  // The sequence the dataset makes (what the run trains on), else the model's (often the dataset's is an
  // interpolation of it).
  std::string seq_path;
  for (const char* path : {"model.data.seq_length", "model.encoder_seq_length"}) {
    if (const json* v = stated_number(tree, path)) {
      add("--seq-length", path, {scalar_text(*v, at(file, path))});
      seq_path = path;
      break;
    }
  }
  if (const json* m = stated_number(tree, "model.encoder_seq_length"); m && seq_path == "model.data.seq_length" && *m != *stated_at(tree, seq_path))
    notes.push_back(fmt::format("model.encoder_seq_length {} differs from model.data.seq_length {}: priced at the dataset's (the samples the run trains on)",
                                m->dump(), stated_at(tree, seq_path)->dump()));
  // The tokenizer, where the vocabulary comes from when override_vocab_size is not stated.
  const json* library_key = stated_at(tree, "model.tokenizer.library");
  const std::string library = library_key && library_key->is_string() ? library_key->get<std::string>() : "";
  const json* type = stated_at(tree, "model.tokenizer.type");
  const json* tokenizer_model = stated_at(tree, "model.tokenizer.model");
  if (library == "megatron" && type && type->is_string()) {
    add("--tokenizer-type", "model.tokenizer.type", {type->get<std::string>()});
  } else if (library == "huggingface" && type && type->is_string()) {
    add("--tokenizer-type", "model.tokenizer.library", {"HuggingFaceTokenizer"});
    add("--tokenizer-model", "model.tokenizer.type", {type->get<std::string>()});
  } else if (library == "sentencepiece" && tokenizer_model && tokenizer_model->is_string()) {
    add("--tokenizer-type", "model.tokenizer.library", {"SentencePieceTokenizer"});
    add("--tokenizer-model", "model.tokenizer.model", {tokenizer_model->get<std::string>()});
  }
  // The optimizer: NeMo's distributed Adam (Apex's, or Megatron-Core's) shards its states over DP.
  const json* optim = stated_at(tree, "model.optim.name");
  const std::string optim_name = optim && optim->is_string() ? optim->get<std::string>() : "";
  if (distributed_optimizer(optim_name)) add("--use-distributed-optimizer", "model.optim.name", {});
  launch.add_fields(core_model_fields());
  launch.add_fields(kNemoFields);
  Loaded out = launch.read();
  out.dialect = kNemoDialect;
  out.warnings.insert(out.warnings.end(), notes.begin(), notes.end());
  put(out, "framework", "nemo", "NeMo 1.x GPT YAML");
  if (!world_stated && !out.values.contains("devices"))
    out.devices_hint = "its trainer.devices is not a count of devices per node (-1 or a list of GPU ids: the launch decides)";
  // Gradients: Megatron-Core's DDP reduces in fp32 unless optim.grad_sync_dtype says bf16 (megatron_gpt_model.py
  // setup_mcore_distributed_parallel: grad_reduce_in_fp32 = grad_sync_dtype == fp32).
  if (const json* dtype = stated_at(tree, "model.optim.grad_sync_dtype"); dtype && dtype->is_string()) {
    put(out, "grad_bytes", dtype_bytes(dtype->get<std::string>(), at(file, "model.optim.grad_sync_dtype")), "model.optim.grad_sync_dtype");
  } else if (distributed_optimizer(optim_name)) {
    put(out, "grad_bytes", 4, "model.optim.grad_sync_dtype (unset: fp32, NeMo's grad_reduce_in_fp32)");
  }
  // Without megatron_amp_O2 PyTorch Lightning's AMP keeps fp32 weights, which are then the Adam master themselves.
  if (const json* o2 = stated_at(tree, "model.megatron_amp_O2"); o2 && o2->is_boolean() && !o2->get<bool>()) {
    put(out, "param_bytes", 4, "model.megatron_amp_O2");
    put(out, "optimizer_bytes", 8, "model.megatron_amp_O2");
  }
  if (const json* v = stated_at(tree, "model.fp8_params"); v && v->is_boolean() && out.values.value("fp8", false))
    put(out, "fp8_param_gather", v->get<bool>(), "model.fp8_params");
  // PyTorch FSDP (nemo/collections/nlp/parts/nlp_overrides.py: full = FULL_SHARD, grad = SHARD_GRAD_OP).
  if (const json* fsdp = stated_at(tree, "model.fsdp"); fsdp && fsdp->is_boolean() && fsdp->get<bool>()) {
    const json* strategy = stated_at(tree, "model.fsdp_sharding_strategy");
    const std::string s = strategy && strategy->is_string() ? strategy->get<std::string>() : "full";
    if (s != "full" && s != "grad")
      fail(at(file, "model.fsdp_sharding_strategy"), "'{}' is not one of NeMo's FSDP strategies (full, grad; hybrid is refused by NeMo)", s);
    put(out, "zero", s == "full" ? 3 : 2, strategy ? "model.fsdp_sharding_strategy" : "model.fsdp");
  }
  // Fields that change memory or time in ways sapp does not price.
  for (const char* path : {"model.cpu_offloading"}) {
    if (const json* v = stated_at(tree, path); v && v->is_boolean() && v->get<bool>())
      out.warnings.push_back(fmt::format("{}: true is not priced (sapp prices the run as if it were false)", path));
  }
  for (const char* path : {"model.num_micro_batches_with_partial_activation_checkpoints", "model.activations_checkpoint_layers_per_pipeline"}) {
    if (const json* v = stated_number(tree, path); v && v->get<double>() > 0)
      out.warnings.push_back(fmt::format("{}: {} is not priced (recompute as the other activations_checkpoint_* fields state it)", path, v->dump()));
  }
  return out;
}

std::string emit_nemo(const Plan& plan, const Loaded* original, std::vector<std::string>* notes) {
  if (original == nullptr)
    fail("--emit nemo", "edits the NeMo 1.x YAML given with --from (its model, tokenizer and data are its own): give --from that file, or write megatron");
  const WrittenFlags flags = megatron_layout_flags(plan, notes);
  const json tree = io::parse_yaml(original->text, original->file);
  const plan::Layout& l = plan.layout;
  YamlEdits edits = {
      {"model.tensor_model_parallel_size", flow(l.tp)},
      {"model.pipeline_model_parallel_size", flow(l.pp)},
      {"model.virtual_pipeline_model_parallel_size", l.vpp > 1 ? flow(l.vpp) : flow(nullptr)},
      {"model.context_parallel_size", flow(l.cp)},
      {"model.expert_model_parallel_size", flow(l.ep)},
      {"model.sequence_parallel", flow(flags.on("--sequence-parallel"))},
      {"model.micro_batch_size", flow(l.mbs)},
      {"model.global_batch_size", flow(plan.global_batch)},
      {"model.activations_checkpoint_granularity", flow(flags.value("--recompute-granularity", nullptr))},
      {"model.activations_checkpoint_method", flow(flags.value("--recompute-method", nullptr))},
      {"model.activations_checkpoint_num_layers", flow(flags.value("--recompute-num-layers", nullptr))},
  };
  // A field the plan leaves at its default (null, or 1 for CP and EP) is written only where the file states it.
  std::erase_if(edits, [&tree, &l](const auto& edit) {
    const bool unit = (edit.first == "model.context_parallel_size" && l.cp == 1) || (edit.first == "model.expert_model_parallel_size" && l.ep == 1);
    return (edit.second == "null" || unit) && !stated_at(tree, edit.first);
  });
  // Expert TP: Megatron-Core takes TP when unset; written for a MoE model whose plan's differs, or where the file states it.
  const json* experts = stated_at(tree, "model.num_moe_experts");
  if ((experts && !experts->is_null() && l.etp != l.tp) || stated_at(tree, "model.expert_tensor_parallel_size"))
    edits.emplace_back("model.expert_tensor_parallel_size", flow(l.etp));
  // The optimizer: the file's distributed one (Apex's or Megatron-Core's) kept under ZeRO-1, Megatron-Core's
  // otherwise; ZeRO 0: NeMo's fused Adam.
  const json* optim = stated_at(tree, "model.optim.name");
  const std::string name = optim && optim->is_string() ? optim->get<std::string>() : "";
  if (l.zero >= 1 && !distributed_optimizer(name)) edits.emplace_back("model.optim.name", flow("mcore_distributed_optim"));
  if (l.zero == 0 && (distributed_optimizer(name) || name.empty())) edits.emplace_back("model.optim.name", flow("fused_adam"));
  for (const auto& [path, flag] :
       {std::pair{"model.optim.overlap_grad_sync", "--overlap-grad-reduce"}, std::pair{"model.optim.overlap_param_sync", "--overlap-param-gather"}}) {
    if (stated_at(tree, path) || flags.on(flag)) edits.emplace_back(path, flow(flags.on(flag)));
  }
  // The split: NeMo states the first and the last stage's layer counts, the rest even (megatron_gpt_model.py).
  std::optional<long long> first, last;
  if (plan.split) {
    const plan::ChunkCounts& layers = plan.split->layers;
    bool expressible = layers.size() == 1 && layers[0].size() >= 2;
    if (expressible) {
      const std::vector<long long>& stages = layers[0];
      for (std::size_t s = 2; s + 1 < stages.size(); ++s) expressible = expressible && stages[s] == stages[1];
      if (stages.size() > 2) {
        if (stages.front() != stages[1]) first = stages.front();
        if (stages.back() != stages[1]) last = stages.back();
      } else {
        first = stages.front();
      }
    }
    if (!expressible)
      fail("--emit nemo",
           "NeMo 1.x states a pipeline split only as num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage, one chunk per stage: this "
           "plan's split cannot be written (write megatron or megatron-bridge, whose layout states it, or price the even split)");
  }
  for (const auto& [path, count] : {std::pair{"model.num_layers_in_first_pipeline_stage", first}, std::pair{"model.num_layers_in_last_pipeline_stage", last}}) {
    if (count || stated_at(tree, path)) edits.emplace_back(path, count ? flow(*count) : flow(nullptr));
  }
  // The world: trainer.devices per node (the file's, or the plan's devices when fewer) x trainer.num_nodes.
  const json* per_node = stated_at(tree, "trainer.devices");
  long long devices = per_node && per_node->is_number_integer() && per_node->get<long long>() > 0 ? per_node->get<long long>() : 0;
  if (devices == 0 || plan.devices < devices) devices = plan.devices;
  if (plan.devices % devices != 0)
    fail("--emit nemo", "the plan's {} devices are not a whole number of nodes of trainer.devices {}: give --devices a multiple of it", plan.devices, devices);
  edits.emplace_back("trainer.devices", flow(devices));
  edits.emplace_back("trainer.num_nodes", flow(plan.devices / devices));
  return yaml_set_all(original->text, edits);
}

}  // namespace sapp::config::detail
