#include "report/report.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace sapp::report {

using nlohmann::json;

std::string gib(double bytes) { return fmt::format("{:.2f}", bytes / 1073741824.0); }

json layout_json(const plan::Layout& l) {
  return json{{"dp", l.dp},
              {"tp", l.tp},
              {"sp", l.sp},
              {"pp", l.pp},
              {"vpp", l.vpp},
              {"cp", l.cp},
              {"cp_algo", plan::to_string(l.cp_algo)},
              {"ep", l.ep},
              {"etp", l.etp},
              {"micro_batch_size", l.mbs},
              {"micro_batches", l.micro_batches},
              {"zero", l.zero},
              {"optimizer_shard", l.optimizer_shard},
              {"recompute", plan::to_string(l.recompute)}};
}

namespace {

// Word-wraps `text` to 120 columns, continuation lines indented by `indent` spaces.
std::string wrap(const std::string& text, std::size_t indent) {
  std::string out;
  std::size_t line = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    if (line > 0 && line + 1 + word.size() > 120) {
      out += '\n';
      out.append(indent, ' ');
      line = indent;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    start = end + 1;
  }
  return out + "\n";
}

json params_json(const model::ParamCounts& p) {
  return json{{"total", p.total},   {"active", p.active}, {"embedding", p.embedding}, {"head", p.head},
              {"layers", p.layers}, {"mtp", p.mtp},       {"vision", p.vision}};
}

json stages_json(const cost::MemoryEstimate& est) {
  json stages = json::array();
  for (const auto& s : est.stages) {
    stages.push_back(json{{"stage", s.stage},
                          {"layers", s.layers},
                          {"memory_bytes",
                           {{"params", s.params},
                            {"grads", s.grads},
                            {"optimizer", s.optimizer},
                            {"activations", s.activations},
                            {"buffers", s.buffers},
                            {"reserve", s.reserve},
                            {"optimizer_step", s.optimizer_step},
                            {"total", s.total()}}}});
  }
  return stages;
}

// The memory part of a layout's JSON, shared by estimate and each search row.
json memory_json(const Subject& subject, const plan::Layout& layout, const cost::MemoryEstimate& est) {
  return json{{"model", subject.model},
              {"arch", subject.arch},
              {"params", params_json(subject.params)},
              {"layout", layout_json(layout)},
              {"stages", stages_json(est)},
              {"peak_memory_bytes", est.peak_bytes},
              {"peak_stage", est.peak_stage},
              {"capacity_bytes", est.capacity_bytes},
              {"fits", est.fits()}};
}

// The largest exposed overhead of a step (not compute), e.g. "ep 0.59".
std::string main_overhead(const cost::Breakdown& b) {
  std::pair<double, const char*> terms[] = {{b.recompute_s, "recompute"}, {b.tp_comm_s, "tp"}, {b.cp_comm_s, "cp"},    {b.ep_comm_s, "ep"},
                                            {b.dp_comm_s, "dp"},          {b.pp_comm_s, "pp"}, {b.bubble_s, "bubble"}, {b.optimizer_s, "optimizer"}};
  auto most = std::max_element(std::begin(terms), std::end(terms), [](const auto& a, const auto& c) { return a.first < c.first; });
  return most->first > 0 ? fmt::format("{} {:.2f}", most->second, most->first) : std::string("-");
}

}  // namespace

json to_json(const EstimateReport& r) {
  json j = memory_json(r.subject, r.layout, r.memory);
  j["hardware"] = r.subject.hardware_id;
  j["devices"] = r.subject.devices;
  j["precision"] = r.subject.precision;
  j["validated"] = r.subject.validated;
  j["validation"] = r.subject.validation;
  if (!r.subject.warnings.empty()) j["warnings"] = r.subject.warnings;
  cost::add_time_json(j, r.time);
  if (!r.explain.empty()) j["explain"] = r.explain;
  if (!r.fits()) {
    json s = json::array();
    for (const auto& x : r.suggestions) {
      s.push_back(json{{"change", x.change}, {"layout", layout_json(x.layout)}, {"peak_memory_bytes", x.peak_memory_bytes}, {"step_time_s", x.step_time_s}});
    }
    j["suggestions"] = s;
  }
  return j;
}

