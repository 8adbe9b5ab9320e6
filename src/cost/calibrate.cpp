#include "cost/calibrate.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "cost/time.hpp"

namespace sapp::cost {

void read_run_settings(const nlohmann::json& row, const std::string& file, const std::string& where, plan::Training& training, Overlap& overlap) {
  io::Reader rd{row, file, where};
  if (rd.has("framework")) {
    const terms::FrameworkProfile& profile = terms::framework_profile(rd.string("framework"), at(file, where + ".framework"));
    terms::apply_profile(profile, training);
    overlap = profile.overlap;
  }
  if (rd.has("recompute_modules")) training.recompute_modules = terms::recompute_switches(row.at("recompute_modules"), at(file, where + ".recompute_modules"));
  training.fp8 = rd.boolean_or("fp8", false);
  training.fp4 = rd.boolean_or("fp4", false);  // NVFP4 GEMMs: the FP8 machinery at NVFP4's rate and sizes
  if (training.fp4) training.fp8 = true;
  training.flash_attention = rd.boolean_or("flash_attention", true);
  if (rd.has("param_bytes")) training.param_bytes = rd.quantity("param_bytes", units::kBytesPerElement);
  if (rd.has("grad_bytes")) {
    training.grad_bytes = rd.quantity("grad_bytes", units::kBytesPerElement);
    training.fp8_grad_bytes = 0;  // stated: under FP8 too
  }
  if (rd.has("optimizer_bytes")) training.optimizer_bytes = rd.quantity("optimizer_bytes", units::kBytesPerElement);
  if (rd.has("gather_bytes")) training.gather_bytes = rd.quantity("gather_bytes", units::kBytesPerElement);
  if (rd.has("attention_kernel"))
    training.attention_kernel = terms::parse_attention_kernel(rd.string("attention_kernel"), at(file, where + ".attention_kernel"));
  training.eager_norms = rd.boolean_or("eager_norms", false);
  training.loss_fused = rd.boolean_or("loss_fused", training.loss_fused);  // the framework's, unless the run's code differs
  // CP as the run's framework ran it (its profile's), unless the row states otherwise.
  training.cp_kv_gathered_once = rd.boolean_or("cp_kv_gathered_once", training.cp_kv_gathered_once);
  training.cp_kv_repeated = rd.boolean_or("cp_kv_repeated", training.cp_kv_repeated);
  if (rd.has("dispatcher")) {
    const std::string dispatcher = rd.string("dispatcher");
    if (dispatcher != "alltoall" && dispatcher != "deepep") rd.bad("dispatcher", "alltoall or deepep");
    training.ep_dedup_per_node = dispatcher == "deepep";
  }
  if (rd.boolean_or("ep_overlap", false)) overlap.ep = terms::kOverlappedEpAllToAll;
  training.moe_contiguous_routing = rd.boolean_or("moe_contiguous_routing", false);
  training.pipeline_split_counts_head = rd.boolean_or("pipeline_split_counts_head", false);
  training.dualpipe_v = rd.boolean_or("dualpipe_v", false);
  training.pipeline_runs = static_cast<int>(rd.count_or("pipeline_runs", units::kDegree, 1));
  training.lora_rank = static_cast<int>(rd.count_or("lora_rank", units::kRank, 0));
  // What the run's recipe overlaps where it differs from its framework's profile.
  if (rd.has("overlap")) read_overlap(rd.child("overlap"), overlap);
}

void read_run_layout(const nlohmann::json& row, const std::string& file, const std::string& where, plan::Layout& l) {
  io::Reader rd{row, file, where};
  l.tp = static_cast<int>(rd.count("tp", units::kDegree));
  l.pp = static_cast<int>(rd.count("pp", units::kDegree));
  l.cp = static_cast<int>(rd.count_or("cp", units::kDegree, 1));
  l.vpp = static_cast<int>(rd.count_or("vpp", units::kDegree, 1));
  l.ep = static_cast<int>(rd.count_or("ep", units::kDegree, 1));
  l.etp = static_cast<int>(rd.count_or("etp", units::kDegree, 1));
  l.mbs = static_cast<int>(rd.count_or("mbs", units::kDegree, 1));
  l.zero = static_cast<int>(rd.count_or("zero", units::kZeroStage, 1));
  l.sp = rd.boolean_or("sp", l.tp > 1);
  if (rd.has("recompute")) l.recompute = plan::read_activation_checkpoint_mode(row.at("recompute"), at(file, where + ".recompute"));
  // An uneven stage split as the run placed its layers: PP whole numbers, or with VPP one such list per chunk
  // (chunk-major, as plan::StageSplit holds it).
  if (rd.has("stage_layers")) {
    const nlohmann::json& counts = row.at("stage_layers");
    const bool per_chunk = l.vpp > 1;
    const char* expected = per_chunk ? "a list of VPP lists of PP layer counts" : "a list of PP layer counts";
    if (!counts.is_array() || static_cast<int>(counts.size()) != (per_chunk ? l.vpp : l.pp)) rd.bad("stage_layers", expected);
    plan::StageSplit split;
    for (const nlohmann::json& row_of_chunk : per_chunk ? counts : nlohmann::json::array({counts})) {
      if (!row_of_chunk.is_array() || static_cast<int>(row_of_chunk.size()) != l.pp) rd.bad("stage_layers", expected);
      split.layers.emplace_back();
      for (const nlohmann::json& n : row_of_chunk) {
        if (!n.is_number_integer() || n.get<long long>() < 0) rd.bad("stage_layers", "whole layer counts");
        split.layers.back().push_back(n.get<long long>());
      }
    }
    l.split = std::make_shared<const plan::StageSplit>(std::move(split));
  }
}

const std::vector<std::string>& run_row_keys() {
  static const std::vector<std::string> keys = {"name",
                                                "model",
                                                "framework",
                                                "devices",
                                                "global_batch",
                                                "seq",
                                                "tp",
                                                "pp",
                                                "cp",
                                                "vpp",
                                                "ep",
                                                "etp",
                                                "mbs",
                                                "zero",
                                                "sp",
                                                "recompute",
                                                "stage_layers",
                                                "recompute_modules",
                                                "fp8",
                                                "fp4",
                                                "flash_attention",
                                                "param_bytes",
                                                "grad_bytes",
                                                "optimizer_bytes",
                                                "gather_bytes",
                                                "attention_kernel",
                                                "eager_norms",
                                                "loss_fused",
                                                "cp_kv_gathered_once",
                                                "cp_kv_repeated",
                                                "dispatcher",
                                                "ep_overlap",
                                                "overlap",
                                                "dualpipe_v",
                                                "pipeline_runs",
                                                "moe_contiguous_routing",
                                                "lora_rank",
                                                "pipeline_split_counts_head"};
  return keys;
}

std::vector<MeasuredRun> runs_from_json(const nlohmann::json& tree, const std::string& file, const model::Catalog& catalog) {
  io::Reader top{tree, file, ""};
  top.only({"runs"});
  if (!top.has("runs") || !tree.at("runs").is_array() || tree.at("runs").empty()) top.bad("runs", "a non-empty list of measured runs");
  std::vector<MeasuredRun> out;
  const auto& list = tree.at("runs");
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string key = "runs[" + std::to_string(i) + "]";
    io::Reader rd{list[i], file, key};
    std::vector<std::string> keys = run_row_keys();
    keys.insert(keys.end(), {"step_time_s", "tokens_per_s_per_device"});
    rd.only(keys);
    MeasuredRun run;
    run.name = rd.string_or("name", key);
    run.model = model::resolve(model::load_model(rd.string("model"), catalog.dir), catalog.records, catalog.profiles);
    run.devices = rd.count("devices", units::kDevices);
    run.training.global_batch = rd.count("global_batch", units::kGlobalBatch);
    run.training.seq = rd.count("seq", units::kSequence);
    read_run_settings(list[i], file, key, run.training, run.overlap);
    plan::Layout& l = run.layout;
    read_run_layout(list[i], file, key, l);
    plan::derive_data_parallel(l, run.devices, run.training.global_batch, at(file, key + ".devices"), at(file, key + ".global_batch"));
    auto violations = plan::check_layout(run.model, l, run.training, run.devices);
    if (!violations.empty()) fail(at(file, key), "{}: {}", violations.front().rule, violations.front().detail);
    if (rd.has("step_time_s") == rd.has("tokens_per_s_per_device")) rd.bad("step_time_s", "exactly one of step_time_s or tokens_per_s_per_device");
    if (rd.has("step_time_s")) {
      run.step_time_s = rd.quantity("step_time_s", units::kStepTime);
    } else {
      double tps = rd.quantity("tokens_per_s_per_device", units::kTokenRate);
      run.step_time_s = static_cast<double>(run.training.global_batch * run.training.seq) / (tps * static_cast<double>(run.devices));
    }
    out.push_back(std::move(run));
  }
  return out;
}

