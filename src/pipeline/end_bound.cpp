#include "pipeline/end_bound.hpp"

#include <algorithm>
#include <limits>

#include <glpk.h>

namespace sapp::balance {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
std::size_t as_size(long long v) { return static_cast<std::size_t>(v); }
std::size_t as_size(int v) { return static_cast<std::size_t>(v); }

// A path of the relaxed graph: its time on the end stages and its middle crossings per chunk (forward, backward).
struct RelaxedPath {
  double on_ends = 0;
  std::vector<double> forward_crossings, backward_crossings;
  [[nodiscard]] double length(const StageOption& middle) const {
    double l = on_ends;
    for (std::size_t v = 0; v < middle.forward.size(); ++v) l += forward_crossings[v] * middle.forward[v] + backward_crossings[v] * middle.backward[v];
    return l;
  }
  bool operator==(const RelaxedPath&) const = default;
};

// Block ids of the two-stage graph: (end e in {0: stage 0, 1: stage S-1}, kind in {F, B}, chunk, micro-batch).
std::size_t end_block_id(const simulate::Orders& o, int e, int kind, int v, int j) {
  return ((as_size(e) * 2 + as_size(kind)) * as_size(o.chunks) + as_size(v)) * as_size(o.micro_batches) + as_size(j);
}

// The two-stage graph's edges (independent of the times), per end and position in its order: the block it waits for
// besides its left neighbour (-1: none), and whether that edge crosses the middle along a chunk (v: a forward, V + v:
// a backward; -1: it does not).
struct EndEdge {
  long long producer = -1;
  int cross = -1;
};
struct EndGraph {
  std::vector<EndEdge> edges[2];
};

EndGraph end_graph(const simulate::Orders& o) {
  const int S = o.stages;
  const int V = o.chunks;
  EndGraph g;
  for (int e = 0; e < 2; ++e) {
    const int stage = e == 0 ? 0 : S - 1;
    for (const simulate::Block& b : o.order[as_size(stage)]) {
      // The schedule's own dependency; an edge along a chunk between the two ends crosses the middle.
      const simulate::Producer pr = simulate::producer_of(o.schedule, S, V, b, stage);
      EndEdge edge;
      if (pr.kind >= 0) {
        const bool crosses = pr.chunk == b.chunk && pr.stage != stage;
        edge.producer = static_cast<long long>(end_block_id(o, crosses ? 1 - e : (pr.stage == 0 ? 0 : 1), pr.kind, pr.chunk, b.micro));
        if (crosses) edge.cross = pr.kind == 0 ? b.chunk : V + b.chunk;
      }
      g.edges[e].push_back(edge);
    }
  }
  return g;
}

// The two-stage graph's longest path: stages 0 and S-1 run their orders, the middle is a delay per chunk and
// direction (`middle`: its forward and backward sums). Returns the critical path.
RelaxedPath relaxed_critical_path(const simulate::Orders& o, const EndGraph& g, const StageOption& first, const StageOption& last, const StageOption& middle) {
  const int S = o.stages;
  const int V = o.chunks;
  const int m = o.micro_batches;
  auto id = [&](int e, int kind, int v, int j) { return end_block_id(o, e, kind, v, j); };
  const std::size_t n = id(1, 1, V - 1, m - 1) + 1;
  std::vector<double> end(n, -1.0);
  std::vector<long long> pred(n, -1);
  std::vector<int> crossing(n, -1);  // the edge into the block crossed the middle: v (forward) or V + v (backward)
  const std::vector<simulate::Block>* orders[2] = {&o.order[0], &o.order[as_size(S - 1)]};
  const StageOption* times[2] = {&first, &last};
  std::size_t at[2] = {0, 0};
  double clock[2] = {0, 0};
  long long previous[2] = {-1, -1};
  RelaxedPath path;
  path.forward_crossings.assign(as_size(V), 0.0);
  path.backward_crossings.assign(as_size(V), 0.0);
  while (at[0] < orders[0]->size() || at[1] < orders[1]->size()) {
    bool progress = false;
    for (int e = 0; e < 2; ++e) {
      const auto& order = *orders[e];
      for (; at[e] < order.size(); ++at[e]) {
        const simulate::Block& b = order[at[e]];
        const bool forward = b.kind == simulate::BlockKind::Forward;
        const EndEdge& edge = g.edges[e][at[e]];
        const long long producer = edge.producer;
        const int cross = edge.cross;
        double delay = 0;
        if (cross >= 0) delay = cross < V ? middle.forward[as_size(cross)] : middle.backward[as_size(cross - V)];
        double ready = 0;
        if (producer >= 0) {
          if (end[as_size(producer)] < 0) break;
          ready = end[as_size(producer)] + delay;
        }
        const std::size_t self = id(e, forward ? 0 : 1, b.chunk, b.micro);
        if (producer >= 0 && ready >= clock[e]) {
          pred[self] = producer;
          crossing[self] = cross;
          clock[e] = ready;
        } else {
          pred[self] = previous[e];
        }
        clock[e] += forward ? times[e]->forward[as_size(b.chunk)] : times[e]->backward[as_size(b.chunk)];
        end[self] = clock[e];
        previous[e] = static_cast<long long>(self);
        progress = true;
      }
    }
    if (!progress) return path;  // cannot happen for the interleaved orders (their simulation has no cycle)
  }
  long long at_block = clock[0] >= clock[1] ? previous[0] : previous[1];
  while (at_block >= 0) {
    const auto b = as_size(at_block);
    const int v = static_cast<int>((b / as_size(m)) % as_size(V));
    const int kind = static_cast<int>((b / as_size(m) / as_size(V)) % 2);
    const int e = static_cast<int>(b / as_size(m) / as_size(V) / 2);
    path.on_ends += kind == 0 ? times[e]->forward[as_size(v)] : times[e]->backward[as_size(v)];
    if (crossing[b] >= 0) (crossing[b] < V ? path.forward_crossings[as_size(crossing[b])] : path.backward_crossings[as_size(crossing[b] - V)]) += 1;
    at_block = pred[b];
  }
  return path;
}

double dot(const StageOption& weight, const StageOption& x) {
  double s = 0;
  for (std::size_t v = 0; v < x.forward.size(); ++v) s += weight.forward[v] * x.forward[v] + weight.backward[v] * x.backward[v];
  return s;
}

StageOption zeros(int V) { return StageOption{std::vector<double>(as_size(V), 0.0), std::vector<double>(as_size(V), 0.0)}; }

// The restricted master of one pair's relaxation, convexified: min t over mixes lambda of the middle plans found,
// t >= c_P + a_P . (sum_i lambda_i z_i) for every path P found (GLPK's simplex, warm-started as rows and columns are
// added). Its row duals are weights over the paths (they sum to 1), whose priced middle gives the pair's bound.
class MasterLp {
 public:
  explicit MasterLp(int chunks) : chunks_(chunks), lp_(glp_create_prob()) {
    glp_set_obj_dir(lp_, GLP_MIN);
    glp_add_rows(lp_, 1);  // row 1: sum lambda = 1
    glp_set_row_bnds(lp_, 1, GLP_FX, 1.0, 1.0);
    glp_add_cols(lp_, 1);  // column 1: t
    glp_set_col_bnds(lp_, 1, GLP_FR, 0.0, 0.0);
    glp_set_obj_coef(lp_, 1, 1.0);
    glp_init_smcp(&parm_);
    parm_.msg_lev = GLP_MSG_OFF;
  }
  MasterLp(const MasterLp&) = delete;
  MasterLp& operator=(const MasterLp&) = delete;
  ~MasterLp() { glp_delete_prob(lp_); }

