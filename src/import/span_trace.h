// Spans → a message trace with ground truth (Project 5 §3's black-box view of a traced
// system): a span whose parent is in another service is a call from the parent's service
// to its own, so it becomes a CALL from the parent's service node to its service node at
// the span's start and a RETURN back at its end, one timestamp each, as span data has. A
// span whose parent is in its own service is work inside that service: it makes no
// message, and the calls under it nest in the call into its service. A root span is a
// call from a client node (--client) into its service.
//
// Ground truth follows paths/path_set.h's convention: a CALL's parent is the CALL into
// the service it was made from (the nearest enclosing span that made a CALL), a RETURN's
// parent is its CALL; each root span and everything under it is one path (path= numbered
// in order of the root's start). The span id is the call id that pairs a CALL with its
// RETURN.
//
// Spans exported by weft (export/) carry weft.caller (the node that made the call, which
// may be the span's own service), weft.kind=MSG for a one-way message and
// weft.unanswered=1 for a call no RETURN closed; reading them back gives the same trees.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "import/span.h"
#include "trace/trace.h"

namespace weft {

struct SpanTraceOptions {
  bool strip_truth = false;       // leave out path= and parent=, for a trace to infer from
  std::string client = "client";  // the node that calls root spans
};

// What the conversion counted: anything it could not be sure of is here, not hidden.
struct SpanTraceCounters {
  uint64_t spans = 0;
  uint64_t traces = 0;          // distinct trace ids
  uint64_t paths = 0;           // root spans: one path each
  uint64_t calls = 0;           // spans that became a CALL (and a RETURN)
  uint64_t nested = 0;          // spans inside their parent's service: no message
  uint64_t orphans = 0;         // a parent id that names no span of the trace: made roots
  uint64_t duplicates = 0;      // a span id seen before in its trace: left out
  uint64_t unreachable = 0;     // in a cycle of parent ids, under no root: left out
  uint64_t outside_parent = 0;  // starts before or ends after its parent (clock skew?)
  uint64_t messages = 0;
};

Result<Trace> SpansToTrace(std::span<const Span> spans, const SpanTraceOptions& options,
                           SpanTraceCounters* counters = nullptr);

}  // namespace weft
