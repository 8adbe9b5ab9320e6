#include "hardware/hardware.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::hardware {

const Level& Hardware::level_for_span(long long span) const {
  for (const auto& level : levels) {
    if (level.devices == 0 || span <= level.devices) return level;
  }
  return levels.back();
}

namespace {

// How many members of a group of `size` ranks spaced `stride` apart share one unit of `level`.
long long members_per_unit(const Level& level, long long size, long long stride) {
  if (level.devices == 0 || size * stride <= level.devices) return size;
  return std::max(1LL, std::min(size, level.devices / stride));
}

}  // namespace

void Hardware::require_fp8_rate() const {
  if (peak_flops_fp8 <= 0) fail(source, "peak_flops_fp8 is not stated: {} has no FP8 rate to price FP8 GEMMs with", name);
}

void Hardware::require_fp4_rate() const {
  if (peak_flops_fp4 <= 0) fail(source, "peak_flops_fp4 is not stated: {} has no FP4 rate to price NVFP4 GEMMs with", name);
}

double Hardware::fp4_gemm_efficiency() const {
  if (efficiency.gemm_fp4 > 0) return efficiency.gemm_fp4;
  if (peak_flops_fp4 <= 0) return 0.0;
  return std::min(efficiency.gemm_fp8, kNvfp4OverMxfp8GemmRate * efficiency.gemm_fp8 * peak_flops_fp8 / peak_flops_fp4);
}

Level Hardware::ring_link(long long size, long long stride) const {
  stride = std::max(1LL, stride);
  size = std::max(1LL, size);
  Level out = level_for_span(size * stride);
  double bandwidth = 0;
  long long below = 1;  // group members inside one unit of the previous (inner) level
  for (const auto& level : levels) {
    long long within = members_per_unit(level, size, stride);
    if (within > below) {
      // The ring crosses this level's links: `below` members of each inner unit drive one link each.
      double b = static_cast<double>(below) * level.bandwidth;
      bandwidth = bandwidth == 0 ? b : std::min(bandwidth, b);
    }
    below = within;
    if (within == size) break;
  }
  if (bandwidth > 0) out.bandwidth = bandwidth;
  return out;
}

Hardware::AllToAll Hardware::all_to_all(long long size, long long stride) const {
  stride = std::max(1LL, stride);
  size = std::max(1LL, size);
  AllToAll out;
  out.latency = level_for_span(size * stride).latency;
  if (size <= 1) return out;
  long long below = 1;  // peers (self included) inside one unit of the previous level
  for (const auto& level : levels) {
    long long within = members_per_unit(level, size, stride);
    if (within > below && level.bandwidth > 0) {
      double share = static_cast<double>(within - below) / static_cast<double>(size);
      out.seconds_per_byte = std::max(out.seconds_per_byte, share / level.bandwidth);
    }
    below = within;
    if (within == size) break;
  }
  return out;
}

