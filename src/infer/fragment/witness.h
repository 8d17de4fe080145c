// Message witnesses through untraced modules (BorderPatrol, EuroSys'08 §2.1 and §3.1).
//
// A module capture does not trace (a proxy, a forwarding resolver started outside weft
// capture) is one black box: the forward scan sees a traced module send it a CALL and a
// traced module receive a CALL from it, and nothing in between. Where the module passes a
// request on in the protocol it came in, an identifier visible in both messages — a
// witness — says which of its inputs a given output continues: "the url in a proxy server
// request that is forwarded to the origin server" (§2.1). BorderPatrol's DNS processor
// tracks a query's id the same way (§6.2).
//
// The witnesses, from the protocol processors' attributes (docs/protocols.md):
//   - HTTP: http.method and http.url, which must be equal; http.request_id (X-Request-Id)
//     and http.traceparent (W3C traceparent), which must be equal where both messages
//     carry them (a proxy that adds one where the client sent none still matches);
//   - DNS: dns.id and dns.name (a forwarding resolver that keeps the id).
//
// Inbound CALLs (sender untraced, receiver traced) are taken in receive order. One
// continues the earliest sent outbound CALL (sender traced, receiver untraced) with the
// same witness that was sent before it was received, that continues no other inbound
// CALL, and whose reply came back after the inbound CALL's reply was sent (the module
// answers once it has its answer: the two exchanges nest). Where several fit the choice
// is a guess, and is counted: with the same URL on every request, concurrent requests
// make it one. Measured on the same nginx traces (docs/precise.md), nesting turns a few
// wrong links into none (an inbound CALL left unlinked starts a path, which is better
// than joining the wrong one); taking the outbound CALL answered first instead of the
// earliest sent was right for 10-30 points fewer requests.
//
// Departure from BorderPatrol: it assumes witnesses are accurate when they exist; weft
// trusts them as far as equality but also orders them in time, since a URL is not unique.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/id.h"
#include "trace/trace.h"

namespace weft {

// The attributes a proxy passes on unchanged (docs/protocols.md), read by message: what
// witnesses are made of, and what fragment matches a request set aside with the call that
// forwards it by (set_aside.h).
class ForwardedFields {
 public:
  enum Field : uint8_t {
    kMethod,  // http.method
    kUrl,     // http.url
    kRequestId,
    kTraceparent,
    kSql,
    kDnsId,
    kDnsName,
    kGrpcMethod,
    kMemcachedCommand,
    kMemcachedKey,
    kRedisCommand,
    kRedisKey,
    kFieldCount
  };
  using Values = std::array<StringId, kFieldCount>;

  explicit ForwardedFields(const Trace& trace);
  // Invalid where the message carries no such attribute.
  Values Of(MessageId m) const;

 private:
  const Trace& trace_;
  Values keys_;  // each field's attribute key in the trace's strings
};

struct WitnessLinks {
  // Per message: for an inbound CALL, the outbound CALL it continues (else invalid).
  std::vector<MessageId> continues;
  int64_t linked = 0;     // inbound CALLs given an outbound CALL
  int64_t ambiguous = 0;  // of those, chosen among more than one that fit
  int64_t unlinked = 0;   // inbound CALLs with a witness that no outbound CALL matched
};

// `call_of`: per RETURN the CALL it answers (CallsAnswered), to know which outbound CALLs
// are still outstanding.
WitnessLinks LinkWitnesses(const Trace& trace, const std::vector<MessageId>& call_of);

}  // namespace weft
