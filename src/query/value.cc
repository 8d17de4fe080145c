#include "query/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace weft::query {

bool operator==(const Value& a, const Value& b) { return CompareValues(a, b) == 0; }

int CompareValues(const Value& a, const Value& b) {
  auto rank = [](const Value& v) { return v.is_null() ? 0 : v.is_number() ? 1 : 2; };
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 0) return 0;
  if (ra == 2) {
    int c = a.s.compare(b.s);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.type == ValueType::kInt && b.type == ValueType::kInt) {
    return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
  }
  double x = a.AsDouble(), y = b.AsDouble();
  return x < y ? -1 : x > y ? 1 : 0;
}

size_t HashValue(const Value& v) {
  switch (v.type) {
    case ValueType::kNull:
      return 0x9e3779b97f4a7c15ull;
    case ValueType::kInt:
      return std::hash<double>()(double(v.i));  // equal to the same number as a float
    case ValueType::kFloat:
      return std::hash<double>()(v.f);
    case ValueType::kString:
      return std::hash<std::string_view>()(v.s);
  }
  return 0;
}

bool NearlyEqual(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.AsDouble(), y = b.AsDouble();
    return std::fabs(x - y) <= 1e-9 * std::max(1.0, std::fabs(x));
  }
  return a == b;
}

std::string FormatValue(const Value& v) {
  switch (v.type) {
    case ValueType::kNull:
      return "-";
    case ValueType::kInt:
      return fmt::format("{}", v.i);
    case ValueType::kFloat:
      if (std::isfinite(v.f) && v.f == std::trunc(v.f) && std::fabs(v.f) < 1e15) {
        return fmt::format("{}", int64_t(v.f));
      }
      return fmt::format("{:.6g}", v.f);
    case ValueType::kString:
      return std::string(v.s);
  }
  return "";
}

}  // namespace weft::query
