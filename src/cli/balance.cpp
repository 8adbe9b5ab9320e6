#include <cmath>
#include <functional>

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
  std::string interleave = "1";
  bool less_memory = false;
  bool zero_bubble = false;
  bool dualpipe_v = false;
  std::string kinds;
  double constant = 0;
  double time_limit = 90;
  std::string solver = "dp";
  int chunk_spread = 0;
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
  bool fits = true;  // from the simulated peaks
};

Simulated run_sim(const balance::Problem& p, const balance::Assignment& x) {
  // A strategy may only use kinds the layers file prices (a missing memory key is not 0 MB).
  if (p.layers.has_memory()) {
    for (std::size_t l = 0; l < x.size(); ++l) {
      for (const auto& chunk : x[l]) {
        for (const auto& cell : chunk) {
          for (int r = 0; r < balance::kRcKinds; ++r) {
            if (cell[static_cast<std::size_t>(r)] > 0 && !p.layers.bodies[l].act_mb[static_cast<std::size_t>(r)])
              fail(p.layers.file, "the strategy recomputes {} layers of BODY '{}' with kind '{}', whose activation memory the layers file does not state",
                   cell[static_cast<std::size_t>(r)], p.layers.bodies[l].name, balance::to_string(static_cast<Rc>(r)));
          }
        }
      }
    }
  }
  Simulated s;
  s.eval = balance::evaluate(p, x);
  s.sim = simulate::simulate(p.schedule, p.stages, p.chunks, p.micro_batches, balance::stage_times(p, x));
  for (double peak : s.sim.peak_memory) s.fits = s.fits && (p.memory_limit_mb <= 0 || peak <= p.memory_limit_mb + 1e-9);
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
  return json{{"simulated_step_time", s.sim.end},
              {"closed_form_step_time", s.eval.closed_form},
              {"fits", s.fits},
              {"stage_time", s.eval.stage_time},
              {"peak_memory_mb", s.sim.peak_memory},
              {"bubbles", {{"real", s.sim.real}, {"ideal", s.sim.ideal}, {"imbalance", s.sim.imbalance}, {"recompute", s.sim.recompute}}}};
}

