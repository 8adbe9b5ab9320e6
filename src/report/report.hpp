// io/report: machine-readable (JSON) and human (table) renderings of estimates, shared by the CLI and bindings.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cost/memory.hpp"

namespace sapp::io {

nlohmann::json layout_json(const plan::Layout& layout);
nlohmann::json memory_json(const model::Model& model, const plan::Layout& layout, const cost::MemoryEstimate& estimate);
std::string memory_table(const model::Model& model, const plan::Layout& layout, const cost::MemoryEstimate& estimate, const std::string& hardware_name);
std::string gib(double bytes);

}  // namespace sapp::io
