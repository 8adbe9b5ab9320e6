// cli: the thin command-line layer. Each subcommand parses its options into library value types, calls the
// library's one entry point for that job, and renders the result; nothing here computes an estimate.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "cost/time.hpp"
#include "plan/layout.hpp"

namespace sapp::cli {

using Run = std::function<void()>;

// Option checks whose refusals read as a sentence ("--tp: 0 is not a positive number") rather than CLI11's
// range dump.
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v > 0)) return text + " is not a positive number";
        return {};
      },
      "POSITIVE");
}
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v >= 0)) return text + " is not a number >= 0";
        return {};
      },
      "NONNEGATIVE");
}

// Registers each subcommand; the returned callable runs it after parsing.
Run add_estimate(CLI::App& app);
Run add_search(CLI::App& app);
Run add_balance(CLI::App& app);
Run add_calibrate(CLI::App& app);

// Options shared by estimate and search: what is trained on what.
struct JobOptions {
  std::string model;
  std::string hardware = "h100-sxm";
  long long devices = 0;
  long long global_batch = 0;
  long long seq = 4096;
  double memory_limit_gib = 0;  // 0: the device's capacity
  double reserve_gib = 1.0;
  bool no_flash = false;
  bool less_memory = false;
  bool fp8 = false;
  double param_bytes = 2, grad_bytes = 4, optimizer_bytes = 12, compute_bytes = 2;
  double capacity_factor = 1.0;
  std::string rank_order = "tp-cp-dp-pp";
  double overlap_tp = -1, overlap_dp = -1, overlap_ep = -1, overlap_cp = -1, overlap_pp = -1;  // -1: the model's default
  std::string format = "table";
  std::string output = "-";
};
void add_job_options(CLI::App& cmd, JobOptions& o, bool devices_required);
plan::Training training_from(const JobOptions& o);
cost::Overlap overlap_from(const JobOptions& o);

// Writes `text` to the --output target atomically ("-" = stdout).
void emit(const std::string& output, const std::string& text);

}  // namespace sapp::cli
