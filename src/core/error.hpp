// core/error (layer core: errors, files, the expression language): the one exception type sapp throws for bad input, and how it reads.
//
// Every message names where the bad value was found (file and key), the value, and what was expected, on one
// line, so the CLI can print it as is and exit non-zero.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace sapp {

// A message is kept to its first kMaxMessageChars characters, saying how long it was: it may quote a value pasted
// from a file (a layout or a line of a hundred kilobytes), which every front end (CLI, Python) would echo whole.
inline constexpr std::size_t kMaxMessageChars = 2000;
inline std::string cut_message(const std::string& message) {
  if (message.size() <= kMaxMessageChars) return message;
  return fmt::format("{}... (cut: {} characters in all)", message.substr(0, kMaxMessageChars), message.size());
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(cut_message(message)) {}
};

// "where: what" with where = "file: key" when both are known.
template <typename... Args>
[[noreturn]] void fail(const std::string& where, fmt::format_string<Args...> format, Args&&... args) {
  std::string what = fmt::format(format, std::forward<Args>(args)...);
  throw Error(where.empty() ? what : where + ": " + what);
}

inline std::string at(const std::string& file, const std::string& key) {
  if (file.empty()) return key;
  if (key.empty()) return file;
  return file + ": " + key;
}

}  // namespace sapp
