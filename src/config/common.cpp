// config: format detection, the shared tree reader, filling a request, and line-level YAML/TOML edits.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "hardware/hardware.hpp"
#include "model/family.hpp"
#include "model/model_spec.hpp"

namespace sapp::config {

using nlohmann::json;

namespace detail {

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

void leaves(const json& node, const std::string& prefix, std::vector<std::string>& out) {
  if (node.is_object() && !node.empty()) {
    for (const auto& [key, value] : node.items()) leaves(value, prefix.empty() ? key : prefix + "." + key, out);
  } else if (!prefix.empty()) {
    out.push_back(prefix);
  }
}

}  // namespace

const json* Tree::get(const std::string& path) {
  used.insert(path);
  return peek(path);
}

const json* Tree::peek(const std::string& path) const {
  const json* node = &root;
  for (const std::string& part : split_path(path)) {
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &node->at(part);
  }
  return node->is_null() ? nullptr : node;
}

void Tree::bad(const std::string& path, const std::string& what) const { fail(at(file, path), "{}", what); }

long long Tree::product(const std::string& path, std::initializer_list<long long> factors) const {
  long long out = 1;
  for (long long f : factors) {
    if (__builtin_mul_overflow(out, f, &out)) bad(path, fmt::format("the product of the sizes it enters is beyond 64 bits"));
  }
  return out;
}

std::optional<long long> Tree::whole(const std::string& path, long long lowest) {
  const json* v = get(path);
  if (v == nullptr) return std::nullopt;
  long long out = 0;
  constexpr long long kLimit = 1LL << 40;
  const bool beyond_limit = (v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(kLimit)) ||
                            (v->is_number_float() && std::fabs(v->get<double>()) > static_cast<double>(kLimit));
  if (beyond_limit) {
    bad(path, fmt::format("{} is above the limit of {}", v->dump(), kLimit));
  } else if (v->is_number_integer() && !v->is_boolean()) {
    out = v->get<long long>();
  } else if (v->is_number_float() && v->get<double>() == std::floor(v->get<double>())) {
    out = static_cast<long long>(v->get<double>());
  } else {
    bad(path, fmt::format("expected a whole number, got {}", v->dump()));
  }
  if (out < lowest) bad(path, fmt::format("{} is below the minimum of {}", out, lowest));
  if (out > kLimit) bad(path, fmt::format("{} is above the limit of {}", out, kLimit));
  return out;
}

std::optional<long long> Tree::whole_of(std::initializer_list<const char*> paths, std::string& found, long long lowest) {
  for (const char* p : paths) {
    if (get(p) != nullptr) {
      found = p;
      return whole(p, lowest);
    }
  }
  return std::nullopt;
}

std::optional<bool> Tree::flag(const std::string& path) {
  const json* v = get(path);
  if (v == nullptr) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_string()) {
    std::string t = io::lower(v->get<std::string>());
    if (t == "true" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "no" || t == "off") return false;
  }
  bad(path, fmt::format("expected true or false, got {}", v->dump()));
}

std::optional<std::string> Tree::text(const std::string& path) {
  const json* v = get(path);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) bad(path, fmt::format("expected text, got {}", v->dump()));
  return v->get<std::string>();
}

std::vector<std::string> Tree::unused() const {
  std::vector<std::string> all;
  leaves(root, "", all);
  std::vector<std::string> out;
  for (const std::string& path : all) {
    bool hit = false;
    std::string p = path;
    while (true) {
      if (used.count(p)) {
        hit = true;
        break;
      }
      std::size_t dot = p.rfind('.');
      if (dot == std::string::npos) break;
      p = p.substr(0, dot);
    }
    if (!hit) out.push_back(path);
  }
  return out;
}

double dtype_bytes(const std::string& name, const std::string& where) {
  std::string t = io::lower(name);
  if (t == "bfloat16" || t == "bf16" || t == "float16" || t == "fp16" || t == "half" || t == "torch.bfloat16" || t == "torch.float16") return 2;
  if (t == "float32" || t == "fp32" || t == "float" || t == "torch.float32") return 4;
  fail(where, "'{}' is not a dtype sapp knows (bfloat16, float16, float32)", name);
}

void put(Loaded& out, const std::string& key, const json& value, const std::string& from) {
  out.values[key] = value;
  out.origin[key] = from;
}

std::optional<std::string> bundled_name(const std::string& id, const std::string& where, const std::string& hint, Loaded& out) {
  if (auto named = model::bundled_model_named(id, io::data_dir())) return *named;
  if (io::exists(id)) return id;
  if (io::exists(id + "/config.json")) return id + "/config.json";
  const std::string lower = io::lower(io::last_component(id));
  out.model_error = fmt::format("{}: '{}' is neither a bundled model ({} is not one) nor a local config; {}", where, id, lower, hint);
  return std::nullopt;
}

json model_tree(const std::string& bundled_or_path) {
  return io::read_tree(io::exists(bundled_or_path) ? bundled_or_path : io::data_dir() + "/models/" + bundled_or_path + ".json");
}

const json* stated_at(const json& tree, const std::string& path) {
  const json* node = &tree;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &node->at(key);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

namespace {
// A schedule name without case or underscores: "interleaved_1f1b" and "Interleaved1F1B" alike.
std::string schedule_key(const std::string& schedule) {
  std::string s = io::lower(schedule);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  return s;
}
}  // namespace

bool torch_v_schedule(const std::string& schedule) {
  const std::string s = schedule_key(schedule);
  return s.find("zbv") != std::string::npos || s.find("dualpipev") != std::string::npos || s == "vschedule";
}

bool torch_dualpipe_v(const std::string& schedule) { return schedule_key(schedule) == "dualpipev"; }

bool torch_multi_stage_schedule(const std::string& schedule) {
  const std::string s = schedule_key(schedule);
  return torch_v_schedule(schedule) || s.find("interleaved") != std::string::npos || s.find("looped") != std::string::npos ||
         s.find("zerobubble") != std::string::npos;
}

plan::StageSplit looped_split(const std::vector<long long>& per_stage, long long pp, bool v_shape) {
  plan::StageSplit split;
  const auto stages = static_cast<long long>(per_stage.size());
  split.layers.assign(static_cast<std::size_t>(stages / pp), std::vector<long long>(static_cast<std::size_t>(pp), 0));
  for (long long s = 0; s < stages; ++s) {
    split.layers[static_cast<std::size_t>(s / pp)][static_cast<std::size_t>(plan::rank_of_virtual(pp, s, v_shape))] = per_stage[static_cast<std::size_t>(s)];
  }
  return split;
}

json module_names_per_stage(const plan::StageSplit& split, const ModuleNames& names, bool v_shape) {
  json parts = json::array();
  long long next = 0;
  for (std::size_t c = 0; c < split.layers.size(); ++c) {
    const auto pp = static_cast<long long>(split.layers[c].size());
    for (std::size_t k = 0; k < split.layers[c].size(); ++k) {
      const auto s = static_cast<std::size_t>(plan::rank_of_virtual(pp, static_cast<long long>(c) * pp + static_cast<long long>(k), v_shape));
      json part = json::array();
      if (c == 0 && k == 0) part.push_back(names.embedding);
      for (long long i = 0; i < split.layers[c][s]; ++i) part.push_back(fmt::format("{}{}", names.layer_prefix, next++));
      if (c + 1 == split.layers.size() && k + 1 == split.layers[c].size()) {
        part.push_back(names.norm);
        part.push_back(names.head);
      }
      parts.push_back(part);
    }
  }
  return parts;
}

plan::StageSplit placed_split(const Plan& plan) {
  if (plan.split) return *plan.split;
  // The even split counts its chunks in pipeline order; placed on their ranks (DualPipe-V's second chunks run back up).
  std::vector<long long> per_virtual;
  for (const auto& chunk : plan::even_split(plan.num_layers, plan.layout.pp, plan.layout.vpp).layers)
    per_virtual.insert(per_virtual.end(), chunk.begin(), chunk.end());
  return looped_split(per_virtual, plan.layout.pp, plan.dualpipe_v);
}

void agree(const std::string& file, const std::string& what, long long a, const std::string& a_from, long long b, const std::string& b_from) {
  if (a != b) fail(file, "{} contradict each other: {} = {} but {} = {}", what, a_from, a, b_from, b);
}

std::string flow(const json& value) {
  if (value.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + flow(value[i]);
    return out + "]";
  }
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return value.dump();
}

namespace {

int indent_of(const std::string& line) {
  std::size_t i = line.find_first_not_of(' ');
  return i == std::string::npos ? -1 : static_cast<int>(i);
}

bool blank_or_comment(const std::string& line) {
  std::size_t i = line.find_first_not_of(" \t");
  return i == std::string::npos || line[i] == '#';
}

// The " # comment" at the end of a YAML/TOML value line (outside quotes and brackets), or "".
std::string trailing_comment(const std::string& rest) {
  char quote = 0;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || rest[i - 1] == ' ' || rest[i - 1] == '\t')) {
      std::size_t b = i;
      while (b > 0 && (rest[b - 1] == ' ' || rest[b - 1] == '\t')) --b;
      return rest.substr(b);
    }
  }
  return "";
}

