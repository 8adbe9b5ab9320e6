#include "cli/from.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "app/app.hpp"
#include "config/config.hpp"
#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::cli {

void add_from(CLI::App& cmd, From& from) {
  cmd.add_option(
         "--from", from.file,
         "a training config to start from: HuggingFace config.json, HyperParallel train YAML, MindFormers YAML, Megatron-Bridge YAML, NeMo 1.x GPT YAML, "
         "Megatron/MindSpeed arguments or launch script, torchtitan TOML, NeMo AutoModel YAML, or a search YAML (detected from the content); options given "
         "here override it")
      ->type_name("PATH");
  cmd.add_option(
         "--from-format", from.format,
         "force --from's format: huggingface, hyperparallel, mindformers, megatron (megatron-bridge, nemo: their YAML), torchtitan, automodel, search, sapp")
      ->type_name("NAME");
  cmd.add_option(
         "--emit", from.emit,
         "write the plan as a megatron, mindformers, hyperparallel, torchtitan or automodel config to --output (the --from file edited in place when it is "
         "of that format), mindspeed-fsdp2: the MindSpeed-LLM FSDP2 launch given with --from, its flags edited, megatron-bridge: the Megatron-Bridge YAML "
         "given with --from, its layout fields edited, or nemo: the NeMo 1.x GPT YAML given with --from, its layout fields edited")
      ->type_name("NAME");
}

namespace {

// A plan written for a framework is priced with that framework's runtime profile (data/frameworks.yaml: what it
// overlaps, its dtypes, its selective recompute) unless the command line or the file states one.
nlohmann::json with_emit_framework(const From& from, const nlohmann::json& values) {
  if (from.emit.empty() || values.contains("framework") || (from.loaded && from.loaded->values.contains("framework"))) return values;
  nlohmann::json out = values;
  out["framework"] = config::to_string(config::format_of(config::parse_emit_format(from.emit, "--emit")));
  return out;
}

template <typename Request>
void fill_from(Request& request, From& from, const nlohmann::json& values) {
  if (!from.emit.empty()) (void)config::parse_emit_format(from.emit, "--emit");
  if (from.file.empty()) {
    if (!from.format.empty()) throw app::UsageError("--from-format needs --from");
    app::apply(request, with_emit_framework(from, values), app::Source::CommandLine);
    return;
  }
  std::optional<config::Format> forced;
  if (!from.format.empty()) forced = config::parse_format(from.format, "--from-format");
  from.loaded = config::read_file(from.file, forced);
  const config::Loaded& l = *from.loaded;
  // Filled before anything is said, so that a file refused there (a model it names that sapp cannot find) is one
  // error line.
  const std::vector<std::string> overrides = config::fill(request, l, with_emit_framework(from, values));
  std::fprintf(stderr, "sapp: note: %s read as %s\n", l.file.c_str(), config::read_as(l).c_str());
  std::string unused = config::unused_warning(l);
  if (!unused.empty()) std::fprintf(stderr, "sapp: warning: %s\n", unused.c_str());
  for (const auto& w : l.warnings) std::fprintf(stderr, "sapp: warning: %s: %s\n", l.file.c_str(), w.c_str());
  for (const auto& o : overrides) std::fprintf(stderr, "sapp: note: %s\n", o.c_str());
}

// A schedule, FP8, a dispatcher or a model --emit cannot write is refused before the search runs (emit() refuses
// it again for the plan).
template <typename Request>
void check_emit_training(const Request& request, const From& from) {
  if (from.emit.empty()) return;
  const config::EmitFormat format = config::parse_emit_format(from.emit, "--emit");
  const config::Loaded* original = from.loaded ? &*from.loaded : nullptr;
  if (format == config::EmitFormat::MindSpeedFsdp2 && !config::edits(original, format))
    throw app::UsageError(
        "--emit mindspeed-fsdp2 edits the MindSpeed-LLM FSDP2 launch given with --from (its YAML holds what sapp does not write): give --from the launch "
        "script");
  if (format == config::EmitFormat::MegatronBridge && !config::edits(original, format))
    throw app::UsageError(
        "--emit megatron-bridge edits the Megatron-Bridge YAML given with --from (its model and recipe are its own): give --from that file, or write "
        "megatron");
  if (format == config::EmitFormat::Nemo && !config::edits(original, format))
    throw app::UsageError(
        "--emit nemo edits the NeMo 1.x YAML given with --from (its model, tokenizer and data are its own): give --from that file, or write megatron");
  try {
    config::check_training_expressible(format, original, request.job.training.dualpipe_v, request.job.training.seq_split, request.job.training.fp8,
                                       request.job.training.fp4, request.job.training.ep_dedup_per_node);
  } catch (const Error& e) {
    throw app::UsageError(e.what());
  }
  // A model a new file cannot state (a torchtitan TOML without a flavour for it, a vision tower in a Megatron script
  // or a MindFormers config), refused before the search.
  if (!config::edits(original, format))  // an edited file keeps its own model
    config::check_model_expressible(format, original, app::load(request.job).model, request.job.model, request.job.training.seq);
}

// The request filled from --from and the command line, then refused if --emit cannot write its training.
template <typename Request>
void fill_any(Request& request, From& from, const nlohmann::json& values) {
  fill_from(request, from, values);
  check_emit_training(request, from);
}

}  // namespace

