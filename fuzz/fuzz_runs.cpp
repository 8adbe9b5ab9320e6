// libFuzzer target: measured runs for `sapp calibrate --runs`, read against the bundled catalog.
#include "cost/calibrate.hpp"
#include "reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const sapp::model::Catalog catalog = sapp::model::load_catalog(sapp::io::data_dir());
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) { (void)sapp::cost::runs_from_json(tree, "fuzz.yaml", catalog); });
}
