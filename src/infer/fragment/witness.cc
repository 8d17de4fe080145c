// Witness matching (witness.h): one pass over inbound CALLs in receive order, with the
// outbound CALLs sent before each one queued per witness in send order.
#include "infer/fragment/witness.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <string_view>
#include <tuple>

namespace weft {
namespace {

// The part of a witness that must be equal (the protocol, then two values), and the
// optional identifiers that must be equal where both sides carry them.
struct Witness {
  uint8_t protocol = 0;  // 0: none, 1: HTTP, 2: DNS
  StringId first, second;
  StringId request_id, traceparent;
};

class WitnessReader {
 public:
  explicit WitnessReader(const Trace& trace) : fields_(trace) {}

  Witness Of(MessageId m) const {
    using F = ForwardedFields;
    const F::Values v = fields_.Of(m);
    if (v[F::kMethod].valid() && v[F::kUrl].valid())
      return {1, v[F::kMethod], v[F::kUrl], v[F::kRequestId], v[F::kTraceparent]};
    if (v[F::kDnsId].valid() && v[F::kDnsName].valid())
      return {2, v[F::kDnsId], v[F::kDnsName], StringId(), StringId()};
    return {};
  }

 private:
  ForwardedFields fields_;
};

bool OptionalEqual(StringId a, StringId b) { return !a.valid() || !b.valid() || a == b; }

}  // namespace

ForwardedFields::ForwardedFields(const Trace& trace) : trace_(trace) {
  static constexpr std::array<std::string_view, kFieldCount> kKeys = {
      "http.method",   "http.url", "http.request_id", "http.traceparent",  "sql",
      "dns.id",        "dns.name", "grpc.method",     "memcached.command", "memcached.key",
      "redis.command", "redis.key"};
  for (size_t k = 0; k < kKeys.size(); ++k) keys_[k] = trace.strings().Find(kKeys[k]);
}

ForwardedFields::Values ForwardedFields::Of(MessageId m) const {
  Values values;
  for (const Attribute& a : trace_.AttributesOf(m)) {
    if (!a.key.valid()) continue;
    for (size_t k = 0; k < keys_.size(); ++k) {
      if (a.key == keys_[k]) values[k] = a.value;
    }
  }
  return values;
}

WitnessLinks LinkWitnesses(const Trace& trace, const std::vector<MessageId>& call_of) {
  const TraceColumns& c = trace.columns();
  const size_t n = trace.size();
  WitnessLinks links;
  links.continues.assign(n, MessageId());
  // When each outbound CALL's reply came back to its sender, and when each inbound CALL's
  // reply began to be sent (kNoTime: not seen).
  std::vector<TimeNs> answered(n, kNoTime), replied(n, kNoTime);
  for (size_t i = 0; i < n; ++i) {
    MessageId call = call_of[i];
    if (!call.valid()) continue;
    if (c.recv_time[i] != kNoTime) answered[call.value()] = c.recv_time[i];
    if (c.send_time[i] != kNoTime) replied[call.value()] = c.send_time[i];
  }
  // A side is traced when its thread and time were logged; the other side of these CALLs
  // logged neither.
  auto traced_send = [&](size_t i) {
    return c.send_time[i] != kNoTime && c.sender_thread[i].valid();
  };
  auto traced_recv = [&](size_t i) {
    return c.recv_time[i] != kNoTime && c.receiver_thread[i].valid();
  };
  std::vector<uint32_t> outbound, inbound;
  for (size_t i = 0; i < n; ++i) {
    if (c.kind[i] != MessageKind::kCall) continue;
    if (traced_send(i) && c.recv_time[i] == kNoTime && !c.receiver_thread[i].valid())
      outbound.push_back(uint32_t(i));
    if (traced_recv(i) && c.send_time[i] == kNoTime && !c.sender_thread[i].valid())
      inbound.push_back(uint32_t(i));
  }
  if (outbound.empty() || inbound.empty()) return links;
  std::stable_sort(outbound.begin(), outbound.end(),
                   [&](uint32_t a, uint32_t b) { return c.send_time[a] < c.send_time[b]; });
  std::stable_sort(inbound.begin(), inbound.end(),
                   [&](uint32_t a, uint32_t b) { return c.recv_time[a] < c.recv_time[b]; });

  WitnessReader reader(trace);
  struct Pending {
    uint32_t message;
    Witness witness;
  };
  // Per witness (protocol and the two values that must be equal): outbound CALLs sent so
  // far that may still be continued, in send order. Used and answered ones are dropped as
  // they are met, so a queue holds about as many as are in flight.
  absl::flat_hash_map<std::tuple<uint8_t, StringId, StringId>, std::vector<Pending>> queues;
  size_t next_out = 0;
  for (uint32_t in : inbound) {
    const TimeNs received = c.recv_time[in];
    for (; next_out < outbound.size() && c.send_time[outbound[next_out]] < received; ++next_out) {
      uint32_t out = outbound[next_out];
      Witness w = reader.Of(MessageId(out));
      if (w.protocol != 0) queues[{w.protocol, w.first, w.second}].push_back({out, w});
    }
    Witness w = reader.Of(MessageId(in));
    if (w.protocol == 0) continue;
    auto it = queues.find(std::make_tuple(w.protocol, w.first, w.second));
    if (it == queues.end()) {
      ++links.unlinked;
      continue;
    }
    std::vector<Pending>& queue = it->second;
    // Not outstanding: its reply had come back before this CALL was received.
    std::erase_if(queue, [&](const Pending& p) {
      return answered[p.message] != kNoTime && answered[p.message] <= received;
    });
    int fits = 0;
    size_t chosen = queue.size();
    for (size_t k = 0; k < queue.size(); ++k) {
      const Witness& o = queue[k].witness;
      if (!OptionalEqual(o.request_id, w.request_id) ||
          !OptionalEqual(o.traceparent, w.traceparent))
        continue;
      // The module answers the outbound CALL only after the inbound one was answered.
      TimeNs back = answered[queue[k].message];
      if (back != kNoTime && replied[in] != kNoTime && back <= replied[in]) continue;
      if (fits++ == 0) chosen = k;  // the earliest sent
    }
    if (fits == 0) {
      ++links.unlinked;
      continue;
    }
    links.continues[in] = MessageId(queue[chosen].message);
    ++links.linked;
    links.ambiguous += fits > 1;
    queue.erase(queue.begin() + ptrdiff_t(chosen));  // each outbound CALL continues once
  }
  return links;
}

}  // namespace weft
