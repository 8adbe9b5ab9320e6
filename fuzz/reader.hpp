// Shared by the reader fuzz targets: the input is the text of one data file; it is parsed as the reader's format
// and read. A reader may refuse the input only with sapp::Error; any other exception, a crash, a leak or
// undefined behaviour is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::fuzz {

// Parses `data` as the file `where` (its extension picks JSON or YAML) and hands the tree to `read`.
template <typename Read>
int read_input(const std::uint8_t* data, std::size_t size, const std::string& where, Read read) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    nlohmann::json tree = io::parse_tree(text, where);
    read(tree);
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace sapp::fuzz
