#include "pipeline/solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include <fmt/format.h>
#include <unistd.h>

#include "core/error.hpp"
#include "pipeline/end_bound.hpp"

namespace sapp::balance {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTol = 1e-9;
using Clock = std::chrono::steady_clock;

std::vector<Rc> allowed_kinds(const Problem& p) {
  if (!p.layers.has_memory()) return {Rc::None};
  if (p.kinds.empty()) return p.layers.kinds;
  return p.kinds;
}

double act_of(const BodyType& b, Rc r) { return b.act_mb[static_cast<std::size_t>(r)].value_or(0.0); }
double bwd_of(const BodyType& b, Rc r) { return b.backward[static_cast<std::size_t>(r)]; }
std::size_t ix(Rc r) { return static_cast<std::size_t>(r); }
std::size_t uz(long long v) { return static_cast<std::size_t>(v); }
std::size_t uz(int v) { return static_cast<std::size_t>(v); }

// Schedules whose order splits backwards into an input-gradient B and a later weight gradient W.
bool splits_backward(const Problem& p) { return p.schedule == simulate::Schedule::ZeroBubble || p.schedule == simulate::Schedule::DualPipeV; }

// The tail's cell: the last chunk's last stage, or (DualPipe-V, whose second chunk runs back to stage 0) its stage 0.
int tail_stage(const Problem& p) { return p.schedule == simulate::Schedule::DualPipeV ? 0 : p.stages - 1; }
bool tail_cell(const Problem& p, int v, int s) { return v == p.chunks - 1 && s == tail_stage(p); }
// A cell that may hold no body layer: the head's and the tail's (every cell under Problem::empty_cells).
bool reserved(const Problem& p, int v, int s) { return p.empty_cells || (v == 0 && s == 0) || tail_cell(p, v, s); }

// A cell's place along the virtual pipeline, where the body layers follow model order: each chunk's cells in stage
// order, DualPipe-V's second chunk from stage S-1 back to stage 0 (plan::reversed_chunk, as plan::stage_of_virtual
// places the estimator's layers). cell_at(position) is the cell; position_of(v, s) its place.
struct CellAt {
  std::size_t v = 0;
  std::size_t s = 0;
};
CellAt cell_at(const Problem& p, long long position) {
  const long long v = position / p.stages;
  const long long r = position % p.stages;
  return {uz(v), uz(plan::reversed_chunk(p.schedule, static_cast<int>(v)) ? p.stages - 1 - r : r)};
}
long long position_of(const Problem& p, int v, int s) { return 1LL * v * p.stages + (plan::reversed_chunk(p.schedule, v) ? p.stages - 1 - s : s); }

bool cell_expressible(const std::array<long long, kRcKinds>& c) { return c[ix(Rc::Selective)] == 0 || c[ix(Rc::Comm)] == 0; }

// Constraint (6) as the problem states it: MindFormers' keys (cell_expressible), or Megatron's block recompute
// (Problem::full_first_layers = n: min(n, the cell's layers) full, the rest none).
bool cell_allowed(const Problem& p, const std::array<long long, kRcKinds>& c) {
  if (p.full_first_layers < 0) return cell_expressible(c);
  long long n = 0;
  for (long long k : c) n += k;
  const long long full = std::min(n, p.full_first_layers);
  return c[ix(Rc::Full)] == full && c[ix(Rc::None)] == n - full;
}

bool cells_allowed(const Problem& p, const Assignment& x) {
  for (const auto& type : x) {
    for (const auto& chunk : type) {
      for (const auto& cell : chunk) {
        if (!cell_allowed(p, cell)) return false;
      }
    }
  }
  return true;
}

// One recompute mix of n layers of one type: its backward time and activation memory.
struct Mix {
  double cost = 0;
  double weight = 0;
  std::array<long long, kRcKinds> counts{};
};

// Pareto front of mixes of n layers over `kinds` (weight ascending, cost strictly descending), n = 0..max_n.
// Exact: removing one layer from a Pareto-optimal mix leaves a Pareto-optimal mix.
std::vector<std::vector<Mix>> fronts_over(const BodyType& b, const std::vector<Rc>& kinds, long long max_n) {
  std::vector<std::vector<Mix>> fronts(uz(max_n + 1));
  fronts[0].push_back(Mix{});
  for (long long n = 1; n <= max_n; ++n) {
    std::vector<Mix> all;
    for (const Mix& prev : fronts[uz(n - 1)]) {
      for (Rc r : kinds) {
        Mix m = prev;
        m.cost += bwd_of(b, r);
        m.weight += act_of(b, r);
        ++m.counts[ix(r)];
        all.push_back(m);
      }
    }
    std::sort(all.begin(), all.end(), [](const Mix& a, const Mix& c) { return a.weight != c.weight ? a.weight < c.weight : a.cost < c.cost; });
    double best = kInf;
    for (const Mix& m : all) {
      if (m.cost < best - 1e-12) {
        fronts[uz(n)].push_back(m);
        best = m.cost;
      }
    }
  }
  return fronts;
}

// Constraint (6): the front over mixes without selective-only or without comm-only layers (a mix having both
// is not expressible), merged. With no memory limit only the fastest mix is kept.
std::vector<std::vector<Mix>> mix_fronts(const BodyType& b, const std::vector<Rc>& kinds, long long max_n, bool limited) {
  std::vector<Rc> no_comm;
  std::vector<Rc> no_sel;
  for (Rc r : kinds) {
    if (r != Rc::Comm) no_comm.push_back(r);
    if (r != Rc::Selective) no_sel.push_back(r);
  }
  bool both = std::find(kinds.begin(), kinds.end(), Rc::Comm) != kinds.end() && std::find(kinds.begin(), kinds.end(), Rc::Selective) != kinds.end();
  std::vector<std::vector<Mix>> out = fronts_over(b, both ? no_comm : kinds, max_n);
  if (both) {
    std::vector<std::vector<Mix>> other = fronts_over(b, no_sel, max_n);
    for (std::size_t n = 0; n < out.size(); ++n) {
      std::vector<Mix> all = out[n];
      all.insert(all.end(), other[n].begin(), other[n].end());
      std::sort(all.begin(), all.end(), [](const Mix& a, const Mix& c) { return a.weight != c.weight ? a.weight < c.weight : a.cost < c.cost; });
      out[n].clear();
      double best = kInf;
      for (const Mix& m : all) {
        if (m.cost < best - 1e-12) {
          out[n].push_back(m);
          best = m.cost;
        }
      }
    }
  }
  if (!limited) {
    for (auto& f : out) {
      if (!f.empty()) f.erase(f.begin(), f.end() - 1);  // the cheapest in time is last
    }
  }
  return out;
}

// Megatron's block recompute (Problem::full_first_layers = f): n layers have the one mix min(f, n) full, the rest none.
std::vector<std::vector<Mix>> block_fronts(const BodyType& b, long long f, long long max_n) {
  std::vector<std::vector<Mix>> fronts(uz(max_n + 1));
  for (long long n = 0; n <= max_n; ++n) {
    Mix m;
    m.counts[ix(Rc::Full)] = std::min(n, f);
    m.counts[ix(Rc::None)] = n - m.counts[ix(Rc::Full)];
    for (Rc r : {Rc::Full, Rc::None}) {
      m.cost += static_cast<double>(m.counts[ix(r)]) * bwd_of(b, r);
      m.weight += static_cast<double>(m.counts[ix(r)]) * act_of(b, r);
    }
    fronts[uz(n)].push_back(m);
  }
  return fronts;
}

// One layer of BODY type `type` rebuilt in its backward under kind r, MB: the type's own (BodyType::rebuild_mb) or
// the problem-wide one (Problem::rebuild_mb), the larger.
double rebuild_of(const Problem& p, std::size_t type, std::size_t r) { return std::max(p.rebuild_mb[r], p.layers.bodies[type].rebuild_mb[r]); }

// The layer a mix of BODY type `type` rebuilds in its backward: the largest of its kinds'.
double mix_rebuild(const Problem& p, std::size_t type, const Mix& m) {
  double out = 0;
  for (int r = 0; r < kRcKinds; ++r) {
    if (m.counts[uz(r)] > 0) out = std::max(out, rebuild_of(p, type, uz(r)));
  }
  return out;
}

// The least backward one layer of type b can take over the allowed kinds (no memory limit considered).
double fastest_backward(const BodyType& b, const std::vector<Rc>& kinds) {
  double best = kInf;
  for (Rc r : kinds) best = std::min(best, bwd_of(b, r));
  return best;
}

// The head's and the tail's share of cell (v, s) of one per-micro-batch quantity (`head`, `tail`): the head sits in
// the first cell, the tail in tail_cell.
double head_tail_of(const Problem& p, int v, int s, double head, double tail) { return (v == 0 && s == 0 ? head : 0.0) + (tail_cell(p, v, s) ? tail : 0.0); }
// One micro-batch's forward and backward.
double head_tail_forward(const Problem& p, int v, int s) { return head_tail_of(p, v, s, p.layers.head_forward, p.layers.tail_forward); }
double head_tail_backward(const Problem& p, int v, int s) { return head_tail_of(p, v, s, p.layers.head_backward, p.layers.tail_backward); }
// The activation held per micro-batch in flight with that chunk's (LayerSet::head_act_mb).
double head_tail_activation(const Problem& p, int v, int s) { return head_tail_of(p, v, s, p.layers.head_act_mb, p.layers.tail_act_mb); }

double head_tail_static(const Problem& p, int s) { return (s == 0 ? p.layers.head_mb : 0.0) + (s == tail_stage(p) ? p.layers.tail_mb : 0.0) + p.constant_mb; }

Assignment empty_assignment(const Problem& p) {
  return Assignment(p.layers.bodies.size(),
                    std::vector<std::vector<std::array<long long, kRcKinds>>>(uz(p.chunks), std::vector<std::array<long long, kRcKinds>>(uz(p.stages))));
}

// The blocks of a stage's order on the paths through its window of chunk v, from F(v, s, 0) to B(v, s, m - 1), that
// leave the order e times: between F(v, s, j) and B(v, s, j) the order runs other blocks while micro-batch j's own
// path runs up through the later cells and back, and a path may take that excursion instead (solve()). Segments
// F(v, j) .. B(v, j) are taken greedily: a of them from the window's start (each next one at the first forward of
// chunk v after the last) and e - a from its end (each earlier one at the last backward of chunk v before the
// next), all pairs (a, e - a) that do not overlap. Per e, per variant: the forwards (first V entries, per chunk)
// and backwards (next V) left on the path; with `split_kinds` (ZB-H1, DualPipe-V) the backwards are whole ones only, then
// split backwards (input gradient only, next V) and weight gradients (last V), which are otherwise not counted.
std::vector<std::vector<std::vector<double>>> excursion_blocks(const std::vector<simulate::Block>& order, int v, int V, int m, bool split_kinds = false) {
  std::vector<std::size_t> at_f(uz(m)), at_b(uz(m));
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i].chunk != v || order[i].kind == simulate::BlockKind::Weight) continue;
    (order[i].kind == simulate::BlockKind::Forward ? at_f : at_b)[uz(order[i].micro)] = i;
  }
  const std::size_t first = at_f[0];
  const std::size_t last = at_b[uz(m - 1)];
  auto of_chunk = [&](std::size_t i, simulate::BlockKind kind) { return order[i].chunk == v && order[i].kind == kind; };
  std::vector<int> from_start;
  for (std::size_t i = first; i <= last;) {
    int j = order[i].micro;
    from_start.push_back(j);
    i = at_b[uz(j)] + 1;
    while (i <= last && !of_chunk(i, simulate::BlockKind::Forward)) ++i;
  }
  std::vector<int> from_end;
  for (long long i = static_cast<long long>(last); i >= static_cast<long long>(first);) {
    int j = order[uz(i)].micro;
    from_end.push_back(j);
    i = static_cast<long long>(at_f[uz(j)]) - 1;
    while (i >= static_cast<long long>(first) && !of_chunk(uz(i), simulate::BlockKind::Backward)) --i;
  }
  // The segments are disjoint, so a variant's blocks are the window's less each skipped segment's inside:
  // per-position prefix counts (2V or 4V kinds), then running sums over the segments taken from either end.
  const auto kinds = uz((split_kinds ? 4 : 2) * V);
  std::vector<std::vector<double>> before(order.size() + 1, std::vector<double>(kinds, 0.0));  // blocks at positions < i
  for (std::size_t i = 0; i < order.size(); ++i) {
    before[i + 1] = before[i];
    const simulate::Block& blk = order[i];
    if (blk.kind == simulate::BlockKind::Weight && !split_kinds) continue;
    const int kind = blk.kind == simulate::BlockKind::Forward ? 0 : blk.kind == simulate::BlockKind::Weight ? 3 : split_kinds && blk.split ? 2 : 1;
    before[i + 1][uz(kind * V + blk.chunk)] += 1;
  }
  auto skipped_sums = [&](const std::vector<int>& segments) {
    std::vector<std::vector<double>> sums(1, std::vector<double>(kinds, 0.0));
    for (int j : segments) {
      std::vector<double> next = sums.back();
      for (std::size_t k = 0; k < kinds; ++k) next[k] += before[at_b[uz(j)]][k] - before[at_f[uz(j)] + 1][k];
      sums.push_back(std::move(next));
    }
    return sums;
  };
  const auto start_skipped = skipped_sums(from_start);
  const auto end_skipped = skipped_sums(from_end);
  std::vector<std::vector<std::vector<double>>> out;
  for (std::size_t a = 0; a <= from_start.size(); ++a) {
    for (std::size_t b = 0; b <= from_end.size(); ++b) {
      if (a > 0 && b > 0 && at_b[uz(from_start[a - 1])] >= at_f[uz(from_end[b - 1])]) break;  // they overlap
      std::vector<double> n(kinds);
      for (std::size_t k = 0; k < kinds; ++k) n[k] = before[last + 1][k] - before[first][k] - start_skipped[a][k] - end_skipped[b][k];
      if (out.size() <= a + b) out.resize(a + b + 1);
      out[a + b].push_back(std::move(n));
    }
  }
  return out;
}

