// model/family: op profiles (one YAML file per model family), layer stacks, and the resolved Model.
//
// A family is data: `data/op_profiles/<arch>.yaml` names the HF model_types it covers, its layer kinds
// (attention flavour x FFN flavour, op counts), the model facts it decides where a config is silent (biases,
// QK-norm, output gate...), and how its stack is built (dense prefix, hybrid layer_types, MTP). Resolving a
// ModelSpec binds every kind's names once, and counts each kind's parameters once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/expr.hpp"
#include "model/model_spec.hpp"
#include "model/op_records.hpp"

namespace sapp::model {

// None: a layer of one block (Nemotron-H's hybrid stack: a Mamba-2 or attention layer without an FFN, an MLP or MoE
// layer without attention).
enum class AttentionFlavour { Gqa, Mla, Linear, None };
enum class FfnFlavour { Dense, Moe, None };

struct LayerKind {
  std::string name;
  AttentionFlavour attention = AttentionFlavour::Gqa;
  FfnFlavour ffn = FfnFlavour::Dense;
  bool sliding = false;  // attends a sliding window (model's sliding_window)
  bool chunked = false;  // attends within its chunk of attention_chunk tokens (Llama 4's local layers)
  bool indexed = false;  // DeepSeek Sparse Attention: a lightning indexer picks the index_topk keys each query attends
  std::map<std::string, Count> ops;
  std::map<std::string, double> defaults;  // per-kind model facts, over the profile's
};

struct Profile {
  std::string file;
  std::string arch;
  std::vector<std::string> model_types;
  std::vector<LayerKind> kinds;
  std::string default_kind;
  std::string dense_kind;  // stack roles; empty when the family has none
  std::string moe_kind;
  std::string mtp_kind;
  std::map<std::string, std::string> layer_types;  // HF layer type name -> kind
  // Where a config states no layer_types: every `period`-th layer (1-based) is `period_kind`, the others
  // `period_others` (Gemma 2/3 sliding and global attention, Qwen3-Next linear and full). The config's
  // attention_period wins over the profile's default period.
  Count period = 0;
  std::string period_kind, period_others;
  bool tied_embeddings = false;  // the output head shares the embedding where the config does not say
  Count shared_experts = 0;      // shared experts (of the routed width) where the config does not say (Llama 4: 1)
  // A family whose attention pattern (layer_types or period) and dense/MoE pattern vary apart (Llama 4): the
  // kind a MoE layer takes instead of the dense kind the attention pattern gave it.
  std::map<std::string, std::string> moe_variant;
  // Where a config states a sliding_window and no layer_types, every layer is this kind (Mistral 7B v0.1).
  std::string window_kind;
  std::map<std::string, double> defaults;
  // Which projections' biases a config's attention_bias switches (profile key attention_bias): Llama's and GPT-OSS's
  // modeling code puts it on q, k, v and o; GLM-4 and Seed-OSS on q, k and v only (o follows attention_out_bias).
  bool attention_bias_sets_qkv = true;
  bool attention_bias_sets_o = true;
  std::vector<std::string> selective;  // empty: the records' default
  [[nodiscard]] const LayerKind* kind(const std::string& name) const;
};

Profile profile_from_json(const nlohmann::json& tree, const std::string& file, const std::string& arch, const OpRecords& records);
Profile load_profile(const std::string& path, const OpRecords& records);
std::vector<Profile> load_profiles(const std::string& dir, const OpRecords& records);

// A slot of the op records specialised to one kind: its model names folded in, dropped when its `when` is
// false for the kind.
struct KindSlot {
  const Slot* slot = nullptr;      // the record it came from (name, part)
  int part = 0;                    // 0 attention, 1 ffn, 2 norm (the slot's part, resolved once)
  std::optional<expr::Expr> when;  // none: always
  expr::Expr formula;
  std::vector<SlotEntry> entries;
};

// One distinct layer kind of a resolved model, its model names bound, its parameters counted, and the records'
// expressions specialised to it (so each estimate evaluates only what depends on the layout).
struct BoundKind {
  LayerKind kind;
  bool vision = false;
  expr::Env env;  // model names only; layout names are added by the estimators on a copy
  std::vector<KindSlot> slots;
  std::optional<expr::Expr> full_recompute;
  std::vector<WorkTerm> work;
  double attention_params = 0;
  double ffn_params = 0;  // dense FFN, router, shared experts
  double norm_params = 0;
  double expert_params = 0;         // routed experts, all of them
  double active_expert_params = 0;  // routed experts one token runs (top-k of n)
  [[nodiscard]] double dense_params() const { return attention_params + ffn_params + norm_params; }
};

struct LayerGroup {
  int kind = 0;  // index into Model::kinds
  Count count = 0;
  bool mtp = false;
  bool vision = false;
};

struct ParamCounts {
  double total = 0;
  double active = 0;               // every weight one token of the main model touches, embedding row included
  double active_no_embedding = 0;  // the same without the input embedding (a lookup, no compute); the convention
                                   // of the DeepSeek-V2/V3 papers and the gpt-oss model card
  double embedding = 0;
  double head = 0;
  double layers = 0;
  double mtp = 0;
  double vision = 0;
};

struct Model {
  ModelSpec spec;
  std::shared_ptr<const OpRecords> records;  // shared with the catalog it came from: a copy never dangles
  Profile profile;
  std::vector<BoundKind> kinds;
  std::vector<LayerGroup> stack;  // model order: vision tower, body, MTP
  double embedding_params = 0;    // token (+ learned position) embedding
  double head_params = 0;         // LM head (0 when tied; the last stage still holds a copy under PP)
  double final_norm_params = 0;
  double mtp_extra_params = 0;         // per MTP depth beyond its transformer layer: projection and norms
  double vision_extra_params = 0;      // patch embedding and merger
  std::vector<std::string> selective;  // switches `selective` drops

  [[nodiscard]] Count body_layers() const;  // LM layers without MTP
  [[nodiscard]] Count mtp_layers() const;
  [[nodiscard]] Count vision_layers() const;
  [[nodiscard]] ParamCounts params() const;
};

const Profile& choose_profile(const ModelSpec& spec, const std::vector<Profile>& profiles);
// Fails, naming `file`'s model_type and architectures, when `config` states a family no profile covers; returns
// otherwise. A reader calls it when a config fails on a key: the unknown family (DBRX spells n_layers) is what to say.
void refuse_unknown_family(const nlohmann::json& config, const std::string& file, const std::vector<Profile>& profiles);
Model resolve(const ModelSpec& spec, std::shared_ptr<const OpRecords> records, const std::vector<Profile>& profiles);
// A fact of the model's first language-model layer kind as priced (kFacts: qk_norm, qkv_bias, ...): the config's
// value where it states one, else the family's default; none without such a kind or fact.
std::optional<double> body_fact(const Model& m, const std::string& name);

// Everything read from a data directory once: records and profiles. Owned by the caller; no global cache.
struct Catalog {
  std::string dir;
  std::shared_ptr<const OpRecords> records;
  std::vector<Profile> profiles;
};
Catalog load_catalog(const std::string& data_dir);

}  // namespace sapp::model
