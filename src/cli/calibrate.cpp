#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/files.hpp"
#include "cost/calibrate.hpp"
#include "hardware/hardware.hpp"

namespace sapp::cli {

namespace {

double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

Run add_calibrate(CLI::App& app) {
  struct Options {
    std::string hardware = "h100-sxm";
    std::string runs;
    std::string format = "table";
    std::string output = "-";
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("calibrate", "fit a device's efficiency factors to measured step times; prints the efficiency block for its YAML");
  cmd->add_option("--hardware,-H", o->hardware, "bundled device or hardware YAML to calibrate")->capture_default_str();
  cmd->add_option("--runs", o->runs,
                  "YAML of measured runs: runs[] of {model, devices, global_batch, seq, tp, pp, cp, vpp, mbs, zero, sp, recompute, fp8, grad_bytes, overlap, "
                  "step_time_s | "
                  "tokens_per_s_per_device}")
      ->required();
  cmd->add_option("--format,-f", o->format, "output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  cmd->add_option("--output,-o", o->output, "write the output to this file (atomically)");
  return [o]() {
    std::string data = io::data_dir();
    model::Catalog catalog = model::load_catalog(data);
    hardware::Hardware hw = hardware::load_hardware(o->hardware, data);
    auto runs = cost::runs_from_json(io::read_tree(o->runs), o->runs, catalog);
    cost::Calibration c = cost::calibrate(runs, hw);
    const auto& e = c.efficiency;
    std::string out;
    if (o->format == "json") {
      out = nlohmann::json{{"hardware", hw.id},
                           {"scale", c.scale},
                           {"efficiency", {{"gemm", e.gemm}, {"gemm_fp8", e.gemm_fp8}, {"attention", e.attention}, {"memory", e.memory}}},
                           {"errors_before", c.errors_before},
                           {"errors_after", c.errors_after},
                           {"median_abs_error_before", median_abs(c.errors_before)},
                           {"median_abs_error_after", median_abs(c.errors_after)}}
                .dump(2) +
            "\n";
    } else {
      out += fmt::format("{} measured runs on {}: compute efficiencies scaled by {:.3f}\n", runs.size(), hw.name, c.scale);
      out += fmt::format("{:<28} {:>12} {:>12}\n", "run", "error before", "error after");
      for (std::size_t i = 0; i < runs.size(); ++i) {
        out += fmt::format("{:<28} {:>+11.1f}% {:>+11.1f}%\n", runs[i].name, 100 * c.errors_before[i], 100 * c.errors_after[i]);
      }
      out += fmt::format("median |error|: {:.1f}% before, {:.1f}% after\n\n", 100 * median_abs(c.errors_before), 100 * median_abs(c.errors_after));
      out += fmt::format(
          "# for {}:\nefficiency:\n  gemm: {:.3f}\n  gemm_fp8: {:.3f}\n  gemm_half_rows: {:g}\n  attention: {:.3f}\n  memory: {:.3f}\n  comm: {:.3f}\n",
          hw.source, e.gemm, e.gemm_fp8, e.gemm_half_rows, e.attention, e.memory, e.comm);
    }
    emit(o->output, out);
  };
}

}  // namespace sapp::cli
