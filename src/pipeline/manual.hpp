// pipeline/manual: hand-written balancer strategies (`sapp balance --manual FILE`), in the training YAML's own keys
// (offset, recompute, select_recompute, select_comm_recompute), read and checked against the problem they are
// simulated on. Lists are per stage (one list per chunk with interleave); true means every layer of the stage,
// false or 0 none; several BODY types take a mapping from each BODY name to its array.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/solver.hpp"

namespace sapp::balance {

struct ManualStrategy {
  std::string name;
  std::vector<balance::FrameworkStrategy> bodies;  // one per BODY type of the problem, in model order
  bool show = false;                               // the reference's `show: true`: draw the strategy's simulated schedule
  std::string file_name;                           // where to draw it (default <name>.svg)
};

// Reads every strategy of `tree` for problem `p` (its stages, chunks and BODY names). Counts are range-checked
// (core/units.hpp): offsets within +-1e5 layers, recompute counts from 0 to 1e5 layers.
std::vector<ManualStrategy> manual_from_json(const nlohmann::json& tree, const std::string& file, const balance::Problem& p);

// The problem shape a manual file states on its own (for `sapp check`): stages and chunks from its first list,
// BODY names from its first per-BODY mapping. The file is then read against that shape with manual_from_json.
balance::Problem manual_shape(const nlohmann::json& tree, const std::string& file);

}  // namespace sapp::balance
