// sapp: symbolic automatic parallel planner for LLM training. See README.md.
#include <cstdio>
#include <exception>
#include <set>
#include <string>

#include <fmt/format.h>

#include "app/app.hpp"
#include "cli/check.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::cli {

nlohmann::json Given::values(const CLI::App& cmd) const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, text] : texts) {
    if (cmd.count(app::where_of(app::Source::CommandLine, key)) > 0) j[key] = text;
  }
  for (const auto& [key, on] : flags) {
    if (cmd.count(app::where_of(app::Source::CommandLine, key)) > 0) j[key] = on;
  }
  return j;
}

std::string value_name(const std::string& key, const std::string& shown) {
  static const std::set<std::string> paths = {"layers", "svg", "manual", "measured", "runs", "emit_layers"};
  static const std::set<std::string> lists = {"recompute_kinds", "recompute_modules", "stage_layers", "stage_recompute"};
  static const std::set<std::string> numbers = {"memory_limit", "memory_limit_gib",     "reserve_gib",     "constant_memory",
                                                "time_limit",   "balance_time_limit_s", "capacity_factor", "moe_imbalance"};
  static const std::set<std::string> names = {"framework", "moe_dispatcher", "rank_order", "solver", "cp_algo", "recompute"};
  if (shown == "auto") return "LIST|auto";
  if (key == "model" || key == "hardware") return "NAME|PATH";
  if (names.count(key)) return "NAME";
  if (key.rfind("overlap_", 0) == 0) return "NUMBER";
  if (key == "interleave" || key == "recompute_num_layers") return "INT|auto";
  if (paths.count(key)) return "PATH";
  if (lists.count(key)) return "LIST";
  if (numbers.count(key)) return "NUMBER";
  if (shown.empty() || shown.find_first_not_of("0123456789") == std::string::npos) return "INT";
  if (shown.find_first_not_of("0123456789.e-+") == std::string::npos) return "NUMBER";
  return "TEXT";
}

void add_output(CLI::App& cmd, Output& o, const std::vector<std::string>& formats) {
  cmd.add_option("--format,-f", o.format, "output format")->check(CLI::IsMember(formats))->capture_default_str();
  cmd.add_option("--output,-o", o.output, "write the output to this file (atomically: nothing is left behind on an error) instead of stdout")
      ->type_name("PATH");
}

void emit(const std::string& output, const std::string& text) { io::write_atomic(output, text); }

void note_config_overrides(const nlohmann::json& values) {
  if (!values.contains("config")) return;
  std::string path = values.at("config").get<std::string>();
  nlohmann::json tree = io::read_tree(path);
  if (!tree.is_object()) return;  // app::apply refuses it with its reason
  for (const auto& [key, value] : values.items()) {
    std::string stated = tree.contains(key)                                                                            ? key
                         : tree.contains("search") && tree.at("search").is_object() && tree.at("search").contains(key) ? "search." + key
                                                                                                                       : "";
    if (key != "config" && !stated.empty()) {
      std::fprintf(stderr, "sapp: note: %s overrides %s: %s\n", app::where_of(app::Source::CommandLine, key).c_str(), path.c_str(), stated.c_str());
    }
  }
}

void warn(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "sapp: warning: %s\n", w.c_str());
}

}  // namespace sapp::cli

namespace {

// An error message as printed: cut as sapp::Error cuts its own (the command-line parser's and the standard
// library's messages may quote an argument whole too).
std::string printed(const char* message) { return sapp::cut_message(message); }

int run(int argc, char** argv) {
  CLI::App app{
      "sapp: symbolic automatic parallel planner for LLM training.\n"
      "Which parallel layout to run, how much memory each device uses, how fast a step is, and how to\n"
      "split layers and recompute across pipeline stages, all analytic and CPU-only.\n"
      "Exit codes: 0 an answer that fits, 1 bad input, 2 usage, 3 the layout does not fit (estimate), no\n"
      "layout fits (search, plan) or no plan fits (balance), 4 internal error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sapp 0.2.0");
  auto estimate = sapp::cli::add_estimate(app);
  auto search = sapp::cli::add_search(app);
  auto plan = sapp::cli::add_plan(app);
  auto balance = sapp::cli::add_balance(app);
  auto calibrate = sapp::cli::add_calibrate(app);
  auto check = sapp::cli::add_check(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "sapp: error: %s (see sapp --help)\n", printed(e.what()).c_str());
    return sapp::app::kExitUsage;
  }
  try {
    if (app.got_subcommand("check")) check();
    if (app.got_subcommand("estimate")) return estimate();
    if (app.got_subcommand("search")) return search();
    if (app.got_subcommand("plan")) return plan();
    if (app.got_subcommand("balance")) return balance();
    if (app.got_subcommand("calibrate")) return calibrate();
  } catch (const sapp::app::UsageError& e) {
    std::fprintf(stderr, "sapp: error: %s (see sapp <command> --help)\n", printed(e.what()).c_str());
    return sapp::app::kExitUsage;
  }
  return sapp::app::kExitOk;
}

}  // namespace

// Bad input and internal errors, wherever they are thrown: in a command, or while the commands' options are built
// (they read data files: framework names, bundled devices), so that a missing or broken data directory is bad input
// too, not an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const sapp::Error& e) {
    std::fprintf(stderr, "sapp: error: %s\n", printed(e.what()).c_str());
    return sapp::app::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sapp: internal error: %s (please report it)\n", printed(e.what()).c_str());
    return sapp::app::kExitInternal;
  }
}
