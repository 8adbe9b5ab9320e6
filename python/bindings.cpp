// Python bindings (module sapp._sapp): a thin layer over libsapp. Each function takes plain values, calls the
// library's entry point, and returns the same JSON the CLI prints (the Python package parses it to dicts).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "hardware/hardware.hpp"
#include "pipeline/solver.hpp"
#include "report/report.hpp"
#include "search/search.hpp"

namespace py = pybind11;
using namespace sapp;

namespace {

struct Loaded {
  model::Catalog catalog;
  model::Model model;
  hardware::Hardware hw;
};

Loaded load(const std::string& model_name, const std::string& hardware_name) {
  std::string data = io::data_dir();
  Loaded l{model::load_catalog(data), {}, hardware::load_hardware(hardware_name, data)};
  l.model = model::resolve(model::load_model(model_name, data), l.catalog.records, l.catalog.profiles);
  return l;
}

std::string estimate_json(const std::string& model_name, const std::string& hardware_name, long long devices, long long global_batch, long long seq, int tp,
                          int pp, int cp, int ep, int etp, int vpp, int mbs, int zero, bool sp, const std::string& recompute, bool fp8) {
  for (auto [name, degree] : {std::pair{"tp", tp}, {"pp", pp}, {"cp", cp}, {"ep", ep}, {"etp", etp}, {"vpp", vpp}, {"mbs", mbs}}) {
    if (degree < 1) fail(name, "{} is not a positive degree", degree);
  }
  Loaded x = load(model_name, hardware_name);
  plan::Training t;
  t.global_batch = global_batch;
  t.seq = seq;
  t.fp8 = fp8;
  plan::Layout l;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.ep = ep;
  l.etp = etp;
  l.vpp = vpp;
  l.mbs = mbs;
  l.zero = zero;
  l.sp = sp;
  l.recompute = plan::parse_recompute(recompute, "recompute");
  plan::derive_data_parallel(l, devices, global_batch, "devices", "global_batch");
  auto v = plan::check_layout(x.model, l, t, devices);
  if (!v.empty()) fail("layout", "{}: {}", v.front().rule, v.front().detail);
  cost::MemoryEstimate mem = cost::estimate_memory(x.model, l, t, x.hw.memory_bytes);
  nlohmann::json j = io::memory_json(x.model, l, mem);
  cost::add_time_json(j, cost::estimate_time(x.model, l, t, x.hw, mem));
  return j.dump();
}

std::string search_json(const std::string& model_name, const std::string& hardware_name, long long devices, long long global_batch, long long seq, int top,
                        int threads, const std::string& tp, const std::string& pp, const std::string& cp, const std::string& ep, const std::string& vpp,
                        const std::string& mbs, const std::string& zero, const std::string& recompute, bool fp8) {
  Loaded x = load(model_name, hardware_name);
  plan::Training t;
  t.global_batch = global_batch;
  t.seq = seq;
  t.fp8 = fp8;
  // Each dimension as the CLI takes it: "auto", "4" or "1,2,4".
  search::Space space;
  space.tp = search::parse_dim(tp, "tp");
  space.pp = search::parse_dim(pp, "pp");
  space.cp = search::parse_dim(cp, "cp");
  space.ep = search::parse_dim(ep, "ep");
  space.vpp = search::parse_dim(vpp, "vpp");
  space.mbs = search::parse_dim(mbs, "mbs");
  space.zero = search::parse_dim(zero, "zero", 0, 3);
  space.recompute = plan::read_recompute_modes(nlohmann::json(recompute), "recompute");
  search::Options o;
  o.threads = threads;
  search::Result r;
  {
    py::gil_scoped_release release;  // the search runs its own threads
    r = search::search(x.model, space, t, x.hw, devices, x.hw.memory_bytes, o);
  }
  nlohmann::json cands = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranked.size() && i < static_cast<std::size_t>(top); ++i) {
    const auto& c = r.ranked[i];
    nlohmann::json j{{"layout", io::layout_json(c.layout)}, {"peak_memory_bytes", c.peak_memory_bytes}};
    cost::add_time_json(j, c.time);
    cands.push_back(j);
  }
  return nlohmann::json{{"candidates", cands}, {"rejected", r.rejected}, {"evaluated", r.evaluated}, {"search_seconds", r.seconds}}.dump();
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
  nlohmann::json j{{"feasible", s.feasible}, {"proved_optimal", s.optimal}, {"solve_seconds", s.solve_seconds}};
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
  m.doc() = "sapp: symbolic automatic parallel planner (thin bindings over libsapp; results as JSON text)";
  py::register_exception<Error>(m, "SappError", PyExc_ValueError);
  m.def("estimate", &estimate_json, py::arg("model"), py::arg("hardware"), py::arg("devices"), py::arg("global_batch"), py::arg("seq"), py::arg("tp") = 1,
        py::arg("pp") = 1, py::arg("cp") = 1, py::arg("ep") = 1, py::arg("etp") = 1, py::arg("vpp") = 1, py::arg("mbs") = 1, py::arg("zero") = 1,
        py::arg("sp") = false, py::arg("recompute") = "off", py::arg("fp8") = false);
  m.def("search", &search_json, py::arg("model"), py::arg("hardware"), py::arg("devices"), py::arg("global_batch"), py::arg("seq"), py::arg("top") = 10,
        py::arg("threads") = 1, py::arg("tp") = "auto", py::arg("pp") = "auto", py::arg("cp") = "auto", py::arg("ep") = "auto", py::arg("vpp") = "auto",
        py::arg("mbs") = "auto", py::arg("zero") = "auto", py::arg("recompute") = "auto", py::arg("fp8") = false);
  m.def("balance", &balance_json, py::arg("layers"), py::arg("stages"), py::arg("micro_batches"), py::arg("memory_limit_mb") = 0.0, py::arg("interleave") = 1,
        py::arg("less_memory") = false);
}
