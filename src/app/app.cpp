#include "app/app.hpp"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::app {

namespace {

constexpr double kGiB = 1073741824.0;

void require(const JobRequest& job) {
  auto missing = [&](const char* key) { throw UsageError(fmt::format("{} is required", where_of(job.source, key))); };
  if (job.model.empty()) missing("model");
  if (job.devices <= 0) missing("devices");
  if (job.training.global_batch <= 0) missing("global_batch");
}

report::Subject subject_of(const LoadedJob& x, const JobRequest& job) {
  return report::Subject{x.model.spec.name, x.model.spec.arch,         x.model.params(), x.hardware.id,   x.hardware.name,
                         job.devices,       job.training.global_batch, job.training.seq, x.capacity_bytes};
}

plan::Cluster cluster_of(const LoadedJob& x, const JobRequest& job) {
  return plan::Cluster{job.devices, x.hardware.devices_per_node(), job.allow_tp_across_nodes};
}

struct Priced {
  cost::MemoryEstimate memory;
  cost::StepTime time;
};

// Derives DP and the micro-batch count, applies every layout rule, and prices the layout; refuses a layout
// that breaks a rule, naming the rule.
Priced price(const LoadedJob& x, const JobRequest& job, plan::Layout& layout) {
  plan::derive_data_parallel(layout, job.devices, job.training.global_batch, where_of(job.source, "devices"), where_of(job.source, "global_batch"));
  auto violations = plan::check_layout(x.model, layout, job.training, cluster_of(x, job));
  if (!violations.empty()) fail("layout", "{}: {}", violations.front().rule, violations.front().detail);
  if (job.training.fp8) x.hardware.require_fp8_rate();
  Priced p;
  p.memory = cost::estimate_memory(x.model, layout, job.training, x.capacity_bytes);
  p.time = cost::estimate_time(x.model, layout, job.training, x.hardware, p.memory, job.overlap);
  return p;
}

// The changes that make a layout fit, each re-priced, fastest first: every single change, and when none fits
// alone, every pair of them.
std::vector<report::Suggestion> suggestions(const LoadedJob& x, const JobRequest& job, const plan::Layout& base) {
  struct Change {
    std::string what;
    std::function<void(plan::Layout&, JobRequest&)> edit;
  };
  std::vector<Change> changes;
  for (plan::Recompute rc : {plan::Recompute::Selective, plan::Recompute::Full}) {
    if (rc != base.recompute) changes.push_back({fmt::format("--recompute {}", plan::to_string(rc)), [rc](plan::Layout& l, JobRequest&) { l.recompute = rc; }});
  }
  for (int z = base.zero + 1; z <= 3; ++z) changes.push_back({fmt::format("--zero {}", z), [z](plan::Layout& l, JobRequest&) { l.zero = z; }});
  changes.push_back({fmt::format("--pp {}", base.pp * 2), [](plan::Layout& l, JobRequest&) { l.pp *= 2; }});
  if (base.mbs > 1) changes.push_back({fmt::format("--mbs {}", base.mbs / 2), [](plan::Layout& l, JobRequest&) { l.mbs /= 2; }});
  changes.push_back({fmt::format("--cp {}", base.cp * 2), [](plan::Layout& l, JobRequest&) { l.cp *= 2; }});
  if (base.tp * 2 <= x.hardware.devices_per_node()) changes.push_back({fmt::format("--tp {}", base.tp * 2), [](plan::Layout& l, JobRequest&) { l.tp *= 2; }});
  if (job.devices * 2 <= kMaxDevices) changes.push_back({fmt::format("--devices {}", job.devices * 2), [](plan::Layout&, JobRequest& j) { j.devices *= 2; }});
  std::vector<report::Suggestion> out;
  auto attempt = [&](const std::string& what, const std::vector<const Change*>& edits) {
    plan::Layout l = base;
    JobRequest j = job;
    for (const Change* c : edits) c->edit(l, j);
    try {
      Priced p = price(x, j, l);
      if (p.memory.fits()) out.push_back(report::Suggestion{what, l, p.memory.peak_bytes, p.time.step_s});
    } catch (const Error&) {
      // The change breaks a rule for this model (e.g. PP beyond the layers): not a suggestion.
    }
  };
  for (const auto& c : changes) attempt(c.what, {&c});
  if (out.empty()) {
    for (std::size_t a = 0; a < changes.size(); ++a) {
      for (std::size_t b = a + 1; b < changes.size(); ++b) attempt(changes[a].what + " " + changes[b].what, {&changes[a], &changes[b]});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step_time_s < b.step_time_s; });
  if (out.size() > 8) out.resize(8);
  return out;
}

// A stated split as the layout holds it; refuses recompute counts stated without layer counts.
std::shared_ptr<const plan::StageSplit> split_of(const std::optional<plan::StageSplit>& split, const JobRequest& job) {
  if (!split) return nullptr;
  if (split->layers.empty()) {
    fail(where_of(job.source, "stage_recompute"), "per-stage recompute counts need the layers per stage too ({})", where_of(job.source, "stage_layers"));
  }
  return std::make_shared<const plan::StageSplit>(*split);
}

}  // namespace

