#include <cmath>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/manual.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "pipeline/decompose.hpp"
#include "pipeline/solver.hpp"
#include "pipeline/svg.hpp"

namespace sapp::cli {

namespace {

using balance::Rc;
using nlohmann::json;

struct BalanceOptions {
  std::string layers;
  int stages = 0;
  int micro_batches = 0;
  double memory_limit = 0;
  int interleave = 1;
  bool less_memory = false;
  bool zero_bubble = false;
  std::string kinds;
  double constant = 0;
  double time_limit = 60;
  std::string solver = "dp";
  int chunk_spread = 2;
  std::string svg;
  std::string manual;
  bool naive = false;
  std::string format = "table";
  std::string output = "-";
  // decompose / guide
  std::string measured;
  long long layers_total = 0;
  bool no_constant = false;
};

std::string row(const std::vector<long long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string rows(const std::vector<std::vector<long long>>& v) {
  if (v.size() == 1) return row(v[0]);
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + row(v[i]);
  return s + "]";
}

json to_json(const std::vector<std::vector<long long>>& v) { return v.size() == 1 ? json(v[0]) : json(v); }

struct Simulated {
  simulate::SimResult sim;
  balance::Evaluation eval;
};

Simulated run_sim(const balance::Problem& p, const balance::Assignment& x) {
  Simulated s;
  s.eval = balance::evaluate(p, x);
  s.sim = simulate::simulate(p.schedule, p.stages, p.chunks, p.micro_batches, balance::stage_times(p, x));
  return s;
}

std::string bubbles(const simulate::SimResult& r) {
  return fmt::format("real {:.4f} = ideal {:.4f} + imbalance {:.4f} + recompute {:.4f}", r.real, r.ideal, r.imbalance, r.recompute);
}

std::string peaks(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:.0f}", i ? ", " : "", v[i]);
  return s + "]";
}

json sim_json(const Simulated& s) {
  return json{{"objective", s.eval.objective},
              {"simulated_step_time", s.sim.end},
              {"fits", s.eval.fits},
              {"stage_time", s.eval.stage_time},
              {"peak_memory_mb", s.sim.peak_memory},
              {"bubbles", {{"real", s.sim.real}, {"ideal", s.sim.ideal}, {"imbalance", s.sim.imbalance}, {"recompute", s.sim.recompute}}}};
}

void run_decompose(const BalanceOptions& o) {
  if (o.measured.empty()) fail("--measured", "is required: a YAML of dry-run stage peaks");
  balance::Measurements m = balance::measurements_from_json(io::read_tree(o.measured), o.measured);
  if (o.no_constant) m.constant = false;
  balance::Decomposition d = balance::decompose(m);
  std::string out;
  if (o.format == "json") {
    json acts = json::object();
    for (const auto& [k, v] : d.activation_mb) acts[balance::to_string(k)] = v;
    out = json{{"memory_parameter", d.param_mb}, {"activation_mb", acts},          {"constant_mb", d.constant_mb}, {"head_mb", d.head_mb},
               {"tail_mb", d.tail_mb},           {"residuals_mb", d.residuals_mb}, {"equations", d.equations},     {"unknowns", d.unknowns}}
              .dump(2) +
          "\n";
  } else {
    out += fmt::format("{} equations, {} unknowns\n", d.equations, d.unknowns);
    out += fmt::format("memory_parameter: {:.3f}   # MB per body layer\n", d.param_mb);
    for (const auto& [k, v] : d.activation_mb) out += fmt::format("activation {}: {:.3f}   # MB per layer and micro-batch\n", balance::to_string(k), v);
    out += fmt::format("constant: {:.3f}\nhead: {:.3f}\ntail: {:.3f}\nresiduals (MB): {}\n", d.constant_mb, d.head_mb, d.tail_mb, peaks(d.residuals_mb));
  }
  emit(o.output, out);
}

void run_guide(const BalanceOptions& o) {
  if (o.stages < 3) fail("--stages", "is required and must be at least 3 for a decomposition");
  if (o.layers_total <= 0) fail("--layers-total", "is required: the body layers of the model");
  std::vector<Rc> kinds;
  for (const std::string& name : io::split_commas(o.kinds.empty() ? "selective,comm,both,full" : o.kinds)) {
    kinds.push_back(balance::parse_rc(name, "--recompute-kinds"));
  }
  auto runs = balance::guide(o.stages, o.layers_total, kinds, !o.no_constant);
  long long base = o.layers_total / o.stages;
  std::string out = fmt::format("# {} dry run(s) of {} stages that make `sapp balance decompose` solvable; record each stage's peak\n", runs.size(), o.stages);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<long long> offset;
    for (long long n : runs[r].layers) offset.push_back(n - base);
    out += fmt::format("run{}:\n  layers: {}\n  offset: {}\n", r + 1, row(runs[r].layers), row(offset));
    for (const auto& [k, c] : runs[r].recomputed)
      out += fmt::format("  {}: {}\n",
                         k == Rc::Full        ? "recompute"
                         : k == Rc::Selective ? "select_recompute_only"
                         : k == Rc::Comm      ? "select_comm_recompute_only"
                                              : "both_comm_select",
                         row(c));
  }
  emit(o.output, out);
}

void run_balance(const BalanceOptions& o) {
  if (o.layers.empty()) fail("--layers", "is required: the layers JSON (layers_description)");
  if (o.stages <= 0) fail("--stages", "is required and must be positive");
  if (o.micro_batches <= 0) fail("--micro-batches", "is required and must be positive");
  balance::Problem p;
  p.layers = balance::read_layers(o.layers);
  p.stages = o.stages;
  p.chunks = o.interleave;
  p.micro_batches = o.micro_batches;
  p.memory_limit_mb = o.memory_limit;
  p.constant_mb = o.constant;
  p.chunk_spread = o.chunk_spread;
  if (o.zero_bubble && o.interleave > 1) fail("--zero-bubble", "runs one chunk per stage; interleave is {}", o.interleave);
  p.schedule = o.zero_bubble      ? simulate::Schedule::ZeroBubble
               : o.interleave > 1 ? (o.less_memory ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved)
                                  : simulate::Schedule::OneF1B;
  if (!o.kinds.empty()) {
    p.kinds.push_back(Rc::None);
    for (const std::string& name : io::split_commas(o.kinds)) {
      Rc r = balance::parse_rc(name, "--recompute-kinds");
      if (std::find(p.kinds.begin(), p.kinds.end(), r) == p.kinds.end()) p.kinds.push_back(r);
    }
    // `none` is only allowed where the layers state its memory.
    if (p.layers.has_memory() && std::find(p.layers.kinds.begin(), p.layers.kinds.end(), Rc::None) == p.layers.kinds.end()) {
      p.kinds.erase(std::remove(p.kinds.begin(), p.kinds.end(), Rc::None), p.kinds.end());
    }
  }
  balance::Solution sol = o.solver == "enumerate" ? balance::solve_exhaustive(p) : balance::solve(p);
  if (o.time_limit > 0 && sol.solve_seconds > o.time_limit) {
    // Both solvers finish with a proof; a limit shorter than the solve is reported, not silently applied.
    std::fprintf(stderr, "sapp: note: the exact solve took %.2f s, over --time-limit %.2f s\n", sol.solve_seconds, o.time_limit);
  }

  json j;
  std::string out;
  std::string head = fmt::format("{}: {} body layers, {} stages, interleave {}, {} micro-batches, memory limit {} MB, schedule {}\n", p.layers.file,
                                 p.layers.body_layers(), p.stages, p.chunks, p.micro_batches,
                                 p.memory_limit_mb > 0 ? fmt::format("{:.0f}", p.memory_limit_mb) : "none", simulate::to_string(p.schedule));
  j["layers"] = p.layers.file;
  j["stages"] = p.stages;
  j["interleave"] = p.chunks;
  j["micro_batches"] = p.micro_batches;
  j["memory_limit_mb"] = p.memory_limit_mb;
  j["schedule"] = simulate::to_string(p.schedule);
  j["solver"] = {{"method", sol.method},
                 {"proved_optimal", sol.optimal},
                 {"gap", sol.optimal ? json(0.0) : json(nullptr)},
                 {"solve_seconds", sol.solve_seconds},
                 {"explored", sol.explored}};
  out += head;
  out += fmt::format("solver: {}: {} in {:.3f} s ({} states)\n", sol.method,
                     sol.feasible ? (sol.optimal ? "proved optimal" : "best found") : "proved infeasible", sol.solve_seconds, sol.explored);
  Simulated best;
  if (sol.feasible) {
    best = run_sim(p, sol.x);
    j["result"] = sim_json(best);
    auto fw = balance::to_framework(p, sol.x);
    json strategies = json::array();
    for (std::size_t l = 0; l < fw.size(); ++l) {
      strategies.push_back(json{{"body", p.layers.bodies[l].name},
                                {"offset", to_json(fw[l].offset)},
                                {"recompute", to_json(fw[l].recompute)},
                                {"select_recompute", to_json(fw[l].select_recompute)},
                                {"select_comm_recompute", to_json(fw[l].select_comm_recompute)}});
    }
    j["strategy"] = strategies;
    out += fmt::format("objective (closed-form step time) {:.2f}; simulated step time {:.2f}\n", best.eval.objective, best.sim.end);
    out += fmt::format("bubble: {}\n", bubbles(best.sim));
    out += fmt::format("stage times:       {}\npeak memory (MB):  {}\n", peaks(best.eval.stage_time), peaks(best.sim.peak_memory));
    out += "\n# paste into the training YAML\n";
    for (std::size_t l = 0; l < fw.size(); ++l) {
      if (fw.size() > 1) out += fmt::format("# BODY {}\n", p.layers.bodies[l].name);
      out += fmt::format("offset: {}\nrecompute: {}\nselect_recompute: {}\nselect_comm_recompute: {}\n", rows(fw[l].offset), rows(fw[l].recompute),
                         rows(fw[l].select_recompute), rows(fw[l].select_comm_recompute));
    }
  } else {
    j["result"] = nullptr;
    out += "no split fits the memory limit\n";
  }
  if (o.naive) {
    json naive = json::object();
    out += "\nnaive even splits (simulated):\n";
    std::vector<std::pair<std::string, Rc>> variants = {{"no_recompute", Rc::None}};
    // "All recompute": the allowed kind with the least activation memory (full where the layers state it).
    std::vector<Rc> allowed = p.kinds.empty() ? p.layers.kinds : p.kinds;
    Rc least = Rc::None;
    double least_mb = 1e300;
    for (Rc r : allowed) {
      double a = p.layers.bodies[0].act_mb[static_cast<std::size_t>(r)].value_or(1e300);
      if (a < least_mb) {
        least_mb = a;
        least = r;
      }
    }
    variants.emplace_back(fmt::format("all_recompute_{}", balance::to_string(least)), least);
    for (const auto& [name, kind] : variants) {
      balance::Assignment x = balance::even_split(p, kind);
      if (x.empty()) {
        out += fmt::format("  {}: not available (the layers state no memory for it)\n", name);
        naive[name] = nullptr;
        continue;
      }
      Simulated s = run_sim(p, x);
      naive[name] = sim_json(s);
      out +=
          fmt::format("  {}: simulated step time {:.2f}{}; peak {} MB{}\n", name, s.sim.end, s.eval.fits ? "" : " (DOES NOT FIT)", peaks(s.sim.peak_memory),
                      s.eval.fits && sol.feasible ? fmt::format("; the optimised split is {:.1f}% {}", 100.0 * std::fabs(s.sim.end - best.sim.end) / s.sim.end,
                                                                best.sim.end <= s.sim.end ? "faster" : "slower (simulated)")
                                                  : "");
    }
    j["naive"] = naive;
  }
  if (!o.manual.empty()) {
    json manual = json::object();
    out += "\nmanual strategies (simulated):\n";
    for (const ManualStrategy& strategy : manual_from_json(io::read_tree(o.manual), o.manual, p)) {
      const std::string& name = strategy.name;
      const std::vector<balance::FrameworkStrategy>& fw = strategy.bodies;
      Simulated s = run_sim(p, balance::from_framework(p, fw));
      manual[name] = sim_json(s);
      out += fmt::format("  {}: objective {:.2f}, simulated step time {:.2f}{}; peak {} MB\n", name, s.eval.objective, s.sim.end,
                         s.eval.fits ? "" : " (DOES NOT FIT)", peaks(s.sim.peak_memory));
    }
    j["manual"] = manual;
  }
  if (!o.svg.empty() && sol.feasible) {
    simulate::SvgOptions so;
    so.title = fmt::format("{}: {} stages x {} chunks, {} micro-batches ({})", io::stem(p.layers.file), p.stages, p.chunks, p.micro_batches,
                           simulate::to_string(p.schedule));
    so.summary = fmt::format("step {:.1f}, bubble {}", best.sim.end, bubbles(best.sim));
    so.memory_limit = p.memory_limit_mb;
    io::write_atomic(o.svg, simulate::render_svg(best.sim, p.chunks, so));
  }
  if (o.format == "json") {
    out = j.dump(2) + "\n";
  } else if (o.format == "yaml") {
    out = fmt::format("# {}", head);
    out += fmt::format("# {}; simulated step time {}\n", sol.method, sol.feasible ? fmt::format("{:.2f}", best.sim.end) : "n/a (infeasible)");
    if (sol.feasible) {
      auto fw = balance::to_framework(p, sol.x);
      for (std::size_t l = 0; l < fw.size(); ++l) {
        if (fw.size() > 1) out += fmt::format("# BODY {}\n", p.layers.bodies[l].name);
        out += fmt::format("offset: {}\nrecompute: {}\nselect_recompute: {}\nselect_comm_recompute: {}\n", rows(fw[l].offset), rows(fw[l].recompute),
                           rows(fw[l].select_recompute), rows(fw[l].select_comm_recompute));
      }
    }
  }
  emit(o.output, out);
  if (!sol.feasible) fail(p.layers.file, "no split of {} layers over {} stages fits {} MB", p.layers.body_layers(), p.stages, p.memory_limit_mb);
}

}  // namespace

