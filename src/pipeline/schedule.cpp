#include "pipeline/schedule.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sapp::simulate {

Producer producer_of(Schedule schedule, int S, int V, const Block& b, int s) {
  int v = b.chunk;
  bool down = plan::reversed_chunk(schedule, v);
  int first = down ? S - 1 : 0;  // the chunk's first and last stage
  int last = down ? 0 : S - 1;
  int prev = down ? s + 1 : s - 1;  // the stage before s along the chunk
  int next = down ? s - 1 : s + 1;
  if (b.kind == BlockKind::Weight) return {1, v, s};
  if (b.kind == BlockKind::Forward) {
    if (s != first) return {0, v, prev};
    if (v > 0) return {0, v - 1, plan::reversed_chunk(schedule, v - 1) ? 0 : S - 1};
    return {};
  }
  if (s != last) return {1, v, next};
  if (v == V - 1) return {0, v, last};
  return {1, v + 1, plan::reversed_chunk(schedule, v + 1) ? S - 1 : 0};
}

Orders make_orders(Schedule schedule, int S, int V, int m) {
  Orders o;
  o.schedule = schedule;
  o.stages = S;
  o.chunks = V;
  o.micro_batches = m;
  o.order.reserve(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) o.order.push_back(stage_order(schedule, S, V, m, s));
  auto idx = [&](int kind, int v, int s, int k) { return ((kind * V + v) * S + s) * m + k; };
  for (int s = 0; s < S; ++s) {
    std::vector<int> self;
    std::vector<int> prod;
    for (const Block& b : o.order[static_cast<std::size_t>(s)]) {
      int v = b.chunk;
      int k = b.micro;
      self.push_back(idx(static_cast<int>(b.kind), v, s, k));
      Producer pr = producer_of(schedule, S, V, b, s);
      prod.push_back(pr.kind < 0 ? -1 : idx(pr.kind, pr.chunk, pr.stage, k));
    }
    o.slot.push_back(std::move(self));
    o.producer.push_back(std::move(prod));
  }
  return o;
}

namespace {

// The list schedule: every block as early as its producer and its left neighbour allow. Fills `timeline` when
// given; returns the makespan.
double run(const Orders& o, const StageTimes& t, std::vector<std::vector<TimedBlock>>* timeline) {
  const int S = o.stages;
  const int V = o.chunks;
  const int m = o.micro_batches;
  auto idx = [&](int kind, int v, int s, int k) {
    return ((static_cast<std::size_t>(kind) * static_cast<std::size_t>(V) + static_cast<std::size_t>(v)) * static_cast<std::size_t>(S) +
            static_cast<std::size_t>(s)) *
               static_cast<std::size_t>(m) +
           static_cast<std::size_t>(k);
  };
  std::vector<double> done(static_cast<std::size_t>(3) * static_cast<std::size_t>(V) * static_cast<std::size_t>(S) * static_cast<std::size_t>(m), -1.0);
  auto duration = [&](const Block& b, std::size_t st) {
    std::size_t v = static_cast<std::size_t>(b.chunk);
    if (b.kind == BlockKind::Forward) return t.forward[v][st];
    double bw = t.backward[v][st];
    if (!b.split) return bw;
    double rc = t.recompute.empty() ? 0.0 : t.recompute[v][st];
    double grads = bw - rc;
    return b.kind == BlockKind::Backward ? rc + (1.0 - t.weight_fraction) * grads : t.weight_fraction * grads;
  };
  auto producer = [&](const Block& b, int s) -> long long {
    Producer pr = producer_of(o.schedule, S, V, b, s);
    return pr.kind < 0 ? -1 : static_cast<long long>(idx(pr.kind, pr.chunk, pr.stage, b.micro));
  };
  if (timeline == nullptr && o.slot.size() == static_cast<std::size_t>(S)) {
    // The makespan only: block durations per stage and position, then sweeps over the stages until every block ran.
    std::vector<std::vector<double>> dur(static_cast<std::size_t>(S));
    for (int s = 0; s < S; ++s) {
      std::size_t st = static_cast<std::size_t>(s);
      dur[st].reserve(o.order[st].size());
      for (const Block& b : o.order[st]) dur[st].push_back(duration(b, st));
    }
    std::vector<std::size_t> at(static_cast<std::size_t>(S), 0);
    std::vector<double> now(static_cast<std::size_t>(S), 0.0);
    std::size_t left = 0;
    for (const auto& ord : o.order) left += ord.size();
    while (left > 0) {
      std::size_t before = left;
      for (std::size_t st = 0; st < static_cast<std::size_t>(S); ++st) {
        const std::vector<int>& self = o.slot[st];
        const std::vector<int>& prod = o.producer[st];
        const std::vector<double>& d = dur[st];
        std::size_t i = at[st];
        double clock_s = now[st];
        for (; i < self.size(); ++i) {
          int pr = prod[i];
          double ready = 0;
          if (pr >= 0) {
            ready = done[static_cast<std::size_t>(pr)];
            if (ready < 0) break;
          }
          clock_s = std::max(clock_s, ready) + d[i];
          done[static_cast<std::size_t>(self[i])] = clock_s;
        }
        left -= i - at[st];
        at[st] = i;
        now[st] = clock_s;
      }
      if (left == before) break;  // a causality violation: the general loop below names it
    }
    if (left == 0) return *std::max_element(now.begin(), now.end());
    std::fill(done.begin(), done.end(), -1.0);
  }
  std::vector<std::size_t> next(static_cast<std::size_t>(S), 0);
  std::vector<double> clock(static_cast<std::size_t>(S), 0.0);
  std::size_t remaining = 0;
  for (const auto& ord : o.order) remaining += ord.size();
  if (timeline) timeline->assign(static_cast<std::size_t>(S), {});
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < S; ++s) {
      std::size_t st = static_cast<std::size_t>(s);
      const auto& ord = o.order[st];
      while (next[st] < ord.size()) {
        const Block& b = ord[next[st]];
        long long p = producer(b, s);
        double ready = 0;
        if (p >= 0) {
          if (done[static_cast<std::size_t>(p)] < 0) break;
          ready = done[static_cast<std::size_t>(p)];
        }
        double start = std::max(clock[st], ready);
        double end = start + duration(b, st);
        done[idx(static_cast<int>(b.kind), b.chunk, s, b.micro)] = end;
        if (timeline) (*timeline)[st].push_back({b, start, end});
        clock[st] = end;
        ++next[st];
        --remaining;
        progress = true;
      }
    }
    if (!progress) {
      std::string stuck;
      for (int s = 0; s < S && stuck.size() < 300; ++s) {
        std::size_t st = static_cast<std::size_t>(s);
        if (next[st] >= o.order[st].size()) continue;
        const Block& b = o.order[st][next[st]];
        const char* kind = b.kind == BlockKind::Forward ? "F" : b.kind == BlockKind::Backward ? "B" : "W";
        stuck += fmt::format("{}stage {} waits with {}(chunk {}, micro {})", stuck.empty() ? "" : "; ", s, kind, b.chunk, b.micro);
      }
      fail("simulate", "causality violation: every stage waits on a block that cannot run yet: {}", stuck);
    }
  }
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace

