// hardware: the device catalog (data/hardware/*.yaml) and the link a group of ranks spans.
//
// A device is its peak dense BF16 FLOP/s, HBM capacity and bandwidth, achievable-efficiency factors, and a
// hierarchy of levels (node, super-node, cluster), each with how many devices it holds and the per-device
// bandwidth and latency of its links. A user file with the same schema works via --hardware path.yaml.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sapp::hardware {

struct Level {
  std::string name;
  long long devices = 0;  // devices within one unit of this level; 0 = unbounded (the whole cluster)
  double bandwidth = 0;   // bytes/s per device per direction
  double latency = 0;     // seconds per collective step
};

struct Efficiency {
  double gemm = 0.8;
  double gemm_fp8 = 0.6;        // of the FP8 peak
  double gemm_fp4 = 0;          // of the FP4 peak (0: Hardware::fp4_gemm_efficiency derives it from gemm_fp8)
  double gemm_half_rows = 256;  // a GEMM with this many rows (tokens) per rank reaches half of `gemm`
  double attention = 0.6;
  double memory = 0.75;
  double comm = 0.8;
  // Grouped GEMM on narrow MoE experts (per-expert launches and tile shapes): on top of the dense GEMM time, the
  // same work priced at the BF16 GEMM rate times grouped_gemm_half_width / the expert's FFN width. A device states
  // its own (its kernels differ); the default is h100-sxm's, fitted there.
  double grouped_gemm_half_width = 1365;
  // cuDNN 9.19's fused attention as its published training benchmark ran it (cost::terms::cudnn919_attention_rate):
  // BF16 forward + backward at long keys, of the BF16 peak, and the keys per query at which a call reaches half of
  // that. 0: no published run on this device, and the kernel cannot be priced on it.
  double attention_cudnn919 = 0;
  double attention_cudnn919_half_keys = 0;
};

// NVFP4 GEMM kernels run this many times as fast as MXFP8 ones on the same shapes, inputs already quantised: 7.161 /
// 3.764 ms per layer of the 12 GEMMs of a hidden-4096, FFN-16384 layer at 15872 tokens on a B300 (Transformer Engine's
// GEMM profiling guide, docs/examples/gemm_profiling/gemm_profiling.rst, "pre-quantized", TransformerEngine at
// d0067d0). The only published NVFP4-against-MXFP8 kernel measurement found: taken for every Blackwell device whose
// file states no gemm_fp4 (B200's and GB200's FP4 peak is 2 x their FP8 one, B300's and GB300's about 3 x).
inline constexpr double kNvfp4OverMxfp8GemmRate = 7.161 / 3.764;

struct Hardware {
  std::string id;    // catalog name or file stem
  std::string name;  // human-readable
  std::string source;
  double peak_flops = 0;      // dense BF16 FLOP/s
  double peak_flops_fp8 = 0;  // dense FP8 FLOP/s (0: no FP8 tensor cores)
  double peak_flops_fp4 = 0;  // dense FP4 FLOP/s (0: no FP4 tensor cores)
  double memory_bytes = 0;    // usable HBM bytes
  double hbm_bandwidth = 0;   // bytes/s
  // Streaming multiprocessors (0: not stated): communication kernels running beside compute take some of them
  // (cost::terms::kEpCommSms).
  double sm_count = 0;
  std::vector<Level> levels;  // innermost first; the last one is unbounded
  Efficiency efficiency;

  // Refuses FP8 pricing on a device whose file states no FP8 rate (naming the file).
  void require_fp8_rate() const;
  // Refuses NVFP4 pricing on a device whose file states no FP4 rate (naming the file).
  void require_fp4_rate() const;
  // The NVFP4 GEMM efficiency (of peak_flops_fp4): the file's efficiency.gemm_fp4 when stated, else the NVFP4 kernel
  // rate kNvfp4OverMxfp8GemmRate x the FP8 one (gemm_fp8 x peak_flops_fp8), never above gemm_fp8.
  [[nodiscard]] double fp4_gemm_efficiency() const;
  [[nodiscard]] long long devices_per_node() const { return levels.empty() ? 1 : levels.front().devices; }
  // The device as messages name it: its catalog name or file stem, else its human-readable name.
  [[nodiscard]] const std::string& label() const { return id.empty() ? name : id; }
  // The innermost level whose unit holds `span` consecutive ranks (a group of `span` ranks with stride 1 in
  // the rank order, aligned): the link its collective runs on.
  [[nodiscard]] const Level& level_for_span(long long span) const;
  // The link a ring collective over `size` ranks spaced `stride` apart runs on. Crossing a level, the members
  // inside one unit of the level below drive that many of its per-device links at once (NCCL runs one ring
  // channel per member's NIC), capped by the inner links the ring also uses; latency is the outermost level's.
  // A group with one member per node gets one NIC; eight members of a DGX node get eight NICs, capped by NVLink.
  [[nodiscard]] Level ring_link(long long size, long long stride) const;
  // An all-to-all over `size` ranks spaced `stride` apart: each rank sends 1/size of its bytes to every peer, the
  // share to peers in its own node over the node's links and the rest over its own NIC (each level's traffic on
  // that level's per-device link, at once). Returns the seconds per byte sent by one rank (before the comm
  // efficiency) and the outermost latency.
  struct AllToAll {
    double seconds_per_byte = 0;
    double latency = 0;
  };
  [[nodiscard]] AllToAll all_to_all(long long size, long long stride) const;
};

Hardware hardware_from_json(const nlohmann::json& tree, const std::string& file, const std::string& id);
Hardware load_hardware(const std::string& name_or_path, const std::string& data_dir);
std::vector<std::string> bundled_hardware(const std::string& data_dir);

}  // namespace sapp::hardware
