// libFuzzer target: manual balancer strategies (`sapp balance --manual`): read on their own (as `sapp check`
// does), then against the demo layers on 4 stages and simulated as `sapp balance` does.
#include "pipeline/manual.hpp"
#include "pipeline/schedule.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_manual(const std::uint8_t* data, std::size_t size) {
  static const sapp::balance::Problem problem = [] {
    sapp::balance::Problem p;
    p.layers = sapp::balance::read_layers(sapp::io::data_dir() + "/layers/demo.json");
    p.stages = 4;
    p.micro_batches = 8;
    return p;
  }();
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) {
    (void)sapp::balance::manual_from_json(tree, "fuzz.yaml", sapp::balance::manual_shape(tree, "fuzz.yaml"));
    for (const auto& strategy : sapp::balance::manual_from_json(tree, "fuzz.yaml", problem)) {
      sapp::balance::Assignment x = sapp::balance::from_framework(problem, strategy.bodies);
      (void)sapp::balance::evaluate(problem, x);
      (void)sapp::simulate::simulate(problem.schedule, problem.stages, problem.chunks, problem.micro_batches, sapp::balance::stage_times(problem, x));
    }
  });
}
