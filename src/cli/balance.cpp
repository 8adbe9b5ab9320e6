#include <cstdio>

#include "app/app.hpp"
#include "cli/commands.hpp"
#include "report/balance.hpp"

namespace sapp::cli {

Command add_balance(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("balance",
                                     "pipeline balancing: layers and recompute per stage and chunk by simulated step time, with a lower bound (proved optimal "
                                     "when met); schedule simulation and SVG; exit 3 if no plan fits");
  auto given = add_fields(*cmd, app::balance_fields());
  auto out = std::make_shared<Output>();
  add_output(*cmd, *out, {"table", "yaml", "json"});

  CLI::App* dec = cmd->add_subcommand("decompose", "recover per-layer memory terms from measured per-stage peaks (least squares)");
  auto dec_given = add_fields(*dec, app::decompose_fields());
  auto dec_out = std::make_shared<Output>();
  add_output(*dec, *dec_out, {"table", "json"});

  CLI::App* gd = cmd->add_subcommand("guide", "a first dry-run offset/recompute configuration that makes decompose solvable (YAML)");
  auto gd_given = add_fields(*gd, app::guide_fields());
  auto gd_out = std::make_shared<Output>();
  add_output(*gd, *gd_out, {"yaml"});

  return [=]() {
    if (dec->parsed()) {
      app::DecomposeRequest request;
      app::apply(request, dec_given->values(*dec), app::Source::CommandLine);
      report::DecomposeReport r = app::run_decompose(request);
      emit(dec_out->output, dec_out->format == "json" ? report::to_json(r).dump(2) + "\n" : report::to_table(r));
      return int{app::kExitOk};
    }
    if (gd->parsed()) {
      app::GuideRequest request;
      app::apply(request, gd_given->values(*gd), app::Source::CommandLine);
      emit(gd_out->output, report::to_yaml(app::run_guide(request)));
      return int{app::kExitOk};
    }
    app::BalanceRequest request;
    app::apply(request, given->values(*cmd), app::Source::CommandLine);
    report::BalanceReport r = app::run_balance(request);
    emit(out->output, out->format == "json" ? report::to_json(r).dump(2) + "\n" : out->format == "yaml" ? report::to_yaml(r) : report::to_table(r));
    if (r.fits()) return int{app::kExitOk};
    std::fprintf(stderr, "sapp: no plan of %lld layers over %d stages fits %g MB\n", static_cast<long long>(r.problem.layers.body_layers()), r.problem.stages,
                 r.problem.memory_limit_mb);
    return int{app::kExitDoesNotFit};
  };
}

}  // namespace sapp::cli
