#include "cli/commands.hpp"
namespace sapp::cli {
Run add_balance(CLI::App& app) {
  app.add_subcommand("balance", "pipeline balancing");
  return []() {};
}
}  // namespace sapp::cli
