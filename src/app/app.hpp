// app: one entry point per command. Each takes its typed request (app/request.hpp), loads what it names (model,
// device), applies the layout rules once, prices, and returns the command's report (report/report.hpp). The
// command line, the Python bindings and the framework-config readers are thin adapters over these calls.
#pragma once

#include "app/request.hpp"
#include "hardware/hardware.hpp"
#include "model/family.hpp"
#include "report/balance.hpp"
#include "report/report.hpp"

namespace sapp::app {

// What a job names, loaded from the data directory (or the paths it gives).
struct LoadedJob {
  model::Catalog catalog;
  model::Model model;
  hardware::Hardware hardware;
  double capacity_bytes = 0;  // the memory limit, or the device's HBM
};
LoadedJob load(const JobRequest& job);

report::EstimateReport run_estimate(const EstimateRequest& request);
report::SearchReport run_search(const SearchRequest& request);
// Search, then balance the pipeline of the best `candidates` layouts (layers and recompute per stage and chunk,
// from sapp's cost model) and re-rank every layout on its balanced step time (PP 1 keeps its estimate).
report::PlanReport run_plan(const PlanRequest& request);
// A plan's layout with its balanced layers and recompute per stage and chunk as a stated split (what --emit writes).
plan::Layout layout_with_split(const report::Plan& p);

// Layers and recompute per pipeline stage and chunk for a layers JSON; `fits()` false when no plan fits.
report::BalanceReport run_balance(const BalanceRequest& request);
// Per-layer memory terms recovered from measured stage peaks (least squares).
report::DecomposeReport run_decompose(const DecomposeRequest& request);
// Dry runs whose stage peaks make `run_decompose` solvable.
report::GuideReport run_guide(const GuideRequest& request);
// A device's efficiency factors fitted to measured step times.
report::CalibrateReport run_calibrate(const CalibrateRequest& request);

// Exit codes a script can rely on (documented in the README and `sapp --help`).
enum ExitCode : int {
  kExitOk = 0,          // an answer that fits
  kExitBadInput = 1,    // a bad value, file or layout
  kExitUsage = 2,       // a command-line usage mistake
  kExitDoesNotFit = 3,  // estimate: the layout does not fit; search, plan: no layout fits; balance: no plan fits
  kExitInternal = 4,    // a bug: please report it
};

}  // namespace sapp::app
