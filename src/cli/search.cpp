#include <cstdio>

#include <unistd.h>

#include "app/app.hpp"
#include "cli/commands.hpp"
#include "cli/from.hpp"
#include "cli/ranking.hpp"
#include "report/html.hpp"
#include "report/report.hpp"

namespace sapp::cli {

nlohmann::json RankingOptions::values(const CLI::App& cmd) const {
  nlohmann::json values = given->values(cmd);
  if (!config.empty()) values["config"] = config;
  note_config_overrides(values);
  return values;
}

bool RankingOptions::progress() const { return !quiet && isatty(fileno(stderr)) != 0; }

Command add_search(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("search", "rank every parallel layout by step time (each dimension: one value, a list like 1,2,4, or auto); exit 3 if none fits");
  auto o = add_ranking_options(*cmd, app::search_fields(),
                               {{"table", "json", "csv"},
                                "YAML/JSON file of the same options (model, devices, tp, ... at the top or dimensions under `search:`); options given on the "
                                "command line win",
                                "also write a self-contained HTML report (ranked table, time against memory with the Pareto front, rejections, the best "
                                "layout's memory and time) to this file"});
  return [cmd, o]() {
    app::SearchRequest request;
    require_emit_output(o->from, o->out.output);
    fill(request, o->from, o->values(*cmd));
    keep_to_emit(o->from, request.job, request.space);
    request.scatter = !o->html.empty();
    bool progress = o->progress();
    if (progress) {
      request.progress = [](long long done, long long total) {
        std::fprintf(stderr, "\rsapp: searching: %lld of %lld candidates (%.0f%%)", done, total,
                     total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0);
        std::fflush(stderr);
      };
    }
    report::SearchReport r = app::run_search(request);
    warn(r.subject.warnings);
    if (progress && r.seconds > 1.0) std::fprintf(stderr, "\n");
    const std::string& format = o->out.format;
    std::string text = format == "json" ? report::to_json(r).dump(2) + "\n" : format == "csv" ? report::to_csv(r) : report::to_table(r);
    emit(o->from.emit.empty() ? o->out.output : "-", text);
    // --emit writes the first candidate.
    if (!o->from.emit.empty() && !r.rows.empty()) emit_plan(o->from, request.job, r.rows.front().candidate.layout, o->out.output);
    if (!o->html.empty()) emit(o->html, report::to_html(r));
    return r.any_fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
