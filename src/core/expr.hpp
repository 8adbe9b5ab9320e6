// core/expr: the closed expression language of the op records and op profiles.
//
// Owns parsing (once, with every node checked against a closed grammar) and evaluation (many times, over an
// array of bound names, no string work). The grammar is the reference planner's (docs/reference-planner.md §3): numbers, names,
// + - * / // % **, unary + -, comparisons (chained), and/or/not, conditional expressions, and calls of max
// and min. Values follow Python's rules so a formula prices the same bits as the Python it was written in:
// int arithmetic stays exact until a float enters, `/` is true division, `//` floors, `%` takes the divisor's
// sign, `x or y` yields a value. A name is read only when the branch that holds it is taken.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace sapp::expr {

// A Python number: an exact int or a double. Booleans are ints 0/1, as in Python.
struct Value {
  bool is_int = true;
  bool bound = false;  // in an Env: whether the name holds a value (fits the padding: still 24 bytes)
  std::int64_t i = 0;
  double d = 0.0;

  static Value of_int(std::int64_t v) { return Value{true, true, v, 0.0}; }
  static Value of_double(double v) { return Value{false, true, 0, v}; }
  [[nodiscard]] double as_double() const { return is_int ? static_cast<double>(i) : d; }
  [[nodiscard]] bool truthy() const { return is_int ? i != 0 : d != 0.0; }
  friend bool operator==(const Value& a, const Value& b) { return a.is_int == b.is_int && (a.is_int ? a.i == b.i : a.d == b.d); }
};

// Interns the names expressions read, so evaluation indexes an array. One table per loaded data set
// (owned by whoever owns the expressions); never global.
class Symbols {
 public:
  int intern(std::string_view name);
  [[nodiscard]] int find(std::string_view name) const;  // -1 when absent
  [[nodiscard]] const std::string& name(int index) const { return names_[static_cast<std::size_t>(index)]; }
  [[nodiscard]] std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> index_;
};

// The values bound to a Symbols table; a name never bound is "unset" and reading it is an error that names it.
class Env {
 public:
  explicit Env(const Symbols& symbols) : symbols_(&symbols), values_(symbols.size()) {}
  void set(int index, Value v) {
    grow(index);
    v.bound = true;
    values_[static_cast<std::size_t>(index)] = v;
  }
  void set(std::string_view name, double v);
  void set_int(std::string_view name, std::int64_t v);
  void unset(int index) {
    grow(index);
    values_[static_cast<std::size_t>(index)].bound = false;
  }
  [[nodiscard]] bool has(int index) const {
    return index >= 0 && static_cast<std::size_t>(index) < values_.size() && values_[static_cast<std::size_t>(index)].bound;
  }
  [[nodiscard]] const Value& get(int index) const { return values_[static_cast<std::size_t>(index)]; }
  [[nodiscard]] const Symbols& symbols() const { return *symbols_; }

 private:
  void grow(int index) {
    if (static_cast<std::size_t>(index) >= values_.size()) values_.resize(static_cast<std::size_t>(index) + 1);
  }
  const Symbols* symbols_;
  std::vector<Value> values_;
};

enum class Op : std::uint8_t {
  Const,
  Name,
  Neg,
  Pos,
  Not,
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  And,
  Or,
  IfElse,
  Compare,
  Max,
  Min,
};

enum class Cmp : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

// One checked, compiled expression: a tree in a flat vector (children before parents), evaluated recursively.
class Expr {
 public:
  // Parses `source`, refusing anything outside the grammar. `where` names the file and key for errors.
  static Expr parse(std::string_view source, Symbols& symbols, const std::string& where);
  // A number given directly in YAML (an int or float scalar) is an expression too.
  static Expr constant(Value v, std::string source);

  [[nodiscard]] Value eval(const Env& env) const;
  // The same expression with every name `known` binds replaced by its value and every subtree that became
  // constant folded, by this evaluator (no reassociation, so it gives the same bits). Names `known` does not
  // bind stay; a fold that would raise (division by zero) is left for evaluation, so laziness is kept.
  [[nodiscard]] Expr specialize(const Env& known) const;
  [[nodiscard]] bool is_constant() const { return flat_.size() == 1 && flat_[0].op == Op::Const; }
  [[nodiscard]] Value constant_value() const { return flat_[0].value; }
  [[nodiscard]] double eval_double(const Env& env) const { return eval(env).as_double(); }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] const std::vector<int>& names() const { return names_; }  // symbol indices read, each once
  [[nodiscard]] bool reads(int symbol) const;

  struct Node {
    Op op = Op::Const;
    Value value{};            // Const
    int symbol = -1;          // Name
    std::vector<int> kids{};  // operands; for Compare: operands, with cmps[i] between kids[i] and kids[i+1]
    std::vector<Cmp> cmps{};
  };

 private:
  // The evaluated form: fixed-size nodes, children by index, variadic operands in side arrays. Built once
  // from the parse tree so evaluation touches no vectors of its own.
  struct Flat {
    Op op = Op::Const;
    std::int32_t a = -1, b = -1, c = -1;  // children (unary: a; binary: a, b; if-else: test a, body b, else c)
    std::int32_t first = 0, count = 0;    // Compare/Max/Min: operands in operands_[first, first + count)
    std::int32_t symbol = -1;
    Value value{};
  };
  void flatten();
  int specialize_node(int index, const Env& known, Expr& out) const;
  [[nodiscard]] Value eval_node(int index, const Env& env) const;
  std::vector<Node> nodes_;
  std::vector<Flat> flat_;
  std::vector<std::int32_t> operands_;
  std::vector<Cmp> cmps_;
  int root_ = -1;
  std::string source_;
  std::string where_;
  std::vector<int> names_;
  friend class Parser;
};

// Python arithmetic on Values, shared by the evaluator; throws sapp::Error on division by zero.
Value binary(Op op, const Value& a, const Value& b);
bool compare(Cmp cmp, const Value& a, const Value& b);

}  // namespace sapp::expr
