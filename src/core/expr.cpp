#include "core/expr.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace sapp::expr {

int Symbols::intern(std::string_view name) {
  auto found = index_.find(std::string(name));
  if (found != index_.end()) return found->second;
  int index = static_cast<int>(names_.size());
  names_.emplace_back(name);
  index_.emplace(std::string(name), index);
  return index;
}

int Symbols::find(std::string_view name) const {
  auto found = index_.find(std::string(name));
  return found == index_.end() ? -1 : found->second;
}

void Env::set(std::string_view name, double v) {
  int index = symbols_->find(name);
  if (index >= 0) set(index, Value::of_double(v));
}

void Env::set_int(std::string_view name, std::int64_t v) {
  int index = symbols_->find(name);
  if (index >= 0) set(index, Value::of_int(v));
}

namespace {

enum class Tok : std::uint8_t { End, Number, Name, Op, LParen, RParen, Comma };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  Value number{};
  std::size_t offset = 0;
};

// Python's float divmod, so `//` and `%` on floats give CPython's bits.
void float_divmod(double vx, double wx, double& floordiv, double& mod) {
  mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
}

[[noreturn]] void overflow() { throw Error("integer arithmetic overflows 64 bits"); }

}  // namespace

Value binary(Op op, const Value& a, const Value& b) {
  if (!a.is_int && !b.is_int) {  // the common case in the records: floats throughout
    switch (op) {
      case Op::Add: return Value::of_double(a.d + b.d);
      case Op::Sub: return Value::of_double(a.d - b.d);
      case Op::Mul: return Value::of_double(a.d * b.d);
      case Op::Div:
        if (b.d != 0.0) return Value::of_double(a.d / b.d);
        break;
      default: break;
    }
  }
  if (a.is_int && b.is_int) {
    std::int64_t x = a.i;
    std::int64_t y = b.i;
    std::int64_t r = 0;
    switch (op) {
      case Op::Add:
        if (__builtin_add_overflow(x, y, &r)) overflow();
        return Value::of_int(r);
      case Op::Sub:
        if (__builtin_sub_overflow(x, y, &r)) overflow();
        return Value::of_int(r);
      case Op::Mul:
        if (__builtin_mul_overflow(x, y, &r)) overflow();
        return Value::of_int(r);
      case Op::Div:
        if (y == 0) throw Error("division by zero");
        return Value::of_double(static_cast<double>(x) / static_cast<double>(y));
      case Op::FloorDiv: {
        if (y == 0) throw Error("integer division by zero");
        std::int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::of_int(q);
      }
      case Op::Mod: {
        if (y == 0) throw Error("integer modulo by zero");
        std::int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::of_int(m);
      }
      case Op::Pow: {
        if (y < 0) {
          if (x == 0) throw Error("0 cannot be raised to a negative power");
          return Value::of_double(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        std::int64_t result = 1;
        std::int64_t base = x;
        std::int64_t e = y;
        while (e > 0) {
          if (e & 1) {
            if (__builtin_mul_overflow(result, base, &result)) overflow();
          }
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
        }
        return Value::of_int(result);
      }
      default: break;
    }
  }
  double x = a.as_double();
  double y = b.as_double();
  switch (op) {
    case Op::Add: return Value::of_double(x + y);
    case Op::Sub: return Value::of_double(x - y);
    case Op::Mul: return Value::of_double(x * y);
    case Op::Div:
      if (y == 0.0) throw Error("float division by zero");
      return Value::of_double(x / y);
    case Op::FloorDiv: {
      if (y == 0.0) throw Error("float floor division by zero");
      double q = 0;
      double m = 0;
      float_divmod(x, y, q, m);
      return Value::of_double(q);
    }
    case Op::Mod: {
      if (y == 0.0) throw Error("float modulo by zero");
      double q = 0;
      double m = 0;
      float_divmod(x, y, q, m);
      return Value::of_double(m);
    }
    case Op::Pow: {
      if (x == 0.0 && y < 0.0) throw Error("0.0 cannot be raised to a negative power");
      if (x < 0.0 && std::floor(y) != y) throw Error("a negative number raised to a fractional power is not real");
      return Value::of_double(std::pow(x, y));
    }
    default: throw Error("internal: not a binary operator");
  }
}

bool compare(Cmp cmp, const Value& a, const Value& b) {
  if (a.is_int && b.is_int) {
    switch (cmp) {
      case Cmp::Eq: return a.i == b.i;
      case Cmp::Ne: return a.i != b.i;
      case Cmp::Lt: return a.i < b.i;
      case Cmp::Le: return a.i <= b.i;
      case Cmp::Gt: return a.i > b.i;
      case Cmp::Ge: return a.i >= b.i;
    }
  }
  double x = a.as_double();
  double y = b.as_double();
  switch (cmp) {
    case Cmp::Eq: return x == y;
    case Cmp::Ne: return x != y;
    case Cmp::Lt: return x < y;
    case Cmp::Le: return x <= y;
    case Cmp::Gt: return x > y;
    case Cmp::Ge: return x >= y;
  }
  return false;
}

// Recursive-descent parser over Python's expression precedence, restricted to the closed grammar.
class Parser {
 public:
  Parser(std::string_view text, Symbols& symbols, const std::string& where) : text_(text), symbols_(symbols), where_(where) {}

  Expr run() {
    advance();
    if (tok_.kind == Tok::End) refuse("is empty, not an expression");
    int root = conditional();
    if (tok_.kind != Tok::End) refuse(fmt::format("has '{}' at offset {} where the expression should end", tok_.text, tok_.offset));
    out_.root_ = root;
    out_.source_ = std::string(text_);
    out_.where_ = where_;
    std::sort(names_.begin(), names_.end());
    names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
    out_.names_ = names_;
    out_.flatten();
    return std::move(out_);
  }

 private:
  [[noreturn]] void refuse(const std::string& what) const { throw Error(fmt::format("{}: '{}' {}", where_, text_, what)); }
  [[noreturn]] void uses(const char* node) const { refuse(fmt::format("uses {}, which a record may not", node)); }

  static bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  void advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    tok_ = Token{};
    tok_.offset = pos_;
    if (pos_ >= text_.size()) return;
    char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && pos_ + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      number();
      return;
    }
    if (is_name_start(c)) {
      std::size_t start = pos_;
      while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
      tok_.kind = Tok::Name;
      tok_.text = std::string(text_.substr(start, pos_ - start));
      return;
    }
    if (c == '"' || c == '\'') refuse("holds a string, which is not a number");
    static constexpr std::string_view two[] = {"**", "//", "==", "!=", "<=", ">=", "<<", ">>", ":="};
    for (std::string_view op : two) {
      if (text_.substr(pos_, 2) == op) {
        if (op == "<<") uses("LShift");
        if (op == ">>") uses("RShift");
        if (op == ":=") uses("NamedExpr");
        tok_.kind = Tok::Op;
        tok_.text = std::string(op);
        pos_ += 2;
        return;
      }
    }
    ++pos_;
    tok_.text = std::string(1, c);
    switch (c) {
      case '+':
      case '-':
      case '*':
      case '/':
      case '%':
      case '<':
      case '>': tok_.kind = Tok::Op; return;
      case '(': tok_.kind = Tok::LParen; return;
      case ')': tok_.kind = Tok::RParen; return;
      case ',': tok_.kind = Tok::Comma; return;
      case '.': uses("Attribute");
      case '[': uses("Subscript");
      case '{': uses("Dict or Set");
      case '&': uses("BitAnd");
      case '|': uses("BitOr");
      case '^': uses("BitXor");
      case '~': uses("Invert");
      case '@': uses("MatMult");
      case '=': uses("an assignment");
      case ':': uses("a slice or lambda");
      default: refuse(fmt::format("has the character '{}' at offset {}, which is no part of an expression", c, pos_ - 1));
    }
  }

  void number() {
    std::size_t start = pos_;
    bool is_float = false;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      std::size_t save = pos_;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        is_float = true;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      } else {
        pos_ = save;
      }
    }
    if (pos_ < text_.size() && is_name_char(text_[pos_])) {
      refuse(fmt::format("has a malformed number at offset {}", start));
    }
    std::string literal;
    for (char ch : text_.substr(start, pos_ - start)) {
      if (ch != '_') literal.push_back(ch);
    }
    tok_.kind = Tok::Number;
    tok_.text = literal;
    if (is_float) {
      char* end = nullptr;
      double v = std::strtod(literal.c_str(), &end);
      tok_.number = Value::of_double(v);
    } else {
      if (literal.size() > 1 && literal[0] == '0' && literal.find_first_not_of('0') != std::string::npos) {
        refuse(fmt::format("has the number '{}' with a leading zero, which Python refuses", literal));
      }
      std::int64_t v = 0;
      auto [ptr, ec] = std::from_chars(literal.data(), literal.data() + literal.size(), v);
      if (ec != std::errc() || ptr != literal.data() + literal.size()) refuse(fmt::format("has the number '{}', too large for 64 bits", literal));
      tok_.number = Value::of_int(v);
    }
  }

  int add(Expr::Node node) {
    out_.nodes_.push_back(std::move(node));
    return static_cast<int>(out_.nodes_.size()) - 1;
  }
  int unary(Op op, int kid) { return add(Expr::Node{op, {}, -1, {kid}, {}}); }
  int binary_node(Op op, int a, int b) { return add(Expr::Node{op, {}, -1, {a, b}, {}}); }

  bool at_keyword(std::string_view word) const { return tok_.kind == Tok::Name && tok_.text == word; }
  bool at_op(std::string_view op) const { return tok_.kind == Tok::Op && tok_.text == op; }

  int conditional() {
    if (at_keyword("lambda")) uses("Lambda");
    int body = or_expr();
    if (at_keyword("if")) {
      advance();
      int test = or_expr();
      if (!at_keyword("else")) refuse("has a conditional expression without else");
      advance();
      int orelse = conditional();
      return add(Expr::Node{Op::IfElse, {}, -1, {test, body, orelse}, {}});
    }
    return body;
  }

  int or_expr() {
    int left = and_expr();
    while (at_keyword("or")) {
      advance();
      left = binary_node(Op::Or, left, and_expr());
    }
    return left;
  }

  int and_expr() {
    int left = not_expr();
    while (at_keyword("and")) {
      advance();
      left = binary_node(Op::And, left, not_expr());
    }
    return left;
  }

  // Guards every recursive rule so hostile input is refused, not a stack overflow.
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > 200) p.refuse("nests deeper than 200 levels");
    }
    ~Depth() { --p.depth_; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
  };

  int not_expr() {
    Depth guard(*this);
    if (at_keyword("not")) {
      advance();
      return unary(Op::Not, not_expr());
    }
    return comparison();
  }

  int comparison() {
    int first = arith();
    Expr::Node node{Op::Compare, {}, -1, {first}, {}};
    for (;;) {
      Cmp cmp{};
      if (at_op("=="))
        cmp = Cmp::Eq;
      else if (at_op("!="))
        cmp = Cmp::Ne;
      else if (at_op("<"))
        cmp = Cmp::Lt;
      else if (at_op("<="))
        cmp = Cmp::Le;
      else if (at_op(">"))
        cmp = Cmp::Gt;
      else if (at_op(">="))
        cmp = Cmp::Ge;
      else if (at_keyword("in"))
        uses("In");
      else if (at_keyword("is"))
        uses("Is");
      else
        break;
      advance();
      node.cmps.push_back(cmp);
      node.kids.push_back(arith());
    }
    if (node.cmps.empty()) return first;
    return add(std::move(node));
  }

  int arith() {
    int left = term();
    for (;;) {
      if (at_op("+")) {
        advance();
        left = binary_node(Op::Add, left, term());
      } else if (at_op("-")) {
        advance();
        left = binary_node(Op::Sub, left, term());
      } else
        return left;
    }
  }

  int term() {
    int left = factor();
    for (;;) {
      Op op{};
      if (at_op("*"))
        op = Op::Mul;
      else if (at_op("/"))
        op = Op::Div;
      else if (at_op("//"))
        op = Op::FloorDiv;
      else if (at_op("%"))
        op = Op::Mod;
      else
        return left;
      advance();
      left = binary_node(op, left, factor());
    }
  }

  int factor() {
    Depth guard(*this);
    if (at_op("-")) {
      advance();
      return unary(Op::Neg, factor());
    }
    if (at_op("+")) {
      advance();
      return unary(Op::Pos, factor());
    }
    return power();
  }

  int power() {
    int base = atom();
    if (at_op("**")) {
      advance();
      return binary_node(Op::Pow, base, factor());
    }
    return base;
  }

  int atom() {
    Depth guard(*this);
    switch (tok_.kind) {
      case Tok::Number: {
        Value v = tok_.number;
        advance();
        return add(Expr::Node{Op::Const, v, -1, {}, {}});
      }
      case Tok::LParen: {
        advance();
        if (tok_.kind == Tok::RParen) uses("Tuple");
        int inner = conditional();
        if (tok_.kind == Tok::Comma) uses("Tuple");
        if (tok_.kind != Tok::RParen) refuse("has an unclosed parenthesis");
        advance();
        return inner;
      }
      case Tok::Name: {
        std::string name = tok_.text;
        if (name == "True" || name == "False" || name == "None") {
          refuse(fmt::format("holds {}, which is not a number", name));
        }
        static constexpr std::string_view keywords[] = {"if",     "else", "and",   "or",    "not",    "in",  "is",
                                                        "lambda", "for",  "await", "yield", "import", "def", "class"};
        for (std::string_view kw : keywords) {
          if (name == kw) refuse(fmt::format("has the keyword '{}' where a value should be", name));
        }
        advance();
        if (tok_.kind == Tok::LParen) return call(name);
        int symbol = symbols_.intern(name);
        names_.push_back(symbol);
        return add(Expr::Node{Op::Name, {}, symbol, {}, {}});
      }
      case Tok::End: refuse("ends where a value should be");
      default: refuse(fmt::format("has '{}' at offset {} where a value should be", tok_.text, tok_.offset));
    }
  }

  int call(const std::string& name) {
    if (name != "max" && name != "min") refuse(fmt::format("calls {}, which is neither max nor min", name));
    advance();  // '('
    Expr::Node node{name == "max" ? Op::Max : Op::Min, {}, -1, {}, {}};
    if (tok_.kind != Tok::RParen) {
      for (;;) {
        if (tok_.kind == Tok::Op && tok_.text == "*") uses("Starred");
        int arg = conditional();
        if (at_op("=")) uses("keyword arguments");
        node.kids.push_back(arg);
        if (tok_.kind == Tok::Comma) {
          advance();
          if (tok_.kind == Tok::RParen) break;
          continue;
        }
        break;
      }
    }
    if (tok_.kind != Tok::RParen) refuse(fmt::format("has an unclosed call of {}", name));
    advance();
    if (node.kids.size() < 2) refuse(fmt::format("calls {} with {} argument(s); it takes two or more numbers", name, node.kids.size()));
    return add(std::move(node));
  }

  std::string_view text_;
  Symbols& symbols_;
  const std::string& where_;
  std::size_t pos_ = 0;
  Token tok_;
  Expr out_;
  std::vector<int> names_;
  int depth_ = 0;
};

