#include "plan/pipeline_model.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "core/error.hpp"

namespace sapp::plan {

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::OneF1B: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
    case Schedule::InterleavedLessMemory: return "interleaved-less-memory";
    case Schedule::ZeroBubble: return "zb-h1";
    case Schedule::DualPipeV: return "dualpipe-v";
  }
  return "1f1b";
}

Schedule parse_schedule(const std::string& text) {
  if (text == "1f1b") return Schedule::OneF1B;
  if (text == "interleaved") return Schedule::Interleaved;
  if (text == "interleaved-less-memory") return Schedule::InterleavedLessMemory;
  if (text == "zero-bubble" || text == "zb" || text == "zb-h1") return Schedule::ZeroBubble;
  if (text == "dualpipe-v" || text == "dualpipev") return Schedule::DualPipeV;
  fail("--schedule", "'{}' is not a schedule; expected 1f1b, interleaved, interleaved-less-memory, zb-h1 or dualpipe-v", text);
}

Schedule schedule_of(const Layout& layout, bool less_memory) {
  if (layout.vpp <= 1) return Schedule::OneF1B;
  return less_memory ? Schedule::InterleavedLessMemory : Schedule::Interleaved;
}

void check_schedule(Schedule schedule, int S, int V, int m) {
  if (S < 1 || V < 1 || m < 1) fail("schedule", "needs stages, chunks and micro-batches >= 1 (got S={} V={} m={})", S, V, m);
  if (V > 1 && (schedule == Schedule::OneF1B || schedule == Schedule::ZeroBubble))
    fail("schedule", "{} runs one chunk per stage, got {} chunks", to_string(schedule), V);
  if (schedule == Schedule::DualPipeV) {
    if (V != 2) fail("schedule", "DualPipe-V runs two chunks per stage, got {}", V);
    if (m < 2 * S) fail("schedule", "{} micro-batches over {} stages: DualPipe-V needs at least 2 x stages = {}", m, S, 2 * S);
    return;
  }
  if (V > 1 && m < S) fail("schedule", "interleaved 1F1B needs at least as many micro-batches ({}) as stages ({})", m, S);
}

bool reversed_chunk(Schedule schedule, int chunk) { return schedule == Schedule::DualPipeV && chunk == 1; }

namespace {

// Forward and backward lists of the interleaved schedule.
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
  order.reserve(fwd.size() + bwd.size());
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

// DualPipe-V's order on rank s (the repository's eight steps; see the header).
std::vector<Block> dualpipe_v_order(int S, int m, int s) {
  std::vector<Block> order;
  int next_f[2] = {0, 0};
  int next_b[2] = {0, 0};
  std::vector<Block> pending;  // split backwards whose W has not run (FIFO)
  std::size_t next_w = 0;
  auto f = [&](int phase) { order.push_back({BlockKind::Forward, phase, next_f[phase]++}); };
  auto b = [&](int phase, bool split) {
    Block blk{BlockKind::Backward, phase, next_b[phase]++, split};
    order.push_back(blk);
    if (split) pending.push_back(blk);
  };
  auto w = [&] {
    const Block& p = pending.at(next_w++);
    order.push_back({BlockKind::Weight, p.chunk, p.micro, true});
  };
  for (int i = 0; i < 2 * (S - s - 1); ++i) f(0);
  for (int i = 0; i < s + 1; ++i) {
    f(0);
    f(1);
  }
  for (int i = 0; i < S - s - 1; ++i) {
    b(1, true);
    w();
    f(1);
  }
  for (int i = 0; i < m - 2 * S + s + 1; ++i) {
    f(0);
    b(1, false);
    f(1);
    b(0, false);
  }
  for (int i = 0; i < S - s - 1; ++i) {
    b(1, false);
    f(1);
    b(0, false);
  }
  bool split = false;
  int step6 = s + 1;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && s % 2 == 1) split = true;
    b(1, split);
    if (i == step6 / 2 && s % 2 == 0) split = true;
    b(0, split);
  }
  for (int i = 0; i < S - s - 1; ++i) {
    w();
    b(0, true);
  }
  while (next_w < pending.size()) w();
  return order;
}

}  // namespace

