#include "core/files.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace sapp::io {

namespace fs = std::filesystem;

namespace {

nlohmann::json scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: always a string
  std::string l = lower(text);
  if (l.empty() || l == "~" || l == "null") return nullptr;
  // YAML 1.1, as PyYAML reads it: unquoted yes/no/on/off/true/false are booleans (docs/reference-planner.md §2: `off` is False).
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  long long i = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (ec == std::errc() && p == text.data() + text.size()) return i;
  if (!text.empty() && text[0] == '+') {
    auto [p2, ec2] = std::from_chars(text.data() + 1, text.data() + text.size(), i);
    if (ec2 == std::errc() && p2 == text.data() + text.size()) return i;
  }
  char* end = nullptr;
  double d = std::strtod(text.c_str(), &end);
  if (end == text.c_str() + text.size() && !text.empty() && (std::isdigit(static_cast<unsigned char>(text.back())) || text.back() == '.')) {
    return d;
  }
  return text;
}

nlohmann::json convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: return scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(convert(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) {
        std::string key = kv.first.Scalar();
        if (out.contains(key)) throw Error(fmt::format("key '{}' appears twice", key));
        out[key] = convert(kv.second);
      }
      return out;
    }
  }
  return nullptr;
}

std::string type_name(const nlohmann::json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "a mapping";
  return "null";
}

}  // namespace

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(fmt::format("{}: is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot be opened (does it exist?)", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json parse_yaml(const std::string& text, const std::string& where) {
  try {
    YAML::Node root = YAML::Load(text);
    return convert(root);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}: not valid YAML at line {}, column {}: {}", where, e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", where, e.what()));
  }
}

nlohmann::json read_tree(const std::string& path) {
  std::string text = read_text(path);
  std::string ext = lower(fs::path(path).extension().string());
  if (ext == ".json") {
    try {
      return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
    }
  }
  return parse_yaml(text, path);
}

void write_atomic(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    std::cout.flush();
    return;
  }
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: the folder {} does not exist", path, dir.string()));
  fs::path tmp = dir / fmt::format(".{}.tmp.{}", target.filename().string(), static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("{}: cannot write the temporary file {}", path, tmp.string()));
    out << content;
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw Error(fmt::format("{}: writing failed", path));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(fmt::format("{}: cannot move the output into place", path));
  }
}

std::vector<std::string> list_files(const std::string& dir, const std::string& extension) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension) out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::vector<nlohmann::json> one_or_many(const nlohmann::json& value, const std::string& where, const std::string& empty_message) {
  if (!value.is_array()) return {value};
  if (value.empty()) fail(where, "{}", empty_message);
  return std::vector<nlohmann::json>(value.begin(), value.end());
}

std::string data_dir() {
  const char* env = std::getenv("SAPP_DATA_DIR");
  if (env != nullptr && *env != '\0') return env;
  return SAPP_DEFAULT_DATA_DIR;
}

double Reader::number(const std::string& key) const {
  if (!has(key)) bad(key, "a number, and it is required");
  const auto& v = node.at(key);
  if (v.is_boolean() || !v.is_number()) bad(key, "a number");
  double d = v.get<double>();
  if (!std::isfinite(d)) bad(key, "a finite number");
  return d;
}

double Reader::number_or(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }

long long Reader::integer(const std::string& key) const {
  if (!has(key)) bad(key, "a whole number, and it is required");
  const auto& v = node.at(key);
  if (v.is_boolean() || !v.is_number()) bad(key, "a whole number");
  if (v.is_number_integer()) return v.get<long long>();
  double d = v.get<double>();
  if (std::floor(d) != d || std::fabs(d) > 9e15) bad(key, "a whole number");
  return static_cast<long long>(d);
}

long long Reader::integer_or(const std::string& key, long long fallback) const { return has(key) ? integer(key) : fallback; }

std::string Reader::string(const std::string& key) const {
  if (!has(key)) bad(key, "a string, and it is required");
  const auto& v = node.at(key);
  if (!v.is_string()) bad(key, "a string");
  return v.get<std::string>();
}

std::string Reader::string_or(const std::string& key, const std::string& fallback) const { return has(key) ? string(key) : fallback; }

bool Reader::boolean(const std::string& key) const {
  if (!has(key)) bad(key, "true or false, and it is required");
  const auto& v = node.at(key);
  if (!v.is_boolean()) bad(key, "true or false");
  return v.get<bool>();
}

bool Reader::boolean_or(const std::string& key, bool fallback) const { return has(key) ? boolean(key) : fallback; }

Reader Reader::child(const std::string& key) const {
  if (!has(key)) bad(key, "a mapping, and it is required");
  const auto& v = node.at(key);
  if (!v.is_object()) bad(key, "a mapping");
  return Reader{v, file, key_path(key)};
}

void Reader::only(const std::vector<std::string>& allowed) const {
  if (!node.is_object()) throw Error(fmt::format("{}: {} must be a mapping, got {}", file, prefix.empty() ? "the file" : prefix, type_name(node)));
  for (const auto& [key, value] : node.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw Error(fmt::format("{}: {}: unknown key (value {}); the keys here are {}", file, key_path(key), value.dump(), list));
    }
  }
}

void Reader::bad(const std::string& key, const std::string& expected) const {
  std::string found = node.contains(key) ? node.at(key).dump() : std::string("nothing");
  if (found.size() > 80) found = found.substr(0, 77) + "...";
  throw Error(fmt::format("{}: {}: expected {}, got {}", file, key_path(key), expected, found));
}

}  // namespace sapp::io
