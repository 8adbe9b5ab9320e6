// libFuzzer target: the balancer's layers JSON (layers_description with HEAD, BODY and TAIL).
#include "pipeline/layers.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_layers(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_input(data, size, "fuzz.json", [](const nlohmann::json& tree) {
    sapp::balance::LayerSet set = sapp::balance::layers_from_json(tree, "fuzz.json");
    (void)set.body_layers();
  });
}
