// config/internal: what the readers and writers share: a tree read with every used key path recorded, dtype
// widths, and line-level edits of YAML and TOML text that keep comments and unrelated keys.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
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

  const json* get(const std::string& path);                       // null when absent or null; marks the path used
  [[nodiscard]] const json* peek(const std::string& path) const;  // the same, leaving it unmarked
  void use(const std::string& path) { used.insert(path); }
  std::optional<long long> whole(const std::string& path, long long lowest = 1);
  // The first of `paths` present, its path in `found`; nullopt when none is.
  std::optional<long long> whole_of(std::initializer_list<const char*> paths, std::string& found, long long lowest = 1);
  std::optional<bool> flag(const std::string& path);
  std::optional<std::string> text(const std::string& path);
  [[nodiscard]] std::vector<std::string> unused() const;
  [[noreturn]] void bad(const std::string& path, const std::string& what) const;
  // The product of values read from the file, refused (naming `path`) when it leaves 64 bits.
  long long product(const std::string& path, std::initializer_list<long long> factors) const;
};

// Bytes of a dtype name (bfloat16, bf16, float16, fp16, float32, fp32); refuses others naming `where`.
double dtype_bytes(const std::string& name, const std::string& where);

// Sets `key` in `values` and records where it came from.
void put(Loaded& out, const std::string& key, const json& value, const std::string& from);

// The model-parallel degrees every format states, each under its own key (absent: 1), put into `out` with the
// key they came from. `Reader` is any reader with `whole(key)` (a Tree, Megatron's arguments).
struct DegreeKeys {
  std::string tp, pp, cp, ep;
};
struct Degrees {
  long long tp = 1, pp = 1, cp = 1, ep = 1;
};
template <typename Reader>
Degrees read_degrees(Reader& reader, Loaded& out, const DegreeKeys& keys) {
  Degrees d{reader.whole(keys.tp).value_or(1), reader.whole(keys.pp).value_or(1), reader.whole(keys.cp).value_or(1), reader.whole(keys.ep).value_or(1)};
  put(out, "tp", d.tp, keys.tp);
  put(out, "pp", d.pp, keys.pp);
  put(out, "cp", d.cp, keys.cp);
  put(out, "ep", d.ep, keys.ep);
  return d;
}

// put() bound to one result: `auto set = setter(out); set(key, value, from);`.
inline auto setter(Loaded& out) {
  return [&out](const std::string& key, const json& value, const std::string& from) { put(out, key, value, from); };
}

// Checks that `a` equals `b` or fails naming both key paths and values.
void agree(const std::string& file, const std::string& what, long long a, const std::string& a_from, long long b, const std::string& b_from);

// YAML line edits: sets `path` (dotted, mappings only) to the flow-style `value` text in `text`, replacing the
// old value (one line or a nested block) and keeping anchors (&name) and trailing comments; adds missing keys
// and sections at the end of their parent.
std::string yaml_set(const std::string& text, const std::string& path, const std::string& value);
// yaml_set for each (path, value) in order.
using YamlEdits = std::vector<std::pair<std::string, std::string>>;
std::string yaml_set_all(std::string text, const YamlEdits& edits);
// TOML line edits: sets key in [section] (adding either if missing).
std::string toml_set(const std::string& text, const std::string& section, const std::string& key, const std::string& value);
// A JSON value as YAML / TOML flow text.
std::string flow(const json& value);

// A bundled model name from a HuggingFace id ("Qwen/Qwen3-8B" -> "qwen3-8b"), or the id itself when it is a local
// config (a file, or a folder holding config.json); none for others, with out.model_error naming `where` and saying
// `hint` (an error unless the command line names the model).
std::optional<std::string> bundled_name(const std::string& id, const std::string& where, const std::string& hint, Loaded& out);
// The HuggingFace config of what bundled_name() returned (a bundled model's data file, or the local config's path).
json model_tree(const std::string& bundled_or_path);

