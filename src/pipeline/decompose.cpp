#include "pipeline/decompose.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <Eigen/QR>

#include "core/error.hpp"
#include "core/files.hpp"

namespace sapp::balance {

namespace {

using Matrix = std::vector<std::vector<double>>;

// The least-squares solution of A x = b and the rank of A, by Householder QR with column pivoting (Eigen's
// ColPivHouseholderQR). A pivot counts as zero below 1e-10 of the largest (the measurements are MB, rounded).
struct LeastSquares {
  int rank = 0;
  std::vector<double> x;  // empty when A is rank-deficient
};

LeastSquares least_squares(const Matrix& a, const std::vector<double>& b) {
  const auto rows = static_cast<Eigen::Index>(a.size());
  const auto cols = static_cast<Eigen::Index>(a.empty() ? 0 : a[0].size());
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(m);
  qr.setThreshold(1e-10);
  LeastSquares out;
  out.rank = static_cast<int>(qr.rank());
  if (out.rank < cols) return out;
  Eigen::VectorXd x = qr.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), rows));
  out.x.assign(x.data(), x.data() + x.size());
  return out;
}

struct System {
  std::vector<std::string> names;
  std::vector<Rc> kinds;  // activation unknowns, in column order after P
  Matrix a;
  std::vector<double> b;
  int col_c = -1, col_h = -1, col_t = -1;
};

System build(const Measurements& m) {
  System sys;
  int S = m.stages;
  // Kinds used anywhere (none always, when any stage keeps a layer unrecomputed).
  std::vector<Rc> kinds;
  bool none_used = false;
  auto fitted = [&](const DryRun& run, int i) {
    if (!run.measured.empty() && !run.measured[static_cast<std::size_t>(i)]) return false;
    return !m.reference_convention || (i > 0 && i < S - 1);
  };
  for (const auto& run : m.runs) {
    for (int i = 0; i < S; ++i) {
      if (!fitted(run, i)) continue;
      long long rec = 0;
      for (const auto& [kind, counts] : run.recomputed) rec += counts[static_cast<std::size_t>(i)];
      if (run.layers[static_cast<std::size_t>(i)] - rec > 0) none_used = true;
    }
    for (const auto& [kind, counts] : run.recomputed) {
      bool used = false;
      for (int i = 0; i < S; ++i) used = used || (fitted(run, i) && counts[static_cast<std::size_t>(i)] > 0);
      if (used && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    }
  }
  std::sort(kinds.begin(), kinds.end());
  if (none_used) kinds.insert(kinds.begin(), Rc::None);
  sys.kinds = kinds;
  sys.names.push_back("memory_parameter (P)");
  for (Rc k : kinds) sys.names.push_back(fmt::format("activation {} (A_{})", to_string(k), to_string(k)));
  if (m.constant) {
    sys.col_c = static_cast<int>(sys.names.size());
    sys.names.push_back("per-stage constant (C)");
  }
  if (!m.reference_convention) {
    sys.col_h = static_cast<int>(sys.names.size());
    sys.names.push_back("head extra (H)");
    sys.col_t = static_cast<int>(sys.names.size());
    sys.names.push_back("tail extra (T)");
  }
  for (const auto& run : m.runs) {
    for (int i = 0; i < S; ++i) {
      if (!fitted(run, i)) continue;
      std::size_t si = static_cast<std::size_t>(i);
      std::vector<double> row(sys.names.size(), 0.0);
      row[0] = static_cast<double>(run.layers[si]);
      long long rec = 0;
      for (const auto& [kind, counts] : run.recomputed) rec += counts[si];
      for (std::size_t j = 0; j < kinds.size(); ++j) {
        long long c = kinds[j] == Rc::None ? run.layers[si] - rec : (run.recomputed.count(kinds[j]) ? run.recomputed.at(kinds[j])[si] : 0);
        row[j + 1] = static_cast<double>((S - i) * c);
      }
      if (sys.col_c >= 0) row[static_cast<std::size_t>(sys.col_c)] = 1;
      if (i == 0 && sys.col_h >= 0) row[static_cast<std::size_t>(sys.col_h)] = 1;
      if (i == S - 1 && sys.col_t >= 0) row[static_cast<std::size_t>(sys.col_t)] = 1;
      sys.a.push_back(row);
      sys.b.push_back(run.peaks_mb[si]);
    }
  }
  return sys;
}

std::vector<long long> int_list(const nlohmann::json& node, const std::string& file, const std::string& key, int n) {
  if (!node.is_array() || static_cast<int>(node.size()) != n) fail(at(file, key), "must list {} values (one per stage), got {}", n, node.dump().substr(0, 80));
  std::vector<long long> out;
  for (const auto& v : node) {
    if (!v.is_number_integer() || v.get<long long>() < 0) fail(at(file, key), "must hold non-negative whole numbers, got {}", v.dump());
    out.push_back(static_cast<long long>(units::check(v.get<double>(), units::kStageLayers, at(file, key), v.dump())));
  }
  return out;
}

}  // namespace

