// cli/from: --from FILE (a framework config filling the request), --from-format, and --emit FORMAT (the
// plan written in a framework's own format), shared by estimate, search and plan.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/request.hpp"
#include "config/config.hpp"
#include "search/search.hpp"

namespace sapp::cli {

struct From {
  std::string file;
  std::string format;  // empty: detected
  std::string emit;    // empty: no config written
  std::optional<config::Loaded> loaded;
};

void add_from(CLI::App& cmd, From& from);

// Fills the request from --from (if given) and the command line's values, printing the unused keys, the
// reader's warnings and each override on stderr.
void fill(app::EstimateRequest& request, From& from, const nlohmann::json& values);
void fill(app::SearchRequest& request, From& from, const nlohmann::json& values);
void fill(app::PlanRequest& request, From& from, const nlohmann::json& values);

// Writes the plan as --emit asks: to `output` (stdout for "-"). No-op without --emit.
// With --emit, the search keeps to the ZeRO stages, sequence parallelism, CP algorithms, TP and PP degrees and
// recompute modes the format can state (AutoModel with a vision model: PP 1; a note says so;
// a usage error when none of the values given can be). Returns what the format can state (everything without
// --emit): `plan` keeps every layer's recompute when the format states one mode for all.
config::Expressible keep_to_emit(const From& from, const app::JobRequest& job, search::Space& space);
// --emit needs --output (the report goes to stdout); a usage error otherwise.
void require_emit_output(const From& from, const std::string& output);
void emit_plan(const From& from, const app::JobRequest& job, const plan::Layout& layout, const std::string& output);

}  // namespace sapp::cli
