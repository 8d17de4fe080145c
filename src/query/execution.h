// What the advice interpreter runs over: tracepoints, their events, and one request's
// execution as a script of tracepoint firings, branches and joins. The offline side
// (query/blackbox.h) makes these from a trace and its inferred paths; tests make them by
// hand; the live side (pivot/) fires the same advice from real tracepoints instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "query/value.h"

namespace weft::query {

// A place where a query can observe an event, and the variables it exports
// (Pivot Tracing §3, "Tracepoints"). Index into `exports` is an export id.
struct Tracepoint {
  std::string name;
  std::vector<std::string> exports;
  std::string description;  // one line, for --tracepoints
};

// The values of the events that tracepoints fired. An event is an index that the source
// chose; the interpreter only passes it back.
class EventSource {
 public:
  virtual ~EventSource() = default;
  // Export `export_id` of `tracepoint` (indices into the tracepoint list the query was
  // compiled against) for `event`; Null if this event has no such value.
  virtual Value Export(uint32_t tracepoint, uint32_t export_id, uint32_t event) const = 0;
  // When the event happened, for --interval.
  virtual TimeNs Time(uint32_t event) const = 0;
};

// One request's execution, linearised in an order consistent with happened-before. The
// execution runs in segments (a thread of control: one node's work on one request, or a
// message in flight); each segment has its own baggage. Segment 0 starts the request
// with empty baggage.
enum class StepOp : uint8_t {
  kFire,    // `tracepoint` fires for `event` in `segment`: its advice runs on its baggage
  kBranch,  // segment `other` starts with a split of `segment`'s baggage (a message sent)
  kJoin,    // `segment` joins the baggage `other` ended with (a reply received)
};

struct ExecutionStep {
  StepOp op = StepOp::kFire;
  uint32_t segment = 0;
  uint32_t other = 0;       // kBranch, kJoin
  uint32_t tracepoint = 0;  // kFire
  uint32_t event = 0;       // kFire
};

struct Execution {
  std::vector<ExecutionStep> steps;
  uint32_t segments = 1;  // segment ids are below this
  // The probability that this request happened as described (1 for precise algorithms
  // and truth; below 1 for linking's alternatives): every tuple it emits counts this much.
  double weight = 1;
};

// What a query needs from a replay: the firings of which tracepoints (those with advice),
// and whether the branches and joins between them matter (only when the query joins).
// A source may leave out what is not needed.
struct ReplayNeeds {
  std::vector<bool> tracepoints;  // by tracepoint index; empty: all
  bool causality = true;

  bool Wants(uint32_t tracepoint) const {
    return tracepoints.empty() || (tracepoint < tracepoints.size() && tracepoints[tracepoint]);
  }
};

}  // namespace weft::query
