// cli/ranking: the options search and plan share (--config, --quiet, --format/--output, --report, --from/--emit)
// and how they become the request's values and a progress decision.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/from.hpp"

namespace sapp::cli {

struct RankingOptions {
  std::shared_ptr<Given> given;
  std::string config;
  bool quiet = false;
  Output out;
  std::string html;
  From from;

  // The command line's values with --config added, noting on stderr each option the file states too.
  [[nodiscard]] nlohmann::json values(const CLI::App& cmd) const;
  // A progress line only on a terminal and without --quiet.
  [[nodiscard]] bool progress() const;
};

struct RankingHelp {
  std::vector<std::string> formats;
  std::string config;  // --config's help
  std::string report;  // --report's help
};

template <typename Request>
std::shared_ptr<RankingOptions> add_ranking_options(CLI::App& cmd, const std::vector<app::Field<Request>>& fields, const RankingHelp& help) {
  auto o = std::make_shared<RankingOptions>();
  o->given = add_fields(cmd, fields);
  cmd.add_option("--config", o->config, help.config)->type_name("PATH");
  cmd.add_flag("--quiet,-q", o->quiet, "no progress line (there is none anyway when stderr is not a terminal)");
  add_output(cmd, o->out, help.formats);
  cmd.add_option("--report", o->html, help.report)->type_name("PATH");
  add_from(cmd, o->from);
  return o;
}

}  // namespace sapp::cli