std::string to_table(const EstimateReport& r) {
  const model::ParamCounts& p = r.subject.params;
  const cost::MemoryEstimate& est = r.memory;
  // Active per token counts the input embedding's rows too; the DeepSeek-V2/V3 papers and the gpt-oss card leave
  // them out (the second figure).
  std::string out =
      fmt::format("{} ({}): {:.2f} B parameters{}, {:.2f} B active ({:.2f} B without the input embedding)\n", r.subject.model, r.subject.arch, p.total / 1e9,
                  p.mtp > 0 ? fmt::format(" ({:.2f} B of them MTP)", p.mtp / 1e9) : "", p.active / 1e9, p.active_no_embedding / 1e9);
  out += fmt::format("layout: {}{}\n", r.layout.describe(), r.subject.precision == "BF16" ? "" : ", GEMMs in " + r.subject.precision);
  out += fmt::format("{:>5} {:>6} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}   (GiB per device)\n", "stage", "layers", "params", "grads", "optimizer",
                     "activations", "buffers", "reserve", "total");
  for (const auto& s : est.stages) {
    out += fmt::format("{:>5} {:>6} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}{}\n", s.stage, s.layers, gib(s.params), gib(s.grads), gib(s.optimizer),
                       gib(s.activations), gib(s.buffers), gib(s.reserve), gib(s.total()), s.stage == est.peak_stage ? "  <- peak" : "");
  }
  out += fmt::format("peak {} GiB on stage {} of {} GiB ({}): {}\n", gib(est.peak_bytes), est.peak_stage, gib(est.capacity_bytes), r.subject.hardware_name,
                     est.fits() ? "fits" : "DOES NOT FIT");
  const cost::StageMemory& peak = est.stages.at(static_cast<std::size_t>(est.peak_stage));
  if (peak.optimizer_step > peak.activations + peak.buffers) {
    out += fmt::format("stage {} peaks in the optimizer step: its fp32 gradient copy ({} GiB) outweighs activations + buffers ({} GiB)\n", peak.stage,
                       gib(peak.optimizer_step), gib(peak.activations + peak.buffers));
  }
  out += cost::time_summary(r.time);
  if (!r.subject.validated) out += wrap("not validated: " + r.subject.validation, 2);
  if (!r.fits()) {
    if (r.suggestions.empty()) {
      out += "no change tried (recompute, ZeRO stage, PP, micro-batch size, CP, TP, devices; alone or two at once) makes it fit\n";
    } else {
      out += "changes that make it fit, each re-priced (fastest first):\n";
      for (const auto& s : r.suggestions) {
        out += fmt::format("  {:<34} peak {:>7} GiB  step {:.3f} s  ({})\n", s.change, gib(s.peak_memory_bytes), s.step_time_s, s.layout.describe());
      }
    }
  }
  if (!r.explain.empty()) {
    out += "\n";
    for (const auto& line : r.explain) out += line + "\n";
  }
  return out;
}

std::string to_csv(const EstimateReport& r) {
  std::string out = "stage,layers,params,grads,optimizer,activations,buffers,reserve,optimizer_step,total\n";
  for (const auto& s : r.memory.stages) {
    out += fmt::format("{},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f}\n", s.stage, s.layers, s.params, s.grads, s.optimizer, s.activations,
                       s.buffers, s.reserve, s.optimizer_step, s.total());
  }
  return out;
}

json to_json(const SearchReport& r, bool timing) {
  json cands = json::array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    json j = memory_json(r.subject, row.candidate.layout, row.memory);
    cost::add_time_json(j, row.candidate.time);
    j["rank"] = i + 1;
    j["twins"] = row.candidate.twins;
    cands.push_back(j);
  }
  json closest = json::array();
  for (const auto& o : r.closest) {
    closest.push_back(json{{"layout", layout_json(o.layout)},
                           {"peak_memory_bytes", o.peak_memory_bytes},
                           {"over_capacity_bytes", o.peak_memory_bytes - r.subject.capacity_bytes},
                           {"twins", o.twins}});
  }
  json j{{"model", r.subject.model},
         {"hardware", r.subject.hardware_id},
         {"devices", r.subject.devices},
         {"global_batch", r.subject.global_batch},
         {"seq", r.subject.seq},
         {"precision", r.subject.precision},
         {"capacity_bytes", r.subject.capacity_bytes},
         {"candidates", cands},
         {"fitting", r.fitting},
         {"rejected", r.rejected},
         {"evaluated", r.evaluated},
         {"folded", r.folded}};
  if (!r.any_fits()) j["closest"] = closest;
  if (!r.subject.warnings.empty()) j["warnings"] = r.subject.warnings;
  if (timing) {
    j["search_seconds"] = r.seconds;
    j["threads"] = r.threads;
  }
  return j;
}

