#include "app/app.hpp"
#include "cli/commands.hpp"
#include "report/report.hpp"

namespace sapp::cli {

Command add_estimate(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("estimate", "price one layout: per-stage memory by category, step time, MFU; exit 3 if it does not fit");
  auto given = add_fields(*cmd, app::estimate_fields());
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "json", "csv"});
  return [cmd, given, out]() {
    app::EstimateRequest request;
    app::apply(request, given->values(*cmd), app::Source::CommandLine);
    report::EstimateReport r = app::run_estimate(request);
    std::string text = out->format == "json" ? report::to_json(r).dump(2) + "\n" : out->format == "csv" ? report::to_csv(r) : report::to_table(r);
    emit(out->output, text);
    return r.fits() ? app::kExitOk : app::kExitDoesNotFit;
  };
}

}  // namespace sapp::cli
