// The renderings of the balancing and calibration reports: table, JSON, and the framework YAML.
#include "report/balance.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/files.hpp"

namespace sapp::report {

using balance::Rc;
using nlohmann::json;

namespace {

std::string row(const std::vector<long long>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string rows(const std::vector<std::vector<long long>>& v) {
  if (v.size() == 1) return row(v[0]);
  std::vector<std::string> each;
  each.reserve(v.size());
  for (const auto& r : v) each.push_back(row(r));
  return fmt::format("[{}]", fmt::join(each, ", "));
}

json to_json(const std::vector<std::vector<long long>>& v) { return v.size() == 1 ? json(v[0]) : json(v); }

std::string megabytes(const std::vector<double>& v) {
  std::vector<std::string> each;
  each.reserve(v.size());
  for (double x : v) each.push_back(fmt::format("{:.0f}", x));
  return fmt::format("[{}]", fmt::join(each, ", "));
}

json sim_json(const SimulatedPlan& s) {
  return json{{"simulated_step_time", s.sim.end},
              {"closed_form_step_time", s.eval.closed_form},
              {"fits", s.fits},
              {"stage_time", s.eval.stage_time},
              {"peak_memory_mb", s.sim.peak_memory},
              {"bubbles", {{"real", s.sim.real}, {"ideal", s.sim.ideal}, {"imbalance", s.sim.imbalance}, {"recompute", s.sim.recompute}}}};
}

std::string head_line(const BalanceReport& r) {
  const balance::Problem& p = r.problem;
  return fmt::format("{}: {} body layers, {} stages, interleave {}{}, {} micro-batches, memory limit {}, schedule {}\n", p.layers.file, p.layers.body_layers(),
                     p.stages, p.chunks, r.interleave_auto ? " (auto)" : "", p.micro_batches,
                     p.memory_limit_mb > 0 ? fmt::format("{:.0f} MB", p.memory_limit_mb) : "none", simulate::to_string(p.schedule));
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

double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

std::string solver_line(const balance::Solution& s) {
  if (!s.feasible) return s.optimal ? "proved infeasible" : (s.timed_out ? "no plan found within the time limit" : "no plan found");
  if (s.optimal) return fmt::format("proved optimal (simulated step = lower bound {:.2f})", s.bound);
  return fmt::format("best found {:.2f}, lower bound {:.2f}, gap {:.2f}%{}", s.eval.objective, s.bound, 100.0 * s.gap,
                     s.timed_out ? " (time limit reached)" : "");
}

std::string bubble_line(const simulate::SimResult& r) {
  return fmt::format("real {:.4f} = ideal {:.4f} + imbalance {:.4f} + recompute {:.4f}{}", r.real, r.ideal, r.imbalance, r.recompute,
                     r.imbalance < 0 ? " (negative: the uneven split fills and drains the pipeline faster than equal cells would)" : "");
}

json to_json(const BalanceReport& r) {
  const balance::Problem& p = r.problem;
  const balance::Solution& sol = r.solution;
  json j;
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
  if (r.interleave_auto) {
    json tried = json::array();
    for (const auto& [v, s] : r.tried)
      tried.push_back(json{{"interleave", v}, {"feasible", s.feasible}, {"simulated_step_time", s.feasible ? json(s.eval.objective) : json(nullptr)}});
    j["interleave_tried"] = tried;
  }
  if (sol.feasible) {
    j["result"] = sim_json(r.best);
    json strategies = json::array();
    for (std::size_t l = 0; l < r.strategy.size(); ++l) {
      const balance::FrameworkStrategy& f = r.strategy[l];
      strategies.push_back(json{{"body", p.layers.bodies[l].name},
                                {"offset", to_json(f.offset)},
                                {"recompute", to_json(f.recompute)},
                                {"select_recompute", to_json(f.select_recompute)},
                                {"select_comm_recompute", to_json(f.select_comm_recompute)}});
    }
    j["strategy"] = strategies;
  } else {
    j["result"] = nullptr;
  }
  for (const auto& [key, plans] : {std::pair{"naive", &r.naive}, std::pair{"manual", &r.manual}}) {
    if (!*plans) continue;
    json each = json::object();
    for (const NamedPlan& n : **plans) each[n.name] = n.plan ? sim_json(*n.plan) : json(nullptr);
    j[key] = each;
  }
  return j;
}

std::string to_table(const BalanceReport& r) {
  const balance::Problem& p = r.problem;
  const balance::Solution& sol = r.solution;
  std::string out = head_line(r);
  if (r.interleave_auto) {
    out += "interleave auto (by simulated step):\n";
    for (const auto& [v, s] : r.tried)
      out += fmt::format("  interleave {}: {}\n", v, s.feasible ? fmt::format("simulated step {:.2f}, {}", s.eval.objective, solver_line(s)) : solver_line(s));
  }
  out += fmt::format("solver: {}: {} in {:.3f} s ({} states and plans)\n", sol.method, solver_line(sol), sol.solve_seconds, sol.explored);
  if (sol.feasible) {
    const SimulatedPlan& b = r.best;
    out += fmt::format("simulated step time {:.2f} (time units of the layers file); closed form {:.2f}; {}\n", b.sim.end, b.eval.closed_form,
                       b.fits ? "fits (simulated peaks within the limit)" : "DOES NOT FIT (simulated peaks over the limit)");
    out += fmt::format("bubble (fractions of the model time): {}\n", bubble_line(b.sim));
    out += fmt::format("stage times (time units):  {}\npeak memory (MB):          {}\n", megabytes(b.eval.stage_time), megabytes(b.sim.peak_memory));
    out += "\n# paste into the training YAML\n" + strategy_yaml(p, r.strategy);
  } else {
    out += "no plan fits the memory limit\n";
  }
  if (r.naive) {
    out += "\nnaive even splits (simulated):\n";
    for (const NamedPlan& n : *r.naive) {
      if (!n.plan) {
        out += fmt::format("  {}: not available (the layers state no memory for it)\n", n.name);
        continue;
      }
      const SimulatedPlan& s = *n.plan;
      out += fmt::format("  {}: simulated step time {:.2f}{}; peak {} MB{}\n", n.name, s.sim.end, s.fits ? "" : " (DOES NOT FIT)", megabytes(s.sim.peak_memory),
                         s.fits && sol.feasible ? fmt::format("; the optimised plan is {:.1f}% {}", 100.0 * std::fabs(s.sim.end - r.best.sim.end) / s.sim.end,
                                                              r.best.sim.end <= s.sim.end ? "faster" : "slower (simulated)")
                                                : "");
    }
  }
  if (r.manual) {
    out += "\nmanual strategies (simulated):\n";
    for (const NamedPlan& n : *r.manual) {
      const SimulatedPlan& s = *n.plan;
      out += fmt::format("  {}: simulated step time {:.2f}{}; peak {} MB\n", n.name, s.sim.end, s.fits ? "" : " (DOES NOT FIT)", megabytes(s.sim.peak_memory));
      if (!n.drawn_to.empty()) out += fmt::format("    drawn to {}\n", n.drawn_to);
    }
  }
  return out;
}

std::string to_yaml(const BalanceReport& r) {
  const balance::Solution& sol = r.solution;
  std::string out = "# " + head_line(r);
  out += fmt::format("# {}: {}; simulated step time {} (time units of the layers file)\n", sol.method, solver_line(sol),
                     sol.feasible ? fmt::format("{:.2f}", r.best.sim.end) : "n/a");
  if (sol.feasible) out += strategy_yaml(r.problem, r.strategy);
  return out;
}

json to_json(const DecomposeReport& r) {
  const balance::Decomposition& d = r.decomposition;
  json acts = json::object();
  for (const auto& [k, v] : d.activation_mb) acts[balance::to_string(k)] = v;
  return json{{"memory_parameter", d.param_mb}, {"activation_mb", acts},          {"constant_mb", d.constant_mb}, {"head_mb", d.head_mb},
              {"tail_mb", d.tail_mb},           {"residuals_mb", d.residuals_mb}, {"equations", d.equations},     {"unknowns", d.unknowns}};
}

std::string to_table(const DecomposeReport& r) {
  const balance::Decomposition& d = r.decomposition;
  std::string out = fmt::format("{} equations, {} unknowns\n", d.equations, d.unknowns);
  out += fmt::format("memory_parameter: {:.3f}   # MB per body layer\n", d.param_mb);
  for (const auto& [k, v] : d.activation_mb) out += fmt::format("activation {}: {:.3f}   # MB per layer and micro-batch\n", balance::to_string(k), v);
  out += fmt::format("constant: {:.3f}\nhead: {:.3f}\ntail: {:.3f}\nresiduals (MB): {}\n", d.constant_mb, d.head_mb, d.tail_mb, megabytes(d.residuals_mb));
  return out;
}

std::string to_yaml(const GuideReport& r) {
  long long base = r.layers_total / r.stages;
  std::string out =
      fmt::format("# {} dry run(s) of {} stages that make `sapp balance decompose` solvable; record each stage's peak\n", r.runs.size(), r.stages);
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    std::vector<long long> offset;
    offset.reserve(r.runs[i].layers.size());
    for (long long n : r.runs[i].layers) offset.push_back(n - base);
    out += fmt::format("run{}:\n  layers: {}\n  offset: {}\n", i + 1, row(r.runs[i].layers), row(offset));
    for (const auto& [k, c] : r.runs[i].recomputed)
      out += fmt::format("  {}: {}\n",
                         k == Rc::Full        ? "recompute"
                         : k == Rc::Selective ? "select_recompute_only"
                         : k == Rc::Comm      ? "select_comm_recompute_only"
                                              : "both_comm_select",
                         row(c));
  }
  return out;
}

json to_json(const CalibrateReport& r) {
  const cost::Calibration& c = r.calibration;
  const auto& e = c.efficiency;
  return json{{"hardware", r.hardware_id},
              {"scale", c.scale},
              {"attention_scale", c.attention_scale},
              {"efficiency", {{"gemm", e.gemm}, {"gemm_fp8", e.gemm_fp8}, {"gemm_fp4", e.gemm_fp4}, {"attention", e.attention}, {"memory", e.memory}}},
              {"errors_before", c.errors_before},
              {"errors_after", c.errors_after},
              {"median_abs_error_before", median_abs(c.errors_before)},
              {"median_abs_error_after", median_abs(c.errors_after)}};
}

std::string to_table(const CalibrateReport& r) {
  const cost::Calibration& c = r.calibration;
  const auto& e = c.efficiency;
  std::string out = fmt::format("{} measured runs on {}: compute efficiencies scaled by {:.3f}", r.runs.size(), r.hardware_name, c.scale);
  out += c.attention_scale != c.scale ? fmt::format(", attention by {:.3f}\n", c.attention_scale) : "\n";
  out += fmt::format("{:<28} {:>12} {:>12}\n", "run", "error before", "error after");
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    out += fmt::format("{:<28} {:>+11.1f}% {:>+11.1f}%\n", r.runs[i], 100 * c.errors_before[i], 100 * c.errors_after[i]);
  }
  out += fmt::format("median |error|: {:.1f}% before, {:.1f}% after\n\n", 100 * median_abs(c.errors_before), 100 * median_abs(c.errors_after));
  out += fmt::format(
      "# for {}:\nefficiency:\n  gemm: {:.3f}\n  gemm_fp8: {:.3f}\n  gemm_half_rows: {:g}\n  attention: {:.3f}\n  memory: {:.3f}\n  comm: {:.3f}\n"
      "  grouped_gemm_half_width: {:g}\n{}",
      r.hardware_source, e.gemm, e.gemm_fp8, e.gemm_half_rows, e.attention, e.memory, e.comm, e.grouped_gemm_half_width,
      e.gemm_fp4 > 0 ? fmt::format("  gemm_fp4: {:.3f}\n", e.gemm_fp4) : std::string());
  return out;
}

}  // namespace sapp::report
