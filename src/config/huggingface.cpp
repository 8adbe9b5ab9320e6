// config/huggingface: a HuggingFace config.json (or the same keys in YAML), nested text_config /
// vision_config included. The model is read by model::model_from_json; this reader only says which keys it
// does not read (model::unread_keys): a key that would change the cost but is not read is a warning, never silence.
#include <fmt/format.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::config::detail {

Loaded read_huggingface(const std::string& text, const std::string& file) {
  json tree = io::parse_yaml(text, file);
  if (!tree.is_object()) fail(file, "a HuggingFace config must be a mapping, got {}", tree.type_name());
  Loaded out;
  out.model_config = tree;
  put(out, "model", file, "model_type");
  std::vector<std::string> keys = model::unread_keys(tree);
  if (!keys.empty()) {
    out.warnings.push_back(fmt::format("key(s) sapp does not read and cannot price (misspelt, or a feature it does not model): {}", fmt::join(keys, ", ")));
  }
  return out;
}

}  // namespace sapp::config::detail
