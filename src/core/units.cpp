#include "core/units.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sapp::units {

namespace {

constexpr double kGib = 1073741824.0;
constexpr double kMib = 1048576.0;

// "%g" with the exponent written as people write it in YAML: 1e+12 -> 1e12, 3.5e-06 -> 3.5e-6.
std::string compact(double value, int digits) {
  std::string s = fmt::format("{:.{}g}", value, digits);
  std::size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e);
  std::string exponent = s.substr(e + 1);
  bool negative = !exponent.empty() && exponent[0] == '-';
  if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) exponent.erase(0, 1);
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  return mantissa + "e" + (negative ? "-" : "") + exponent;
}

// Three significant digits without an exponent (the value is already scaled to [1, 1000) or below).
std::string sig3(double value) {
  std::string s = fmt::format("{:.3g}", value);
  if (s.find('e') != std::string::npos) s = fmt::format("{:.0f}", value);
  return s;
}

// A converted value for a hint: whole from 100 up, four significant digits below.
std::string rounded(double value) { return value >= 100 ? number(std::round(value)) : compact(value, 4); }

bool si_unit(std::string_view unit) { return unit == "FLOP/s" || unit == "B/s" || unit == "s"; }

std::string bound(double value, std::string_view unit) {
  if (unit == "bytes") return in_unit(value, unit);
  if (std::floor(value) == value && std::fabs(value) < 1e7) return number(value);
  return compact(value, 6);
}

std::string range_phrase(const Quantity& q) {
  if (q.whole) {
    if (q.low == 1) return fmt::format(", a positive whole number at most {}", number(q.high));
    if (q.low == 0) return fmt::format(", a non-negative whole number at most {}", number(q.high));
    return fmt::format(", a whole number from {} to {}", number(q.low), number(q.high));
  }
  std::string low = bound(q.low, q.unit);
  std::string high = bound(q.high, q.unit);
  if (q.low_open) return fmt::format(" above {} and at most {}", low, high);
  if (q.high_open) return fmt::format(" from {} to below {}", low, high);
  return fmt::format(" between {} and {}", low, high);
}

}  // namespace

std::string number(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (std::floor(value) == value && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  return compact(value, 6);
}

std::string in_unit(double value, std::string_view unit) {
  double a = std::fabs(value);
  if (!std::isfinite(value)) return fmt::format("{} {}", value, unit);
  if (unit == "bytes") {
    static const std::array<const char*, 6> kPrefixes = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (a < 1024) return fmt::format("{} bytes", number(value));
    double v = value;
    std::size_t i = 0;
    v /= 1024;
    while (std::fabs(v) >= 1023.5 && i + 1 < kPrefixes.size()) {
      v /= 1024;
      ++i;
    }
    return fmt::format("{} {}", sig3(v), kPrefixes[i]);
  }
  if (si_unit(unit) && a > 0) {
    static const std::array<const char*, 8> kUp = {"k", "M", "G", "T", "P", "E", "Z", "Y"};
    static const std::array<const char*, 4> kDown = {"m", "u", "n", "p"};
    if (a >= 999.5) {
      double v = value;
      std::size_t i = 0;
      v /= 1000;
      while (std::fabs(v) >= 999.5 && i + 1 < kUp.size()) {
        v /= 1000;
        ++i;
      }
      return fmt::format("{} {}{}", sig3(v), kUp[i], unit);
    }
    if (a < 1 && unit == "s") {
      double v = value;
      std::size_t i = 0;
      v *= 1000;
      while (std::fabs(v) < 0.9995 && i + 1 < kDown.size()) {
        v *= 1000;
        ++i;
      }
      return fmt::format("{} {}{}", sig3(v), kDown[i], unit);
    }
    return fmt::format("{} {}", sig3(value), unit);
  }
  if (unit.empty()) return number(value);
  return fmt::format("{} {}", number(value), unit);
}

bool within(double value, const Quantity& q) {
  if (!std::isfinite(value)) return false;
  if (q.whole && std::floor(value) != value) return false;
  if (q.low_open ? value <= q.low : value < q.low) return false;
  if (q.high_open ? value >= q.high : value > q.high) return false;
  return true;
}

std::string hint(double value, const Quantity& q) {
  if (!std::isfinite(value) || value <= 0) return "";
  switch (q.hint) {
    case Hint::None: return "";
    case Hint::Exponent:
      for (int e : q.exponents) {
        if (e == 0) break;
        if (within(value * std::pow(10.0, e), q)) return fmt::format("did you mean {}e{}?", number(value), e);
      }
      return "";
    case Hint::Gibibytes:
      if (value < kMib && within(value * kGib, q)) return fmt::format("did you mean {} GiB = {}?", number(value), number(value * kGib));
      return "";
    case Hint::BytesAsGib:
      if (within(value / kGib, q)) return fmt::format("did you mean {} GiB? the value looks like bytes", rounded(value / kGib));
      return "";
    case Hint::Percent:
      if (value >= 2 && value <= 100 && within(value / 100, q)) return fmt::format("did you mean {} ({}%)?", number(value / 100), number(value));
      return "";
    case Hint::BytesAsMb:
      if (value > q.high && within(value / kMib, q)) return fmt::format("did you mean {} MB? the value looks like bytes", rounded(value / kMib));
      return "";
  }
  return "";
}

double check(double value, const Quantity& q, const std::string& where, const std::string& raw) {
  if (within(value, q)) return value;
  std::string text = raw.empty() ? number(value) : raw;
  std::string h = hint(value, q);
  std::string tail = h.empty() ? "" : " (" + h + ")";
  if (!std::isfinite(value)) fail(where, "{} is not a finite number; expected {}{}", text, q.what, range_phrase(q));
  if (q.whole && std::floor(value) != value) fail(where, "{} is not a whole number; expected {}{}", text, q.what, range_phrase(q));
  if (q.unit.empty() || q.unit == "fraction" || q.whole) {
    fail(where, "{} is out of range; expected {}{}{}{}", text, q.what, q.unit == "fraction" ? " (a fraction)" : "", range_phrase(q), tail);
  }
  fail(where, "{} is {}; expected {} in {}{}{}", text, in_unit(value, q.unit), q.what, q.unit, range_phrase(q), tail);
}

}  // namespace sapp::units
