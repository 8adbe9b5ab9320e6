#include <cstdio>

#include <unistd.h>

#include "app/app.hpp"
#include "cli/commands.hpp"
#include "cli/from.hpp"
#include "report/html.hpp"
#include "report/report.hpp"

namespace sapp::cli {

namespace {

// A balanced plan's layout with its stage split (layers per chunk and stage, the recomputed ones first).
}  // namespace

Command add_plan(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "search, then balance layers and recompute per pipeline stage for the best layouts and re-rank them on the balanced step; exit 3 if none fits");
  auto given = add_fields(*cmd, app::plan_fields());
  auto config = std::make_shared<std::string>();
  cmd->add_option("--config", *config, "YAML/JSON file of the same options; options given on the command line win")->type_name("PATH");
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("--quiet,-q", *quiet, "no progress line (there is none anyway when stderr is not a terminal)");
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "json"});
  auto html = std::make_shared<std::string>();
  cmd->add_option("--report", *html,
                  "also write a self-contained HTML report (plans, ranked layouts, time against memory with the Pareto front, rejections, memory per stage, "
                  "the balanced timeline) to this file")
      ->type_name("PATH");
  auto from = std::make_shared<From>();
  add_from(*cmd, *from);
  return [cmd, given, config, quiet, out, html, from]() {
    nlohmann::json values = given->values(*cmd);
    if (!config->empty()) values["config"] = *config;
    note_config_overrides(values);
    app::PlanRequest request;
    fill(request, *from, values);
    request.scatter = !html->empty();
    bool progress = !*quiet && isatty(fileno(stderr));
    if (progress) {
      request.progress = [](long long done, long long total) {
        std::fprintf(stderr, "\rsapp: balancing: %lld of %lld layouts done", done, total);
        std::fflush(stderr);
      };
    }
    report::PlanReport r = app::run_plan(request);
    warn(r.search.subject.warnings);
    if (progress) std::fprintf(stderr, "\r%40s\r", "");
    std::string text = out->format == "json" ? report::to_json(r).dump(2) + "\n" : report::to_table(r);
    emit(from->emit.empty() ? out->output : "-", text);
    // --emit writes the best plan: its layout and, when balanced, its layers and recompute per stage and chunk.
    if (!from->emit.empty() && !r.plans.empty()) emit_plan(*from, request.job, app::layout_with_split(r.plans.front()), out->output);
    if (!html->empty()) emit(*html, report::to_html(r.search, r.plans));
    return r.search.any_fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
