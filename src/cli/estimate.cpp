#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "hardware/hardware.hpp"
#include "report/report.hpp"

namespace sapp::cli {

namespace {

struct EstimateOptions {
  JobOptions job;
  int tp = 1, pp = 1, cp = 1, ep = 1, etp = 1, vpp = 1, mbs = 1, zero = 1, optimizer_shard = 0;
  bool sp = false;
  std::string cp_algo = "ring";
  std::string recompute = "off";
  int explain = -1;
  bool explain_flag = false;
};

}  // namespace

Run add_estimate(CLI::App& app) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* cmd = app.add_subcommand("estimate", "price one layout: per-stage memory by category, step time, MFU");
  add_job_options(*cmd, o->job, true);
  cmd->add_option("--tp", o->tp, "tensor parallel degree")->capture_default_str()->check(positive_number());
  cmd->add_option("--pp", o->pp, "pipeline parallel degree")->capture_default_str()->check(positive_number());
  cmd->add_option("--cp", o->cp, "context parallel degree")->capture_default_str()->check(positive_number());
  cmd->add_option("--cp-algo", o->cp_algo, "context parallel algorithm")->check(CLI::IsMember({"ring", "all2all"}))->capture_default_str();
  cmd->add_option("--ep", o->ep, "expert parallel degree (carved out of DP x CP x TP)")->capture_default_str()->check(positive_number());
  cmd->add_option("--etp", o->etp, "expert tensor parallel degree")->capture_default_str()->check(positive_number());
  cmd->add_option("--vpp", o->vpp, "virtual pipeline chunks per stage (interleaved 1F1B)")->capture_default_str()->check(positive_number());
  cmd->add_option("--mbs", o->mbs, "micro-batch size")->capture_default_str()->check(positive_number());
  cmd->add_option("--zero", o->zero, "ZeRO stage: 0 none, 1 optimizer (Megatron distributed optimizer), 2 + grads, 3 + params")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  cmd->add_option("--optimizer-shard", o->optimizer_shard, "ZeRO shard group size (default: all of DP x CP)")->check(non_negative_number());
  cmd->add_option("--recompute", o->recompute, "activation recompute: off, selective or full")->capture_default_str();
  cmd->add_flag("--sp", o->sp, "sequence parallelism (shards the TP-replicated activations)");
  cmd->add_flag("--explain", o->explain_flag, "print each memory term of one stage (the peak one unless --explain-stage) with its formula and inputs");
  cmd->add_option("--explain-stage", o->explain, "the stage --explain prints")->check(non_negative_number());
  return [o]() {
    std::string data = io::data_dir();
    model::Catalog catalog = model::load_catalog(data);
    model::Model model = model::resolve(model::load_model(o->job.model, data), catalog.records, catalog.profiles);
    hardware::Hardware hw = hardware::load_hardware(o->job.hardware, data);
    plan::Training training = training_from(o->job);
    plan::Layout l;
    l.tp = o->tp;
    l.pp = o->pp;
    l.cp = o->cp;
    l.ep = o->ep;
    l.etp = o->etp;
    l.vpp = o->vpp;
    l.mbs = o->mbs;
    l.zero = o->zero;
    l.optimizer_shard = o->optimizer_shard;
    l.sp = o->sp;
    l.cp_algo = o->cp_algo == "ring" ? plan::CpAlgo::Ring : plan::CpAlgo::AllToAll;
    l.recompute = plan::parse_recompute(o->recompute, "--recompute");
    plan::derive_data_parallel(l, o->job.devices, o->job.global_batch, "--devices", "--global-batch");
    auto violations = plan::check_layout(model, l, training, o->job.devices);
    if (!violations.empty()) fail("layout", "{}: {}", violations.front().rule, violations.front().detail);
    double capacity = o->job.memory_limit_gib > 0 ? o->job.memory_limit_gib * 1073741824.0 : hw.memory_bytes;
    cost::MemoryEstimate mem = cost::estimate_memory(model, l, training, capacity);
    cost::StepTime time = cost::estimate_time(model, l, training, hw, mem, overlap_from(o->job));

    std::string out;
    if (o->job.format == "json") {
      nlohmann::json j = io::memory_json(model, l, mem);
      j["hardware"] = hw.id;
      j["devices"] = o->job.devices;
      cost::add_time_json(j, time);
      out = j.dump(2) + "\n";
    } else if (o->job.format == "csv") {
      out = "stage,layers,params,grads,optimizer,activations,buffers,reserve,optimizer_step,total\n";
      for (const auto& s : mem.stages) {
        out += fmt::format("{},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f}\n", s.stage, s.layers, s.params, s.grads, s.optimizer, s.activations,
                           s.buffers, s.reserve, s.optimizer_step, s.total());
      }
    } else {
      out = io::memory_table(model, l, mem, hw.name);
      out += cost::time_summary(time);
    }
    if (o->explain_flag || o->explain >= 0) {
      int explain = o->explain >= 0 ? o->explain : mem.peak_stage;
      if (explain >= l.pp) fail("--explain", "stage {} does not exist; PP is {}", explain, l.pp);
      std::string lines;
      for (const auto& line : cost::explain_stage(model, l, training, mem, explain)) lines += line + "\n";
      if (o->job.format == "table")
        out += "\n" + lines;
      else
        std::fputs(lines.c_str(), stderr);
    }
    emit(o->job.output, out);
  };
}

}  // namespace sapp::cli
