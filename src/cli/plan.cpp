#include <cstdio>

#include <unistd.h>

#include "app/app.hpp"
#include "cli/commands.hpp"
#include "cli/from.hpp"
#include "cli/ranking.hpp"
#include "report/html.hpp"
#include "report/report.hpp"

namespace sapp::cli {

Command add_plan(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "search, then balance layers and recompute per pipeline stage for the best layouts and re-rank them on the balanced step; exit 3 if none fits");
  auto o = add_ranking_options(*cmd, app::plan_fields(),
                               {{"table", "json"},
                                "YAML/JSON file of the same options; options given on the command line win",
                                "also write a self-contained HTML report (plans, ranked layouts, time against memory with the Pareto front, rejections, "
                                "memory per stage, the balanced timeline) to this file"});
  return [cmd, o]() {
    app::PlanRequest request;
    require_emit_output(o->from, o->out.output);
    fill(request, o->from, o->values(*cmd));
    request.recompute_stated = keep_to_emit(o->from, request.job, request.space).recompute;
    request.scatter = !o->html.empty();
    bool progress = o->progress();
    if (progress) {
      request.progress = [](long long done, long long total) {
        std::fprintf(stderr, "\rsapp: balancing: %lld of %lld layouts done", done, total);
        std::fflush(stderr);
      };
    }
    report::PlanReport r = app::run_plan(request);
    warn(r.search.subject.warnings);
    if (progress) std::fprintf(stderr, "\r%40s\r", "");
    std::string text = o->out.format == "json" ? report::to_json(r).dump(2) + "\n" : report::to_table(r);
    emit(o->from.emit.empty() ? o->out.output : "-", text);
    // --emit writes the best plan: its layout and, when balanced, its layers and recompute per stage and chunk.
    if (!o->from.emit.empty() && !r.plans.empty()) emit_plan(o->from, request.job, app::layout_with_split(r.plans.front()), o->out.output);
    if (!o->html.empty()) emit(o->html, report::to_html(r.search, r.plans));
    return r.search.any_fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
