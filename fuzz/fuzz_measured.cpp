// libFuzzer target: measured per-stage peaks (`sapp balance decompose --measured`), read and decomposed.
#include "pipeline/decompose.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_measured(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) {
    sapp::balance::Measurements m = sapp::balance::measurements_from_json(tree, "fuzz.yaml");
    (void)sapp::balance::decompose(m);
  });
}
