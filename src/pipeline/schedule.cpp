#include "pipeline/schedule.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sapp::simulate {

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::OneF1B: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
    case Schedule::InterleavedLessMemory: return "interleaved-less-memory";
    case Schedule::ZeroBubble: return "zero-bubble";
  }
  return "1f1b";
}

Schedule parse_schedule(const std::string& text) {
  if (text == "1f1b") return Schedule::OneF1B;
  if (text == "interleaved") return Schedule::Interleaved;
  if (text == "interleaved-less-memory") return Schedule::InterleavedLessMemory;
  if (text == "zero-bubble" || text == "zb") return Schedule::ZeroBubble;
  fail("--schedule", "'{}' is not a schedule; expected 1f1b, interleaved, interleaved-less-memory or zero-bubble", text);
}

namespace {

// Forward and backward lists of the interleaved schedule (Megatron's order, with the residue m mod S of the
// first round run first in each chunk, as the reference simulator does).
void interleaved_lists(int S, int V, int m, std::vector<Block>& fwd, std::vector<Block>& bwd) {
  int r = m % S;
  int rounds = m / S;
  for (int j = 0; j < rounds; ++j) {
    for (int i = 0; i < V; ++i) {
      if (j == 0) {
        for (int k = 0; k < r; ++k) fwd.push_back({BlockKind::Forward, i, k});
      }
      for (int k = 0; k < S; ++k) fwd.push_back({BlockKind::Forward, i, r + j * S + k});
    }
    for (int i = V - 1; i >= 0; --i) {
      if (j == 0) {
        for (int k = 0; k < r; ++k) bwd.push_back({BlockKind::Backward, i, k});
      }
      for (int k = 0; k < S; ++k) bwd.push_back({BlockKind::Backward, i, r + j * S + k});
    }
  }
}

std::vector<Block> merge(const std::vector<Block>& fwd, const std::vector<Block>& bwd, int warmup) {
  std::vector<Block> order;
  std::size_t f = 0;
  std::size_t b = 0;
  std::size_t warm = static_cast<std::size_t>(std::clamp(warmup, 0, static_cast<int>(fwd.size())));
  while (f < warm) order.push_back(fwd[f++]);
  while (f < fwd.size()) {
    order.push_back(fwd[f++]);
    if (b < bwd.size()) order.push_back(bwd[b++]);
  }
  while (b < bwd.size()) order.push_back(bwd[b++]);
  return order;
}

}  // namespace

std::vector<Block> stage_order(Schedule schedule, int S, int V, int m, int s) {
  if (S < 1 || V < 1 || m < 1 || s < 0 || s >= S) fail("schedule", "needs stages, chunks and micro-batches >= 1 (got S={} V={} m={} stage={})", S, V, m, s);
  if (schedule == Schedule::OneF1B || schedule == Schedule::ZeroBubble || V == 1) {
    if (V != 1 && schedule != Schedule::OneF1B) fail("schedule", "{} runs one chunk per stage, got {}", to_string(schedule), V);
    std::vector<Block> fwd;
    std::vector<Block> bwd;
    for (int k = 0; k < m; ++k) {
      fwd.push_back({BlockKind::Forward, 0, k});
      bwd.push_back({BlockKind::Backward, 0, k});
    }
    std::vector<Block> order = merge(fwd, bwd, S - s - 1);
    if (schedule != Schedule::ZeroBubble) return order;
    // Zero-bubble (ZB-H1 style, Qi et al. 2023): the 1F1B order of forwards and input-gradient backwards B;
    // each B leaves a weight-gradient W pending, which the simulator runs whenever the stage would otherwise
    // wait (and at the end). The order lists F and B only.
    return order;
  }
  if (m < S) fail("schedule", "interleaved 1F1B needs at least as many micro-batches ({}) as stages ({})", m, S);
  std::vector<Block> fwd;
  std::vector<Block> bwd;
  interleaved_lists(S, V, m, fwd, bwd);
  int r = m % S;
  int warmup = schedule == Schedule::Interleaved ? (V + 1) * S - 2 * s - 2 + r * (V - 1) : V * S - s - 1;
  return merge(fwd, bwd, warmup);
}

