#include "plan/split.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sapp::plan {

using nlohmann::json;

namespace {
long long sum(const ChunkCounts& counts) {
  long long n = 0;
  for (const auto& row : counts) {
    for (long long c : row) n += c;
  }
  return n;
}
}  // namespace

long long StageSplit::total() const { return sum(layers); }
long long StageSplit::full_total() const { return sum(full); }
long long StageSplit::selective_total() const { return sum(selective); }

long long StageSplit::stage_layers(int stage) const {
  long long n = 0;
  for (const auto& row : layers) n += row.at(static_cast<std::size_t>(stage));
  return n;
}

StageSplit even_split(long long layers, int pp, int vpp) {
  StageSplit s;
  long long chunks = 1LL * pp * vpp;
  long long base = layers / chunks;
  long long extra = layers % chunks;
  s.layers.assign(static_cast<std::size_t>(vpp), std::vector<long long>(static_cast<std::size_t>(pp), base));
  for (long long k = 1; k <= extra; ++k) s.layers[static_cast<std::size_t>(k / pp)][static_cast<std::size_t>(k % pp)] += 1;
  return s;
}

namespace {

bool same_shape(const ChunkCounts& counts, int pp, int vpp) {
  if (static_cast<int>(counts.size()) != vpp) return false;
  for (const auto& row : counts) {
    if (static_cast<int>(row.size()) != pp) return false;
  }
  return true;
}

std::string shape_of(const ChunkCounts& counts) {
  std::string rows;
  for (const auto& row : counts) {
    if (!rows.empty()) rows += ", ";
    rows += std::to_string(row.size());
  }
  return fmt::format("{} chunk row(s) of [{}] stage(s)", counts.size(), rows);
}

long long parse_count(const std::string& text, const std::string& where) {
  long long v = 0;
  std::size_t a = text.find_first_not_of(" \t");
  std::size_t b = text.find_last_not_of(" \t");
  std::string t = a == std::string::npos ? std::string() : text.substr(a, b - a + 1);
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 0 || v > (1LL << 30)) {
    fail(where, "'{}' is not a layer count (a whole number from 0)", t);
  }
  return v;
}

long long json_count(const json& v, const std::string& where) {
  if (v.is_boolean() || !v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1LL << 30)) {
    fail(where, "{} is not a layer count (a whole number from 0)", v.dump());
  }
  return v.get<long long>();
}

}  // namespace

std::vector<Violation> check_split(const StageSplit& split, long long layers, int pp, int vpp) {
  std::vector<Violation> out;
  if (!same_shape(split.layers, pp, vpp)) {
    out.push_back(
        {"split shape", fmt::format("the stage layer counts hold {}, but PP {} x VPP {} needs {} row(s) of {}", shape_of(split.layers), pp, vpp, vpp, pp)});
    return out;
  }
  if (split.total() != layers) {
    out.push_back({"split sum", fmt::format("the stage layer counts {} sum to {}, but the model has {} layers to place", format_counts(split.layers),
                                            split.total(), layers)});
  }
  for (const auto* counts : {&split.full, &split.selective}) {
    if (counts->empty()) continue;
    const char* name = counts == &split.full ? "full" : "selective";
    if (!same_shape(*counts, pp, vpp)) {
      out.push_back(
          {"split shape", fmt::format("the {} recompute counts hold {}, but PP {} x VPP {} needs {} row(s) of {}", name, shape_of(*counts), pp, vpp, vpp, pp)});
      return out;
    }
  }
  for (int c = 0; c < vpp; ++c) {
    for (int s = 0; s < pp; ++s) {
      auto at_cs = [&](const ChunkCounts& x) { return x.empty() ? 0LL : x[static_cast<std::size_t>(c)][static_cast<std::size_t>(s)]; };
      long long n = split.layers[static_cast<std::size_t>(c)][static_cast<std::size_t>(s)];
      if (at_cs(split.full) + at_cs(split.selective) > n) {
        out.push_back({"split recompute", fmt::format("chunk {} of stage {} holds {} layers but recomputes {} fully and {} selectively", c, s, n,
                                                      at_cs(split.full), at_cs(split.selective))});
      }
    }
  }
  return out;
}