  void add_path(const RelaxedPath& p) {
    paths_.push_back(p);
    const int row = glp_add_rows(lp_, 1);
    glp_set_row_bnds(lp_, row, GLP_LO, p.on_ends, 0.0);
    std::vector<int> index{0, 1};
    std::vector<double> value{0.0, 1.0};
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      index.push_back(static_cast<int>(i) + 2);
      value.push_back(-p.length(plans_[i]) + p.on_ends);
    }
    glp_set_mat_row(lp_, row, static_cast<int>(index.size()) - 1, index.data(), value.data());
  }
  void add_plan(const StageOption& z) {
    plans_.push_back(z);
    const int col = glp_add_cols(lp_, 1);
    glp_set_col_bnds(lp_, col, GLP_LO, 0.0, 0.0);
    std::vector<int> index{0, 1};
    std::vector<double> value{0.0, 1.0};
    for (std::size_t q = 0; q < paths_.size(); ++q) {
      index.push_back(static_cast<int>(q) + 2);
      value.push_back(-(paths_[q].length(z) - paths_[q].on_ends));
    }
    glp_set_mat_col(lp_, col, static_cast<int>(index.size()) - 1, index.data(), value.data());
  }
  [[nodiscard]] bool has(const RelaxedPath& p) const { return std::find(paths_.begin(), paths_.end(), p) != paths_.end(); }

