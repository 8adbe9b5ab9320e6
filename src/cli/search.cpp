#include "cli/commands.hpp"
namespace sapp::cli {
Run add_search(CLI::App& app) {
  app.add_subcommand("search", "rank every parallel layout by step time");
  return []() {};
}
}  // namespace sapp::cli