void run_decompose(const BalanceOptions& o) {
  if (o.measured.empty()) fail("--measured", "is required: a YAML of dry-run stage peaks");
  balance::Measurements m = balance::read_measurements(io::read_tree(o.measured), o.measured);
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

balance::Problem make_problem(const BalanceOptions& o, balance::LayerSet layers, int chunks) {
  balance::Problem p;
  p.layers = std::move(layers);
  p.stages = o.stages;
  p.chunks = chunks;
  p.micro_batches = o.micro_batches;
  p.memory_limit_mb = o.memory_limit;
  p.constant_mb = o.constant;
  p.chunk_spread = o.chunk_spread;
  p.time_limit_s = o.time_limit;
  p.progress = true;
  if (o.zero_bubble && chunks > 1) fail("--zero-bubble", "ZB-H1 runs one chunk per stage; interleave is {}", chunks);
  if (o.dualpipe_v && chunks != 2) fail("--dualpipe-v", "DualPipe-V runs two chunks per stage; interleave is {}", chunks);
  if (o.dualpipe_v && (o.zero_bubble || o.less_memory)) fail("--dualpipe-v", "is a schedule of its own: drop --zero-bubble and --less-memory");
  p.schedule = o.dualpipe_v    ? simulate::Schedule::DualPipeV
               : o.zero_bubble ? simulate::Schedule::ZeroBubble
               : chunks > 1    ? (o.less_memory ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved)
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
  return p;
}

// The framework keys of a plan. With several BODY types each key maps BODY names to their arrays (the form
// --manual reads back).
std::string strategy_yaml(const balance::Problem& p, const std::vector<balance::FrameworkStrategy>& fw) {
  using Rows = std::vector<std::vector<long long>>;
  auto key = [&](const char* name, const std::function<const Rows&(const balance::FrameworkStrategy&)>& get) {
    if (fw.size() == 1) return fmt::format("{}: {}\n", name, rows(get(fw[0])));
    std::string s = fmt::format("{}:\n", name);
    for (std::size_t l = 0; l < fw.size(); ++l) s += fmt::format("  {}: {}\n", p.layers.bodies[l].name, rows(get(fw[l])));
    return s;
  };
  return key("offset", [](const balance::FrameworkStrategy& f) -> const Rows& { return f.offset; }) +
         key("recompute", [](const balance::FrameworkStrategy& f) -> const Rows& { return f.recompute; }) +
         key("select_recompute", [](const balance::FrameworkStrategy& f) -> const Rows& { return f.select_recompute; }) +
         key("select_comm_recompute", [](const balance::FrameworkStrategy& f) -> const Rows& { return f.select_comm_recompute; });
}

std::string solver_line(const balance::Solution& sol) {
  if (!sol.feasible) return sol.optimal ? "proved infeasible" : (sol.timed_out ? "no plan found within the time limit" : "no plan found");
  if (sol.optimal) return fmt::format("proved optimal (simulated step = lower bound {:.2f})", sol.bound);
  return fmt::format("best found {:.2f}, lower bound {:.2f}, gap {:.2f}%{}", sol.eval.objective, sol.bound, 100.0 * sol.gap,
                     sol.timed_out ? " (time limit reached)" : "");
}

void write_svg(const std::string& file, const balance::Problem& p, const Simulated& s, const std::string& label) {
  simulate::SvgOptions so;
  so.title = fmt::format("{}{}: {} stages x {} chunks, {} micro-batches ({})", io::stem(p.layers.file), label, p.stages, p.chunks, p.micro_batches,
                         simulate::to_string(p.schedule));
  so.summary = fmt::format("step {:.1f} (time units of the layers file), bubble {}", s.sim.end, bubbles(s.sim));
  so.memory_limit = p.memory_limit_mb;
  io::write_atomic(file, simulate::render_svg(s.sim, p.chunks, so));
}

void run_balance(const BalanceOptions& o) {
  if (o.layers.empty()) fail("--layers", "is required: the layers JSON (layers_description)");
  if (o.stages <= 0) fail("--stages", "is required and must be positive");
  if (o.micro_batches <= 0) fail("--micro-batches", "is required and must be positive");
  balance::LayerSet layers = balance::read_layers(o.layers);
  std::vector<int> chunk_choices;
  if (o.interleave == "auto") {
    // The reference's choice of V: 1..4, the one with the least simulated step.
    for (int v = 1; v <= 4; ++v) {
      if (v > 1 && (o.zero_bubble || o.micro_batches < o.stages)) continue;
      if (o.dualpipe_v && v != 2) continue;
      long long cells = 1LL * o.stages * v;
      if (layers.body_layers() < cells - (cells >= 2 ? 2 : 1)) continue;
      chunk_choices.push_back(v);
    }
    if (chunk_choices.empty()) fail("--interleave", "auto: no interleave 1..4 runs {} stages and {} micro-batches", o.stages, o.micro_batches);
  } else {
    int v = 0;
    try {
      v = std::stoi(o.interleave);
    } catch (const std::exception&) {
      fail("--interleave", "'{}' is not a whole number or auto", o.interleave);
    }
    if (v < 1) fail("--interleave", "{} must be at least 1", v);
    chunk_choices.push_back(v);
  }
  balance::Problem p;
  balance::Solution sol;
  bool have = false;  // p and sol hold a solved interleave (the first one, even when it has no plan)
  std::string auto_note;
  for (int v : chunk_choices) {
    balance::Problem q = make_problem(o, layers, v);
    balance::Solution s = o.solver == "enumerate" ? balance::solve_exhaustive(q) : balance::solve(q);
    if (chunk_choices.size() > 1)
      auto_note +=
          fmt::format("  interleave {}: {}\n", v, s.feasible ? fmt::format("simulated step {:.2f}, {}", s.eval.objective, solver_line(s)) : solver_line(s));
    bool better = s.feasible && (!sol.feasible || s.eval.objective < sol.eval.objective - 1e-9);
    if (!have || better) {
      p = q;
      sol = s;
      have = true;
    }
  }

  json j;
  std::string out;
  std::string head = fmt::format("{}: {} body layers, {} stages, interleave {}{}, {} micro-batches, memory limit {}, schedule {}\n", p.layers.file,
                                 p.layers.body_layers(), p.stages, p.chunks, chunk_choices.size() > 1 ? " (auto)" : "", p.micro_batches,
                                 p.memory_limit_mb > 0 ? fmt::format("{:.0f} MB", p.memory_limit_mb) : "none", simulate::to_string(p.schedule));
  j["layers"] = p.layers.file;
  j["stages"] = p.stages;
  j["interleave"] = p.chunks;
  j["micro_batches"] = p.micro_batches;
  j["memory_limit_mb"] = p.memory_limit_mb;
  j["schedule"] = simulate::to_string(p.schedule);
  j["time_unit"] = "the layers file's time unit";
  j["solver"] = {
      {"method", sol.method},       {"proved_optimal", sol.optimal},      {"lower_bound", sol.bound}, {"gap", sol.feasible ? json(sol.gap) : json(nullptr)},
      {"timed_out", sol.timed_out}, {"solve_seconds", sol.solve_seconds}, {"explored", sol.explored}};
  out += head;
  if (!auto_note.empty()) out += "interleave auto (by simulated step):\n" + auto_note;
  out += fmt::format("solver: {}: {} in {:.3f} s ({} states and plans)\n", sol.method, solver_line(sol), sol.solve_seconds, sol.explored);
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
    out += fmt::format("simulated step time {:.2f} (time units of the layers file); closed form {:.2f}; {}\n", best.sim.end, best.eval.closed_form,
                       best.fits ? "fits (simulated peaks within the limit)" : "DOES NOT FIT (simulated peaks over the limit)");
    out += fmt::format("bubble (fractions of the model time): {}\n", bubbles(best.sim));
    out += fmt::format("stage times (time units):  {}\npeak memory (MB):          {}\n", peaks(best.eval.stage_time), peaks(best.sim.peak_memory));
    out += "\n# paste into the training YAML\n" + strategy_yaml(p, fw);
  } else {
    j["result"] = nullptr;
    out += "no plan fits the memory limit\n";
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
      out += fmt::format("  {}: simulated step time {:.2f}{}; peak {} MB{}\n", name, s.sim.end, s.fits ? "" : " (DOES NOT FIT)", peaks(s.sim.peak_memory),
                         s.fits && sol.feasible ? fmt::format("; the optimised plan is {:.1f}% {}", 100.0 * std::fabs(s.sim.end - best.sim.end) / s.sim.end,
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
      out += fmt::format("  {}: simulated step time {:.2f}{}; peak {} MB\n", name, s.sim.end, s.fits ? "" : " (DOES NOT FIT)", peaks(s.sim.peak_memory));
      // The reference draws a strategy with show: true, into file_name (default <name>.svg).
      if (strategy.show || !strategy.file_name.empty()) {
        std::string file = strategy.file_name.empty() ? name + ".svg" : strategy.file_name;
        if (file.size() < 4 || file.substr(file.size() - 4) != ".svg") file += ".svg";
        write_svg(file, p, s, " / " + name);
        out += fmt::format("    drawn to {}\n", file);
      }
    }
    j["manual"] = manual;
  }
  if (!o.svg.empty() && sol.feasible) write_svg(o.svg, p, best, "");
  if (o.format == "json") {
    out = j.dump(2) + "\n";
  } else if (o.format == "yaml") {
    out = fmt::format("# {}", head);
    out += fmt::format("# {}: {}; simulated step time {} (time units of the layers file)\n", sol.method, solver_line(sol),
                       sol.feasible ? fmt::format("{:.2f}", best.sim.end) : "n/a");
    if (sol.feasible) out += strategy_yaml(p, balance::to_framework(p, sol.x));
  }
  emit(o.output, out);
  if (!sol.feasible) fail(p.layers.file, "no plan of {} layers over {} stages fits {} MB", p.layers.body_layers(), p.stages, p.memory_limit_mb);
}

}  // namespace