std::vector<PublishedRun> published_runs_from_json(const nlohmann::json& tree, const std::string& file, const model::Catalog& catalog) {
  io::Reader top{tree, file, ""};
  top.only({"sources", "runs", "known_gaps", "excluded", "sweeps"});
  if (!top.has("runs") || !tree.at("runs").is_array() || tree.at("runs").empty()) top.bad("runs", "a non-empty list of published runs");
  if (!top.has("sources") || !tree.at("sources").is_object()) top.bad("sources", "a mapping of source keys to citations");
  const nlohmann::json& sources = tree.at("sources");
  std::vector<std::string> keys = run_row_keys();
  keys.insert(keys.end(), {"regime", "source", "shape", "hardware", "metric", "measured", "peak_memory_gib", "memory_metric", "rank_miss", "fitted",
                           "fitted_for", "mtp_layers", "sweep"});
  std::vector<PublishedRun> out;
  const auto& list = tree.at("runs");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& row = list[i];
    const std::string key = "runs[" + std::to_string(i) + "]";
    io::Reader rd{row, file, key};
    rd.only(keys);
    PublishedRun v;
    MeasuredRun& run = v.run;
    run.name = rd.string("name");
    const std::string where = "runs." + run.name;
    v.source = rd.string("source");
    const std::string cited = v.source.substr(0, v.source.find_first_of(" ;,:"));
    if (!sources.contains(cited)) rd.bad("source", "text starting with a key of `sources`");
    v.regime = rd.string("regime");
    v.framework = rd.string("framework");
    v.metric = rd.string("metric");
    if (v.metric != "step_time_s" && v.metric != "tokens_per_s_per_device" && v.metric != "tflops_megatron2021")
      rd.bad("metric", "step_time_s, tokens_per_s_per_device or tflops_megatron2021");
    v.measured = rd.quantity("measured", units::kPublishedValue);
    v.peak_gib = rd.has("peak_memory_gib") ? rd.quantity("peak_memory_gib", units::kMemoryGib) : 0.0;
    v.rank_miss = rd.boolean_or("rank_miss", false);
    v.fitted = rd.boolean_or("fitted", false);
    v.sweep = rd.string_or("sweep", "");
    v.hardware = hardware::load_hardware(rd.string("hardware"), catalog.dir);
    run.devices = rd.count("devices", units::kDevices);
    run.training.global_batch = rd.count("global_batch", units::kGlobalBatch);
    run.training.seq = rd.count("seq", units::kSequence);
    // The framework's profile, then what the run's recipe states, and its layout, as `sapp calibrate` reads runs.
    read_run_settings(row, file, where, run.training, run.overlap);
    plan::Layout& l = run.layout;
    read_run_layout(row, file, where, l);
    if (v.framework == "megatron2021") {
      // 2021 Megatron (Narayanan et al.): fp16, eager attention, fp16 gradients all-reduced in fp16, full
      // recompute, no SP, no distributed optimizer.
      run.training.flash_attention = false;
      l.recompute = plan::Recompute::Full;
      l.zero = 0;
      l.sp = false;
    }
    plan::derive_data_parallel(l, run.devices, run.training.global_batch, at(file, where + ".devices"), at(file, where + ".global_batch"));
    if (rd.has("model")) {
      model::ModelSpec spec = model::load_model(rd.string("model"), catalog.dir);
      // The multi-token prediction layers the run trained when they differ from the bundled config's (a Megatron
      // launch without --mtp-num-layers trains none).
      if (rd.has("mtp_layers")) {
        const long long mtp = rd.integer("mtp_layers");
        if (mtp < 0 || mtp > 16) rd.bad("mtp_layers", "a count of multi-token prediction layers, 0 to 16");
        spec.mtp_depth = mtp;
      }
      run.model = model::resolve(spec, catalog.records, catalog.profiles);
    } else {
      // A GPT shape given by the table itself: 4h FFN, learned positions, dropout 0.1 (Megatron-LM's defaults), the
      // vocabulary (Narayanan et al.'s 51200 unless stated) and embeddings tied unless `tied: false`.
      io::Reader shape = rd.child("shape");
      shape.only({"hidden", "heads", "layers", "vocab", "tied"});
      const long long h = shape.count("hidden", units::kHiddenSize);
      const long long layers = shape.count("layers", units::kLayers);
      const nlohmann::json cfg = {{"model_type", "gpt3"},
                                  {"hidden_size", h},
                                  {"num_attention_heads", shape.count("heads", units::kHeads)},
                                  {"num_hidden_layers", layers},
                                  {"vocab_size", shape.has("vocab") ? shape.count("vocab", units::kVocab) : 51200},
                                  {"intermediate_size", 4 * h},
                                  {"learned_position_embeddings", run.training.seq},
                                  {"tie_word_embeddings", shape.boolean_or("tied", true)},
                                  {"hidden_dropout", 0.1}};
      run.model = model::resolve(model::model_from_json(cfg, at(file, where)), catalog.records, catalog.profiles);
      v.gpt_hidden = static_cast<double>(h);
      v.gpt_layers = static_cast<double>(layers);
    }
    auto violations = plan::check_layout(run.model, l, run.training, run.devices);
    if (!violations.empty()) fail(at(file, where), "{}: {}", violations.front().rule, violations.front().detail);
    out.push_back(std::move(v));
  }
  return out;
}

