// libFuzzer target: measured runs for `sapp calibrate --runs`, and the validation set of published runs (`sapp check`
// on validation/runs.yaml), each read from the same input against the bundled catalog.
#include "cost/calibrate.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_runs(const std::uint8_t* data, std::size_t size) {
  static const sapp::model::Catalog catalog = sapp::model::load_catalog(sapp::io::data_dir());
  sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) { (void)sapp::cost::runs_from_json(tree, "fuzz.yaml", catalog); });
  return sapp::fuzz::read_input(data, size, "fuzz.yaml",
                                [](const nlohmann::json& tree) { (void)sapp::cost::published_runs_from_json(tree, "fuzz.yaml", catalog); });
}
