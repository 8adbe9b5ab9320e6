// config/megatron_fields: YAMLs whose fields are Megatron-LM's arguments under other names (Megatron-Bridge's
// ConfigContainer, NeMo 1.x's model config) read through the Megatron reader: each field the file states becomes
// its flag on a launch line, and every flag in what the reader reports (the values' origins, warnings, errors,
// unused keys) becomes the field's key path again. One translation for both readers (internal.hpp, FlagLaunch).
#include <algorithm>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"

namespace sapp::config::detail {

namespace {

// One word of the script the reader reads: quoted for its shell unless it is plain.
std::string word(const std::string& text, const std::string& where) {
  if (text.find('\'') != std::string::npos || text.find('\n') != std::string::npos) fail(where, "'{}' is not a value a Megatron argument takes", text);
  const bool plain = !text.empty() && std::ranges::all_of(text, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ',' || c == '/';
  });
  return plain ? text : "'" + text + "'";
}

// Megatron-Core's TransformerConfig / ModelParallelConfig fields under `model`, named as Megatron-LM's arguments.py
// names its flags after them: the same in Megatron-Bridge's ConfigContainer and NeMo 1.x's model config.
constexpr FlagField kCoreModelFields[] = {
    {"model.num_layers", "--num-layers", FlagKind::Value},
    {"model.hidden_size", "--hidden-size", FlagKind::Value},
    {"model.ffn_hidden_size", "--ffn-hidden-size", FlagKind::Value},
    {"model.num_attention_heads", "--num-attention-heads", FlagKind::Value},
    {"model.kv_channels", "--kv-channels", FlagKind::Value},
    {"model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", FlagKind::Value},
    {"model.qk_layernorm", "--qk-layernorm", FlagKind::Switch},
    {"model.share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", FlagKind::Negated},
    {"model.hidden_dropout", "--hidden-dropout", FlagKind::Value},
    {"model.attention_dropout", "--attention-dropout", FlagKind::Value},
    {"model.num_moe_experts", "--num-experts", FlagKind::Value},
    {"model.moe_router_topk", "--moe-router-topk", FlagKind::Value},
    {"model.moe_ffn_hidden_size", "--moe-ffn-hidden-size", FlagKind::Value},
    {"model.moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", FlagKind::Value},
    {"model.moe_grouped_gemm", "--moe-grouped-gemm", FlagKind::Switch},
    {"model.moe_token_dispatcher_type", "--moe-token-dispatcher-type", FlagKind::Value},
    {"model.moe_expert_capacity_factor", "--moe-expert-capacity-factor", FlagKind::Value},
    {"model.moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity", FlagKind::Switch},
    {"model.window_size", "--window-size", FlagKind::Joined},
    {"model.hybrid_override_pattern", "--hybrid-override-pattern", FlagKind::Value},
    {"model.tensor_model_parallel_size", "--tensor-model-parallel-size", FlagKind::Value},
    {"model.pipeline_model_parallel_size", "--pipeline-model-parallel-size", FlagKind::Value},
    {"model.virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", FlagKind::Value},
    {"model.context_parallel_size", "--context-parallel-size", FlagKind::Value},
    {"model.expert_model_parallel_size", "--expert-model-parallel-size", FlagKind::Value},
    {"model.expert_tensor_parallel_size", "--expert-tensor-parallel-size", FlagKind::Value},
    {"model.sequence_parallel", "--sequence-parallel", FlagKind::Switch},
    {"model.num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers", FlagKind::Value},
    {"model.num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers", FlagKind::Value},
    {"model.account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split", FlagKind::Switch},
    {"model.account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", FlagKind::Switch},
};

}  // namespace

std::span<const FlagField> core_model_fields() { return kCoreModelFields; }

std::string scalar_text(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  fail(where, "is {} where a number or a name was expected", v.type_name());
}

FlagLaunch::FlagLaunch(const json& tree, std::string file, std::vector<std::string> launch) : tree_(tree), file_(std::move(file)), words_(std::move(launch)) {}

void FlagLaunch::add(const std::string& flag, const std::string& path, const std::vector<std::string>& values) {
  if (has(flag)) return;  // the first source wins
  words_.push_back(flag);
  for (const std::string& v : values) words_.push_back(word(v, at(file_, path)));
  flag_paths_.emplace_back(flag, path);
}

void FlagLaunch::taken(const std::string& flag, const std::string& path) {
  if (!has(flag)) flag_paths_.emplace_back(flag, path);
}

bool FlagLaunch::has(const std::string& flag) const {
  return std::ranges::any_of(flag_paths_, [&flag](const auto& fp) { return fp.first == flag; });
}