// Everything the steps share.
struct Context {
  const Problem& p;
  std::vector<Rc> kinds;
  std::vector<std::vector<std::vector<int>>> vectors;  // per stage: Pareto-maximal in-flight count vectors
  // [stage][chunk v]: how many forwards (first V entries, per chunk) and backwards (next V) the stage's order runs
  // from F(v, s, 0) to B(v, s, m - 1), both included, with e excursions: [stage][chunk v][e][variant] (see
  // excursion_blocks; e = 0 is the whole window).
  std::vector<std::vector<std::vector<std::vector<std::vector<double>>>>> excursions;
  std::vector<long long> type_start;  // model-order position where each type starts
  long long total = 0;
  double limit = kInf;
  // The simulated step of a plan already found: a stage runs its m micro-batches' blocks one after another, so a
  // plan holding a stage with m T_s above it is slower, and the programs leave such stage options out.
  double cutoff = kInf;
  // Per rebuild ceiling R (Problem::rebuild_mb; one ceiling 0 when none is stated): the mixes of the kinds whose
  // rebuild is at most R, [type][n]. A stage whose costliest kind rebuilds R holds R beside its layers: its options
  // come from that ceiling's fronts against the memory left after R.
  struct Ceiling {
    double rebuild_mb = 0;
    std::vector<std::vector<std::vector<Mix>>> fronts;
  };
  std::vector<Ceiling> ceilings;
  simulate::Orders orders;
  Clock::time_point t0 = Clock::now();
  bool timed_out = false;
  bool show_progress = false;
  Clock::time_point last_progress = Clock::now();
  long long explored = 0;

  explicit Context(const Problem& problem) : p(problem) {}
  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }
  bool out_of_time() {
    if (!timed_out && p.time_limit_s > 0 && elapsed() > p.time_limit_s) timed_out = true;
    return timed_out;
  }
  void progress(const std::string& step, double best, double bound) {
    if (!show_progress) return;
    auto now = Clock::now();
    if (elapsed() < 1.0 || std::chrono::duration<double>(now - last_progress).count() < 0.5) return;
    last_progress = now;
    std::fprintf(stderr, "\rsapp balance: %.1f s, %s, best %s, bound %s      ", elapsed(), step.c_str(),
                 best < kInf ? fmt::format("{:.1f}", best).c_str() : "-", bound > 0 ? fmt::format("{:.1f}", bound).c_str() : "-");
    std::fflush(stderr);
  }
  void end_progress() const {
    if (show_progress && elapsed() >= 1.0) std::fprintf(stderr, "\n");
  }
};

// Step 1: the data every step reads.
Context make_context(const Problem& p) {
  Context c(p);
  c.kinds = allowed_kinds(p);
  for (int s = 0; s < p.stages; ++s) c.vectors.push_back(plan::in_flight_vectors(p.schedule, p.stages, p.chunks, p.micro_batches, s));
  for (const auto& b : p.layers.bodies) {
    c.type_start.push_back(c.total);
    c.total += b.count;
  }
  c.limit = p.memory_limit_mb > 0 ? p.memory_limit_mb : kInf;
  const bool limited = p.memory_limit_mb > 0;
  std::vector<double> levels = {0.0};
  if (limited) {
    for (std::size_t l = 0; l < p.layers.bodies.size(); ++l)
      for (Rc r : c.kinds) levels.push_back(rebuild_of(p, l, ix(r)));
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  for (double level : levels) {
    Context::Ceiling ceiling;
    ceiling.rebuild_mb = level;
    for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
      const BodyType& b = p.layers.bodies[l];
      if (p.full_first_layers >= 0) {
        auto fronts = block_fronts(b, p.full_first_layers, b.count);
        for (auto& f : fronts) f.erase(std::remove_if(f.begin(), f.end(), [&](const Mix& m) { return mix_rebuild(p, l, m) > level; }), f.end());
        ceiling.fronts.push_back(std::move(fronts));
      } else {
        std::vector<Rc> kinds;
        for (Rc r : c.kinds) {
          if (!limited || rebuild_of(p, l, ix(r)) <= level) kinds.push_back(r);
        }
        ceiling.fronts.push_back(mix_fronts(b, kinds, b.count, limited));
      }
    }
    c.ceilings.push_back(std::move(ceiling));
  }
  c.orders = simulate::make_orders(p.schedule, p.stages, p.chunks, p.micro_batches);
  for (int s = 0; s < p.stages; ++s) {
    c.excursions.emplace_back();
    for (int v = 0; v < p.chunks; ++v) c.excursions.back().push_back(excursion_blocks(c.orders.order[uz(s)], v, p.chunks, p.micro_batches, splits_backward(p)));
  }
  c.show_progress = p.progress && isatty(fileno(stderr)) != 0;
  return c;
}

// A cell holding layers of several types: the frameworks recompute a cell's first layers in model order (MindFormers'
// recompute / select_recompute counts, the estimator's StageSplit: full, then selective, then none), so along the
// cell's types the recompute kinds may only get lighter, and selective-only and comm-only layers stay apart. `cell(l)`:
// type l's counts per kind, for the K types in model order.
template <typename CellOf>
bool cell_ordered_across_types(std::size_t K, const CellOf& cell) {
  auto weight = [](Rc r) { return r == Rc::Full ? 3 : r == Rc::Both ? 2 : r == Rc::None ? 0 : 1; };
  int lightest_before = 3;
  bool selective = false;
  bool comm = false;
  for (std::size_t l = 0; l < K; ++l) {
    const std::array<long long, kRcKinds>& counts = cell(l);
    int heaviest = -1;
    int lightest = 3;
    for (int r = 0; r < kRcKinds; ++r) {
      if (counts[uz(r)] == 0) continue;
      heaviest = std::max(heaviest, weight(static_cast<Rc>(r)));
      lightest = std::min(lightest, weight(static_cast<Rc>(r)));
    }
    if (heaviest < 0) continue;
    if (heaviest > lightest_before) return false;
    lightest_before = lightest;
    selective = selective || counts[ix(Rc::Selective)] > 0;
    comm = comm || counts[ix(Rc::Comm)] > 0;
  }
  return !(selective && comm);
}

// A stage's option: its total time T_s, slowest chunk, lead (chunk 0's share of the fill and drain), and the
// chunks' mixes [chunk][type].
struct StageChoice {
  double time = kInf;
  double cell_max = kInf;
  double lead = kInf;
  // For the bound through chunk v's cells with e excursions (Menu::bound_chunk = v, Menu::excursions = e): the
  // stage's blocks on the longest such path through its window from F(v, s, 0) to B(v, s, m - 1) (window), the
  // work of the chunks before v plus e times that of the chunks after v (before), and chunk v's cell (chunk_time).
  double window = 0, before = 0, chunk_time = 0;
  double backward = 0;  // V = 1: the stage's backward per micro-batch
  double pass = 0;      // V = 1: a micro-batch's forward and backward through the stage on a path (split B for ZB-H1)
  // V = 1: the stage's blocks on the longest path through its window with e excursions, index e.
  std::vector<double> excursion;
  std::array<double, 3> key{};  // what the options are Pareto-minimal in
  std::vector<std::vector<Mix>> mixes;
};

// Zero-bubble and DualPipe-V stages may end on weight gradients that wait for nothing downstream: forwards only.
double lead_of(const Problem& p, double forward, double backward) { return splits_backward(p) ? forward : forward + backward; }

// A cell's backward split as the simulator splits it (simulate::StageTimes::weight_fraction wf): B runs the recompute
// and (1 - wf) of the gradient work `grads` (the backward without recompute), W the other wf. A whole backward is
// never shorter than its split B, so a path's backwards of unknown kind are priced as split ones.
struct SplitBackward {
  double input = 0;   // the split B
  double weight = 0;  // its W
};
SplitBackward split_backward(double backward, double grads) {
  const double wf = simulate::StageTimes{}.weight_fraction;
  return {backward - grads + (1.0 - wf) * grads, wf * grads};
}

// The blocks `n` of a stage's window (excursion_blocks: per chunk u forwards n[u], whole backwards n[V + u], and with
// split kinds split backwards n[2V + u] and weight gradients n[3V + u]) at the chunks' forward, backward and split
// times (`split` empty without split kinds).
double window_time(const std::vector<double>& n, const std::vector<double>& forward, const std::vector<double>& backward,
                   const std::vector<SplitBackward>& split) {
  const std::size_t V = forward.size();
  double w = 0;
  for (std::size_t u = 0; u < V; ++u) {
    w += n[u] * forward[u] + n[V + u] * backward[u];
    if (n.size() == 4 * V) w += n[2 * V + u] * split[u].input + n[3 * V + u] * split[u].weight;
  }
  return w;
}

// Step 2a (V = 1): the stage's range [pos, pos + k) in model order fixes the count of each type; least backward
// over the types' fronts within the memory budget.
StageChoice stage_option_v1(Context& c, int s, long long pos, long long k) {
  const Problem& p = c.p;
  StageChoice out;
  if (k == 0 && !reserved(p, 0, s)) return out;
  const std::size_t K = p.layers.bodies.size();
  std::vector<long long> n(K, 0);
  double forward = 0;
  double params = 0;
  for (std::size_t l = 0; l < K; ++l) {
    long long a = std::max(pos, c.type_start[l]);
    long long b = std::min(pos + k, c.type_start[l] + p.layers.bodies[l].count);
    n[l] = std::max(0LL, b - a);
    forward += static_cast<double>(n[l]) * p.layers.bodies[l].forward;
    params += static_cast<double>(n[l]) * p.layers.bodies[l].param_mb;
  }
  double head_tail_f = (s == 0 ? p.layers.head_forward : 0.0) + (s == p.stages - 1 ? p.layers.tail_forward : 0.0);
  double head_tail_b = (s == 0 ? p.layers.head_backward : 0.0) + (s == p.stages - 1 ? p.layers.tail_backward : 0.0);
  double fastest = forward + head_tail_f + head_tail_b;
  for (std::size_t l = 0; l < K; ++l) fastest += static_cast<double>(n[l]) * fastest_backward(p.layers.bodies[l], c.kinds);
  if (static_cast<double>(p.micro_batches) * fastest > c.cutoff * (1 + kTol)) return out;
  double c0 = 0;
  for (const auto& v : c.vectors[uz(s)]) c0 = std::max(c0, static_cast<double>(v[0]));
  std::vector<Mix> pick(K);
  // The least backward over every combination of the types' mixes (the option's time: with it the programs bound
  // every plan) and over those a framework can state (cell_ordered_across_types: the option's mixes, which the
  // programs' plans are rebuilt from). A stated combination needing a mix off its type's front is missed, so the
  // rebuilt plan may be slower than the best, never one the frameworks cannot run (offer refuses those).
  std::vector<Mix> best_pick;
  std::vector<Mix> stated_pick;
  double best = kInf;
  double best_stated = kInf;
  for (const Context::Ceiling& ceiling : c.ceilings) {
    const double budget = (c.limit - params - head_tail_static(p, s) - ceiling.rebuild_mb) / std::max(1.0, c0) - head_tail_activation(p, 0, s);
    if (budget < -kTol) break;  // higher ceilings leave less
    std::function<void(std::size_t, double, double)> walk = [&](std::size_t l, double cost, double weight) {
      if (l == K) {
        if (cost < best) {
          best = cost;
          best_pick = pick;
        }
        if (cost < best_stated && cell_ordered_across_types(K, [&](std::size_t t) -> const std::array<long long, kRcKinds>& { return pick[t].counts; })) {
          best_stated = cost;
          stated_pick = pick;
        }
        return;
      }
      for (const Mix& m : ceiling.fronts[l][uz(n[l])]) {
        ++c.explored;
        if (weight + m.weight > budget + kTol) break;
        pick[l] = m;
        walk(l + 1, cost + m.cost, weight + m.weight);
      }
    };
    walk(0, 0, 0);
  }
  if (best == kInf) return out;
  out.time = forward + best + head_tail_f + head_tail_b;
  out.cell_max = out.time;
  out.lead = lead_of(p, forward + head_tail_f, best + head_tail_b);
  out.backward = best + head_tail_b;
  out.pass = out.time;
  if (!c.excursions.empty()) {
    // ZB-H1 splits backwards: its window's blocks by kind (excursion_blocks with split kinds), and the paths'
    // backwards outside the window priced as split ones.
    const std::vector<double> f = {out.time - out.backward};
    const std::vector<double> b = {out.backward};
    std::vector<SplitBackward> split;
    if (splits_backward(p)) {
      double grads = head_tail_b;
      for (std::size_t l = 0; l < K; ++l) grads += static_cast<double>(n[l]) * bwd_of(p.layers.bodies[l], Rc::None);
      split.push_back(split_backward(out.backward, grads));
      out.pass = f[0] + split[0].input;
    }
    for (const auto& variants : c.excursions[uz(s)][0]) {
      double longest = -kInf;
      for (const auto& blocks : variants) longest = std::max(longest, window_time(blocks, f, b, split));
      out.excursion.push_back(longest);
    }
  }
  out.mixes = {best_stated < kInf ? stated_pick : best_pick};
  return out;
}

// The chunks' mixes, one per chunk, and their cells' forward and backward times (head and tail included).
using MixVisit = std::function<bool(const std::vector<const Mix*>&, const std::vector<double>&, const std::vector<double>&)>;

