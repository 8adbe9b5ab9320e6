// config/internal: what the readers and writers share: a tree read with every used key path recorded, dtype
// widths, and line-level edits of YAML and TOML text that keep comments and unrelated keys.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"

namespace sapp::config::detail {

using nlohmann::json;

// A parsed file read by dotted key paths; each path read is marked used, the rest are listed as unused.
struct Tree {
  const json& root;
  std::string file;
  std::set<std::string> used;

  const json* get(const std::string& path);  // null when absent or null; marks the path used
  void use(const std::string& path) { used.insert(path); }
  std::optional<long long> whole(const std::string& path, long long lowest = 1);
  std::optional<bool> flag(const std::string& path);
  std::optional<std::string> text(const std::string& path);
  [[nodiscard]] std::vector<std::string> unused() const;
  [[noreturn]] void bad(const std::string& path, const std::string& what) const;
};

// Bytes of a dtype name (bfloat16, bf16, float16, fp16, float32, fp32); refuses others naming `where`.
double dtype_bytes(const std::string& name, const std::string& where);

// Sets `key` in `values` and records where it came from.
void put(Loaded& out, const std::string& key, const json& value, const std::string& from);

// Checks that `a` equals `b` or fails naming both key paths and values.
void agree(const std::string& file, const std::string& what, long long a, const std::string& a_from, long long b, const std::string& b_from);

// YAML line edits: sets `path` (dotted, mappings only) to the flow-style `value` text in `text`, replacing the
// old value (one line or a nested block) and keeping anchors (&name) and trailing comments; adds missing keys
// and sections at the end of their parent.
std::string yaml_set(const std::string& text, const std::string& path, const std::string& value);
// TOML line edits: sets key in [section] (adding either if missing).
std::string toml_set(const std::string& text, const std::string& section, const std::string& key, const std::string& value);
// A JSON value as YAML / TOML flow text.
std::string flow(const json& value);

// Readers (one per format).
Loaded read_huggingface(const std::string& text, const std::string& file);
Loaded read_hyperparallel(const json& tree, const std::string& file);
Loaded read_reference_search(const json& tree, const std::string& file);
Loaded read_mindformers(const json& tree, const std::string& file);
Loaded read_megatron(const std::string& text, const std::string& file);
Loaded read_torchtitan(const std::string& text, const std::string& file);
Loaded read_sapp(const json& tree, const std::string& file);

// Writers.
std::string emit_megatron(const Plan& plan, const Loaded* original, const std::string& model_name);
std::string emit_mindformers(const Plan& plan, const Loaded* original, const std::string& model_name);
std::string emit_hyperparallel(const Plan& plan, const Loaded* original, const std::string& model_name);
std::string emit_torchtitan(const Plan& plan, const Loaded* original, const std::string& model_name);

// MindFormers' rules: per [chunk][stage] layers from an offset and the per-stage recompute arrays.
plan::ChunkCounts offset_layers(long long layers, int pp, int vpp, const json& offset, const std::string& where);
plan::ChunkCounts recompute_layers(const plan::ChunkCounts& layers, const json& stated, const std::string& where);

}  // namespace sapp::config::detail