  struct Result {
    double value = 0;    // t
    StageOption middle;  // sum lambda_i z_i
    // From the row duals, clamped at 0 and normalised to sum 1 (any such weights give a valid bound, so the bound
    // never rests on the simplex's accuracy): the weighted paths' time on the end stages and middle crossings.
    double constant = 0;
    StageOption crossings;
    double least_priced = 0;  // min over the plans found of crossings . z
  };
  Result solve() {
    if (glp_simplex(lp_, &parm_) != 0) {
      glp_std_basis(lp_);
      glp_simplex(lp_, &parm_);
    }
    Result r;
    r.value = glp_get_obj_val(lp_);
    r.middle = zeros(chunks_);
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      const double lambda = glp_get_col_prim(lp_, static_cast<int>(i) + 2);
      for (int v = 0; v < chunks_; ++v) {
        r.middle.forward[as_size(v)] += lambda * plans_[i].forward[as_size(v)];
        r.middle.backward[as_size(v)] += lambda * plans_[i].backward[as_size(v)];
      }
    }
    std::vector<double> weights;
    double sum = 0;
    for (std::size_t q = 0; q < paths_.size(); ++q) {
      weights.push_back(std::max(0.0, glp_get_row_dual(lp_, static_cast<int>(q) + 2)));
      sum += weights.back();
    }
    r.crossings = zeros(chunks_);
    for (std::size_t q = 0; q < paths_.size() && sum > 0; ++q) {
      const double mu = weights[q] / sum;
      r.constant += mu * paths_[q].on_ends;
      for (int v = 0; v < chunks_; ++v) {
        r.crossings.forward[as_size(v)] += mu * paths_[q].forward_crossings[as_size(v)];
        r.crossings.backward[as_size(v)] += mu * paths_[q].backward_crossings[as_size(v)];
      }
    }
    r.least_priced = kInfinity;
    for (const StageOption& z : plans_) r.least_priced = std::min(r.least_priced, dot(r.crossings, z));
    return r;
  }

 private:
  int chunks_;
  glp_prob* lp_;
  glp_smcp parm_{};
  std::vector<RelaxedPath> paths_;
  std::vector<StageOption> plans_;
};

}  // namespace

