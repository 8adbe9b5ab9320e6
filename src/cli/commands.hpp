// cli: the thin command line. Each subcommand's options are generated from its request's option table
// (app/request.hpp), the request is filled, the app entry point runs, and the report is rendered; nothing here
// computes an estimate.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/request.hpp"

namespace sapp::cli {

// A subcommand's action, run after parsing; returns the exit code (app::ExitCode).
using Command = std::function<int()>;
// Older subcommands that exit 0 unless they throw.
using Run = std::function<void()>;

// Option checks whose refusals read as a sentence ("--tp: 0 is not a positive number") rather than CLI11's
// range dump.
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v > 0)) return text + " is not a positive number";
        return {};
      },
      "POSITIVE");
}
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !(v >= 0)) return text + " is not a number >= 0";
        return {};
      },
      "NONNEGATIVE");
}

// The text of each option given on the command line, keyed by the request's field keys.
struct Given {
  std::map<std::string, std::string> texts;
  std::map<std::string, bool> flags;
  // The options given, as the JSON object app::apply reads (flags as true, values as their text).
  [[nodiscard]] nlohmann::json values(const CLI::App& cmd) const;
};

// What --help shows as an option's value: a list for search dimensions, else by the default's form.
std::string value_name(const std::string& key, const std::string& shown);

// Adds one option per field of a request's table to `cmd`, its default printed from a default request. An option
// given twice takes the last value (so a script can append an override).
template <typename Request>
std::shared_ptr<Given> add_fields(CLI::App& cmd, const std::vector<app::Field<Request>>& fields) {
  auto given = std::make_shared<Given>();
  const Request defaults{};
  for (const auto& f : fields) {
    std::string name = app::where_of(app::Source::CommandLine, f.key);
    if (!f.short_option.empty()) name = f.short_option + "," + name;
    if (f.flag) {
      cmd.add_flag(name, given->flags[f.key], f.help);
    } else {
      CLI::Option* option = cmd.add_option(name, given->texts[f.key], f.help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      std::string shown = f.show ? f.show(defaults) : std::string();
      if (!shown.empty()) option->default_str(shown);
      option->type_name(value_name(f.key, shown));
    }
  }
  return given;
}

// Output options every reporting command has.
struct Output {
  std::string format = "table";
  std::string output = "-";
};
void add_output(CLI::App& cmd, Output& o, const std::vector<std::string>& formats);

Command add_estimate(CLI::App& app);
Command add_search(CLI::App& app);
Command add_plan(CLI::App& app);
Command add_balance(CLI::App& app);
Command add_calibrate(CLI::App& app);

// Writes `text` to the --output target atomically ("-" = stdout).
void emit(const std::string& output, const std::string& text);
// With --config in `values`: a note on stderr for each option the command line gives that the file states too
// (the command line wins).
void note_config_overrides(const nlohmann::json& values);
// Prints a report's warnings about its inputs on stderr ("sapp: warning: ...").
void warn(const std::vector<std::string>& warnings);

}  // namespace sapp::cli
