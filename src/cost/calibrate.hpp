// perf/calibrate: fits a device's achievable-efficiency factors to measured step times.
//
// Given runs measured on one device type (model, layout, run facts, and the step time or tokens/s/device they
// reached), finds the one scale on the compute efficiencies the runs exercise (BF16 and/or FP8 GEMM, attention,
// element-wise) that minimises the squared log error of the estimated step times, by golden-section search. The result is the
// `efficiency:` block to put in the hardware YAML, with the errors before and after.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/time.hpp"
#include "hardware/hardware.hpp"
#include "model/family.hpp"
#include "plan/layout.hpp"

namespace sapp::cost {

struct MeasuredRun {
  std::string name;
  model::Model model;
  plan::Layout layout;
  plan::Training training;
  long long devices = 0;
  double step_time_s = 0;  // measured
  Overlap overlap;         // what the measured system overlapped (a run's `overlap:` block; defaults otherwise)
};

struct Calibration {
  double scale = 1;            // multiplies the exercised GEMM efficiencies and memory (each capped at 1)
  double attention_scale = 1;  // multiplies attention: `scale` unless fitted apart
  hardware::Efficiency efficiency;
  std::vector<double> errors_before;  // (estimated - measured) / measured step time, per run
  std::vector<double> errors_after;
};

// The training facts one measured run states, in one place for `sapp calibrate` and the validation runs: its
// framework's profile first (dtypes, selective modules, overlaps, reserve), then its own keys, which win:
// recompute_modules, fp8, flash_attention, grad_bytes (under FP8 too), attention_kernel, eager_norms, dispatcher
// (alltoall | deepep: one copy per remote node), ep_overlap (the EP all-to-all hidden), pipeline_split_counts_head, pipeline_runs
// (gradient-accumulation steps each running its own pipeline, torchtitan's and AutoModel's), moe_contiguous_routing,
// lora_rank (LoRA adapters on every linear layer).
// `row` is one run's mapping; `where` names it in errors. Other keys are left to the caller.
void read_run_settings(const nlohmann::json& row, const std::string& file, const std::string& where, plan::Training& training, Overlap& overlap);
// The layout it states: tp, pp, cp, vpp, ep, etp, mbs, zero, sp (default: with TP), recompute. The caller derives
// the data-parallel degree from the devices and the global batch.
void read_run_layout(const nlohmann::json& row, const std::string& file, const std::string& where, plan::Layout& layout);

// The keys read_run_settings and read_run_layout read, with the run's name, model, framework, devices, global
// batch and sequence: what every measured-run row may state (a reader adds its own, e.g. the measured metric).
const std::vector<std::string>& run_row_keys();

// Reads runs from a YAML/JSON tree: runs[] of {name?, model, devices, global_batch, seq, the layout
// (read_run_layout), the training facts (read_run_settings), overlap?, step_time_s | tokens_per_s_per_device}.
std::vector<MeasuredRun> runs_from_json(const nlohmann::json& tree, const std::string& file, const model::Catalog& catalog);
// A published run of the validation set (validation/runs.yaml, docs/validation.md): a measured run in the runs
// format's keys on its own `hardware`, with the metric its source publishes, the source (its first word a key of
// the file's `sources`), its regime, and whether a factor in data/ was fitted to it.
struct PublishedRun {
  MeasuredRun run;  // run.step_time_s is unused: `measured` in `metric` is what was published
  hardware::Hardware hardware;
  std::string source, regime, framework;
  std::string metric;  // step_time_s, tokens_per_s_per_device, or tflops_megatron2021 (Narayanan et al. 2021's formula)
  double measured = 0;
  double peak_gib = 0;  // published peak memory (0: none)
  bool rank_miss = false;
  bool fitted = false;
  double gpt_hidden = 0, gpt_layers = 0;  // a GPT shape the table gives instead of a model (`shape`)
  std::string sweep;                      // rows of one published sweep of layouts (same problem, same cluster) share it
};
// Reads the validation file: sources, runs[] (the runs format's keys, with hardware, regime, source, metric,
// measured, peak_memory_gib, memory_metric, rank_miss, fitted, fitted_for, sweep, mtp_layers, and a model or a GPT `shape`),
// known_gaps, excluded, sweeps. Every run is checked as `sapp calibrate` checks its runs (the layout valid for its
// devices); every source's first word must name an entry of `sources`.
std::vector<PublishedRun> published_runs_from_json(const nlohmann::json& tree, const std::string& file, const model::Catalog& catalog);
// The published metric of an estimate, and the step-time error (estimated over measured step time, minus 1):
// throughputs are inverse step times.
double published_metric(const PublishedRun& r, const StepTime& t);
double step_error(const PublishedRun& r, double estimated_metric);

// Fits the efficiencies to the runs' step times (least squares of the log error): one scale on the GEMMs,
// attention and memory, or with `attention_apart` a second scale on attention alone (for a set whose long
// sequences make attention most of the work).
Calibration calibrate(const std::vector<MeasuredRun>& runs, const hardware::Hardware& hw, bool attention_apart = false);

}  // namespace sapp::cost
