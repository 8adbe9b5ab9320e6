#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "hardware/hardware.hpp"
#include "report/report.hpp"
#include "search/search.hpp"

namespace sapp::cli {

namespace {

struct SearchOptions {
  JobOptions job;
  std::string config;
  std::string tp = "auto", pp = "auto", cp = "auto", ep = "auto", etp = "auto", vpp = "auto", mbs = "auto", zero = "auto";
  std::string sp = "auto", cp_algo = "auto", recompute = "auto";
  int optimizer_shard = 0;
  bool allow_tp_across_nodes = false;
  int top = 10;
  int threads = 0;
  bool quiet = false;
};

std::string breakdown_cell(const cost::Breakdown& b) {
  return fmt::format("comp {:.2f} rc {:.2f} tp {:.2f} cp {:.2f} ep {:.2f} dp {:.2f} pp {:.2f} bub {:.2f}", b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s,
                     b.ep_comm_s, b.dp_comm_s, b.pp_comm_s, b.bubble_s);
}

}  // namespace

Run add_search(CLI::App& app) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* cmd = app.add_subcommand("search", "rank every parallel layout by step time (each dimension: one value, a list like 1,2,4, or auto)");
  add_job_options(*cmd, o->job, true);
  cmd->add_option("--config", o->config,
                  "search YAML: a `search:` mapping of dimensions (tp, pp, cp, ep, etp, vpp, mbs, zero, sp, cp_algo, recompute, ...); options given on the "
                  "command line win");
  cmd->add_option("--tp", o->tp, "tensor parallel degrees")->capture_default_str();
  cmd->add_option("--pp", o->pp, "pipeline parallel degrees")->capture_default_str();
  cmd->add_option("--cp", o->cp, "context parallel degrees")->capture_default_str();
  cmd->add_option("--ep", o->ep, "expert parallel degrees")->capture_default_str();
  cmd->add_option("--etp", o->etp, "expert tensor parallel degrees")->capture_default_str();
  cmd->add_option("--vpp", o->vpp, "virtual pipeline chunks")->capture_default_str();
  cmd->add_option("--mbs", o->mbs, "micro-batch sizes")->capture_default_str();
  cmd->add_option("--zero", o->zero, "ZeRO stages (0-3)")->capture_default_str();
  cmd->add_option("--sp", o->sp, "sequence parallelism: on, off or auto")->check(CLI::IsMember({"on", "off", "auto"}))->capture_default_str();
  cmd->add_option("--cp-algo", o->cp_algo, "ring, all2all or auto")->check(CLI::IsMember({"ring", "all2all", "auto"}))->capture_default_str();
  cmd->add_option("--recompute", o->recompute, "recompute modes: off, selective, full, a list, or auto")->capture_default_str();
  cmd->add_option("--optimizer-shard", o->optimizer_shard, "ZeRO shard group size (default: all of DP x CP)")->check(non_negative_number());
  cmd->add_flag("--allow-tp-across-nodes", o->allow_tp_across_nodes, "let TP groups span nodes");
  cmd->add_option("--top,-k", o->top, "show the K fastest layouts")->capture_default_str()->check(positive_number());
  cmd->add_option("--threads,-j", o->threads, "worker threads (default: all cores); results do not depend on it")->check(non_negative_number());
  cmd->add_flag("--quiet,-q", o->quiet, "no progress line");
  return [o, cmd]() {
    std::string data = io::data_dir();
    model::Catalog catalog = model::load_catalog(data);
    model::Model model = model::resolve(model::load_model(o->job.model, data), catalog.records, catalog.profiles);
    hardware::Hardware hw = hardware::load_hardware(o->job.hardware, data);
    plan::Training training = training_from(o->job);
    search::Space space;
    if (!o->config.empty()) {
      nlohmann::json tree = io::read_tree(o->config);
      io::Reader rd{tree, o->config, ""};
      rd.only({"search"});
      if (!rd.has("search")) rd.bad("search", "a mapping of dimensions");
      search::space_from_json(tree.at("search"), o->config, space);
    }
    auto given = [&](const char* name) { return cmd->count(name) > 0; };
    auto dim = [&](const char* name, const std::string& text, search::Dim& out, int lowest = 1, int highest = 1000000) {
      if (given(name) || o->config.empty()) out = search::parse_dim(text, name, lowest, highest);
    };
    dim("--tp", o->tp, space.tp);
    dim("--pp", o->pp, space.pp);
    dim("--cp", o->cp, space.cp);
    dim("--ep", o->ep, space.ep);
    dim("--etp", o->etp, space.etp);
    dim("--vpp", o->vpp, space.vpp);
    dim("--mbs", o->mbs, space.mbs);
    dim("--zero", o->zero, space.zero, 0, 3);
    if (given("--sp") || o->config.empty()) {
      if (o->sp == "on")
        space.sp = std::vector<bool>{true};
      else if (o->sp == "off")
        space.sp = std::vector<bool>{false};
      else
        space.sp.reset();
    }
    if (given("--cp-algo") || o->config.empty()) {
      if (o->cp_algo == "ring")
        space.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::Ring};
      else if (o->cp_algo == "all2all")
        space.cp_algo = std::vector<plan::CpAlgo>{plan::CpAlgo::AllToAll};
      else
        space.cp_algo.reset();
    }
    if (given("--recompute") || o->config.empty()) {
      nlohmann::json modes = nlohmann::json::array();
      for (const std::string& mode : io::split_commas(o->recompute)) modes.push_back(mode);
      space.recompute = plan::read_recompute_modes(modes.size() == 1 ? modes[0] : modes, "--recompute");
    }
    if (given("--optimizer-shard")) space.optimizer_shard = o->optimizer_shard;
    if (given("--allow-tp-across-nodes")) space.allow_tp_across_nodes = true;
    double capacity = o->job.memory_limit_gib > 0 ? o->job.memory_limit_gib * 1073741824.0 : hw.memory_bytes;
    search::Options opts;
    opts.overlap = overlap_from(o->job);
    opts.threads = o->threads > 0 ? o->threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (!o->quiet) {
      opts.progress = [](long long done, long long total) {
        std::fprintf(stderr, "\rsapp: searching: %lld of %lld candidates (%.0f%%)", done, total,
                     total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
        std::fflush(stderr);
      };
    }
    search::Result r = search::search(model, space, training, hw, o->job.devices, capacity, opts);
    if (!o->quiet && r.seconds > 1.0) std::fprintf(stderr, "\n");
    std::size_t shown = std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(o->top));
    long long rejected_total = 0;
    for (const auto& [reason, count] : r.rejected) rejected_total += count;
    std::string out;
    if (o->job.format == "json") {
      nlohmann::json cands = nlohmann::json::array();
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& c = r.ranked[i];
        nlohmann::json j = io::memory_json(model, c.layout, cost::estimate_memory(model, c.layout, training, capacity));
        cost::add_time_json(j, c.time);
        j["rank"] = i + 1;
        cands.push_back(j);
      }
      nlohmann::json rej = nlohmann::json::object();
      for (const auto& [reason, count] : r.rejected) rej[reason] = count;
      out = nlohmann::json{{"model", model.spec.name}, {"hardware", hw.id},           {"devices", o->job.devices},  {"global_batch", training.global_batch},
                           {"seq", training.seq},      {"candidates", cands},         {"fitting", r.ranked.size()}, {"rejected", rej},
                           {"evaluated", r.evaluated}, {"search_seconds", r.seconds}, {"threads", opts.threads}}
                .dump(2) +
            "\n";
    } else if (o->job.format == "csv") {
      out =
          "rank,dp,tp,sp,pp,vpp,cp,cp_algo,ep,etp,mbs,micro_batches,zero,recompute,peak_memory_bytes,step_time_s,tokens_per_s_per_device,mfu,compute_s,"
          "recompute_s,tp_comm_s,cp_comm_s,ep_comm_s,dp_comm_s,pp_comm_s,bubble_s,optimizer_s\n";
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& c = r.ranked[i];
        const plan::Layout& l = c.layout;
        const auto& b = c.time.breakdown;
        out += fmt::format(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0f},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", i + 1,
            l.dp, l.tp, l.sp ? 1 : 0, l.pp, l.vpp, l.cp, to_string(l.cp_algo), l.ep, l.etp, l.mbs, l.micro_batches, l.zero, to_string(l.recompute),
            c.peak_memory_bytes, c.time.step_s, c.time.tokens_per_s_per_device, c.time.mfu, b.compute_s, b.recompute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s,
            b.dp_comm_s, b.pp_comm_s, b.bubble_s, b.optimizer_s);
      }
    } else {
      out += fmt::format("{} on {} x {}, global batch {} x {} tokens: {} candidates, {} fit, {} rejected, {:.2f} s on {} thread(s)\n", model.spec.name,
                         o->job.devices, hw.name, training.global_batch, training.seq, r.evaluated, r.ranked.size(), rejected_total, r.seconds, opts.threads);
      std::string reasons;
      std::vector<std::pair<long long, std::string>> sorted;
      for (const auto& [reason, count] : r.rejected) sorted.emplace_back(-count, reason);
      std::sort(sorted.begin(), sorted.end());
      for (const auto& [neg, reason] : sorted) reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", -neg, reason);
      if (!reasons.empty()) out += fmt::format("rejected: {}\n", reasons);
      out += fmt::format("{:>4}  {:<52} {:>10} {:>9} {:>11} {:>6}  {}\n", "rank", "layout", "peak GiB", "step s", "tok/s/dev", "MFU", "breakdown (s)");
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& c = r.ranked[i];
        out += fmt::format("{:>4}  {:<52} {:>10} {:>9.3f} {:>11.0f} {:>5.1f}%  {}\n", i + 1, c.layout.describe(),
                           fmt::format("{}/{}", io::gib(c.peak_memory_bytes), io::gib(capacity)), c.time.step_s, c.time.tokens_per_s_per_device,
                           100.0 * c.time.mfu, breakdown_cell(c.time.breakdown));
      }
      if (r.ranked.empty()) out += "no layout fits; see the rejection counts above\n";
    }
    emit(o->job.output, out);
  };
}

}  // namespace sapp::cli
