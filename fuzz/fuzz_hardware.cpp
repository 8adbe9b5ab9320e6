// libFuzzer target: hardware YAML (data/hardware/*.yaml), then the link each group size and stride runs on.
#include "hardware/hardware.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_hardware(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) {
    sapp::hardware::Hardware hw = sapp::hardware::hardware_from_json(tree, "fuzz.yaml", "fuzz");
    for (long long n : {1LL, 2LL, 8LL, 64LL, 1024LL}) {
      (void)hw.ring_link(n, 1);
      (void)hw.ring_link(n, 8);
      (void)hw.all_to_all(n, 1);
      (void)hw.all_to_all(n, 8);
    }
  });
}
