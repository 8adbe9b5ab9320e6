// model/op_records: the op records file (data/op_records.yaml), loaded and checked.
//
// What each op keeps for backward (slots of element formulas), each layer's parameters and forward work, as
// expressions of the closed language. The memory and performance estimators read layers only through these,
// so a new layer shape needs a data change, not code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/expr.hpp"

namespace sapp::model {

struct OpRecord {
  std::string name;
  std::string switch_name;  // empty: kept unless the whole layer is recomputed
  std::vector<std::string> needs;
  bool comm = false;
};

struct SlotEntry {
  int op = -1;  // index into OpRecords::ops
  expr::Expr elements;
};

struct Slot {
  std::string name;
  std::string part;  // attention | ffn | norm
  expr::Expr formula;
  std::vector<SlotEntry> entries;
  std::optional<expr::Expr> when;
};

struct ParamTerm {
  std::string name;
  std::string part;  // attention | ffn | norm | expert
  std::optional<expr::Expr> when;
  expr::Expr formula;
};

enum class WorkKind { Gemm, Attention, Memory };
enum class Shard { Tensor, SequenceParallel, None };

// What the time estimator does with a work term beyond pricing its kind (op_records.yaml, `role`): the flash
// kernel's rate for its head dimension (FlashAttention), the grouped-GEMM loss and the MoE imbalance on the routed
// experts' GEMMs (RoutedExperts), the imbalance on other per-routed-token work (RoutedTokens), the window that
// hides EP behind the shared experts (SharedExperts).
enum class WorkRole { None, FlashAttention, RoutedExperts, RoutedTokens, SharedExperts };

struct WorkTerm {
  std::string name;
  WorkKind kind = WorkKind::Gemm;
  int op = -1;
  Shard shard = Shard::Tensor;
  std::optional<expr::Expr> when;
  expr::Expr formula;
  std::optional<expr::Expr> rows;      // GEMM rows (tokens) per rank; sizes the efficiency ramp. Default s * b.
  std::optional<expr::Expr> backward;  // backward work over forward work; default 2 (two GEMMs per forward GEMM)
  WorkRole role = WorkRole::None;
};

// Indices of the names the estimators bind per layout, resolved once when the records load (-1: unread).
struct LayoutSymbols {
  int s = -1, seq = -1, ctx = -1, ctx_all = -1, b = -1, t = -1, tsp = -1, cp = -1, ep = -1, etp = -1, tok_shard = -1, fa = -1, bc = -1, bq = -1, kvs = -1,
      cap = -1, fp8 = -1, eager = -1, lora = -1, qcast = -1;
};

// Indices of the model-bound names the time estimator reads per layer kind (the expert width, the attention's head
// dimension), resolved once when the records load (-1: unread).
struct ShapeSymbols {
  int ffn = -1, mla = -1, nope = -1, rope = -1, dh = -1, h = -1, n_ffn_mm = -1;
};

struct OpRecords {
  std::string file;
  expr::Symbols symbols;
  std::vector<std::string> op_counts;  // the op vector a profile states per kind (bound as n_<op>)
  std::vector<std::string> switches;
  std::vector<std::string> selective;  // switches dropped by `selective` recompute by default
  std::vector<OpRecord> ops;
  std::vector<Slot> slots;
  std::optional<expr::Expr> full_recompute;
  std::vector<ParamTerm> params;
  std::vector<WorkTerm> work;
  int total_symbol = -1;
  LayoutSymbols layout;
  ShapeSymbols shape;
  std::vector<int> op_switch;  // per op, the index of its switch, -1 for none

  [[nodiscard]] int op_index(const std::string& name) const;
  [[nodiscard]] int switch_index(const std::string& name) const;  // -1 when absent
};

OpRecords load_op_records(const std::string& path);
OpRecords op_records_from_json(const nlohmann::json& tree, const std::string& file);

}  // namespace sapp::model
