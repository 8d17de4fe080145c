// A value in a query tuple: null, an integer, a float or a string. Strings are views into
// storage that outlives the query run (the trace's name tables, the query's own text), so
// a Value is small, trivially copyable and never allocates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace weft::query {

enum class ValueType : uint8_t { kNull = 0, kInt, kFloat, kString };

struct Value {
  ValueType type = ValueType::kNull;
  int64_t i = 0;       // kInt
  double f = 0;        // kFloat
  std::string_view s;  // kString

  static Value Null() { return {}; }
  static Value Int(int64_t v) { return {ValueType::kInt, v, 0, {}}; }
  static Value Float(double v) { return {ValueType::kFloat, 0, v, {}}; }
  static Value String(std::string_view v) { return {ValueType::kString, 0, 0, v}; }

  bool is_null() const { return type == ValueType::kNull; }
  bool is_number() const { return type == ValueType::kInt || type == ValueType::kFloat; }
  double AsDouble() const { return type == ValueType::kInt ? double(i) : f; }
};

// Equal values: numbers compare by value (2 == 2.0), strings by content; null equals only
// null. A total order for sorting and grouping: null < numbers < strings.
bool operator==(const Value& a, const Value& b);
int CompareValues(const Value& a, const Value& b);
size_t HashValue(const Value& v);
// Equal, or numbers within a relative 1e-9: what two evaluations that add the same
// floating-point terms in another order give.
bool NearlyEqual(const Value& a, const Value& b);

// As output shows it: integers plainly, floats with up to 6 significant decimals (an
// integral float as an integer), strings unquoted, null as "-".
std::string FormatValue(const Value& v);

}  // namespace weft::query
