#include "pipeline/descriptors.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/stages.hpp"

namespace sapp::balance {

Rc rc_of(plan::Recompute mode) {
  switch (mode) {
    case plan::Recompute::Off: return Rc::None;
    case plan::Recompute::Selective: return Rc::Selective;
    case plan::Recompute::Full: return Rc::Full;
  }
  return Rc::None;
}

namespace {

constexpr double kMsPerS = 1000.0;

// One layer of a kind for one micro-batch: forward and, per recompute mode, backward seconds.
struct LayerSeconds {
  double forward = 0;
  std::array<double, 3> backward{};
};

// The cost model's split of a layer (cost::estimate_time): compute forward and backward; exposed TP/CP/EP
// communication of forward and backward together, a third of it in the forward; recompute re-runs the dropped
// forward work, and full recompute also the forward's collectives (TP and EP half of theirs, CP its forward part).
LayerSeconds layer_seconds(const cost::KindTime& k) {
  double comm = k.tp_s + k.cp_s + k.ep_s;
  LayerSeconds out;
  out.forward = k.fwd_s + comm / 3.0;
  for (int m = 0; m < 3; ++m) {
    double again = m == static_cast<int>(plan::Recompute::Full) ? k.tp_s / 2.0 + k.cp_fwd_s + k.ep_s / 2.0 : 0.0;
    out.backward[static_cast<std::size_t>(m)] = k.bwd_s + 2.0 * comm / 3.0 + k.recompute_s[m] + again;
  }
  return out;
}

}  // namespace

Descriptors describe(const model::Model& model, const plan::Layout& layout, const plan::Training& training, const hardware::Hardware& hw,
                     const cost::Overlap& overlap, std::optional<plan::Recompute> mtp_mode, int max_body_types) {
  Descriptors d;
  LayerSet& set = d.layers;
  set.file = model.spec.name + " (sapp's cost model)";
  if (training.seq_split > 1) {
    d.why_not = fmt::format("the balancer has no sequence-pipeline schedule (seq_split {}: Seq1F1B units and their KV cache)", training.seq_split);
    return d;
  }
  const std::vector<cost::KindMemory> km = cost::kind_memory(model, layout, training);
  const cost::KindTimes kt = cost::kind_times(model, layout, training, hw, overlap);
  const cost::StateBytes state = cost::state_bytes_per_element(layout, training, static_cast<double>(model.spec.hidden_size));
  // Activations as the estimator holds them: with the caching allocator's fragmentation (cost::StageMemory).
  const double fragmented = 1.0 + training.activation_fragmentation;

  // BODY types: the stack in model order (vision tower, body), runs of one kind merged; MTP layers belong to the
  // last stage (TAIL).
  std::vector<std::pair<int, long long>> runs;
  for (const auto& group : model.stack) {
    if (group.mtp) continue;
    if (!runs.empty() && runs.back().first == group.kind)
      runs.back().second += group.count;
    else
      runs.emplace_back(group.kind, group.count);
  }
  // A stack of more runs than that which repeats a period of runs exactly becomes one BODY type of periods.
  std::size_t period = runs.size();
  if (static_cast<int>(runs.size()) > max_body_types) {
    for (std::size_t q = 1; q <= runs.size() / 2 && period == runs.size(); ++q) {
      if (runs.size() % q != 0) continue;
      bool repeats = true;
      for (std::size_t i = q; i < runs.size() && repeats; ++i) repeats = runs[i] == runs[i % q];
      if (repeats) period = q;
    }
    if (period == runs.size()) {
      d.why_not = fmt::format("the layer stack alternates {} runs of layer kinds without repeating one period (at most {} BODY types are balanced)",
                              runs.size(), max_body_types);
      d.aperiodic = true;
      return d;
    }
  }
  set.kinds = {Rc::None, Rc::Selective, Rc::Full};
  double layers_seconds = 0;  // the body of one micro-batch, all layers at the layout's recompute mode
  // Adds n layers of a kind to a BODY layer; returns their seconds at the layout's recompute mode.
  auto add_layers = [&](BodyType& body, int kind, long long n_layers) {
    const auto k = static_cast<std::size_t>(kind);
    const LayerSeconds ls = layer_seconds(kt.kinds[k]);
    const auto n = static_cast<double>(n_layers);
    body.forward += n * ls.forward * kMsPerS;
    body.param_mb += n * (km[k].dense_elems * state.dense + km[k].expert_elems * state.expert) / kBytesPerMb;
    for (plan::Recompute mode : {plan::Recompute::Off, plan::Recompute::Selective, plan::Recompute::Full}) {
      const auto m = static_cast<std::size_t>(mode);
      const auto r = static_cast<std::size_t>(rc_of(mode));
      body.backward[r] += n * ls.backward[m] * kMsPerS;
      body.act_mb[r] = body.act_mb[r].value_or(0.0) + n * km[k].act[m] * fragmented / kBytesPerMb;
      body.rebuild_mb[r] = std::max(body.rebuild_mb[r], (km[k].act[static_cast<int>(plan::Recompute::Off)] - km[k].act[m]) * fragmented / kBytesPerMb);
    }
    return n * (ls.forward + ls.backward[static_cast<std::size_t>(layout.recompute)]);
  };
  if (period < runs.size()) {
    BodyType body;
    std::vector<std::string> names;
    double period_seconds = 0;
    d.layers_per_unit = 0;
    for (std::size_t run = 0; run < period; ++run) {
      const auto [kind, count] = runs[run];
      names.push_back(fmt::format("{}x{}", count, model.kinds[static_cast<std::size_t>(kind)].kind.name));
      d.layers_per_unit += count;
      period_seconds += add_layers(body, kind, count);
    }
    body.name = fmt::format("BODY_period_{}", fmt::join(names, "+"));
    set.file = fmt::format("{} (sapp's cost model; a BODY layer is a period of {} layers)", model.spec.name, d.layers_per_unit);
    body.count = static_cast<long long>(runs.size() / period);
    layers_seconds = static_cast<double>(body.count) * period_seconds;
    set.bodies.push_back(body);
  } else {
    for (std::size_t run = 0; run < runs.size(); ++run) {
      const auto [kind, count] = runs[run];
      BodyType body;
      body.name = runs.size() > 1 ? fmt::format("BODY{}_{}", run + 1, model.kinds[static_cast<std::size_t>(kind)].kind.name) : std::string("BODY");
      body.count = count;
      layers_seconds += static_cast<double>(count) * add_layers(body, kind, 1);
      set.bodies.push_back(body);
    }
  }

  // HEAD, TAIL and the constant, from the cost model's own estimate of the layout (even split): what a stage
  // holds beyond its layers.
  const cost::MemoryEstimate mem = cost::estimate_memory(model, layout, training, hw.memory_bytes, &km);
  // The BODY layers' states per stage; the MTP layers (on the head's stage, not balanced) stay in the TAIL with their
  // activations: per micro-batch in flight with the tail's when they run in its chunk (the last), else held as
  // often as the estimator counts them.
  std::vector<double> body_static(static_cast<std::size_t>(layout.pp), 0.0);
  double mtp_static = 0;
  double mtp_one = 0;
  plan::for_each_chunk_group(model, layout, training, [&](int stage, int chunk, int kind, long long count, plan::Recompute mode, bool is_mtp) {
    const auto k = static_cast<std::size_t>(kind);
    if (is_mtp) {
      const double one = static_cast<double>(count) * km[k].act[static_cast<int>(mtp_mode.value_or(mode))];
      if (chunk == layout.vpp - 1)
        mtp_one += one;
      else
        mtp_static += static_cast<double>(plan::in_flight_count(layout, training, chunk, stage)) * one;
      return;
    }
    body_static[static_cast<std::size_t>(stage)] += static_cast<double>(count) * (km[k].dense_elems * state.dense + km[k].expert_elems * state.expert);
  });
  // What grows with a stage's parameters: its states and ZeRO's stage-wide buffers (StateBytes counts both).
  auto states = [](const cost::StageMemory& s) { return s.params + s.grads + s.optimizer + s.dp_stage; };
  const cost::StageMemory& first = mem.stages.front();
  const cost::StageMemory& last = mem.stages.back();
  // The activations beyond the layers, per micro-batch in flight (the balancer holds them with the first chunk's and
  // the last chunk's, LayerSet::head_act_mb): the embedding's output on the first stage; the final norm's input and
  // the logits on the head's. The loss backward's buffers (one micro-batch at a time) are static.
  const cost::StageMemory& tail_stage = layout.pp == 1 || plan::dualpipe_v(layout, training) ? first : last;
  set.head_act_mb = first.embedding_activation_one * fragmented / kBytesPerMb;
  set.tail_act_mb = (tail_stage.head_activation_one + mtp_one) * fragmented / kBytesPerMb;
  const double tail_static = (tail_stage.loss_backward + mtp_static) * fragmented;
  set.head_mb = (states(first) - body_static.front()) / kBytesPerMb;
  set.tail_mb = (states(last) - body_static.back() + tail_static) / kBytesPerMb;
  if (&tail_stage == &first) {
    // One stage holds both (DualPipe-V's chunk 1 runs back to stage 0, which holds the LM head and the loss too):
    // every state beyond the layers with the tail.
    set.head_mb = 0;
    set.tail_mb = (states(first) - body_static.front() + tail_static) / kBytesPerMb;
  }
  // What every stage holds beyond its layers' own memory: its buffers (but ZeRO's stage-wide ones) and reserve.
  // Beside them one layer rebuilt during its backward, per BODY type and kind (BodyType::rebuild_mb, set with its
  // layers); the costliest of every type, per kind, for a layers file, which states no types' rebuilds.
  double working = 0;
  for (const auto& s : mem.stages) working = std::max(working, s.buffers - s.dp_stage + s.reserve);
  for (const auto& b : set.bodies) {
    for (std::size_t r = 0; r < d.rebuild_mb.size(); ++r) d.rebuild_mb[r] = std::max(d.rebuild_mb[r], b.rebuild_mb[r]);
  }
  d.constant_mb = working / kBytesPerMb;

  // Times: the cost model's step for one micro-batch on one stage (PP 1) less the layers gives the head, the LM
  // head, the loss and MTP; split 1 : 2 between forward and backward as the cost model does.
  plan::Layout single = layout;
  single.pp = 1;
  single.vpp = 1;
  single.split.reset();  // a stated split is the pipeline's: on one stage every layer runs (it had counted stage 0's)
  single.dp = static_cast<int>(layout.devices() / (1LL * layout.tp * layout.cp));
  single.micro_batches = 1;
  plan::Training one = training;
  one.global_batch = 1LL * single.dp * single.mbs;
  const cost::StepTime t1 = cost::estimate_time(model, single, one, hw, overlap);
  const cost::Breakdown& b1 = t1.breakdown;
  double one_mb = b1.compute_s + b1.recompute_s + b1.tp_comm_s + b1.cp_comm_s + b1.ep_comm_s;
  double outside_layers = std::max(0.0, one_mb - layers_seconds);
  set.head_forward = 0;
  set.head_backward = 0;
  set.tail_forward = outside_layers / 3.0 * kMsPerS;
  set.tail_backward = 2.0 * outside_layers / 3.0 * kMsPerS;

  const cost::StepTime t = cost::estimate_time(model, layout, training, hw, mem, overlap, &kt);
  d.outside_pipeline_s = t.breakdown.dp_comm_s + t.breakdown.pp_comm_s + t.breakdown.optimizer_s;
  return d;
}

Problem problem_for(const Descriptors& d, const plan::Layout& layout, const plan::Training& training, double capacity_bytes) {
  Problem p;
  p.layers = d.layers;
  p.stages = layout.pp;
  p.chunks = layout.vpp;
  p.micro_batches = layout.micro_batches;
  p.memory_limit_mb = capacity_bytes / kBytesPerMb;
  p.constant_mb = d.constant_mb;
  // Each BODY type carries its own rebuild (BodyType::rebuild_mb): none problem-wide.
  p.schedule = plan::dualpipe_v(layout, training) ? simulate::Schedule::DualPipeV
               : layout.vpp > 1 ? (training.interleave_less_memory ? simulate::Schedule::InterleavedLessMemory : simulate::Schedule::Interleaved)
                                : simulate::Schedule::OneF1B;
  p.kinds = d.layers.kinds;
  return p;
}

nlohmann::json to_layers_json(const Descriptors& d) {
  const LayerSet& s = d.layers;
  static const char* const kMemoryKey[kRcKinds] = {"memory_activation", "memory_select_rec", "memory_select_comm", "memory_both_comm_select",
                                                   "memory_recompute"};
  static const char* const kTimeKey[kRcKinds] = {"backward_time", "select_rec_time", "select_comm_time", "both_comm_select_time", "recompute_time"};
  nlohmann::json list = nlohmann::json::array();
  list.push_back(
      {{"name", "HEAD"}, {"type", "HEAD"}, {"time", s.head_forward}, {"nb_layer", 1}, {"memory_parameter", s.head_mb}, {"memory_activation", s.head_act_mb}});
  for (const BodyType& b : s.bodies) {
    nlohmann::json j{{"name", b.name}, {"type", "BODY"}, {"time", b.forward}, {"nb_layer", b.count}, {"memory_parameter", b.param_mb}};
    for (Rc r : s.kinds) {
      const auto i = static_cast<std::size_t>(r);
      j[kMemoryKey[i]] = *b.act_mb[i];
      j[kTimeKey[i]] = b.backward[i];
    }
    list.push_back(j);
  }
  list.push_back({{"name", "TAIL"},
                  {"type", "TAIL"},
                  {"time", s.tail_forward},
                  {"backward_time", s.tail_backward},
                  {"nb_layer", 1},
                  {"memory_parameter", s.tail_mb},
                  {"memory_activation", s.tail_act_mb}});
  return nlohmann::json{{"name", s.file},
                        {"units", {{"time", "ms"}, {"memory", "MB (2^20 bytes)"}}},
                        {"constant_memory_mb", d.constant_mb + *std::max_element(d.rebuild_mb.begin(), d.rebuild_mb.end())},
                        {"layers_description", list}};
}

}  // namespace sapp::balance