std::vector<std::vector<int>> in_flight_vectors(Schedule schedule, int S, int V, int m, int s) {
  std::vector<Block> order = stage_order(schedule, S, V, m, s);
  std::vector<int> count(static_cast<std::size_t>(V), 0);
  std::vector<std::vector<int>> seen;
  BlockKind releases = BlockKind::Backward;
  for (const Block& b : order) {
    if (b.kind == BlockKind::Forward) {
      ++count[static_cast<std::size_t>(b.chunk)];
      seen.push_back(count);
    } else if (b.kind == releases) {
      --count[static_cast<std::size_t>(b.chunk)];
    }
  }
  // Keep the Pareto-maximal vectors.
  std::vector<std::vector<int>> front;
  for (const auto& c : seen) {
    bool dominated = false;
    for (const auto& d : seen) {
      if (&c == &d) continue;
      bool ge = true;
      bool gt = false;
      for (std::size_t v = 0; v < c.size(); ++v) {
        ge = ge && d[v] >= c[v];
        gt = gt || d[v] > c[v];
      }
      if (ge && (gt || (&d < &c && d == c))) {
        dominated = true;
        break;
      }
    }
    if (!dominated) front.push_back(c);
  }
  return front;
}

SimResult simulate(Schedule schedule, int S, int V, int m, const StageTimes& t) {
  bool split = schedule == Schedule::ZeroBubble;
  std::vector<std::vector<Block>> orders;
  orders.reserve(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) orders.push_back(stage_order(schedule, S, V, m, s));
  auto idx = [&](int kind, int v, int s, int k) { return ((static_cast<std::size_t>(kind) * V + v) * S + s) * m + k; };
  std::vector<double> done(static_cast<std::size_t>(3) * V * S * m, -1.0);
  auto duration = [&](const Block& b, int s) {
    std::size_t v = static_cast<std::size_t>(b.chunk);
    std::size_t st = static_cast<std::size_t>(s);
    double f = t.forward[v][st];
    double bw = t.backward[v][st];
    double rc = t.recompute.empty() ? 0.0 : t.recompute[v][st];
    if (b.kind == BlockKind::Forward) return f;
    if (!split) return bw;
    double grads = bw - rc;
    return b.kind == BlockKind::Backward ? rc + (1.0 - t.weight_fraction) * grads : t.weight_fraction * grads;
  };
  // The block this one waits for, or -1 for none.
  auto producer = [&](const Block& b, int s) -> long long {
    int v = b.chunk;
    int k = b.micro;
    if (b.kind == BlockKind::Forward) {
      if (s > 0) return static_cast<long long>(idx(0, v, s - 1, k));
      if (v > 0) return static_cast<long long>(idx(0, v - 1, S - 1, k));
      return -1;
    }
    if (b.kind == BlockKind::Weight) return static_cast<long long>(idx(1, v, s, k));
    if (s < S - 1) return static_cast<long long>(idx(1, v, s + 1, k));
    if (v == V - 1) return static_cast<long long>(idx(0, v, S - 1, k));
    return static_cast<long long>(idx(1, v + 1, 0, k));
  };

  SimResult r;
  r.timeline.assign(static_cast<std::size_t>(S), {});
  std::vector<std::size_t> next(static_cast<std::size_t>(S), 0);
  std::vector<double> clock(static_cast<std::size_t>(S), 0.0);
  std::size_t remaining = 0;
  for (const auto& o : orders) remaining += o.size();
  if (split) {
    // Time-ordered: the stage with the earliest clock acts first, so when its next input is not done, it
    // cannot arrive before that clock, and a pending W fills the wait (the zero-bubble runtime's greedy rule).
    std::vector<std::vector<int>> pending(static_cast<std::size_t>(S));
    std::size_t weights_left = static_cast<std::size_t>(S) * static_cast<std::size_t>(m);
    auto run = [&](int s, const Block& b, double start) {
      std::size_t st = static_cast<std::size_t>(s);
      double end = start + duration(b, s);
      done[idx(static_cast<int>(b.kind), b.chunk, s, b.micro)] = end;
      r.timeline[st].push_back({b, start, end});
      clock[st] = end;
    };
    while (remaining > 0 || weights_left > 0) {
      int chosen = -1;
      for (int s = 0; s < S; ++s) {
        std::size_t st = static_cast<std::size_t>(s);
        bool has_work = next[st] < orders[st].size() || !pending[st].empty();
        if (!has_work) continue;
        bool can = !pending[st].empty();
        if (next[st] < orders[st].size()) {
          long long pr = producer(orders[st][next[st]], s);
          can = can || pr < 0 || done[static_cast<std::size_t>(pr)] >= 0;
        }
        if (can && (chosen < 0 || clock[st] < clock[static_cast<std::size_t>(chosen)])) chosen = s;
      }
      if (chosen < 0) fail("simulate", "causality violation: every zero-bubble stage waits on a block that cannot run yet");
      std::size_t st = static_cast<std::size_t>(chosen);
      bool ordered = next[st] < orders[st].size();
      double ready = -1;
      if (ordered) {
        long long pr = producer(orders[st][next[st]], chosen);
        ready = pr < 0 ? 0.0 : done[static_cast<std::size_t>(pr)];
      }
      bool input_waits = ordered && (ready < 0 || ready > clock[st]);
      if (!pending[st].empty() && (!ordered || input_waits)) {
        Block w{BlockKind::Weight, 0, pending[st].front()};
        pending[st].erase(pending[st].begin());
        run(chosen, w, clock[st]);
        --weights_left;
        continue;
      }
      const Block b = orders[st][next[st]];
      run(chosen, b, std::max(clock[st], ready));
      ++next[st];
      --remaining;
      if (b.kind == BlockKind::Backward) pending[st].push_back(b.micro);
    }
  }
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < S; ++s) {
      std::size_t st = static_cast<std::size_t>(s);
      while (next[st] < orders[st].size()) {
        const Block& b = orders[st][next[st]];
        long long p = producer(b, s);
        double ready = 0;
        if (p >= 0) {
          if (done[static_cast<std::size_t>(p)] < 0) break;
          ready = done[static_cast<std::size_t>(p)];
        }
        double start = std::max(clock[st], ready);
        double end = start + duration(b, s);
        done[idx(static_cast<int>(b.kind), b.chunk, s, b.micro)] = end;
        r.timeline[st].push_back({b, start, end});
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
        if (next[st] >= orders[st].size()) continue;
        const Block& b = orders[st][next[st]];
        const char* kind = b.kind == BlockKind::Forward ? "F" : b.kind == BlockKind::Backward ? "B" : "W";
        stuck += fmt::format("{}stage {} waits with {}(chunk {}, micro {})", stuck.empty() ? "" : "; ", s, kind, b.chunk, b.micro);
      }
      fail("simulate", "causality violation: every stage waits on a block that cannot run yet: {}", stuck);
    }
  }

  // Memory over time: static, + a chunk's activations when its forward ends, - when they are released.
  BlockKind releases = split ? BlockKind::Weight : BlockKind::Backward;
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
      else if (tb.block.kind == releases)
        mem -= a;
      else
        continue;
      r.memory[st].push_back({tb.end, mem});
      r.peak_memory[st] = std::max(r.peak_memory[st], mem);
    }
    r.end = std::max(r.end, clock[st]);
  }
  double model_time = 0;
  double hardware_time = 0;
  for (int v = 0; v < V; ++v) {
    for (int s = 0; s < S; ++s) {
      std::size_t vi = static_cast<std::size_t>(v);
      std::size_t st = static_cast<std::size_t>(s);
      double rc = t.recompute.empty() ? 0.0 : t.recompute[vi][st];
      model_time += m * (t.forward[vi][st] + t.backward[vi][st] - rc);
      hardware_time += m * (t.forward[vi][st] + t.backward[vi][st]);
    }
  }
  if (model_time > 0) {
    r.real = (S * r.end - model_time) / model_time;
    r.ideal = (S - 1.0) / (static_cast<double>(V) * m);
    r.recompute = hardware_time / model_time - 1.0;
    r.imbalance = r.real - r.ideal - r.recompute;
  }
  return r;
}

}  // namespace sapp::simulate
