// app/request: the one typed request of each command, and the one option table each is filled through.
//
// Every front end fills the same request: the command line (one option per field, generated from the table),
// a YAML/JSON file (`--config`, keys = the table's keys), the Python bindings (keyword arguments = the same
// keys) and the framework-config readers. Defaults are the request's member initialisers, declared once;
// `--help` prints them from a default-constructed request. Values arrive as JSON (the command line's text as a
// JSON string) and each field's setter checks type and range, naming where the value came from.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "cost/time.hpp"
#include "plan/layout.hpp"
#include "plan/split.hpp"
#include "search/search.hpp"

namespace sapp::app {

// Upper limits of the counts a request states; beyond them the arithmetic of a step (tokens, bytes, ranks)
// would leave the ranges it is checked in. Each refusal names the option or key and its limit.
inline constexpr long long kMaxDevices = 1LL << 20;      // 1 048 576 devices
inline constexpr long long kMaxGlobalBatch = 1LL << 30;  // sequences per step
inline constexpr long long kMaxSequence = 1LL << 26;     // tokens per sequence
inline constexpr long long kMaxDegree = 1LL << 20;       // any parallel degree or micro-batch size
inline constexpr double kMaxMemoryLimitGib = 1LL << 20;  // GiB per device

// Run facts with plan::Training's defaults and a sequence length (the request's default: 4096 tokens).
inline plan::Training with_sequence(long long seq) {
  plan::Training t;
  t.seq = seq;
  return t;
}

// Where a value came from, for error messages: a command-line option, a file's key, or a Python argument.
enum class Source { CommandLine, File, Python };

// What is trained on what: shared by every command that prices a layout.
struct JobRequest {
  Source source = Source::CommandLine;  // the front end that filled the request: errors name keys its way
  std::string model;                    // bundled model name or a config path
  // A model defined inline by a framework config (HuggingFace keys, as model::model_from_json reads them);
  // null: `model` names it. `model` then labels it (the file it came from).
  nlohmann::json model_config;
  std::string hardware = "h100-sxm";  // bundled device or a hardware YAML path
  long long devices = 0;
  plan::Training training = with_sequence(4096);  // global batch, sequence, dtypes, precision, rank order, ...
  double memory_limit_gib = 0;                    // 0: the device's HBM
  bool allow_tp_across_nodes = false;
  cost::Overlap overlap;
};

struct EstimateRequest {
  JobRequest job;
  plan::Layout layout;  // every degree but DP and the micro-batch count, which follow from the job
  bool explain = false;
  std::optional<int> explain_stage;  // default: the peak stage
  bool suggest = true;               // when the layout does not fit, re-price the cheapest changes
  // The layers per stage (and chunk) and per-chunk recompute as run; none: the even split.
  std::optional<plan::StageSplit> split;
};

struct SearchRequest {
  JobRequest job;
  search::Space space;
  int top = 10;     // rows shown
  int threads = 0;  // 0: every core
  bool unfold = false;
  bool scatter = false;                   // keep the Pareto front and the binned scatter (the HTML report draws them)
  std::optional<plan::StageSplit> split;  // held fixed on every candidate: PP and VPP follow its shape
  // Called from the calling thread with (done, total) on searches longer than a second; may be empty.
  std::function<void(long long, long long)> progress;
};

// One field of a request: its key (the JSON/YAML/Python key; the command line's option is --key with '-'
// for '_'), a short option, its help, whether it is a flag on the command line, how it is set from a JSON
// value, and how its current value reads (for --help).
template <typename Request>
struct Field {
  std::string key;
  std::string short_option;  // e.g. "-m", or empty
  std::string help;
  bool flag = false;
  std::function<void(Request& request, const nlohmann::json& value, const std::string& where)> set;
  std::function<std::string(const Request& request)> show;  // empty text: no default printed
};

// `plan`: a search, then the pipeline of its best layouts balanced (layers and recompute per stage and chunk)
// and everything re-ranked on the balanced step time.
struct PlanRequest : SearchRequest {
  int candidates = 10;                // layouts of the search balanced
  double balance_time_limit_s = 1.5;  // per layout
  std::string emit_layers;            // write the first plan's layer descriptors (layers JSON) to this file
  // What the config the plan is written to can state of its recompute: one mode for every layer (AutoModel's
  // activation_checkpointing, torchtitan's mode: the layers are balanced, every layer keeping its layout's mode), or
  // Megatron's one count of fully recomputed first layers per chunk (balanced for each count, the best kept).
  plan::RecomputeStated recompute_stated = plan::RecomputeStated::PerChunkCounts;
};

// `balance`: layers and recompute per pipeline stage and chunk for a layers JSON (the reference planner's
// layers_description), proved optimal on the simulated step where the lower bound meets it.
struct BalanceRequest {
  Source source = Source::CommandLine;
  std::string layers;  // the layers JSON (HEAD, BODY, TAIL descriptors)
  int stages = 0;
  int micro_batches = 0;
  double memory_limit_mb = 0;    // per device; 0: none
  int interleave = 1;            // chunks per stage
  bool interleave_auto = false;  // choose 1..4 by simulated step time
  bool less_memory = false;
  bool zero_bubble = false;
  bool dualpipe_v = false;
  std::string recompute_kinds;  // allowed kinds, comma-separated; empty: every kind the layers state
  // Megatron's block recompute (--recompute-num-layers): every chunk's first n layers full, the rest none; a count,
  // or "auto" (each n balanced, the fastest kept); empty: any mix per cell.
  std::string recompute_num_layers;
  double constant_memory_mb = 0;
  double time_limit_s = 90;
  std::string solver = "dp";
  int chunk_spread = 0;  // 0: no limit
  std::string svg;       // draw the best plan's simulated schedule here
  std::string manual;    // hand-written strategies to simulate
  bool naive = false;    // also simulate the even splits
};

// `balance decompose`: per-layer memory terms from measured per-stage peaks.
struct DecomposeRequest {
  Source source = Source::CommandLine;
  std::string measured;
  bool no_constant = false;
};

// `balance guide`: dry runs that make `decompose` solvable.
struct GuideRequest {
  Source source = Source::CommandLine;
  int stages = 0;
  long long layers_total = 0;
  std::string recompute_kinds;  // empty: selective,comm,both,full
  bool no_constant = false;
};

// `calibrate`: a device's efficiency factors fitted to measured runs.
struct CalibrateRequest {
  Source source = Source::CommandLine;
  std::string hardware = "h100-sxm";
  std::string runs;
  bool attention_apart = false;  // fit the attention efficiency with its own scale
};

// Limits of the balancer's counts, those of the data files' (core/units.hpp): the schedule is simulated per
// micro-batch, stage and chunk.
inline constexpr auto kMaxStages = static_cast<long long>(units::kStages.high);
inline constexpr auto kMaxMicroBatches = static_cast<long long>(units::kMicroBatches.high);
inline constexpr auto kMaxInterleave = static_cast<long long>(units::kChunks.high);
inline constexpr auto kMaxLayers = static_cast<long long>(units::kBodyLayers.high);

const std::vector<Field<EstimateRequest>>& estimate_fields();
const std::vector<Field<SearchRequest>>& search_fields();
const std::vector<Field<PlanRequest>>& plan_fields();

const std::vector<Field<BalanceRequest>>& balance_fields();
const std::vector<Field<DecomposeRequest>>& decompose_fields();
const std::vector<Field<GuideRequest>>& guide_fields();
const std::vector<Field<CalibrateRequest>>& calibrate_fields();

std::string where_of(Source source, const std::string& key, const std::string& file = "");

// Sets every field named in `values` (a JSON object keyed by field keys); refuses unknown keys naming them.
// A `config` key (search) is read first: a YAML/JSON file whose keys, at the top or under `search:`, are the
// same fields; the other values override it.
void apply(EstimateRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");
void apply(SearchRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");
void apply(PlanRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");

// A `framework` given later (the command line over a --from or --config file) resets what its profile governs
// (dtypes, selective modules, reserve, overlaps); the keys of that kind the earlier source states, and the later
// one does not, so that they can be applied again: a file's stated dtypes win over a profile's defaults.
nlohmann::json stated_under_framework(const nlohmann::json& earlier, const nlohmann::json& later);

void apply(BalanceRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");
void apply(DecomposeRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");
void apply(GuideRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");
void apply(CalibrateRequest& request, const nlohmann::json& values, Source source, const std::string& file = "");

// A usage mistake (a required value missing): the command line exits 2 for it instead of 1.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace sapp::app
