// libFuzzer target: a search YAML (`sapp search --config`): a `search:` mapping of dimensions.
#include "reader.hpp"
#include "search/search.hpp"
#include "targets.hpp"

int sapp::fuzz::target_search(const std::uint8_t* data, std::size_t size) {
  return sapp::fuzz::read_input(data, size, "fuzz.yaml", [](const nlohmann::json& tree) {
    sapp::io::Reader rd{tree, "fuzz.yaml", ""};
    rd.only({"search"});
    if (!rd.has("search")) rd.bad("search", "a mapping of dimensions");
    sapp::search::Space space;
    sapp::search::space_from_json(tree.at("search"), "fuzz.yaml", space);
  });
}