Run add_balance(CLI::App& app) {
  auto o = std::make_shared<BalanceOptions>();
  CLI::App* cmd = app.add_subcommand("balance",
                                     "pipeline balancing: layers and recompute per stage and chunk by simulated step time, with a lower bound (proved optimal "
                                     "when met); schedule simulation and SVG");
  cmd->add_option("--layers,-l", o->layers, "layers JSON (layers_description with HEAD, BODY, TAIL)");
  cmd->add_option("--stages,-s", o->stages, "pipeline stages")->check(positive_number());
  cmd->add_option("--micro-batches,-m", o->micro_batches, "micro-batches per step")->check(positive_number());
  cmd->add_option("--memory-limit", o->memory_limit, "per-device memory limit in MB (0: none)")->check(non_negative_number());
  cmd->add_option("--interleave,-i", o->interleave, "chunks per stage (interleaved 1F1B), or auto: 1..4 by simulated step time")->capture_default_str();
  cmd->add_flag("--less-memory", o->less_memory, "interleaved schedule's less-memory variant");
  cmd->add_flag("--dualpipe-v", o->dualpipe_v,
                "DualPipe-V schedule (DeepSeek's DualPipe repository): two chunks per stage in a V, head and tail on stage 0; needs --interleave 2 and "
                "micro-batches >= 2 x stages");
  cmd->add_flag("--zero-bubble", o->zero_bubble, "zero-bubble ZB-H1 schedule (Qi et al. 2023): split backward, weight gradients deferred by the stage index");
  cmd->add_option("--recompute-kinds", o->kinds, "allowed recompute kinds, e.g. full,selective,comm,both (default: every kind the layers state)");
  cmd->add_option("--constant-memory", o->constant, "MB added to every stage")->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit, "seconds; the solve stops there with the best plan found, its lower bound and gap (0: none)")
      ->capture_default_str();
  cmd->add_option("--solver", o->solver, "dp: lower bound by dynamic program, plans simulated; enumerate: simulate every plan (small cases)")
      ->check(CLI::IsMember({"dp", "enumerate"}))
      ->capture_default_str();
  cmd->add_option("--chunk-spread", o->chunk_spread, "most layers the chunks of one stage may differ by (0: no limit)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_option("--svg", o->svg, "write the simulated timeline and memory curves to this SVG file");
  cmd->add_option("--manual", o->manual, "YAML of hand-written strategies (offset, recompute, select_recompute, select_comm_recompute) to simulate");
  cmd->add_flag("--naive", o->naive, "also simulate the even splits with no recompute and with all layers recomputed");
  cmd->add_option("--format,-f", o->format, "output format")->check(CLI::IsMember({"table", "yaml", "json"}))->capture_default_str();
  cmd->add_option("--output,-o", o->output, "write the output to this file (atomically)");
  CLI::App* dec = cmd->add_subcommand("decompose", "recover per-layer memory terms from measured per-stage peaks (least squares)");
  dec->add_option("--measured", o->measured,
                  "YAML: stages, runs[] of {layers, recompute{kind: per stage}, peaks_mb}; or the reference planner's dry-run input (pipeline_config, "
                  "recompute_config, memory_usage)")
      ->required();
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
