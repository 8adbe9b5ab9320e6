#include "pipeline/solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sapp::balance {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<Rc> allowed_kinds(const Problem& p) {
  if (!p.layers.has_memory()) return {Rc::None};
  if (p.kinds.empty()) return p.layers.kinds;
  return p.kinds;
}

double act_of(const BodyType& b, Rc r) { return b.act_mb[static_cast<std::size_t>(r)].value_or(0.0); }
double bwd_of(const BodyType& b, Rc r) { return b.backward[static_cast<std::size_t>(r)]; }

bool reserved(const Problem& p, int v, int s) { return (v == 0 && s == 0) || (v == p.chunks - 1 && s == p.stages - 1); }

// One recompute mix of n layers of one type: its backward time and activation memory.
struct Mix {
  double cost = 0;
  double weight = 0;
  std::array<long long, kRcKinds> counts{};
};

// Pareto front of mixes of n layers (weight ascending, cost strictly descending), for n = 0..max_n.
std::vector<std::vector<Mix>> mix_fronts(const BodyType& b, const std::vector<Rc>& kinds, long long max_n) {
  std::vector<std::vector<Mix>> fronts(static_cast<std::size_t>(max_n + 1));
  fronts[0].push_back(Mix{});
  for (long long n = 1; n <= max_n; ++n) {
    std::vector<Mix> all;
    for (const Mix& prev : fronts[static_cast<std::size_t>(n - 1)]) {
      for (Rc r : kinds) {
        Mix m = prev;
        m.cost += bwd_of(b, r);
        m.weight += act_of(b, r);
        ++m.counts[static_cast<std::size_t>(r)];
        all.push_back(m);
      }
    }
    std::sort(all.begin(), all.end(), [](const Mix& a, const Mix& c) { return a.weight != c.weight ? a.weight < c.weight : a.cost < c.cost; });
    std::vector<Mix>& front = fronts[static_cast<std::size_t>(n)];
    double best = kInf;
    for (const Mix& m : all) {
      if (m.cost < best - 1e-12) {
        front.push_back(m);
        best = m.cost;
      }
    }
  }
  return fronts;
}

struct Setup {
  std::vector<Rc> kinds;
  std::vector<std::vector<std::vector<int>>> vectors;  // per stage: Pareto-maximal in-flight count vectors
  std::vector<long long> type_start;                   // model-order position where each type starts
  long long total = 0;
};

Setup setup(const Problem& p) {
  Setup st;
  st.kinds = allowed_kinds(p);
  for (int s = 0; s < p.stages; ++s) st.vectors.push_back(simulate::in_flight_vectors(p.schedule, p.stages, p.chunks, p.micro_batches, s));
  for (const auto& b : p.layers.bodies) {
    st.type_start.push_back(st.total);
    st.total += b.count;
  }
  return st;
}

double head_tail_static(const Problem& p, int s) { return (s == 0 ? p.layers.head_mb : 0.0) + (s == p.stages - 1 ? p.layers.tail_mb : 0.0) + p.constant_mb; }

double head_tail_time(const Problem& p, int s) {
  double t = 0;
  if (s == 0) t += p.layers.head_forward + p.layers.head_backward;
  if (s == p.stages - 1) t += p.layers.tail_forward + p.layers.tail_backward;
  return t;
}

// sum_s T_s / V + (m V - 1) * max_cell: every cell's one pass of the fill, then m V - 1 lock-step steps at the
// slowest cell's pace. 1F1B (V = 1): (m - 1) max_s T_s + sum_s T_s.
double objective_of(const Problem& p, double max_cell, double sum_t) {
  double m = p.micro_batches;
  double v = p.chunks;
  return sum_t / v + (m * v - 1.0) * max_cell;
}

Assignment empty_assignment(const Problem& p) {
  return Assignment(p.layers.bodies.size(),
                    std::vector<std::vector<std::array<long long, kRcKinds>>>(
                        static_cast<std::size_t>(p.chunks), std::vector<std::array<long long, kRcKinds>>(static_cast<std::size_t>(p.stages))));
}

}  // namespace