Measurements measurements_from_json(const nlohmann::json& tree, const std::string& file) {
  io::Reader top{tree, file, ""};
  top.only({"stages", "constant", "runs"});
  Measurements m;
  m.stages = static_cast<int>(top.count("stages", units::kStages));
  if (m.stages < 3) top.bad("stages", "at least 3 stages (the first and last hold the head and tail)");
  m.constant = top.boolean_or("constant", true);
  if (!top.has("runs") || !tree.at("runs").is_array() || tree.at("runs").empty()) top.bad("runs", "a non-empty list of dry runs");
  const auto& runs = tree.at("runs");
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::string key = "runs[" + std::to_string(r) + "]";
    io::Reader rd{runs[r], file, key};
    rd.only({"layers", "recompute", "peaks_mb"});
    DryRun run;
    if (!rd.has("layers")) rd.bad("layers", "the body layers of every stage");
    run.layers = int_list(runs[r].at("layers"), file, key + ".layers", m.stages);
    if (!rd.has("peaks_mb")) rd.bad("peaks_mb", "the measured peak memory (MB) of every stage");
    const auto& peaks = runs[r].at("peaks_mb");
    if (!peaks.is_array() || static_cast<int>(peaks.size()) != m.stages)
      fail(at(file, key + ".peaks_mb"), "must list {} peaks, got {}", m.stages, peaks.dump().substr(0, 80));
    for (const auto& v : peaks) {
      if (v.is_boolean() || !v.is_number() || v.get<double>() < 0) fail(at(file, key + ".peaks_mb"), "must hold non-negative numbers, got {}", v.dump());
      run.peaks_mb.push_back(units::check(v.get<double>(), units::kPeakMegabytes, at(file, key + ".peaks_mb")));
    }
    if (rd.has("recompute")) {
      io::Reader rc = rd.child("recompute");
      rc.only({"selective", "comm", "both", "full"});
      for (const auto& [name, counts] : runs[r].at("recompute").items()) {
        Rc kind = parse_rc(name, at(file, key + ".recompute"));
        run.recomputed[kind] = int_list(counts, file, key + ".recompute." + name, m.stages);
      }
      for (int i = 0; i < m.stages; ++i) {
        long long rec = 0;
        for (const auto& [kind, c] : run.recomputed) rec += c[static_cast<std::size_t>(i)];
        if (rec > run.layers[static_cast<std::size_t>(i)])
          fail(at(file, key + ".recompute"), "stage {} recomputes {} layers but holds {}", i, rec, run.layers[static_cast<std::size_t>(i)]);
      }
    }
    m.runs.push_back(run);
  }
  return m;
}

namespace {

// A value per stage, or per run of per-stage values: 0 / false (none), true (all of `all`), a list, or lists.
std::vector<std::vector<long long>> per_run(const nlohmann::json* node, const std::string& where, int stages, std::size_t runs,
                                            const std::vector<std::vector<long long>>& all) {
  std::vector<std::vector<long long>> out(runs, std::vector<long long>(static_cast<std::size_t>(stages), 0));
  if (node == nullptr || node->is_null()) return out;
  if (node->is_boolean() || node->is_number_integer()) {
    if (node->is_number_integer() && node->get<long long>() != 0)
      fail(where, "must be true, false, 0, a list per stage or lists per run, got {}", node->dump());
    if (node->is_boolean() && node->get<bool>()) out = all;
    return out;
  }
  if (!node->is_array() || node->empty()) fail(where, "must be true, false, 0, a list per stage or lists per run, got {}", node->dump().substr(0, 80));
  bool nested = (*node)[0].is_array();
  if (nested && node->size() != runs) fail(where, "lists {} runs; the offsets give {}", node->size(), runs);
  for (std::size_t r = 0; r < runs; ++r) {
    const nlohmann::json& list = nested ? (*node)[r] : *node;
    if (!list.is_array() || static_cast<int>(list.size()) != stages)
      fail(where, "must list {} values (one per stage), got {}", stages, list.dump().substr(0, 80));
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& v = list[i];
      if (v.is_boolean())
        out[r][i] = v.get<bool>() ? all[r][i] : 0;
      else if (v.is_number_integer())
        out[r][i] = v.get<long long>();
      else
        fail(where, "must hold whole numbers or true/false, got {}", v.dump());
    }
  }
  return out;
}

}  // namespace

