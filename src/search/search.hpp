// search: the ND search space (every degree as one value, a list, or auto), its enumeration, the constraints
// with a named reason per rejection, and the ranking by step time. Candidates are priced in parallel on a
// standard-library thread pool; results are identical for any thread count (each candidate has a fixed slot,
// ties keep the enumeration order).
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/memory.hpp"
#include "cost/time.hpp"
#include "hardware/hardware.hpp"

namespace sapp::search {

// One dimension: stated values, or auto (nullopt) for the search to generate.
using Dim = std::optional<std::vector<int>>;

struct Space {
  Dim tp, pp, cp, ep, etp, vpp, mbs, zero;
  // Candidates the data-parallel degree and the micro-batch count must be among (null: any). Both follow from the
  // devices, the batch and the other degrees; a list only filters (the reference planner's post-filter).
  Dim dp, micro_batches;
  std::optional<std::vector<bool>> sp;
  std::optional<std::vector<plan::CpAlgo>> cp_algo;
  std::vector<plan::Recompute> recompute = {plan::Recompute::Off, plan::Recompute::Selective, plan::Recompute::Full};
  int optimizer_shard = 0;
  bool allow_tp_across_nodes = false;
  std::shared_ptr<const plan::StageSplit> split;  // a stated uneven split, held fixed on every candidate (null: even)
  // Replication (ZeRO 0 over DP > 1) only without TP, PP, CP or EP, and no CP without sharding: what a target format
  // can write (torchtitan's DDP takes no other dimension, and it applies FSDP over CP); other such layouts are
  // rejected as "replication beside other dimensions".
  bool replication_alone = false;
  // A hybrid stack (ModelSpec::hybrid_pattern) only in layouts Megatron-Core's MambaStack runs
  // (plan::hybrid_stack_runs_pipeline: an even split, no virtual pipeline); others are rejected as "hybrid stack split
  // unevenly or interleaved".
  bool hybrid_even_pipeline = false;
  // The target format states no per-stage split (NeMo 1.x beyond its first and last stage's counts): `plan` keeps
  // each layout's even split instead of balancing it.
  bool even_pipeline = false;
};

// Reads "auto", "4" or "1,2,4" for a degree; `where` names the option or key in errors. Values outside
// [lowest, highest] are refused (degrees start at 1; the ZeRO stage is 0-3).
Dim parse_dim(const std::string& text, const std::string& where, int lowest = 1, int highest = 1000000);
Dim dim_from_json(const nlohmann::json& v, const std::string& where, int lowest = 1, int highest = 1000000);
// Reads a search YAML's dimensions (and recompute, docs/reference-planner.md §2) into `space`.
void space_from_json(const nlohmann::json& dims, const std::string& file, Space& space);

struct Candidate {
  plan::Layout layout;
  double peak_memory_bytes = 0;
  int peak_stage = 0;
  cost::StepTime time;
  // Layouts folded into this row: the same estimated step time (to the nanosecond) and peak memory (to the
  // KiB), e.g. DP/CP/micro-batch permutations the model cannot tell apart. 1 when not folding.
  long long twins = 1;
};

// A layout that does not fit, kept to say how close the search came.
struct Overflow {
  plan::Layout layout;
  double peak_memory_bytes = 0;
  long long twins = 1;  // layouts of the same peak memory (to the KiB) folded into this one
};

// Fitting candidates binned for a plot of step time against peak memory: memory in 1/200ths of the capacity,
// time in steps of 1 % (log scale). Each cell holds the fastest candidate's coordinates and how many fell in it.
struct ScatterCell {
  double peak_memory_bytes = 0;
  double step_s = 0;
  long long count = 0;
};

struct Result {
  std::vector<Candidate> ranked;     // the `top` fastest fitting candidates (or folded rows), fastest first
  long long fitting = 0;             // fitting candidates in all (every twin counted)
  std::vector<Overflow> closest;     // with no fitting candidate: the `top` that need the least memory
  std::vector<Candidate> pareto;     // with Options::scatter: no other fitting candidate is both faster and smaller
  std::vector<ScatterCell> scatter;  // with Options::scatter
  std::map<std::string, long long> rejected;
  long long evaluated = 0;  // candidates generated and checked
  double seconds = 0;
};

struct Options {
  int threads = 1;
  cost::Overlap overlap;
  // How many ranked rows to keep; memory stays proportional to it, not to the space.
  std::size_t top = std::numeric_limits<std::size_t>::max();
  // Fold candidates of identical step time and peak memory into one row (the first in enumeration order) with
  // a count; ranks rows by (time, memory). Unfolded, ties keep the enumeration order.
  bool fold = false;
  // Also keep the Pareto front of (peak memory, step time) and the binned scatter of every fitting candidate.
  bool scatter = false;
  // Called about every half second from the calling thread with (done, total) once a search has run for a
  // second; may be empty.
  std::function<void(long long, long long)> progress;
};

std::vector<plan::Layout> enumerate(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw,
                                    long long devices);
Result search(const model::Model& model, const Space& space, const plan::Training& training, const hardware::Hardware& hw, long long devices,
              double capacity_bytes, const Options& options);

}  // namespace sapp::search
