// config: the training configs teams already have, read into sapp's typed requests and written back.
//
// Formats: a HuggingFace config.json (model only), a HyperParallel train YAML (current and legacy layouts),
// a MindFormers YAML, Megatron-LM / MindSpeed arguments (a launch script or an arguments file; Megatron-Bridge's and NeMo
// 1.x's YAMLs read as the arguments their fields are), a torchtitan
// TOML, a NeMo AutoModel recipe YAML, the reference planner's search-config YAML, and sapp's own request YAML/JSON. The format is detected
// from the content (never the file name); each reader fills the same JSON values app::apply takes (the option
// table's keys), an inline model definition (HuggingFace keys) when the file defines the model, and the
// uneven stage split. Keys a reader does not use are listed in one warning; contradictions are errors naming
// the file, the key path and the values. See docs/configs.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/request.hpp"
#include "model/model_spec.hpp"
#include "plan/split.hpp"

namespace sapp::model {
struct Model;
}  // namespace sapp::model

namespace sapp::config {

enum class Format { HuggingFace, HyperParallel, MindFormers, Megatron, Torchtitan, AutoModel, ReferenceSearch, Sapp };

const char* to_string(Format format);
// "hf", "huggingface", "hyperparallel", "mindformers", "megatron", "mindspeed", "torchtitan", "automodel", "search", "sapp".
Format parse_format(const std::string& text, const std::string& where);
// The format `text` is written in, from its content; refuses (naming `file`) text that is none of them.
Format detect(const std::string& text, const std::string& file);

// What a framework config states, as sapp's request reads it.
struct Loaded {
  Format format = Format::Sapp;
  std::string file;
  std::string text;                                  // the file as read (write-back edits it)
  nlohmann::json values = nlohmann::json::object();  // option-table keys -> values (app::apply)
  nlohmann::json model_config;                       // inline model definition (HuggingFace keys); null when `values.model` names one
  std::optional<plan::StageSplit> split;
  std::vector<std::string> unused;            // key paths (or flags) the reader does not use
  std::vector<std::string> warnings;          // stated things sapp reads but prices only approximately
  std::map<std::string, std::string> origin;  // value key -> the key path (or flag) it was read from
  std::string legacy_schema;                  // an older schema the file states (torchtitan: "2024"); empty: the current one
  // A format read by another's reader (MindSpeed-LLM's FSDP2 launch, read by the Megatron script reader): named in
  // the note that says how the file was read; --emit never edits such a file in place (it writes a new one).
  std::string dialect;
  // Megatron: the file states its hybrid stack as core_v0.17 does (--hybrid-layer-pattern, or a pattern with '|'
  // pipeline cuts), whose cuts are the pipeline layout; --emit megatron writes the plan's split there.
  bool hybrid_pipeline_cuts = false;
  // A batch per data-parallel rank whose data-parallel degree the file leaves to the device count (torchtitan's
  // data_parallel_shard_degree = -1): the global batch is per_rank x devices / model_ranks once the devices are
  // known (fill(), when no global batch is stated).
  struct BatchFromDevices {
    long long per_rank = 0;
    long long model_ranks = 1;  // the devices one data-parallel rank spans (TP x PP x CP, x replicas)
    std::string keys;           // what it was read from, for messages
  };
  std::optional<BatchFromDevices> batch_from_devices;
  // An HSDP shard group the file leaves to the device count (torchtitan's data_parallel_shard_degree = -1 with
  // replicas): shard = devices / model_ranks, the ZeRO group shard x cp, once the devices are known (fill()).
  struct ShardFromDevices {
    long long replicate = 1;
    long long model_ranks = 1;  // replicate x TP x PP x CP
    long long cp = 1;
    std::string keys;
  };
  std::optional<ShardFromDevices> shard_from_devices;
  // Pipeline runs per step the file leaves to the device count (AutoModel's dp_size null under PP): global /
  // (per_rank x devices / model_ranks) once the devices are known (fill()).
  struct RunsFromDevices {
    long long global = 0;
    long long per_rank = 1;  // local_batch_size: one run's samples per data-parallel rank
    long long model_ranks = 1;
    std::string keys;
  };
  std::optional<RunsFromDevices> runs_from_devices;
  // Why the file leaves the device count to its launch (AutoModel's dp_size null): an error naming it unless the
  // command line gives --devices (fill()).
  std::string devices_hint;
  // Why the model the file defines cannot be priced (e.g. its vocabulary is the tokenizer's): an error unless the
  // command line names the model (fill()).
  std::string model_error;
  // A device peak the file states for its own MFU (AutoModel's benchmark.peak_tflops, TFLOP/s) and its key: fill()
  // says so when the device priced has neither that dense BF16 nor FP8 peak (a GB200 recipe priced on the default H100).
  std::optional<double> stated_peak_tflops;
  std::string stated_peak_key;
};

// Reads a file; `forced` overrides detection.
Loaded read_file(const std::string& path, std::optional<Format> forced = std::nullopt);
// Reads text already in memory (`file` names it in errors).
Loaded read_text(const std::string& text, const std::string& file, std::optional<Format> forced = std::nullopt);

// What a file was read as: its dialect, else its format's name.
std::string read_as(const Loaded& loaded);
// One warning line listing the unused keys (empty when there are none).
std::string unused_warning(const Loaded& loaded);

// Fills a request from a loaded file (Source::File, keys named as the file's key paths where they differ),
// then the command line's values over it. Returns the command-line keys that overrode a value the file states.
std::vector<std::string> fill(app::EstimateRequest& request, const Loaded& loaded, const nlohmann::json& command_line);
std::vector<std::string> fill(app::SearchRequest& request, const Loaded& loaded, const nlohmann::json& command_line);
std::vector<std::string> fill(app::PlanRequest& request, const Loaded& loaded, const nlohmann::json& command_line);

// The plan to write: the degrees, batch, sequence and split of one priced layout.
struct Plan {
  plan::Layout layout;                    // dp, tp, pp, cp, ep, etp, vpp, sp, mbs, micro_batches, zero, recompute
  std::optional<plan::StageSplit> split;  // none: the even split
  long long devices = 0;
  long long global_batch = 0;
  long long seq = 0;
  long long num_layers = 0;  // the model's layers (for the frameworks' own split arithmetic)
  bool fp8 = false;
  bool fp4 = false;                    // NVFP4 GEMMs (plan::Training::fp4; fp8 is set with it)
  bool fp8_param_gather = false;       // priced with the weights in FP8 (plan::Training::fp8_param_gather)
  bool fp8_transformer_engine = true;  // FP8 as Transformer Engine runs it, else torchao (plan::Training::fp8_transformer_engine)
  double gather_bytes = 0;             // bytes per element ZeRO-3 gathers (plan::Training::gather_bytes; 0: the weights')
  int pipeline_runs = 1;               // pipelines per step under PP (plan::Training::pipeline_runs)
  bool dualpipe_v = false;             // priced as DualPipe-V (plan::Training::dualpipe_v): the split's chunk 1 runs back up
  bool dp_overlap = false;             // priced with the DP gradient reduce and ZeRO's parameter gather overlapped (cost::Overlap::dp > 0)
  bool moe_deepep = false;             // priced with DeepEP / HybridEP's dispatch (plan::Training::ep_dedup_per_node), else alltoall
  int seq_split = 1;                   // priced as MindSpore's sequence pipeline of this many segments (plan::Training::seq_split)
  bool loss_fused = true;              // the loss as priced (plan::Training::loss_fused, loss_chunked)
  bool loss_chunked = false;
  double param_bytes = 2;        // the resident weights' bytes per element (plan::Training::param_bytes)
  bool defer_grad_sync = false;  // gradients accumulated unsharded, reduced once per step (plan::Training::defer_grad_sync)
  double memory_limit_gib = 0;
  std::optional<model::ModelSpec> model;  // written out when there is no original file to edit
  bool qkv_bias = false;                  // the model's q, k, v projections carry biases, as priced
  bool linear_bias = false;               // and its output projection and MLP too (GPT-3's biases everywhere)
  double dropout = 0;                     // the model's dropout probability, as priced (0: none)
  std::vector<int> windowed_layers;       // per language-model layer: 1 where it attends a sliding window, as priced
  nlohmann::json model_config;            // a model a framework config defined inline (HuggingFace keys); null: named
};

// MindSpeedFsdp2 edits a MindSpeed-LLM FSDP2 launch given with --from (its --parallel.* / --training.* flags): read
// as Format::Megatron with that dialect (Loaded::dialect kMindSpeedFsdp2Dialect).
// MegatronBridge edits a Megatron-Bridge YAML given with --from (read as Format::Megatron, dialect
// kMegatronBridgeDialect).
// Nemo edits a NeMo 1.x GPT YAML given with --from (read as Format::Megatron, dialect kNemoDialect).
enum class EmitFormat { Megatron, MindFormers, HyperParallel, Torchtitan, AutoModel, MindSpeedFsdp2, MegatronBridge, Nemo };
inline constexpr const char* kMindSpeedFsdp2Dialect = "MindSpeed-LLM FSDP2 (train_fsdp2.py)";
// Megatron-Bridge's ConfigContainer YAML, read as the Megatron-LM arguments its fields are.
inline constexpr const char* kMegatronBridgeDialect = "Megatron-Bridge ConfigContainer YAML";
// NeMo 1.x's GPT training YAML (trainer / model sections), read as the Megatron-LM arguments its fields are.
inline constexpr const char* kNemoDialect = "NeMo 1.x GPT YAML";
EmitFormat parse_emit_format(const std::string& text, const std::string& where);
Format format_of(EmitFormat format);
const char* emit_name(EmitFormat format);  // as --emit names it
// Whether --emit edits `original` in place: a file of that format, read as one (no dialect).
bool edits(const Loaded* original, EmitFormat format);

// The ZeRO stages and sequence-parallel settings a format can state (a search that writes its plan there keeps to
// them); none: any. `why` says which keys decide.
struct Expressible {
  std::optional<std::vector<int>> zero;
  std::optional<std::vector<bool>> sp;
  std::string why;
  plan::RecomputeStated recompute = plan::RecomputeStated::PerChunkCounts;  // what a balanced plan may vary
  // The pipeline schedules beyond (interleaved) 1F1B it has keys for, and FP8 training.
  bool dualpipe_v = true;  // DualPipe-V (Megatron: MindSpeed's dualpipev; MindFormers: zero_bubble_v; torch: DualPipeV)
  bool seq_split = false;  // MindSpore's sequence pipeline (MindFormers: seqpipe with seq_split_num)
  bool fp8 = true;
  bool fp4 = false;                   // NVFP4 training (Megatron's --fp4-format)
  bool deepep = false;                // the DeepEP / HybridEP dispatch (Megatron: --moe-token-dispatcher-type flex; AutoModel: model.backend.dispatcher)
  bool replication_alone = false;     // ZeRO 0 over DP only without other dimensions (search::Space::replication_alone)
  bool hybrid_even_pipeline = false;  // a hybrid stack only split evenly, one chunk per stage (search::Space)
  bool even_pipeline = false;         // no balanced per-stage split (search::Space::even_pipeline)
  std::optional<std::vector<plan::CpAlgo>> cp_algo = std::nullopt;  // the context-parallel algorithms it has keys for (all: nullopt)
  std::optional<std::vector<int>> tp = std::nullopt;                // the TP and PP degrees it can state (all: nullopt)
  std::optional<std::vector<int>> pp = std::nullopt;
  std::optional<std::vector<plan::Recompute>> recompute_modes = std::nullopt;  // the recompute modes it has keys for (all: nullopt)
};
// Refuses (naming --emit) a schedule or an FP8 plan the format has no keys for.
void check_training_expressible(EmitFormat format, const Loaded* original, bool dualpipe_v, int seq_split, bool fp8, bool fp4 = false, bool deepep = false);
// Refuses, before a search, a model a new file cannot state whatever the layout (an edited file of the format keeps
// its own model): a torchtitan TOML names one of torchtitan's bundled flavours; a Megatron script or a MindFormers
// config has no vision tower, MindFormers no hybrid Mamba-2 stack; a Megatron script states the windowed layers at
// this sequence length.
void check_model_expressible(EmitFormat format, const Loaded* original, const model::Model& model, const std::string& model_name, long long seq);
Expressible expressible(EmitFormat format, const Loaded* original);

// The model a plan writes out, with what its family implies and its config left unsaid (Qwen3's QK norm, Qwen2's
// q, k, v biases, GPT-3's biases and dropout), so a written file states the model as priced.
void set_model(Plan& plan, const model::Model& model);

// The plan in the framework's own format. With `original` (a file of that format), the output is that file
// with only the keys sapp owns changed, comments and every other key kept; without, a minimal file that
// names the model as `model_name` states it.
// `notes`, when given, receives what the format cannot state of the plan and how it was written instead.
std::string emit(EmitFormat format, const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes = nullptr);

// Megatron-LM flag names, bundled as data with their source (data/formats/megatron-flags.txt): core_v0.14.0's
// arguments.py (what --emit megatron writes for), with `later` also those later tags' arguments.py add.
const std::vector<std::string>& megatron_flags(bool later = false);

}  // namespace sapp::config
