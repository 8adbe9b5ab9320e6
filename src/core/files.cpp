#include "core/files.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace sapp::io {

namespace fs = std::filesystem;

namespace {

std::string join_path(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), as JSON requires. YAML
// text may hold any bytes; a string that is not UTF-8 would make every later message that quotes it throw.
bool valid_utf8(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char c = byte(i);
    std::size_t extra = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;  // the sequence runs past the end
    for (std::size_t k = 1; k <= extra; ++k) {
      unsigned char b = byte(i + k);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += extra + 1;
  }
  return true;
}

// A key path cut to its first 60 characters, for the nesting error (the path of a deep value is as deep).
std::string short_path(const std::string& path) { return path.size() > 60 ? path.substr(0, 60) + "..." : path; }

[[noreturn]] void out_of_range(const std::string& where, const std::string& path, const std::string& text) {
  fail(at(where, path), "{} is beyond the range of a number (about 1.8e308); state a value in range", text);
}

// YAML to JSON: one pass with the key path for errors, a depth limit (aliases can make a cycle) and a budget of
// values (aliases can repeat a subtree exponentially).
struct YamlConverter {
  const std::string& where;
  std::size_t values = 0;

  nlohmann::json scalar(const YAML::Node& node, const std::string& path) const {
    const std::string& text = node.Scalar();
    if (!valid_utf8(text)) fail(at(where, short_path(path)), "holds a value that is not valid UTF-8 text");
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
      // A whole number beyond long long stays a double; the readers refuse it where a whole number goes.
      if (!std::isfinite(d)) out_of_range(where, path, text);
      return d;
    }
    return text;
  }

  nlohmann::json convert(const YAML::Node& node, const std::string& path, int depth) {
    if (depth > kMaxDepth) fail(at(where, short_path(path)), "is nested deeper than {} levels", kMaxDepth);
    if (++values > kMaxValues) fail(where, "holds more than {} values (aliases expanded); a data file this size is not a config", kMaxValues);
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined: return nullptr;
      case YAML::NodeType::Scalar: return scalar(node, path);
      case YAML::NodeType::Sequence: {
        nlohmann::json out = nlohmann::json::array();
        std::size_t index = 0;
        for (const auto& item : node) out.push_back(convert(item, fmt::format("{}[{}]", path, index++), depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) fail(at(where, path.empty() ? "the top level" : path), "a key must be a plain name, not a list or mapping");
          std::string key = kv.first.Scalar();
          if (!valid_utf8(key)) fail(at(where, path.empty() ? "the top level" : short_path(path)), "holds a key that is not valid UTF-8 text");
          if (out.contains(key)) fail(at(where, join_path(path, key)), "key '{}' appears twice", key);
          out[key] = convert(kv.second, join_path(path, key), depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }
};

// JSON to a tree through nlohmann's SAX interface, so a duplicate key, a number out of range and deep nesting
// are refused with the key path (the DOM parser keeps the last duplicate silently and names no key).
class JsonBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonBuilder(const std::string& where) : where_(where) {}
  nlohmann::json root;

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) out_of_range(where_, path(), text);
    return put(v);
  }
  bool string(string_t& v) override { return put(v); }
  bool binary(binary_t& /*v*/) override { fail(at(where_, path()), "binary values are not JSON"); }
  bool start_object(std::size_t /*size*/) override { return open(nlohmann::json::object()); }
  bool key(string_t& k) override {
    Level& top = stack_.back();
    if (top.node->contains(k)) fail(at(where_, join_path(path_of(stack_.size()), k)), "key '{}' appears twice", k);
    top.key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*size*/) override { return open(nlohmann::json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& token, const nlohmann::detail::exception& e) override {
    if (e.id == 406) out_of_range(where_, path(), token);
    throw Error(fmt::format("{}: not valid JSON: {}", where_, e.what()));
  }

 private:
  struct Level {
    nlohmann::json* node;
    std::string segment;  // how the parent reaches this container
    std::string key;      // the key being filled (objects)
  };
  const std::string& where_;
  std::vector<Level> stack_;
  std::size_t values_ = 0;

  // How the value being parsed in `level` is reached from it: ".key" or "[index]".
  static std::string segment_of(const Level& level) {
    if (!level.node->is_array()) return fmt::format(".{}", level.key);
    return fmt::format("[{}]", level.node->size());
  }
  // The path of the value being parsed inside the first `levels` open containers.
  [[nodiscard]] std::string path_of(std::size_t levels) const {
    std::string out;
    for (std::size_t i = 1; i < levels; ++i) out += stack_[i].segment;
    if (!out.empty() && out[0] == '.') out.erase(0, 1);
    return out;
  }
  [[nodiscard]] std::string path() const {
    if (stack_.empty()) return "";
    const Level& top = stack_.back();
    std::string out = path_of(stack_.size()) + segment_of(top);
    if (!out.empty() && out[0] == '.') out.erase(0, 1);
    return out;
  }
  nlohmann::json* put(nlohmann::json value) {
    if (++values_ > kMaxValues) fail(where_, "holds more than {} values; a data file this size is not a config", kMaxValues);
    if (stack_.empty()) {
      root = std::move(value);
      return &root;
    }
    Level& top = stack_.back();
    if (top.node->is_array()) {
      top.node->push_back(std::move(value));
      return &top.node->back();
    }
    nlohmann::json& slot = (*top.node)[top.key];
    slot = std::move(value);
    return &slot;
  }
  bool open(nlohmann::json empty) {
    if (static_cast<int>(stack_.size()) >= kMaxDepth) fail(at(where_, short_path(path())), "is nested deeper than {} levels", kMaxDepth);
    std::string segment = stack_.empty() ? std::string() : segment_of(stack_.back());
    nlohmann::json* node = put(std::move(empty));
    stack_.push_back(Level{node, segment, ""});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
};

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
  std::string text;
  std::array<char, 65536> buffer{};
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    text.append(buffer.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) throw Error(fmt::format("{}: is larger than {} MiB; a data file this size is not a config", path, kMaxFileBytes >> 20U));
  }
  return text;
}

