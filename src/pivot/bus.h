// The bus that carries live queries to the agents in instrumented programs and their
// partial results back (Pivot Tracing §2.2 Figure 2, §5 "Pivot Tracing Agent").
//
// Subjects are dot-separated tokens, as in NATS: "weft.pivot.results.7". A subscription's
// pattern may end in ">" (every subject with that prefix of tokens) and use "*" for one
// token. The same rules hold on every transport, so the agent and the front end never
// know which one they run over:
//
//   local            in one process (tests, and a front end talking to itself)
//   unix:PATH        the embedded bus: a hub on a Unix socket that needs no server; the
//                    first `weft pivot` front end to find none becomes it
//   nats://HOST:PORT a NATS server, across hosts
//
// Publishing never blocks the calling thread: a message that cannot be sent now is
// queued up to a bound, and past it dropped and counted. A lost connection is retried
// in the background; the program it is loaded into never notices.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace weft::pivot {

struct BusCounters {
  uint64_t published = 0;  // messages handed to the transport
  uint64_t dropped = 0;    // messages lost: queue full, or no connection for too long
  uint64_t received = 0;   // messages delivered to subscribers
  uint64_t reconnects = 0;
};

class Bus {
 public:
  // Called on the bus's own thread, never on the publisher's; must not block for long.
  using Handler = std::function<void(std::string_view subject, std::string_view payload)>;

  virtual ~Bus() = default;

  // Queues `payload` for `subject`; never blocks. A message that cannot be queued is
  // dropped and counted (BusCounters::dropped), not reported as an error: the caller is
  // a program that must go on.
  virtual void Publish(std::string_view subject, std::string_view payload) = 0;
  // Delivers every later message whose subject matches `pattern` to `handler`. Returns an
  // id for Unsubscribe.
  virtual Result<uint64_t> Subscribe(std::string_view pattern, Handler handler) = 0;
  virtual void Unsubscribe(uint64_t id) = 0;
  // Blocks (up to `timeout_ms`) until what was published before the call has been sent.
  virtual Status Flush(int timeout_ms) = 0;
  virtual BusCounters counters() const = 0;
  // "local", "unix:/run/user/0/weft-pivot.sock", "nats://127.0.0.1:4222"
  virtual std::string url() const = 0;
};

// Whether `subject` matches `pattern` ("a.*.c", "a.>").
bool SubjectMatches(std::string_view pattern, std::string_view subject);

// An in-process bus: Publish delivers to the subscribers of this object on a thread of its
// own. For tests and for a front end and agent in one process.
std::unique_ptr<Bus> MakeLocalBus();

}  // namespace weft::pivot