LoadedJob load(const JobRequest& job) {
  std::string data = io::data_dir();
  LoadedJob x{model::load_catalog(data), {}, hardware::load_hardware(job.hardware, data), 0};
  model::ModelSpec spec = job.model_config.is_null() ? model::load_model(job.model, data) : model::model_from_json(job.model_config, job.model);
  x.model = model::resolve(spec, x.catalog.records, x.catalog.profiles);
  x.capacity_bytes = job.memory_limit_gib > 0 ? job.memory_limit_gib * kGiB : x.hardware.memory_bytes;
  return x;
}

report::EstimateReport run_estimate(const EstimateRequest& request) {
  require(request.job);
  LoadedJob x = load(request.job);
  report::EstimateReport r;
  r.subject = subject_of(x, request.job);
  r.layout = request.layout;
  r.layout.split = split_of(request.split, request.job);
  Priced p = price(x, request.job, r.layout);
  r.memory = p.memory;
  r.time = p.time;
  if (request.explain) {
    int stage = request.explain_stage.value_or(r.memory.peak_stage);
    if (stage >= r.layout.pp) fail(where_of(request.job.source, "explain_stage"), "stage {} does not exist; PP is {}", stage, r.layout.pp);
    r.explain = cost::explain_stage(x.model, r.layout, request.job.training, r.memory, stage);
  }
  if (!r.fits() && request.suggest) r.suggestions = suggestions(x, request.job, r.layout);
  return r;
}

report::SearchReport run_search(const SearchRequest& request) {
  require(request.job);
  LoadedJob x = load(request.job);
  search::Space space = request.space;
  space.allow_tp_across_nodes = request.job.allow_tp_across_nodes;
  space.split = split_of(request.split, request.job);
  if (space.split) {
    // The split is held fixed: PP and VPP follow its shape, and a split that states recompute decides it.
    space.pp = std::vector<int>{space.split->pp()};
    space.vpp = std::vector<int>{space.split->vpp()};
    if (space.split->states_recompute()) space.recompute = {plan::Recompute::Off};
  }
  search::Options options;
  options.overlap = request.job.overlap;
  options.threads = request.threads > 0 ? request.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.top = static_cast<std::size_t>(request.top);
  options.fold = !request.unfold;
  options.progress = request.progress;
  search::Result result = search::search(x.model, space, request.job.training, x.hardware, request.job.devices, x.capacity_bytes, options);
  report::SearchReport r;
  r.subject = subject_of(x, request.job);
  for (const auto& c : result.ranked) {
    r.rows.push_back(report::SearchRow{c, cost::estimate_memory(x.model, c.layout, request.job.training, x.capacity_bytes)});
  }
  r.fitting = result.fitting;
  r.evaluated = result.evaluated;
  r.rejected = result.rejected;
  r.closest = result.closest;
  r.seconds = result.seconds;
  r.threads = options.threads;
  r.folded = options.fold;
  return r;
}

}  // namespace sapp::app
