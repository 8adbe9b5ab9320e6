// libFuzzer target: the op records file (data/op_records.yaml): ops, slots, parameter and work expressions.
#include "model/op_records.hpp"
#include "reader.hpp"
#include "targets.hpp"

int sapp::fuzz::target_op_records(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) { (void)sapp::model::op_records_from_json(tree, "fuzz.yaml"); });
}
