// Ground truth of a testbed run: the servers' and the client's truth logs become a message
// trace whose messages carry path= (one per request) and parent= in the convention of
// infer/paths.h, so `weft infer --algo truth` and `weft eval` read it like any trace with
// ground truth. CALL messages carry the attribute testbed.request=<request type>; error
// replies carry testbed.error=1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "testbed/topology.h"
#include "trace/trace.h"

namespace weft::testbed {

// Reads every DIR/*.truth log.
Result<Trace> BuildTruthTrace(const std::string& dir);

struct TruthCheck {
  uint64_t requests = 0;  // paths (one per request the client sent)
  uint64_t answered = 0;  // whose root call has a reply
  uint64_t errors = 0;    // whose root reply is an error
  uint64_t shaped = 0;    // ok requests whose tree matches the call graph
};

// Checks that every path is one well-formed tree rooted at a client CALL, that every
// CALL has at most one RETURN (exactly one when `complete`), and that every request
// answered ok has the shape the topology's call graph allows: per CALL into a tier, the
// number of nested CALLs to each (tier, request) within the sum of its call specs' counts.
Result<TruthCheck> CheckTruth(const Trace& trace, const Topology& topology, bool complete);

// How many calls connections carried at once, from the truth alone: per (caller node,
// callee node), the number of connections the caller used and the most calls awaiting a
// reply on one of them at any moment. A call counts from its send (logged before the
// write) to its reply's receipt (logged after the read), a reply at the same instant as a
// send first, so for answered calls the count never overstates: 2 or more means the caller
// wrote a request while an earlier one on that connection was still unanswered
// (pipelining). A call with no logged reply counts until the end. A connection is a pair of
// endpoints (a port reused later counts once). Sorted by caller, then callee.
struct ConnectionUse {
  std::string caller, callee;
  uint32_t connections = 0;
  uint32_t max_in_flight = 0;
};
std::vector<ConnectionUse> CallsInFlight(const Trace& trace);

}  // namespace weft::testbed
