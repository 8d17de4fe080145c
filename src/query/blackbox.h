// Pivot Tracing's tracepoints on programs nobody instrumented: the events that capture and
// inference recovered, offered as tracepoints, and each inferred path instance replayed as
// a request execution so that advice runs over it with its baggage travelling exactly as
// it would live (docs/query.md, "Black-box tracepoints").
//
// Tracepoints, each firing at one end of one message of an instance:
//   Request  a CALL arriving at a node: that node's work on it starts (the first in an
//            instance is the request entering the system)
//   Call     a CALL a node sends
//   Reply    the RETURN a node sends at the end of its work on a CALL
//   Send     every message, at its sender
//   Receive  every message, at its receiver
// Every tracepoint exports the same variables; what they mean depends on the end:
//   host, procname, procid   from the node's name ("host:program[pid]"; the whole name
//                            when it has no such form), Pivot's defaults
//   tracepoint, timestamp    Pivot's defaults; timestamp in ns on the node's clock
//   node, thread, peer       this end's node and thread, the other end's node
//   kind, bytes              CALL, RETURN or MSG; payload bytes
//   latency                  Request and Reply: the node's work on the call (reply sent -
//                            call received); Call: the round trip the caller saw (reply
//                            received - call sent); else null
//   and each protocol attribute the trace holds (http.method, http.url, http.status, sql,
//   redis.command, dns.name, ...), null on messages without it.
// An end that was not observed (no send time: the sender was not traced) fires nothing.
//
// Segments and happened-before (execution.h): each message in flight is a segment,
// branched from the work segment that sent it. A CALL or MSG's segment goes on as the
// receiver's work on it; a RETURN's segment is joined into the caller's work when the
// reply arrives. A node's work fires its events in its own time order, so two calls a node
// made in sequence see each other's replies in the baggage and two it made in parallel do
// not, as baggage would travel live.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "paths/path_set.h"
#include "query/execution.h"
#include "query/query.h"
#include "trace/trace.h"

namespace weft::query {

// The black-box tracepoints of `trace`: the five above, exporting the fixed variables and
// the attribute keys found in the trace.
std::vector<Tracepoint> BlackBoxTracepoints(const Trace& trace);

// The events of `paths` over `trace` (both must outlive it), and each instance's execution.
class BlackBoxEvents : public EventSource {
 public:
  // An error if `paths` was not inferred from `trace` (fingerprint or size mismatch).
  static Result<BlackBoxEvents> Make(const Trace& trace, const PathSet& paths);

  const std::vector<Tracepoint>& tracepoints() const { return tracepoints_; }
  size_t executions() const { return paths_->instance_count(); }
  // Instance i of the paths as an execution; `out` is reused to avoid allocation. Only
  // the firings `needs` wants; without causality, every firing in one segment.
  void BuildExecution(size_t i, Execution& out, const ReplayNeeds& needs = {});

  Value Export(uint32_t tracepoint, uint32_t export_id, uint32_t event) const override;
  TimeNs Time(uint32_t event) const override;

 private:
  BlackBoxEvents(const Trace& trace, const PathSet& paths);

  // A node's name split as Pivot's defaults want it: views into the trace's node table.
  struct NodeParts {
    std::string_view host, procname;
    int64_t procid = -1;  // -1: the name has no pid
  };
  // One thing that happens in a work segment of the execution being built: message `j`
  // (an index within the instance) sent from it, or an answer arriving into it.
  struct WorkItem {
    uint32_t work = 0;  // whose work: an index within the instance; the size: the client's
    bool last = false;  // the RETURN that ends the work on a CALL
    TimeNs key = 0;     // time on the work's node
    uint32_t tie = 0;   // message id, to break ties
    bool arrival = false;
    uint32_t j = 0;
  };

  void SetPartners(size_t instance);

  const Trace* trace_;
  const PathSet* paths_;
  std::vector<Tracepoint> tracepoints_;
  std::vector<NodeParts> node_parts_;      // per trace node
  std::vector<StringId> attribute_keys_;   // export kFixedExports + k reads key k
  std::vector<uint32_t> attribute_begin_;  // per message, then the end: its attributes
  std::vector<uint32_t> partner_;          // per message: CALL <-> its RETURN, or none
  // BuildExecution's buffers, reused.
  std::vector<uint32_t> send_work_, work_of_, segment_, item_begin_;
  std::vector<uint8_t> answer_;
  std::vector<WorkItem> items_;
  std::vector<std::pair<uint32_t, uint32_t>> stack_;  // (work, next item)
};

// Compiles nothing: runs `query` over every instance of `events` (progress on stderr when
// it is a terminal) and returns the result.
QueryResult RunOffline(std::shared_ptr<const CompiledQuery> query, BlackBoxEvents& events,
                       const EvaluateOptions& options);

}  // namespace weft::query
