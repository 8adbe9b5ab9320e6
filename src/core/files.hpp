// core/files: reading input files into JSON (from .json or .yaml alike) and writing outputs atomically.
//
// YAML is converted to JSON once at the edge so the readers downstream check one tree type. Outputs go to a
// temporary file beside the target and are renamed into place, so a failure never leaves half a file.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace sapp::io {

// Parses a .json, .yaml or .yml file (by extension; other extensions are tried as YAML, which includes JSON).
// Both parsers refuse, naming the file and the key: a key stated twice, a number beyond the range of a double
// (1e400), nesting deeper than kMaxDepth, and more than kMaxValues values (YAML aliases expanded).
nlohmann::json read_tree(const std::string& path);
// The same from text already in memory; `where` names the source in errors and its extension picks the parser.
nlohmann::json parse_tree(const std::string& text, const std::string& where);
// Parses YAML text; `where` names the source in errors.
nlohmann::json parse_yaml(const std::string& text, const std::string& where);
// Parses JSON text (strict RFC 8259, no comments); `where` names the source in errors.
nlohmann::json parse_json(const std::string& text, const std::string& where);
inline constexpr int kMaxDepth = 256;
inline constexpr std::size_t kMaxValues = 1000000;
inline constexpr std::size_t kMaxFileBytes = 64U << 20U;
// Reads a whole file; refuses a directory, a missing file and one larger than kMaxFileBytes.
std::string read_text(const std::string& path);
// Writes `content` to `path` through a temporary file and a rename. "-" writes to stdout.
void write_atomic(const std::string& path, const std::string& content);
std::vector<std::string> list_files(const std::string& dir, const std::string& extension);
bool exists(const std::string& path);
std::string stem(const std::string& path);
// The text after the last '/' (all of it when there is none): a HuggingFace id's model name, a path's file name.
std::string last_component(const std::string& path);

// Lower-cased copy (ASCII), for case-insensitive keywords.
std::string lower(std::string text);

// Escapes &, <, >, " and ' for HTML and SVG text and attribute values.
std::string markup_escape(const std::string& text);

// Splits "a,b,c" at commas (empty items kept, so callers can refuse them by name).
std::vector<std::string> split_commas(const std::string& text);
// `text` without leading and trailing spaces and tabs.
std::string trim(const std::string& text);

// A YAML/JSON value that may be one item or a list of them, as a list; an empty list is refused at `where`
// with `empty_message`.
std::vector<nlohmann::json> one_or_many(const nlohmann::json& value, const std::string& where, const std::string& empty_message);

// The data directory: $SAPP_DATA_DIR if set, else the one compiled in.
std::string data_dir();

// Typed, checked reads from a JSON object. Each error names `where` (file), the key, and the value found.
struct Reader {
  const nlohmann::json& node;
  std::string file;
  std::string prefix;  // dotted path of `node` inside the file

  [[nodiscard]] std::string key_path(const std::string& key) const { return prefix.empty() ? key : prefix + "." + key; }
  [[nodiscard]] bool has(const std::string& key) const { return node.contains(key) && !node.at(key).is_null(); }
  [[nodiscard]] double number(const std::string& key) const;
  [[nodiscard]] double number_or(const std::string& key, double fallback) const;
  [[nodiscard]] long long integer(const std::string& key) const;
  [[nodiscard]] long long integer_or(const std::string& key, long long fallback) const;
  // A physical quantity or count, refused outside its plausible range (core/units.hpp) with its unit.
  [[nodiscard]] double quantity(const std::string& key, const units::Quantity& q) const;
  [[nodiscard]] double quantity_or(const std::string& key, const units::Quantity& q, double fallback) const;
  // A count (q.whole) as an integer, refused outside its range.
  [[nodiscard]] long long count(const std::string& key, const units::Quantity& q) const;
  [[nodiscard]] long long count_or(const std::string& key, const units::Quantity& q, long long fallback) const;
  [[nodiscard]] std::string string(const std::string& key) const;
  [[nodiscard]] std::string string_or(const std::string& key, const std::string& fallback) const;
  [[nodiscard]] bool boolean(const std::string& key) const;
  [[nodiscard]] bool boolean_or(const std::string& key, bool fallback) const;
  [[nodiscard]] Reader child(const std::string& key) const;
  // Refuses keys outside `allowed`, naming the first unknown one and the ones allowed.
  void only(const std::vector<std::string>& allowed) const;
  [[noreturn]] void bad(const std::string& key, const std::string& expected) const;
  // One of named values: the key's string (`fallback` when absent) looked up in `names`; anything else is refused
  // naming the values allowed ("one of a, b, c").
  template <class T>
  [[nodiscard]] T choice_or(const std::string& key, const std::string& fallback, std::initializer_list<std::pair<const char*, T>> names) const {
    const std::string value = string_or(key, fallback);
    std::string allowed;
    for (const auto& [name, v] : names) {
      if (value == name) return v;
      allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    }
    bad(key, "one of " + allowed);
  }
  // The same for a key that must be stated.
  template <class T>
  [[nodiscard]] T choice(const std::string& key, std::initializer_list<std::pair<const char*, T>> names) const {
    (void)string(key);  // refuses a missing key as string() does
    return choice_or(key, "", names);
  }
};

}  // namespace sapp::io