void FlagLaunch::add_fields(std::span<const FlagField> fields) {
  fields_.insert(fields_.end(), fields.begin(), fields.end());
  for (const FlagField& f : fields) {
    const json* v = stated_at(tree_, f.path);
    if (!v || v->is_null() || f.kind == FlagKind::Layout) continue;
    const std::string where = at(file_, f.path);
    switch (f.kind) {
      case FlagKind::Switch:
      case FlagKind::Negated:
        if (!v->is_boolean()) fail(where, "is {} where true or false was expected", v->type_name());
        if (v->get<bool>() == (f.kind == FlagKind::Switch)) add(f.flag, f.path, {});
        break;
      case FlagKind::Value: {
        std::vector<std::string> values;
        if (v->is_array()) {
          for (const json& item : *v) values.push_back(scalar_text(item, where));
          if (values.empty()) break;
        } else {
          values.push_back(scalar_text(*v, where));
        }
        add(f.flag, f.path, values);
        break;
      }
      case FlagKind::Joined:
      case FlagKind::Pattern: {
        std::vector<std::string> items;
        if (v->is_array()) {
          for (const json& item : *v) items.push_back(item.is_null() ? "-1" : scalar_text(item, where));
        } else {
          items.push_back(scalar_text(*v, where));
        }
        const std::string joined = fmt::format("{}", fmt::join(items, ","));
        add(f.flag, f.path, {f.kind == FlagKind::Pattern && v->is_array() ? "[" + joined + "]" : joined});
        break;
      }
      case FlagKind::Layout: break;
    }
  }
}

std::string FlagLaunch::paths(std::string text) const {
  for (const auto& [flag, path] : flag_paths_) {
    for (std::size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + path.size())) {
      const std::size_t end = at + flag.size();
      if (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) {
        at += 1;
        continue;
      }
      text.replace(at, flag.size(), path);
    }
  }
  return text;
}

Loaded FlagLaunch::read() {
  std::string script;
  for (const std::string& w : words_) script += (script.empty() ? "" : " ") + w;
  for (const FlagField& f : fields_) taken(f.flag, f.path);  // messages about a flag the file does not state name its field too
  // The longest flags first, so that --recompute-num-layers is not read as --recompute-num... of another.
  std::ranges::sort(flag_paths_, [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  Loaded out;
  try {
    out = read_megatron(script, file_);
  } catch (const Error& e) {
    throw Error(paths(e.what()));
  }
  for (auto& [key, from] : out.origin) from = paths(from);
  for (std::string& w : out.warnings) w = paths(w);
  for (std::string& u : out.unused) u = paths(u);
  out.model_error = paths(out.model_error);
  return out;
}

WrittenFlags megatron_layout_flags(const Plan& plan, std::vector<std::string>* notes) {
  // The writer gets a model of only the plan's MTP depth (the layout string's 'm'): a new script's model flags are
  // not read here, and its checks of what a script can state of a model are not the YAML's (its model is kept).
  Plan layout = plan;
  layout.model.reset();
  if (plan.model && plan.model->mtp_depth.value_or(0) > 0) {
    layout.model.emplace();
    layout.model->mtp_depth = plan.model->mtp_depth;
    layout.model->num_layers = plan.model->num_layers;
  }
  // Each "--flag" followed by its values, several to a line; quoted values unquoted; comment lines skipped.
  WrittenFlags out;
  std::stringstream lines(emit_megatron(layout, nullptr, "the plan", notes));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind('#', 0) == 0) continue;
    std::stringstream words(line);
    std::vector<std::string>* values = nullptr;
    for (std::string w; words >> w;) {
      if (w.rfind("--", 0) == 0) {
        values = &out.flags[w];
      } else if (values != nullptr) {
        if (w.size() >= 2 && (w.front() == '"' || w.front() == '\'') && w.back() == w.front()) w = w.substr(1, w.size() - 2);
        values->push_back(w);
      }
    }
  }
  return out;
}

json WrittenFlags::value(const std::string& flag, const json& absent) const {
  auto it = flags.find(flag);
  if (it == flags.end() || it->second.empty()) return absent;
  // A whole number as YAML states one, else the text.
  auto typed = [](const std::string& text) {
    const bool whole = !text.empty() && std::ranges::all_of(text, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    return whole ? json(std::stoll(text)) : json(text);
  };
  if (it->second.size() == 1) return typed(it->second.front());
  json list = json::array();
  for (const std::string& v : it->second) list.push_back(typed(v));
  return list;
}

}  // namespace sapp::config::detail