void fill(app::EstimateRequest& request, From& from, const nlohmann::json& values) { fill_any(request, from, values); }
void fill(app::SearchRequest& request, From& from, const nlohmann::json& values) { fill_any(request, from, values); }
void fill(app::PlanRequest& request, From& from, const nlohmann::json& values) { fill_any(request, from, values); }

config::Expressible keep_to_emit(const From& from, const app::JobRequest& job, search::Space& space) {
  if (from.emit.empty()) return {};
  const config::EmitFormat format = config::parse_emit_format(from.emit, "--emit");
  config::Expressible e = config::expressible(format, from.loaded ? &*from.loaded : nullptr);
  // AutoModel's per-stage module names state the language model's layers only: a vision model runs without PP.
  if (format == config::EmitFormat::AutoModel && app::load(job).model.spec.vision) {
    e.pp = std::vector<int>{1};
    e.why += std::string(e.why.empty() ? "" : "; ") + "a vision model without PP (AutoModel's per-stage module names state the language model's layers)";
  }
  auto keep = [&](auto& dim, const auto& allowed, const char* option) {
    if (!allowed) return;
    if (!dim) {
      dim = allowed;
    } else {
      std::erase_if(*dim, [&](const auto& v) { return std::find(allowed->begin(), allowed->end(), v) == allowed->end(); });
      if (dim->empty()) throw app::UsageError(fmt::format("{}: none of the values given can be written by --emit {} ({})", option, from.emit, e.why));
    }
  };
  keep(space.zero, e.zero, "--zero");
  keep(space.tp, e.tp, "--tp");
  keep(space.pp, e.pp, "--pp");
  keep(space.sp, e.sp, "--sp");
  keep(space.cp_algo, e.cp_algo, "--cp-algo");
  if (e.recompute_modes) {
    std::erase_if(space.recompute,
                  [&](plan::Recompute r) { return std::find(e.recompute_modes->begin(), e.recompute_modes->end(), r) == e.recompute_modes->end(); });
    if (space.recompute.empty()) throw app::UsageError(fmt::format("--recompute: none of the values given can be written by --emit {} ({})", from.emit, e.why));
  }
  space.replication_alone = e.replication_alone;
  space.hybrid_even_pipeline = e.hybrid_even_pipeline;
  space.even_pipeline = e.even_pipeline;
  if (e.zero || e.sp || e.cp_algo || e.tp || e.pp || e.recompute_modes || e.recompute != plan::RecomputeStated::PerChunkCounts)
    std::fprintf(stderr, "sapp: note: --emit %s: the search keeps to what it can write (%s)\n", from.emit.c_str(), e.why.c_str());
  return e;
}

void require_emit_output(const From& from, const std::string& output) {
  if (!from.emit.empty() && (output.empty() || output == "-")) throw app::UsageError("--emit writes the config to --output: give -o FILE");
}

void emit_plan(const From& from, const app::JobRequest& job, const plan::Layout& layout, const std::string& output) {
  if (from.emit.empty()) return;
  config::EmitFormat format = config::parse_emit_format(from.emit, "--emit");
  app::LoadedJob x = app::load(job);
  config::Plan p;
  p.layout = layout;
  if (layout.split) p.split = *layout.split;
  p.devices = job.devices;
  p.global_batch = job.training.global_batch;
  p.seq = job.training.seq;
  p.num_layers = x.model.body_layers() + x.model.vision_layers();
  p.fp8 = job.training.fp8;
  p.fp4 = job.training.fp4;
  p.fp8_param_gather = job.training.fp8_param_gather;
  p.fp8_transformer_engine = job.training.fp8_transformer_engine;
  p.gather_bytes = job.training.gather_bytes;
  p.pipeline_runs = plan::pipeline_runs(layout, job.training);
  p.dualpipe_v = plan::dualpipe_v(layout, job.training);
  p.dp_overlap = job.overlap.dp > 0;
  p.moe_deepep = job.training.ep_dedup_per_node;
  p.seq_split = job.training.seq_split;
  p.loss_fused = job.training.loss_fused;
  p.loss_chunked = job.training.loss_chunked;
  p.param_bytes = job.training.param_bytes;
  p.defer_grad_sync = job.training.defer_grad_sync;
  p.memory_limit_gib = job.memory_limit_gib;
  config::set_model(p, x.model);
  // A model a framework config defines inline travels with the plan; a config.json is named by its path.
  if (!from.loaded || from.loaded->format != config::Format::HuggingFace) p.model_config = job.model_config;
  const config::Loaded* original = from.loaded ? &*from.loaded : nullptr;
  std::vector<std::string> notes;
  io::write_atomic(output, config::emit(format, p, original, job.model, &notes));
  for (const auto& n : notes) std::fprintf(stderr, "sapp: warning: --emit %s: %s\n", from.emit.c_str(), n.c_str());
}

}  // namespace sapp::cli