// The node a parsed file states at a dotted key path (null pointer when it states none).
const json* stated_at(const json& tree, const std::string& path);

// torch.distributed.pipelining schedule names (torchtitan's and AutoModel's pp_schedule): schedules that run
// several virtual stages per rank, and those of them placed in a V (the second half folded back).
bool torch_multi_stage_schedule(const std::string& schedule);
bool torch_v_schedule(const std::string& schedule);
// torch.distributed.pipelining's ScheduleDualPipeV (priced as plan::Training::dualpipe_v).
bool torch_dualpipe_v(const std::string& schedule);
// Per-[chunk][rank] layers of virtual stages holding `per_stage` layers each, placed as torch's pipelining places
// them: stage s on rank s mod PP (chunk s / PP); a V schedule folds chunk 1 back (rank PP - 1 - (s - PP)).
plan::StageSplit looped_split(const std::vector<long long>& per_stage, long long pp, bool v_shape);

// Module names per virtual stage, chunk-major (rank r holds stages r, r + PP, ...), as torch pipelining splits a
// model by them (torchtitan's and AutoModel's module_fqns_per_model_part): the embedding first, `layer_prefix`N for
// each layer, the final norm and the head last.
struct ModuleNames {
  std::string embedding, layer_prefix, norm, head;
};
// Under DualPipe-V (`v_shape`) chunk 1's stages run back up the ranks.
json module_names_per_stage(const plan::StageSplit& split, const ModuleNames& names, bool v_shape = false);
// The plan's split, or the even split the estimator priced (its chunk 1 reversed under DualPipe-V, whose virtual
// stage PP + k sits on rank PP - 1 - k).
plan::StageSplit placed_split(const Plan& plan);

// A YAML whose fields are Megatron-LM's arguments under other names (Megatron-Bridge's ConfigContainer, NeMo 1.x's
// model config), read by the Megatron reader (config/megatron_fields): each field the file states becomes its flag
// on a launch line, and every flag in what the reader reports becomes the field's key path again.
enum class FlagKind {
  Value,    // --flag VALUE (a list: one word per item)
  Switch,   // true: --flag
  Negated,  // false: --flag (Megatron-LM's flag says the opposite of the field)
  Joined,   // --flag ITEM,ITEM (one word: Megatron-LM's --window-size)
  Pattern,  // --flag [ITEM,ITEM,...] (a list as one Python literal: --moe-layer-freq)
  Layout,   // Megatron-Core's pipeline layout: left to the reader (add_fields skips it)
};
struct FlagField {
  const char* path;  // dotted, from the file's root
  const char* flag;
  FlagKind kind;
};
class FlagLaunch {
 public:
  // `launch`: the words before the flags (e.g. torchrun pretrain_gpt.py).
  FlagLaunch(const json& tree, std::string file, std::vector<std::string> launch);
  // Adds `flag` with its values, read from `path`; a flag already added (or taken) keeps its first source.
  void add(const std::string& flag, const std::string& path, const std::vector<std::string>& values);
  // Records that `path` decides `flag` without adding it (a stated false that wins over a later source).
  void taken(const std::string& flag, const std::string& path);
  [[nodiscard]] bool has(const std::string& flag) const;
  // Each of `fields` the file states (Layout ones excepted); the fields are kept for read()'s messages.
  void add_fields(std::span<const FlagField> fields);
  // The Megatron reader over the launch, every flag in its report (and of every field given, stated or not) as its path.
  Loaded read();
  // `text` with each flag added or taken turned into its key path.
  [[nodiscard]] std::string paths(std::string text) const;
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  const json& tree_;
  std::string file_;
  std::vector<std::string> words_;
  std::vector<std::pair<std::string, std::string>> flag_paths_;  // flag -> the path it was read from
  std::vector<FlagField> fields_;                                // every field add_fields was given
};
// The Megatron-Core model fields both YAML readers share (model.num_layers, model.tensor_model_parallel_size, ...).
std::span<const FlagField> core_model_fields();
// The flags a new Megatron script of `plan` states (emit_megatron, the plan's model left out but its MTP depth), to be
// set on the fields of a YAML that are those flags (Megatron-Bridge's, NeMo 1.x's writers).
struct WrittenFlags {
  std::map<std::string, std::vector<std::string>> flags;
  [[nodiscard]] bool on(const std::string& flag) const { return flags.count(flag) > 0; }
  // The flag's value (a whole number as a number; several values as a list), `absent` when it is not written.
  [[nodiscard]] json value(const std::string& flag, const json& absent) const;
};
WrittenFlags megatron_layout_flags(const Plan& plan, std::vector<std::string>* notes);
// A scalar's text (a number, a name, true / false); refuses others naming `where`.
std::string scalar_text(const json& v, const std::string& where);

