// Shared test fixtures: the bundled catalog, models resolved from it, and running the CLI.
#pragma once

#include <functional>
#include <string>

#include "cost/memory.hpp"
#include "hardware/hardware.hpp"
#include "model/family.hpp"

namespace sapp::test {

const model::Catalog& catalog();  // loaded once per test binary from the source tree's data/
model::Model bundled(const std::string& name);
// Expects |got - published| within max(0.5 % of published, half of the published rounding unit), in billions.
void near_published(double got, double published_billions, double rounding_unit_billions, const char* what);
hardware::Hardware device(const std::string& name);
std::string data_dir();
// Run facts with plan::Training's defaults, a global batch and a sequence length.
plan::Training training(long long global_batch, long long seq);

struct Run {
  int status = 0;
  std::string out;
  std::string err;
};
// Runs the sapp binary with `args` (shell-quoted by the caller), capturing stdout and stderr.
Run run_sapp(const std::string& args, const std::string& env = "");
std::string temp_dir();  // a fresh directory for one test
void write_file(const std::string& path, const std::string& text);
// Runs `f`, which must refuse with sapp::Error naming `part` in its message; `what` names the case on a failure.
void expect_error(const std::function<void()>& f, const std::string& part, const std::string& what = "");

}  // namespace sapp::test

#include <nlohmann/json.hpp>

namespace sapp {
// Text of a data file with one exact substring replaced (test helper; fails loudly when the text is absent).
std::string io_replace_for_test(const std::string& from, const std::string& to);
nlohmann::json io_yaml_for_test(const std::string& text);
}  // namespace sapp

namespace sapp::test {
nlohmann::json parse_yaml_for_test(const std::string& text);
}  // namespace sapp::test