// Every combination of the chunks' mixes for one composition `comp` of stage s's body layers over its chunks that
// fits the schedule's in-flight vectors, and with `prune_slow` none whose m T_s exceeds the cutoff (Context::cutoff).
// `visit` sees each one and returns false to stop; returns false when it stopped (or the time is up).
bool for_each_composition_mix(Context& c, int s, const std::vector<long long>& comp, bool prune_slow, const MixVisit& visit) {
  const Problem& p = c.p;
  const int V = p.chunks;
  const BodyType& b = p.layers.bodies[0];
  const auto& vecs = c.vectors[uz(s)];
  long long k = 0;
  for (long long n : comp) {
    if (uz(n) >= c.ceilings.front().fronts[0].size()) return true;  // more layers in a chunk than the fronts cover: no mix
    k += n;
  }
  std::vector<const Mix*> cur(uz(V), nullptr);
  std::vector<double> partial(vecs.size(), 0.0);  // the in-flight activations of the chunks picked, head and tail from the start
  for (std::size_t i = 0; i < vecs.size(); ++i) {
    for (int v = 0; v < V; ++v) partial[i] += vecs[i][uz(v)] * head_tail_activation(p, v, s);
  }
  std::vector<double> rest_min(vecs.size(), 0.0);
  auto extra_f = [&](int v) { return head_tail_forward(p, v, s); };
  auto extra_b = [&](int v) { return head_tail_backward(p, v, s); };
  const double micro = static_cast<double>(p.micro_batches);
  const double per_layer = b.forward + fastest_backward(b, c.kinds);
  std::vector<double> cf(uz(V), 0.0);  // the chunks' forward and backward times of the option being built
  std::vector<double> cb(uz(V), 0.0);
  bool stopped = false;
  constexpr long long kClockEvery = 4096;
  // Per ceiling, the combinations whose costliest kind rebuilds exactly that much (the others were seen, with more
  // memory left, at their own ceiling: a mix on a ceiling's front whose kinds stay under a lower one is on that one's
  // front too).
  for (const Context::Ceiling& ceiling : c.ceilings) {
    const auto& fr = ceiling.fronts[0];
    const double budget = c.limit - static_cast<double>(k) * b.param_mb - head_tail_static(p, s) - ceiling.rebuild_mb;
    if (budget < -kTol) break;  // higher ceilings leave less
    std::function<void(int, double, double)> pick = [&](int u, double total, double rebuilt) {
      if (c.timed_out || stopped) return;
      if (u == V) {
        if (rebuilt < ceiling.rebuild_mb) return;
        if (++c.explored % kClockEvery == 0) c.out_of_time();
        stopped = !visit(cur, cf, cb);
        return;
      }
      std::size_t ui = uz(u);
      if (prune_slow) {
        double rest_fastest = 0;
        for (int r = u; r < V; ++r) rest_fastest += static_cast<double>(comp[uz(r)]) * per_layer + extra_f(r) + extra_b(r);
        if (micro * (total + rest_fastest) > c.cutoff * (1 + kTol)) return;
      }
      for (std::size_t i = 0; i < vecs.size(); ++i) {
        rest_min[i] = 0;
        for (int r = u + 1; r < V; ++r) {
          const auto& options = fr[uz(comp[uz(r)])];
          rest_min[i] += options.empty() ? kInf : vecs[i][uz(r)] * options.front().weight;
        }
      }
      for (const Mix& m : fr[uz(comp[ui])]) {
        bool ok = true;
        for (std::size_t i = 0; i < vecs.size() && ok; ++i) ok = partial[i] + vecs[i][ui] * m.weight + rest_min[i] <= budget + kTol;
        if (!ok) break;  // heavier mixes follow: none of them fits either
        double f = static_cast<double>(comp[ui]) * b.forward + extra_f(u);
        double bw = m.cost + extra_b(u);
        for (std::size_t i = 0; i < vecs.size(); ++i) partial[i] += vecs[i][ui] * m.weight;
        cur[ui] = &m;
        cf[ui] = f;
        cb[ui] = bw;
        pick(u + 1, total + f + bw, std::max(rebuilt, mix_rebuild(p, 0, m)));
        for (std::size_t i = 0; i < vecs.size(); ++i) partial[i] -= vecs[i][ui] * m.weight;
        if (stopped) return;
      }
    };
    pick(0, 0.0, 0.0);
    if (stopped || c.timed_out) break;
  }
  return !stopped && !c.timed_out;
}

// Every composition of k body layers over stage s's chunks (a layer in each chunk that must hold one, within the
// chunk spread) and every combination of the chunks' mixes that fits (for_each_composition_mix), leaving out those
// whose m T_s exceeds the cutoff: first all of k when even the fastest kinds are too slow, then each composition as
// its chunks are picked. The enumeration grows as (layers per stage)^(V-1) compositions times the chunks' mixes: it
// reads the clock every kClockEvery options and stops when the time is up (c.timed_out then says the options are
// incomplete).
void for_each_stage_mix(Context& c, int s, long long k, const MixVisit& visit) {
  const Problem& p = c.p;
  const int V = p.chunks;
  const BodyType& b = p.layers.bodies[0];
  if (c.limit - static_cast<double>(k) * b.param_mb - head_tail_static(p, s) < -kTol) return;
  const double micro = static_cast<double>(p.micro_batches);
  const double per_layer = b.forward + fastest_backward(b, c.kinds);
  double extras = 0;
  for (int v = 0; v < V; ++v) extras += head_tail_forward(p, v, s) + head_tail_backward(p, v, s);
  if (micro * (static_cast<double>(k) * per_layer + extras) > c.cutoff * (1 + kTol)) return;
  std::vector<long long> comp(uz(V), 0);
  bool stopped = false;
  constexpr long long kClockEvery = 4096;
  long long compositions = 0;
  std::vector<long long> needed(uz(V + 1), 0);  // chunks from v on that must hold a layer (not reserved)
  for (int v = V - 1; v >= 0; --v) needed[uz(v)] = needed[uz(v + 1)] + (reserved(p, v, s) ? 0 : 1);
  std::function<void(int, long long)> compose = [&](int v, long long left) {
    if (left < needed[uz(v)]) return;  // too few layers left for the chunks that need one
    if (v == V) {
      if (++compositions % kClockEvery == 0) c.out_of_time();
      if (left != 0) return;
      if (p.chunk_spread > 0) {
        long long lo = std::numeric_limits<long long>::max();
        long long hi = 0;
        for (int u = 0; u < V; ++u) {
          if (reserved(p, u, s)) continue;
          lo = std::min(lo, comp[uz(u)]);
          hi = std::max(hi, comp[uz(u)]);
        }
        if (hi > 0 && hi - lo > p.chunk_spread) return;
      }
      stopped = !for_each_composition_mix(c, s, comp, true, visit);
      return;
    }
    long long min_here = reserved(p, v, s) ? 0 : 1;
    if (v == V - 1) min_here = left;  // the last chunk takes the rest
    for (long long n = min_here; n <= left && !c.timed_out && !stopped; ++n) {
      comp[uz(v)] = n;
      compose(v + 1, left - n);
    }
  };
  compose(0, k);
}

// Step 2b (V > 1, one type): every composition of k over the chunks and every combination of the chunks' mixes
// that fits the schedule's in-flight vectors (for_each_stage_mix); the Pareto front of (slowest chunk, stage time,
// lead) is kept.
std::vector<StageChoice> stage_options_vn(Context& c, int s, long long k, int bound_chunk, int excursions) {
  const Problem& p = c.p;
  const int V = p.chunks;
  std::vector<StageChoice> options;
  auto add = [&](const std::vector<const Mix*>& cur, const std::vector<double>& cf, const std::vector<double>& cb) {
    StageChoice ch;
    ch.time = 0;
    ch.cell_max = 0;
    for (int u = 0; u < V; ++u) {
      ch.time = ch.time + cf[uz(u)] + cb[uz(u)];
      ch.cell_max = std::max(ch.cell_max, cf[uz(u)] + cb[uz(u)]);
    }
    ch.lead = lead_of(p, cf[0], cb[0]);
    ch.key = {ch.cell_max, ch.time, ch.lead};
    if (bound_chunk >= 0) {
      // DualPipe-V: the paths' backwards outside the window are priced split (split_backward).
      const bool dualpipe = p.schedule == simulate::Schedule::DualPipeV;
      std::vector<SplitBackward> split;
      for (int u = 0; u < V && dualpipe; ++u) {
        long long layers = 0;
        for (long long x : cur[uz(u)]->counts) layers += x;
        split.push_back(split_backward(cb[uz(u)], static_cast<double>(layers) * bwd_of(p.layers.bodies[0], Rc::None) + head_tail_backward(p, u, s)));
      }
      const auto& paths = c.excursions[uz(s)][uz(bound_chunk)];
      ch.window = -kInf;  // no path with that many excursions through this window
      if (uz(excursions) < paths.size()) {
        for (const auto& n : paths[uz(excursions)]) ch.window = std::max(ch.window, window_time(n, cf, cb, split));
      }
      if (dualpipe) {
        // Chunk 1 (last in the virtual order, stages S-1 down to 0): every stage's chunk-0 cell lies on the path
        // (before); chunk 0: e times every stage's chunk-1 cell (the excursions' way down chunk 0 and back up).
        const double cell0 = cf[0] + split[0].input, cell1 = cf[1] + split[1].input;
        ch.before = bound_chunk == 1 ? cell0 : excursions * cell1;
        ch.chunk_time = bound_chunk == 1 ? cell1 : cell0;
      } else {
        for (int u = 0; u < V; ++u) {
          if (u < bound_chunk) ch.before += cf[uz(u)] + cb[uz(u)];
          if (u > bound_chunk) ch.before += excursions * (cf[uz(u)] + cb[uz(u)]);
        }
        ch.chunk_time = cf[uz(bound_chunk)] + cb[uz(bound_chunk)];
      }
      ch.key = {ch.window, ch.before, ch.chunk_time};
    }
    auto le = [](const std::array<double, 3>& x, const std::array<double, 3>& y) {
      return x[0] <= y[0] + 1e-12 && x[1] <= y[1] + 1e-12 && x[2] <= y[2] + 1e-12;
    };
    for (const auto& o : options) {
      if (le(o.key, ch.key)) return true;
    }
    options.erase(std::remove_if(options.begin(), options.end(), [&](const StageChoice& o) { return le(ch.key, o.key); }), options.end());
    for (const Mix* m : cur) ch.mixes.push_back({*m});
    options.push_back(std::move(ch));
    return true;
  };
  for_each_stage_mix(c, s, k, add);
  return options;
}

// The options of stage s holding [pos, pos + k), memoised for V > 1 (they depend on k only).
struct Menu {
  Context& c;
  int bound_chunk = -1;                                     // >= 0: options for the bound through that chunk's cells (see StageChoice)
  std::vector<std::vector<std::vector<StageChoice>>> memo;  // V > 1: [s][k]
  std::vector<std::vector<char>> done;
  int excursions = 0;
  explicit Menu(Context& ctx, int chunk = -1, int e = 0) : c(ctx), bound_chunk(chunk), excursions(e) {
    if (c.p.chunks > 1) {
      memo.assign(uz(c.p.stages), std::vector<std::vector<StageChoice>>(uz(c.total + 1)));
      done.assign(uz(c.p.stages), std::vector<char>(uz(c.total + 1), 0));
    }
  }
  std::vector<StageChoice> single;  // V = 1: the last stage's option (not memoised: it depends on pos too)
  // Valid until the next call.
  const std::vector<StageChoice>& options(int s, long long pos, long long k) {
    if (c.p.chunks == 1) {
      single.clear();
      StageChoice ch = stage_option_v1(c, s, pos, k);
      if (ch.time != kInf) single.push_back(std::move(ch));
      return single;
    }
    if (!done[uz(s)][uz(k)]) {
      memo[uz(s)][uz(k)] = stage_options_vn(c, s, k, bound_chunk, excursions);
      done[uz(s)][uz(k)] = 1;
    }
    return memo[uz(s)][uz(k)];
  }
};

// Step 3: dynamic program over stages in order. A state holds two accumulators (a, b), both minimised, kept
// Pareto-minimal per number of layers placed; `step` combines a state with a stage option, `score` rates an end
// state. Returns the end states sorted by score (empty when infeasible or out of time: check c.timed_out).
struct DpState {
  double a = 0;
  double b = 0;
  long long prev_pos = -1;
  std::size_t prev_index = 0;
  long long k = 0;
  std::size_t option = 0;
};
struct DpRun {
  std::vector<std::vector<std::vector<DpState>>> g;  // [stage][pos] front
  std::vector<std::pair<double, std::size_t>> ends;  // (score, index in g[S][L]), best first
};

