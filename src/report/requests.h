// Requests one by one: a precise algorithm gives every request its own path
// instance, so one slow request can be looked at by itself — each message with when it
// was sent, how long each call took, and what the protocol processors said of it
// (http.url, sql, ...). Times come from the trace the paths were inferred from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "paths/path_set.h"
#include "trace/trace.h"

namespace weft {

struct RequestTiming {
  uint32_t instance = 0;
  TimeNs start = 0;    // the root's send (its receive when the sender was not traced)
  TimeNs latency = 0;  // the last time seen in the instance minus `start`
};

// The `n` slowest instances, slowest first (ties by instance). An error if `trace` is not
// the trace `set` was inferred from.
Result<std::vector<RequestTiming>> SlowestRequests(const PathSet& set, const Trace& trace,
                                                   size_t n);

// One instance as an indented tree, a line per CALL or free-form message: its offset
// from the request's start, sender→receiver, how long until its RETURN came back (on the
// caller's clock), and its attributes. RETURNs are folded into their CALLs.
std::string FormatRequest(const PathSet& set, const Trace& trace, const RequestTiming& request);

}  // namespace weft
