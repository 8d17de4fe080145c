// What the precise algorithms (thread, fragment) share: a parent per message turned into
// path instances, and a RETURN's CALL found by call id.
#pragma once

#include <span>
#include <vector>

#include "core/id.h"
#include "core/status.h"
#include "infer/paths.h"
#include "trace/trace.h"

namespace weft {

// Per message, the CALL with the same call id that a RETURN answers (invalid for other
// messages, and for a RETURN whose CALL is not in the trace). Reconcile gives a CALL and
// its RETURN one call id (connection and sequence); a call id used by two CALLs answers
// with the later CALL sent before the RETURN.
std::vector<MessageId> CallsAnswered(const Trace& trace);

// Adds one instance per root (a message whose parent is invalid) holding it and all its
// descendants, with probability 1. Messages on a parent cycle reach no root and are left
// out; their number is returned. Counters "instances" and "messages_in_instances" are
// added to the builder.
Result<uint64_t> AddForest(const Trace& trace, std::span<const MessageId> parent,
                           PathSetBuilder& builder);

}  // namespace weft