void check_problem(const Problem& p) {
  if (p.stages < 1) fail("--stages", "{} must be at least 1", p.stages);
  if (p.chunks < 1) fail("--interleave", "{} must be at least 1", p.chunks);
  if (p.micro_batches < 1) fail("--micro-batches", "{} must be at least 1", p.micro_batches);
  if (p.memory_limit_mb < 0) fail("--memory-limit", "{} must not be negative", p.memory_limit_mb);
  if (p.chunks > 1 && p.micro_batches < p.stages)
    fail("--micro-batches", "interleaving needs at least as many micro-batches ({}) as stages ({})", p.micro_batches, p.stages);
  if (p.chunks > 1 && p.layers.bodies.size() > 1)
    fail(p.layers.file, "{} BODY types with interleave {}: the exact solver handles several BODY types only without interleaving", p.layers.bodies.size(),
         p.chunks);
  long long cells = 1LL * p.stages * p.chunks;
  long long needed = cells - (cells >= 2 ? 2 : 1);
  if (p.layers.body_layers() < needed)
    fail(p.layers.file, "{} body layers cannot give each of the {} chunks (but the head's and tail's) a layer", p.layers.body_layers(), cells);
  for (Rc r : p.kinds) {
    if (std::find(p.layers.kinds.begin(), p.layers.kinds.end(), r) == p.layers.kinds.end() && p.layers.has_memory()) {
      fail("--recompute-kinds", "'{}' has no memory in {}; the layers state {}", to_string(r), p.layers.file, [&] {
        std::string s;
        for (Rc k : p.layers.kinds) s += (s.empty() ? "" : ", ") + std::string(to_string(k));
        return s;
      }());
    }
  }
  if (p.memory_limit_mb > 0) {
    // The least any stage can hold: its share of the parameters with the smallest activations.
    double params = 0;
    for (const auto& b : p.layers.bodies) params += b.param_mb * static_cast<double>(b.count);
    double least = params / p.stages;
    double first = p.layers.head_mb + p.constant_mb;
    if (first > p.memory_limit_mb || p.layers.tail_mb + p.constant_mb > p.memory_limit_mb) {
      fail("--memory-limit", "{} MB is below the head's or tail's parameter memory ({} / {} MB plus the constant {} MB)", p.memory_limit_mb, p.layers.head_mb,
           p.layers.tail_mb, p.constant_mb);
    }
    if (least + p.constant_mb > p.memory_limit_mb) {
      fail("--memory-limit", "{} MB is below the parameter memory a stage must hold ({:.0f} MB of body parameters over {} stages)", p.memory_limit_mb, params,
           p.stages);
    }
  }
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
  for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
    const BodyType& b = p.layers.bodies[l];
    for (std::size_t v = 0; v < V; ++v) {
      for (std::size_t s = 0; s < S; ++s) {
        for (int r = 0; r < kRcKinds; ++r) {
          double n = static_cast<double>(x[l][v][s][static_cast<std::size_t>(r)]);
          if (n == 0) continue;
          t.forward[v][s] += n * b.forward;
          t.backward[v][s] += n * bwd_of(b, static_cast<Rc>(r));
          t.recompute[v][s] += n * (bwd_of(b, static_cast<Rc>(r)) - bwd_of(b, Rc::None));
          t.activation[v][s] += n * act_of(b, static_cast<Rc>(r));
          t.static_memory[s] += n * b.param_mb;
        }
      }
    }
  }
  t.forward[0][0] += p.layers.head_forward;
  t.backward[0][0] += p.layers.head_backward;
  t.forward[V - 1][S - 1] += p.layers.tail_forward;
  t.backward[V - 1][S - 1] += p.layers.tail_backward;
  return t;
}

Evaluation evaluate(const Problem& p, const Assignment& x) {
  simulate::StageTimes t = stage_times(p, x);
  Evaluation e;
  for (int s = 0; s < p.stages; ++s) {
    std::size_t st = static_cast<std::size_t>(s);
    double T = 0;
    for (int v = 0; v < p.chunks; ++v) {
      double cell = t.forward[static_cast<std::size_t>(v)][st] + t.backward[static_cast<std::size_t>(v)][st];
      T += cell;
      e.max_cell = std::max(e.max_cell, cell);
    }
    e.stage_time.push_back(T);
    e.sum_stage += T;
    double peak = 0;
    for (const auto& c : simulate::in_flight_vectors(p.schedule, p.stages, p.chunks, p.micro_batches, s)) {
      double a = 0;
      for (int v = 0; v < p.chunks; ++v) a += c[static_cast<std::size_t>(v)] * t.activation[static_cast<std::size_t>(v)][st];
      peak = std::max(peak, a);
    }
    e.stage_memory_mb.push_back(t.static_memory[st] + peak);
    if (p.memory_limit_mb > 0 && e.stage_memory_mb.back() > p.memory_limit_mb + 1e-9) e.fits = false;
  }
  e.objective = objective_of(p, e.max_cell, e.sum_stage);
  return e;
}

