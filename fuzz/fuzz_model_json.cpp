// libFuzzer target: a model config in JSON (HF config.json), read and resolved against the bundled op profiles.
#include "model/family.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_model_json(const std::uint8_t* data, std::size_t size) {
  static const sapp::model::Catalog catalog = sapp::model::load_catalog(sapp::io::data_dir());
  return sapp::fuzz::read_input(data, size, "fuzz.json", [](const nlohmann::json& tree) {
    sapp::model::Model m = sapp::model::resolve(sapp::model::model_from_json(tree, "fuzz.json"), catalog.records, catalog.profiles);
    (void)m.params();
  });
}
