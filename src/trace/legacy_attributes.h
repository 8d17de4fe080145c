// Attributes that weft once wrote for what is now a column of the trace. The binary and
// text readers turn them into the column, so files written before still load as they
// meant. Internal to trace/.
#pragma once

#include <string_view>

namespace weft {

// A CALL's connect time as decimal nanoseconds: TraceColumns::connect_time now.
inline constexpr std::string_view kLegacyConnectedAttribute = "net.connected";

}  // namespace weft
