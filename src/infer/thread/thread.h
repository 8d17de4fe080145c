// --algo thread: vPath's precise paths from threads and connections (Tak et al., ATC'09,
// §2.2-2.3 and §3.3).
//
// vPath assumes synchronous request/reply connections and that the thread which sends a
// reply is the thread that did all the request's work in between (a dispatcher may have
// read the request: only the last thread of the chain counts). Then, per node:
//   - a request and its reply are paired per connection, in order (reconcile's call ids);
//   - a CALL sent by thread T belongs to the request whose reply T sends next, if that
//     request had arrived by then (otherwise, and if T never replies again, it is a root:
//     a client's request, or work the assumption cannot place);
//   - a RETURN belongs to the CALL it answers.
// Across nodes the connection carries the request on. Each request is its own instance
// with probability 1, so one slow request can be looked at by itself.
//
// Where the assumption breaks, vPath gives wrong paths, not none: a hand-off pool (one
// thread calls downstream, another replies), a SEDA stage that calls downstream before the
// reply stage, an event loop with many requests on one thread, and calls made in parallel
// by helper threads (docs/precise.md measures each).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

// instances and messages_in_instances: the requests found and the messages in them;
// root_calls: calls that start a path; calls_outside_requests: calls sent by a thread
// whose next reply answers a later request; returns_without_call; overlapping_requests:
// requests a thread took in while it still owed a reply to another; messages_in_cycles;
// root_calls_from_servers: root calls sent by a thread that never replies (nor does any
// thread that started it) of a node whose other threads answer requests: work handed to
// it through memory that capture did not see (a queue without a condition variable), which
// vPath cannot follow; calls_through_handoffs: calls placed by following HANDOFF links to
// the thread that handed the work over (weft's addition); calls_through_ambiguous_handoffs:
// of them, those that followed a link reconcile marked as a guess;
// calls_handoffs_led_astray: calls of a thread that answers requests whose hand-offs led
// to no request or to one already answered, placed in the request the thread's own next
// reply answers instead (an interpreter lock's passes, recorded as hand-offs).
struct ThreadCounters {
  int64_t instances = 0;
  int64_t messages_in_instances = 0;
  int64_t root_calls = 0;
  int64_t calls_outside_requests = 0;
  int64_t returns_without_call = 0;
  int64_t overlapping_requests = 0;
  int64_t messages_in_cycles = 0;
  int64_t root_calls_from_servers = 0;
  int64_t calls_through_handoffs = 0;
  int64_t calls_through_ambiguous_handoffs = 0;
  int64_t calls_handoffs_led_astray = 0;
  // Calls a traced thread read that no RETURN answers: one-way messages (a broker's
  // publishes, sent as calls where no processor says otherwise) or calls still open when
  // the trace ended. What the server did for them lies in no tree.
  int64_t calls_never_answered = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const {
    return {{"instances", instances},
            {"messages_in_instances", messages_in_instances},
            {"root_calls", root_calls},
            {"calls_outside_requests", calls_outside_requests},
            {"returns_without_call", returns_without_call},
            {"overlapping_requests", overlapping_requests},
            {"messages_in_cycles", messages_in_cycles},
            {"root_calls_from_servers", root_calls_from_servers},
            {"calls_through_handoffs", calls_through_handoffs},
            {"calls_through_ambiguous_handoffs", calls_through_ambiguous_handoffs},
            {"calls_handoffs_led_astray", calls_handoffs_led_astray},
            {"calls_never_answered", calls_never_answered}};
  }
};
using ThreadInference = Inference<ThreadCounters>;

// "N calls read by a traced thread were never answered (...): ..." (calls_never_answered),
// for weft infer and --algo auto to say.
std::string DescribeUnansweredCalls(int64_t calls);

// An error if no message has a thread (the trace was not reconciled from a capture).
Result<ThreadInference> InferThread(const Trace& trace);

}  // namespace weft
