#include "pipeline/layers.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::balance {

namespace {

struct KindKeys {
  const char* memory;
  const char* time;
  const char* coef;
  double default_coef;
};

// The reference's JSON names (sapp_ppb/utils/recompute.py) and default coefficients.
constexpr std::array<KindKeys, kRcKinds> kKeys = {{
    {"memory_activation", "backward_time", "backward_coef", 0.0},
    {"memory_select_rec", "select_rec_time", "select_rec_coef", 0.04},
    {"memory_select_comm", "select_comm_time", "select_comm_coef", 0.125},
    {"memory_both_comm_select", "both_comm_select_time", "both_comm_select_coef", 0.165},
    {"memory_recompute", "recompute_time", "recompute_coef", 0.5},
}};

}  // namespace

const char* to_string(Rc r) {
  switch (r) {
    case Rc::None: return "none";
    case Rc::Selective: return "selective";
    case Rc::Comm: return "comm";
    case Rc::Both: return "both";
    case Rc::Full: return "full";
  }
  return "none";
}

Rc parse_rc(const std::string& text, const std::string& where) {
  if (text == "none" || text == "off") return Rc::None;
  if (text == "selective" || text == "select") return Rc::Selective;
  if (text == "comm") return Rc::Comm;
  if (text == "both") return Rc::Both;
  if (text == "full") return Rc::Full;
  fail(where, "'{}' is not a recompute kind; expected none, selective, comm, both or full", text);
}

long long LayerSet::body_layers() const {
  long long n = 0;
  for (const auto& b : bodies) n += b.count;
  return n;
}

LayerSet layers_from_json(const nlohmann::json& tree, const std::string& file) {
  if (!tree.is_object()) fail(file, "a layers file must be a JSON object with layers_description, got {}", tree.type_name());
  if (!tree.contains("layers_description")) fail(at(file, "layers_description"), "is missing: the file does not describe any layer");
  const auto& list = tree.at("layers_description");
  if (!list.is_array() || list.empty()) fail(at(file, "layers_description"), "must be a non-empty list of layers, got {}", list.dump().substr(0, 60));
  LayerSet set;
  set.file = file;
  set.constant_mb = io::Reader{tree, file, ""}.quantity_or("constant_memory_mb", units::kMegabytes, 0.0);
  int heads = 0;
  int tails = 0;
  bool kinds_set = false;
  std::string first_body;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string key = "layers_description[" + std::to_string(i) + "]";
    io::Reader rd{list[i], file, key};
    if (!list[i].is_object()) fail(at(file, key), "must be an object, got {}", list[i].dump());
    std::string type = rd.string("type");
    std::string name = rd.string_or("name", type);
    if (!rd.has("nb_layer")) rd.bad("nb_layer", "the number of such layers (required, as in the reference's loader)");
    long long count = rd.count_or("nb_layer", units::kBodyLayers, 1);
    double time = rd.quantity("time", units::kLayerTime);
    double forward = rd.quantity_or("forward_time", units::kLayerTime, time);
    double param = rd.quantity_or("memory_parameter", units::kMegabytes, 0.0);
    // B0 = 2 x time (of `time`, not of forward_time). Each kind's backward: its explicit time when present and
    // non-zero (0 means unset, as in the reference), else (1 + coef) x B0 with the JSON coef or the default;
    // an explicit backward_time sets the no-recompute backward only.
    const double b0 = 2.0 * time;
    auto backward_of = [&](const KindKeys& k) {
      double explicit_time = rd.quantity_or(k.time, units::kLayerTime, 0.0);
      double coef = rd.quantity_or(k.coef, units::kBackwardCoef, k.default_coef);
      return explicit_time > 0 ? explicit_time : (1.0 + coef) * b0;
    };
    double base_backward = backward_of(kKeys[0]);
    if (type == "HEAD" || type == "TAIL") {
      if (count != 1) rd.bad("nb_layer", "1 for a HEAD or TAIL");
      double activation = rd.quantity_or("memory_activation", units::kMegabytes, 0.0);
      if (type == "HEAD") {
        ++heads;
        set.head_forward += forward;
        set.head_backward += base_backward;
        set.head_mb += param;
        set.head_act_mb += activation;
      } else {
        ++tails;
        set.tail_forward += forward;
        set.tail_backward += base_backward;
        set.tail_mb += param;
        set.tail_act_mb += activation;
      }
      continue;
    }
    if (type != "BODY") rd.bad("type", "HEAD, BODY or TAIL");
    BodyType body;
    body.name = name;
    body.count = count;
    body.forward = forward;
    body.param_mb = param;
    std::vector<Rc> kinds;
    for (int r = 0; r < kRcKinds; ++r) {
      const KindKeys& k = kKeys[static_cast<std::size_t>(r)];
      if (rd.has(k.memory) && !list[i].at(k.memory).is_null()) {
        double mb = rd.quantity(k.memory, units::kMegabytes);
        body.act_mb[static_cast<std::size_t>(r)] = mb;
        kinds.push_back(static_cast<Rc>(r));
      }
      body.backward[static_cast<std::size_t>(r)] = backward_of(k);
    }
    if (!kinds_set) {
      set.kinds = kinds;
      kinds_set = true;
      first_body = name;
    } else if (kinds != set.kinds) {
      fail(at(file, key), "BODY '{}' states other recompute memories than BODY '{}'; every BODY must consider the same kinds", name, first_body);
    }
    set.bodies.push_back(body);
  }
  if (heads == 0) fail(at(file, "layers_description"), "has no HEAD layer (the embedding on the first stage)");
  if (tails == 0) fail(at(file, "layers_description"), "has no TAIL layer (the output layer on the last stage)");
  if (set.bodies.empty()) fail(at(file, "layers_description"), "has no BODY layer to balance");
  units::check(static_cast<double>(set.body_layers()), units::kBodyLayers, at(file, "layers_description (BODY nb_layer in all)"));
  return set;
}

LayerSet read_layers(const std::string& path) { return layers_from_json(io::read_tree(path), path); }

}  // namespace sapp::balance