DpRun dp_over_stages(Context& c, Menu& menu, const std::function<std::pair<double, double>(const DpState&, const StageChoice&)>& step,
                     const std::function<double(const DpState&)>& score, const std::string& name, double start_a = 0) {
  const Problem& p = c.p;
  const int S = p.stages;
  const long long L = c.total;
  DpRun run;
  run.g.assign(uz(S + 1), std::vector<std::vector<DpState>>(uz(L + 1)));
  run.g[0][0].push_back(DpState{start_a});
  for (int s = 0; s < S; ++s) {
    for (long long pos = 0; pos <= L; ++pos) {
      const auto& here = run.g[uz(s)][uz(pos)];
      if (here.empty()) continue;
      if (c.out_of_time()) return run;
      c.progress(fmt::format("{}: stage {}/{}", name, s + 1, S), kInf, 0);
      long long max_k = L - pos;
      long long min_k = s == S - 1 ? max_k : 0;  // the last stage takes the rest
      for (long long k = min_k; k <= max_k; ++k) {
        const std::vector<StageChoice>& opts = menu.options(s, pos, k);
        auto& there = run.g[uz(s) + 1][uz(pos + k)];
        for (std::size_t o = 0; o < opts.size(); ++o) {
          for (std::size_t i = 0; i < here.size(); ++i) {
            auto [a, b] = step(here[i], opts[o]);
            there.push_back(DpState{a, b, pos, i, k, o});
          }
        }
      }
    }
    for (auto& front : run.g[uz(s) + 1]) {
      if (front.size() < 2) continue;
      std::sort(front.begin(), front.end(), [](const DpState& x, const DpState& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
      std::vector<DpState> kept;
      double best_b = kInf;
      for (const DpState& st : front) {
        if (st.b < best_b - 1e-12) {
          kept.push_back(st);
          best_b = st.b;
        }
      }
      front = std::move(kept);
      c.explored += static_cast<long long>(front.size());
    }
  }
  const auto& last = run.g[uz(S)][uz(L)];
  for (std::size_t i = 0; i < last.size(); ++i) run.ends.emplace_back(score(last[i]), i);
  std::sort(run.ends.begin(), run.ends.end());
  return run;
}

// Walks an end state back to its assignment.
Assignment rebuild(Context& c, Menu& menu, const DpRun& run, std::size_t end_index) {
  const Problem& p = c.p;
  const std::size_t K = p.layers.bodies.size();
  Assignment x = empty_assignment(p);
  std::size_t index = end_index;
  long long pos = c.total;
  for (int s = p.stages; s >= 1; --s) {
    const DpState& st = run.g[uz(s)][uz(pos)][index];
    StageChoice choice = menu.options(s - 1, st.prev_pos, st.k)[st.option];
    for (int v = 0; v < p.chunks; ++v) {
      for (std::size_t l = 0; l < K; ++l) {
        if (p.chunks > 1 && l > 0) continue;
        x[l][uz(v)][uz(s - 1)] = choice.mixes[uz(v)][p.chunks == 1 ? l : 0].counts;
      }
    }
    index = st.prev_index;
    pos = st.prev_pos;
  }
  return x;
}

// Exact per-stage peak memory of an assignment (the schedule's in-flight vectors) and whether it fits.
bool fits_memory(Context& c, const simulate::StageTimes& t, int s) {
  if (c.limit == kInf) return true;
  double peak = 0;
  for (const auto& v : c.vectors[uz(s)]) {
    double a = 0;
    for (int ch = 0; ch < c.p.chunks; ++ch) a += v[uz(ch)] * t.activation[uz(ch)][uz(s)];
    peak = std::max(peak, a);
  }
  return t.static_memory[uz(s)] + peak <= c.limit + kTol;
}

// Constraint (3): along the virtual pipeline (cell_at) the body types follow model order.
bool in_model_order(const Problem& p, const Assignment& x) {
  std::size_t last = 0;
  for (int position = 0; position < p.stages * p.chunks; ++position) {
    const CellAt cell = cell_at(p, position);
    for (std::size_t l = 0; l < x.size(); ++l) {
      long long n = 0;
      for (long long k : x[l][cell.v][cell.s]) n += k;
      if (n == 0) continue;
      if (l < last) return false;
      last = l;
    }
  }
  return true;
}

// Every cell of an assignment meets cell_ordered_across_types.
bool cells_ordered_across_types(const Problem& p, const Assignment& x) {
  if (x.size() < 2) return true;
  for (int v = 0; v < p.chunks; ++v) {
    for (int s = 0; s < p.stages; ++s) {
      if (!cell_ordered_across_types(x.size(), [&](std::size_t l) -> const std::array<long long, kRcKinds>& { return x[l][uz(v)][uz(s)]; })) return false;
    }
  }
  return true;
}

bool structurally_valid(const Problem& p, const Assignment& x) {
  if (!in_model_order(p, x) || !cells_ordered_across_types(p, x)) return false;
  for (int s = 0; s < p.stages; ++s) {
    long long lo = std::numeric_limits<long long>::max();
    long long hi = 0;
    for (int v = 0; v < p.chunks; ++v) {
      long long n = 0;
      for (const auto& type : x) {
        for (long long k : type[uz(v)][uz(s)]) n += k;
      }
      if (n < 0) return false;
      if (n == 0 && !reserved(p, v, s)) return false;
      if (!reserved(p, v, s)) {
        lo = std::min(lo, n);
        hi = std::max(hi, n);
      }
    }
    if (p.chunk_spread > 0 && p.chunks > 1 && hi > 0 && hi - lo > p.chunk_spread) return false;
  }
  return p.full_first_layers < 0 || cells_allowed(p, x);
}

// The best plan so far: its simulated step, then (a tie-break that lets the search cross plateaus of equal
// step) the sum of squared stage times, smaller when the stages are more even.
struct Incumbent {
  Assignment x;
  double step = kInf;
  double spread = kInf;
};

// Step 4: simulate candidates; keep the best that fits.
void offer(Context& c, Incumbent& best, const Assignment& x) {
  // The annealer's moves and seeds do not check the chunk spread themselves: a plan breaking it is no candidate.
  if (x.empty() || !structurally_valid(c.p, x)) return;
  simulate::StageTimes t = stage_times(c.p, x);
  for (int s = 0; s < c.p.stages; ++s) {
    if (!fits_memory(c, t, s)) return;
  }
  double step = simulate::makespan(c.orders, t);
  double spread = 0;
  for (int s = 0; s < c.p.stages; ++s) {
    double T = 0;
    for (int v = 0; v < c.p.chunks; ++v) T += t.forward[uz(v)][uz(s)] + t.backward[uz(v)][uz(s)];
    spread += T * T;
  }
  ++c.explored;
  if (step < best.step - kTol || (step <= best.step + kTol && spread < best.spread * (1 - 1e-12))) {
    best.step = std::min(step, best.step);
    best.spread = spread;
    best.x = x;
  }
}

// The even splits with one kind per type that are valid plans (every chunk that must hold a layer holds one,
// the chunk spread kept, the output format can express them), simulated.
void offer_even_splits(Context& c, Incumbent& best) {
  if (c.p.full_first_layers >= 0) {
    // Megatron's block recompute: the even split of the layers, each cell's first layers full.
    Assignment x = even_split(c.p, Rc::None);
    for (auto& chunk : x[0]) {
      for (auto& cell : chunk) {
        cell[ix(Rc::Full)] = std::min(cell[ix(Rc::None)], c.p.full_first_layers);
        cell[ix(Rc::None)] -= cell[ix(Rc::Full)];
      }
    }
    if (!x.empty() && structurally_valid(c.p, x)) offer(c, best, x);
    return;
  }
  for (Rc r : c.kinds) {
    Assignment x = even_split(c.p, r);
    if (!x.empty() && structurally_valid(c.p, x) && expressible(x)) offer(c, best, x);
  }
}

// A one-type plan (cells' counts and kinds) as a plan of p's types: `front` more layers at the start of the first
// cell and `back` more at the end of the last (the types the relaxation left out, before and after its own), then
// the types in model order along the virtual pipeline; within a cell the kinds run from the heaviest recompute to
// none, as the frameworks recompute a cell's first layers (cells_ordered_across_types holds).
Assignment typed_from(const Problem& p, const Assignment& one, long long front, long long back) {
  Assignment x = empty_assignment(p);
  const int S = p.stages;
  const int cells = S * p.chunks;
  constexpr std::array<Rc, kRcKinds> heavy_first = {Rc::Full, Rc::Both, Rc::Comm, Rc::Selective, Rc::None};
  std::size_t type = 0;
  long long left = p.layers.bodies.front().count;
  for (int c = 0; c < cells; ++c) {
    const auto [v, s] = cell_at(p, c);
    std::vector<Rc> kinds;  // the cell's layers, heaviest recompute first
    for (Rc r : heavy_first) kinds.insert(kinds.end(), uz(one[0][v][s][ix(r)]), r);
    if (c == 0) kinds.insert(kinds.begin(), uz(front), kinds.empty() ? Rc::None : kinds.front());
    if (c == cells - 1) kinds.insert(kinds.end(), uz(back), kinds.empty() ? Rc::None : kinds.back());
    for (Rc r : kinds) {
      while (left == 0 && type + 1 < p.layers.bodies.size()) left = p.layers.bodies[++type].count;
      if (left == 0) return {};  // more layers than the types hold: not a plan of p
      x[type][v][s][ix(r)] += 1;
      --left;
    }
  }
  if (left != 0 || type + 1 != p.layers.bodies.size()) return {};  // fewer layers than the types hold
  return x;
}

// Step 5: local search on the simulated step: move one layer between two cells (keeping its kind; with several
// types only between consecutive cells unless `long_moves`), change one layer's kind, or move and then change a kind
// in the receiving stage; first improvement, until none improves or the time runs out.
void local_search(Context& c, Incumbent& best, double bound, bool long_moves = true) {
  const Problem& p = c.p;
  if (best.x.empty()) return;
  const int S = p.stages;
  const int V = p.chunks;
  const std::size_t K = p.layers.bodies.size();
  const int cells = S * V;
  auto try_x = [&](const Assignment& x) {
    if (!structurally_valid(p, x)) return false;
    double before = best.step;
    double before_spread = best.spread;
    offer(c, best, x);
    return best.step < before - kTol || best.spread < before_spread;
  };
  // Kind changes within stage s (every cell of it, every type): returns true on improvement.
  auto kind_moves = [&](Assignment& x, int s, bool accept_fit_only) -> bool {
    for (std::size_t l = 0; l < K; ++l) {
      for (int v = 0; v < V; ++v) {
        auto& cell = x[l][uz(v)][uz(s)];
        for (Rc from : c.kinds) {
          if (cell[ix(from)] == 0) continue;
          for (Rc to : c.kinds) {
            if (to == from) continue;
            --cell[ix(from)];
            ++cell[ix(to)];
            bool ok = cell_allowed(p, cell);
            if (ok && accept_fit_only) {
              simulate::StageTimes t = stage_times(p, x);
              ok = fits_memory(c, t, s);
              if (ok && try_x(x)) return true;
            } else if (ok && try_x(x)) {
              return true;
            }
            ++cell[ix(from)];
            --cell[ix(to)];
          }
        }
      }
    }
    return false;
  };
  bool improved = true;
  while (improved && !c.out_of_time() && best.step > bound * (1 + kTol)) {
    improved = false;
    c.progress("local search", best.step, bound);
    Assignment x = best.x;
    // Kind changes anywhere.
    for (int s = 0; s < S && !improved; ++s) improved = kind_moves(x, s, false);
    if (improved) continue;
    // Boundary moves: from cell a to cell b. With one type any two cells may trade a layer. With several, a layer
    // moved between consecutive cells in virtual order keeps its type; between any two cells, the cells' counts and
    // kinds change and the types follow in model order (typed_from), every boundary between them shifting by one.
    std::vector<int> dirs;
    for (int d = 1; d < cells; ++d) {
      dirs.push_back(d);
      dirs.push_back(-d);
    }
    if (K > 1 && !long_moves) dirs = {1, -1};
    if (K > 1 && long_moves) {
      Assignment one(1, empty_assignment(p).front());
      for (std::size_t l = 0; l < K; ++l) {
        for (int v = 0; v < V; ++v) {
          for (int s = 0; s < S; ++s) {
            for (int r = 0; r < kRcKinds; ++r) one[0][uz(v)][uz(s)][uz(r)] += x[l][uz(v)][uz(s)][uz(r)];
          }
        }
      }
      for (int a = 0; a < cells && !improved && !c.out_of_time(); ++a) {
        for (int dir : dirs) {
          const int b = a + dir;
          if (b < 0 || b >= cells || dir == 1 || dir == -1 || improved) continue;  // +-1: the moves below
          const CellAt ca = cell_at(p, a), cb = cell_at(p, b);
          auto& from = one[0][ca.v][ca.s];
          auto& to = one[0][cb.v][cb.s];
          for (Rc r : c.kinds) {
            if (improved || from[ix(r)] == 0) continue;
            --from[ix(r)];
            ++to[ix(r)];
            Assignment y = typed_from(p, one, 0, 0);
            if (!y.empty() && cells_allowed(p, y)) {
              improved = try_x(y);
              if (!improved && cb.s != ca.s) {
                simulate::StageTimes t = stage_times(p, y);
                if (!fits_memory(c, t, static_cast<int>(cb.s))) improved = kind_moves(y, static_cast<int>(cb.s), true);
              }
            }
            ++from[ix(r)];
            --to[ix(r)];
          }
        }
      }
      if (improved) continue;
      dirs = {1, -1};
    }
    for (int a = 0; a < cells && !improved && !c.out_of_time(); ++a) {
      for (int dir : dirs) {
        int b = a + dir;
        if (b < 0 || b >= cells || improved) continue;
        const CellAt ca = cell_at(p, a), cb = cell_at(p, b);
        const int va = static_cast<int>(ca.v);
        const int sa = static_cast<int>(ca.s);
        const int vb = static_cast<int>(cb.v);
        const int sb = static_cast<int>(cb.s);
        // The type that crosses: the last type of a when moving forward, the first when moving back.
        std::size_t l = K;
        for (std::size_t t = 0; t < K; ++t) {
          long long n = 0;
          for (long long k : x[t][uz(va)][uz(sa)]) n += k;
          if (n > 0 && (l == K || dir > 0)) l = t;
          if (n > 0 && dir < 0) break;
        }
        if (l == K) continue;
        // Model order in b: moving forward, b's first type must not precede l; back, b's last type not follow.
        bool order_ok = true;
        for (std::size_t t = 0; t < K; ++t) {
          long long n = 0;
          for (long long k : x[t][uz(vb)][uz(sb)]) n += k;
          if (n > 0 && ((dir > 0 && t < l) || (dir < 0 && t > l))) order_ok = false;
        }
        if (!order_ok) continue;
        for (Rc r : c.kinds) {
          if (improved) break;
          auto& from = x[l][uz(va)][uz(sa)];
          auto& to = x[l][uz(vb)][uz(sb)];
          if (from[ix(r)] == 0) continue;
          --from[ix(r)];
          ++to[ix(r)];
          if (cell_allowed(p, to) && cell_allowed(p, from)) {
            improved = try_x(x);
            if (!improved && sb != sa) {
              // The receiving stage may now need a lighter kind somewhere.
              simulate::StageTimes t = stage_times(p, x);
              if (!fits_memory(c, t, sb)) improved = kind_moves(x, sb, true);
            }
          }
          if (!improved) {
            ++from[ix(r)];
            --to[ix(r)];
          }
        }
      }
    }
  }
}

// Several types: an iterated local search from the best plan. Each kick moves two or three layers (one layer one or
// two cells along the virtual pipeline, or one layer to another recompute kind; the types then follow in model
// order, typed_from) until the plan is valid and fits, climbs from there (local_search) and keeps the result when
// faster. Deterministic: a fixed seed, at most kKicks kicks and three times the climbs' simulations (`climbs`, at
// least 2000), within the time limit.
void kick_and_climb(Context& c, Incumbent& best, double bound, long long climbs) {
  const Problem& p = c.p;
  if (best.x.empty()) return;
  constexpr int kKicks = 24;
  constexpr int kAttempts = 20;
  const int cells = p.stages * p.chunks;
  const long long budget = c.explored + 3 * std::max(climbs, 2000LL);
  std::mt19937 rng(20261208);
  auto perturbed = [&](const Assignment& x) {
    Assignment one(1, empty_assignment(p).front());
    for (const auto& type : x) {
      for (int v = 0; v < p.chunks; ++v) {
        for (int s = 0; s < p.stages; ++s) {
          for (int r = 0; r < kRcKinds; ++r) one[0][uz(v)][uz(s)][uz(r)] += type[uz(v)][uz(s)][uz(r)];
        }
      }
    }
    const int moves = 2 + static_cast<int>(rng() % 2);
    for (int i = 0; i < moves; ++i) {
      const auto a = static_cast<long long>(rng() % static_cast<unsigned>(cells));
      const CellAt at = cell_at(p, a);
      std::vector<Rc> held;
      for (Rc r : c.kinds) {
        if (one[0][at.v][at.s][ix(r)] > 0) held.push_back(r);
      }
      if (held.empty()) continue;
      const Rc r = held[rng() % held.size()];
      if (rng() % 2 == 0) {
        const long long step = (rng() % 2 == 0 ? 1 : -1) * (1 + static_cast<long long>(rng() % 2));
        if (a + step < 0 || a + step >= cells) continue;
        const CellAt to = cell_at(p, a + step);
        --one[0][at.v][at.s][ix(r)];
        ++one[0][to.v][to.s][ix(r)];
      } else {
        const Rc to = c.kinds[rng() % c.kinds.size()];
        --one[0][at.v][at.s][ix(r)];
        ++one[0][at.v][at.s][ix(to)];
      }
    }
    Assignment y = typed_from(p, one, 0, 0);
    return !y.empty() && cells_allowed(p, y) ? y : Assignment{};
  };
  for (int kick = 0; kick < kKicks && c.explored < budget && !c.out_of_time() && best.step > bound * (1 + kTol); ++kick) {
    Incumbent from;
    for (int attempt = 0; attempt < kAttempts && from.x.empty(); ++attempt) offer(c, from, perturbed(best.x));
    if (from.x.empty()) continue;
    local_search(c, from, bound);
    if (from.step < best.step - kTol) best = std::move(from);
  }
}

// Step 6 (one type): simulated annealing over the cells' layer counts. A state is the count n(v, s) of every
// cell; each stage's recompute mixes are then one of its options: the plans that fit the stage's memory over the
// schedule's in-flight vectors and are Pareto-minimal in the chunks' backward times (a plan slower in every cell is
// never better: the makespan is monotone in every block's duration). A proposal moves one layer between two cells
// and repairs both stages by simulating each of their options and keeping the best. Deterministic: a fixed seed and
// a fixed number of proposals (the time limit can only cut it short).
class Annealer {
 public:
  Annealer(Context& c, const Assignment& start) : c_(c), S_(c.p.stages), V_(c.p.chunks) {
    n_.assign(uz(V_), std::vector<long long>(uz(S_), 0));
    for (int v = 0; v < V_; ++v) {
      for (int s = 0; s < S_; ++s) {
        for (long long k : start[0][uz(v)][uz(s)]) n_[uz(v)][uz(s)] += k;
      }
    }
    x_ = start;
  }

  // At most `proposals` proposals and `sims` simulations; the temperature falls with the larger share used.
  void run(Incumbent& best, double bound, long long proposals, long long sims, unsigned seed) {
    const int cells = S_ * V_;
    opt_.assign(uz(S_), 0);
    double mk = kInf;
    double cur = kInf;
    if (!every_stage_has_options(n_)) return;
    for (int s = 0; s < S_; ++s) {
      if (!repair(n_, opt_, s, cur, mk)) return;  // the start has a stage with no option (cannot happen for a fitting plan)
    }
    offer(c_, best, build(n_, opt_));
    std::mt19937 rng(seed);
    const double t_hot = 0.02 * mk;
    const double t_cold = 1e-4 * mk;
    const long long sims0 = sims_;
    for (long long it = 0; it < proposals && sims_ - sims0 < sims && best.step > bound * (1 + kTol); ++it) {
      if ((it & 255) == 0) {
        if (c_.out_of_time()) return;
        c_.progress(fmt::format("annealing {}/{}", it, proposals), best.step, bound);
      }
      double used = std::max(static_cast<double>(it) / static_cast<double>(proposals), static_cast<double>(sims_ - sims0) / static_cast<double>(sims));
      double temperature = t_hot * std::pow(t_cold / t_hot, used);
      int a = std::uniform_int_distribution<int>(0, cells - 1)(rng);
      int b = std::uniform_int_distribution<int>(0, cells - 2)(rng);
      if (b >= a) ++b;
      std::vector<std::vector<long long>> n;
      std::vector<std::size_t> opt;
      double score = kInf;
      double step = kInf;
      if (!move_layer(a, b, n, opt, score, step)) continue;
      bool accept = score <= cur || std::uniform_real_distribution<double>(0, 1)(rng) < std::exp((cur - score) / temperature);
      if (!accept) continue;
      n_ = std::move(n);
      opt_ = std::move(opt);
      cur = score;
      if (step < best.step - kTol) offer(c_, best, build(n_, opt_));
    }
  }

  // The neighbourhood of both searches: one layer from cell a (chunk a / S, stage a % S) to cell b, the two stages'
  // recompute choices repaired. False when cell a has no layer to spare or no choice fits; otherwise the moved
  // counts, choices, score and simulated step.
  bool move_layer(int a, int b, std::vector<std::vector<long long>>& n, std::vector<std::size_t>& opt, double& score, double& step) {
    int va = a / S_;
    int sa = a % S_;
    int vb = b / S_;
    int sb = b % S_;
    if (n_[uz(va)][uz(sa)] <= (reserved(c_.p, va, sa) ? 0 : 1)) return false;
    n = n_;
    opt = opt_;
    --n[uz(va)][uz(sa)];
    ++n[uz(vb)][uz(sb)];
    if (options(sa, n).empty() || options(sb, n).empty()) return false;
    opt[uz(sa)] = 0;
    opt[uz(sb)] = 0;
    if (!repair(n, opt, sa, score, step)) return false;
    return sb == sa || repair(n, opt, sb, score, step);
  }

  // Hill climbing in the same neighbourhood, every move in turn (first improvement of the score), until no move
  // improves, the plan meets the bound, or `sims` simulations are spent.
  void polish(Incumbent& best, double bound, long long sims, bool least_work_start = false) {
    const int cells = S_ * V_;
    opt_.assign(uz(S_), 0);
    double mk = kInf;
    double cur = kInf;
    if (!every_stage_has_options(n_)) return;
    if (least_work_start) {
      // Every stage at its option of least total backward time (the forwards are fixed by the counts).
      for (int s = 0; s < S_; ++s) {
        const std::vector<Option>& os = options(s, n_);
        if (os.empty()) return;
        double least = kInf;
        for (std::size_t i = 0; i < os.size(); ++i) {
          double total = 0;
          for (const Mix* m : os[i]) total += m->cost;
          if (total < least - 1e-12) {
            least = total;
            opt_[uz(s)] = i;
          }
        }
      }
      Assignment x = build(n_, opt_);
      cur = score(x, mk);
      offer(c_, best, x);
    } else {
      for (int s = 0; s < S_; ++s) {
        if (!repair(n_, opt_, s, cur, mk)) return;
      }
    }
    const long long sims0 = sims_;
    bool improved = true;
    while (improved && sims_ - sims0 < sims && best.step > bound * (1 + kTol) && !c_.out_of_time()) {
      improved = false;
      c_.progress("polishing", best.step, bound);
      for (int a = 0; a < cells && !improved && sims_ - sims0 < sims; ++a) {
        for (int b = 0; b < cells && !improved; ++b) {
          std::vector<std::vector<long long>> n;
          std::vector<std::size_t> opt;
          double score = kInf;
          double step = kInf;
          if (a == b || !move_layer(a, b, n, opt, score, step)) continue;
          if (score >= cur - 1e-9) continue;
          n_ = std::move(n);
          opt_ = std::move(opt);
          cur = score;
          improved = true;
          if (step < best.step - kTol) offer(c_, best, build(n_, opt_));
        }
      }
    }
  }

 private:
  using Option = std::vector<const Mix*>;  // one mix per chunk

  // Whether every stage of the counts n has an option: a plan is built from one option per stage, so repairing one
  // stage while another has none (no mix fits, or the time ran out while its options were listed) must not start.
  bool every_stage_has_options(const std::vector<std::vector<long long>>& n) {
    for (int s = 0; s < S_; ++s) {
      if (options(s, n).empty()) return false;
    }
    return true;
  }

  const std::vector<Option>& options(int s, const std::vector<std::vector<long long>>& n) {
    std::vector<long long> comp(uz(V_));
    for (int v = 0; v < V_; ++v) comp[uz(v)] = n[uz(v)][uz(s)];
    auto key = std::make_pair(s, comp);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    // The combinations that fit (none left out for being slow: the walk may pass through them), kept Pareto-minimal
    // in the chunks' backward costs, at most kMaxOptions.
    std::vector<Option> out;
    auto dominates = [&](const Option& x, const Option& y) {
      for (int u = 0; u < V_; ++u) {
        if (x[uz(u)]->cost > y[uz(u)]->cost + 1e-12) return false;
      }
      return true;
    };
    for_each_composition_mix(c_, s, comp, false, [&](const Option& cur, const std::vector<double>&, const std::vector<double>&) {
      for (const Option& o : out) {
        if (dominates(o, cur)) return true;
      }
      std::erase_if(out, [&](const Option& o) { return dominates(cur, o); });
      out.push_back(cur);
      return out.size() < kMaxOptions;
    });
    return memo_[key] = std::move(out);
  }

  Assignment build(const std::vector<std::vector<long long>>& n, const std::vector<std::size_t>& opt) {
    Assignment x = x_;
    for (int s = 0; s < S_; ++s) {
      const Option& o = options(s, n)[opt[uz(s)]];
      for (int v = 0; v < V_; ++v) x[0][uz(v)][uz(s)] = o[uz(v)]->counts;
    }
    return x;
  }

  // The simulated step and a tie-break (smaller when the cells are more even) that lets the walk cross plateaus.
  double score(const Assignment& x, double& step) {
    simulate::StageTimes t = stage_times(c_.p, x);
    step = simulate::makespan(c_.orders, t);
    ++c_.explored;
    ++sims_;
    double squares = 0;
    for (int v = 0; v < V_; ++v) {
      for (int s = 0; s < S_; ++s) {
        double cell = t.forward[uz(v)][uz(s)] + t.backward[uz(v)][uz(s)];
        squares += cell * cell;
      }
    }
    return step + 1e-7 * squares;
  }

  // Stage s's best option by simulation, the other stages as they are.
  bool repair(const std::vector<std::vector<long long>>& n, std::vector<std::size_t>& opt, int s, double& best_score, double& best_step) {
    const std::vector<Option>& os = options(s, n);
    if (os.empty()) return false;
    best_score = kInf;
    std::size_t pick = 0;
    for (std::size_t i = 0; i < os.size(); ++i) {
      opt[uz(s)] = i;
      double step = 0;
      double sc = score(build(n, opt), step);
      if (sc < best_score) {
        best_score = sc;
        best_step = step;
        pick = i;
      }
    }
    opt[uz(s)] = pick;
    return true;
  }

  static constexpr std::size_t kMaxOptions = 48;
  long long sims_ = 0;
  Context& c_;
  int S_;
  int V_;
  Assignment x_;
  std::vector<std::vector<long long>> n_;
  std::vector<std::size_t> opt_;
  std::map<std::pair<int, std::vector<long long>>, std::vector<Option>> memo_;
};

// One layer in every cell that must hold one, and the layers left over one per cell on the last chunk of the latest
// stages before the last (then the next latest, again): a start for the hill climb, which first sets every stage to
// its option of least total backward time (polish with least_work_start). On the 128-layer V4 bench case this is
// the recipe of the best plan known (docs/balance.md).
Assignment late_spare_seed(const Problem& p) {
  Assignment x = empty_assignment(p);
  long long spare = p.layers.bodies[0].count;
  for (int v = 0; v < p.chunks; ++v) {
    for (int s = 0; s < p.stages; ++s) {
      if (reserved(p, v, s)) continue;
      x[0][uz(v)][uz(s)][ix(Rc::None)] = 1;
      --spare;
    }
  }
  const int latest = std::max(0, p.stages - 2);
  for (int s = latest; spare > 0; s = s == 0 ? latest : s - 1) {
    x[0][uz(p.chunks - 1)][uz(s)][ix(Rc::None)] += 1;
    --spare;
  }
  return x;
}

// The options of every stage for the end-stage bound (pipeline/end_bound): per stage and k body layers, the stage's
// compositions and mixes (for_each_stage_mix: they fit its memory, none slower than the cutoff), kept Pareto-minimal
// in the cells' forward and backward times. Returns no stages when more than kMaxCombinations are seen or the time is
// up (the bound is then skipped).
std::vector<std::vector<std::vector<StageOption>>> end_bound_options(Context& c) {
  constexpr long long kMaxCombinations = 2000000;
  const int S = c.p.stages;
  const int V = c.p.chunks;
  long long combinations = 0;
  std::vector<std::vector<std::vector<StageOption>>> out(uz(S));
  for (int s = 0; s < S; ++s) {
    for (long long k = 0; k <= c.total; ++k) {
      auto& list = out[uz(s)].emplace_back();
      // Whether the cells (f1, b1) are no slower than (f2, b2) in every chunk.
      auto no_slower = [V](const std::vector<double>& f1, const std::vector<double>& b1, const std::vector<double>& f2, const std::vector<double>& b2) {
        for (int v = 0; v < V; ++v) {
          if (f1[uz(v)] > f2[uz(v)] + 1e-12 || b1[uz(v)] > b2[uz(v)] + 1e-12) return false;
        }
        return true;
      };
      for_each_stage_mix(c, s, k, [&](const std::vector<const Mix*>&, const std::vector<double>& f, const std::vector<double>& b) {
        if (++combinations > kMaxCombinations) return false;
        for (const StageOption& o : list) {
          if (no_slower(o.forward, o.backward, f, b)) return true;
        }
        std::erase_if(list, [&](const StageOption& o) { return no_slower(f, b, o.forward, o.backward); });
        list.push_back(StageOption{f, b});
        return true;
      });
      if (combinations > kMaxCombinations || c.timed_out) return {};
    }
  }
  return out;
}

// Several BODY types under interleaving (K > 1 with V > 1), which the programs, the end-stage bound and the
// annealing read one type of: two relaxations to one type, each solved for its bound only (in at most a quarter of
// the time left). Both are valid because the simulated step never shrinks when a block grows or a layer leaves:
// - every layer as one type taking, per recompute kind, the least forward and backward time and the least activation
//   and parameter memory of the types (each plan maps onto a plan of it with the same counts and kinds per cell, no
//   block slower and no stage holding more): tight when the types cost alike (alternating attention kinds);
// - the most numerous type alone, the other types' layers left out and any cell allowed to be empty (each plan maps
//   onto one by dropping them): tight when the others are few (DeepSeek-style dense first layers); not under block
//   recompute (Problem::full_first_layers), where dropping layers moves the recompute onto the kept ones.
// The larger bound is kept, and each relaxation's plan, given p's types back (typed_from), starts p's search.
struct Relaxed {
  double bound = 0;
  std::vector<Assignment> starts;
};
Relaxed relax_to_one_type(const Problem& p, double elapsed_s) {
  Relaxed out;
  auto solve_for_bound = [&](LayerSet layers, bool empty_cells, long long front, long long back) {
    Problem q = p;
    q.layers = std::move(layers);
    q.bound_only = true;
    q.empty_cells = empty_cells;
    q.progress = false;
    if (p.time_limit_s > 0) {
      q.time_limit_s = (p.time_limit_s - elapsed_s) / 4;
      if (q.time_limit_s <= 0) return;
    }
    const Solution r = solve(q);
    out.bound = std::max(out.bound, r.bound);
    if (r.feasible) {
      Assignment x = typed_from(p, r.x, front, back);
      if (!x.empty()) out.starts.push_back(std::move(x));
    }
  };
  LayerSet least = p.layers;
  BodyType one = p.layers.bodies.front();
  one.name = "least of the types";
  one.count = p.layers.body_layers();
  for (const BodyType& b : p.layers.bodies) {
    one.forward = std::min(one.forward, b.forward);
    one.param_mb = std::min(one.param_mb, b.param_mb);
    for (std::size_t r = 0; r < kRcKinds; ++r) {
      one.backward[r] = std::min(one.backward[r], b.backward[r]);
      if (one.act_mb[r] && b.act_mb[r]) one.act_mb[r] = std::min(*one.act_mb[r], *b.act_mb[r]);
    }
  }
  least.bodies = {one};
  solve_for_bound(least, false, 0, 0);
  const auto major = std::max_element(p.layers.bodies.begin(), p.layers.bodies.end(), [](const BodyType& a, const BodyType& b) { return a.count < b.count; });
  long long front = 0;
  for (auto it = p.layers.bodies.begin(); it != major; ++it) front += it->count;
  // Not under Megatron's block recompute (check_problem refuses it for several types today): a cell's first n layers
  // are the recomputed ones, and with the others' layers left out more of the kept type's would be.
  if (p.full_first_layers < 0) {
    LayerSet alone = p.layers;
    alone.bodies = {*major};
    solve_for_bound(alone, true, front, p.layers.body_layers() - front - major->count);
  }
  return out;
}

// A valid lower bound without the program (K > 1 with V > 1): the busiest stage does at least the mean work.
double work_bound(const Problem& p) {
  double work = p.layers.head_forward + p.layers.head_backward + p.layers.tail_forward + p.layers.tail_backward;
  std::vector<Rc> kinds = allowed_kinds(p);
  for (const auto& b : p.layers.bodies) {
    double least = kInf;
    for (Rc r : kinds) least = std::min(least, bwd_of(b, r));
    work += static_cast<double>(b.count) * (b.forward + least);
  }
  return p.micro_batches * work / p.stages;
}

// Interleaved stacks of more BODY types than the one-type relaxation takes (kMaxProgramBodyTypes): a hybrid stack
// whose kinds alternate without a period (Nemotron-H's Mamba-2, MoE and attention layers), each run its own type.
// (Without interleaving the program over stages places any number of types exactly.) The layers keep their
// model order, so a plan is the number of layers per cell along the virtual pipeline (typed_from), every layer at one
// recompute kind. From the even split, a descent moves one layer from one cell to another (first across one boundary,
// then between any two cells when no such move helps) while that lowers the stages' memory above the limit, then the
// simulated step, then the sum of squared stage times (which lets it cross plateaus of equal step); once per allowed
// kind, the best plan kept. Bound: the work bound (m x the least total work / S). Best found, not proved.
constexpr int kSequenceKicks = 24;              // kicked descents after the first (solve_sequence)
constexpr long long kSequenceKickFloor = 4000;  // simulations the kicks may take whatever the first descent took

Solution solve_sequence(const Problem& p) {
  const auto started = Clock::now();
  auto out_of_time = [&] { return p.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - started).count() > p.time_limit_s; };
  const int cells = p.stages * p.chunks;
  const long long n = p.layers.body_layers();
  Solution sol;
  sol.method = fmt::format("contiguous split of {} BODY types (more than the programs take): descent over the cells' layer counts", p.layers.bodies.size());
  struct Scored {
    double excess_mb = kInf;
    double step = kInf;
    double spread = kInf;
    [[nodiscard]] bool better_than(const Scored& o) const {
      if (excess_mb < o.excess_mb - kTol) return true;
      if (excess_mb > o.excess_mb + kTol) return false;
      if (step < o.step * (1 - 1e-12)) return true;
      return step <= o.step * (1 + 1e-12) && spread < o.spread * (1 - 1e-12);
    }
  };
  auto plan_of = [&](const std::vector<long long>& counts, Rc kind) {
    Assignment one(1, empty_assignment(p).front());
    for (int c = 0; c < cells; ++c) {
      const CellAt at = cell_at(p, c);
      one[0][at.v][at.s][ix(kind)] = counts[uz(c)];
    }
    return typed_from(p, one, 0, 0);
  };
  auto score = [&](const Assignment& x) {
    Scored out;
    if (x.empty() || !structurally_valid(p, x)) return out;
    const Evaluation e = evaluate(p, x);
    ++sol.explored;
    out.excess_mb = 0;
    for (double mb : e.stage_memory_mb) out.excess_mb += p.memory_limit_mb > 0 ? std::max(0.0, mb - p.memory_limit_mb) : 0.0;
    out.step = e.objective;
    out.spread = 0;
    for (double t : e.stage_time) out.spread += t * t;
    return out;
  };
  // Descends from `counts` (changed in place) and returns its score.
  auto descend = [&](std::vector<long long>& counts, Rc kind) {
    Scored here = score(plan_of(counts, kind));
    bool any_pair = false;  // the wider neighbourhood, once moves across one boundary stop helping
    while (here.excess_mb < kInf && !out_of_time()) {
      std::vector<long long> next;
      Scored next_score = here;
      for (int from = 0; from < cells; ++from) {
        if (counts[uz(from)] == 0) continue;
        for (int to = 0; to < cells; ++to) {
          if (to == from || (!any_pair && std::abs(to - from) != 1)) continue;
          std::vector<long long> moved = counts;
          --moved[uz(from)];
          ++moved[uz(to)];
          const Scored s = score(plan_of(moved, kind));
          if (s.better_than(next_score)) {
            next_score = s;
            next = moved;
          }
        }
      }
      if (next.empty()) {
        if (any_pair) break;
        any_pair = true;
        continue;
      }
      counts = next;
      here = next_score;
      any_pair = false;
    }
    return here;
  };
  Scored best;
  for (Rc kind : allowed_kinds(p)) {
    std::vector<long long> counts(uz(cells), n / cells);
    for (long long c = 1; c <= n % cells; ++c) ++counts[uz(c)];  // as even_split
    const long long before = sol.explored;
    Scored here = descend(counts, kind);
    // Iterated: kicks of two or three random one-layer moves from the best split so far, each followed by the
    // descent, kept when better (a local optimum of one-layer moves is often a few moves from a better one); at most
    // kSequenceKicks rounds and three times the first descent's simulations (at least kSequenceKickFloor), from a fixed seed, so that the plan
    // does not depend on the machine.
    const long long budget = sol.explored + std::max(3 * (sol.explored - before), kSequenceKickFloor);
    std::mt19937 rng(7);
    for (int round = 0; round < kSequenceKicks && sol.explored < budget && here.excess_mb < kInf && !out_of_time(); ++round) {
      std::vector<long long> kicked = counts;
      const int moves = 2 + static_cast<int>(rng() % 2);
      for (int k = 0; k < moves; ++k) {
        const int from = static_cast<int>(rng() % static_cast<unsigned>(cells));
        const int to = static_cast<int>(rng() % static_cast<unsigned>(cells));
        if (from == to || kicked[uz(from)] == 0) continue;
        --kicked[uz(from)];
        ++kicked[uz(to)];
      }
      const Scored s = descend(kicked, kind);
      if (s.better_than(here)) {
        here = s;
        counts = kicked;
      }
    }
    if (here.better_than(best)) {
      best = here;
      sol.x = plan_of(counts, kind);
    }
  }
  sol.timed_out = out_of_time();
  sol.solve_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (sol.x.empty() || best.excess_mb > kTol) {
    sol.feasible = false;
    sol.x.clear();
    sol.method += ": no split found within the memory limit";
    return sol;
  }
  sol.feasible = true;
  sol.eval = evaluate(p, sol.x);
  sol.bound = std::min(work_bound(p), sol.eval.objective);
  sol.gap = (sol.eval.objective - sol.bound) / sol.eval.objective;
  sol.optimal = sol.gap <= kTol;
  return sol;
}

}  // namespace

