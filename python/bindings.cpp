// Python bindings (module sapp._sapp): a thin layer over libsapp. Every command takes its request's options as a
// dict (the same keys as the command line's options and the config files), calls the app entry point and returns
// the report's JSON as Python objects (pybind11_json): exactly what `--format json` prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11_json/pybind11_json.hpp>

#include "app/app.hpp"
#include "config/config.hpp"
#include "core/error.hpp"

namespace py = pybind11;
using namespace sapp;

namespace {

// Runs one command: fills its request from the keyword arguments (a dict keyed by the request's field keys,
// app/request.hpp, the same keys the command line's options and the config files use), runs the app entry point
// without the GIL (the search runs its own threads) and returns its report's JSON.
template <typename Request, typename Run>
py::object report_of(const Request& request, Run&& entry) {
  nlohmann::json out;
  {
    py::gil_scoped_release release;
    out = report::to_json(entry(request));
  }
  return pyjson::from_json(out);
}

template <typename Request, typename Run>
py::object run(const py::dict& options, Run&& entry) {
  Request request;
  app::apply(request, pyjson::to_json(options), app::Source::Python);
  return report_of(request, entry);
}

// The same with a training config to start from (the command line's --from / --from-format): the file fills the
// request, the other options override it, and what the reader says (how the file was read, unused keys, what it
// prices only approximately) is raised as Python warnings (UserWarning), as the command line prints it.
template <typename Request, typename Run>
py::object run_from(const py::dict& options, Run&& entry) {
  nlohmann::json o = pyjson::to_json(options);
  if (!o.contains("from_config")) return run<Request>(options, entry);
  if (!o.at("from_config").is_string()) throw Error("from_config: a path to a training config was expected");
  std::optional<config::Format> forced;
  if (o.contains("from_format")) {
    if (!o.at("from_format").is_string()) throw Error("from_format: a format name was expected");
    forced = config::parse_format(o.at("from_format").get<std::string>(), "from_format");
  }
  const config::Loaded loaded = config::read_file(o.at("from_config").get<std::string>(), forced);
  o.erase("from_config");
  o.erase("from_format");
  Request request;
  const std::vector<std::string> overrides = config::fill(request, loaded, o);
  std::vector<std::string> said = {loaded.file + " read as " + config::read_as(loaded)};
  if (std::string unused = config::unused_warning(loaded); !unused.empty()) said.push_back(unused);
  for (const auto& w : loaded.warnings) said.push_back(loaded.file + ": " + w);
  said.insert(said.end(), overrides.begin(), overrides.end());
  for (const std::string& line : said) {
    if (PyErr_WarnEx(PyExc_UserWarning, line.c_str(), 1) != 0) throw py::error_already_set();
  }
  return report_of(request, entry);
}

py::list fields_of(const auto& table) {
  py::list out;
  for (const auto& f : table) out.append(py::make_tuple(f.key, f.help, f.flag));
  return out;
}

}  // namespace

PYBIND11_MODULE(_sapp, m) {
  m.doc() = "sapp: symbolic automatic parallel planner (thin bindings over libsapp; reports as the command line's JSON)";
  py::register_exception<Error>(m, "SappError", PyExc_ValueError);
  m.def(
      "estimate", [](const py::dict& o) { return run_from<app::EstimateRequest>(o, app::run_estimate); }, py::arg("options"));
  m.def(
      "search", [](const py::dict& o) { return run_from<app::SearchRequest>(o, app::run_search); }, py::arg("options"));
  m.def(
      "plan", [](const py::dict& o) { return run_from<app::PlanRequest>(o, app::run_plan); }, py::arg("options"));
  m.def(
      "balance", [](const py::dict& o) { return run<app::BalanceRequest>(o, app::run_balance); }, py::arg("options"));
  m.def(
      "decompose", [](const py::dict& o) { return run<app::DecomposeRequest>(o, app::run_decompose); }, py::arg("options"));
  m.def(
      "calibrate", [](const py::dict& o) { return run<app::CalibrateRequest>(o, app::run_calibrate); }, py::arg("options"));
  m.def(
      "fields",
      [](const std::string& command) {
        if (command == "estimate") return fields_of(app::estimate_fields());
        if (command == "search") return fields_of(app::search_fields());
        if (command == "plan") return fields_of(app::plan_fields());
        if (command == "balance") return fields_of(app::balance_fields());
        if (command == "decompose") return fields_of(app::decompose_fields());
        if (command == "calibrate") return fields_of(app::calibrate_fields());
        throw Error("fields: '" + command + "' is not a command; commands: estimate, search, plan, balance, decompose, calibrate");
      },
      py::arg("command"));
}