double makespan(const Orders& orders, const StageTimes& times) { return run(orders, times, nullptr); }

SimResult simulate(Schedule schedule, int S, int V, int m, const StageTimes& t) {
  Orders orders = make_orders(schedule, S, V, m);
  SimResult r;
  r.end = run(orders, t, &r.timeline);
  // Memory over time: static, + a chunk's activations when its forward ends, - when they are released.
  r.peak_memory.assign(static_cast<std::size_t>(S), 0.0);
  r.memory.assign(static_cast<std::size_t>(S), {});
  for (int s = 0; s < S; ++s) {
    std::size_t st = static_cast<std::size_t>(s);
    double mem = t.static_memory.empty() ? 0.0 : t.static_memory[st];
    r.memory[st].push_back({0.0, mem});
    r.peak_memory[st] = mem;
    for (const auto& tb : r.timeline[st]) {
      double a = t.activation.empty() ? 0.0 : t.activation[static_cast<std::size_t>(tb.block.chunk)][st];
      if (tb.block.kind == BlockKind::Forward)
        mem += a;
      else if (plan::releases(tb.block))
        mem -= a;
      else
        continue;
      r.memory[st].push_back({tb.end, mem});
      r.peak_memory[st] = std::max(r.peak_memory[st], mem);
    }
  }
  double model_time = 0;
  double hardware_time = 0;
  double fwd_sum = 0;
  double grad_sum = 0;
  for (int v = 0; v < V; ++v) {
    for (int s = 0; s < S; ++s) {
      std::size_t vi = static_cast<std::size_t>(v);
      std::size_t st = static_cast<std::size_t>(s);
      double rc = t.recompute.empty() ? 0.0 : t.recompute[vi][st];
      model_time += m * (t.forward[vi][st] + t.backward[vi][st] - rc);
      hardware_time += m * (t.forward[vi][st] + t.backward[vi][st]);
      fwd_sum += t.forward[vi][st];
      grad_sum += t.backward[vi][st] - rc;
    }
  }
  if (model_time > 0) {
    r.real = (S * r.end - model_time) / model_time;
    if (schedule == Schedule::ZeroBubble || schedule == Schedule::DualPipeV) {
      // The same schedule over uniform cells (the mean forward and gradient work, no recompute).
      StageTimes u;
      double cells = static_cast<double>(V) * S;
      u.forward.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(S), fwd_sum / cells));
      u.backward.assign(static_cast<std::size_t>(V), std::vector<double>(static_cast<std::size_t>(S), grad_sum / cells));
      u.weight_fraction = t.weight_fraction;
      double uniform_end = run(orders, u, nullptr);
      r.ideal = (S * uniform_end - model_time) / model_time;
    } else {
      r.ideal = (S - 1.0) / (static_cast<double>(V) * m);
    }
    r.recompute = hardware_time / model_time - 1.0;
    r.imbalance = r.real - r.ideal - r.recompute;
  }
  return r;
}

}  // namespace sapp::simulate
