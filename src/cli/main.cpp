// sapp: symbolic automatic parallel planner for LLM training. See README.md.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/check.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::cli {

void add_job_options(CLI::App& cmd, JobOptions& o, bool devices_required) {
  cmd.add_option("--model,-m", o.model, "bundled model name (e.g. llama3-70b) or a HuggingFace config.json / YAML path")->required();
  cmd.add_option("--hardware,-H", o.hardware, "bundled device (h100-sxm, a100-80g, h200, b200, mi300x, ascend-910b, ascend-910c) or a hardware YAML path")
      ->capture_default_str();
  auto* dev = cmd.add_option("--devices,-d", o.devices, "number of devices in the job")->check(positive_number());
  if (devices_required) dev->required();
  cmd.add_option("--global-batch,-b", o.global_batch, "global batch in sequences")->required()->check(positive_number());
  cmd.add_option("--seq,-s", o.seq, "sequence length in tokens")->capture_default_str()->check(positive_number());
  cmd.add_option("--memory-limit", o.memory_limit_gib, "per-device memory budget in GiB (default: the device's HBM)")->check(non_negative_number());
  cmd.add_option("--reserve-gib", o.reserve_gib, "per-device reserve for allocator fragmentation and framework context, GiB")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd.add_flag("--no-flash-attention", o.no_flash, "price eager attention (an s x s score tensor) instead of flash attention");
  cmd.add_flag("--fp8", o.fp8, "GEMMs in FP8 at the device's FP8 peak (attention and element-wise ops stay BF16)");
  cmd.add_flag("--less-memory", o.less_memory, "interleaved schedule's less-memory variant (fewer warm-up micro-batches)");
  cmd.add_option("--param-bytes", o.param_bytes, "bytes per weight")->capture_default_str()->check(positive_number());
  cmd.add_option("--grad-bytes", o.grad_bytes, "bytes per gradient")->capture_default_str()->check(positive_number());
  cmd.add_option("--optimizer-bytes", o.optimizer_bytes, "optimizer bytes per parameter (fp32 master + 2 Adam moments = 12)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd.add_option("--compute-bytes", o.compute_bytes, "bytes per activation element")->capture_default_str()->check(positive_number());
  cmd.add_option("--capacity-factor", o.capacity_factor, "MoE routed-token factor (1 = dropless, balanced)")->capture_default_str()->check(positive_number());
  cmd.add_option("--rank-order", o.rank_order, "rank order of the launcher, innermost first; decides which link each group's collectives use")
      ->capture_default_str();
  cmd.add_option("--overlap-tp", o.overlap_tp, "fraction of TP collectives hidden under compute (default 0.5)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--overlap-dp", o.overlap_dp, "fraction of DP gradient/parameter collectives hidden (default 0.9, capped by the last backward)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--overlap-ep", o.overlap_ep, "fraction of MoE all-to-all hidden (default 0)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--overlap-cp", o.overlap_cp, "fraction of the ring-CP attention that hides its KV exchange (default 0.5)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--overlap-pp", o.overlap_pp, "fraction of steady-state pipeline sends hidden (default 1)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--format,-f", o.format, "output format")->check(CLI::IsMember({"table", "json", "csv"}))->capture_default_str();
  cmd.add_option("--output,-o", o.output, "write the output to this file (atomically) instead of stdout");
}

plan::Training training_from(const JobOptions& o) {
  plan::Training t;
  t.global_batch = o.global_batch;
  t.seq = o.seq;
  t.flash_attention = !o.no_flash;
  t.interleave_less_memory = o.less_memory;
  t.fp8 = o.fp8;
  t.param_bytes = o.param_bytes;
  t.grad_bytes = o.grad_bytes;
  t.optimizer_bytes = o.optimizer_bytes;
  t.compute_bytes = o.compute_bytes;
  t.capacity_factor = o.capacity_factor;
  t.reserve_bytes = o.reserve_gib * 1073741824.0;
  t.rank_order = plan::parse_rank_order(o.rank_order, "--rank-order");
  return t;
}

cost::Overlap overlap_from(const JobOptions& o) {
  cost::Overlap ov;
  if (o.overlap_tp >= 0) ov.tp = o.overlap_tp;
  if (o.overlap_dp >= 0) ov.dp = o.overlap_dp;
  if (o.overlap_ep >= 0) ov.ep = o.overlap_ep;
  if (o.overlap_cp >= 0) ov.cp = o.overlap_cp;
  if (o.overlap_pp >= 0) ov.pp = o.overlap_pp;
  return ov;
}

void emit(const std::string& output, const std::string& text) { io::write_atomic(output, text); }

}  // namespace sapp::cli

int main(int argc, char** argv) {
  CLI::App app{
      "sapp: symbolic automatic parallel planner for LLM training.\n"
      "Which parallel layout to run, how much memory each device uses, how fast a step is, and how to\n"
      "split layers and recompute across pipeline stages, all analytic and CPU-only."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sapp 0.1.0");
  auto estimate = sapp::cli::add_estimate(app);
  auto search = sapp::cli::add_search(app);
  auto balance = sapp::cli::add_balance(app);
  auto calibrate = sapp::cli::add_calibrate(app);
  auto check = sapp::cli::add_check(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "sapp: error: %s (see sapp --help)\n", e.what());
    return 2;
  }
  try {
    if (app.got_subcommand("check")) check();
    if (app.got_subcommand("estimate"))
      estimate();
    else if (app.got_subcommand("search"))
      search();
    else if (app.got_subcommand("balance"))
      balance();
    else if (app.got_subcommand("calibrate"))
      calibrate();
  } catch (const sapp::Error& e) {
    std::fprintf(stderr, "sapp: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sapp: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