ChunkCounts read_counts(const json& stated, const std::string& where) {
  ChunkCounts out;
  if (stated.is_string()) {
    std::string text = stated.get<std::string>();
    std::size_t start = 0;
    while (true) {
      std::size_t slash = text.find('/', start);
      std::string row = text.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      std::vector<long long> counts;
      std::size_t p = 0;
      while (true) {
        std::size_t comma = row.find(',', p);
        counts.push_back(parse_count(row.substr(p, comma == std::string::npos ? std::string::npos : comma - p), where));
        if (comma == std::string::npos) break;
        p = comma + 1;
      }
      out.push_back(counts);
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  } else if (stated.is_array() && !stated.empty() && stated.front().is_array()) {
    for (const auto& row : stated) {
      if (!row.is_array() || row.empty()) fail(where, "expected a list of layer counts per chunk, got {}", row.dump());
      std::vector<long long> counts;
      for (const auto& v : row) counts.push_back(json_count(v, where));
      out.push_back(counts);
    }
  } else if (stated.is_array() && !stated.empty()) {
    std::vector<long long> counts;
    for (const auto& v : stated) counts.push_back(json_count(v, where));
    out.push_back(counts);
  } else {
    fail(where, "expected layer counts per stage like 4,5,5,4 (chunks separated by '/'), got {}", stated.dump());
  }
  for (const auto& row : out) {
    if (row.size() != out.front().size()) fail(where, "every chunk row must have one count per stage; got {}", shape_of(out));
  }
  return out;
}

std::string format_counts(const ChunkCounts& counts) {
  std::string out;
  for (const auto& row : counts) {
    if (!out.empty()) out += '/';
    out += fmt::format("{}", fmt::join(row, ","));
  }
  return out;
}

void read_recompute_counts(StageSplit& split, const json& stated, const std::string& where) {
  split.full.clear();
  split.selective.clear();
  auto take = [&](const std::string& mode, const json& counts) {
    if (mode == "full") {
      split.full = read_counts(counts, where + " (full)");
    } else if (mode == "selective") {
      split.selective = read_counts(counts, where + " (selective)");
    } else {
      fail(where, "'{}' is not a recompute mode with per-stage counts; expected full or selective", mode);
    }
  };
  if (stated.is_object()) {
    for (const auto& [mode, counts] : stated.items()) take(mode, counts);
  } else if (stated.is_string()) {
    std::string text = stated.get<std::string>();
    for (char& c : text) {
      if (c == ';') c = ' ';
    }
    std::size_t p = 0;
    while (p < text.size()) {
      std::size_t a = text.find_first_not_of(' ', p);
      if (a == std::string::npos) break;
      std::size_t b = text.find(' ', a);
      std::string item = text.substr(a, b == std::string::npos ? std::string::npos : b - a);
      std::size_t eq = item.find('=');
      if (eq == std::string::npos) fail(where, "'{}' is not mode=counts (e.g. full=3,4,4,2 selective=1,0,0,0)", item);
      take(item.substr(0, eq), json(item.substr(eq + 1)));
      p = b == std::string::npos ? text.size() : b;
    }
  } else {
    fail(where, "expected mode=counts like full=3,4,4,2 selective=1,0,0,0 or a mapping of modes to counts, got {}", stated.dump());
  }
  if (!split.states_recompute()) fail(where, "states no recompute counts");
}

std::string format_recompute_counts(const StageSplit& split) {
  std::string out;
  if (!split.full.empty()) out += "full=" + format_counts(split.full);
  if (!split.selective.empty()) {
    if (!out.empty()) out += ' ';
    out += "selective=" + format_counts(split.selective);
  }
  return out;
}

std::vector<long long> per_stage(const ChunkCounts& counts) {
  std::vector<long long> out(counts.empty() ? 0 : counts.front().size(), 0);
  for (const auto& row : counts) {
    for (std::size_t s = 0; s < row.size() && s < out.size(); ++s) out[s] += row[s];
  }
  return out;
}

}  // namespace sapp::plan
