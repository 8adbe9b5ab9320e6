// report: what each command answers, as plain values, and its renderings. One renderer per format (table,
// JSON, CSV) reads each report; the command line prints them and the Python bindings return the same JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "model/family.hpp"
#include "search/search.hpp"

namespace sapp::report {

// The model and device a report is about.
struct Subject {
  std::string model;
  std::string arch;
  model::ParamCounts params;
  std::string hardware_id;
  std::string hardware_name;
  long long devices = 0;
  long long global_batch = 0;
  long long seq = 0;
  double capacity_bytes = 0;
  std::string precision = "BF16";     // the GEMMs' precision: BF16, FP8 or NVFP4 (cost::terms::precision_name)
  bool validated = false;             // the device and precision were checked against measured runs
  std::string validation;             // which runs, or why not
  std::vector<std::string> warnings;  // about the inputs (e.g. model config keys sapp does not read)
};

// One change to a layout that does not fit, re-priced.
struct Suggestion {
  std::string change;  // e.g. "--recompute full"
  plan::Layout layout;
  double peak_memory_bytes = 0;
  double step_time_s = 0;
};

struct EstimateReport {
  Subject subject;
  plan::Layout layout;
  cost::MemoryEstimate memory;
  cost::StepTime time;
  std::vector<std::string> explain;     // --explain: one line per term of one stage
  std::vector<Suggestion> suggestions;  // when it does not fit: changes that make it fit, fastest first
  [[nodiscard]] bool fits() const { return memory.fits(); }
};

struct SearchRow {
  search::Candidate candidate;
  cost::MemoryEstimate memory;  // per-stage memory of the row's layout
};

struct SearchReport {
  Subject subject;
  std::vector<SearchRow> rows;  // ranked, fastest first
  long long fitting = 0;
  long long evaluated = 0;
  std::map<std::string, long long> rejected;
  std::vector<search::Overflow> closest;  // nothing fits: the layouts that came closest
  std::vector<search::Candidate> pareto;  // when asked (the HTML report): the front of (peak memory, step time)
  std::vector<search::ScatterCell> scatter;
  double seconds = 0;
  int threads = 1;
  bool folded = true;
  [[nodiscard]] bool any_fits() const { return fitting > 0; }
};

// A pipeline stage of a balanced plan.
struct PlanStage {
  int stage = 0;
  std::vector<long long> layers;                            // per chunk
  std::vector<std::map<std::string, long long>> recompute;  // per chunk: layers per recompute kind ("none", "selective", "full")
  double peak_memory_bytes = 0;
  double time_s = 0;  // one micro-batch, every chunk of the stage
};

// One layout of a `plan` run: balanced when it has a pipeline, else the search's estimate.
struct Plan {
  plan::Layout layout;
  double step_time_s = 0;
  double even_step_time_s = 0;  // the search's estimate (even split, one recompute mode)
  // What `sapp estimate` prices this plan's split and recompute at (its closed form); a balanced plan's step_time_s
  // is the balancer's simulated schedule of the same plan.
  double estimate_step_time_s = 0;
  double peak_memory_bytes = 0;
  bool fits = true;
  bool balanced = false;
  std::string status;  // "proved optimal", "best found, gap 3.1 %", or why it was not balanced
  std::vector<PlanStage> stages;
  nlohmann::json framework;    // the framework arrays of the plan (offset, recompute, select_recompute, ...)
  std::string timeline_svg;    // the balanced schedule drawn (empty without a pipeline)
  nlohmann::json descriptors;  // the balancer's layers JSON of this layout (null without a pipeline)
};

struct PlanReport {
  SearchReport search;
  std::vector<Plan> plans;  // ranked on step_time_s
  double balance_seconds = 0;
};

nlohmann::json to_json(const EstimateReport& report);
std::string to_table(const EstimateReport& report);
std::string to_csv(const EstimateReport& report);

// `timing = false` leaves out what depends on the machine (search seconds, threads), for byte-identical output.
nlohmann::json to_json(const SearchReport& report, bool timing = true);
std::string to_table(const SearchReport& report);
std::string to_csv(const SearchReport& report);

nlohmann::json to_json(const PlanReport& report, bool timing = true);
std::string to_table(const PlanReport& report);

nlohmann::json layout_json(const plan::Layout& layout);
std::string gib(double bytes);

}  // namespace sapp::report