Expr Expr::parse(std::string_view source, Symbols& symbols, const std::string& where) {
  std::string_view text = source;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return Parser(text, symbols, where).run();
}

Expr Expr::constant(Value v, std::string source) {
  Expr e;
  e.nodes_.push_back(Node{Op::Const, v, -1, {}, {}});
  e.root_ = 0;
  e.source_ = std::move(source);
  e.flatten();
  return e;
}

void Expr::flatten() {
  flat_.clear();
  operands_.clear();
  cmps_.clear();
  flat_.reserve(nodes_.size());
  for (const Node& n : nodes_) {
    Flat f;
    f.op = n.op;
    f.value = n.value;
    f.symbol = n.symbol;
    if (n.op == Op::Compare || n.op == Op::Max || n.op == Op::Min) {
      f.first = static_cast<std::int32_t>(operands_.size());
      f.count = static_cast<std::int32_t>(n.kids.size());
      for (int k : n.kids) operands_.push_back(k);
      for (Cmp c : n.cmps) cmps_.push_back(c);
      f.c = static_cast<std::int32_t>(cmps_.size() - n.cmps.size());  // where this node's comparators start
    } else {
      if (!n.kids.empty()) f.a = n.kids[0];
      if (n.kids.size() > 1) f.b = n.kids[1];
      if (n.kids.size() > 2) f.c = n.kids[2];
    }
    flat_.push_back(f);
  }
}

