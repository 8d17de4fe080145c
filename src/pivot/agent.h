// The Pivot Tracing agent (Pivot Tracing §5, "Pivot Tracing Agent"): one thread per
// process that receives queries from the bus, weaves their advice into this process's
// tracepoints, and publishes what the advice emitted, as partial aggregates per query
// per interval, for the front end to merge with other processes'.
//
//   auto bus = ...;                                   // a pivot::Bus (bus.h)
//   auto agent = weft::pivot::Agent::Start(*bus);     // until destroyed
//
// or, in a program that includes only weft/tracepoint.h:
//
//   weft::pivot::StartAgentFromEnvironment();         // WEFT_PIVOT_BUS=unix:/path
//
// The agent subscribes to kControlPattern (protocol.h). Per install message it compiles
// the query against the message's catalog and this process's tracepoints, weaves it (a
// query that names none of this process's tracepoints simply has no advice here), and
// from then on publishes a PartialResults on ResultsSubject(id) at the end of every
// interval, aligned to multiples of the interval on the wall clock; the last, marked
// final, as the query is uninstalled. A list request gets this process's description.
// A message it cannot decode is counted (AgentCounters::rejected) and otherwise ignored.
//
// The program is never blocked by the agent: the advice runs on the firing thread and
// aggregates into a buffer of its own, which the agent harvests without making it wait
// (live_query.h); the bus's Publish never blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "pivot/bus.h"

namespace weft::pivot {

struct AgentOptions {
  std::string host;  // empty: gethostname()
};

struct AgentCounters {
  uint64_t installed = 0;    // install messages accepted
  uint64_t uninstalled = 0;  // queries removed
  uint64_t rejected = 0;     // messages that did not decode
  uint64_t failed = 0;       // installs refused: the query did not compile here, or its
                             // baggage slots were taken (PartialResults::refused)
  uint64_t published = 0;    // partial results published
  uint64_t lists = 0;        // list requests answered
  uint64_t unsent = 0;       // partial results not published: the bus was not connected
};

class Agent {
 public:
  // Subscribes to the control subjects on `bus` (which must outlive the agent) and starts
  // the agent's thread.
  static Result<std::unique_ptr<Agent>> Start(Bus& bus, AgentOptions options = {});
  // Unweaves every query (publishing its final partials), unsubscribes, stops the thread.
  ~Agent();

  AgentCounters counters() const;
  // The ids of the queries installed now.
  std::vector<std::string> installed() const;
  // Blocks until every control message delivered to the agent before the call has been
  // handled (so a test knows an install took effect).
  void Sync();

  struct State;

 private:
  explicit Agent(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The bus an agent started from the environment uses, opened once and kept for the
// process's life: "local" is the process-wide in-process bus (SharedLocalBus), "default"
// the embedded bus at DefaultBusUrl(), anything else OpenBus(url) as a client (an agent
// never hosts the hub).
Result<Bus*> OpenAgentBus(std::string_view url);
// The process-wide in-process bus: a front end and agents in one process meet here.
Bus& SharedLocalBus();

}  // namespace weft::pivot