Hardware hardware_from_json(const nlohmann::json& tree, const std::string& file, const std::string& id) {
  io::Reader top{tree, file, ""};
  top.only(
      {"name", "source", "peak_flops", "peak_flops_fp8", "peak_flops_fp4", "memory_bytes", "memory_gib", "hbm_bandwidth", "sm_count", "levels", "efficiency"});
  Hardware hw;
  hw.id = id;
  hw.source = file;
  hw.name = top.string_or("name", id);
  hw.peak_flops = top.quantity("peak_flops", units::kPeakFlops);
  // 0 (or absent) states that the device has no FP8 tensor cores.
  hw.peak_flops_fp8 = top.number_or("peak_flops_fp8", 0.0);
  if (hw.peak_flops_fp8 != 0) hw.peak_flops_fp8 = top.quantity("peak_flops_fp8", units::kPeakFlops);
  hw.peak_flops_fp4 = top.number_or("peak_flops_fp4", 0.0);
  if (hw.peak_flops_fp4 != 0) hw.peak_flops_fp4 = top.quantity("peak_flops_fp4", units::kPeakFlops);
  if (hw.peak_flops_fp4 > 0 && hw.peak_flops_fp8 <= 0) top.bad("peak_flops_fp4", "stated only with peak_flops_fp8 (NVFP4's rate is priced against FP8's)");
  if (top.has("memory_bytes") == top.has("memory_gib")) top.bad("memory_bytes", "exactly one of memory_bytes or memory_gib");
  hw.memory_bytes = top.has("memory_bytes") ? top.quantity("memory_bytes", units::kMemoryBytes) : top.quantity("memory_gib", units::kMemoryGib) * 1073741824.0;
  hw.hbm_bandwidth = top.quantity("hbm_bandwidth", units::kHbmBandwidth);
  if (top.has("sm_count")) hw.sm_count = top.quantity("sm_count", units::kComputeUnits);
  if (!top.has("levels") || !tree.at("levels").is_array() || tree.at("levels").empty()) {
    top.bad("levels", "a non-empty list of {name, devices, bandwidth, latency}, innermost first");
  }
  long long previous = 1;
  const auto& levels = tree.at("levels");
  for (std::size_t i = 0; i < levels.size(); ++i) {
    io::Reader rd{levels[i], file, "levels[" + std::to_string(i) + "]"};
    rd.only({"name", "devices", "bandwidth", "latency"});
    Level level;
    level.name = rd.string("name");
    level.devices = rd.count("devices", units::kLevelDevices);
    level.bandwidth = rd.quantity("bandwidth", units::kLinkBandwidth);
    level.latency = rd.quantity_or("latency", units::kLatency, 0.0);
    bool last = i + 1 == levels.size();
    if (level.devices == 0 && !last) rd.bad("devices", "a positive count (only the last level may be 0 = unbounded)");
    if (level.devices > 0 && level.devices % previous != 0) rd.bad("devices", "a multiple of the previous level's devices");
    if (level.devices > 0) previous = level.devices;
    hw.levels.push_back(level);
  }
  if (hw.levels.back().devices != 0) hw.levels.push_back(Level{"cluster", 0, hw.levels.back().bandwidth, hw.levels.back().latency});
  if (top.has("efficiency")) {
    io::Reader e = top.child("efficiency");
    e.only({"gemm", "gemm_fp8", "gemm_fp4", "gemm_half_rows", "attention", "memory", "comm", "grouped_gemm_half_width", "attention_cudnn919",
            "attention_cudnn919_half_keys"});
    auto fraction = [&](const char* key, double fallback) { return e.quantity_or(key, units::kEfficiency, fallback); };
    hw.efficiency.gemm = fraction("gemm", hw.efficiency.gemm);
    hw.efficiency.gemm_fp8 = fraction("gemm_fp8", hw.efficiency.gemm_fp8);
    hw.efficiency.gemm_fp4 = e.has("gemm_fp4") ? fraction("gemm_fp4", 0.0) : 0.0;
    hw.efficiency.attention = fraction("attention", hw.efficiency.attention);
    hw.efficiency.memory = fraction("memory", hw.efficiency.memory);
    hw.efficiency.comm = fraction("comm", hw.efficiency.comm);
    hw.efficiency.gemm_half_rows = e.quantity_or("gemm_half_rows", units::kHalfRows, hw.efficiency.gemm_half_rows);
    hw.efficiency.grouped_gemm_half_width = e.quantity_or("grouped_gemm_half_width", units::kExpertWidth, hw.efficiency.grouped_gemm_half_width);
    if (e.has("attention_cudnn919") != e.has("attention_cudnn919_half_keys")) {
      const bool rate = e.has("attention_cudnn919");
      e.bad(rate ? "attention_cudnn919" : "attention_cudnn919_half_keys",
            fmt::format("a value stated together with {} (the published benchmark's law has both)",
                        rate ? "attention_cudnn919_half_keys" : "attention_cudnn919"));
    }
    hw.efficiency.attention_cudnn919 = fraction("attention_cudnn919", 0.0);
    hw.efficiency.attention_cudnn919_half_keys = e.quantity_or("attention_cudnn919_half_keys", units::kHalfKeys, 0.0);
  }
  return hw;
}

std::vector<std::string> bundled_hardware(const std::string& data_dir) {
  std::vector<std::string> out;
  for (const auto& f : io::list_files(data_dir + "/hardware", ".yaml")) out.push_back(io::stem(f));
  return out;
}

Hardware load_hardware(const std::string& name_or_path, const std::string& data_dir) {
  std::string path = name_or_path;
  std::string id = io::stem(name_or_path);
  if (!io::exists(path)) {
    path = data_dir + "/hardware/" + name_or_path + ".yaml";
    id = name_or_path;
    if (!io::exists(path)) {
      std::string list;
      for (const auto& n : bundled_hardware(data_dir)) list += (list.empty() ? "" : ", ") + n;
      fail("--hardware", "'{}' is neither a file nor a bundled device; bundled: {}", name_or_path, list);
    }
  }
  return hardware_from_json(io::read_tree(path), path, id);
}

}  // namespace sapp::hardware