bool key_line(const std::string& line, const std::string& key, int indent) {
  if (indent_of(line) != indent) return false;
  std::string body = line.substr(static_cast<std::size_t>(indent));
  if (body.rfind(key, 0) != 0) return false;
  std::size_t p = key.size();
  while (p < body.size() && body[p] == ' ') ++p;
  return p < body.size() && body[p] == ':' && (p + 1 == body.size() || body[p + 1] == ' ' || body[p + 1] == '\t');
}

// End (exclusive) of the block of lines indented more than `indent`, starting at `from`.
std::size_t block_end(const std::vector<std::string>& lines, std::size_t from, int indent) {
  std::size_t end = from;
  for (std::size_t i = from; i < lines.size(); ++i) {
    if (lines[i].rfind("---", 0) == 0) break;
    if (blank_or_comment(lines[i])) continue;
    if (indent_of(lines[i]) <= indent) break;
    end = i + 1;
  }
  return end;
}

// A mapping's entries as block YAML lines at `indent`.
void block_lines(const json& mapping, int indent, std::vector<std::string>& out) {
  for (const auto& [key, value] : mapping.items()) {
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    if (value.is_object() && !value.empty()) {
      out.push_back(pad + key + ":");
      block_lines(value, indent + 2, out);
    } else {
      out.push_back(pad + key + ": " + (value.is_object() ? "{}" : flow(value)));
    }
  }
}

// A key (line `found`, its block ending at `sub_end`) whose value is written inline (a flow mapping, possibly over
// several lines, null, or a scalar where a mapping must go) rewritten as a block mapping one level deeper, so that
// keys can be set below it. Its anchor and trailing comment stay on the key's line.
void expand_inline_mapping(std::vector<std::string>& lines, std::size_t found, std::size_t& sub_end, int indent) {
  std::string& line = lines[found];
  const std::size_t colon = line.find(':', static_cast<std::size_t>(indent));
  const std::string rest = line.substr(colon + 1);
  const std::string comment = trailing_comment(rest);
  std::string value = rest.substr(0, rest.size() - comment.size());
  const std::size_t a = value.find_first_not_of(" \t");
  if (a == std::string::npos) return;  // a block mapping already
  value = value.substr(a);
  std::string anchor;
  if (value[0] == '&') {
    const std::size_t e = value.find(' ');
    anchor = " " + value.substr(0, e);
    value = e == std::string::npos ? "" : value.substr(value.find_first_not_of(' ', e) == std::string::npos ? value.size() : value.find_first_not_of(' ', e));
    if (value.empty()) return;
  }
  if (value[0] == '|' || value[0] == '>' || value[0] == '*') return;  // block scalars and aliases: left as written
  for (std::size_t i = found + 1; i < sub_end; ++i) value += " " + lines[i].substr(static_cast<std::size_t>(std::max(0, indent_of(lines[i]))));
  json parsed;
  try {
    parsed = io::parse_yaml("v: " + value, "yaml edit").at("v");
  } catch (const std::exception&) {
    return;
  }
  std::vector<std::string> block;
  if (parsed.is_object()) block_lines(parsed, indent + 2, block);
  line = line.substr(0, colon + 1) + anchor + comment;
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(found + 1), lines.begin() + static_cast<std::ptrdiff_t>(sub_end));
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(found + 1), block.begin(), block.end());
  sub_end = found + 1 + block.size();
}

}  // namespace

std::string yaml_set(const std::string& text, const std::string& path, const std::string& value) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  std::vector<std::string> parts = split_path(path);
  std::size_t begin = 0;
  std::size_t end = block_end(lines, 0, -1);
  int parent = -1;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    int child = -1;
    for (std::size_t i = begin; i < end; ++i) {
      if (!blank_or_comment(lines[i]) && indent_of(lines[i]) > parent) {
        child = indent_of(lines[i]);
        break;
      }
    }
    if (child < 0) child = parent + 2;
    std::size_t found = end;
    for (std::size_t i = begin; i < end; ++i) {
      if (key_line(lines[i], parts[p], child)) {
        found = i;
        break;
      }
    }
    bool last = p + 1 == parts.size();
    if (found == end) {
      // Missing: add it (and what is below it) at the end of the parent's block.
      std::vector<std::string> added;
      int ind = child;
      for (std::size_t q = p; q < parts.size(); ++q) {
        bool leaf = q + 1 == parts.size();
        added.push_back(std::string(static_cast<std::size_t>(ind), ' ') + parts[q] + ":" + (leaf ? " " + value : ""));
        ind += 2;
      }
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(end), added.begin(), added.end());
      break;
    }
    std::size_t sub_end = block_end(lines, found + 1, child);
    if (!last) expand_inline_mapping(lines, found, sub_end, child);
    if (last) {
      std::string& line = lines[found];
      std::size_t colon = line.find(':', static_cast<std::size_t>(child));
      std::string rest = line.substr(colon + 1);
      std::string comment = trailing_comment(rest);
      std::string anchor;
      std::size_t a = rest.find_first_not_of(' ');
      if (a != std::string::npos && rest[a] == '&') {
        std::size_t e = rest.find(' ', a);
        anchor = rest.substr(a, e == std::string::npos ? std::string::npos : e - a) + " ";
      }
      line = line.substr(0, colon + 1) + " " + anchor + value + comment;
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(found + 1), lines.begin() + static_cast<std::ptrdiff_t>(sub_end));
      break;
    }
    begin = found + 1;
    end = sub_end;
    parent = child;
  }
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

