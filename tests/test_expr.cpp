// The closed expression language: Python's value semantics, lazy names, and every refusal.
// Expected values are what CPython 3.11 prints for the same expressions (the language's specification).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/expr.hpp"

using sapp::expr::Env;
using sapp::expr::Expr;
using sapp::expr::Symbols;
using sapp::expr::Value;

namespace {

Value eval(const std::string& text, std::initializer_list<std::pair<const char*, Value>> names = {}) {
  Symbols symbols;
  Expr e = Expr::parse(text, symbols, "test");
  Env env(symbols);
  for (const auto& [name, value] : names) {
    int i = symbols.find(name);
    if (i >= 0) env.set(i, value);
  }
  return e.eval(env);
}

Value I(long long v) { return Value::of_int(v); }
Value D(double v) { return Value::of_double(v); }

void refused(const std::string& text, const std::string& says) {
  Symbols symbols;
  try {
    (void)Expr::parse(text, symbols, "op_records.yaml: slots.x.formula");
    FAIL() << text << " was accepted";
  } catch (const sapp::Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("op_records.yaml: slots.x.formula"), std::string::npos) << what;
    EXPECT_NE(what.find(says), std::string::npos) << text << " -> " << what;
  }
}

}  // namespace

TEST(Expr, ReferenceVectorKeepsPythonArithmetic) {
  // docs/reference-planner.md §3, test vector 3.
  Value v = eval("(0.5*h+0.5*w if n%2==0 else 1/3*h+2/3*w)*(b*n) + (d or h/a)",
                 {{"h", I(4096)}, {"w", I(14336)}, {"n", I(3)}, {"b", I(2)}, {"d", I(0)}, {"a", I(28)}});
  EXPECT_FALSE(v.is_int);
  EXPECT_EQ(v.d, 65682.28571428571);
}

TEST(Expr, IntegerAndFloatRulesMatchPython) {
  EXPECT_EQ(eval("-7.5 // 2"), D(-4.0));
  EXPECT_EQ(eval("7.5 % -2"), D(-0.5));
  EXPECT_EQ(eval("-7 // 2"), I(-4));
  EXPECT_EQ(eval("-7 % 2"), I(1));
  EXPECT_EQ(eval("7 % -2"), I(-1));
  EXPECT_EQ(eval("2 ** -1"), D(0.5));
  EXPECT_EQ(eval("-2 ** 2"), I(-4));
  EXPECT_EQ(eval("2 ** 3 ** 2"), I(512));
  EXPECT_EQ(eval("10 / 4"), D(2.5));
  EXPECT_EQ(eval("10 / 5"), D(2.0));  // true division is a float even when exact
  EXPECT_EQ(eval("1e3"), D(1000.0));
  EXPECT_EQ(eval("7.0 // 0.5"), D(14.0));
  EXPECT_EQ(eval("1_000 + 1"), I(1001));
}

TEST(Expr, BooleanOperatorsReturnValues) {
  EXPECT_EQ(eval("0 or 5"), I(5));
  EXPECT_EQ(eval("3 and 0"), I(0));
  EXPECT_EQ(eval("not 0"), I(1));
  EXPECT_EQ(eval("1 < 2 < 3"), I(1));
  EXPECT_EQ(eval("3 > 2 > 2"), I(0));
  EXPECT_EQ(eval("max(1, 2.0)"), D(2.0));
  EXPECT_EQ(eval("min(3, 3.0)"), I(3));  // the first of equals, as Python's min
  EXPECT_EQ(eval("max(1, 5, 3)"), I(5));
}

TEST(Expr, NamesAreReadOnlyOnTheBranchTaken) {
  // docs/reference-planner.md §3, test vector 4: `missing` is never looked up.
  EXPECT_EQ(eval("h if flag else missing", {{"h", I(10)}, {"flag", I(1)}}), I(10));
  EXPECT_EQ(eval("0 and missing"), I(0));
  EXPECT_EQ(eval("1 or missing"), I(1));
  try {
    (void)eval("h if flag else missing", {{"h", I(10)}, {"flag", I(0)}});
    FAIL();
  } catch (const sapp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads missing, which is not set"), std::string::npos) << e.what();
  }
}

TEST(Expr, ParsedOnceEvaluatedManyTimes) {
  Symbols symbols;
  Expr e = Expr::parse("s * b * total / t", symbols, "test");
  Env env(symbols);
  env.set(symbols.find("s"), I(2048));
  env.set(symbols.find("total"), I(34));
  double sum = 0;
  for (int t = 1; t <= 8; t *= 2) {
    env.set(symbols.find("b"), I(t));
    env.set(symbols.find("t"), I(t));
    sum += e.eval_double(env);
  }
  EXPECT_EQ(sum, 4.0 * 2048 * 34);
  EXPECT_EQ(e.names().size(), 4u);
}

TEST(Expr, DivisionByZeroNamesTheExpression) {
  try {
    (void)eval("h / t", {{"h", I(1)}, {"t", I(0)}});
    FAIL();
  } catch (const sapp::Error& e) {
    EXPECT_NE(std::string(e.what()).find("h / t"), std::string::npos) << e.what();
  }
}

TEST(Expr, RefusesEverythingOutsideTheGrammar) {
  refused("a.b", "Attribute");
  refused("a[0]", "Subscript");
  refused("lambda: 1", "Lambda");
  refused("__import__('os')", "neither max nor min");
  refused("open(1)", "neither max nor min");
  refused("max(x=1, y=2)", "assignment");
  refused("'text'", "string");
  refused("True", "True, which is not a number");
  refused("None", "None, which is not a number");
  refused("a & b", "BitAnd");
  refused("a | b", "BitOr");
  refused("a << 2", "LShift");
  refused("~a", "Invert");
  refused("a @ b", "MatMult");
  refused("(a, b)", "Tuple");
  refused("a in b", "In");
  refused("a is b", "Is");
  refused("", "empty");
  refused("(a + 1", "unclosed parenthesis");
  refused("a if b", "without else");
  refused("max(1)", "two or more");
  refused("a +", "ends where a value should be");
  refused("1 2", "where the expression should end");
  refused("a = 1", "assignment");
  refused("{1: 2}", "Dict");
  refused("x := 1", "NamedExpr");
  refused("012", "leading zero");
  refused("a $ b", "no part of an expression");
}
