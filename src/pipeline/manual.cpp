#include "pipeline/manual.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"

namespace sapp::balance {

namespace {

using nlohmann::json;

const std::vector<std::string> kArrays = {"offset", "recompute", "select_recompute", "select_comm_recompute"};

// One value of a manual strategy: true (every layer), false/0 (none), a list (one chunk) or lists. Offsets are
// signed layer counts and take no true/false; recompute counts are non-negative, true stands for every layer
// of the cell (-1 for balance::from_framework).
std::vector<std::vector<long long>> strategy_array(const json& node, const balance::Problem& p, const std::string& where, bool offset) {
  std::vector<std::vector<long long>> out(static_cast<std::size_t>(p.chunks), std::vector<long long>(static_cast<std::size_t>(p.stages), 0));
  if (node.is_null()) return out;
  const units::Quantity& q = offset ? units::kOffset : units::kStageLayers;
  if ((node.is_boolean() && !offset) || (node.is_number_integer() && node.get<long long>() == 0)) {
    long long v = node.is_boolean() && node.get<bool>() ? -1 : 0;
    for (auto& r : out) std::fill(r.begin(), r.end(), v);
    return out;
  }
  auto one = [&](const json& list, std::size_t chunk) {
    if (!list.is_array() || list.size() != static_cast<std::size_t>(p.stages))
      fail(where, "must list {} values (one per stage), got {}", p.stages, list.dump().substr(0, 80));
    for (std::size_t s = 0; s < list.size(); ++s) {
      const json& v = list[s];
      if (v.is_boolean() && !offset)
        out[chunk][s] = v.get<bool>() ? -1 : 0;
      else if (v.is_number() && !v.is_boolean())
        out[chunk][s] = static_cast<long long>(units::check(v.get<double>(), q, fmt::format("{}[{}]", where, s), v.is_number_integer() ? v.dump() : ""));
      else
        fail(where, "must hold {}, got {}", offset ? "whole numbers (layers added to the even split)" : "whole numbers or true/false", v.dump().substr(0, 80));
    }
  };
  if (!node.is_array()) {
    fail(where, "must be {}a list per stage, or a list per chunk, got {}", offset ? "0, " : "true, false, 0, ", node.dump().substr(0, 80));
  }
  if (!node.empty() && node[0].is_array()) {
    if (node.size() != static_cast<std::size_t>(p.chunks)) fail(where, "lists {} chunks; interleave is {}", node.size(), p.chunks);
    for (std::size_t c = 0; c < node.size(); ++c) one(node[c], c);
  } else {
    if (p.chunks != 1) fail(where, "is one list but interleave is {}; give one list per chunk", p.chunks);
    one(node, 0);
  }
  return out;
}

}  // namespace

std::vector<ManualStrategy> manual_from_json(const json& tree, const std::string& file, const balance::Problem& p) {
  if (!tree.is_object() || tree.empty()) fail(file, "must map strategy names to {{offset, recompute, select_recompute, select_comm_recompute}}");
  std::vector<ManualStrategy> out;
  for (const auto& item : tree.items()) {
    const std::string& name = item.key();
    const json& entry = item.value();  // not a structured binding: clang 14 cannot capture one in a lambda
    io::Reader rd{entry, file, name};
    rd.only({"offset", "recompute", "select_recompute", "select_comm_recompute", "interleave_num", "show", "file_name"});
    if (rd.has("interleave_num") && rd.count("interleave_num", units::kChunks) != p.chunks) {
      rd.bad("interleave_num", fmt::format("the --interleave given ({})", p.chunks));
    }
    ManualStrategy strategy{name, std::vector<balance::FrameworkStrategy>(p.layers.bodies.size()), false, {}};
    for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
      auto pick = [&](const std::string& key) -> json {
        if (!entry.contains(key)) return nullptr;
        const json& v = entry.at(key);
        if (p.layers.bodies.size() > 1) {
          if (!v.is_object() || !v.contains(p.layers.bodies[l].name)) rd.bad(key, "a mapping from each BODY name to its array");
          return v.at(p.layers.bodies[l].name);
        }
        return v;
      };
      std::string where = at(file, name);
      balance::FrameworkStrategy& f = strategy.bodies[l];
      f.offset = strategy_array(pick("offset"), p, where + ".offset", true);
      f.recompute = strategy_array(pick("recompute"), p, where + ".recompute", false);
      f.select_recompute = strategy_array(pick("select_recompute"), p, where + ".select_recompute", false);
      f.select_comm_recompute = strategy_array(pick("select_comm_recompute"), p, where + ".select_comm_recompute", false);
    }
    strategy.show = rd.boolean_or("show", false);
    strategy.file_name = rd.string_or("file_name", "");
    out.push_back(std::move(strategy));
  }
  return out;
}

balance::Problem manual_shape(const json& tree, const std::string& file) {
  balance::Problem p;
  p.stages = 1;
  p.chunks = 1;
  std::vector<std::string> bodies;
  bool shaped = false;
  if (tree.is_object()) {
    for (const auto& [name, entry] : tree.items()) {
      if (!entry.is_object()) continue;
      if (entry.contains("interleave_num") && entry.at("interleave_num").is_number_integer()) {
        p.chunks = static_cast<int>(units::check(entry.at("interleave_num").get<double>(), units::kChunks, at(file, name + ".interleave_num")));
      }
      for (const std::string& key : kArrays) {
        if (shaped || !entry.contains(key)) continue;
        const json* v = &entry.at(key);
        if (v->is_object() && !v->empty()) {
          for (const auto& [body, value] : v->items()) bodies.push_back(body);
          v = &v->begin().value();
        }
        if (!v->is_array() || v->empty()) continue;
        std::string where = at(file, name + "." + key);
        if (v->at(0).is_array()) {
          p.chunks = static_cast<int>(units::check(static_cast<double>(v->size()), units::kChunks, where + " (chunks)"));
          p.stages = static_cast<int>(units::check(static_cast<double>(v->at(0).size()), units::kStages, where + "[0] (stages)"));
        } else {
          p.stages = static_cast<int>(units::check(static_cast<double>(v->size()), units::kStages, where + " (stages)"));
        }
        shaped = true;
      }
    }
  }
  if (bodies.empty()) bodies.emplace_back("BODY");
  for (const auto& b : bodies) {
    balance::BodyType body;
    body.name = b;
    p.layers.bodies.push_back(body);
  }
  return p;
}

}  // namespace sapp::balance
