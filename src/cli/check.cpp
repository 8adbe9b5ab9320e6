#include "cli/check.hpp"

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/calibrate.hpp"
#include "cost/terms.hpp"
#include "hardware/hardware.hpp"
#include "model/family.hpp"
#include "pipeline/decompose.hpp"
#include "pipeline/layers.hpp"
#include "pipeline/manual.hpp"
#include "search/search.hpp"

namespace sapp::cli {

namespace {

const std::vector<std::string> kKinds = {"hardware", "model",  "op-records", "op-profile", "layers",    "manual",
                                         "measured", "search", "runs",       "validation", "frameworks"};

bool has_any(const nlohmann::json& tree, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (tree.contains(k)) return true;
  }
  return false;
}

}  // namespace

std::string detect_kind(const nlohmann::json& tree) {
  if (!tree.is_object()) return "";
  if (tree.contains("layers_description")) return "layers";
  if (tree.contains("runs")) {
    if (tree.contains("stages")) return "measured";
    return tree.contains("sources") ? "validation" : "runs";  // validation/runs.yaml cites its sources
  }
  if (tree.contains("search")) return "search";
  if (tree.contains("profiles") && tree.contains("defaults")) return "frameworks";
  if (has_any(tree, {"peak_flops", "hbm_bandwidth", "memory_bytes", "memory_gib", "levels"})) return "hardware";
  if (has_any(tree, {"op_counts", "slots", "full_recompute"})) return "op-records";
  if (has_any(tree, {"kinds", "model_types"})) return "op-profile";
  if (has_any(tree, {"hidden_size", "n_embd", "d_model", "num_hidden_layers", "n_layer", "model_type", "text_config", "arch"})) return "model";
  bool manual = !tree.empty();
  for (const auto& [name, entry] : tree.items()) {
    if (!entry.is_object() || !has_any(entry, {"offset", "recompute", "select_recompute", "select_comm_recompute"})) manual = false;
  }
  return manual ? "manual" : "";
}

void check_tree(const nlohmann::json& tree, const std::string& file, const std::string& kind, const std::string& data_dir) {
  if (kind == "hardware") {
    (void)hardware::hardware_from_json(tree, file, io::stem(file));
  } else if (kind == "model") {
    model::Catalog catalog = model::load_catalog(data_dir);
    model::ModelSpec spec;
    try {
      spec = model::model_from_json(tree, file);
    } catch (const Error&) {
      model::refuse_unknown_family(tree, file, catalog.profiles);
      throw;
    }
    (void)model::resolve(spec, catalog.records, catalog.profiles);
  } else if (kind == "op-records") {
    (void)model::op_records_from_json(tree, file);
  } else if (kind == "op-profile") {
    model::OpRecords records = model::load_op_records(data_dir + "/op_records.yaml");
    (void)model::profile_from_json(tree, file, io::stem(file), records);
  } else if (kind == "layers") {
    (void)balance::layers_from_json(tree, file);
  } else if (kind == "manual") {
    (void)balance::manual_from_json(tree, file, balance::manual_shape(tree, file));
  } else if (kind == "measured") {
    (void)balance::measurements_from_json(tree, file);
  } else if (kind == "search") {
    io::Reader rd{tree, file, ""};
    rd.only({"search"});
    if (!rd.has("search")) rd.bad("search", "a mapping of dimensions");
    search::Space space;
    search::space_from_json(tree.at("search"), file, space);
  } else if (kind == "frameworks") {
    (void)cost::terms::load_framework_profiles(file);
  } else if (kind == "runs") {
    model::Catalog catalog = model::load_catalog(data_dir);
    (void)cost::runs_from_json(tree, file, catalog);
  } else if (kind == "validation") {
    model::Catalog catalog = model::load_catalog(data_dir);
    (void)cost::published_runs_from_json(tree, file, catalog);
  } else {
    std::string list;
    for (const auto& k : kKinds) list += (list.empty() ? "" : ", ") + k;
    fail("--kind", "'{}' is not a kind of data file; the kinds are {}", kind, list);
  }
}

Run add_check(CLI::App& app) {
  struct Options {
    std::string file;
    std::string kind;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("check",
                         "validate one data file on its own (hardware, model, op records or profile, layers, manual strategies, "
                         "measured peaks, search or calibration runs, the validation set of published runs, framework profiles); prints FILE: ok (KIND)");
  cmd->add_option("file", o->file, "the data file (.json, .yaml or .yml)")->required();
  cmd->add_option("--kind,-k", o->kind, "what the file is (default: told from its keys)")->check(CLI::IsMember(kKinds));
  return [o]() {
    nlohmann::json tree = io::read_tree(o->file);
    std::string kind = o->kind.empty() ? detect_kind(tree) : o->kind;
    if (kind.empty()) {
      std::string list;
      for (const auto& k : kKinds) list += (list.empty() ? "" : ", ") + k;
      fail(o->file, "cannot tell which kind of data file this is from its keys; give --kind (one of {})", list);
    }
    check_tree(tree, o->file, kind, io::data_dir());
    std::printf("%s: ok (%s)\n", o->file.c_str(), kind.c_str());
  };
}

}  // namespace sapp::cli