std::vector<Block> stage_order(Schedule schedule, int S, int V, int m, int s) {
  check_schedule(schedule, S, V, m);
  if (s < 0 || s >= S) fail("schedule", "stage {} is outside 0..{}", s, S - 1);
  if (schedule == Schedule::DualPipeV) return dualpipe_v_order(S, m, s);
  if (V == 1) {
    std::vector<Block> fwd;
    std::vector<Block> bwd;
    for (int k = 0; k < m; ++k) {
      fwd.push_back({BlockKind::Forward, 0, k});
      bwd.push_back({BlockKind::Backward, 0, k});
    }
    std::vector<Block> order = merge(fwd, bwd, S - s - 1);
    if (schedule != Schedule::ZeroBubble) return order;
    // ZB-H1: W(j) right after B(j + s); the rest after the last B.
    std::vector<Block> zb;
    zb.reserve(order.size() + static_cast<std::size_t>(m));
    int next_w = 0;
    for (const Block& b : order) {
      zb.push_back(b);
      if (b.kind == BlockKind::Backward) zb.back().split = true;
      if (b.kind == BlockKind::Backward && b.micro - s >= 0) zb.push_back({BlockKind::Weight, 0, next_w++, true});
    }
    while (next_w < m) zb.push_back({BlockKind::Weight, 0, next_w++, true});
    return zb;
  }
  std::vector<Block> fwd;
  std::vector<Block> bwd;
  interleaved_lists(S, V, m, fwd, bwd);
  int r = m % S;
  // The residue's r (V - 1) extra warm-up forwards apply to both variants: without them the less-memory order
  // deadlocks when m mod S != 0 (a stage would wait for a backward of a chunk it has not run forward yet).
  int warmup = (schedule == Schedule::Interleaved ? (V + 1) * S - 2 * s - 2 : V * S - s - 1) + r * (V - 1);
  return merge(fwd, bwd, warmup);
}

bool releases(const Block& b) { return b.kind == BlockKind::Weight || (b.kind == BlockKind::Backward && !b.split); }

std::vector<std::vector<int>> in_flight_vectors(Schedule schedule, int S, int V, int m, int s) {
  std::vector<Block> order = stage_order(schedule, S, V, m, s);
  std::vector<int> count(static_cast<std::size_t>(V), 0);
  // Each distinct vector once, in order of first appearance: the steady state repeats a round's vectors, so a few
  // V S of them stand for the V m prefixes and the dominance check below stays small.
  std::vector<std::vector<int>> seen;
  std::set<std::vector<int>> distinct;
  for (const Block& b : order) {
    if (b.kind == BlockKind::Forward) {
      ++count[static_cast<std::size_t>(b.chunk)];
      if (distinct.insert(count).second) seen.push_back(count);
    } else if (releases(b)) {
      --count[static_cast<std::size_t>(b.chunk)];
    }
  }
  // Keep the Pareto-maximal vectors (the first of equal ones).
  std::vector<std::vector<int>> front;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < seen.size() && !dominated; ++j) {
      if (i == j) continue;
      bool ge = true;
      bool gt = false;
      for (std::size_t v = 0; v < seen[i].size(); ++v) {
        ge = ge && seen[j][v] >= seen[i][v];
        gt = gt || seen[j][v] > seen[i][v];
      }
      dominated = ge && (gt || j < i);
    }
    if (!dominated) front.push_back(seen[i]);
  }
  return front;
}

