// libFuzzer target for the expression parser and evaluator: any input either parses into the closed grammar
// or is refused with sapp::Error; evaluation either yields a value or a sapp::Error. Nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/expr.hpp"
#include "targets.hpp"

int sapp::fuzz::target_expr(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  sapp::expr::Symbols symbols;
  try {
    sapp::expr::Expr e = sapp::expr::Expr::parse(text, symbols, "fuzz");
    sapp::expr::Env env(symbols);
    for (std::size_t i = 0; i < symbols.size(); ++i) env.set(static_cast<int>(i), sapp::expr::Value::of_int(static_cast<std::int64_t>(i) + 3));
    (void)e.eval(env);
  } catch (const sapp::Error&) {
  }
  return 0;
}