std::string yaml_set_all(std::string text, const YamlEdits& edits) {
  for (const auto& [path, value] : edits) text = yaml_set(text, path, value);
  return text;
}

std::string toml_set(const std::string& text, const std::string& section, const std::string& key, const std::string& value) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  auto header = [](const std::string& line) -> std::optional<std::string> {
    std::size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] != '[' || (a + 1 < line.size() && line[a + 1] == '[')) return std::nullopt;
    std::size_t b = line.find(']', a);
    if (b == std::string::npos) return std::nullopt;
    std::string name = line.substr(a + 1, b - a - 1);
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    return name;
  };
  std::size_t start = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (header(lines[i]) == section) {
      start = i;
      break;
    }
  }
  if (start == lines.size()) {
    if (!lines.empty() && !lines.back().empty()) lines.emplace_back("");
    lines.push_back("[" + section + "]");
    lines.push_back(key + " = " + value);
  } else {
    std::size_t end = start + 1;
    std::size_t last_key = start;
    bool done = false;
    for (; end < lines.size() && !header(lines[end]); ++end) {
      const std::string& line = lines[end];
      if (blank_or_comment(line)) continue;
      last_key = end;
      std::size_t a = line.find_first_not_of(" \t");
      std::size_t eq = line.find('=', a);
      if (eq == std::string::npos) continue;
      std::string k = line.substr(a, eq - a);
      k.erase(k.find_last_not_of(" \t") + 1);
      if (k == key) {
        lines[end] = line.substr(0, eq) + "= " + value + trailing_comment(line.substr(eq + 1));
        done = true;
        break;
      }
    }
    if (!done) lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(last_key + 1), key + " = " + value);
  }
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

Loaded read_sapp(const json& tree, const std::string& file) {
  Loaded out;
  out.format = Format::Sapp;
  out.file = file;
  for (const auto& [key, value] : tree.items()) {
    if (key == "search") continue;
    put(out, key, value, key);
  }
  if (tree.contains("search") && tree.at("search").is_object()) {
    for (const auto& [key, value] : tree.at("search").items()) put(out, key, value, "search." + key);
  }
  return out;
}

}  // namespace detail

using namespace detail;

const char* to_string(Format format) {
  switch (format) {
    case Format::HuggingFace: return "huggingface";
    case Format::HyperParallel: return "hyperparallel";
    case Format::MindFormers: return "mindformers";
    case Format::Megatron: return "megatron";
    case Format::Torchtitan: return "torchtitan";
    case Format::AutoModel: return "automodel";
    case Format::ReferenceSearch: return "search";
    case Format::Sapp: return "sapp";
  }
  return "?";
}

Format parse_format(const std::string& text, const std::string& where) {
  std::string t = io::lower(text);
  if (t == "hf" || t == "huggingface") return Format::HuggingFace;
  if (t == "hyperparallel") return Format::HyperParallel;
  if (t == "mindformers") return Format::MindFormers;
  if (t == "megatron" || t == "mindspeed" || t == "megatron-bridge" || t == "megatron_bridge" || t == "nemo") return Format::Megatron;
  if (t == "torchtitan") return Format::Torchtitan;
  if (t == "automodel") return Format::AutoModel;
  if (t == "search") return Format::ReferenceSearch;
  if (t == "sapp") return Format::Sapp;
  fail(where, "'{}' is not a config format; expected huggingface, hyperparallel, mindformers, megatron, mindspeed, torchtitan, automodel, search or sapp",
       text);
}

namespace {

bool has(const json& tree, const std::string& key) { return tree.is_object() && tree.contains(key); }

Format detect_tree(const json& tree, const std::string& file) {
  if (!tree.is_object()) {
    fail(file,
         "is none of the config formats sapp reads (a mapping was expected, got {}); formats: HuggingFace config, HyperParallel train YAML, "
         "MindFormers YAML, Megatron/MindSpeed arguments, Megatron-Bridge YAML, NeMo 1.x YAML, torchtitan TOML, AutoModel YAML, search YAML",
         tree.type_name());
  }
  // MindSpeed-LLM's FSDP2 trainer (train_fsdp2.py, mindspeed_llm/fsdp2/utils/arguments.py): model / data / parallel /
  // training sections, its mesh partly on the launch line (--parallel.fsdp_size ...). Its `training` section would
  // read as HyperParallel's, with other meanings: refused by name.
  if (has(tree, "parallel") && tree.at("parallel").is_object()) {
    const json& parallel = tree.at("parallel");
    for (const char* key : {"fsdp_size", "fsdp_modules", "ep_fsdp_size", "ep_fsdp_modules", "ep_modules"}) {
      if (parallel.contains(key))
        fail(file,
             "is a MindSpeed-LLM FSDP2 YAML (train_fsdp2.py; parallel.{}): give sapp the script that launches it (its --parallel.* sizes "
             "and the model folder are on the launch line); alone, price the run with --model, --devices, --global-batch, --seq "
             "(data.cutoff_len) and --zero 3",
             key);
    }
  }
  if (is_megatron_bridge(tree)) return Format::Megatron;
  if (has(tree, "parallel_config") || has(tree, "recompute_config") || has(tree, "runner_config") ||
      (has(tree, "model") && has(tree.at("model"), "model_config")))
    return Format::MindFormers;
  if (is_nemo(tree)) return Format::Megatron;
  // HyperParallel's training-skeleton schema shares AutoModel's step scheduler, with its own accelerator section.
  if (has(tree, "step_scheduler") && has(tree, "accelerator") && !has(tree, "distributed")) return Format::HyperParallel;
  // NeMo AutoModel: a `distributed` section of sizes, or the step scheduler its recipes all state.
  const bool automodel_recipe = has(tree, "recipe") && tree.at("recipe").is_string() && tree.at("recipe").get<std::string>().ends_with("Recipe");
  if (automodel_recipe || has(tree, "step_scheduler") ||
      (has(tree, "distributed") &&
       (has(tree.at("distributed"), "strategy") || has(tree.at("distributed"), "tp_size") || has(tree.at("distributed"), "dp_size"))))
    return Format::AutoModel;
  if (has(tree, "parallelism") || has(tree, "cluster") || has(tree, "constraint") || has(tree, "pp_config") || has(tree, "train_yaml"))
    return Format::ReferenceSearch;
  if (has(tree, "accelerator") || has(tree, "fsdp_config") || has(tree, "training") || (has(tree, "train") && has(tree.at("train"), "accelerator")) ||
      (has(tree, "model") && has(tree.at("model"), "pretrained_model_name_or_path")) || (has(tree, "model") && has(tree.at("model"), "config_overrides")))
    return Format::HyperParallel;
  // NeMo's export and inference configs name a .nemo checkpoint beside a trainer section (and a model_type that is
  // not a HuggingFace one): not a training config.
  if (has(tree, "trainer") && (has(tree, "gpt_model_file") || has(tree, "export_options")))
    fail(file, "is a NeMo export or inference config ({}): not a training one; give sapp the config the model was trained with",
         has(tree, "gpt_model_file") ? "gpt_model_file" : "export_options");
  if (has(tree, "model_type") || has(tree, "architectures") || has(tree, "num_hidden_layers") || has(tree, "text_config") || has(tree, "n_layer"))
    return Format::HuggingFace;
  std::vector<std::string> known;
  for (const auto& f : app::search_fields()) known.push_back(f.key);
  for (const auto& f : app::estimate_fields()) known.push_back(f.key);
  known.emplace_back("search");
  known.emplace_back("config");
  bool all_known = !tree.empty();
  std::vector<std::string> keys;
  for (const auto& [key, value] : tree.items()) {
    keys.push_back(key);
    if (std::find(known.begin(), known.end(), key) == known.end()) all_known = false;
  }
  if (all_known) return Format::Sapp;
  fail(file,
       "is none of the config formats sapp reads (its top-level keys: {}); formats: HuggingFace config, HyperParallel train YAML, MindFormers YAML, "
       "Megatron/MindSpeed arguments, Megatron-Bridge YAML, NeMo 1.x YAML, torchtitan TOML, AutoModel YAML, search YAML, sapp's own options; --from-format "
       "names one",
       fmt::join(keys, ", "));
}

// The text with every line whose first non-blank character is '#' emptied (line breaks kept).
std::string without_comment_lines(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::size_t first = text.find_first_not_of(" \t\r", begin);
    if (first >= end || text[first] != '#') out.append(text, begin, end - begin);
    if (end < text.size()) out += '\n';
    begin = end + 1;
  }
  return out;
}