namespace {

std::string rejections_line(const SearchReport& r) {
  std::vector<std::pair<long long, std::string>> sorted;
  for (const auto& [reason, count] : r.rejected) sorted.emplace_back(-count, reason);
  std::sort(sorted.begin(), sorted.end());
  // Wrapped to 120 columns, continuation lines indented under the first.
  std::string reasons;
  std::size_t line = 10;  // "rejected: "
  for (const auto& [neg, reason] : sorted) {
    std::string item = fmt::format("{} {}", -neg, reason);
    if (!reasons.empty()) {
      if (line + 2 + item.size() > 120) {
        reasons += ",\n          ";
        line = 10;
      } else {
        reasons += ", ";
        line += 2;
      }
    }
    reasons += item;
    line += item.size();
  }
  return reasons;
}

}  // namespace

std::string to_table(const SearchReport& r) {
  long long rejected_total = 0;
  for (const auto& [reason, count] : r.rejected) rejected_total += count;
  std::string out =
      fmt::format("{} on {} x {} ({} GiB each), global batch {} x {} tokens{}\n{} candidates, {} fit, {} rejected, {:.2f} s on {} thread(s)\n", r.subject.model,
                  r.subject.devices, r.subject.hardware_name, gib(r.subject.capacity_bytes), r.subject.global_batch, r.subject.seq,
                  r.subject.precision == "BF16" ? "" : ", GEMMs in " + r.subject.precision, r.evaluated, r.fitting, rejected_total, r.seconds, r.threads);
  std::string reasons = rejections_line(r);
  if (!reasons.empty()) out += fmt::format("rejected: {}\n", reasons);
  if (!r.any_fits()) {
    if (r.closest.empty() && r.evaluated > 0) {
      // Nothing was priced: every candidate broke a rule before its memory was counted (a stated degree that does
      // not divide the devices, EP beside DP, ...). Saying "does not fit" would send the user after memory.
      out += fmt::format("no layout is valid on {} devices: every candidate breaks a rule listed above (none was priced).\n", r.subject.devices);
      return out;
    }
    out += fmt::format("no layout fits in {} GiB per device.\n", gib(r.subject.capacity_bytes));
    if (!r.closest.empty()) {
      out += "closest (least memory):\n";
      for (const auto& o : r.closest) {
        out += fmt::format("  {:>8} GiB ({:+.2f} GiB over)  {}{}\n", gib(o.peak_memory_bytes), (o.peak_memory_bytes - r.subject.capacity_bytes) / 1073741824.0,
                           o.layout.describe(), o.twins > 1 ? fmt::format("  (and {} more of the same memory)", o.twins - 1) : std::string());
      }
    }
    return out;
  }
  // Fits a 120-column terminal: the layout column is as wide as the widest layout shown (at most 64).
  std::size_t width = 24;
  for (const auto& row : r.rows) width = std::max(width, row.candidate.layout.describe().size());
  width = std::min<std::size_t>(width, 64);
  out += fmt::format("{:>4}  {:<{}} {:>5} {:>6} {:>7} {:>9} {:>5}  {}\n", "rank", "layout", width, r.folded ? "twins" : "", "GiB", "step s", "tok/s/dev", "MFU",
                     "overhead s");
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const search::Candidate& c = r.rows[i].candidate;
    std::string layout = c.layout.describe();
    if (layout.size() > width) {
      out += fmt::format("{:>4}  {}\n", i + 1, layout);
      layout.clear();
    }
    out += fmt::format("{:>4}  {:<{}} {:>5} {:>6} {:>7.3f} {:>9.0f} {:>4.1f}%  {}\n", layout.empty() ? std::string() : std::to_string(i + 1), layout, width,
                       r.folded && c.twins > 1 ? fmt::format("x{}", c.twins) : std::string(), gib(c.peak_memory_bytes), c.time.step_s,
                       c.time.tokens_per_s_per_device, 100.0 * c.time.mfu, main_overhead(c.time.breakdown));
  }
  if (r.folded) out += "(twins: layouts of the same step time and peak memory folded into one row; --unfold lists them)\n";
  if (!r.subject.validated) out += wrap("not validated: " + r.subject.validation, 2);
  return out;
}

std::string to_csv(const SearchReport& r) {
  std::string out =
      "rank,dp,tp,sp,pp,vpp,cp,cp_algo,ep,etp,mbs,micro_batches,zero,recompute,peak_memory_bytes,step_time_s,tokens_per_s_per_device,mfu,compute_s,"
      "recompute_s,tp_comm_s,cp_comm_s,ep_comm_s,dp_comm_s,pp_comm_s,bubble_s,optimizer_s,twins\n";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& c = r.rows[i].candidate;
    const plan::Layout& l = c.layout;
    const auto& b = c.time.breakdown;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.0f},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{}\n",
                    i + 1, l.dp, l.tp, l.sp ? 1 : 0, l.pp, l.vpp, l.cp, plan::to_string(l.cp_algo), l.ep, l.etp, l.mbs, l.micro_batches, l.zero,
                    plan::to_string(l.recompute), c.peak_memory_bytes, c.time.step_s, c.time.tokens_per_s_per_device, c.time.mfu, b.compute_s, b.recompute_s,
                    b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.dp_comm_s, b.pp_comm_s, b.bubble_s, b.optimizer_s, c.twins);
  }
  return out;
}

