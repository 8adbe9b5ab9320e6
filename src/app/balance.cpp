// The balancing and calibration commands: each takes its typed request, reads what it names and returns its
// report (report/balance.hpp). The SVG drawings a request asks for are written here, atomically.
#include <algorithm>

#include <fmt/format.h>

#include "app/app.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "pipeline/manual.hpp"
#include "pipeline/svg.hpp"

namespace sapp::app {

using balance::Rc;

namespace {

report::SimulatedPlan simulate_plan(const balance::Problem& p, const balance::Assignment& x) {
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
  report::SimulatedPlan s;
  s.eval = balance::evaluate(p, x);
  s.sim = simulate::simulate(p.schedule, p.stages, p.chunks, p.micro_batches, balance::stage_times(p, x));
  for (double peak : s.sim.peak_memory) s.fits = s.fits && (p.memory_limit_mb <= 0 || peak <= p.memory_limit_mb + 1e-9);
  return s;
}

void write_svg(const std::string& file, const balance::Problem& p, const report::SimulatedPlan& s, const std::string& label) {
  simulate::SvgOptions so;
  so.title = fmt::format("{}{}: {} stages x {} chunks, {} micro-batches ({})", io::stem(p.layers.file), label, p.stages, p.chunks, p.micro_batches,
                         simulate::to_string(p.schedule));
  so.summary = fmt::format("step {:.1f} (time units of the layers file), bubble {}", s.sim.end, report::bubble_line(s.sim));
  so.memory_limit = p.memory_limit_mb;
  io::write_atomic(file, simulate::render_svg(s.sim, p.chunks, so));
}

std::vector<Rc> kinds_named(const std::string& list, const std::string& where) {
  std::vector<Rc> kinds;
  for (const std::string& name : io::split_commas(list)) {
    Rc r = balance::parse_rc(name, where);
    if (std::find(kinds.begin(), kinds.end(), r) == kinds.end()) kinds.push_back(r);
  }
  return kinds;
}

balance::Problem make_problem(const BalanceRequest& o, balance::LayerSet layers, int chunks) {
  auto where = [&](const char* key) { return where_of(o.source, key); };
  balance::Problem p;
  p.layers = std::move(layers);
  p.stages = o.stages;
  p.chunks = chunks;
  p.micro_batches = o.micro_batches;
  p.memory_limit_mb = o.memory_limit_mb;
  p.constant_mb = o.constant_memory_mb + p.layers.constant_mb;  // the flag's MB on top of the file's
  p.chunk_spread = o.chunk_spread;
  p.time_limit_s = o.time_limit_s;
  p.progress = o.source == Source::CommandLine;
  if (o.zero_bubble && chunks > 1) fail(where("zero_bubble"), "ZB-H1 runs one chunk per stage; interleave is {}", chunks);
  if (o.dualpipe_v && chunks != 2) fail(where("dualpipe_v"), "DualPipe-V runs two chunks per stage; interleave is {}", chunks);
  if (o.dualpipe_v && (o.zero_bubble || o.less_memory)) fail(where("dualpipe_v"), "is a schedule of its own: drop zero_bubble and less_memory");
  p.schedule = o.dualpipe_v    ? simulate::Schedule::DualPipeV
               : o.zero_bubble ? simulate::Schedule::ZeroBubble
               : chunks > 1    ? (o.less_memory ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved)
                               : simulate::Schedule::OneF1B;
  if (!o.recompute_num_layers.empty()) {
    if (!o.recompute_kinds.empty()) fail(where("recompute_num_layers"), "states the kinds itself (full and none): drop recompute_kinds");
    if (o.recompute_num_layers != "auto") {
      long long n = -1;
      try {
        std::size_t used = 0;
        n = std::stoll(o.recompute_num_layers, &used);
        if (used != o.recompute_num_layers.size()) n = -1;
      } catch (const std::exception&) {
        n = -1;
      }
      if (n < 0) fail(where("recompute_num_layers"), "'{}' is neither a count of layers (0 or more) nor auto", o.recompute_num_layers);
      p.full_first_layers = n;
      p.kinds = n == 0 ? std::vector<Rc>{Rc::None} : std::vector<Rc>{Rc::None, Rc::Full};
    }
  }
  if (!o.recompute_kinds.empty()) {
    p.kinds.push_back(Rc::None);
    for (Rc r : kinds_named(o.recompute_kinds, where("recompute_kinds"))) {
      if (std::find(p.kinds.begin(), p.kinds.end(), r) == p.kinds.end()) p.kinds.push_back(r);
    }
    // `none` is only allowed where the layers state its memory.
    if (p.layers.has_memory() && std::find(p.layers.kinds.begin(), p.layers.kinds.end(), Rc::None) == p.layers.kinds.end()) {
      p.kinds.erase(std::remove(p.kinds.begin(), p.kinds.end(), Rc::None), p.kinds.end());
    }
  }
  return p;
}

// The even splits with no recompute and with every layer recomputed by the allowed kind that keeps the least.
std::vector<report::NamedPlan> naive_plans(const balance::Problem& p) {
  std::vector<std::pair<std::string, Rc>> variants = {{"no_recompute", Rc::None}};
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
  std::vector<report::NamedPlan> out;
  for (const auto& [name, kind] : variants) {
    balance::Assignment x = balance::even_split(p, kind);
    out.push_back({name, x.empty() ? std::nullopt : std::optional(simulate_plan(p, x)), {}});
  }
  return out;
}

}  // namespace

report::BalanceReport run_balance(const BalanceRequest& o) {
  auto where = [&](const char* key) { return where_of(o.source, key); };
  if (o.layers.empty()) throw UsageError(where("layers") + " is required: the layers JSON (layers_description)");
  if (o.stages <= 0) throw UsageError(where("stages") + " is required: the pipeline stages");
  if (o.micro_batches <= 0) throw UsageError(where("micro_batches") + " is required: the micro-batches per step");
  balance::LayerSet layers = balance::read_layers(o.layers);
  std::vector<int> chunk_choices;
  if (o.interleave_auto) {
    // The reference's choice of V: 1..4, the one with the least simulated step.
    for (int v = 1; v <= 4; ++v) {
      if (v > 1 && (o.zero_bubble || o.micro_batches < o.stages)) continue;
      if (o.dualpipe_v && v != 2) continue;
      long long cells = 1LL * o.stages * v;
      if (layers.body_layers() < cells - (cells >= 2 ? 2 : 1)) continue;
      chunk_choices.push_back(v);
    }
    if (chunk_choices.empty()) fail(where("interleave"), "auto: no interleave 1..4 runs {} stages and {} micro-batches", o.stages, o.micro_batches);
  } else {
    chunk_choices.push_back(o.interleave);
  }
  // Hand-written strategies are read before the solve, so a mistake in them is refused at once.
  nlohmann::json manual_tree;
  if (!o.manual.empty()) {
    manual_tree = io::read_tree(o.manual);
    if (!o.interleave_auto) (void)balance::manual_from_json(manual_tree, o.manual, make_problem(o, layers, o.interleave));
  }
  report::BalanceReport r;
  r.interleave_auto = o.interleave_auto;
  bool have = false;  // r.problem and r.solution hold a solved interleave (the first one, even when it has no plan)
  for (int v : chunk_choices) {
    balance::Problem q = make_problem(o, layers, v);
    balance::Solution s;
    if (o.recompute_num_layers == "auto") {
      if (o.solver == "enumerate") fail(where("solver"), "enumerate takes one recompute_num_layers, not auto");
      long long n = 0;
      int balanced = 0;
      s = balance::solve_block_recompute(q, &n, &balanced);
      s.method += fmt::format("; Megatron block recompute: --recompute-num-layers {} kept of {} counts balanced", n, balanced);
    } else {
      s = o.solver == "enumerate" ? balance::solve_exhaustive(q) : balance::solve(q);
    }
    if (o.interleave_auto) r.tried.emplace_back(v, s);
    bool better = s.feasible && (!r.solution.feasible || s.eval.objective < r.solution.eval.objective - 1e-9);
    if (!have || better) {
      r.problem = q;
      r.solution = s;
      have = true;
    }
  }
  const balance::Problem& p = r.problem;
  if (r.solution.feasible) {
    r.best = simulate_plan(p, r.solution.x);
    r.strategy = balance::to_framework(p, r.solution.x);
  }
  if (o.naive) r.naive = naive_plans(p);
  if (!o.manual.empty()) {
    r.manual.emplace();
    for (const balance::ManualStrategy& strategy : balance::manual_from_json(manual_tree, o.manual, p)) {
      report::NamedPlan n{strategy.name, simulate_plan(p, balance::from_framework(p, strategy.bodies)), {}};
      // The reference draws a strategy with show: true, into file_name (default <name>.svg).
      if (strategy.show || !strategy.file_name.empty()) {
        std::string file = strategy.file_name.empty() ? strategy.name + ".svg" : strategy.file_name;
        if (file.size() < 4 || file.substr(file.size() - 4) != ".svg") file += ".svg";
        write_svg(file, p, *n.plan, " / " + strategy.name);
        n.drawn_to = file;
      }
      r.manual->push_back(std::move(n));
    }
  }
  if (!o.svg.empty() && r.solution.feasible) write_svg(o.svg, p, r.best, "");
  return r;
}

report::DecomposeReport run_decompose(const DecomposeRequest& o) {
  if (o.measured.empty()) throw UsageError(where_of(o.source, "measured") + " is required: a YAML of dry-run stage peaks");
  balance::Measurements m = balance::read_measurements(io::read_tree(o.measured), o.measured);
  if (o.no_constant) m.constant = false;
  return {balance::decompose(m)};
}

report::GuideReport run_guide(const GuideRequest& o) {
  if (o.stages < 3) fail(where_of(o.source, "stages"), "is required and must be at least 3 for a decomposition");
  if (o.layers_total <= 0) throw UsageError(where_of(o.source, "layers_total") + " is required: the body layers of the model");
  std::vector<Rc> kinds = kinds_named(o.recompute_kinds.empty() ? "selective,comm,both,full" : o.recompute_kinds, where_of(o.source, "recompute_kinds"));
  return {o.stages, o.layers_total, balance::guide(o.stages, o.layers_total, kinds, !o.no_constant)};
}

report::CalibrateReport run_calibrate(const CalibrateRequest& o) {
  if (o.runs.empty()) throw UsageError(where_of(o.source, "runs") + " is required: a YAML of measured runs");
  std::string data = io::data_dir();
  model::Catalog catalog = model::load_catalog(data);
  hardware::Hardware hw = hardware::load_hardware(o.hardware, data);
  auto runs = cost::runs_from_json(io::read_tree(o.runs), o.runs, catalog);
  report::CalibrateReport r{hw.id, hw.name, hw.source, {}, cost::calibrate(runs, hw, o.attention_apart)};
  for (const auto& run : runs) r.runs.push_back(run.name);
  return r;
}

}  // namespace sapp::app