Solution solve(const Problem& p) {
  check_problem(p);
  auto t0 = std::chrono::steady_clock::now();
  Setup st = setup(p);
  const long long L = st.total;
  const int S = p.stages;
  const int V = p.chunks;
  const std::size_t K = p.layers.bodies.size();
  double limit = p.memory_limit_mb > 0 ? p.memory_limit_mb : kInf;

  long long max_cell = L;
  std::vector<std::vector<std::vector<Mix>>> fronts;  // [type][n]
  for (const auto& b : p.layers.bodies) fronts.push_back(mix_fronts(b, st.kinds, std::min(max_cell, b.count)));

  // Stage cost: least total backward (and its chunk mixes) for a stage holding a given range of layers.
  struct StageChoice {
    double time = kInf;                   // T_s
    double cell_max = kInf;               // the slowest chunk of the stage
    std::vector<std::vector<Mix>> mixes;  // [chunk][type]
  };
  long long explored = 0;

  // V == 1: the stage's range [pos, pos + k) in model order fixes the count of each type.
  auto cost_v1 = [&](int s, long long pos, long long k) {
    StageChoice out;
    if (k == 0 && !reserved(p, 0, s)) return out;
    std::vector<long long> n(K, 0);
    double forward = 0;
    double params = 0;
    for (std::size_t l = 0; l < K; ++l) {
      long long a = std::max(pos, st.type_start[l]);
      long long b = std::min(pos + k, st.type_start[l] + p.layers.bodies[l].count);
      n[l] = std::max(0LL, b - a);
      forward += static_cast<double>(n[l]) * p.layers.bodies[l].forward;
      params += static_cast<double>(n[l]) * p.layers.bodies[l].param_mb;
    }
    double c0 = st.vectors[static_cast<std::size_t>(s)].front()[0];
    double budget = (limit - params - head_tail_static(p, s)) / std::max(1.0, c0);
    if (budget < -1e-9) return out;
    // Least cost over the types' fronts with total weight <= budget (fronts: weight up, cost down).
    std::vector<Mix> pick(K);
    std::vector<Mix> best_pick;
    double best = kInf;
    std::function<void(std::size_t, double, double)> walk = [&](std::size_t l, double cost, double weight) {
      if (l == K) {
        if (cost < best) {
          best = cost;
          best_pick = pick;
        }
        return;
      }
      const auto& f = fronts[l][static_cast<std::size_t>(n[l])];
      for (const Mix& m : f) {
        ++explored;
        if (weight + m.weight > budget + 1e-9) break;
        pick[l] = m;
        walk(l + 1, cost + m.cost, weight + m.weight);
      }
    };
    walk(0, 0, 0);
    if (best == kInf) return out;
    out.time = forward + best + head_tail_time(p, s);
    out.cell_max = out.time;
    out.mixes = {best_pick};
    return out;
  };

  // V > 1 (one type): every composition of k over the chunks and every combination of the chunks' mixes
  // that fits the schedule's in-flight vectors; the Pareto front of (slowest chunk, stage time) is kept.
  auto cost_vn = [&](int s, long long k) {
    std::vector<StageChoice> options;
    const BodyType& b = p.layers.bodies[0];
    const auto& vecs = st.vectors[static_cast<std::size_t>(s)];
    double budget = limit - static_cast<double>(k) * b.param_mb - head_tail_static(p, s);
    if (budget < -1e-9) return options;
    std::vector<long long> comp(static_cast<std::size_t>(V), 0);
    std::vector<Mix> cur(static_cast<std::size_t>(V));
    std::vector<double> partial(vecs.size(), 0.0);
    auto cell_extra = [&](int v) {
      double t = 0;
      if (v == 0 && s == 0) t += p.layers.head_forward + p.layers.head_backward;
      if (v == V - 1 && s == S - 1) t += p.layers.tail_forward + p.layers.tail_backward;
      return t;
    };
    std::function<void(int, double, double)> pick = [&](int u, double total, double cell_max) {
      if (u == V) {
        ++explored;
        for (const auto& o : options) {
          if (o.cell_max <= cell_max + 1e-12 && o.time <= total + 1e-12) return;  // dominated
        }
        options.erase(
            std::remove_if(options.begin(), options.end(), [&](const StageChoice& o) { return o.cell_max >= cell_max - 1e-12 && o.time >= total - 1e-12; }),
            options.end());
        StageChoice c;
        c.time = total;
        c.cell_max = cell_max;
        for (const Mix& m : cur) c.mixes.push_back({m});
        options.push_back(std::move(c));
        return;
      }
      std::size_t ui = static_cast<std::size_t>(u);
      const auto& f = fronts[0][static_cast<std::size_t>(comp[ui])];
      for (const Mix& m : f) {
        bool ok = true;
        for (std::size_t i = 0; i < vecs.size() && ok; ++i) {
          double w = partial[i] + vecs[i][ui] * m.weight;
          for (int rest = u + 1; rest < V; ++rest) {
            w += vecs[i][static_cast<std::size_t>(rest)] * fronts[0][static_cast<std::size_t>(comp[static_cast<std::size_t>(rest)])].front().weight;
          }
          ok = w <= budget + 1e-9;
        }
        if (!ok) break;  // heavier mixes follow: none of them fits either
        double cell = static_cast<double>(comp[ui]) * b.forward + m.cost + cell_extra(u);
        for (std::size_t i = 0; i < vecs.size(); ++i) partial[i] += vecs[i][ui] * m.weight;
        cur[ui] = m;
        pick(u + 1, total + cell, std::max(cell_max, cell));
        for (std::size_t i = 0; i < vecs.size(); ++i) partial[i] -= vecs[i][ui] * m.weight;
      }
    };
    std::function<void(int, long long)> compose = [&](int v, long long left) {
      if (v == V) {
        if (left != 0) return;
        long long lo = std::numeric_limits<long long>::max();
        long long hi = 0;
        for (int u = 0; u < V; ++u) {
          if (reserved(p, u, s)) continue;
          lo = std::min(lo, comp[static_cast<std::size_t>(u)]);
          hi = std::max(hi, comp[static_cast<std::size_t>(u)]);
        }
        if (hi > 0 && hi - lo > p.chunk_spread) return;
        pick(0, 0.0, 0.0);
        return;
      }
      long long min_here = reserved(p, v, s) ? 0 : 1;
      for (long long n = min_here; n <= left; ++n) {
        comp[static_cast<std::size_t>(v)] = n;
        compose(v + 1, left - n);
      }
    };
    compose(0, k);
    return options;
  };

  // Dynamic program over stages: Pareto front of (max T, sum T) per number of layers placed.
  struct State {
    double max_t = 0;  // slowest cell so far
    double sum_t = 0;  // sum of stage times so far
    long long prev_pos = -1;
    std::size_t prev_index = 0;
    long long k = 0;
    std::size_t option = 0;  // which of the stage's options
  };
  std::vector<std::vector<std::vector<State>>> g(static_cast<std::size_t>(S + 1), std::vector<std::vector<State>>(static_cast<std::size_t>(L + 1)));
  g[0][0].push_back(State{});
  std::vector<std::vector<std::vector<StageChoice>>> memo_vn;
  if (V > 1) memo_vn.assign(static_cast<std::size_t>(S), std::vector<std::vector<StageChoice>>(static_cast<std::size_t>(L + 1)));
  std::vector<std::vector<char>> memo_done(static_cast<std::size_t>(S), std::vector<char>(static_cast<std::size_t>(L + 1), 0));
  auto options_of = [&](int s, long long pos, long long k) -> std::vector<StageChoice> {
    if (V == 1) {
      StageChoice c = cost_v1(s, pos, k);
      if (c.time == kInf) return {};
      return {c};
    }
    std::size_t si = static_cast<std::size_t>(s);
    std::size_t ki = static_cast<std::size_t>(k);
    if (!memo_done[si][ki]) {
      memo_vn[si][ki] = cost_vn(s, k);
      memo_done[si][ki] = 1;
    }
    return memo_vn[si][ki];
  };
  for (int s = 0; s < S; ++s) {
    for (long long pos = 0; pos <= L; ++pos) {
      const auto& here = g[static_cast<std::size_t>(s)][static_cast<std::size_t>(pos)];
      if (here.empty()) continue;
      long long max_k = L - pos;
      long long min_k = s == S - 1 ? max_k : 0;  // the last stage takes the rest
      for (long long k = min_k; k <= max_k; ++k) {
        std::vector<StageChoice> opts = options_of(s, pos, k);
        auto& there = g[static_cast<std::size_t>(s) + 1][static_cast<std::size_t>(pos) + static_cast<std::size_t>(k)];
        for (std::size_t o = 0; o < opts.size(); ++o) {
          for (std::size_t i = 0; i < here.size(); ++i) {
            there.push_back(State{std::max(here[i].max_t, opts[o].cell_max), here[i].sum_t + opts[o].time, pos, i, k, o});
          }
        }
      }
    }
    // Keep each next front Pareto-minimal in (max, sum).
    for (auto& front : g[static_cast<std::size_t>(s) + 1]) {
      if (front.size() < 2) continue;
      std::vector<std::size_t> order(front.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return front[a].max_t != front[b].max_t ? front[a].max_t < front[b].max_t : front[a].sum_t < front[b].sum_t;
      });
      std::vector<State> kept;
      double best_sum = kInf;
      for (std::size_t i : order) {
        if (front[i].sum_t < best_sum - 1e-12) {
          kept.push_back(front[i]);
          best_sum = front[i].sum_t;
        }
      }
      front = std::move(kept);
      explored += static_cast<long long>(front.size());
    }
  }

  Solution sol;
  sol.method = "dynamic program over stages (exact)";
  const auto& final_front = g[static_cast<std::size_t>(S)][static_cast<std::size_t>(L)];
  if (final_front.empty()) {
    sol.feasible = false;
    sol.optimal = true;  // proved infeasible: the program saw every split
    sol.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sol.explored = explored;
    return sol;
  }
  std::size_t best_i = 0;
  double best_obj = kInf;
  for (std::size_t i = 0; i < final_front.size(); ++i) {
    double o = objective_of(p, final_front[i].max_t, final_front[i].sum_t);
    if (o < best_obj - 1e-12) {
      best_obj = o;
      best_i = i;
    }
  }
  // Walk back, rebuilding each stage's choice.
  sol.x = empty_assignment(p);
  std::size_t index = best_i;
  long long pos = L;
  for (int s = S; s >= 1; --s) {
    const State& state = g[static_cast<std::size_t>(s)][static_cast<std::size_t>(pos)][index];
    long long k = state.k;
    long long start = state.prev_pos;
    StageChoice choice = V == 1 ? cost_v1(s - 1, start, k) : memo_vn[static_cast<std::size_t>(s - 1)][static_cast<std::size_t>(k)][state.option];
    for (int v = 0; v < V; ++v) {
      for (std::size_t l = 0; l < K; ++l) {
        const Mix& m = choice.mixes[static_cast<std::size_t>(v)][V == 1 ? l : 0];
        if (V > 1 && l > 0) continue;
        sol.x[l][static_cast<std::size_t>(v)][static_cast<std::size_t>(s - 1)] = m.counts;
      }
    }
    index = state.prev_index;
    pos = start;
  }
  sol.feasible = true;
  sol.optimal = true;
  sol.eval = evaluate(p, sol.x);
  sol.explored = explored;
  sol.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sol;
}