Run add_balance(CLI::App& app) {
  auto o = std::make_shared<BalanceOptions>();
  CLI::App* cmd = app.add_subcommand("balance", "pipeline balancing: layers and recompute per stage and chunk, proved optimal; schedule simulation and SVG");
  cmd->add_option("--layers,-l", o->layers, "layers JSON (layers_description with HEAD, BODY, TAIL)");
  cmd->add_option("--stages,-s", o->stages, "pipeline stages")->check(positive_number());
  cmd->add_option("--micro-batches,-m", o->micro_batches, "micro-batches per step")->check(positive_number());
  cmd->add_option("--memory-limit", o->memory_limit, "per-device memory limit in MB (0: none)")->check(non_negative_number());
  cmd->add_option("--interleave,-i", o->interleave, "chunks per stage (interleaved 1F1B)")->capture_default_str()->check(positive_number());
  cmd->add_flag("--less-memory", o->less_memory, "interleaved schedule's less-memory variant");
  cmd->add_flag("--zero-bubble", o->zero_bubble, "zero-bubble (ZB-H1 style) schedule with split backward");
  cmd->add_option("--recompute-kinds", o->kinds, "allowed recompute kinds, e.g. full,selective,comm,both (default: every kind the layers state)");
  cmd->add_option("--constant-memory", o->constant, "MB added to every stage")->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit, "seconds; both solvers prove optimality, this only warns when exceeded")->capture_default_str();
  cmd->add_option("--solver", o->solver, "dp: exact dynamic program; enumerate: try every assignment (small cases)")
      ->check(CLI::IsMember({"dp", "enumerate"}))
      ->capture_default_str();
  cmd->add_option("--chunk-spread", o->chunk_spread, "most layers the chunks of one stage may differ by")->capture_default_str()->check(non_negative_number());
  cmd->add_option("--svg", o->svg, "write the simulated timeline and memory curves to this SVG file");
  cmd->add_option("--manual", o->manual, "YAML of hand-written strategies (offset, recompute, select_recompute, select_comm_recompute) to simulate");
  cmd->add_flag("--naive", o->naive, "also simulate the even splits with no recompute and with all layers recomputed");
  cmd->add_option("--format,-f", o->format, "output format")->check(CLI::IsMember({"table", "yaml", "json"}))->capture_default_str();
  cmd->add_option("--output,-o", o->output, "write the output to this file (atomically)");
  CLI::App* dec = cmd->add_subcommand("decompose", "recover per-layer memory terms from measured per-stage peaks (least squares)");
  dec->add_option("--measured", o->measured, "YAML: stages, runs[] of {layers, recompute{kind: per stage}, peaks_mb}")->required();
  dec->add_flag("--no-constant", o->no_constant, "fit no per-stage constant");
  dec->add_option("--format,-f", o->format, "output format")->check(CLI::IsMember({"table", "json"}));
  dec->add_option("--output,-o", o->output, "write the output to this file (atomically)");
  CLI::App* gd = cmd->add_subcommand("guide", "a first dry-run offset/recompute configuration that makes decompose solvable");
  gd->add_option("--stages,-s", o->stages, "pipeline stages")->required();
  gd->add_option("--layers-total", o->layers_total, "body layers of the model")->required();
  gd->add_option("--recompute-kinds", o->kinds, "kinds to tell apart (default selective,comm,both,full)");
  gd->add_flag("--no-constant", o->no_constant, "fit no per-stage constant");
  gd->add_option("--output,-o", o->output, "write the output to this file (atomically)");
  return [o, dec, gd]() {
    if (dec->parsed())
      run_decompose(*o);
    else if (gd->parsed())
      run_guide(*o);
    else
      run_balance(*o);
  };
}

}  // namespace sapp::cli