Solution solve_block_recompute(Problem p, long long* chosen, int* balanced) {
  const auto started = Clock::now();
  const double budget_s = p.time_limit_s;
  std::map<long long, Solution> solved;
  auto at = [&](long long n) -> const Solution& {
    auto it = solved.find(n);
    if (it != solved.end()) return it->second;
    p.full_first_layers = n;
    p.kinds = n == 0 ? std::vector<Rc>{Rc::None} : std::vector<Rc>{Rc::None, Rc::Full};
    if (budget_s > 0) p.time_limit_s = std::max(0.05, budget_s - std::chrono::duration<double>(Clock::now() - started).count());
    return solved.emplace(n, solve(p)).first->second;
  };
  if (p.layers.bodies.empty()) fail(p.layers.file, "states no BODY layers");
  const long long most = p.layers.bodies.front().count;  // n at or above a chunk's layers recomputes it all
  long long lo = 0;
  long long hi = most;
  if (!at(0).feasible) {  // no recompute fits: bisect (1, most]
    lo = 1;
    if (!at(hi).feasible) lo = hi;
  } else {
    hi = 0;
  }
  while (lo < hi) {
    long long mid = lo + (hi - lo) / 2;
    if (at(mid).feasible) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  long long best = lo;
  for (long long n = lo + 1; n < most && at(best).feasible; ++n) {
    if (!at(n).feasible || at(n).eval.objective >= at(best).eval.objective) break;  // (a time limit can leave n unsolved)
    best = n;
  }
  if (chosen) *chosen = best;
  if (balanced) *balanced = static_cast<int>(solved.size());
  Solution out = solved.at(best);
  out.solve_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return out;
}

bool expressible(const Assignment& x) {
  for (const auto& type : x) {
    for (const auto& chunk : type) {
      for (const auto& cell : chunk) {
        if (!cell_expressible(cell)) return false;
      }
    }
  }
  return true;
}

namespace {

// Why no plan can fit the memory limit whatever its layers (empty: it may): the head's or tail's stage, or the
// least share of the parameters a stage holds, with the per-stage constant.
std::string below_memory_floor(const Problem& p) {
  if (p.memory_limit_mb <= 0) return "";
  double params = 0;
  for (const auto& b : p.layers.bodies) params += b.param_mb * static_cast<double>(b.count);
  const double least = params / p.stages;
  if (p.layers.head_mb + p.constant_mb > p.memory_limit_mb || p.layers.tail_mb + p.constant_mb > p.memory_limit_mb)
    return fmt::format("{} MB is below the head's or tail's parameter memory ({} / {} MB plus the constant {} MB)", p.memory_limit_mb, p.layers.head_mb,
                       p.layers.tail_mb, p.constant_mb);
  double rebuild = kInf;  // a stage holding layers rebuilds at least the cheapest kind's of some type
  for (std::size_t l = 0; l < p.layers.bodies.size(); ++l)
    for (Rc r : allowed_kinds(p)) rebuild = std::min(rebuild, rebuild_of(p, l, ix(r)));
  if (p.layers.bodies.empty()) rebuild = 0;
  if (least + p.constant_mb + rebuild > p.memory_limit_mb)
    return fmt::format("{} MB is below the parameter memory a stage must hold ({:.0f} MB of body parameters over {} stages)", p.memory_limit_mb, params,
                       p.stages);
  return "";
}

}  // namespace

void check_problem(const Problem& p) {
  if (p.stages < 1) fail("--stages", "{} must be at least 1", p.stages);
  if (p.chunks < 1) fail("--interleave", "{} must be at least 1", p.chunks);
  if (p.micro_batches < 1) fail("--micro-batches", "{} must be at least 1", p.micro_batches);
  if (p.memory_limit_mb < 0) fail("--memory-limit", "{} must not be negative", p.memory_limit_mb);
  if (p.chunks > 1 && p.micro_batches < p.stages)
    fail("--micro-batches", "interleaving needs at least as many micro-batches ({}) as stages ({})", p.micro_batches, p.stages);
  if (p.chunks > 1 && p.schedule == simulate::Schedule::ZeroBubble) fail("--zero-bubble", "ZB-H1 runs one chunk per stage; interleave is {}", p.chunks);
  if (p.schedule == simulate::Schedule::DualPipeV) {
    if (p.chunks != 2) fail("--dualpipe-v", "DualPipe-V runs two chunks per stage; interleave is {}", p.chunks);
    if (p.micro_batches < 2 * p.stages)
      fail("--micro-batches", "{} over {} stages: DualPipe-V needs at least 2 x stages = {}", p.micro_batches, p.stages, 2 * p.stages);
  }
  long long cells = 1LL * p.stages * p.chunks;
  long long needed = cells - (cells >= 2 ? 2 : 1);
  if (p.layers.body_layers() < needed)
    fail(p.layers.file, "{} body layers cannot give each of the {} chunks (but the head's and tail's) a layer", p.layers.body_layers(), cells);
  if (p.full_first_layers >= 0) {
    if (p.layers.bodies.size() != 1)
      fail("recompute_num_layers", "Megatron's block recompute is balanced for one BODY type; {} has {}", p.layers.file, p.layers.bodies.size());
    for (Rc r : {Rc::Full, Rc::None}) {
      if (std::find(p.layers.kinds.begin(), p.layers.kinds.end(), r) == p.layers.kinds.end() && p.layers.has_memory())
        fail("recompute_num_layers", "block recompute needs the '{}' kind, which {} does not state", to_string(r), p.layers.file);
    }
  }
  for (Rc r : p.kinds) {
    if (std::find(p.layers.kinds.begin(), p.layers.kinds.end(), r) == p.layers.kinds.end() && p.layers.has_memory()) {
      fail("--recompute-kinds", "'{}' has no memory in {}; the layers state {}", to_string(r), p.layers.file, [&] {
        std::string s;
        for (Rc k : p.layers.kinds) s += (s.empty() ? "" : ", ") + std::string(to_string(k));
        return s;
      }());
    }
  }
  const std::string floor = below_memory_floor(p);
  if (!floor.empty()) fail("--memory-limit", "{}", floor);
}

simulate::StageTimes stage_times(const Problem& p, const Assignment& x) {
  simulate::StageTimes t;
  std::size_t V = static_cast<std::size_t>(p.chunks);
  std::size_t S = static_cast<std::size_t>(p.stages);
  t.forward.assign(V, std::vector<double>(S, 0));
  t.backward = t.forward;
  t.recompute = t.forward;
  t.activation = t.forward;
  t.static_memory.assign(S, 0);
  for (std::size_t s = 0; s < S; ++s) t.static_memory[s] = head_tail_static(p, static_cast<int>(s));
  std::vector<double> rebuilt(S, 0.0);  // the largest layer rebuild among the types and kinds the stage holds (rebuild_of)
  for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
    const BodyType& b = p.layers.bodies[l];
    for (std::size_t v = 0; v < V; ++v) {
      for (std::size_t s = 0; s < S; ++s) {
        for (int r = 0; r < kRcKinds; ++r) {
          double n = static_cast<double>(x[l][v][s][static_cast<std::size_t>(r)]);
          if (n == 0) continue;
          rebuilt[s] = std::max(rebuilt[s], rebuild_of(p, l, uz(r)));
          t.forward[v][s] += n * b.forward;
          t.backward[v][s] += n * bwd_of(b, static_cast<Rc>(r));
          t.recompute[v][s] += n * (bwd_of(b, static_cast<Rc>(r)) - bwd_of(b, Rc::None));
          t.activation[v][s] += n * act_of(b, static_cast<Rc>(r));
          t.static_memory[s] += n * b.param_mb;
        }
      }
    }
  }
  for (std::size_t s = 0; s < S; ++s) t.static_memory[s] += rebuilt[s];
  t.forward[0][0] += p.layers.head_forward;
  t.backward[0][0] += p.layers.head_backward;
  t.activation[0][0] += p.layers.head_act_mb;
  std::size_t ts = static_cast<std::size_t>(tail_stage(p));
  t.forward[V - 1][ts] += p.layers.tail_forward;
  t.backward[V - 1][ts] += p.layers.tail_backward;
  t.activation[V - 1][ts] += p.layers.tail_act_mb;
  return t;
}

