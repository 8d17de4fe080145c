// Pattern ranking (paths/ranking.h).
#include "paths/ranking.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace weft {

constexpr PatternOrder kOrders[] = {PatternOrder::kCount, PatternOrder::kLatency,
                                    PatternOrder::kExpected, PatternOrder::kProbability,
                                    PatternOrder::kExpectedSqrt};

std::string_view PatternOrderName(PatternOrder order) {
  switch (order) {
    case PatternOrder::kCount:
      return "count";
    case PatternOrder::kLatency:
      return "latency";
    case PatternOrder::kExpected:
      return "expected";
    case PatternOrder::kProbability:
      return "probability";
    case PatternOrder::kExpectedSqrt:
      return "expected-sqrt";
  }
  return "?";
}

Result<PatternOrder> ParsePatternOrder(std::string_view name) {
  for (PatternOrder order : kOrders) {
    if (PatternOrderName(order) == name) return order;
  }
  return Status::InvalidArgument(
      "unknown order '{}' (available: count, latency, expected, probability, expected-sqrt)", name);
}

double PatternScore(const PathPattern& p, PatternOrder order) {
  switch (order) {
    case PatternOrder::kCount:
      return double(p.count);
    case PatternOrder::kLatency:
      return p.latency.sum();
    case PatternOrder::kExpected:
      return p.expected_count;
    case PatternOrder::kProbability:
      return p.count ? p.expected_count / double(p.count) : 0;
    case PatternOrder::kExpectedSqrt:
      return p.count ? p.expected_count / std::sqrt(double(p.count)) : 0;
  }
  return 0;
}

std::vector<uint32_t> RankPatterns(const PathSet& set, PatternOrder order) {
  std::vector<uint32_t> rank(set.patterns.size());
  std::iota(rank.begin(), rank.end(), 0);
  auto score = [&](const PathPattern& p) { return PatternScore(p, order); };
  std::sort(rank.begin(), rank.end(), [&](uint32_t a, uint32_t b) {
    const PathPattern& pa = set.patterns[a];
    const PathPattern& pb = set.patterns[b];
    double sa = score(pa), sb = score(pb);
    if (sa != sb) return sa > sb;
    return pa.key < pb.key;
  });
  return rank;
}

}  // namespace weft