// The format checks scan the text by hand: std::regex matches by recursion, one stack frame per character, and a
// line of a few hundred thousand characters overflowed the stack (a crash where bad input must get an error).
bool space_at(const std::string& t, std::size_t i) { return i < t.size() && std::isspace(static_cast<unsigned char>(t[i])) != 0; }

// `word` at `at`, one of `words`, followed by whitespace (or, with `or_equals`, '=') or the end: its length, or 0.
std::size_t word_at(const std::string& t, std::size_t at, std::initializer_list<const char*> words, bool or_equals, bool end_ok) {
  for (const char* w : words) {
    const std::size_t n = std::char_traits<char>::length(w);
    if (t.compare(at, n, w) != 0) continue;
    const std::size_t after = at + n;
    if ((after == t.size() && end_ok) || space_at(t, after) || (or_equals && after < t.size() && t[after] == '=')) return n;
  }
  return 0;
}

// Megatron-LM's model flags anywhere, each after whitespace or at the start.
bool looks_like_megatron(const std::string& text) {
  for (std::size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 1)) {
    if (at > 0 && !space_at(text, at - 1)) continue;
    if (word_at(text, at + 2,
                {"num-layers", "hidden-size", "tensor-model-parallel-size", "pipeline-model-parallel-size", "micro-batch-size", "global-batch-size",
                 "seq-length", "num-attention-heads", "hybrid-layer-pattern"},
                true, true) > 0)
      return true;
  }
  return false;
}

// The first non-blank character of a line (after any blank lines) at `at`: each line start's, in order.
template <typename Visit>
bool any_line_start(const std::string& text, const Visit& visit) {
  for (std::size_t begin = 0; begin <= text.size();) {
    std::size_t at = begin;
    while (space_at(text, at)) ++at;
    if (at < text.size() && visit(at)) return true;
    const std::size_t next = text.find('\n', begin);
    if (next == std::string::npos) break;
    begin = next + 1;
  }
  return false;
}

// A torchtitan section header on a line of its own: [job], [model], ... (a comment may follow).
bool looks_like_toml(const std::string& text) {
  return any_line_start(text, [&](std::size_t at) {
    if (text[at] != '[') return false;
    for (const char* name : {"job]", "model]", "training]", "parallelism]", "activation_checkpoint]", "optimizer]"}) {
      const std::size_t n = std::char_traits<char>::length(name);
      if (text.compare(at + 1, n, name) != 0) continue;
      std::size_t i = at + 1 + n;
      while (i < text.size() && text[i] != '\n' && space_at(text, i)) ++i;
      if (i < text.size() && text[i] == '#') i = std::min(text.find('\n', i), text.size());
      return i == text.size() || text[i] == '\n';
    }
    return false;
  });
}

}  // namespace

Format detect(const std::string& text, const std::string& file) {
  std::size_t a = text.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) fail(file, "is empty");
  // Flags and commands on comment lines (a YAML recipe's "run it with python -m ... --seq-length 4096") say nothing
  // about the format.
  const std::string code = without_comment_lines(text);
  if (text[a] != '{' && looks_like_megatron(code)) return Format::Megatron;
  if (text[a] != '{' && looks_like_toml(text)) return Format::Torchtitan;
  const bool shell_name = file.size() > 3 && file.compare(file.size() - 3, 3, ".sh") == 0;
  if (text.compare(a, 2, "#!") == 0 || shell_name || any_line_start(code, [&](std::size_t at) {
        return word_at(code, at, {"export", "source", "torchrun", "python", "python3", "bash", "deepspeed", "msrun"}, false, false) > 0;
      })) {
    // A shell script that states no Megatron model flag (a launcher that passes its trainer a config file): name
    // the config file it launches with, if any, rather than failing as YAML.
    std::string hint;
    // MindSpeed-LLM's FSDP2 trainer: its launch line and YAML are read by the Megatron script reader's shell.
    const std::string trainer = "train_fsdp2.py";
    for (std::size_t at = code.find(trainer); at != std::string::npos; at = code.find(trainer, at + 1)) {
      const std::size_t after = at + trainer.size();
      if ((at == 0 || space_at(code, at - 1) || code[at - 1] == '/') && (after == code.size() || space_at(code, after))) return Format::Megatron;
    }
    // The first word (whitespace apart, no quotes) naming a .yaml, .yml, .toml or .json file.
    for (std::size_t at = 0; at < text.size() && hint.empty();) {
      while (space_at(text, at)) ++at;
      std::size_t end = at;
      while (end < text.size() && !space_at(text, end)) ++end;
      const std::string word = text.substr(at, end - at);
      const bool quoted = word.find_first_of("'\"") != std::string::npos;
      for (const std::string_view ext : {".yaml", ".yml", ".toml", ".json"}) {
        if (!quoted && word.size() <= 4096 && word.size() > ext.size() && word.compare(word.size() - ext.size(), ext.size(), ext) == 0)
          hint = fmt::format("; it launches with {}: give sapp that file if it is one of these formats", word);
      }
      at = end;
    }
    fail(file,
         "is a shell script without Megatron-LM's model flags (--num-layers, --hidden-size, ...); sapp reads Megatron-LM / MindSpeed launch "
         "scripts, HuggingFace config.json, torchtitan TOML, MindFormers and HyperParallel YAML{}",
         hint);
  }
  return detect_tree(io::parse_yaml(text, file), file);
}

namespace {
Loaded read_format(const std::string& text, const std::string& file, Format format);
}  // namespace