Evaluation evaluate(const Problem& p, const Assignment& x) {
  simulate::StageTimes t = stage_times(p, x);
  Evaluation e;
  for (int s = 0; s < p.stages; ++s) {
    std::size_t st = uz(s);
    double T = 0;
    for (int v = 0; v < p.chunks; ++v) {
      double cell = t.forward[uz(v)][st] + t.backward[uz(v)][st];
      T += cell;
      e.max_cell = std::max(e.max_cell, cell);
    }
    e.stage_time.push_back(T);
    e.sum_stage += T;
    double peak = 0;
    for (const auto& c : plan::in_flight_vectors(p.schedule, p.stages, p.chunks, p.micro_batches, s)) {
      double a = 0;
      for (int v = 0; v < p.chunks; ++v) a += c[uz(v)] * t.activation[uz(v)][st];
      peak = std::max(peak, a);
    }
    e.stage_memory_mb.push_back(t.static_memory[st] + peak);
    if (p.memory_limit_mb > 0 && e.stage_memory_mb.back() > p.memory_limit_mb + kTol) e.fits = false;
  }
  e.closed_form = plan::closed_form_step(p.chunks, p.micro_batches, e.sum_stage, e.max_cell);
  e.objective = simulate::makespan(simulate::make_orders(p.schedule, p.stages, p.chunks, p.micro_batches), t);
  return e;
}

