#include "query/result.h"

#include <algorithm>
#include <cmath>

namespace weft::query {

bool SameAnswer(const QueryResult& a, const QueryResult& b) {
  if (a.columns != b.columns || a.rows.size() != b.rows.size()) return false;
  for (size_t r = 0; r < a.rows.size(); ++r) {
    const ResultRow &x = a.rows[r], &y = b.rows[r];
    if (x.interval_start != y.interval_start || x.values.size() != y.values.size() ||
        !NearlyEqual(Value::Float(x.weight), Value::Float(y.weight))) {
      return false;
    }
    for (size_t c = 0; c < x.values.size(); ++c) {
      if (!NearlyEqual(x.values[c], y.values[c])) return false;
    }
  }
  return true;
}

}  // namespace weft::query
