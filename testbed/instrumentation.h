// The testbed's Pivot Tracing instrumentation: its tracepoints (docs/testbed.md lists
// every one and its exports), the agent each server process starts, and the baggage a
// request carries from thread to thread inside a server.
//
// Until a query is woven, a tracepoint costs one relaxed load. Built with
// WEFT_NO_TRACEPOINTS (weft/tracepoint.h), the testbed is what it was before it was
// instrumented: the tracepoints compile to nothing, requests carry no baggage (frames
// and HTTP requests go without it) and servers start no agent. Only
// bench/pivot_testbed_overhead builds it so (library weft_testbed_uninstrumented), as the
// baseline of the instrumentation's cost.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "weft/tracepoint.h"
#ifndef WEFT_NO_TRACEPOINTS
#include "pivot/baggage.h"
#include "pivot/current_baggage.h"
#endif

namespace weft::testbed {

// Every tracepoint's last export is `time`, the wall clock in ns when it fired (Pivot's
// built-in time, for latencies between tracepoints; on one host, one clock). Where the
// firing would read the clock only for it, it reads it only while advice is woven
// (TimeIfWoven); unwoven it passes 0.
//
// A request arrived at a server: type, bytes (on the wire), client (peer endpoint),
// server (node name), time (of receipt: Reply's latency starts here).
extern ::weft::pivot::Tracepoint kRequestTracepoint;
// A server calls downstream: type (the callee's request type), bytes, tier, to (the
// callee's node name), server (the caller's node name), replicas (the servers the balancer
// chose `to` among, in the order listed: "storage0,storage2"), time (before the send).
extern ::weft::pivot::Tracepoint kCallTracepoint;
// A server replies: type, status ("ok" or "error"), bytes, latency (ns from receipt to
// reply: time less the Request's time), server, time.
extern ::weft::pivot::Tracepoint kReplyTracepoint;
// A request's simulated disk read (a request type's `disk_bytes`), as it starts: type,
// bytes, server, duration (ns the read will take, a slow_server's extra included), time.
extern ::weft::pivot::Tracepoint kDiskReadTracepoint;
// A request waited in a hand-off queue of a pool model: wait (ns), stage, server, time (as
// it leaves the queue).
extern ::weft::pivot::Tracepoint kQueueWaitTracepoint;

// The wall clock while `tracepoint` has advice woven, else 0 (no clock read).
int64_t TimeIfWoven(const ::weft::pivot::Tracepoint& tracepoint);

#ifndef WEFT_NO_TRACEPOINTS

// The baggage of one request inside a server, as it moves between threads: `live` is the
// request's pivot::Baggage, installed as pivot::CurrentBaggage() (what the agent's advice
// packs into and unpacks from) while a thread works on the request.
struct RequestBaggage {
  ::weft::pivot::Baggage live;
  bool installed = false;  // a RequestBaggageScope has it installed now
  // The reply carries the baggage back: the caller keeps one. Another server does (every
  // tier's caller but the first's, whose caller is the load client), even when its call
  // carried none (an empty baggage travels as nothing); the client does when it sent one.
  bool from_caller = false;
};

// Whether the reply to the request of `bag` carries baggage back (see from_caller).
inline bool ReplyCarriesBaggage(const RequestBaggage& bag) { return bag.from_caller; }

// Pivot's request/response join, on this thread's current baggage:
// A call's baggage: a branch split off the current baggage, serialized (the caller keeps
// its side).
std::string BaggageForCall();
// A reply's baggage: the current baggage, serialized for the caller (the request ends
// here), without the instances the caller sent (pivot::Baggage::SerializeReplyTo); `packs`
// gets the baggage's count of packs, for BaggageForReplyChanged.
std::string BaggageForReply(uint64_t& packs);
// A reply's baggage again, after the Reply tracepoint's advice ran: true, with the new bytes
// in `bytes`, if that advice changed it (packed something since BaggageForReply counted
// `packs`), else false and `bytes` as it was, with nothing serialized again.
bool BaggageForReplyChanged(std::string& bytes, uint64_t packs);
// Joins the baggage a reply carried back (serialized: the frame's field, which the reply
// needs no more) into the current baggage; nothing if it carried none or it does not
// deserialize.
void JoinReplyBaggage(std::string&& bytes);
// A request's baggage as it arrives, into `bag` (the request's own member): deserialized
// lazily (left empty when `bytes` is empty), keeping `bytes` (the frame's field: the
// request needs it no more). `from_server`: the caller is another server (see from_caller).
void ReceiveBaggage(RequestBaggage& bag, std::string&& bytes, bool from_server);

// A branch of this thread's current baggage (Table 4's split), for a thread spawned for the
// request; JoinCurrentBaggage joins it back when that thread ends. An unused branch joins
// back as nothing.
RequestBaggage BranchCurrentBaggage();
void JoinCurrentBaggage(RequestBaggage&& branch);

// While alive, the request's baggage is this thread's current baggage (both of the above),
// installed in place (pivot::InstalledBaggage): what the thread does to it stays in the
// request's. A scope within a scope of the same baggage does nothing.
class RequestBaggageScope {
 public:
  explicit RequestBaggageScope(RequestBaggage& bag) : bag_(bag), active_(!bag.installed) {
    if (!active_) return;
    bag_.installed = true;
    previous_ = ::weft::pivot::ExchangeCurrentBaggage(&bag_.live);
  }
  ~RequestBaggageScope() {
    if (!active_) return;
    ::weft::pivot::ExchangeCurrentBaggage(previous_);
    bag_.installed = false;
  }
  RequestBaggageScope(const RequestBaggageScope&) = delete;
  RequestBaggageScope& operator=(const RequestBaggageScope&) = delete;

 private:
  RequestBaggage& bag_;
  bool active_;
  ::weft::pivot::Baggage* previous_ = nullptr;
};

#else  // WEFT_NO_TRACEPOINTS: no baggage; every call below compiles to nothing.

struct RequestBaggage {};
inline bool ReplyCarriesBaggage(const RequestBaggage&) { return false; }
inline std::string BaggageForCall() { return {}; }
inline std::string BaggageForReply(uint64_t&) { return {}; }
inline bool BaggageForReplyChanged(std::string&, uint64_t) { return false; }
inline void JoinReplyBaggage(std::string&&) {}
inline void ReceiveBaggage(RequestBaggage&, std::string&&, bool) {}
inline RequestBaggage BranchCurrentBaggage() { return {}; }
inline void JoinCurrentBaggage(RequestBaggage&&) {}
class RequestBaggageScope {
 public:
  explicit RequestBaggageScope(RequestBaggage&) {}
  RequestBaggageScope(const RequestBaggageScope&) = delete;
  RequestBaggageScope& operator=(const RequestBaggageScope&) = delete;
};

#endif  // WEFT_NO_TRACEPOINTS

}  // namespace weft::testbed
