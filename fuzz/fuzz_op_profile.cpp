// libFuzzer target: an op profile (data/op_profiles/*.yaml) read against the bundled op records.
#include "model/family.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_op_profile(const std::uint8_t* data, std::size_t size) {
  static const sapp::model::OpRecords records = sapp::model::load_op_records(sapp::io::data_dir() + "/op_records.yaml");
  return sapp::fuzz::read_input(data, size, "fuzz.yaml",
                                [](const nlohmann::json& tree) { (void)sapp::model::profile_from_json(tree, "fuzz.yaml", "fuzz", records); });
}
