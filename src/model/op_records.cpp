#include "model/op_records.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::model {

using nlohmann::json;

int OpRecords::op_index(const std::string& name) const {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int OpRecords::switch_index(const std::string& name) const {
  auto it = std::find(switches.begin(), switches.end(), name);
  return it == switches.end() ? -1 : static_cast<int>(it - switches.begin());
}

namespace {

std::string where(const std::string& file, const std::string& key) { return at(file, key); }

expr::Expr expression(const json& node, expr::Symbols& symbols, const std::string& file, const std::string& key) {
  if (node.is_boolean()) fail(where(file, key), "must be an expression, got {}", node.dump());
  if (node.is_number_integer()) return expr::Expr::constant(expr::Value::of_int(node.get<std::int64_t>()), node.dump());
  if (node.is_number()) return expr::Expr::constant(expr::Value::of_double(node.get<double>()), node.dump());
  if (!node.is_string()) fail(where(file, key), "must be an expression, got {}", node.dump());
  return expr::Expr::parse(node.get<std::string>(), symbols, where(file, key));
}

std::vector<std::string> string_list(const json& node, const std::string& file, const std::string& key) {
  if (!node.is_array()) fail(where(file, key), "must be a list of names, got {}", node.dump());
  std::vector<std::string> out;
  for (const auto& item : node) {
    if (!item.is_string()) fail(where(file, key), "must list names, got {}", item.dump());
    out.push_back(item.get<std::string>());
  }
  return out;
}

void only(const json& node, const std::string& file, const std::string& key, const std::vector<std::string>& allowed) {
  io::Reader{node, file, key}.only(allowed);
}

const std::vector<std::string> kParts = {"attention", "ffn", "norm"};

}  // namespace

OpRecords op_records_from_json(const json& tree, const std::string& file) {
  OpRecords r;
  r.file = file;
  only(tree, file, "", {"op_counts", "switches", "selective", "ops", "slots", "full_recompute", "params", "work"});
  auto need = [&](const char* key) -> const json& {
    if (!tree.contains(key) || tree.at(key).is_null()) fail(where(file, key), "is required and missing");
    return tree.at(key);
  };
  r.op_counts = string_list(need("op_counts"), file, "op_counts");
  r.switches = string_list(need("switches"), file, "switches");
  r.selective = string_list(need("selective"), file, "selective");
  for (const auto& s : r.selective) {
    if (r.switch_index(s) < 0) fail(where(file, "selective"), "names '{}', which is not one of the switches", s);
  }

  const json& ops = need("ops");
  if (!ops.is_object() || ops.empty()) fail(where(file, "ops"), "must map op names to records");
  for (const auto& [name, rec] : ops.items()) {
    std::string key = "ops." + name;
    if (!rec.is_object()) fail(where(file, key), "must map switch, needs and comm, got {}", rec.dump());
    only(rec, file, key, {"switch", "needs", "comm"});
    OpRecord op;
    op.name = name;
    if (rec.contains("switch") && !rec.at("switch").is_null()) {
      if (!rec.at("switch").is_string() || r.switch_index(rec.at("switch").get<std::string>()) < 0) {
        fail(where(file, key + ".switch"), "must be one of the switches, got {}", rec.at("switch").dump());
      }
      op.switch_name = rec.at("switch").get<std::string>();
    }
    if (rec.contains("needs")) op.needs = string_list(rec.at("needs"), file, key + ".needs");
    if (rec.contains("comm")) {
      if (!rec.at("comm").is_boolean()) fail(where(file, key + ".comm"), "must be true or false, got {}", rec.at("comm").dump());
      op.comm = rec.at("comm").get<bool>();
    }
    r.ops.push_back(op);
  }
  for (const auto& op : r.ops) {
    for (const auto& n : op.needs) {
      if (r.op_index(n) < 0) fail(where(file, "ops." + op.name + ".needs"), "names '{}', which has no record", n);
    }
  }

  r.total_symbol = r.symbols.intern("total");
  const json& slots = need("slots");
  if (!slots.is_object()) fail(where(file, "slots"), "must map slot names to slots");
  for (const auto& [name, data] : slots.items()) {
    std::string key = "slots." + name;
    if (!data.is_object()) fail(where(file, key), "must map part, formula, ops and when, got {}", data.dump());
    only(data, file, key, {"part", "formula", "ops", "when"});
    Slot slot{name, "", expr::Expr::constant(expr::Value::of_int(0), "0"), {}, std::nullopt};
    if (!data.contains("part") || !data.at("part").is_string() || std::find(kParts.begin(), kParts.end(), data.at("part").get<std::string>()) == kParts.end()) {
      fail(where(file, key + ".part"), "must be one of attention, ffn, norm, got {}", data.contains("part") ? data.at("part").dump() : "nothing");
    }
    slot.part = data.at("part").get<std::string>();
    if (!data.contains("formula")) fail(where(file, key + ".formula"), "is required and missing");
    slot.formula = expression(data.at("formula"), r.symbols, file, key + ".formula");
    if (!slot.formula.reads(r.total_symbol)) fail(where(file, key + ".formula"), "must read total, what the slot's ops keep");
    if (!data.contains("ops") || !data.at("ops").is_object() || data.at("ops").empty()) {
      fail(where(file, key + ".ops"), "must map ops to the elements they keep");
    }
    for (const auto& [op, elements] : data.at("ops").items()) {
      int index = r.op_index(op);
      if (index < 0) fail(where(file, key + ".ops"), "names '{}', which has no record", op);
      slot.entries.push_back(SlotEntry{index, expression(elements, r.symbols, file, key + ".ops." + op)});
    }
    if (data.contains("when") && !data.at("when").is_null()) slot.when = expression(data.at("when"), r.symbols, file, key + ".when");
    r.slots.push_back(std::move(slot));
  }

  r.full_recompute = expression(need("full_recompute"), r.symbols, file, "full_recompute");

  const json& params = need("params");
  if (!params.is_object()) fail(where(file, "params"), "must map names to parameter terms");
  for (const auto& [name, data] : params.items()) {
    std::string key = "params." + name;
    only(data, file, key, {"part", "when", "formula"});
    ParamTerm term{name, "", std::nullopt, expr::Expr::constant(expr::Value::of_int(0), "0")};
    std::string part = io::Reader{data, file, key}.string("part");
    if (part != "attention" && part != "ffn" && part != "norm" && part != "expert") {
      fail(where(file, key + ".part"), "must be one of attention, ffn, norm, expert, got \"{}\"", part);
    }
    term.part = part;
    if (!data.contains("formula")) fail(where(file, key + ".formula"), "is required and missing");
    term.formula = expression(data.at("formula"), r.symbols, file, key + ".formula");
    if (data.contains("when") && !data.at("when").is_null()) term.when = expression(data.at("when"), r.symbols, file, key + ".when");
    r.params.push_back(std::move(term));
  }

  const json& work = need("work");
  if (!work.is_object()) fail(where(file, "work"), "must map names to work terms");
  for (const auto& [name, data] : work.items()) {
    std::string key = "work." + name;
    only(data, file, key, {"kind", "op", "shard", "when", "formula", "rows", "backward", "role"});
    io::Reader rd{data, file, key};
    WorkTerm term{name, WorkKind::Gemm, -1, Shard::Tensor, std::nullopt, expr::Expr::constant(expr::Value::of_int(0), "0"), std::nullopt, std::nullopt};
    term.kind = rd.choice<WorkKind>("kind", {{"gemm", WorkKind::Gemm}, {"attention", WorkKind::Attention}, {"memory", WorkKind::Memory}});
    term.op = r.op_index(rd.string("op"));
    if (term.op < 0) rd.bad("op", "the name of an op with a record");
    term.shard = rd.choice_or<Shard>("shard", "t", {{"t", Shard::Tensor}, {"tsp", Shard::SequenceParallel}, {"none", Shard::None}});
    if (!data.contains("formula")) fail(where(file, key + ".formula"), "is required and missing");
    term.formula = expression(data.at("formula"), r.symbols, file, key + ".formula");
    if (data.contains("when") && !data.at("when").is_null()) term.when = expression(data.at("when"), r.symbols, file, key + ".when");
    if (data.contains("rows") && !data.at("rows").is_null()) term.rows = expression(data.at("rows"), r.symbols, file, key + ".rows");
    if (data.contains("backward") && !data.at("backward").is_null()) {
      term.backward = expression(data.at("backward"), r.symbols, file, key + ".backward");
    }
    term.role = rd.choice_or<WorkRole>("role", "none",
                                       {{"none", WorkRole::None},
                                        {"flash_attention", WorkRole::FlashAttention},
                                        {"routed_experts", WorkRole::RoutedExperts},
                                        {"routed_tokens", WorkRole::RoutedTokens},
                                        {"shared_experts", WorkRole::SharedExperts}});
    r.work.push_back(std::move(term));
  }
  for (const auto& op : r.ops) r.op_switch.push_back(op.switch_name.empty() ? -1 : r.switch_index(op.switch_name));
  if (r.switches.size() > 32) fail(where(file, "switches"), "lists {} switches; at most 32", r.switches.size());
  auto find = [&](const char* name) { return r.symbols.find(name); };
  r.layout = LayoutSymbols{find("s"),   find("seq"), find("ctx"), find("ctx_all"),   find("b"),    find("t"),    find("tsp"),
                           find("cp"),  find("ep"),  find("etp"), find("tok_shard"), find("fa"),   find("bc"),   find("bq"),
                           find("kvs"), find("cap"), find("fp8"), find("eager"),     find("lora"), find("qcast")};
  r.shape = ShapeSymbols{find("ffn"), find("mla"), find("nope"), find("rope"), find("dh"), find("h"), find("n_ffn_mm")};
  return r;
}

OpRecords load_op_records(const std::string& path) { return op_records_from_json(io::read_tree(path), path); }

}  // namespace sapp::model