namespace {

Solution solve_checked(const Problem& p);

}  // namespace

Solution solve(const Problem& p) {
  check_problem(p);
  if (p.chunks == 1 || p.layers.bodies.size() <= kMaxProgramBodyTypes) return solve_checked(p);
  // Interleaved, more types than the one-type relaxation takes: the contiguous-split descent, and the general path
  // within the time left when it can take the stack (it refuses one whose majority type cannot fill every cell); the
  // faster plan is kept, with the higher of the two bounds.
  Solution best = solve_sequence(p);
  Problem rest = p;
  if (p.time_limit_s > 0) rest.time_limit_s = std::max(1e-3, p.time_limit_s - best.solve_seconds);
  try {
    Solution general = solve_checked(rest);
    if (general.feasible && (!best.feasible || general.eval.objective < best.eval.objective)) {
      general.bound = std::max(general.bound, best.bound);
      general.solve_seconds += best.solve_seconds;
      best = general;
    } else if (best.feasible && general.feasible) {
      best.bound = std::max(best.bound, general.bound);
      best.solve_seconds += general.solve_seconds;
    }
  } catch (const Error&) {
  }
  if (best.feasible) {
    best.bound = std::min(best.bound, best.eval.objective);
    best.gap = (best.eval.objective - best.bound) / best.eval.objective;
    best.optimal = best.gap <= kTol;
  }
  return best;
}

namespace {

Solution solve_checked(const Problem& p) {
  Context c = make_context(p);
  Solution sol;
  Incumbent best;
  double bound = 0;
  bool bound_exact = false;
  const bool program = p.chunks == 1 || p.layers.bodies.size() == 1;
  const bool debug = std::getenv("SAPP_DEBUG") != nullptr;
  auto phase = [&](const char* name) {
    if (debug) std::fprintf(stderr, "%8.3f s %s: best %.2f, bound %.2f\n", c.elapsed(), name, best.step, bound);
  };
  if (program) {
    // A first plan (the even splits that are valid and fit) sets the cutoff that keeps slower stage options out
    // of the programs; without a memory limit it alone keeps the compositions of many layers per stage unexplored.
    offer_even_splits(c, best);
    c.cutoff = best.step;
    Menu menu(c);
    const double m = p.micro_batches;
    // Lower bound on the simulated step: (bound so far, lead prefix).
    DpRun lb = dp_over_stages(
        c, menu,
        [&](const DpState& st, const StageChoice& o) {
          return std::pair{std::max(st.a, st.b + m * o.time), st.b + o.lead};
        },
        [](const DpState& st) { return st.a; }, "lower bound");
    if (!c.timed_out && lb.ends.empty() && !best.x.empty()) {
      // Every plan the program saw holds a stage slower than the first plan: that plan is optimal.
      bound = best.step;
      bound_exact = true;
    } else if (!c.timed_out) {
      if (lb.ends.empty()) {
        sol.method = "dynamic program over stages: no plan meets the memory limit";
        sol.feasible = false;
        sol.optimal = true;  // proved infeasible: the program saw every plan
        sol.explored = c.explored;
        sol.solve_seconds = c.elapsed();
        c.end_progress();
        return sol;
      }
      bound = lb.ends.front().first;
      bound_exact = true;
      constexpr std::size_t kSeeds = 16;
      for (std::size_t i = 0; i < std::min(kSeeds, lb.ends.size()); ++i) offer(c, best, rebuild(c, menu, lb, lb.ends[i].second));
      bound = std::min(bound, best.step);
      c.cutoff = best.step;
    }
    if (p.chunks == 1 && (p.schedule == simulate::Schedule::OneF1B || p.schedule == simulate::Schedule::ZeroBubble) && bound_exact && !c.timed_out) {
      // Excursions: between its F(s, j) and B(s, j) a stage's order runs other blocks, while micro-batch j's own
      // path runs up through the later stages and back, R_s = sum_{s' > s} (F + B). A path may leave the stage's
      // order at F(s, j) and come back at B(s, j) (e times, on segments that do not overlap): step >= sum_{s' < s}
      // (F + B) + (the stage's blocks outside the skipped segments) + e R_s. Segments are taken greedily from the
      // start and from the end of the order (excursion_blocks; the longest of those variants per e). e = 0 is the
      // program above; e = 1 from the start is the path through the stage's first backward (micro-batch 0's
      // forward through every stage and its backward down to s, then the rest of the stage's order). The program
      // keeps (a, b) = (the longest such path so far plus e x the work of the stages after it, sum_{s' < next}
      // (F + B)): a' = max(a + e T, b + path blocks), b' = b + T. The loop ends after three counts in a row that
      // raise nothing (the paths shorten once the round trips outweigh the blocks they skip). ZB-H1: T on the paths
      // is the stage's forward and split backward (StageChoice::pass), the window's blocks priced by kind, and e = 0
      // (no excursion; the window ends before the trailing weight gradients) is a path of its own.
      std::size_t most = 0;
      for (const auto& stage : c.excursions) most = std::max(most, stage[0].size());
      int idle = 0;
      for (std::size_t e = splits_backward(p) ? 0 : 1; e < most && idle < 3 && !c.timed_out; ++e) {
        const double times = static_cast<double>(e);
        DpRun excursion = dp_over_stages(
            c, menu,
            [&](const DpState& st, const StageChoice& o) {
              return std::pair{std::max(st.a + times * o.pass, e < o.excursion.size() ? st.b + o.excursion[e] : -kInf), st.b + o.pass};
            },
            [](const DpState& st) { return st.a; }, fmt::format("bound through {} excursions", e), -kInf);
        if (c.timed_out || excursion.ends.empty()) break;
        const double reach = excursion.ends.front().first;
        idle = reach > bound * (1 + kTol) ? 0 : idle + 1;
        bound = std::max(bound, reach);
      }
    }
    // Interleaved: the paths through chunk v's cells: micro-batch 0's forward up to cell (v, s), the
    // stage's order from F(v, s, 0) to B(v, s, m - 1), then micro-batch m - 1's backward back to cell (0, 0), so
    // step >= sum over the cells before (v, s) in the virtual order of (F + B) + window(v, s). With e excursions
    // (as for 1F1B above; the way up and back from cell (v, s) runs every cell after it in the virtual order):
    // step >= sum over the cells before (v, s) + the window's blocks left + e x sum over the cells after (v, s).
    // Per stage t, with K(t) = before(t) + e after(t) (the work of the chunks before v, e times that of the chunks
    // after v) and chunk(t) the work of chunk v, the program over stages keeps (a, b) = (the longest such path so
    // far plus, for the stages since, e chunk(t) + K(t); sum_{t' < next} (chunk(t') + K(t'))):
    // a' = max(a + e chunk, b + window) + K, b' = b + chunk + K.
    const bool interleaved = p.schedule == simulate::Schedule::Interleaved || p.schedule == simulate::Schedule::InterleavedLessMemory;
    // The bound through chunk v's windows, e = 0, 1, ... until three counts in a row raise nothing; `step(e)` is the
    // program's transition for e excursions.
    auto paths_through_chunk = [&](int v, const auto& step) {
      std::size_t most = 0;
      for (const auto& stage : c.excursions) most = std::max(most, stage[uz(v)].size());
      int idle = 0;
      for (std::size_t e = 0; e < most && idle < 3 && !c.timed_out; ++e) {
        Menu chunk_menu(c, v, static_cast<int>(e));
        DpRun path = dp_over_stages(
            c, chunk_menu, step(static_cast<double>(e)), [](const DpState& st) { return st.a; }, fmt::format("bound through chunk {}, {} excursions", v, e),
            -kInf);
        if (c.timed_out || path.ends.empty()) break;
        const double reach = path.ends.front().first;
        idle = reach > bound * (1 + kTol) ? 0 : idle + 1;
        bound = std::max(bound, reach);
      }
    };
    // a' = max(a + e C, b + window) + K, b' = b + C + K (C: chunk v's cell, K: the option's `before`).
    auto later_cells_after = [](double times) {
      return [times](const DpState& st, const StageChoice& o) {
        return std::pair{std::max(st.a + times * o.chunk_time, st.b + o.window) + o.before, st.b + o.before + o.chunk_time};
      };
    };
    // Only the last chunk's paths (the longest prefix before its cells; the other chunks', with and without
    // excursions, gave no more on the demo and bench cases, and each costs programs).
    if (p.chunks > 1 && bound_exact && interleaved && !c.timed_out) paths_through_chunk(p.chunks - 1, later_cells_after);
    // DualPipe-V: the paths through chunk v's window on stage s, from F(v, s, 0) to B(v, s, m - 1) (its blocks
    // priced by kind: excursion_blocks with split kinds), with e excursions. Chunk 1 runs the stages from S-1 down
    // to 0, so micro-batch 0 reaches F(1, s, 0) through every chunk-0 cell and the chunk-1 cells of stages
    // s+1..S-1, micro-batch m - 1's backward leaves B(1, s, m - 1) back through the same cells, and an excursion
    // runs chunk 1 on to stage 0 and back (the chunk-1 cells of stages before s): step >= sum_t K(t) + window(s) +
    // sum_{t > s} C(t) + e sum_{t < s} C(t), K = chunk 0's forward and (split) backward, C = chunk 1's. Over the
    // stages in order, (a, b) = (the longest such path so far, sum_{t' <= t} (e C(t') + K(t'))): a' = max(a + C,
    // b + window) + K, b' = b + e C + K. Chunk 0 runs the stages upward: the interleaved case with K = e x chunk 1's
    // cell (an excursion runs every later cell), a' = max(a + e C, b + window) + K, b' = b + C + K.
    if (bound_exact && p.schedule == simulate::Schedule::DualPipeV && !c.timed_out) {
      paths_through_chunk(1, [](double times) {
        return [times](const DpState& st, const StageChoice& o) {
          return std::pair{std::max(st.a + o.chunk_time, st.b + o.window) + o.before, st.b + times * o.chunk_time + o.before};
        };
      });
      if (!c.timed_out) paths_through_chunk(0, later_cells_after);
    }
    phase("bound program");
    // The closed-form step time's optimum and its neighbours.
    if (!c.timed_out) {
      DpRun cf = dp_over_stages(
          c, menu,
          [](const DpState& st, const StageChoice& o) {
            return std::pair{std::max(st.a, o.cell_max), st.b + o.time};
          },
          [&](const DpState& st) { return plan::closed_form_step(p.chunks, p.micro_batches, st.b, st.a); }, "closed form");
      constexpr std::size_t kSeeds = 16;
      for (std::size_t i = 0; i < std::min(kSeeds, cf.ends.size()); ++i) offer(c, best, rebuild(c, menu, cf, cf.ends[i].second));
    }
    phase("closed-form program");
  }
  if (!bound_exact) bound = work_bound(p);
  // Several types under interleaving: the one-type relaxations' bound (relax_to_one_type), proved when met, and
  // their plans as starts.
  bool relaxed_bound = false;
  std::vector<Assignment> starts;  // local searches of their own (below), the best kept
  if (!program && !c.timed_out) {
    Relaxed relaxed = relax_to_one_type(p, c.elapsed());
    relaxed_bound = relaxed.bound > bound;
    bound = std::max(bound, relaxed.bound);
    starts = std::move(relaxed.starts);
    phase("one-type relaxations");
  }
  if (best.x.empty()) {
    // An even split with one kind per type, the least memory-hungry that fits (K > 1 with V > 1, or out of time).
    offer_even_splits(c, best);
  }
  const bool anneal = p.layers.bodies.size() == 1 && !best.x.empty() && !c.timed_out;
  if (anneal) {
    // Rounds restart from the best plan so far with their own seed; each ends with a hill climb and a local search
    // (together they reach the bound where annealing alone stops short), and none starts once the bound is met.
    // Budgets of simulated blocks, whatever the problem's size: each round's annealing and its hill climb spend at
    // most kBlocks / kRounds each (all rounds together about two seconds' simulation on one core; halving them
    // lost 0.3 % on the demo's less-memory case); the local searches stop at their first pass without a gain.
    constexpr long long kProposals = 40000;
    constexpr double kBlocks = 1.5e8;
    constexpr unsigned kRounds = 3;
    double blocks = 0;
    for (const auto& order : c.orders.order) blocks += static_cast<double>(order.size());
    const auto sims = static_cast<long long>(kBlocks / kRounds / std::max(1.0, blocks));
    // Spare layers late is a memory argument (the early stages hold more micro-batches in flight): without a
    // memory limit the start is skipped.
    if (p.chunks > 1 && p.memory_limit_mb > 0) {
      Assignment seed = late_spare_seed(p);
      Annealer(c, seed).polish(best, bound, p.bound_only ? sims / 8 : sims, true);
      phase("late-spare seed");
    }
    // The end-stage relaxation before the rounds: they stop as soon as a plan meets it, and a time limit that
    // cuts them short still reports it.
    const bool interleaved = p.schedule == simulate::Schedule::Interleaved || p.schedule == simulate::Schedule::InterleavedLessMemory;
    if (interleaved && bound_exact && !c.timed_out && best.step > bound * (1 + kTol)) {
      // The end-stage relaxation (pipeline/end_bound): stages 0 and S-1 exact, the middle as delays.
      c.cutoff = best.step;
      EndBoundInput in;
      in.orders = &c.orders;
      in.options = end_bound_options(c);
      phase("end-stage options");
      in.layers = c.total;
      in.cutoff = best.step;
      in.floor = bound;
      // Under a time limit the relaxation gets half of what is left, so that the annealing rounds still run when
      // it cannot finish (it then says nothing).
      const double share_end_s = p.time_limit_s > 0 ? c.elapsed() + (p.time_limit_s - c.elapsed()) / 2 : 0;
      in.out_of_time = [&c, share_end_s] { return c.out_of_time() || (share_end_s > 0 && c.elapsed() > share_end_s); };
      EndBound eb = in.options.empty() ? EndBound{} : end_stage_bound(in);
      if (eb.valid) bound = std::max(bound, std::min(eb.bound, best.step));
      if (debug) {
        std::size_t n = 0;
        for (const auto& st : in.options)
          for (const auto& l : st) n += l.size();
        std::fprintf(stderr, "end-stage bound: %zu options, %lld pairs, %lld pruned, valid %d, %.2f\n", n, eb.pairs, eb.pruned, eb.valid ? 1 : 0, eb.bound);
      }
      phase("end-stage bound");
    }
    for (unsigned round = 0; round < kRounds && !p.bound_only && !c.timed_out && best.step > bound * (1 + kTol); ++round) {
      Annealer(c, best.x).run(best, bound, kProposals, sims, 20240611 + round);
      if (!c.timed_out) Annealer(c, best.x).polish(best, bound, sims);
      local_search(c, best, bound);
      phase("annealing round");
    }
  } else {
    // Several types: from the best even split with and without the long moves, then from each relaxation's plan,
    // each climb on its own (first-improvement climbs end in different local optima); the best kept.
    if (p.layers.bodies.size() > 1 && !best.x.empty()) starts.insert(starts.begin(), best.x);
    const long long explored_before = c.explored;
    local_search(c, best, bound);
    for (std::size_t i = 0; i < starts.size(); ++i) {
      Incumbent from;
      offer(c, from, starts[i]);
      local_search(c, from, bound, i != 0);
      if (from.step < best.step - kTol) best = std::move(from);
    }
    phase("local search");
    if (p.layers.bodies.size() > 1) kick_and_climb(c, best, bound, c.explored - explored_before);
    phase("kicks");
  }
  c.end_progress();
  sol.method = program ? "bound by a dynamic program over stages, plans simulated" : "local search from even splits, plans simulated";
  sol.timed_out = c.timed_out;
  sol.bound = bound;
  sol.explored = c.explored;
  if (!best.x.empty()) {
    sol.feasible = true;
    sol.x = best.x;
    sol.eval = evaluate(p, sol.x);
    sol.gap = std::max(0.0, (sol.eval.objective - bound) / sol.eval.objective);
    sol.optimal = (bound_exact || relaxed_bound) && sol.eval.objective <= bound * (1 + 1e-9);
    if (sol.optimal) sol.gap = 0;
  } else {
    sol.feasible = false;
    sol.optimal = false;
  }
  sol.solve_seconds = c.elapsed();
  return sol;
}

}  // namespace