Measurements measurements_from_reference(const nlohmann::json& tree, const std::string& file) {
  io::Reader top{tree, file, ""};
  top.only({"pipeline_config", "time_config", "profiling_config", "recompute_config", "memory_usage"});
  if (!top.has("pipeline_config")) top.bad("pipeline_config", "pipeline_num, num_layer and offset of the dry run(s)");
  if (!top.has("memory_usage")) top.bad("memory_usage", "head_memory, tail_memory and body_memories of the dry run(s)");
  io::Reader pc = top.child("pipeline_config");
  pc.only({"pipeline_num", "num_layer", "offset"});
  Measurements m;
  m.reference_convention = true;
  m.stages = static_cast<int>(pc.integer("pipeline_num"));
  if (m.stages < 3) pc.bad("pipeline_num", "at least 3 stages (the first and last hold the head and tail)");
  long long layers = pc.integer("num_layer");
  const nlohmann::json* offset = pc.has("offset") ? &tree.at("pipeline_config").at("offset") : nullptr;
  std::size_t runs = offset != nullptr && offset->is_array() && !offset->empty() && (*offset)[0].is_array() ? offset->size() : 1;
  std::vector<std::vector<long long>> zero(runs, std::vector<long long>(static_cast<std::size_t>(m.stages), 0));
  std::vector<std::vector<long long>> off = per_run(offset, at(file, "pipeline_config.offset"), m.stages, runs, zero);
  std::vector<std::vector<long long>> n(runs);
  for (std::size_t r = 0; r < runs; ++r) {
    long long total = 0;
    for (long long o : off[r]) {
      n[r].push_back(layers / m.stages + o);
      total += n[r].back();
      if (n[r].back() < 0) fail(at(file, "pipeline_config.offset"), "run {} gives a stage {} layers", r + 1, n[r].back());
    }
    if (total != layers) fail(at(file, "pipeline_config.offset"), "run {} places {} layers; num_layer is {}", r + 1, total, layers);
  }
  auto key = [&](const char* name) -> const nlohmann::json* {
    if (!tree.contains("recompute_config") || !tree.at("recompute_config").contains(name)) return nullptr;
    return &tree.at("recompute_config").at(name);
  };
  if (top.has("recompute_config")) top.child("recompute_config").only({"recompute", "select_recompute", "select_comm_recompute"});
  auto full = per_run(key("recompute"), at(file, "recompute_config.recompute"), m.stages, runs, n);
  auto sel = per_run(key("select_recompute"), at(file, "recompute_config.select_recompute"), m.stages, runs, n);
  auto comm = per_run(key("select_comm_recompute"), at(file, "recompute_config.select_comm_recompute"), m.stages, runs, n);
  io::Reader mu = top.child("memory_usage");
  mu.only({"head_memory", "tail_memory", "body_memories"});
  auto per_run_numbers = [&](const nlohmann::json& node, const std::string& where) {
    std::vector<std::vector<double>> out;
    auto list = [&](const nlohmann::json& l) {
      std::vector<double> v;
      if (!l.is_array()) fail(where, "must be a list (or a list per run), got {}", l.dump().substr(0, 80));
      for (const auto& x : l) {
        if (x.is_boolean() || !x.is_number()) fail(where, "must hold numbers, got {}", x.dump());
        v.push_back(x.get<double>());
      }
      return v;
    };
    if (node.is_array() && !node.empty() && node[0].is_array()) {
      for (const auto& l : node) out.push_back(list(l));
    } else {
      out.push_back(list(node));
    }
    if (out.size() != runs) fail(where, "lists {} runs; the offsets give {}", out.size(), runs);
    return out;
  };
  std::vector<std::vector<double>> ids(runs);
  std::vector<std::vector<double>> mems(runs);
  if (mu.has("body_memories")) {
    io::Reader bm = mu.child("body_memories");
    bm.only({"stage_id", "memories"});
    if (!bm.has("stage_id") || !bm.has("memories")) bm.bad("stage_id", "stage_id and memories, lists of the same length");
    ids = per_run_numbers(tree.at("memory_usage").at("body_memories").at("stage_id"), at(file, "memory_usage.body_memories.stage_id"));
    mems = per_run_numbers(tree.at("memory_usage").at("body_memories").at("memories"), at(file, "memory_usage.body_memories.memories"));
  }
  auto head_tail = [&](const char* name) {
    std::vector<std::optional<double>> out(runs);
    if (!mu.has(name)) return out;
    const auto& node = tree.at("memory_usage").at(name);
    if (node.is_array()) {
      if (node.size() != runs) fail(at(file, std::string("memory_usage.") + name), "lists {} runs; the offsets give {}", node.size(), runs);
      for (std::size_t r = 0; r < runs; ++r) {
        if (!node[r].is_null()) out[r] = node[r].get<double>();
      }
    } else {
      out[0] = mu.number(name);
      if (runs > 1) fail(at(file, std::string("memory_usage.") + name), "is one value but the offsets give {} runs", runs);
    }
    return out;
  };
  auto head = head_tail("head_memory");
  auto tail = head_tail("tail_memory");
  for (std::size_t r = 0; r < runs; ++r) {
    DryRun run;
    run.layers = n[r];
    run.peaks_mb.assign(static_cast<std::size_t>(m.stages), 0.0);
    run.measured.assign(static_cast<std::size_t>(m.stages), false);
    for (int i = 0; i < m.stages; ++i) {
      std::size_t si = static_cast<std::size_t>(i);
      // The framework's keys: full = recompute, both = min(select, comm) - full, then the select-only or comm-only rest.
      long long f = std::min(full[r][si], n[r][si]);
      long long s_all = std::min(std::max(sel[r][si], f), n[r][si]);
      long long c_all = std::min(std::max(comm[r][si], f), n[r][si]);
      long long both = std::max(std::min(s_all - f, c_all - f), 0LL);
      std::array<long long, kRcKinds> counts{};
      counts[static_cast<std::size_t>(Rc::Full)] = f;
      counts[static_cast<std::size_t>(Rc::Both)] = both;
      counts[static_cast<std::size_t>(Rc::Selective)] = std::max(s_all - f - both, 0LL);
      counts[static_cast<std::size_t>(Rc::Comm)] = std::max(c_all - f - both, 0LL);
      for (Rc k : {Rc::Selective, Rc::Comm, Rc::Both, Rc::Full}) {
        auto& v = run.recomputed[k];
        v.resize(static_cast<std::size_t>(m.stages), 0);
        v[si] = counts[static_cast<std::size_t>(k)];
      }
    }
    if (ids[r].size() != mems[r].size())
      fail(at(file, "memory_usage.body_memories"), "run {}: {} stage ids but {} memories", r + 1, ids[r].size(), mems[r].size());
    for (std::size_t j = 0; j < ids[r].size(); ++j) {
      double id = ids[r][j];
      if (id != std::floor(id) || id < 1 || id > m.stages - 2)
        fail(at(file, "memory_usage.body_memories.stage_id"), "{} is not a body stage (1..{})", id, m.stages - 2);
      std::size_t si = static_cast<std::size_t>(id);
      run.peaks_mb[si] = mems[r][j];
      run.measured[si] = true;
    }
    if (head[r]) {
      run.peaks_mb[0] = *head[r];
      run.measured[0] = true;
    }
    if (tail[r]) {
      run.peaks_mb[static_cast<std::size_t>(m.stages - 1)] = *tail[r];
      run.measured[static_cast<std::size_t>(m.stages - 1)] = true;
    }
    // Kinds no stage uses would only add zero columns.
    for (auto it = run.recomputed.begin(); it != run.recomputed.end();) {
      bool used = std::any_of(it->second.begin(), it->second.end(), [](long long c) { return c > 0; });
      it = used ? std::next(it) : run.recomputed.erase(it);
    }
    m.runs.push_back(run);
  }
  // The reference fits the constant when the body stages give at least one equation more than P and the
  // activations need.
  Measurements without = m;
  without.constant = false;
  std::size_t body_rows = 0;
  for (const auto& run : m.runs) {
    for (int i = 1; i < m.stages - 1; ++i) body_rows += run.measured[static_cast<std::size_t>(i)] ? 1 : 0;
  }
  m.constant = body_rows >= build(without).names.size() + 1;
  return m;
}