nlohmann::json parse_yaml(const std::string& text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}: not valid YAML at line {}, column {}: {}", where, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  YamlConverter converter{where};
  return converter.convert(root, "", 0);
}

nlohmann::json parse_json(const std::string& text, const std::string& where) {
  JsonBuilder builder(where);
  nlohmann::json::sax_parse(text, &builder);
  return std::move(builder.root);
}

nlohmann::json parse_tree(const std::string& text, const std::string& where) {
  if (lower(fs::path(where).extension().string()) == ".json") return parse_json(text, where);
  return parse_yaml(text, where);
}

nlohmann::json read_tree(const std::string& path) { return parse_tree(read_text(path), path); }

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

std::string last_component(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string markup_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& text) {
  auto begin = text.find_first_not_of(" \t");
  auto end = text.find_last_not_of(" \t");
  return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
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
  constexpr auto kMax = std::numeric_limits<long long>::max();
  if (v.is_number_unsigned()) {
    if (v.get<unsigned long long>() > static_cast<unsigned long long>(kMax)) bad(key, fmt::format("a whole number at most {}", kMax));
    return v.get<long long>();
  }
  if (v.is_number_integer()) return v.get<long long>();
  double d = v.get<double>();
  if (std::floor(d) != d) bad(key, "a whole number");
  // 2^63 is the first double beyond long long.
  if (std::fabs(d) >= 9223372036854775808.0) bad(key, fmt::format("a whole number from {} to {}", std::numeric_limits<long long>::min(), kMax));
  return static_cast<long long>(d);
}

long long Reader::integer_or(const std::string& key, long long fallback) const { return has(key) ? integer(key) : fallback; }

double Reader::quantity(const std::string& key, const units::Quantity& q) const {
  if (!has(key)) bad(key, fmt::format("{}{}{}, and it is required", q.what, q.unit.empty() ? "" : " in ", q.unit));
  const auto& v = node.at(key);
  if (v.is_boolean() || !v.is_number()) bad(key, fmt::format("{}{}{} (a number)", q.what, q.unit.empty() ? "" : " in ", q.unit));
  return units::check(v.get<double>(), q, at(file, key_path(key)), v.is_number_integer() ? v.dump() : "");
}

double Reader::quantity_or(const std::string& key, const units::Quantity& q, double fallback) const { return has(key) ? quantity(key, q) : fallback; }

long long Reader::count(const std::string& key, const units::Quantity& q) const {
  if (!has(key)) bad(key, fmt::format("{}, and it is required", q.what));
  const auto& v = node.at(key);
  if (v.is_boolean() || !v.is_number()) bad(key, fmt::format("{} (a whole number)", q.what));
  // Range first: it bounds the value well inside long long, so the conversion below is exact.
  double d = units::check(v.get<double>(), q, at(file, key_path(key)), v.is_number_integer() ? v.dump() : "");
  if (v.is_number_integer()) return v.get<long long>();
  return static_cast<long long>(d);
}

long long Reader::count_or(const std::string& key, const units::Quantity& q, long long fallback) const { return has(key) ? count(key, q) : fallback; }

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