Loaded read_text(const std::string& text, const std::string& file, std::optional<Format> forced) {
  Format format = forced ? *forced : detect(text, file);
  Loaded out;
  // The readers name the key of every value they check; a value of a type or form one of them takes for granted
  // (a number where text stands, a list where a mapping does) is still refused as bad input, naming the file.
  try {
    out = read_format(text, file, format);
  } catch (const Error&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    fail(file, "a value has a type the {} reader does not take: {}", to_string(format), e.what());
  } catch (const std::logic_error& e) {  // std::stoll / std::stod on text that is not a number, or out of range
    fail(file, "a value is not a number the {} reader can read ({})", to_string(format), e.what());
  }
  out.format = format;
  out.file = file;
  out.text = text;
  return out;
}

namespace {

Loaded read_format(const std::string& text, const std::string& file, Format format) {
  Loaded out;
  switch (format) {
    case Format::Megatron: {
      // Megatron-Bridge's YAML (no flags: a mapping of Megatron-Core's fields), else a launch script.
      if (!looks_like_megatron(without_comment_lines(text))) {
        json tree;
        try {
          tree = io::parse_yaml(text, file);
        } catch (const Error&) {
          tree = nullptr;  // not YAML: a script, read as one
        }
        if (is_megatron_bridge(tree)) {
          out = read_megatron_bridge(tree, file);
          break;
        }
        if (is_nemo(tree)) {
          out = read_nemo(tree, file);
          break;
        }
      }
      out = read_megatron(text, file);
      break;
    }
    case Format::Torchtitan: out = read_torchtitan(text, file); break;
    case Format::HuggingFace: out = read_huggingface(text, file); break;
    default: {
      json tree = io::parse_yaml(text, file);
      if (!tree.is_object()) fail(file, "a {} config must be a mapping, got {}", to_string(format), tree.type_name());
      if (format == Format::HyperParallel) out = read_hyperparallel(tree, file);
      if (format == Format::MindFormers) out = read_mindformers(tree, file);
      if (format == Format::ReferenceSearch) out = read_reference_search(tree, file);
      if (format == Format::Sapp) out = read_sapp(tree, file);
      if (format == Format::AutoModel) out = read_automodel(tree, file);
    }
  }
  return out;
}

}  // namespace

Loaded read_file(const std::string& path, std::optional<Format> forced) { return read_text(io::read_text(path), path, forced); }

std::string unused_warning(const Loaded& loaded) {
  if (loaded.unused.empty()) return "";
  return fmt::format("{}: {} key(s) sapp does not use (they do not change its estimate or it cannot price them): {}", loaded.file, loaded.unused.size(),
                     fmt::join(loaded.unused, ", "));
}

namespace {

// Empty when the device priced has `stated_tflops` as its dense BF16 or FP8 peak (within 1 %); else what the file's
// peak says instead, with the bundled devices that state it.
std::string peak_mismatch(double stated_tflops, const std::string& hardware_name) {
  const std::string data = io::data_dir();
  auto has_peak = [&](const hardware::Hardware& hw) {
    const std::array<double, 2> peaks{hw.peak_flops, hw.peak_flops_fp8};
    return std::any_of(peaks.begin(), peaks.end(), [&](double flops) { return flops > 0 && std::abs(flops / 1e12 - stated_tflops) <= 0.01 * stated_tflops; });
  };
  const hardware::Hardware priced = hardware::load_hardware(hardware_name, data);
  if (has_peak(priced)) return "";
  std::vector<std::string> matching;
  for (const auto& name : hardware::bundled_hardware(data)) {
    if (has_peak(hardware::load_hardware(name, data))) matching.push_back(name);
  }
  return fmt::format("{:g} TFLOP/s is not {}'s dense BF16 ({:.0f}) or FP8 ({:.0f}) peak: the file was written for {}; priced on {} (give -H)", stated_tflops,
                     priced.id, priced.peak_flops / 1e12, priced.peak_flops_fp8 / 1e12,
                     matching.empty() ? std::string("another device") : fmt::format("another device ({} state it)", fmt::join(matching, ", ")), priced.id);
}

template <typename Request>
std::vector<std::string> fill_request(Request& request, const Loaded& loaded, const json& command_line) {
  request.job.source = app::Source::CommandLine;
  // The framework first: its profile sets defaults that the file's other keys then override.
  std::vector<std::string> keys;
  if (loaded.values.contains("framework")) keys.emplace_back("framework");
  for (const auto& item : loaded.values.items())
    if (item.key() != "framework") keys.push_back(item.key());
  for (const auto& key : keys) {
    const json& value = loaded.values.at(key);
    json one = json::object();
    one[key] = value;
    try {
      app::apply(request, one, app::Source::File, loaded.file);
    } catch (const Error& e) {
      auto it = loaded.origin.find(key);
      std::string prefix = at(loaded.file, key) + ": ";
      std::string message = e.what();
      const std::string where = it != loaded.origin.end() ? at(loaded.file, it->second) : at(loaded.file, key);
      if constexpr (std::is_same_v<Request, app::EstimateRequest>) {
        // A search space (a search YAML's list or auto) where estimate prices one layout.
        if (value.is_array() || (value.is_string() && io::lower(value.template get<std::string>()) == "auto"))
          throw Error(fmt::format("{}: {} is a search space; sapp estimate prices one layout: run sapp search --from {} (or state one value)", where,
                                  value.dump(), loaded.file));
      }
      if (it != loaded.origin.end() && it->second != key && message.rfind(prefix, 0) == 0) throw Error(where + ": " + message.substr(prefix.size()));
      throw;
    }
  }
  request.job.source = app::Source::CommandLine;
  if (!loaded.model_error.empty() && !command_line.contains("model")) throw Error(loaded.model_error);
  if (!loaded.model_config.is_null()) {
    request.job.model_config = loaded.model_config;
    if (request.job.model.empty()) request.job.model = loaded.file;
  }
  if (loaded.split) request.split = loaded.split;
  std::vector<std::string> overrides;
  for (const auto& [key, value] : command_line.items()) {
    auto it = loaded.origin.find(key);
    // Nothing overridden (the command line's text "16" states the file's 16 too).
    const bool same = loaded.values.contains(key) &&
                      (loaded.values.at(key) == value || (value.is_string() && loaded.values.at(key).dump() == value.template get<std::string>()));
    if (it != loaded.origin.end() && !same)
      overrides.push_back(fmt::format("{} overrides {}: {}", app::where_of(app::Source::CommandLine, key), loaded.file, it->second));
    if (key == "model" && !loaded.model_config.is_null()) {
      overrides.push_back(fmt::format("--model overrides the model {} defines", loaded.file));
      request.job.model_config = json();
    }
    if ((key == "stage_layers" || key == "stage_recompute" || key == "pp" || key == "vpp") && loaded.split) {
      overrides.push_back(fmt::format("{} overrides the stage split {} states{}", app::where_of(app::Source::CommandLine, key), loaded.file,
                                      key == "pp" || key == "vpp" ? " (the even split of the degrees given is priced)" : ""));
    }
  }
  // A split has the shape of the file's PP and VPP: new degrees, or a split of its own, replace it.
  for (const char* key : {"stage_layers", "stage_recompute", "pp", "vpp"}) {
    if (command_line.contains(key)) request.split.reset();
  }
  app::apply(request, command_line, app::Source::CommandLine);
  if (!loaded.devices_hint.empty() && request.job.devices == 0) fail(loaded.file, "{}: give --devices", loaded.devices_hint);
  const auto& deferred = loaded.batch_from_devices;
  if (deferred && request.job.training.global_batch == 0 && request.job.devices > 0) {
    if (request.job.devices % deferred->model_ranks != 0) {
      fail(app::where_of(app::Source::CommandLine, "devices"), "{} devices are not a whole number of data-parallel ranks of {} devices ({}: {})",
           request.job.devices, deferred->model_ranks, loaded.file, deferred->keys);
    }
    request.job.training.global_batch = deferred->per_rank * (request.job.devices / deferred->model_ranks);
  }
  if constexpr (std::is_same_v<Request, app::EstimateRequest>) {
    // --devices beside a file's own degrees and global batch: the data-parallel degree follows the devices, and a
    // global batch it cannot split is the file's key's fault, named as such (not a --global-batch nobody gave).
    // Devices the file states (a launch script's processes, a config's degrees) too few for its own model-parallel
    // degrees: the file's keys are named, and --devices is what fixes it.
    const auto devices_from = loaded.origin.find("devices");
    const long long model_ranks = 1LL * request.layout.tp * request.layout.pp * request.layout.cp;
    if (!command_line.contains("devices") && devices_from != loaded.origin.end() && model_ranks > 0 && request.job.devices % model_ranks != 0) {
      fail(at(loaded.file, devices_from->second), "{} devices are not a multiple of TP x PP x CP = {} x {} x {} = {}; give --devices", request.job.devices,
           request.layout.tp, request.layout.pp, request.layout.cp, model_ranks);
    }
    // Experts are carved out of each stage's DP x CP x TP ranks: the file's own devices too few for its EP are named
    // the same way (a launch whose node count defaults to one, Megatron-LM's Mixtral example: 8 GPUs, PP 4, EP 8).
    const long long stage_ranks = request.job.devices / std::max(1, request.layout.pp);
    if (!command_line.contains("devices") && devices_from != loaded.origin.end() && model_ranks > 0 &&
        !plan::experts_fit_stage_ranks(request.layout, stage_ranks)) {
      fail(at(loaded.file, devices_from->second), "{} devices over PP {} leave {} ranks per stage, not a multiple of EP {} x expert TP {}; give --devices",
           request.job.devices, request.layout.pp, stage_ranks, request.layout.ep, request.layout.etp);
    }
    const auto batch = loaded.origin.find("global_batch");
    // A global batch the file states that does not divide over the devices is named by its key (and the devices' source).
    const bool devices_stated = command_line.contains("devices") || devices_from != loaded.origin.end();
    if (devices_stated && !command_line.contains("global_batch") && batch != loaded.origin.end() && request.job.devices > 0) {
      plan::Layout probe = request.layout;
      const bool cli = command_line.contains("devices");
      plan::derive_data_parallel(
          probe, request.job.devices, request.job.training.global_batch,
          cli ? app::where_of(app::Source::CommandLine, "devices") : at(loaded.file, devices_from->second),
          cli ? fmt::format("{} (with {} devices)", at(loaded.file, batch->second), request.job.devices) : at(loaded.file, batch->second));
    }
  }
  const auto& runs = loaded.runs_from_devices;
  if (runs && request.job.devices > 0 && request.job.devices % runs->model_ranks == 0 && !command_line.contains("pipeline_runs")) {
    const long long per_step = runs->per_rank * (request.job.devices / runs->model_ranks);
    if (per_step > 0 && runs->global % per_step == 0 && runs->global / per_step > 1) {
      json stated = json::object();
      stated["pipeline_runs"] = runs->global / per_step;
      app::apply(request, stated, app::Source::File, loaded.file);
    }
  }
  const auto& shard = loaded.shard_from_devices;
  if (shard && request.job.devices > 0 && !command_line.contains("optimizer_shard")) {
    if (request.job.devices % shard->model_ranks != 0) {
      fail(app::where_of(app::Source::CommandLine, "devices"), "{} devices are not a whole number of {} devices ({}: {})", request.job.devices,
           shard->model_ranks, loaded.file, shard->keys);
    }
    json group = json::object();
    group["optimizer_shard"] = request.job.devices / shard->model_ranks * shard->cp;
    app::apply(request, group, app::Source::File, loaded.file);
  }
  // A --framework on the command line keeps the dtypes, modules and overlaps the file states.
  json again = app::stated_under_framework(loaded.values, command_line);
  if (!again.empty()) app::apply(request, again, app::Source::File, loaded.file);
  if (loaded.stated_peak_tflops) {
    const std::string mismatch = peak_mismatch(*loaded.stated_peak_tflops, request.job.hardware);
    if (!mismatch.empty()) overrides.push_back(fmt::format("{}: {} {}", loaded.file, loaded.stated_peak_key, mismatch));
  }
  return overrides;
}

}  // namespace