Measurements read_measurements(const nlohmann::json& tree, const std::string& file) {
  if (tree.is_object() && tree.contains("memory_usage")) return measurements_from_reference(tree, file);
  return measurements_from_json(tree, file);
}

Decomposition decompose(const Measurements& m) {
  System sys = build(m);
  LeastSquares ls = least_squares(sys.a, sys.b);
  int unknowns = static_cast<int>(sys.names.size());
  if (ls.rank < unknowns) {
    // Which unknowns the measurements cannot tell apart: dropping such a column keeps the rank.
    std::vector<std::string> loose;
    for (int j = 0; j < unknowns; ++j) {
      Matrix a = sys.a;
      for (auto& row : a) row.erase(row.begin() + j);
      if (least_squares(a, sys.b).rank == ls.rank) loose.push_back(sys.names[static_cast<std::size_t>(j)]);
    }
    std::string names;
    for (const auto& n : loose) names += (names.empty() ? "" : ", ") + n;
    fail("decompose",
         "under-determined: {} unknowns but the {} stage peaks give only {} independent equations; {} more stage(s) are needed, in body stages (not the first "
         "or last) whose layer count and per-kind recompute counts differ from the others' (these cannot be told apart now: {}); `sapp balance guide` proposes "
         "such a run",
         unknowns, sys.b.size(), ls.rank, unknowns - ls.rank, names);
  }
  Decomposition d;
  d.unknowns = unknowns;
  d.equations = static_cast<int>(sys.b.size());
  d.param_mb = ls.x[0];
  for (std::size_t j = 0; j < sys.kinds.size(); ++j) d.activation_mb[sys.kinds[j]] = ls.x[j + 1];
  if (sys.col_c >= 0) d.constant_mb = ls.x[static_cast<std::size_t>(sys.col_c)];
  if (m.reference_convention) {
    // Head and tail as the mean of what the fitted body terms leave of the first and last stages' peaks.
    auto rest = [&](int i, double& sum, int& count) {
      for (const auto& run : m.runs) {
        std::size_t si = static_cast<std::size_t>(i);
        if (!run.measured.empty() && !run.measured[si]) continue;
        double left = run.peaks_mb[si] - static_cast<double>(run.layers[si]) * d.param_mb;
        long long rec = 0;
        for (const auto& [kind, counts] : run.recomputed) {
          rec += counts[si];
          if (counts[si] == 0) continue;
          if (!d.activation_mb.count(kind))
            fail("decompose", "stage {} uses {} recompute, which no measured body stage uses: its activation is unknown", i, to_string(kind));
          left -= static_cast<double>((m.stages - i) * counts[si]) * d.activation_mb.at(kind);
        }
        if (run.layers[si] - rec > 0) {
          if (!d.activation_mb.count(Rc::None)) fail("decompose", "stage {} keeps layers unrecomputed, which no measured body stage does", i);
          left -= static_cast<double>((m.stages - i) * (run.layers[si] - rec)) * d.activation_mb.at(Rc::None);
        }
        sum += left;
        ++count;
      }
    };
    double sum = 0;
    int count = 0;
    rest(0, sum, count);
    if (count == 0) fail("decompose", "no run measured stage 0 (memory_usage.head_memory): the head term is unknown");
    d.head_mb = sum / count;
    sum = 0;
    count = 0;
    rest(m.stages - 1, sum, count);
    if (count == 0) fail("decompose", "no run measured stage {} (memory_usage.tail_memory): the tail term is unknown", m.stages - 1);
    d.tail_mb = sum / count;
  } else {
    d.head_mb = ls.x[static_cast<std::size_t>(sys.col_h)];
    d.tail_mb = ls.x[static_cast<std::size_t>(sys.col_t)];
  }
  for (std::size_t i = 0; i < sys.a.size(); ++i) {
    double fit = 0;
    for (std::size_t j = 0; j < sys.a[i].size(); ++j) fit += sys.a[i][j] * ls.x[j];
    d.residuals_mb.push_back(sys.b[i] - fit);
  }
  return d;
}

