// Time in weft: signed 64-bit nanoseconds since the Unix epoch, one clock per host.
// Offsets between hosts are data (estimated in reconcile), never silently applied.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/status.h"

namespace weft {

using TimeNs = int64_t;  // a point in time or a duration, in nanoseconds

inline constexpr TimeNs kNoTime = std::numeric_limits<TimeNs>::min();  // "not observed"
inline constexpr TimeNs kMicrosecond = 1'000;
inline constexpr TimeNs kMillisecond = 1'000'000;
inline constexpr TimeNs kSecond = 1'000'000'000;

// A trace timestamp: seconds with a fraction ("1047680084.482205", at most 9 digits after
// the point) or integer nanoseconds ("1047680084482205000"). A number without a point is
// read as nanoseconds; "-" prefixes are allowed. Exact: no floating point on the way.
Result<TimeNs> ParseTimestamp(std::string_view text);

// A duration with a unit: "200ms", "1.5s", "10us", "250ns", "2m", "1h"; "0" alone is 0.
Result<TimeNs> ParseDuration(std::string_view text);

// "1047680084.482205000": seconds with all nine fraction digits; exact inverse of
// ParseTimestamp.
std::string FormatTimestamp(TimeNs t);

// Short human form for reports: "812ns", "3.40us", "51.2ms", "2.00s", "1h02m".
std::string FormatDuration(TimeNs d);

}  // namespace weft