int Expr::specialize_node(int index, const Env& known, Expr& out) const {
  const Node& n = nodes_[static_cast<std::size_t>(index)];
  auto push = [&](Node node) {
    out.nodes_.push_back(std::move(node));
    return static_cast<int>(out.nodes_.size()) - 1;
  };
  auto constant = [&](Value v) { return push(Node{Op::Const, v, -1, {}, {}}); };
  auto is_const = [&](int k) { return out.nodes_[static_cast<std::size_t>(k)].op == Op::Const; };
  auto value = [&](int k) { return out.nodes_[static_cast<std::size_t>(k)].value; };
  switch (n.op) {
    case Op::Const: return constant(n.value);
    case Op::Name:
      if (known.has(n.symbol)) return constant(known.get(n.symbol));
      out.names_.push_back(n.symbol);
      return push(n);
    case Op::And:
    case Op::Or: {
      int a = specialize_node(n.kids[0], known, out);
      if (is_const(a)) {
        bool t = value(a).truthy();
        if ((n.op == Op::And && !t) || (n.op == Op::Or && t)) return a;
        return specialize_node(n.kids[1], known, out);
      }
      int b = specialize_node(n.kids[1], known, out);
      return push(Node{n.op, {}, -1, {a, b}, {}});
    }
    case Op::IfElse: {
      int test = specialize_node(n.kids[0], known, out);
      if (is_const(test)) return specialize_node(value(test).truthy() ? n.kids[1] : n.kids[2], known, out);
      int body = specialize_node(n.kids[1], known, out);
      int orelse = specialize_node(n.kids[2], known, out);
      return push(Node{Op::IfElse, {}, -1, {test, body, orelse}, {}});
    }
    default: {
      Node copy{n.op, n.value, n.symbol, {}, n.cmps};
      bool all_const = true;
      for (int kid : n.kids) {
        int k = specialize_node(kid, known, out);
        copy.kids.push_back(k);
        all_const = all_const && is_const(k);
      }
      if (all_const) {
        // Fold by evaluating the constant subtree with this evaluator; leave it if it would raise.
        Expr sub;
        std::vector<int> map;
        for (int k : copy.kids) {
          sub.nodes_.push_back(Node{Op::Const, value(k), -1, {}, {}});
          map.push_back(static_cast<int>(sub.nodes_.size()) - 1);
        }
        Node top = copy;
        top.kids = map;
        sub.nodes_.push_back(top);
        sub.root_ = static_cast<int>(sub.nodes_.size()) - 1;
        sub.flatten();
        Symbols none;
        Env empty(none);
        try {
          return constant(sub.eval_node(sub.root_, empty));
        } catch (const Error&) {
        }
      }
      return push(std::move(copy));
    }
  }
}