// Readers (one per format).
Loaded read_huggingface(const std::string& text, const std::string& file);
Loaded read_hyperparallel(const json& tree, const std::string& file);
Loaded read_reference_search(const json& tree, const std::string& file);
Loaded read_mindformers(const json& tree, const std::string& file);
Loaded read_megatron(const std::string& text, const std::string& file);
// Megatron-Bridge's ConfigContainer YAML (a run's run_config.yaml, a recipe's override YAML): whether `tree` is one,
// and it read as the Megatron-LM arguments its fields are (Format::Megatron, dialect kMegatronBridgeDialect).
bool is_megatron_bridge(const json& tree);
Loaded read_megatron_bridge(const json& tree, const std::string& file);
// NeMo 1.x's GPT training YAML (NeMo Framework Launcher's conf/training, NeMo's megatron_*_config.yaml): whether
// `tree` is one, and it read as the Megatron-LM arguments its fields are (Format::Megatron, dialect kNemoDialect).
bool is_nemo(const json& tree);
Loaded read_nemo(const json& tree, const std::string& file);
Loaded read_torchtitan(const std::string& text, const std::string& file);
Loaded read_automodel(const json& tree, const std::string& file);
Loaded read_sapp(const json& tree, const std::string& file);

// Writers.
std::string emit_megatron(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes);
// Edits a Megatron-Bridge YAML (original: read with kMegatronBridgeDialect; none: refused) to the plan's layout.
std::string emit_megatron_bridge(const Plan& plan, const Loaded* original, std::vector<std::string>* notes);
// Edits a NeMo 1.x GPT YAML (original: read with kNemoDialect; none: refused) to the plan's layout.
std::string emit_nemo(const Plan& plan, const Loaded* original, std::vector<std::string>* notes);
// Edits a MindSpeed-LLM FSDP2 launch (original: read with kMindSpeedFsdp2Dialect; none: refused) to the plan.
std::string emit_mindspeed_fsdp2(const Plan& plan, const Loaded* original);
std::string emit_mindformers(const Plan& plan, const Loaded* original, const std::string& model_name);
std::string emit_hyperparallel(const Plan& plan, const Loaded* original, const std::string& model_name);
Expressible expressible_hyperparallel(const Loaded* original);
std::string emit_torchtitan(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes);
// The torchtitan model name and flavour a new TOML states for the model (a "torchtitan NAME FLAVOUR" name, or the
// bundled flavour of the spec's dimensions); refuses a model none of them is.
std::pair<std::string, std::string> torchtitan_model(const model::ModelSpec* spec, const std::string& model_name);
// The flags a new Megatron script states the plan's windowed layers with (none without any); refuses a windowed stack
// no flag sapp reads back states.
std::vector<std::string> megatron_window_flags(const Plan& plan, const std::string& model_name);
std::string emit_automodel(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes);
Expressible expressible_automodel();

// MindFormers' rules: per [chunk][stage] layers from an offset and the per-stage recompute arrays.
plan::ChunkCounts offset_layers(long long layers, int pp, int vpp, const json& offset, const std::string& where);
plan::ChunkCounts recompute_layers(const plan::ChunkCounts& layers, const json& stated, const std::string& where);

}  // namespace sapp::config::detail
