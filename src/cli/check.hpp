// cli/check: `sapp check FILE [--kind K]` validates one data file on its own, with the same readers and range
// checks the commands use, and prints "FILE: ok (<kind>)" or the one-line error (exit 1).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"

namespace sapp::cli {

Run add_check(CLI::App& app);

// The kind of data file `tree` holds, from its keys ("" when it cannot tell): hardware, model, op-records,
// op-profile, layers, manual, measured, search or runs.
std::string detect_kind(const nlohmann::json& tree);
// Reads `tree` (from `file`) as a `kind` file; throws sapp::Error naming file, key and value when it is not one.
// Models, op profiles and measured runs are checked against the catalog in `data_dir`.
void check_tree(const nlohmann::json& tree, const std::string& file, const std::string& kind, const std::string& data_dir);

}  // namespace sapp::cli
