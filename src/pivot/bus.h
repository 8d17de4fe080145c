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
  // messages handed to the transport: local and unix count them when queued; nats when
  // libnats took them (into its reconnect buffer while disconnected). A message queued
  // and later lost with a connection counts in both `published` and `dropped`.
  uint64_t published = 0;
  uint64_t dropped = 0;   // messages lost: queue full, or no connection for too long
  uint64_t received = 0;  // messages delivered to subscribers
  uint64_t reconnects = 0;
  // Embedded hub only: connections closed because they sent a frame that does not decode
  // (frame.h).
  uint64_t bad_frames = 0;
  // Whether a message published now would go out at once: the client is connected to
  // its hub or server (always true for local and for the hub itself). An agent publishes
  // no partial results while it is false: they would only arrive after the interval they
  // belong to had been shown (bus_nats.cc, bus_unix.cc).
  bool connected = true;
};

class Bus {
 public:
  // Called on the bus's own thread, never on the publisher's; must not block for long.
  // local and unix: one thread runs every handler of the bus, in order. nats: libnats
  // runs each subscription's handler on that subscription's delivery thread, so handlers
  // of different subscriptions may run at the same time.
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

struct OpenBusOptions {
  // "unix:PATH" only: if no hub holds PATH, become it (a `weft pivot` front end). Agents
  // leave this false: a program being traced never hosts the bus, it only connects.
  bool may_host = false;
  // The bound on messages waiting to be sent (while disconnected, or faster than the
  // transport takes them); past it, Publish drops and counts.
  size_t max_queued_messages = 4096;
  // nats:// only: libnats's reconnect buffer, in bytes of protocol (about subject +
  // payload + 40 per message); past it, publishes while disconnected drop and count.
  size_t max_queued_bytes = 8 << 20;
};

// Opens the bus named by `url` (see the top of this file):
//   ""                the environment variable WEFT_PIVOT_BUS, or if that is unset or
//                     empty, DefaultBusUrl()
//   "local"           MakeLocalBus()
//   "unix:PATH"       the embedded bus at PATH
//   "nats://HOST:PORT"
// Neither transport needs its peer to be up: a client that finds no hub or server keeps
// retrying in the background and queues, then drops, what is published meanwhile. The
// only errors are a malformed URL, and a hub that cannot create its socket.
Result<std::unique_ptr<Bus>> OpenBus(std::string_view url, const OpenBusOptions& options = {});

// "unix:$XDG_RUNTIME_DIR/weft-pivot.sock" when XDG_RUNTIME_DIR is set, else
// "unix:/tmp/weft-pivot-UID/bus.sock". The directory of the second is created mode 0700
// by whoever opens it first, and refused if it exists and is not this user's own or is
// open to others.
std::string DefaultBusUrl();

}  // namespace weft::pivot
