// Baselines: the rules a newcomer would write in ten lines, as algorithms, so that every
// accuracy table can show the floor beside the statistical algorithms (docs/baselines.md).
//
//   latest-open    each CALL's parent is the most recently opened call still open at its
//                  sender: the latest CALL into the sender whose RETURN was not yet seen;
//                  none open: a root. Right whenever a node works on one request at a
//                  time, or its calls go out in series right after the latest arrival.
//   earliest-open  the same with the earliest open call: right when a node keeps working
//                  for its oldest request while newer ones queue.
//
// Both walk the trace once in its order (SortTime: one clock, as Project 5's traces had)
// and pair calls with returns as nesting does (NestingCallPairing: earliest open call with
// the same call id, or between the same nodes without ids). A RETURN's parent is its
// CALL; a MSG message and an unmatched RETURN are roots of their own.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

enum class BaselineRule : uint8_t { kLatestOpen, kEarliestOpen };

// "latest-open" or "earliest-open": the --algo name.
std::string_view BaselineName(BaselineRule rule);

// calls, returns and call_pairs met; roots: calls that found no open call at their
// sender; other_messages: MSG messages and unmatched RETURNs, each left a root.
struct BaselineCounters {
  int64_t calls = 0;
  int64_t returns = 0;
  int64_t call_pairs = 0;
  int64_t roots = 0;
  int64_t other_messages = 0;
  CounterList List() const {
    return {{"calls", calls},
            {"returns", returns},
            {"call_pairs", call_pairs},
            {"roots", roots},
            {"other_messages", other_messages}};
  }
};
using BaselineInference = Inference<BaselineCounters>;

Result<BaselineInference> InferBaseline(const Trace& trace, BaselineRule rule);

}  // namespace weft