json to_json(const PlanReport& r, bool timing) {
  json plans = json::array();
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    json stages = json::array();
    for (const auto& s : p.stages) {
      stages.push_back(
          {{"stage", s.stage}, {"layers", s.layers}, {"recompute", s.recompute}, {"peak_memory_bytes", s.peak_memory_bytes}, {"time_s", s.time_s}});
    }
    json j{{"rank", i + 1},
           {"layout", layout_json(p.layout)},
           {"step_time_s", p.step_time_s},
           {"even_split_step_time_s", p.even_step_time_s},
           {"estimate_step_time_s", p.estimate_step_time_s},
           {"peak_memory_bytes", p.peak_memory_bytes},
           {"fits", p.fits},
           {"balanced", p.balanced},
           {"status", p.status},
           {"stages", stages}};
    if (!p.framework.is_null()) j["framework"] = p.framework;
    plans.push_back(j);
  }
  json j = to_json(r.search, timing);
  j["plans"] = plans;
  if (timing) j["balance_seconds"] = r.balance_seconds;
  return j;
}

std::string to_table(const PlanReport& r) {
  std::string out = to_table(r.search);
  if (r.plans.empty()) return out;
  out += fmt::format("\nbalanced plans (layers and recompute per stage and chunk; {} layouts, {:.2f} s):\n", r.plans.size(), r.balance_seconds);
  // A balanced plan's split and recompute are its own (listed per stage below for the best): the label shows the
  // degrees, not the split the search started from.
  auto label = [](const Plan& p) {
    plan::Layout l = p.layout;
    if (p.balanced) l.split.reset();
    return l.describe();
  };
  std::size_t width = 24;
  for (const auto& p : r.plans) width = std::max(width, label(p).size());
  width = std::min<std::size_t>(width, 64);
  out += fmt::format("{:>4}  {:<{}} {:>8} {:>8} {:>8} {:>6}  {}\n", "rank", "layout", width, "step s", "estim. s", "even s", "GiB", "balancer");
  for (std::size_t i = 0; i < r.plans.size(); ++i) {
    const Plan& p = r.plans[i];
    out += fmt::format("{:>4}  {:<{}} {:>8.3f} {:>8.3f} {:>8.3f} {:>6}  {}{}\n", i + 1, label(p), width, p.step_time_s, p.estimate_step_time_s,
                       p.even_step_time_s, gib(p.peak_memory_bytes), p.status, p.fits ? "" : " (DOES NOT FIT)");
  }
  out += "(step s: the balanced schedule simulated; estim. s: `sapp estimate` of the same split and recompute; even s: the search's even split)\n";
  const Plan& best = r.plans.front();
  out += fmt::format("\nbest plan: {}\n{:>5} {:>16} {:>9} {:>12}  {}\n", label(best), "stage", "layers per chunk", "peak GiB", "time s (mb)",
                     "recompute (layers per kind)");
  for (const auto& s : best.stages) {
    // Chunks that all hold the same layers under the same recompute are written once ("20x1", "each: none 1").
    const bool uniform = s.layers.size() > 1 && std::all_of(s.layers.begin(), s.layers.end(), [&](long long n) { return n == s.layers.front(); }) &&
                         std::all_of(s.recompute.begin(), s.recompute.end(), [&](const auto& m) { return m == s.recompute.front(); });
    auto kinds_of = [](const std::map<std::string, long long>& chunk) {
      std::string kinds;
      for (const auto& [kind, n] : chunk) {
        if (n > 0) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, n);
      }
      return kinds;
    };
    std::string layers, rc;
    if (uniform) {
      layers = fmt::format("{}x{}", s.layers.size(), s.layers.front());
      rc = "each: " + kinds_of(s.recompute.front());
    } else {
      for (long long n : s.layers) layers += fmt::format("{}{}", layers.empty() ? "" : "+", n);
      for (const auto& chunk : s.recompute) rc += fmt::format("{}{}", rc.empty() ? "" : " | ", kinds_of(chunk));
    }
    out += fmt::format("{:>5} {:>16} {:>9} {:>12.4f}  {}\n", s.stage, layers, gib(s.peak_memory_bytes), s.time_s, rc);
  }
  return out;
}

}  // namespace sapp::report
