#include "app/app.hpp"
#include "cli/commands.hpp"
#include "cli/from.hpp"
#include "report/report.hpp"

namespace sapp::cli {

Command add_estimate(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("estimate", "price one layout: per-stage memory by category, step time, MFU; exit 3 if it does not fit");
  auto given = add_fields(*cmd, app::estimate_fields());
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "json", "csv"});
  auto from = std::make_shared<From>();
  add_from(*cmd, *from);
  return [cmd, given, out, from]() {
    app::EstimateRequest request;
    require_emit_output(*from, out->output);
    fill(request, *from, given->values(*cmd));
    report::EstimateReport r = app::run_estimate(request);
    warn(r.subject.warnings);
    std::string text = out->format == "json" ? report::to_json(r).dump(2) + "\n" : out->format == "csv" ? report::to_csv(r) : report::to_table(r);
    // With --emit, --output receives the config and the report goes to stdout.
    emit(from->emit.empty() ? out->output : "-", text);
    emit_plan(*from, request.job, r.layout, out->output);
    return r.fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