std::vector<std::string> fill(app::EstimateRequest& request, const Loaded& loaded, const json& command_line) {
  return fill_request(request, loaded, command_line);
}
std::vector<std::string> fill(app::SearchRequest& request, const Loaded& loaded, const json& command_line) {
  return fill_request(request, loaded, command_line);
}
std::vector<std::string> fill(app::PlanRequest& request, const Loaded& loaded, const json& command_line) { return fill_request(request, loaded, command_line); }

EmitFormat parse_emit_format(const std::string& text, const std::string& where) {
  std::string t = io::lower(text);
  if (t == "megatron" || t == "mindspeed") return EmitFormat::Megatron;
  if (t == "mindformers") return EmitFormat::MindFormers;
  if (t == "hyperparallel") return EmitFormat::HyperParallel;
  if (t == "torchtitan") return EmitFormat::Torchtitan;
  if (t == "automodel") return EmitFormat::AutoModel;
  if (t == "mindspeed-fsdp2" || t == "mindspeed_fsdp2") return EmitFormat::MindSpeedFsdp2;
  if (t == "megatron-bridge" || t == "megatron_bridge") return EmitFormat::MegatronBridge;
  if (t == "nemo") return EmitFormat::Nemo;
  fail(where,
       "'{}' is not a format sapp writes; expected megatron, mindformers, hyperparallel, torchtitan, automodel, mindspeed-fsdp2, megatron-bridge or nemo",
       text);
}

const char* emit_name(EmitFormat format) {
  switch (format) {
    case EmitFormat::Megatron: return "megatron";
    case EmitFormat::MindFormers: return "mindformers";
    case EmitFormat::HyperParallel: return "hyperparallel";
    case EmitFormat::Torchtitan: return "torchtitan";
    case EmitFormat::AutoModel: return "automodel";
    case EmitFormat::MindSpeedFsdp2: return "mindspeed-fsdp2";
    case EmitFormat::MegatronBridge: return "megatron-bridge";
    case EmitFormat::Nemo: return "nemo";
  }
  return "?";
}

Format format_of(EmitFormat format) {
  switch (format) {
    case EmitFormat::Megatron: return Format::Megatron;
    case EmitFormat::MindFormers: return Format::MindFormers;
    case EmitFormat::HyperParallel: return Format::HyperParallel;
    case EmitFormat::Torchtitan: return Format::Torchtitan;
    case EmitFormat::AutoModel: return Format::AutoModel;
    case EmitFormat::MindSpeedFsdp2:  // read by the Megatron script reader (its dialect)
    case EmitFormat::MegatronBridge:  // read as the Megatron arguments its fields are (its dialect)
    case EmitFormat::Nemo:            // the same
      return Format::Megatron;
  }
  return Format::Sapp;
}