Solution solve_exhaustive(const Problem& p, long long limit) {
  check_problem(p);
  auto t0 = std::chrono::steady_clock::now();
  Context ctx = make_context(p);
  const Context& st = ctx;
  const int S = p.stages;
  const int V = p.chunks;
  const std::size_t cells = static_cast<std::size_t>(S) * static_cast<std::size_t>(V);
  std::vector<long long> counts(cells, 0);  // along the virtual pipeline (cell_at)
  Solution best;
  best.method = "exhaustive enumeration, memory checked by simulation";
  best.optimal = true;
  double best_obj = kInf;
  long long examined = 0;
  Assignment x = empty_assignment(p);
  // Cell contents in model order, then every recompute mix of every cell.
  std::vector<std::pair<std::size_t, std::vector<std::pair<std::size_t, long long>>>> plan;  // cell -> (type, n)
  std::function<void(std::size_t, std::size_t)> assign_mix = [&](std::size_t ci, std::size_t ti) {
    if (ci == plan.size()) {
      if (++examined > limit) fail("--solver", "exhaustive enumeration passed {} assignments; use the dp solver for problems this size", limit);
      if (!cells_allowed(p, x) || !cells_ordered_across_types(p, x)) return;
      simulate::StageTimes t = stage_times(p, x);
      simulate::SimResult r = simulate::simulate(p.schedule, S, V, p.micro_batches, t);
      if (p.memory_limit_mb > 0) {
        for (double peak : r.peak_memory) {
          if (peak > p.memory_limit_mb + 1e-9) return;
        }
      }
      Evaluation e = evaluate(p, x);
      if (e.objective < best_obj - 1e-12) {
        best_obj = e.objective;
        best.x = x;
        best.eval = e;
        best.feasible = true;
      }
      return;
    }
    const auto& [cell, parts] = plan[ci];
    if (ti == parts.size()) {
      assign_mix(ci + 1, 0);
      return;
    }
    auto [type, n] = parts[ti];
    const CellAt at = cell_at(p, static_cast<long long>(cell));
    auto& slot = x[type][at.v][at.s];
    // Every composition of n over the allowed kinds.
    std::function<void(std::size_t, long long)> split = [&](std::size_t ki, long long rest) {
      if (ki + 1 == st.kinds.size()) {
        slot[static_cast<std::size_t>(st.kinds[ki])] = rest;
        assign_mix(ci, ti + 1);
        slot[static_cast<std::size_t>(st.kinds[ki])] = 0;
        return;
      }
      for (long long c = 0; c <= rest; ++c) {
        slot[static_cast<std::size_t>(st.kinds[ki])] = c;
        split(ki + 1, rest - c);
      }
      slot[static_cast<std::size_t>(st.kinds[ki])] = 0;
    };
    split(0, n);
  };
  std::function<void(std::size_t, long long)> compose = [&](std::size_t c, long long left) {
    if (c == cells) {
      if (left != 0) return;
      for (int s = 0; s < S && V > 1; ++s) {
        long long lo = std::numeric_limits<long long>::max();
        long long hi = 0;
        for (int v = 0; v < V; ++v) {
          if (reserved(p, v, s)) continue;
          long long n = counts[uz(position_of(p, v, s))];
          lo = std::min(lo, n);
          hi = std::max(hi, n);
        }
        if (p.chunk_spread > 0 && hi > 0 && hi - lo > p.chunk_spread) return;
      }
      plan.clear();
      long long pos = 0;
      for (std::size_t cell = 0; cell < cells; ++cell) {
        std::vector<std::pair<std::size_t, long long>> parts;
        for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
          long long a = std::max(pos, st.type_start[l]);
          long long b = std::min(pos + counts[cell], st.type_start[l] + p.layers.bodies[l].count);
          if (b > a) parts.emplace_back(l, b - a);
        }
        pos += counts[cell];
        plan.emplace_back(cell, parts);
      }
      assign_mix(0, 0);
      return;
    }
    const CellAt at = cell_at(p, static_cast<long long>(c));
    long long lo = reserved(p, static_cast<int>(at.v), static_cast<int>(at.s)) ? 0 : 1;
    for (long long n = lo; n <= left; ++n) {
      counts[c] = n;
      compose(c + 1, left - n);
    }
    counts[c] = 0;
  };
  compose(0, st.total);
  // Every plan was simulated: the best one's step is its own lower bound (printed as such).
  if (best.feasible) {
    best.bound = best.eval.objective;
    best.gap = 0;
  }
  best.explored = examined;
  best.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

Assignment even_split(const Problem& p, Rc kind) {
  Assignment x = empty_assignment(p);
  std::vector<Rc> kinds = allowed_kinds(p);
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) return {};
  if (p.layers.bodies.empty()) return x;
  // The cells' counts from all body layers, then the layers in model order along the virtual pipeline (cells in
  // order v S + s, typed_from): several types split type by type would interleave them, which no framework's split
  // states.
  const long long cells = 1LL * p.stages * p.chunks;
  const long long n = p.layers.body_layers();
  const long long base = n / cells;
  const long long extra = n % cells;
  Assignment one(1, x.front());
  for (long long c = 0; c < cells; ++c) {
    const CellAt at = cell_at(p, c);
    one[0][at.v][at.s][ix(kind)] = base + ((c >= 1 && c <= extra) ? 1 : 0);
  }
  return typed_from(p, one, 0, 0);
}

std::vector<FrameworkStrategy> to_framework(const Problem& p, const Assignment& x) {
  std::vector<FrameworkStrategy> out;
  long long cells = 1LL * p.stages * p.chunks;
  for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
    long long base = p.layers.bodies[l].count / cells;
    FrameworkStrategy f;
    for (int v = 0; v < p.chunks; ++v) {
      std::vector<long long> off, full, sel, comm;
      for (int s = 0; s < p.stages; ++s) {
        const auto& c = x[l][static_cast<std::size_t>(v)][static_cast<std::size_t>(s)];
        long long n = 0;
        for (long long k : c) n += k;
        auto at = [&](Rc r) { return c[static_cast<std::size_t>(r)]; };
        off.push_back(n - base);
        full.push_back(at(Rc::Full));
        sel.push_back(at(Rc::Selective) + at(Rc::Both) + at(Rc::Full));
        comm.push_back(at(Rc::Comm) + at(Rc::Both) + at(Rc::Full));
      }
      f.offset.push_back(off);
      f.recompute.push_back(full);
      f.select_recompute.push_back(sel);
      f.select_comm_recompute.push_back(comm);
    }
    out.push_back(f);
  }
  return out;
}

Assignment from_framework(const Problem& p, const std::vector<FrameworkStrategy>& strategies) {
  if (strategies.size() != p.layers.bodies.size()) fail("--manual", "states {} BODY strategies for {} BODY types", strategies.size(), p.layers.bodies.size());
  Assignment x = empty_assignment(p);
  long long cells = 1LL * p.stages * p.chunks;
  for (std::size_t l = 0; l < strategies.size(); ++l) {
    const FrameworkStrategy& f = strategies[l];
    long long base = p.layers.bodies[l].count / cells;
    long long total = 0;
    for (int v = 0; v < p.chunks; ++v) {
      for (int s = 0; s < p.stages; ++s) {
        auto get = [&](const std::vector<std::vector<long long>>& a, const char* key) -> long long {
          if (a.empty()) return 0;
          if (a.size() != static_cast<std::size_t>(p.chunks) || a[static_cast<std::size_t>(v)].size() != static_cast<std::size_t>(p.stages)) {
            fail("--manual", "{} must have {} chunk(s) of {} stages", key, p.chunks, p.stages);
          }
          return a[static_cast<std::size_t>(v)][static_cast<std::size_t>(s)];
        };
        long long n = base + get(f.offset, "offset");
        auto all = [&](long long k) { return k < 0 ? n : k; };  // -1 stands for `true`: every layer of the cell
        long long full = all(get(f.recompute, "recompute"));
        long long sel = all(get(f.select_recompute, "select_recompute"));
        long long comm = all(get(f.select_comm_recompute, "select_comm_recompute"));
        long long both = std::max(std::min(sel - full, comm - full), 0LL);
        long long s_only = std::max(sel - full - both, 0LL);
        long long c_only = std::max(comm - full - both, 0LL);
        long long none = n - full - both - s_only - c_only;
        if (n < 0 || none < 0) fail("--manual", "chunk {} stage {}: {} layers cannot hold {} recomputed ones", v, s, n, full + both + s_only + c_only);
        auto& c = x[l][static_cast<std::size_t>(v)][static_cast<std::size_t>(s)];
        c[static_cast<std::size_t>(Rc::None)] = none;
        c[static_cast<std::size_t>(Rc::Selective)] = s_only;
        c[static_cast<std::size_t>(Rc::Comm)] = c_only;
        c[static_cast<std::size_t>(Rc::Both)] = both;
        c[static_cast<std::size_t>(Rc::Full)] = full;
        total += n;
      }
    }
    if (total != p.layers.bodies[l].count)
      fail("--manual", "offsets place {} layers of {}, which has {}", total, p.layers.bodies[l].name, p.layers.bodies[l].count);
  }
  return x;
}

}  // namespace sapp::balance
