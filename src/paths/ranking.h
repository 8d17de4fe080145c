// Ranking path patterns: by count, latency, or WAP5 §6.6's composite metrics.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "paths/path_set.h"

namespace weft {

// How patterns are ranked. The last two are WAP5 §6.6's composite metrics.
enum class PatternOrder {
  kCount,         // "count": most instances first
  kLatency,       // "latency": largest total latency (count x mean end-to-end latency) first
  kExpected,      // "expected": largest expected count first
  kProbability,   // "probability": expected / count, the mean instance probability
  kExpectedSqrt,  // "expected-sqrt": expected / sqrt(count)
};
Result<PatternOrder> ParsePatternOrder(std::string_view name);
std::string_view PatternOrderName(PatternOrder order);
double PatternScore(const PathPattern& pattern, PatternOrder order);  // larger ranks first

// Pattern indices best first; ties broken by key so the ranking is deterministic.
std::vector<uint32_t> RankPatterns(const PathSet& set, PatternOrder order);

}  // namespace weft