std::string read_as(const Loaded& loaded) { return loaded.dialect.empty() ? std::string(to_string(loaded.format)) : loaded.dialect; }

bool edits(const Loaded* original, EmitFormat format) {
  if (original == nullptr || original->format != format_of(format)) return false;
  if (format == EmitFormat::MindSpeedFsdp2) return original->dialect == kMindSpeedFsdp2Dialect;
  if (format == EmitFormat::MegatronBridge) return original->dialect == kMegatronBridgeDialect;
  if (format == EmitFormat::Nemo) return original->dialect == kNemoDialect;
  return original->dialect.empty();
}

Expressible expressible(EmitFormat format, const Loaded* original) {
  if (!edits(original, format)) original = nullptr;  // as emit() takes it
  switch (format) {
    case EmitFormat::HyperParallel: return expressible_hyperparallel(original);
    case EmitFormat::AutoModel: return expressible_automodel();
    case EmitFormat::MindSpeedFsdp2: {
      // MindSpeed-LLM c77308a1's FSDP2 mesh: TP 1, no pipeline, FSDP over every rank (ZeRO-3, or ZeRO-2 with
      // reshard_after_forward false), Ulysses or ring CP, experts over ep x ep_fsdp = the world; recompute of whole
      // decoder layers or none; BF16 (its MXFP8 quantization is not written).
      Expressible e{std::vector<int>{2, 3}, std::vector<bool>{false},
                    "MindSpeed-LLM's FSDP2 trainer runs TP 1 without a pipeline, FSDP over every rank (reshard_after_forward: ZeRO-3 or 2), "
                    "Ulysses or ring CP and parallel.recompute of whole decoder layers or none",
                    plan::RecomputeStated::OneModeForAll};
      e.dualpipe_v = false;
      e.fp8 = false;
      e.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::AllToAll, plan::CpAlgo::Ring};
      e.tp = std::vector<int>{1};
      e.pp = std::vector<int>{1};
      e.recompute_modes = std::vector<plan::Recompute>{plan::Recompute::Off, plan::Recompute::Full};
      return e;
    }
    case EmitFormat::MindFormers: {
      Expressible e{std::vector<int>{0, 3}, std::nullopt,
                    "MindFormers states MindSpore's parallel optimizer (enable_parallel_optimizer: weights and optimizer states sliced over DP, ZeRO-3) or "
                    "none"};
      e.seq_split = true;
      e.fp8 = false;  // MindSpore trains in BF16 / FP16 (Ascend's cube units have no FP8)
      return e;
    }
    case EmitFormat::Torchtitan: {
      Expressible e{std::vector<int>{0, 2, 3}, std::vector<bool>{true},
                    "torchtitan's TP shards the sequence between blocks (SP); it states FSDP (data_parallel_shard_degree: ZeRO-3; "
                    "fsdp_reshard_after_forward never: ZeRO-2) or DDP, which takes no TP, PP, CP or EP (\"DDP has not supported > 1D parallelism\"; "
                    "such a search keeps replication to DP alone, and CP sharded: FSDP runs over it); its CP is ring attention (both "
                    "context_parallel_rotate_method values exchange K,V shards: no all-to-all of heads); its activation_checkpoint mode is one "
                    "for every layer",
                    plan::RecomputeStated::OneModeForAll};
      e.replication_alone = true;
      e.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
      return e;
    }
    case EmitFormat::MegatronBridge: {
      // The Megatron writer's layout flags, each on its field (emit_megatron_bridge): Megatron's expressible, without
      // MindSpeed's DualPipe-V and with a hybrid stack split evenly (the file's own model is kept).
      Expressible e{std::nullopt, std::nullopt,
                    "Megatron-Bridge states full recompute as one recompute_num_layers for every chunk (block method: each chunk's first layers) and "
                    "selective recompute for every layer",
                    plan::RecomputeStated::FirstLayersOfEveryChunk};
      e.dualpipe_v = false;
      e.hybrid_even_pipeline = true;
      e.deepep = true;
      e.fp4 = true;
      return e;
    }
    case EmitFormat::Nemo: {
      // NeMo 1.x's model fields (emit_nemo): Megatron-Core's distributed optimizer or none, Megatron's block recompute,
      // ring CP, and no per-stage split beyond the first and last stage's counts.
      Expressible e{std::vector<int>{0, 1}, std::nullopt,
                    "NeMo 1.x states the distributed optimizer (optim.name) or none, full recompute as one activations_checkpoint_num_layers for "
                    "every chunk (block method: each chunk's first layers), ring CP, and a split only as its first and last stage's layer counts",
                    plan::RecomputeStated::FirstLayersOfEveryChunk};
      e.dualpipe_v = false;
      e.hybrid_even_pipeline = true;
      e.even_pipeline = true;
      e.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
      return e;
    }
    case EmitFormat::Megatron: {
      // A hybrid stack splits evenly over PP without a virtual pipeline up to core_v0.16; a file in core_v0.17's
      // form (config::Loaded::hybrid_pipeline_cuts) states any split as its pattern's '|' cuts.
      const bool cuts = original != nullptr && original->hybrid_pipeline_cuts;
      Expressible e{
          std::nullopt, std::nullopt,
          std::string("Megatron states full recompute as one --recompute-num-layers for every chunk (block method: each chunk's first layers) and "
                      "selective recompute for every layer") +
              (cuts ? ""
                    : "; a hybrid stack (pretrain_mamba.py before core_v0.17's --hybrid-layer-pattern cuts) splits evenly over PP without a virtual pipeline"),
          plan::RecomputeStated::FirstLayersOfEveryChunk};
      e.hybrid_even_pipeline = !cuts;
      e.deepep = true;
      e.fp4 = true;  // --fp4-format e2m1 --fp4-recipe nvfp4 (Transformer Engine's NVFP4BlockScaling)
      return e;
    }
    default: return {};
  }
}

void check_training_expressible(EmitFormat format, const Loaded* original, bool dualpipe_v, int seq_split, bool fp8, bool fp4, bool deepep) {
  const Expressible e = expressible(format, original);
  const std::string where = fmt::format("--emit {}", emit_name(format));
  if (dualpipe_v && !e.dualpipe_v)
    fail(where,
         "{} has no DualPipe-V schedule (its pipeline schedules: gpipe, 1f1b): drop --dualpipe-v or write megatron, mindformers, torchtitan or automodel",
         emit_name(format));
  if (seq_split > 1 && !e.seq_split)
    fail(where, "the sequence pipeline (seq_split {}) is MindSpore's: only a MindFormers config states it; drop --seq-split or write mindformers", seq_split);
  if (fp8 && !e.fp8) fail(where, "{} has no FP8 training key: drop --fp8 or write megatron, torchtitan or automodel", emit_name(format));
  if (fp4 && !e.fp4) fail(where, "{} has no NVFP4 training key sapp writes: drop --fp4 or write megatron", emit_name(format));
  if (deepep && !e.deepep)
    fail(where, "{} has no key for the DeepEP dispatch the plan is priced with: drop --moe-dispatcher deepep (or the file's) or write megatron or automodel",
         emit_name(format));
}

