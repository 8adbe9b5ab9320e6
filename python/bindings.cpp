// Python bindings (module sapp._sapp): a thin layer over libsapp. estimate and search take the request's options
// as a dict (the same keys as the command line's options and the config files), call the app entry point and
// return the report's JSON as Python objects (pybind11_json): exactly what `--format json` prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11_json/pybind11_json.hpp>

#include "app/app.hpp"
#include "core/error.hpp"
#include "pipeline/solver.hpp"

namespace py = pybind11;
using namespace sapp;

namespace {

// Keyword arguments arrive as a dict keyed by the request's field keys (app/request.hpp), the same keys the
// command line's options and the config files use.
py::object estimate_report(const py::dict& options) {
  app::EstimateRequest request;
  app::apply(request, pyjson::to_json(options), app::Source::Python);
  report::EstimateReport r;
  {
    py::gil_scoped_release release;
    r = app::run_estimate(request);
  }
  return pyjson::from_json(report::to_json(r));
}

py::object search_report(const py::dict& options) {
  app::SearchRequest request;
  app::apply(request, pyjson::to_json(options), app::Source::Python);
  report::SearchReport r;
  {
    py::gil_scoped_release release;  // the search runs its own threads
    r = app::run_search(request);
  }
  return pyjson::from_json(report::to_json(r));
}

py::list fields_of(const auto& table) {
  py::list out;
  for (const auto& f : table) out.append(py::make_tuple(f.key, f.help, f.flag));
  return out;
}

std::string balance_json(const std::string& layers, int stages, int micro_batches, double memory_limit_mb, int interleave, bool less_memory) {
  balance::Problem p;
  p.layers = balance::read_layers(layers);
  p.stages = stages;
  p.chunks = interleave;
  p.micro_batches = micro_batches;
  p.memory_limit_mb = memory_limit_mb;
  p.schedule = interleave > 1 ? (less_memory ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved) : simulate::Schedule::OneF1B;
  balance::Solution s = balance::solve(p);
  nlohmann::json j{{"feasible", s.feasible}, {"proved_optimal", s.optimal}, {"bound", s.bound}, {"gap", s.gap}, {"solve_seconds", s.solve_seconds}};
  if (s.feasible) {
    auto sim = simulate::simulate(p.schedule, p.stages, p.chunks, p.micro_batches, balance::stage_times(p, s.x));
    auto fw = balance::to_framework(p, s.x);
    j["objective"] = s.eval.objective;
    j["simulated_step_time"] = sim.end;
    j["peak_memory_mb"] = sim.peak_memory;
    j["offset"] = fw[0].offset;
    j["recompute"] = fw[0].recompute;
    j["select_recompute"] = fw[0].select_recompute;
    j["select_comm_recompute"] = fw[0].select_comm_recompute;
  }
  return j.dump();
}

}  // namespace

PYBIND11_MODULE(_sapp, m) {
  m.doc() = "sapp: symbolic automatic parallel planner (thin bindings over libsapp; reports as the command line's JSON)";
  py::register_exception<Error>(m, "SappError", PyExc_ValueError);
  m.def("estimate", &estimate_report, py::arg("options"));
  m.def("search", &search_report, py::arg("options"));
  m.def("estimate_fields", [] { return fields_of(app::estimate_fields()); });
  m.def("search_fields", [] { return fields_of(app::search_fields()); });
  m.def("balance", &balance_json, py::arg("layers"), py::arg("stages"), py::arg("micro_batches"), py::arg("memory_limit_mb") = 0.0, py::arg("interleave") = 1,
        py::arg("less_memory") = false);
}