EndBound end_stage_bound(const EndBoundInput& in) {
  // GLPK keeps a per-thread environment; it is released on the way out (after every master LP of this call is gone),
  // so that no memory of it outlives the call or the balancing thread.
  struct GlpkEnvironment {
    GlpkEnvironment() = default;
    GlpkEnvironment(const GlpkEnvironment&) = delete;
    GlpkEnvironment& operator=(const GlpkEnvironment&) = delete;
    ~GlpkEnvironment() { glp_free_env(); }
  } const glpk_environment;
  EndBound out;
  const simulate::Orders& o = *in.orders;
  const int S = o.stages;
  const int V = o.chunks;
  if (S < 2 || V < 2 || as_size(S) != in.options.size()) return out;
  const EndGraph graph = end_graph(o);
  const double micro = o.micro_batches;
  auto work = [](const StageOption& x) {  // one micro-batch's blocks on the stage
    double sum = 0;
    for (std::size_t v = 0; v < x.forward.size(); ++v) sum += x.forward[v] + x.backward[v];
    return sum;
  };
  const long long L = in.layers;
  // The middle stages' least per-chunk sums over every option (a lower bound on any middle's sums).
  StageOption least = zeros(V);
  for (int t = 1; t < S - 1; ++t) {
    StageOption here{std::vector<double>(as_size(V), kInfinity), std::vector<double>(as_size(V), kInfinity)};
    for (const auto& list : in.options[as_size(t)]) {
      for (const StageOption& x : list) {
        for (int v = 0; v < V; ++v) {
          here.forward[as_size(v)] = std::min(here.forward[as_size(v)], x.forward[as_size(v)]);
          here.backward[as_size(v)] = std::min(here.backward[as_size(v)], x.backward[as_size(v)]);
        }
      }
    }
    for (int v = 0; v < V; ++v) {
      if (here.forward[as_size(v)] == kInfinity) return out;  // a middle stage with no option: no plan fits
      least.forward[as_size(v)] += here.forward[as_size(v)];
      least.backward[as_size(v)] += here.backward[as_size(v)];
    }
  }
  // The program over the middle: for weights w, the least w . z over the middles holding exactly `total` layers,
  // and its minimiser's sums z. Per stage and k only the option least in w . x matters.
  auto middle_program = [&](const StageOption& w, long long total, StageOption& z) {
    std::vector<double> value(as_size(total + 1), kInfinity);
    value[0] = 0;
    std::vector<std::vector<std::pair<long long, std::size_t>>> choice(as_size(S), std::vector<std::pair<long long, std::size_t>>(as_size(total + 1), {-1, 0}));
    for (int t = 1; t < S - 1; ++t) {
      const auto& by_k = in.options[as_size(t)];
      std::vector<std::pair<double, std::size_t>> best_k(by_k.size(), {kInfinity, 0});
      for (std::size_t k = 0; k < by_k.size(); ++k) {
        for (std::size_t i = 0; i < by_k[k].size(); ++i) {
          double d = dot(w, by_k[k][i]);
          if (d < best_k[k].first) best_k[k] = {d, i};
        }
      }
      std::vector<double> next(as_size(total + 1), kInfinity);
      for (long long used = 0; used <= total; ++used) {
        if (value[as_size(used)] == kInfinity) continue;
        for (std::size_t k = 0; k < best_k.size() && used + static_cast<long long>(k) <= total; ++k) {
          if (best_k[k].first == kInfinity) continue;
          double v = value[as_size(used)] + best_k[k].first;
          auto to = as_size(used + static_cast<long long>(k));
          if (v < next[to]) {
            next[to] = v;
            choice[as_size(t)][to] = {static_cast<long long>(k), best_k[k].second};
          }
        }
      }
      value = std::move(next);
    }
    z = zeros(V);
    if (value[as_size(total)] == kInfinity) return kInfinity;
    long long used = total;
    for (int t = S - 2; t >= 1; --t) {
      auto [k, i] = choice[as_size(t)][as_size(used)];
      const StageOption& x = in.options[as_size(t)][as_size(k)][i];
      for (int v = 0; v < V; ++v) {
        z.forward[as_size(v)] += x.forward[as_size(v)];
        z.backward[as_size(v)] += x.backward[as_size(v)];
      }
      used -= k;
    }
    return value[as_size(total)];
  };
  constexpr int kRounds = 200;  // master solves per pair at most
  double bound = kInfinity;
  const auto& firsts = in.options[0];
  const auto& lasts = in.options[as_size(S - 1)];
  // First every pair at the middle's least sums (a bound for the pair already); the others are then taken from
  // the lowest, so that a pair whose relaxation has a plan below `floor` stops the whole bound early.
  struct Pair {
    double start;
    std::size_t k0, i0, k1, i1;
    RelaxedPath path;
  };
  std::vector<Pair> open;
  for (std::size_t k0 = 0; k0 < firsts.size(); ++k0) {
    for (std::size_t k1 = 0; k1 < lasts.size(); ++k1) {
      const long long middle_layers = L - static_cast<long long>(k0 + k1);
      if (middle_layers < 0 || firsts[k0].empty() || lasts[k1].empty()) continue;
      StageOption z = zeros(V);
      if (middle_program(StageOption{std::vector<double>(as_size(V), 1.0), std::vector<double>(as_size(V), 1.0)}, middle_layers, z) == kInfinity) continue;
      for (std::size_t i0 = 0; i0 < firsts[k0].size(); ++i0) {
        for (std::size_t i1 = 0; i1 < lasts[k1].size(); ++i1) {
          if (in.out_of_time()) return out;
          ++out.pairs;
          // Two paths of the relaxed graph first, cheaply: stage 0's whole order, and stage S-1's whole order after
          // micro-batch 0's first forward reached it and before micro-batch m-1's last backward leaves it through
          // the middle and stage 0. Above the cutoff, the pair is left at their length.
          const double quick = std::max(micro * work(firsts[k0][i0]), firsts[k0][i0].forward[0] + least.forward[0] + micro * work(lasts[k1][i1]) +
                                                                          least.backward[0] + firsts[k0][i0].backward[0]);
          if (quick >= in.cutoff) {
            ++out.pruned;
            bound = std::min(bound, quick);
            continue;
          }
          RelaxedPath path = relaxed_critical_path(o, graph, firsts[k0][i0], lasts[k1][i1], least);
          const double start = path.length(least);
          if (start >= in.cutoff) {
            ++out.pruned;
            bound = std::min(bound, start);
          } else {
            open.push_back(Pair{start, k0, i0, k1, i1, std::move(path)});
          }
        }
      }
    }
  }
  std::sort(open.begin(), open.end(), [](const Pair& x, const Pair& y) { return x.start < y.start; });
  for (const Pair& pair : open) {
    // Pairs run from the lowest start and none bounds below its start: the rest cannot lower the least.
    if (pair.start >= bound) break;
    const StageOption& first = firsts[pair.k0][pair.i0];
    const StageOption& last = lasts[pair.k1][pair.i1];
    const long long middle_layers = L - static_cast<long long>(pair.k0 + pair.k1);
    double pair_bound = pair.start;
    MasterLp master(V);
    master.add_path(pair.path);
    StageOption z = zeros(V);
    const StageOption ones{std::vector<double>(as_size(V), 1.0), std::vector<double>(as_size(V), 1.0)};
    if (middle_program(ones, middle_layers, z) == kInfinity) continue;
    master.add_plan(z);
    for (int round = 0; round < kRounds && pair_bound < std::min(in.cutoff, bound); ++round) {
      if (in.out_of_time()) return out;
      const MasterLp::Result r = master.solve();
      // The path most violated at the master's (mixed) middle.
      RelaxedPath critical = relaxed_critical_path(o, graph, first, last, r.middle);
      const bool new_path = critical.length(r.middle) > r.value * (1 + 1e-9) + 1e-9;
      if (new_path) master.add_path(critical);
      // The dual weights price a middle plan: weak duality gives the pair's bound.
      const double priced = middle_program(r.crossings, middle_layers, z);
      pair_bound = std::max(pair_bound, r.constant + priced);
      // z is a middle some plan has: the pair's relaxation is at most its longest path, so once that is below the
      // floor the least over the pairs cannot rise above the floor either.
      RelaxedPath at_plan = relaxed_critical_path(o, graph, first, last, z);
      if (at_plan.length(z) < in.floor) return out;
      const bool new_plan = priced < r.least_priced * (1 - 1e-9) - 1e-9;
      if (new_plan) master.add_plan(z);
      if (!master.has(at_plan)) master.add_path(at_plan);
      if (!new_path && !new_plan) break;  // the master is the convexified relaxation: its value is the pair's dual
    }
    bound = std::min(bound, pair_bound);
    if (bound < in.floor) return out;
  }
  if (bound == kInfinity) return out;
  out.valid = true;
  out.bound = bound;
  return out;
}

}  // namespace sapp::balance