long long in_flight_count(Schedule schedule, int stages, int chunks, int micro_batches, int chunk, int stage) {
  long long S = stages;
  long long V = chunks;
  long long m = micro_batches;
  long long s = stage;
  if (schedule == Schedule::ZeroBubble) return std::min(S, m);
  if (schedule == Schedule::DualPipeV) {
    // The order's first peak (m >= 2 S, check_schedule): 2 S - s forwards of chunk 0 and s + 1 of chunk 1, 2 S + 1
    // in all, the DualPipe repository's "PP + 1" activations of its 2 S chunks (tests/test_pipeline_model.cpp replays
    // the order).
    check_schedule(schedule, stages, chunks, micro_batches);
    return chunk == 0 ? 2 * S - s : s + 1;
  }
  if (V == 1) return std::min(S - s, m);
  if (m < S) {
    // No interleaved order runs fewer micro-batches than stages (check_schedule); the estimator keeps the
    // reference's uniform counts, clipped to m.
    long long n = S;
    if (schedule == Schedule::InterleavedLessMemory) {
      if (chunk == V - 1) n = S - s;
    } else {
      if (chunk == 0) n += std::max(0LL, S - 2 * s - 1);
      if (chunk == V - 1) n += std::min(0LL, S - 2 * s - 1);
    }
    return std::clamp(n, 1LL, m);
  }
  // The order runs `warm` forwards, then one forward and one backward at a time: the first prefix holding the
  // most micro-batches ends with forward number min(warm + 1, V m) of the forward list, before any backward. The
  // list runs chunk by chunk in rounds: round 0 takes r + S micro-batches of each chunk (r = m mod S, the residue
  // runs first), later rounds S each.
  long long r = m % S;
  long long warm = (schedule == Schedule::Interleaved ? (V + 1) * S - 2 * s - 2 : V * S - s - 1) + r * (V - 1);
  long long n = std::min(std::max(warm, 0LL) + 1, V * m);
  long long first_round = std::min(n, V * (r + S));
  long long count = std::clamp(first_round - chunk * (r + S), 0LL, r + S);
  long long rest = n - first_round;  // forwards of the later rounds, S per chunk in turn
  long long rounds = rest / (V * S);
  long long part = rest % (V * S);
  count += rounds * S + std::clamp(part - chunk * S, 0LL, S);
  return count;
}

double in_flight_peak(Schedule schedule, int stages, int chunks, int micro_batches, int stage, const std::vector<double>& chunk_activation) {
  double peak = 0;
  for (const auto& c : in_flight_vectors(schedule, stages, chunks, micro_batches, stage)) {
    double a = 0;
    for (std::size_t v = 0; v < c.size() && v < chunk_activation.size(); ++v) a += c[v] * chunk_activation[v];
    peak = std::max(peak, a);
  }
  return peak;
}

long long in_flight_count(const Layout& l, const Training& training, int chunk, int stage) {
  if (dualpipe_v(l, training)) {
    // DualPipe-V's own order (the repository's eight steps), its chunks in the V.
    return in_flight_count(Schedule::DualPipeV, l.pp, l.vpp, l.micro_batches / pipeline_runs(l, training), chunk, stage);
  }
  // The sequence pipeline schedules segments: seq_split units per micro-batch, and the last chunk holds
  // seq_split - 1 more (the reference planner's Seq1F1B count, docs/reference-planner.md).
  const int segments = std::max(1, training.seq_split);
  const long long units = 1LL * l.micro_batches / pipeline_runs(l, training) * segments;
  const int m = static_cast<int>(std::min<long long>(units, std::numeric_limits<int>::max()));
  const long long count = in_flight_count(schedule_of(l, training.interleave_less_memory), l.pp, l.vpp, m, chunk, stage);
  return chunk == l.vpp - 1 && segments > 1 ? std::min(units, count + segments - 1) : count;
}

std::vector<std::vector<long long>> in_flight(const Layout& l, const Training& training) {
  std::vector<std::vector<long long>> a(static_cast<std::size_t>(l.vpp), std::vector<long long>(static_cast<std::size_t>(l.pp), 0));
  for (int v = 0; v < l.vpp; ++v) {
    for (int s = 0; s < l.pp; ++s) a[static_cast<std::size_t>(v)][static_cast<std::size_t>(s)] = in_flight_count(l, training, v, s);
  }
  return a;
}

double closed_form_step(int chunks, int micro_batches, double sum_stage_time, double max_cell_time) {
  double m = micro_batches;
  double v = chunks;
  return sum_stage_time / v + (m * v - 1.0) * max_cell_time;
}

}  // namespace sapp::plan
