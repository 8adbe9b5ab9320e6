#include "model/family.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::model {

using nlohmann::json;

namespace {

// The model facts a profile may decide where a config is silent, each bound as a name of the records.
const std::vector<std::string> kFacts = {"qkv_bias", "o_bias",      "mlp_bias",    "norm_bias", "qk_norm",   "qk_norm_whole", "out_gate",
                                         "sinks",    "router_bias", "shared_gate", "dropout",   "act_clamp", "mamba"};

std::map<std::string, double> read_facts(const json& node, const std::string& file, const std::string& key) {
  std::map<std::string, double> out;
  io::Reader rd{node, file, key};
  rd.only(kFacts);
  for (const auto& [name, value] : node.items()) {
    if (value.is_boolean())
      out[name] = value.get<bool>() ? 1.0 : 0.0;
    else if (value.is_number())
      out[name] = rd.quantity(name, units::kFact);
    else
      rd.bad(name, "a number or true/false");
  }
  return out;
}

}  // namespace

const LayerKind* Profile::kind(const std::string& name) const {
  for (const auto& k : kinds) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

Profile profile_from_json(const json& tree, const std::string& file, const std::string& arch, const OpRecords& records) {
  Profile p;
  p.file = file;
  p.arch = arch;
  io::Reader top{tree, file, ""};
  top.only({"model_types", "defaults", "kinds", "default", "stack", "layer_types", "selective", "period", "window", "tied_embeddings", "shared_experts",
            "moe_variant", "attention_bias"});
  if (top.has("model_types")) {
    const json& list = tree.at("model_types");
    if (!list.is_array()) top.bad("model_types", "a list of HF model_type names");
    for (const auto& item : list) {
      if (!item.is_string()) top.bad("model_types", "a list of HF model_type names");
      p.model_types.push_back(item.get<std::string>());
    }
  }
  if (top.has("defaults")) p.defaults = read_facts(tree.at("defaults"), file, "defaults");
  (void)top.child("kinds");  // checks it is a mapping
  if (tree.at("kinds").empty()) top.bad("kinds", "at least one layer kind");
  for (const auto& [name, data] : tree.at("kinds").items()) {
    io::Reader rd{data, file, "kinds." + name};
    rd.only({"attention", "ffn", "sliding", "chunked", "indexed", "ops", "defaults"});
    LayerKind k;
    k.name = name;
    k.attention = rd.choice_or<AttentionFlavour>(
        "attention", "gqa",
        {{"gqa", AttentionFlavour::Gqa}, {"mla", AttentionFlavour::Mla}, {"linear", AttentionFlavour::Linear}, {"none", AttentionFlavour::None}});
    k.ffn = rd.choice_or<FfnFlavour>("ffn", "dense", {{"dense", FfnFlavour::Dense}, {"moe", FfnFlavour::Moe}, {"none", FfnFlavour::None}});
    if (k.attention == AttentionFlavour::None && k.ffn == FfnFlavour::None)
      rd.bad("ffn", "an FFN where the kind has no attention (a layer runs one block at least)");
    k.sliding = rd.boolean_or("sliding", false);
    k.chunked = rd.boolean_or("chunked", false);
    k.indexed = rd.boolean_or("indexed", false);
    io::Reader ops = rd.child("ops");
    ops.only(records.op_counts);
    for (const auto& op : records.op_counts) {
      if (!ops.has(op)) ops.bad(op, "a count (declare 0 for an op the layer does not run)");
      k.ops[op] = ops.count(op, units::kOpCount);
    }
    if (rd.has("defaults")) k.defaults = read_facts(data.at("defaults"), file, "kinds." + name + ".defaults");
    p.kinds.push_back(std::move(k));
  }
  if (top.has("default")) {
    p.default_kind = top.string("default");
    if (p.kind(p.default_kind) == nullptr) top.bad("default", "the name of one of its kinds");
  } else if (p.kinds.size() == 1) {
    p.default_kind = p.kinds.front().name;
  }
  if (top.has("stack")) {
    io::Reader st = top.child("stack");
    st.only({"dense", "moe", "mtp"});
    auto role = [&](const char* key, std::string& out) {
      if (!st.has(key)) return;
      out = st.string(key);
      if (p.kind(out) == nullptr) st.bad(key, "the name of one of the profile's kinds");
    };
    role("dense", p.dense_kind);
    role("moe", p.moe_kind);
    role("mtp", p.mtp_kind);
  }
  if (top.has("layer_types")) {
    io::Reader lt = top.child("layer_types");
    for (const auto& [name, value] : tree.at("layer_types").items()) {
      std::string kind = lt.string(name);
      if (p.kind(kind) == nullptr) lt.bad(name, "the name of one of the profile's kinds");
      p.layer_types[name] = kind;
    }
  }
  auto kind_name = [&](io::Reader& rd, const char* key) {
    std::string name = rd.string(key);
    if (p.kind(name) == nullptr) rd.bad(key, "the name of one of the profile's kinds");
    return name;
  };
  if (top.has("period")) {
    io::Reader pr = top.child("period");
    pr.only({"every", "kind", "others"});
    p.period = pr.count("every", units::kSparseStep);
    p.period_kind = kind_name(pr, "kind");
    p.period_others = kind_name(pr, "others");
  }
  if (top.has("window")) p.window_kind = kind_name(top, "window");
  p.tied_embeddings = top.boolean_or("tied_embeddings", false);
  if (top.has("shared_experts")) p.shared_experts = top.count("shared_experts", units::kSharedExperts);
  if (top.has("moe_variant")) {
    io::Reader mv = top.child("moe_variant");
    for (const auto& [dense, value] : tree.at("moe_variant").items()) {
      if (p.kind(dense) == nullptr) mv.bad(dense, "keys that name the profile's kinds");
      p.moe_variant[dense] = kind_name(mv, dense.c_str());
    }
  }
  if (top.has("selective")) {
    const json& list = tree.at("selective");
    if (!list.is_array()) top.bad("selective", "a list of recompute switches");
    for (const auto& item : list) {
      if (!item.is_string() || records.switch_index(item.get<std::string>()) < 0) top.bad("selective", "a list of recompute switches of the op records");
      p.selective.push_back(item.get<std::string>());
    }
  }
  if (top.has("attention_bias")) {
    const json& list = tree.at("attention_bias");
    auto bias_fact = [](const json& item) { return item.is_string() && (item == "qkv_bias" || item == "o_bias"); };
    if (!list.is_array() || !std::all_of(list.begin(), list.end(), bias_fact)) top.bad("attention_bias", "a list of qkv_bias and/or o_bias");
    p.attention_bias_sets_o = std::find(list.begin(), list.end(), "o_bias") != list.end();
    p.attention_bias_sets_qkv = std::find(list.begin(), list.end(), "qkv_bias") != list.end();
  }
  if (p.default_kind.empty() && p.moe_kind.empty() && p.layer_types.empty() && p.period == 0) {
    fail(file, "a profile with several kinds must name a default, a stack, layer_types or a period");
  }
  return p;
}

Profile load_profile(const std::string& path, const OpRecords& records) { return profile_from_json(io::read_tree(path), path, io::stem(path), records); }

std::vector<Profile> load_profiles(const std::string& dir, const OpRecords& records) {
  std::vector<Profile> out;
  for (const auto& f : io::list_files(dir, ".yaml")) out.push_back(load_profile(f, records));
  return out;
}

Catalog load_catalog(const std::string& data_dir) {
  Catalog c;
  c.dir = data_dir;
  c.records = std::make_shared<const OpRecords>(load_op_records(data_dir + "/op_records.yaml"));
  c.profiles = load_profiles(data_dir + "/op_profiles", *c.records);
  return c;
}

const Profile& choose_profile(const ModelSpec& spec, const std::vector<Profile>& profiles) {
  if (!spec.arch.empty()) {
    for (const auto& p : profiles) {
      if (p.arch == spec.arch) return p;
    }
    std::string list;
    for (const auto& p : profiles) list += (list.empty() ? "" : ", ") + p.arch;
    fail(at(spec.source, "arch"), "\"{}\" names no op profile; the profiles are {}", spec.arch, list);
  }
  if (spec.model_type.empty()) {
    fail(at(spec.source, "model_type"), "is missing: state the HF model_type or an explicit arch (one of the op profiles)");
  }
  auto by_type = [&](const std::string& type) -> const Profile* {
    for (const auto& p : profiles) {
      if (std::find(p.model_types.begin(), p.model_types.end(), type) != p.model_types.end()) return &p;
    }
    return nullptr;
  };
  if (const Profile* p = by_type(spec.model_type)) return *p;
  // An unknown model_type: the family Transformers' class names (Glm4MoeForCausalLM is glm4_moe's: CamelCase before
  // "For", snake-cased).
  for (const auto& a : spec.architectures) {
    std::string type;
    const std::string stem = a.substr(0, a.find("For"));
    for (std::size_t i = 0; i < stem.size(); ++i) {
      const auto c = static_cast<unsigned char>(stem[i]);
      if (std::isupper(c) && i > 0 && (std::islower(static_cast<unsigned char>(stem[i - 1])) || std::isdigit(static_cast<unsigned char>(stem[i - 1]))))
        type += '_';
      type += static_cast<char>(std::tolower(c));
    }
    if (const Profile* p = by_type(type)) return *p;
  }
  std::string list;
  for (const auto& p : profiles) {
    for (const auto& t : p.model_types) list += (list.empty() ? "" : ", ") + t;
  }
  fail(at(spec.source, "model_type"), "\"{}\" is no known family{}; known model_types: {} (or state arch, or add a profile under data/op_profiles)",
       spec.model_type, spec.architectures.empty() ? "" : fmt::format(" (nor are its architectures {})", fmt::join(spec.architectures, ", ")), list);
}

void refuse_unknown_family(const nlohmann::json& config, const std::string& file, const std::vector<Profile>& profiles) {
  if (!config.is_object() || !config.contains("model_type") || !config.at("model_type").is_string() || config.contains("arch")) return;
  ModelSpec probe;
  probe.source = file;
  probe.model_type = config.at("model_type").get<std::string>();
  probe.architectures = architectures_of(config);
  (void)choose_profile(probe, profiles);
}

namespace {

double fact(const Profile& p, const LayerKind& k, const std::string& name) {
  if (auto it = k.defaults.find(name); it != k.defaults.end()) return it->second;
  if (auto it = p.defaults.find(name); it != p.defaults.end()) return it->second;
  return 0.0;
}

void set_count(expr::Env& env, const expr::Symbols& symbols, const std::string& name, Count value) {
  int index = symbols.find(name);
  if (index >= 0) env.set(index, expr::Value::of_int(value));
}

// Binds the model names a layer of `kind` reads (see the header of op_records.yaml).
BoundKind bind(const ModelSpec& spec, const Profile& profile, const LayerKind& kind, const OpRecords& records, bool vision) {
  const expr::Symbols& sym = records.symbols;
  BoundKind bound{kind, vision, expr::Env(sym), {}, std::nullopt, {}};
  expr::Env& env = bound.env;
  auto count = [&](const std::string& name, Count v) { set_count(env, sym, name, v); };
  for (const auto& [op, n] : kind.ops) count("n_" + op, n);
  // A squared-ReLU MLP (Megatron's --squared-relu, Nemotron's hidden_act relu2) has no gate: two matrices, not three.
  if (!vision && spec.hidden_act && (*spec.hidden_act == "relu2" || *spec.hidden_act == "squared_relu") && kind.ops.count("ffn_mm") &&
      kind.ops.at("ffn_mm") == 3)
    count("n_ffn_mm", 2);

  for (const auto& name : kFacts) {
    double v = fact(profile, kind, name);
    // What the config states wins over the family's defaults.
    if (!vision) {
      if (name == "qkv_bias" && profile.attention_bias_sets_qkv && spec.attention_bias) v = *spec.attention_bias ? 1 : 0;
      if (name == "o_bias" && profile.attention_bias_sets_o && spec.attention_bias) v = *spec.attention_bias ? 1 : 0;
      if (name == "o_bias" && spec.attention_out_bias) v = *spec.attention_out_bias ? 1 : 0;
      if (name == "qk_norm_whole" && spec.qk_norm_whole) v = *spec.qk_norm_whole ? 1 : 0;
      if (name == "mlp_bias" && spec.mlp_bias) v = *spec.mlp_bias ? 1 : 0;
      if (name == "norm_bias" && spec.norm_bias) v = *spec.norm_bias ? 1 : 0;
      if (name == "qk_norm" && spec.qk_norm) v = *spec.qk_norm ? 1 : 0;
      if (name == "out_gate" && spec.attn_output_gate) v = *spec.attn_output_gate ? 1 : 0;
      if (name == "router_bias" && spec.router_bias) v = *spec.router_bias ? 1 : 0;
      if (name == "dropout" && spec.dropout) v = *spec.dropout > 0 ? 1 : 0;
    }
    count(name, static_cast<Count>(std::llround(v)));
  }
  if (vision) {
    const VisionSpec& vs = *spec.vision;
    Count dh = vs.hidden_size / vs.num_heads;
    count("h", vs.hidden_size);
    count("a", vs.num_heads);
    count("kv", vs.num_heads);
    count("dh", dh);
    count("dv", dh);
    count("v", 0);
    count("ffn", *vs.intermediate_size);
  } else {
    count("h", spec.hidden_size);
    count("v", spec.vocab_size);
    if (kind.attention == AttentionFlavour::Mla) {
      count("a", spec.num_heads);
      count("kv", spec.num_heads);
      count("dh", *spec.qk_nope_head_dim + *spec.qk_rope_head_dim);
      count("dv", *spec.v_head_dim);
    } else {
      count("a", spec.num_heads);
      count("kv", spec.kv_heads());
      count("dh", spec.effective_head_dim());
      count("dv", spec.effective_head_dim());
    }
    count("ffn", kind.ffn == FfnFlavour::Moe ? spec.routed_expert_width() : spec.intermediate_size.value_or(spec.routed_expert_width()));
  }
  // A layer of one block (AttentionFlavour::None, FfnFlavour::None): the other block's names are 0, so that its terms
  // vanish, and attn_on / ffn_on say which blocks run (their norms, residual joins and casts).
  const bool attn_on = vision || kind.attention != AttentionFlavour::None;
  const bool ffn_on = vision || kind.ffn != FfnFlavour::None;
  count("attn_on", attn_on ? 1 : 0);
  count("ffn_on", ffn_on ? 1 : 0);
  if (!attn_on) {
    for (const char* name : {"a", "kv", "dh", "dv"}) count(name, 0);
  }
  if (!ffn_on) count("ffn", 0);
  bool moe = !vision && kind.ffn == FfnFlavour::Moe;
  count("n_exp", moe ? spec.num_experts.value_or(0) : 0);
  count("topk", moe ? spec.experts_per_token.value_or(1) : 1);
  count("shared_ffn", moe ? spec.shared_expert_width() : 0);
  bool mla = !vision && kind.attention == AttentionFlavour::Mla;
  count("mla", mla ? 1 : 0);
  count("q_rank", mla ? spec.q_lora_rank.value_or(0) : 0);
  count("kv_rank", mla ? spec.kv_lora_rank.value_or(0) : 0);
  count("rope", mla ? spec.qk_rope_head_dim.value_or(0) : 0);
  count("nope", mla ? spec.qk_nope_head_dim.value_or(0) : 0);
  bool lin = !vision && kind.attention == AttentionFlavour::Linear;
  count("lin", lin ? 1 : 0);
  LinearAttentionDims dims = spec.linear.value_or(LinearAttentionDims{});
  count("lin_nk", dims.num_key_heads);
  count("lin_dk", dims.key_head_dim);
  count("lin_nv", dims.num_value_heads);
  count("lin_dv", dims.value_head_dim);
  count("lin_conv", dims.conv_kernel_dim);
  count("lin_chunk", dims.scan_chunk_tokens);
  const bool indexed = !vision && kind.indexed;
  IndexerDims index = indexed ? spec.indexer.value_or(IndexerDims{}) : IndexerDims{};
  count("idx_h", index.heads);
  count("idx_dh", index.head_dim);
  count("idx_k", index.topk);

  // Parameters: counted once per kind, from the records' terms (model names only).
  for (const auto& term : records.params) {
    if (term.when && !term.when->eval(env).truthy()) continue;
    double n = term.formula.eval_double(env);
    if (term.part == "attention")
      bound.attention_params += n;
    else if (term.part == "ffn")
      bound.ffn_params += n;
    else if (term.part == "norm")
      bound.norm_params += n;
    else
      bound.expert_params += n;
  }
  // Specialise the records to this kind: model names folded in, slots and terms whose `when` is false dropped.
  auto fold_when = [&](const std::optional<expr::Expr>& when, bool& keep) -> std::optional<expr::Expr> {
    keep = true;
    if (!when) return std::nullopt;
    expr::Expr w = when->specialize(env);
    if (w.is_constant()) {
      keep = w.constant_value().truthy();
      return std::nullopt;
    }
    return w;
  };
  for (const auto& slot : records.slots) {
    bool keep = true;
    int part = slot.part == "attention" ? 0 : slot.part == "ffn" ? 1 : 2;
    KindSlot ks{&slot, part, fold_when(slot.when, keep), slot.formula.specialize(env), {}};
    if (!keep) continue;
    for (const auto& entry : slot.entries) ks.entries.push_back(SlotEntry{entry.op, entry.elements.specialize(env)});
    bound.slots.push_back(std::move(ks));
  }
  if (records.full_recompute) bound.full_recompute = records.full_recompute->specialize(env);
  for (const auto& term : records.work) {
    bool keep = true;
    WorkTerm w{term.name, term.kind, term.op, term.shard, fold_when(term.when, keep), term.formula.specialize(env), std::nullopt, std::nullopt};
    if (!keep) continue;
    if (term.rows) w.rows = term.rows->specialize(env);
    if (term.backward) w.backward = term.backward->specialize(env);
    w.role = term.role;
    bound.work.push_back(std::move(w));
  }
  if (moe && spec.num_experts.value_or(0) > 0) {
    bound.active_expert_params = bound.expert_params * static_cast<double>(spec.experts_per_token.value_or(1)) / static_cast<double>(*spec.num_experts);
  }
  return bound;
}

}  // namespace

Count Model::body_layers() const {
  Count n = 0;
  for (const auto& g : stack) n += (!g.mtp && !g.vision) ? g.count : 0;
  return n;
}

Count Model::mtp_layers() const {
  Count n = 0;
  for (const auto& g : stack) n += g.mtp ? g.count : 0;
  return n;
}

Count Model::vision_layers() const {
  Count n = 0;
  for (const auto& g : stack) n += g.vision ? g.count : 0;
  return n;
}

ParamCounts Model::params() const {
  ParamCounts c;
  c.embedding = embedding_params;
  c.head = head_params + final_norm_params;
  double active_layers = 0;
  for (const auto& g : stack) {
    const BoundKind& k = kinds[static_cast<std::size_t>(g.kind)];
    double n = static_cast<double>(g.count);
    double all = n * (k.dense_params() + k.expert_params);
    double active = n * (k.dense_params() + k.active_expert_params);
    if (g.vision) {
      c.vision += all;
    } else if (g.mtp) {
      c.mtp += all;
    } else {
      c.layers += all;
      active_layers += active;
    }
  }
  c.mtp += mtp_extra_params * static_cast<double>(mtp_layers());
  c.vision += vision_extra_params;
  // Active: what one token of the main model runs; MTP and the vision tower are reported apart.
  c.active = c.embedding + c.head + active_layers;
  c.active_no_embedding = c.active - c.embedding;
  c.total = c.embedding + c.head + c.layers + c.mtp + c.vision;
  return c;
}

std::optional<double> body_fact(const Model& m, const std::string& name) {
  if (!m.records) return std::nullopt;
  const int index = m.records->symbols.find(name);
  for (const BoundKind& k : m.kinds) {
    if (k.vision) continue;
    if (index < 0 || !k.env.has(index)) return std::nullopt;
    return k.env.get(index).as_double();
  }
  return std::nullopt;
}

Model resolve(const ModelSpec& spec, std::shared_ptr<const OpRecords> shared_records, const std::vector<Profile>& profiles) {
  if (!shared_records) throw std::logic_error("model::resolve: no op records");
  const OpRecords& records = *shared_records;
  Model m;
  m.spec = spec;
  m.records = std::move(shared_records);
  m.profile = choose_profile(spec, profiles);
  const Profile& p = m.profile;
  m.spec.arch = p.arch;
  if (!spec.tie_word_embeddings_stated) m.spec.tie_word_embeddings = p.tied_embeddings;
  if (spec.is_moe() && !spec.num_shared_experts && !spec.shared_expert_intermediate_size && p.shared_experts > 0) {
    m.spec.num_shared_experts = p.shared_experts;
  }
  m.selective = p.selective.empty() ? records.selective : p.selective;

  // Which kind each body layer is, in model order.
  std::vector<std::string> body;
  body.reserve(static_cast<std::size_t>(spec.num_layers));
  std::string types_key = at(spec.source, "layer_types");
  bool uniform_types = !spec.layer_types.empty() &&
                       std::all_of(spec.layer_types.begin(), spec.layer_types.end(), [&](const std::string& t) { return t == spec.layer_types.front(); });
  if (!spec.layer_types.empty() && !(p.layer_types.empty() && uniform_types)) {
    if (p.layer_types.empty()) {
      fail(types_key, "lists several layer types, but op profile {} maps none of them to a kind", p.arch);
    }
    if (!spec.mlp_only_layers.empty() && p.moe_variant.empty()) {
      fail(at(spec.source, "mlp_only_layers"), "cannot be combined with layer_types in op profile {}", p.arch);
    }
    for (Count i = 0; i < spec.num_layers; ++i) {
      const std::string& t = spec.layer_types[static_cast<std::size_t>(i)];
      auto it = p.layer_types.find(t);
      if (it == p.layer_types.end()) {
        std::string known;
        for (const auto& [name, kind] : p.layer_types) known += (known.empty() ? "" : ", ") + name;
        fail(types_key, "layer {} is \"{}\", which op profile {} does not know; it knows {}", i, t, p.arch, known);
      }
      body.push_back(it->second);
    }
  } else if (!p.period_kind.empty()) {
    Count every = spec.attention_period.value_or(p.period);
    if (every > spec.num_layers) {
      fail(at(spec.source, "full_attention_interval / sliding_window_pattern"), "{} is more than the {} layers", every, spec.num_layers);
    }
    for (Count i = 0; i < spec.num_layers; ++i) body.push_back((i + 1) % every == 0 ? p.period_kind : p.period_others);
  } else if (!p.window_kind.empty() && spec.sliding_window) {
    body.assign(static_cast<std::size_t>(spec.num_layers), p.window_kind);
  } else if (!p.moe_kind.empty() && spec.is_moe()) {
    if (p.dense_kind.empty() && (spec.first_k_dense.value_or(0) > 0 || !spec.mlp_only_layers.empty() || spec.moe_layer_step.value_or(1) > 1)) {
      fail(p.file, "the model has dense layers (first_k_dense_replace / mlp_only_layers / a MoE layer step) but the profile's stack names no dense kind");
    }
    for (Count i = 0; i < spec.num_layers; ++i) body.push_back(spec.routes_layer(i) ? p.moe_kind : p.dense_kind);
  } else {
    std::string kind = p.default_kind.empty() ? p.dense_kind : p.default_kind;
    if (kind.empty()) fail(at(spec.source, "layer_types"), "is required: family {} ({}) has no layer kind for a config without it", p.arch, p.file);
    if (p.kind(kind)->ffn == FfnFlavour::Moe && !spec.is_moe()) {
      fail(at(spec.source, "num_experts"), "op profile {} prices MoE layers, but the model states no experts", p.arch);
    }
    body.assign(static_cast<std::size_t>(spec.num_layers), kind);
  }
  if (!p.moe_variant.empty() && spec.is_moe()) {
    for (Count i = 0; i < spec.num_layers; ++i) {
      auto& name = body[static_cast<std::size_t>(i)];
      auto it = p.moe_variant.find(name);
      if (spec.routes_layer(i) && it != p.moe_variant.end()) name = it->second;
    }
  }
  // (A hybrid pattern states each layer's FFN itself: its MoE layers are where it says.)
  for (Count i = 0; spec.is_moe() && spec.hybrid_pattern.empty() && i < spec.num_layers; ++i) {
    bool priced_moe = p.kind(body[static_cast<std::size_t>(i)])->ffn == FfnFlavour::Moe;
    if (priced_moe != spec.routes_layer(i)) {
      fail(at(spec.source, "mlp_only_layers / first_k_dense_replace / decoder_sparse_step"), "make layer {} {}, but op profile {} can only price it {}", i,
           spec.routes_layer(i) ? "MoE" : "dense", p.arch, priced_moe ? "as MoE" : "as dense");
    }
  }
  for (const auto& name : body) {
    const LayerKind* k = p.kind(name);
    if (k->ffn == FfnFlavour::Moe && !spec.is_moe())
      fail(at(spec.source, "num_experts"), "kind {} of op profile {} is MoE, but the model states no experts", name, p.arch);
    if (k->attention == AttentionFlavour::Mla && !spec.is_mla())
      fail(at(spec.source, "kv_lora_rank"), "kind {} of op profile {} is MLA, but the model states no kv_lora_rank", name, p.arch);
    if (k->attention == AttentionFlavour::Linear && !spec.linear)
      fail(at(spec.source, "linear_num_key_heads"),
           "kind {} of op profile {} is linear attention, but the model states no linear_* dimensions (nor a Mamba-2 mixer's mamba_num_heads, "
           "mamba_head_dim, ssm_state_size, n_groups, conv_kernel)",
           name, p.arch);
    if (k->chunked && !spec.attention_chunk)
      fail(at(spec.source, "attention_chunk_size"), "kind {} of op profile {} attends within chunks, but the model states no chunk size", name, p.arch);
    if (k->sliding && !spec.sliding_window)
      fail(at(spec.source, "sliding_window"), "kind {} of op profile {} attends a sliding window, but the model states none", name, p.arch);
    if (k->indexed && !spec.indexer)
      fail(at(spec.source, "index_topk"),
           "kind {} of op profile {} attends the keys a sparse-attention indexer selects, but the model states no index_n_heads, index_head_dim, index_topk",
           name, p.arch);
  }
  if (spec.indexer && std::none_of(body.begin(), body.end(), [&](const std::string& name) { return p.kind(name)->indexed; })) {
    fail(at(spec.source, "index_topk"), "is stated, but op profile {} prices no sparse-attention indexer for this model", p.arch);
  }

  // A stated window that no layer attends would be priced as full attention without a word.
  if (spec.sliding_window && std::none_of(body.begin(), body.end(), [&](const std::string& name) { return p.kind(name)->sliding; })) {
    fail(at(spec.source, "sliding_window"),
         "{} is stated, but op profile {} prices no sliding-window layer for this model (state use_sliding_window: false, or remove it, if "
         "the attention is full)",
         *spec.sliding_window, p.arch);
  }

  auto kind_index = [&](const std::string& name, bool vision, const Profile& from) {
    for (std::size_t i = 0; i < m.kinds.size(); ++i) {
      if (m.kinds[i].kind.name == name && m.kinds[i].vision == vision) return static_cast<int>(i);
    }
    m.kinds.push_back(bind(m.spec, from, *from.kind(name), records, vision));
    return static_cast<int>(m.kinds.size()) - 1;
  };

  if (spec.vision) {
    const Profile* vp = nullptr;
    for (const auto& candidate : profiles) {
      if (candidate.arch == "vision") vp = &candidate;
    }
    if (vp == nullptr) fail(spec.source, "the model has a vision tower, but no op profile named vision is loaded");
    std::string name = spec.vision->gated_mlp ? "gated" : "plain";
    if (vp->kind(name) == nullptr) fail(vp->file, "the vision profile needs kinds 'gated' and 'plain'");
    m.stack.push_back(LayerGroup{kind_index(name, true, *vp), spec.vision->num_layers, false, true});
  }
  for (const auto& name : body) {
    int k = kind_index(name, false, p);
    if (!m.stack.empty() && m.stack.back().kind == k && !m.stack.back().vision && !m.stack.back().mtp) {
      ++m.stack.back().count;
    } else {
      m.stack.push_back(LayerGroup{k, 1, false, false});
    }
  }
  Count mtp = spec.mtp_depth.value_or(0);
  if (mtp > 0) {
    if (p.mtp_kind.empty())
      fail(at(spec.source, "num_nextn_predict_layers"), "the model has {} MTP layer(s), but op profile {} names no mtp kind in its stack", mtp, p.arch);
    m.stack.push_back(LayerGroup{kind_index(p.mtp_kind, false, p), mtp, true, false});
  }

  // Model-level parameters (the same for every family; formulas in the comments).
  double h = static_cast<double>(spec.hidden_size);
  double v = static_cast<double>(spec.vocab_size);
  double norm_bias = p.defaults.count("norm_bias") ? p.defaults.at("norm_bias") : 0.0;
  m.embedding_params = v * h + static_cast<double>(spec.learned_position_embeddings.value_or(0)) * h;  // V*h (+ positions*h)
  m.head_params = m.spec.tie_word_embeddings ? 0.0 : v * h;                                            // V*h unless tied
  m.final_norm_params = h * (1.0 + norm_bias);                                                         // final norm
  m.mtp_extra_params = 2.0 * h * h + 3.0 * h;  // DeepSeek MTP: eh_proj (2h x h), enorm, hnorm, head norm
  if (spec.vision) {
    const VisionSpec& vs = *spec.vision;
    double hv = static_cast<double>(vs.hidden_size);
    double out = static_cast<double>(vs.out_hidden_size);
    // Patch embedding: a convolution of in_channels x temporal x patch^2 inputs per output (+ bias), learned
    // positions, and SigLIP's post LayerNorm (weight and bias).
    double patch = static_cast<double>(vs.in_channels * vs.temporal_patch_size * vs.patch_size * vs.patch_size) * hv + (vs.patch_bias ? hv : 0.0) +
                   static_cast<double>(vs.position_embeddings) * hv + (vs.post_norm ? 2.0 * hv : 0.0);
    double projector = 0;
    if (vs.projector == VisionProjector::GemmaPooled) {
      // Gemma3MultiModalProjector: RMSNorm(hv) and a bias-free hv x out projection (the pooling has no weights).
      projector = hv + hv * out;
    } else {
      // Qwen merger: ln_q (hv, +bias for LayerNorm towers), then Linear(merged, merged) + GELU + Linear(merged, out).
      double merged = hv * static_cast<double>(vs.spatial_merge_size * vs.spatial_merge_size);
      double ln_q = hv * (vs.gated_mlp ? 1.0 : 2.0);
      projector = ln_q + merged * merged + merged + merged * out + out;
    }
    m.vision_extra_params = patch + projector;
  }
  return m;
}

}  // namespace sapp::model