Expr Expr::specialize(const Env& known) const {
  Expr out;
  out.source_ = source_;
  out.where_ = where_;
  out.root_ = specialize_node(root_, known, out);
  std::sort(out.names_.begin(), out.names_.end());
  out.names_.erase(std::unique(out.names_.begin(), out.names_.end()), out.names_.end());
  out.flatten();
  return out;
}

bool Expr::reads(int symbol) const { return std::binary_search(names_.begin(), names_.end(), symbol); }

Value Expr::eval(const Env& env) const {
  try {
    return eval_node(root_, env);
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind(where_, 0) == 0 && !where_.empty()) throw;
    throw Error(fmt::format("{}: '{}': {}", where_.empty() ? std::string("expression") : where_, source_, what));
  }
}

Value Expr::eval_node(int index, const Env& env) const {
  const Flat& n = flat_[static_cast<std::size_t>(index)];
  switch (n.op) {
    case Op::Const: return n.value;
    case Op::Name:
      if (!env.has(n.symbol)) throw Error(fmt::format("reads {}, which is not set", env.symbols().name(n.symbol)));
      return env.get(n.symbol);
    case Op::Neg: {
      Value v = eval_node(n.a, env);
      if (v.is_int) {
        if (v.i == std::numeric_limits<std::int64_t>::min()) overflow();
        return Value::of_int(-v.i);
      }
      return Value::of_double(-v.d);
    }
    case Op::Pos: return eval_node(n.a, env);
    case Op::Not: return Value::of_int(eval_node(n.a, env).truthy() ? 0 : 1);
    case Op::And: {
      Value left = eval_node(n.a, env);
      return left.truthy() ? eval_node(n.b, env) : left;
    }
    case Op::Or: {
      Value left = eval_node(n.a, env);
      return left.truthy() ? left : eval_node(n.b, env);
    }
    case Op::IfElse: return eval_node(n.a, env).truthy() ? eval_node(n.b, env) : eval_node(n.c, env);
    case Op::Compare: {
      const std::int32_t* kid = operands_.data() + n.first;
      const Cmp* cmp = cmps_.data() + n.c;
      Value left = eval_node(kid[0], env);
      for (std::int32_t k = 1; k < n.count; ++k) {
        Value right = eval_node(kid[k], env);
        if (!compare(cmp[k - 1], left, right)) return Value::of_int(0);
        left = right;
      }
      return Value::of_int(1);
    }
    case Op::Max:
    case Op::Min: {
      const std::int32_t* kid = operands_.data() + n.first;
      Value best = eval_node(kid[0], env);
      for (std::int32_t k = 1; k < n.count; ++k) {
        Value v = eval_node(kid[k], env);
        bool better = n.op == Op::Max ? compare(Cmp::Gt, v, best) : compare(Cmp::Lt, v, best);
        if (better) best = v;
      }
      return best;
    }
    default: return binary(n.op, eval_node(n.a, env), eval_node(n.b, env));
  }
}

}  // namespace sapp::expr