Solution solve_exhaustive(const Problem& p, long long limit) {
  check_problem(p);
  auto t0 = std::chrono::steady_clock::now();
  Setup st = setup(p);
  const int S = p.stages;
  const int V = p.chunks;
  const std::size_t cells = static_cast<std::size_t>(S) * static_cast<std::size_t>(V);
  std::vector<long long> counts(cells, 0);  // in virtual order v * S + s
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
    std::size_t v = cell / static_cast<std::size_t>(S);
    std::size_t s = cell % static_cast<std::size_t>(S);
    auto& slot = x[type][v][s];
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
          long long n = counts[static_cast<std::size_t>(v) * static_cast<std::size_t>(S) + static_cast<std::size_t>(s)];
          lo = std::min(lo, n);
          hi = std::max(hi, n);
        }
        if (hi > 0 && hi - lo > p.chunk_spread) return;
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
    int v = static_cast<int>(c) / S;
    int s = static_cast<int>(c) % S;
    long long lo = reserved(p, v, s) ? 0 : 1;
    for (long long n = lo; n <= left; ++n) {
      counts[c] = n;
      compose(c + 1, left - n);
    }
    counts[c] = 0;
  };
  compose(0, st.total);
  best.explored = examined;
  best.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

Assignment even_split(const Problem& p, Rc kind) {
  Assignment x = empty_assignment(p);
  std::vector<Rc> kinds = allowed_kinds(p);
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) return {};
  long long cells = 1LL * p.stages * p.chunks;
  for (std::size_t l = 0; l < p.layers.bodies.size(); ++l) {
    long long n = p.layers.bodies[l].count;
    long long base = n / cells;
    long long extra = n % cells;
    for (long long c = 0; c < cells; ++c) {
      long long here = base + ((c >= 1 && c <= extra) ? 1 : 0);
      x[l][static_cast<std::size_t>(c / p.stages)][static_cast<std::size_t>(c % p.stages)][static_cast<std::size_t>(kind)] = here;
    }
  }
  return x;
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