namespace {

void check_spec_expressible(EmitFormat format, const Plan& plan, const std::string& model_name) {
  const model::ModelSpec& spec = *plan.model;
  if (format == EmitFormat::Torchtitan) (void)detail::torchtitan_model(&spec, model_name);
  // A new file states the model: refused where the format cannot state all of it, never written as another model.
  const std::string where = fmt::format("--emit {}", emit_name(format));
  if (spec.vision && (format == EmitFormat::Megatron || format == EmitFormat::MindFormers))
    fail(where,
         "{} has a vision tower, which a {} written for its language model leaves out (Megatron-LM's pretrain_gpt.py and MindFormers' "
         "model_config state the language model only): write automodel or hyperparallel",
         model_name, format == EmitFormat::Megatron ? "script" : "config");
  if (!spec.hybrid_pattern.empty() && format == EmitFormat::MindFormers)
    fail(where, "{} is a hybrid Mamba-2 stack (hybrid_override_pattern), which MindFormers' model_config does not state: write megatron", model_name);
  if (format == EmitFormat::Megatron) (void)detail::megatron_window_flags(plan, model_name);
}

}  // namespace

void check_model_expressible(EmitFormat format, const Loaded* original, const model::Model& model, const std::string& model_name, long long seq) {
  if (edits(original, format)) return;  // the file's own model is kept
  Plan probe;
  probe.seq = seq;
  set_model(probe, model);
  check_spec_expressible(format, probe, model_name);
}

void set_model(Plan& plan, const model::Model& model) {
  plan.model = model.spec;
  if (!plan.model->qk_norm) plan.model->qk_norm = model::body_fact(model, "qk_norm").value_or(0) != 0;
  plan.qkv_bias = model::body_fact(model, "qkv_bias").value_or(0) != 0;
  plan.linear_bias = plan.qkv_bias && model::body_fact(model, "o_bias").value_or(0) != 0 && model::body_fact(model, "mlp_bias").value_or(0) != 0;
  plan.dropout = model::body_fact(model, "dropout").value_or(0) != 0 ? model.spec.dropout.value_or(0.1) : 0.0;
  plan.windowed_layers.clear();
  for (const model::LayerGroup& g : model.stack) {
    if (g.mtp || g.vision) continue;
    const bool sliding = model.kinds[static_cast<std::size_t>(g.kind)].kind.sliding;
    plan.windowed_layers.insert(plan.windowed_layers.end(), static_cast<std::size_t>(g.count), sliding ? 1 : 0);
  }
}

std::string emit(EmitFormat format, const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes) {
  if (!edits(original, format)) original = nullptr;
  if (plan.model && original == nullptr) check_spec_expressible(format, plan, model_name);
  // A plan the format cannot state is refused, never written as another (with DP 1 every ZeRO stage is ZeRO 0).
  const Expressible e = expressible(format, original);
  const plan::Layout& l = plan.layout;
  check_training_expressible(format, original, plan.dualpipe_v && l.pp > 1, l.pp > 1 ? plan.seq_split : 1, plan.fp8, plan.fp4, plan.moe_deepep && l.ep > 1);
  const bool zero_ok = !e.zero || l.dp * l.cp <= 1 || std::find(e.zero->begin(), e.zero->end(), l.zero) != e.zero->end();
  const bool sp_ok = !e.sp || l.tp <= 1 || std::find(e.sp->begin(), e.sp->end(), l.sp) != e.sp->end();
  if (e.cp_algo && l.cp > 1 && std::find(e.cp_algo->begin(), e.cp_algo->end(), l.cp_algo) == e.cp_algo->end())
    fail(fmt::format("--emit {}", emit_name(format)), "the plan's all-to-all context parallelism cannot be written: {}; search with --cp-algo ring", e.why);
  const auto allows = [](const auto& allowed, const auto& value) { return !allowed || std::find(allowed->begin(), allowed->end(), value) != allowed->end(); };
  if (!allows(e.tp, l.tp) || !allows(e.pp, l.pp))
    fail(fmt::format("--emit {}", emit_name(format)), "the plan's TP {} x PP {} cannot be written: {}", l.tp, l.pp, e.why);
  if (!allows(e.recompute_modes, l.recompute))
    fail(fmt::format("--emit {}", emit_name(format)), "the plan's {} recompute cannot be written: {}", plan::to_string(l.recompute), e.why);
  if (!zero_ok || !sp_ok) {
    std::string search = e.zero ? fmt::format("--zero {}", fmt::join(*e.zero, ",")) : "";
    if (e.sp && e.sp->size() == 1) search += (*e.sp)[0] ? " --sp on" : " --sp off";
    fail(fmt::format("--emit {}", emit_name(format)), "the plan's {} cannot be written: {}; search with {}, or write another format",
         !zero_ok ? fmt::format("ZeRO-{}", l.zero) : "sequence parallelism", e.why, search);
  }
  // Several pipeline runs per step are gradient-accumulation steps of torchtitan and AutoModel; the other formats
  // run one pipeline of all the micro-batches (the same micro-batches, one fill and drain fewer per extra run).
  if (l.pp > 1 && plan.pipeline_runs > 1 && notes != nullptr && format != EmitFormat::Torchtitan && format != EmitFormat::AutoModel)
    notes->push_back(fmt::format("the plan was priced as {} pipeline runs per step; {} runs all {} micro-batches in one pipeline (a shorter step)",
                                 plan.pipeline_runs, emit_name(format), l.micro_batches));
  switch (format) {
    case EmitFormat::Megatron: return emit_megatron(plan, original, model_name, notes);
    case EmitFormat::MindFormers: return emit_mindformers(plan, original, model_name);
    case EmitFormat::HyperParallel: return emit_hyperparallel(plan, original, model_name);
    case EmitFormat::Torchtitan: return emit_torchtitan(plan, original, model_name, notes);
    case EmitFormat::AutoModel: return emit_automodel(plan, original, model_name, notes);
    case EmitFormat::MindSpeedFsdp2: return detail::emit_mindspeed_fsdp2(plan, original);
    case EmitFormat::MegatronBridge: return detail::emit_megatron_bridge(plan, original, notes);
    case EmitFormat::Nemo: return detail::emit_nemo(plan, original, notes);
  }
  return "";
}

const std::vector<std::string>& megatron_flags(bool later) {
  // The file's first section (its first comment header) is core_v0.14.0's; each later header starts a later tag's
  // additions.
  static const std::array<std::vector<std::string>, 2> flags = [] {
    std::array<std::vector<std::string>, 2> out;
    std::stringstream ss(io::read_text(io::data_dir() + "/formats/megatron-flags.txt"));
    int headers = 0;
    for (std::string line; std::getline(ss, line);) {
      if (line.rfind('#', 0) == 0) ++headers;
      if (line.rfind("--", 0) != 0) continue;
      const std::string flag = line.substr(0, line.find_first_of(" \t"));
      if (headers <= 1) out[0].push_back(flag);
      out[1].push_back(flag);
    }
    return out;
  }();
  return flags[later ? 1 : 0];
}

}  // namespace sapp::config
