// plan/split: the layers each pipeline stage and virtual chunk holds when a team runs an uneven split, and how
// many of them each recompute mode covers. MindFormers' offset and per-stage recompute arrays, Megatron's
// first/last-stage layer counts, --pipeline-model-parallel-layout and --recompute-num-layers, torchtitan's
// per-layer activation checkpointing all reduce to this one value. Held by a Layout through a shared pointer
// (null: the even split), so a layout stays cheap to copy.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/layout.hpp"

namespace sapp::plan {

// Counts per [chunk][stage]: rows are virtual chunks (VPP), columns pipeline stages (PP), chunk-major as
// MindFormers writes its two-dimensional offset and recompute arrays.
using ChunkCounts = std::vector<std::vector<long long>>;

struct StageSplit {
  ChunkCounts layers;  // LM (and vision tower) layers per chunk; MTP layers always sit on the last chunk
  // Recomputed layers per chunk: the first `full` layers of a chunk are recomputed whole, the next `selective`
  // selectively, the rest not at all. Both empty: every layer takes the layout's one recompute mode.
  ChunkCounts full;
  ChunkCounts selective;

  [[nodiscard]] int pp() const { return layers.empty() ? 0 : static_cast<int>(layers.front().size()); }
  [[nodiscard]] int vpp() const { return static_cast<int>(layers.size()); }
  [[nodiscard]] bool states_recompute() const { return !full.empty() || !selective.empty(); }
  [[nodiscard]] long long total() const;
  [[nodiscard]] long long full_total() const;             // layers fully recomputed, summed over stages and chunks
  [[nodiscard]] long long selective_total() const;        // layers selectively recomputed, likewise
  [[nodiscard]] long long stage_layers(int stage) const;  // summed over its chunks
  bool operator==(const StageSplit& other) const = default;
};

// What a framework's config can state of a split's recompute: any counts per chunk (MindFormers' per-stage arrays),
// one mode for every layer (torchtitan's and AutoModel's activation checkpointing), or full recompute of each
// chunk's first n layers with one n for all (Megatron's --recompute-method block --recompute-num-layers n; its
// selective granularity covers every layer).
enum class RecomputeStated { PerChunkCounts, OneModeForAll, FirstLayersOfEveryChunk };

// The even split for_each_chunk_group makes without a StageSplit (the remainder to chunks 1..r in chunk-major
// order, chunk 0 holding the embedding), with every layer under `mode` spelt out as counts.
StageSplit even_split(long long layers, int pp, int vpp);
// Every rule the split breaks for `layers` layers on PP x VPP chunks: its shape, counts below zero, the sum,
// and recompute counts beyond a chunk's layers. Empty when it is valid.
std::vector<Violation> check_split(const StageSplit& split, long long layers, int pp, int vpp);

// "4,5,5,4" (one chunk per stage) or "4,5/5,4" (chunk rows separated by '/'), or a JSON list / list of lists.
ChunkCounts read_counts(const nlohmann::json& stated, const std::string& where);
std::string format_counts(const ChunkCounts& counts);  // the text read_counts reads back
// "full=3,4,4,2 selective=1,0,0,0" (modes separated by spaces or ';'), or a JSON mapping mode -> counts.
void read_recompute_counts(StageSplit& split, const nlohmann::json& stated, const std::string& where);
std::string format_recompute_counts(const StageSplit& split);
// Each chunk's counts summed over chunks, per stage (for framework formats that state one count per stage).
std::vector<long long> per_stage(const ChunkCounts& counts);

}  // namespace sapp::plan
