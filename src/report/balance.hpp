// report/balance: what the pipeline-balancing commands answer (`balance`, `balance decompose`, `balance guide`)
// and what `calibrate` answers, as plain values, with one renderer per format. The command line prints them and
// the Python bindings return the same JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/calibrate.hpp"
#include "pipeline/decompose.hpp"
#include "pipeline/schedule.hpp"
#include "pipeline/solver.hpp"

namespace sapp::report {

// One plan simulated under its problem's schedule.
struct SimulatedPlan {
  simulate::SimResult sim;
  balance::Evaluation eval;
  bool fits = true;  // from the simulated peaks, never from the optimiser's model
};

// A plan simulated beside the optimised one: an even split, or a hand-written strategy.
struct NamedPlan {
  std::string name;
  std::optional<SimulatedPlan> plan;  // none: not available (the layers state no memory for it)
  std::string drawn_to;               // the SVG it was drawn to, if any
};

struct BalanceReport {
  balance::Problem problem;  // the interleave chosen (or stated)
  balance::Solution solution;
  bool interleave_auto = false;
  std::vector<std::pair<int, balance::Solution>> tried;  // interleave auto: each V and its solution
  SimulatedPlan best;                                    // solution.feasible: the optimised plan, simulated
  std::vector<balance::FrameworkStrategy> strategy;      // its framework arrays, one per BODY type
  std::optional<std::vector<NamedPlan>> naive;           // --naive
  std::optional<std::vector<NamedPlan>> manual;          // --manual
  [[nodiscard]] bool fits() const { return solution.feasible; }
};

nlohmann::json to_json(const BalanceReport& r);
std::string to_table(const BalanceReport& r);
std::string to_yaml(const BalanceReport& r);  // the framework keys of the plan, to paste into a training YAML
// One line on what the solver proved: optimal, best found with bound and gap, or no plan.
std::string solver_line(const balance::Solution& s);
// The simulated bubble split: real = ideal + imbalance + recompute (fractions of the model time).
std::string bubble_line(const simulate::SimResult& r);

struct DecomposeReport {
  balance::Decomposition decomposition;
};
nlohmann::json to_json(const DecomposeReport& r);
std::string to_table(const DecomposeReport& r);

struct GuideReport {
  int stages = 0;
  long long layers_total = 0;
  std::vector<balance::DryRun> runs;
};
std::string to_yaml(const GuideReport& r);

struct CalibrateReport {
  std::string hardware_id;
  std::string hardware_name;
  std::string hardware_source;  // the YAML the efficiency block belongs in
  std::vector<std::string> runs;
  cost::Calibration calibration;
};
nlohmann::json to_json(const CalibrateReport& r);
std::string to_table(const CalibrateReport& r);

}  // namespace sapp::report