double published_metric(const PublishedRun& r, const StepTime& t) {
  if (r.metric == "step_time_s") return t.step_s;
  if (r.metric == "tokens_per_s_per_device") return t.tokens_per_s_per_device;
  // Narayanan et al. 2021's model FLOPs per step: 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)), V = 51200.
  const double B = static_cast<double>(r.run.training.global_batch), s = static_cast<double>(r.run.training.seq), V = 51200;
  const double h = r.gpt_hidden, l = r.gpt_layers;
  const double flops = 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
  return flops / (t.step_s * static_cast<double>(r.run.devices)) / 1e12;
}

double step_error(const PublishedRun& r, double estimated_metric) {
  return r.metric == "step_time_s" ? estimated_metric / r.measured - 1.0 : r.measured / estimated_metric - 1.0;
}

namespace {

// Scales the efficiencies the runs exercise: BF16 GEMMs only if some run is BF16, FP8 GEMMs only if some is FP8;
// attention by `attention_scale` (the same scale unless it is fitted apart).
hardware::Hardware scaled(const hardware::Hardware& hw, double scale, double attention_scale, bool bf16, bool fp8) {
  hardware::Hardware h = hw;
  auto cap = [](double v, double x) { return std::min(1.0, v * x); };
  if (bf16) h.efficiency.gemm = cap(hw.efficiency.gemm, scale);
  if (fp8) h.efficiency.gemm_fp8 = cap(hw.efficiency.gemm_fp8, scale);
  // NVFP4 runs count as FP8 ones here: a stated gemm_fp4 scales with gemm_fp8 (else it follows gemm_fp8 already).
  if (fp8 && hw.efficiency.gemm_fp4 > 0) h.efficiency.gemm_fp4 = cap(hw.efficiency.gemm_fp4, scale);
  h.efficiency.attention = cap(hw.efficiency.attention, attention_scale);
  h.efficiency.memory = cap(hw.efficiency.memory, scale);
  return h;
}

// Golden-section search of the minimum of `f` on [0.2, 2] (efficiencies are capped at 1).
template <typename F>
double golden_minimum(F f) {
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = 0.2;
  double b = 2.0;
  double x1 = b - phi * (b - a);
  double x2 = a + phi * (b - a);
  double f1 = f(x1);
  double f2 = f(x2);
  for (int i = 0; i < 60 && b - a > 1e-4; ++i) {
    if (f1 < f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - phi * (b - a);
      f1 = f(x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + phi * (b - a);
      f2 = f(x2);
    }
  }
  return (a + b) / 2.0;
}

std::vector<double> errors(const std::vector<MeasuredRun>& runs, const hardware::Hardware& hw) {
  std::vector<double> out;
  for (const auto& r : runs) {
    double est = estimate_time(r.model, r.layout, r.training, hw, r.overlap).step_s;
    out.push_back((est - r.step_time_s) / r.step_time_s);
  }
  return out;
}

double loss(const std::vector<MeasuredRun>& runs, const hardware::Hardware& hw) {
  double sum = 0;
  for (const auto& r : runs) {
    double est = estimate_time(r.model, r.layout, r.training, hw, r.overlap).step_s;
    double e = std::log(est / r.step_time_s);
    sum += e * e;
  }
  return sum;
}

}  // namespace

Calibration calibrate(const std::vector<MeasuredRun>& runs, const hardware::Hardware& hw, bool attention_apart) {
  if (runs.empty()) fail("calibrate", "needs at least one measured run");
  Calibration c;
  c.errors_before = errors(runs, hw);
  bool bf16 = std::any_of(runs.begin(), runs.end(), [](const MeasuredRun& r) { return !r.training.fp8; });
  bool fp8 = std::any_of(runs.begin(), runs.end(), [](const MeasuredRun& r) { return r.training.fp8; });
  if (!attention_apart) {
    c.scale = golden_minimum([&](double x) { return loss(runs, scaled(hw, x, x, bf16, fp8)); });
    c.attention_scale = c.scale;
  } else {
    // Two scales, each searched with the other held (coordinate descent, eight rounds): the GEMMs' and memory's,
    // and the attention kernel's (Calibrate.RecoversAnAttentionScaleFittedApart recovers planted ones within 0.01).
    for (int round = 0; round < 8; ++round) {
      c.scale = golden_minimum([&](double x) { return loss(runs, scaled(hw, x, c.attention_scale, bf16, fp8)); });
      c.attention_scale = golden_minimum([&](double x) { return loss(runs, scaled(hw, c.scale, x, bf16, fp8)); });
    }
  }
  hardware::Hardware fitted = scaled(hw, c.scale, c.attention_scale, bf16, fp8);
  c.efficiency = fitted.efficiency;
  c.errors_after = errors(runs, fitted);
  return c;
}

}  // namespace sapp::cost
