#include <cstdio>

#include <unistd.h>

#include <fmt/format.h>

#include "app/app.hpp"
#include "cli/commands.hpp"
#include "cli/from.hpp"
#include "core/files.hpp"
#include "report/html.hpp"
#include "report/report.hpp"

namespace sapp::cli {

Command add_search(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("search", "rank every parallel layout by step time (each dimension: one value, a list like 1,2,4, or auto); exit 3 if none fits");
  auto given = add_fields(*cmd, app::search_fields());
  auto config = std::make_shared<std::string>();
  cmd->add_option("--config", *config,
                  "YAML/JSON file of the same options (model, devices, tp, ... at the top or dimensions under `search:`); options given on the command "
                  "line win")
      ->type_name("PATH");
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("--quiet,-q", *quiet, "no progress line (there is none anyway when stderr is not a terminal)");
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "json", "csv"});
  auto html = std::make_shared<std::string>();
  cmd->add_option("--report", *html,
                  "also write a self-contained HTML report (ranked table, time against memory with the Pareto front, rejections, the best layout's memory and "
                  "time) to this file")
      ->type_name("PATH");
  auto from = std::make_shared<From>();
  add_from(*cmd, *from);
  return [cmd, given, config, quiet, out, html, from]() {
    nlohmann::json values = given->values(*cmd);
    if (!config->empty()) values["config"] = *config;
    note_config_overrides(values);
    app::SearchRequest request;
    fill(request, *from, values);
    request.scatter = !html->empty();
    bool progress = !*quiet && isatty(fileno(stderr));
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
    std::string text = out->format == "json" ? report::to_json(r).dump(2) + "\n" : out->format == "csv" ? report::to_csv(r) : report::to_table(r);
    emit(from->emit.empty() ? out->output : "-", text);
    // --emit writes the first candidate.
    if (!from->emit.empty() && !r.rows.empty()) emit_plan(*from, request.job, r.rows.front().candidate.layout, out->output);
    if (!html->empty()) emit(*html, report::to_html(r));
    return r.any_fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
