// What the precise algorithms (thread, fragment) share: a parent per message turned into
// path instances, and a RETURN's CALL found by call id.
#pragma once

#include <span>
#include <vector>

#include "core/id.h"
#include "core/status.h"
#include "infer/call_pairs.h"
#include "paths/path_set_builder.h"
#include "trace/trace.h"

namespace weft {

// How the precise algorithms pair calls: by call id alone, in trace order. Reconcile gives
// a CALL and its RETURN one call id (connection and sequence), so the id names one call
// wherever the two were seen; a call id used by two CALLs answers with the later CALL
// sent before the RETURN (Answer::kLatest).
inline constexpr CallPairingOptions kPreciseCallPairing = {
    .nodes = false,
    .call_id = true,
    .require_call_id = true,
    .order = CallPairingOptions::Order::kTrace,
    .answer = CallPairingOptions::Answer::kLatest,
};

// Per message, the CALL a RETURN answers under kPreciseCallPairing (invalid for other
// messages, and for a RETURN whose CALL is not in the trace).
std::vector<MessageId> CallsAnswered(const Trace& trace);

// What AddForest counted.
struct ForestCounts {
  int64_t instances = 0;
  int64_t messages_in_instances = 0;
  int64_t messages_in_cycles = 0;  // on a parent cycle, so under no root
};

// Adds one instance per root (a message whose parent is invalid) holding it and all its
// descendants, with probability 1. Messages on a parent cycle reach no root and are left
// out (counted in messages_in_cycles).
Result<ForestCounts> AddForest(const Trace& trace, std::span<const MessageId> parent,
                               PathSetBuilder& builder);

}  // namespace weft
