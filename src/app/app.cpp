#include "app/app.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/parallel.hpp"
#include "core/units.hpp"
#include "cost/terms.hpp"
#include "pipeline/descriptors.hpp"
#include "pipeline/svg.hpp"
#include "plan/stages.hpp"

namespace sapp::app {

namespace {

using units::kGiB;

void require(const JobRequest& job) {
  auto missing = [&](const char* key) { throw UsageError(fmt::format("{} is required", where_of(job.source, key))); };
  if (job.model.empty()) missing("model");
  if (job.devices <= 0) missing("devices");
  if (job.training.global_batch <= 0) missing("global_batch");
}

report::Subject subject_of(const LoadedJob& x, const JobRequest& job) {
  report::Subject s;
  s.model = x.model.spec.name;
  s.arch = x.model.spec.arch;
  s.params = x.model.params();
  s.hardware_id = x.hardware.id;
  s.hardware_name = x.hardware.name;
  s.devices = job.devices;
  s.global_batch = job.training.global_batch;
  s.seq = job.training.seq;
  s.capacity_bytes = x.capacity_bytes;
  s.precision = cost::terms::precision_name(job.training);
  cost::terms::Validity v = cost::terms::validated(x.hardware, s.precision);
  s.validated = v.validated;
  s.validation = v.reason;
  if (!x.model.spec.unread_keys.empty()) {
    s.warnings.push_back(fmt::format("{}: key(s) sapp does not read and cannot price (misspelt, or a feature it does not model): {}", x.model.spec.source,
                                     fmt::join(x.model.spec.unread_keys, ", ")));
  }
  // A learned position table (GPT-2/3) holds one row per position: a longer sequence has none to look up.
  if (const auto rows = x.model.spec.learned_position_embeddings; rows && job.training.seq > *rows) {
    s.warnings.push_back(
        fmt::format("{}: the model learns {} positions, fewer than the {}-token sequence (priced with its {}-row table); the "
                    "model needs a longer table to run it",
                    x.model.spec.source, *rows, job.training.seq, *rows));
  }
  if (x.model.spec.vision && !x.model.spec.vision->tokens_stated) {
    s.warnings.push_back(
        fmt::format("{}: vision_config states no visual_tokens: the vision tower is priced at {} tokens per sample (state "
                    "vision_config.visual_tokens for your images)",
                    x.model.spec.source, x.model.spec.vision->tokens));
  }
  return s;
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
  if (2LL * base.tp <= x.hardware.devices_per_node()) changes.push_back({fmt::format("--tp {}", base.tp * 2), [](plan::Layout& l, JobRequest&) { l.tp *= 2; }});
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
  model::ModelSpec spec;
  try {
    spec = job.model_config.is_null() ? model::load_model(job.model, data) : model::model_from_json(job.model_config, job.model);
  } catch (const Error&) {
    // A config of a family sapp has no profile for fails first on a key its family names otherwise (DBRX's
    // n_layers): the unknown family is what to say.
    nlohmann::json config = job.model_config;
    if (config.is_null() && io::exists(job.model)) config = io::read_tree(model::model_file(job.model));
    model::refuse_unknown_family(config, job.model, x.catalog.profiles);
    throw;
  }
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
  const long long chunks = 1LL * r.layout.pp * r.layout.vpp;
  const long long layers = x.model.body_layers();
  if (!r.layout.split && chunks > 1 && !request.job.training.pipeline_split_counts_head && layers % chunks != 0) {
    std::string rows;
    for (const auto& row : plan::even_split(layers, r.layout.pp, r.layout.vpp).layers)
      rows += (rows.empty() ? "" : " / ") + fmt::format("{}", fmt::join(row, ","));
    r.subject.warnings.push_back(
        fmt::format("{} layers do not divide over PP {} x VPP {}: priced as {} per stage (Megatron-LM refuses an uneven split "
                    "unless it is stated: --decoder-first/last-pipeline-num-layers or --pipeline-model-parallel-layout; "
                    "--stage-layers prices another)",
                    layers, r.layout.pp, r.layout.vpp, rows));
  }
  if (request.explain) {
    int stage = request.explain_stage.value_or(r.memory.peak_stage);
    if (stage >= r.layout.pp) fail(where_of(request.job.source, "explain_stage"), "stage {} does not exist; PP is {}", stage, r.layout.pp);
    r.explain = cost::explain_stage_terms(x.model, r.layout, request.job.training, x.hardware, request.job.overlap, stage);
  }
  if (!r.fits() && request.suggest) r.suggestions = suggestions(x, request.job, r.layout);
  return r;
}

namespace {

// The search over a job already loaded (run_plan loads once for the search and the balancing).
report::SearchReport search_loaded(const LoadedJob& x, const SearchRequest& request) {
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
  options.threads = parallel::threads_or_cores(request.threads);
  options.top = static_cast<std::size_t>(request.top);
  options.fold = !request.unfold;
  options.progress = request.progress;
  options.scatter = request.scatter;
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
  r.pareto = result.pareto;
  r.scatter = result.scatter;
  r.seconds = result.seconds;
  r.threads = options.threads;
  r.folded = options.fold;
  return r;
}

}  // namespace

report::SearchReport run_search(const SearchRequest& request) {
  require(request.job);
  return search_loaded(load(request.job), request);
}

namespace {

// The search's estimate of a layout, as a plan (no pipeline, or not balanced): per stage its layers and recompute
// per chunk as the even (or stated) split places them, its peak, and its time per micro-batch from the same estimate.
report::Plan estimate_plan(const LoadedJob& x, const PlanRequest& request, const report::SearchRow& row, const std::string& status) {
  const plan::Layout& l = row.candidate.layout;
  report::Plan p;
  p.layout = l;
  p.step_time_s = row.candidate.time.step_s;
  p.even_step_time_s = row.candidate.time.step_s;
  p.estimate_step_time_s = row.candidate.time.step_s;
  p.peak_memory_bytes = row.candidate.peak_memory_bytes;
  p.fits = true;
  p.status = status;
  std::vector<cost::StageTime> times;
  cost::estimate_time(x.model, l, request.job.training, x.hardware, row.memory, request.job.overlap, nullptr, &times);
  for (const auto& s : row.memory.stages) {
    report::PlanStage st;
    st.stage = s.stage;
    st.layers.assign(static_cast<std::size_t>(l.vpp), 0);
    st.recompute.assign(static_cast<std::size_t>(l.vpp), {});
    st.peak_memory_bytes = s.total();
    if (static_cast<std::size_t>(s.stage) < times.size()) st.time_s = times[static_cast<std::size_t>(s.stage)].total;
    p.stages.push_back(st);
  }
  // Body (and vision) layers only, as balanced plans state them: the MTP layers travel with the tail.
  plan::for_each_chunk_group(x.model, l, request.job.training, [&](int stage, int chunk, int, long long count, plan::Recompute mode, bool is_mtp) {
    if (is_mtp || static_cast<std::size_t>(stage) >= p.stages.size()) return;
    report::PlanStage& st = p.stages[static_cast<std::size_t>(stage)];
    st.layers[static_cast<std::size_t>(chunk)] += count;
    st.recompute[static_cast<std::size_t>(chunk)][mode == plan::Recompute::Off ? "none" : plan::to_string(mode)] += count;
  });
  return p;
}

// Balances one layout's pipeline; falls back to the estimate (with the reason) when it cannot.
report::Plan balance_plan(const LoadedJob& x, const PlanRequest& request, const report::SearchRow& row) {
  const plan::Layout& l = row.candidate.layout;
  if (l.pp == 1) return estimate_plan(x, request, row, "no pipeline (PP 1): the estimate");
  if (request.space.even_pipeline) return estimate_plan(x, request, row, "not balanced: the target config states no per-stage split (the even split)");
  // A plan written with its recompute per chunk leaves the MTP layers not recomputed (plan::for_each_chunk_group).
  const std::optional<plan::Recompute> mtp_mode =
      request.recompute_stated == plan::RecomputeStated::OneModeForAll ? std::nullopt : std::optional<plan::Recompute>(plan::Recompute::Off);
  balance::Descriptors d = balance::describe(x.model, l, request.job.training, x.hardware, request.job.overlap, mtp_mode);
  // A hybrid stack without a period (Nemotron-H): every run of one kind a BODY type, split contiguously at the
  // layout's recompute mode (balance::kMaxProgramBodyTypes).
  const bool sequence = d.aperiodic;
  if (sequence && request.space.hybrid_even_pipeline && !x.model.spec.hybrid_pattern.empty())
    return estimate_plan(x, request, row, "not balanced: the target splits a hybrid stack evenly (Megatron-Core's MambaStack: num_layers // PP per stage)");
  if (sequence) d = balance::describe(x.model, l, request.job.training, x.hardware, request.job.overlap, mtp_mode, std::numeric_limits<int>::max());
  if (!d.why_not.empty()) return estimate_plan(x, request, row, "not balanced: " + d.why_not);
  balance::Problem problem = balance::problem_for(d, l, request.job.training, x.capacity_bytes);
  problem.time_limit_s = request.balance_time_limit_s;
  if (sequence) problem.kinds = {balance::rc_of(l.recompute)};
  // What the target config can state: one mode for every layer (the layout's), or Megatron's one count of fully
  // recomputed first layers per chunk (its selective granularity and several layer types: one mode for all).
  const bool first_layers = request.recompute_stated == plan::RecomputeStated::FirstLayersOfEveryChunk && l.recompute != plan::Recompute::Selective &&
                            d.layers.bodies.size() == 1 && d.layers.has_memory();
  if (request.recompute_stated == plan::RecomputeStated::OneModeForAll ||
      (request.recompute_stated == plan::RecomputeStated::FirstLayersOfEveryChunk && !first_layers))
    problem.kinds = {balance::rc_of(l.recompute)};
  balance::Solution sol;
  std::string tried;  // the block-recompute counts solved, when the target is Megatron
  try {
    if (first_layers) {
      long long n = 0;
      int balanced = 0;
      sol = balance::solve_block_recompute(problem, &n, &balanced);
      tried = fmt::format("--recompute-num-layers {} ({} counts balanced)", n, balanced);
    } else {
      sol = balance::solve(problem);
    }
  } catch (const Error& e) {
    // A problem the balancer refuses (e.g. fewer periods of a periodic stack than chunks): this layout stays as
    // estimated, with the reason.
    return estimate_plan(x, request, row, fmt::format("not balanced: {}", e.what()));
  }
  if (!sol.feasible) {
    // A plan stating recompute per chunk leaves the MTP layers not recomputed, where the even split's one mode
    // recomputes them too: say so when that is what the even split needed.
    const bool mtp_kept = mtp_mode && x.model.spec.mtp_depth.value_or(0) > 0 && l.recompute != plan::Recompute::Off;
    return estimate_plan(x, request, row,
                         fmt::format("not balanced: the balancer found no plan within the memory limit ({}){}", sol.method,
                                     mtp_kept ? "; a plan stating recompute per chunk keeps the MTP layers' activations, which the even split's one "
                                                "recompute mode recomputes"
                                              : ""));
  }
  const double balanced_step_s = sol.eval.objective / 1000.0 + d.outside_pipeline_s;
  if (balanced_step_s >= row.candidate.time.step_s) {
    return estimate_plan(x, request, row,
                         fmt::format("even split kept: the balancer found nothing faster ({:.3f} s, {}{}{})", balanced_step_s,
                                     sol.optimal ? "proved optimal" : fmt::format("bound gap {:.1f} %", 100.0 * sol.gap), tried.empty() ? "" : " at " + tried,
                                     sol.timed_out ? ", time limit reached" : ""));
  }
  report::Plan p;
  p.layout = l;
  p.balanced = true;
  p.even_step_time_s = row.candidate.time.step_s;
  p.step_time_s = balanced_step_s;
  p.fits = sol.eval.fits;
  p.status = sol.optimal ? "proved optimal" : fmt::format("best found, bound gap {:.1f} %", 100.0 * sol.gap);
  if (!tried.empty()) p.status += " at " + tried;
  for (double mb : sol.eval.stage_memory_mb) p.peak_memory_bytes = std::max(p.peak_memory_bytes, mb * balance::kBytesPerMb);
  const auto S = static_cast<std::size_t>(l.pp);
  const auto V = static_cast<std::size_t>(l.vpp);
  // The plan in layers: a periodic stack's BODY layer is a whole period (Descriptors::layers_per_unit).
  const long long unit = d.layers_per_unit;
  balance::Assignment in_layers = sol.x;
  for (auto& body : in_layers) {
    for (auto& chunk : body) {
      for (auto& cell : chunk) {
        for (long long& n : cell) n *= unit;
      }
    }
  }
  balance::Problem in_layers_problem = problem;
  for (auto& body : in_layers_problem.layers.bodies) body.count *= unit;
  for (std::size_t s = 0; s < S; ++s) {
    report::PlanStage st;
    st.stage = static_cast<int>(s);
    st.layers.assign(V, 0);
    st.recompute.assign(V, {});
    for (std::size_t v = 0; v < V; ++v) {
      for (const auto& body : in_layers) {
        for (int r = 0; r < balance::kRcKinds; ++r) {
          long long n = body[v][s][static_cast<std::size_t>(r)];
          if (n == 0) continue;
          st.layers[v] += n;
          st.recompute[v][balance::to_string(static_cast<balance::Rc>(r))] += n;
        }
      }
    }
    st.peak_memory_bytes = sol.eval.stage_memory_mb[s] * balance::kBytesPerMb;
    st.time_s = sol.eval.stage_time[s] / 1000.0;
    p.stages.push_back(st);
  }
  // The layout's one recompute mode says what the balanced plan does when every layer does the same.
  std::set<std::string> kinds;
  for (const auto& st : p.stages) {
    for (const auto& per_chunk : st.recompute) {
      for (const auto& [kind, n] : per_chunk) {
        if (n > 0) kinds.insert(kind);
      }
    }
  }
  if (kinds == std::set<std::string>{"none"}) p.layout.recompute = plan::Recompute::Off;
  if (kinds == std::set<std::string>{"full"}) p.layout.recompute = plan::Recompute::Full;
  if (kinds == std::set<std::string>{"selective"}) p.layout.recompute = plan::Recompute::Selective;
  auto fw = balance::to_framework(in_layers_problem, in_layers);
  nlohmann::json arrays = nlohmann::json::array();
  for (std::size_t b = 0; b < fw.size(); ++b) {
    arrays.push_back({{"body", problem.layers.bodies[b].name},
                      {"offset", fw[b].offset},
                      {"recompute", fw[b].recompute},
                      {"select_recompute", fw[b].select_recompute},
                      {"select_comm_recompute", fw[b].select_comm_recompute}});
  }
  p.framework = arrays;
  p.descriptors = balance::to_layers_json(d);
  // The same plan as `sapp estimate` prices it (what a user reading the written config back sees).
  const plan::Layout priced = layout_with_split(p);
  const cost::MemoryEstimate priced_memory = cost::estimate_memory(x.model, priced, request.job.training, x.capacity_bytes);
  const cost::StepTime priced_time = cost::estimate_time(x.model, priced, request.job.training, x.hardware, priced_memory, request.job.overlap);
  p.estimate_step_time_s = priced_time.step_s;
  // What the step holds outside the pipeline schedule (exposed DP and PP communication, the optimizer step) as this
  // plan's recompute leaves it: ZeRO-3's per-micro-batch gathers hide behind each micro-batch's compute, recompute
  // included, so a plan that recomputes less than the layout exposes more of them than the descriptors' (the
  // layout's) figure.
  const double outside_s = priced_time.breakdown.dp_comm_s + priced_time.breakdown.pp_comm_s + priced_time.breakdown.optimizer_s;
  p.step_time_s = sol.eval.objective / 1000.0 + outside_s;
  if (p.step_time_s >= row.candidate.time.step_s) {
    return estimate_plan(x, request, row,
                         fmt::format("even split kept: the balanced plan is no faster once its recompute's DP exposure is counted ({:.3f} s)", p.step_time_s));
  }
  if (std::abs(outside_s - d.outside_pipeline_s) > 0.005 * p.step_time_s) {  // said when it moves the step by 0.5 % or more
    p.status += fmt::format(" for the pipeline; {:.3f} s outside it at this recompute ({:.3f} s at the layout's)", outside_s, d.outside_pipeline_s);
  }
  simulate::SimResult sim = simulate::simulate(problem.schedule, problem.stages, problem.chunks, problem.micro_batches, balance::stage_times(problem, sol.x));
  simulate::SvgOptions svg;
  svg.title = l.describe();
  svg.summary = fmt::format("balanced pipeline: {:.1f} ms per step in the schedule (one step), {}", sim.end, p.status);
  svg.memory_limit = problem.memory_limit_mb;
  p.timeline_svg = simulate::render_svg(sim, problem.chunks, svg);
  return p;
}

}  // namespace

plan::Layout layout_with_split(const report::Plan& p) {
  plan::Layout l = p.layout;
  if (!p.balanced) return l;
  plan::StageSplit split;
  const auto V = static_cast<std::size_t>(l.vpp);
  const auto S = static_cast<std::size_t>(l.pp);
  split.layers.assign(V, std::vector<long long>(S, 0));
  split.full.assign(V, std::vector<long long>(S, 0));
  split.selective.assign(V, std::vector<long long>(S, 0));
  for (const auto& st : p.stages) {
    const auto s = static_cast<std::size_t>(st.stage);
    for (std::size_t v = 0; v < V && v < st.layers.size(); ++v) {
      split.layers[v][s] = st.layers[v];
      auto count = [&](const char* kind) {
        auto it = st.recompute[v].find(kind);
        return it == st.recompute[v].end() ? 0LL : it->second;
      };
      split.full[v][s] = count("full");
      split.selective[v][s] = count("selective");
    }
  }
  l.split = std::make_shared<const plan::StageSplit>(std::move(split));
  return l;
}

report::PlanReport run_plan(const PlanRequest& request) {
  SearchRequest search = request;
  search.top = std::max(request.top, request.candidates);
  require(request.job);
  LoadedJob x = load(request.job);
  report::PlanReport r;
  r.search = search_loaded(x, search);
  auto t0 = std::chrono::steady_clock::now();
  std::size_t n = std::min<std::size_t>(r.search.rows.size(), static_cast<std::size_t>(request.candidates));
  // Each layout is balanced on its own (one solver per thread); the plans do not depend on the thread count.
  r.plans.resize(n);
  std::atomic<long long> done{0};
  std::function<void()> tick;
  if (request.progress) tick = [&] { request.progress(done.load(), static_cast<long long>(n)); };
  int threads = parallel::threads_or_cores(request.threads);
  parallel::for_each_index(
      threads, n,
      [&](std::size_t i) {
        r.plans[i] = balance_plan(x, request, r.search.rows[i]);
        ++done;
      },
      tick, std::chrono::milliseconds(200));
  std::stable_sort(r.plans.begin(), r.plans.end(), [](const report::Plan& a, const report::Plan& b) { return a.step_time_s < b.step_time_s; });
  r.balance_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!request.emit_layers.empty()) {
    auto described = std::find_if(r.plans.begin(), r.plans.end(), [](const report::Plan& p) { return !p.descriptors.is_null(); });
    if (described == r.plans.end())
      fail(where_of(request.job.source, "emit_layers"), "no balanced layout with a pipeline (PP > 1) among the plans: nothing to describe");
    io::write_atomic(request.emit_layers, described->descriptors.dump(2) + "\n");
  }
  return r;
}

}  // namespace sapp::app
