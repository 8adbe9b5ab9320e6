#include "app/app.hpp"
#include "cli/commands.hpp"
#include "report/balance.hpp"

namespace sapp::cli {

Command add_calibrate(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("calibrate", "fit a device's efficiency factors to measured step times; prints the efficiency block for its YAML");
  auto given = add_fields(*cmd, app::calibrate_fields());
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "json"});
  return [=]() {
    app::CalibrateRequest request;
    app::apply(request, given->values(*cmd), app::Source::CommandLine);
    report::CalibrateReport r = app::run_calibrate(request);
    emit(out->output, out->format == "json" ? report::to_json(r).dump(2) + "\n" : report::to_table(r));
    return int{app::kExitOk};
  };
}

}  // namespace sapp::cli