std::vector<DryRun> guide(int stages, long long layers, const std::vector<Rc>& kinds, bool constant) {
  // A body stage i's peak is n P + (S - i) (sum over kinds of c_k A_k) + C: one body stage alone cannot tell a
  // layer's parameters from its activations (the columns n and (S - i) c add up to (S - i) n); two body stages at
  // different distances from the end can.
  if (stages < 4) fail("--stages", "{}: decomposition needs at least 4 stages (two body stages at different depths tell parameters from activations)", stages);
  std::vector<Rc> extra;
  for (Rc k : kinds) {
    if (k != Rc::None && std::find(extra.begin(), extra.end(), k) == extra.end()) extra.push_back(k);
  }
  int body = stages - 2;
  // Unknowns: P, A_none, one A per extra kind, C; H and T come from the first and last stage.
  int needed = 2 + static_cast<int>(extra.size()) + (constant ? 1 : 0);
  int rounds = (needed + body - 1) / body;
  long long base = layers / stages;
  if (base < 2) fail("--layers-total", "{} layers over {} stages leave fewer than 2 per stage; the guide varies counts by one", layers, stages);
  auto even_run = [&] {
    DryRun run;
    run.layers.assign(static_cast<std::size_t>(stages), base);
    run.layers.back() += layers - base * stages;
    for (Rc k : extra) run.recomputed[k].assign(static_cast<std::size_t>(stages), 0);
    run.peaks_mb.assign(static_cast<std::size_t>(stages), 0.0);
    return run;
  };
  std::vector<DryRun> runs;
  auto add_if_new = [&runs](const DryRun& run) {
    for (const DryRun& r : runs) {
      if (r.layers == run.layers && r.recomputed == run.recomputed) return false;
    }
    runs.push_back(run);
    return true;
  };
  int equation = 0;
  for (int r = 0; r < rounds; ++r) {
    DryRun run = even_run();
    for (int i = 1; i <= body; ++i, ++equation) {
      std::size_t si = static_cast<std::size_t>(i);
      // Vary the layer count on alternate equations (balanced by the next stage) and give each extra kind its
      // own stages, so the columns n, (S-i) c_none, (S-i) c_r and 1 are independent. The pattern runs on across
      // rounds, shifted by the round: when the body holds exactly one period of it, an unshifted round would repeat
      // the one before (the same equations, nothing learned).
      int pattern = (equation + r) % (static_cast<int>(extra.size()) + 2);
      if (pattern == 0 && i + 1 <= body) {
        run.layers[si] += 1;
        run.layers[si + 1] -= 1;
      }
      if (pattern >= 2) run.recomputed[extra[static_cast<std::size_t>(pattern - 2)]][si] = 1;
    }
    add_if_new(run);
  }
  // Check the design is full rank with synthetic peaks; add runs with other counts until it is (each new: a run
  // that repeats one before adds no equation), or say that none was found.
  for (int attempt = 0;; ++attempt) {
    Measurements m{stages, constant, runs};
    try {
      (void)decompose(m);
      return runs;
    } catch (const Error&) {
      if (attempt == 4 * needed)
        fail("balance guide", "found no set of dry runs that tells the {} unknowns apart over {} stages of {} layers; state fewer kinds (--recompute-kinds)",
             needed, stages, layers);
    }
    DryRun run = even_run();
    for (int i = 1; i <= body; ++i) {
      std::size_t si = static_cast<std::size_t>(i);
      const long long shift = 1 + attempt % 3;
      if ((i + attempt) % 2 == 1 && i + 1 < stages - 1 && run.layers[si + 1] > shift) {
        run.layers[si] += shift;
        run.layers[si + 1] -= shift;
      }
      std::size_t e = static_cast<std::size_t>(i + attempt) % std::max<std::size_t>(1, extra.size());
      if (!extra.empty() && run.layers[si] > 1 && (i + attempt / 2) % 3 != 0)
        run.recomputed[extra[e]][si] = std::min<long long>(1 + attempt % 2, run.layers[si] - 1);
    }
    add_if_new(run);
  }
}

}  // namespace sapp::balance
