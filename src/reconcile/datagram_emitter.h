// Datagrams -> messages (reconcile.h, UDP and Unix datagram sockets): one message per
// datagram, matched across its two ends by datagram_matcher.h. Internal to reconcile.
//
// A socket that was bound explicitly serves a well-known port or path: datagrams to it
// are CALLs, from it RETURNs; between two such (or two unbound) sockets they are MSG. A
// socket that connected is a client even when it bound a port or path to be answered at; a
// socketpair's ends are both unbound (MSG both ways, as on a stream socketpair). Call ids
// pair the k-th CALL and the k-th RETURN of a (client, server) endpoint pair:
// "u<flow>.<k>"; a DNS query and its answer by their id instead (the protocol's witness,
// capture/protocols/descriptor.h), "u<flow>.w<id>", since a resolver may answer one
// socket's queries in any order.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <span>
#include <utility>

#include "capture/event_log.h"
#include "reconcile/connection_table.h"
#include "reconcile/datagram_matcher.h"
#include "reconcile/message_attributes.h"
#include "reconcile/node_namer.h"
#include "reconcile/reconcile.h"
#include "trace/trace.h"

namespace weft::reconcile {

class DatagramEmitter {
 public:
  // Everything given must outlive the emitter.
  DatagramEmitter(std::span<const capture::EventLog> logs, std::span<const DatagramSocket> sockets,
                  NodeNamer& namer, TraceBuilder& builder, ReconcileSummary& summary)
      : logs_(logs),
        sockets_(sockets),
        namer_(namer),
        builder_(builder),
        summary_(summary),
        attributes_(logs, builder, summary) {}

  // Datagrams must be given in the order their call ids are to be numbered.
  void Emit(const DatagramMessage& m);

 private:
  static bool Serves(const DatagramSocket& s) { return s.bound && !s.connected; }
  // Fills the sender and receiver of `m`: nodes, endpoints, times and threads.
  void SetEnds(const DatagramMessage& m, MessageRecord& record);
  // CALL or RETURN and a call id when exactly one side serves; MSG otherwise.
  void SetKindAndCallId(const DatagramMessage& m, const capture::Boundary* described,
                        MessageRecord& record);
  void Count(const DatagramMessage& m, int64_t bytes);

  struct Flow {
    uint32_t number, calls, returns;
  };
  std::span<const capture::EventLog> logs_;
  std::span<const DatagramSocket> sockets_;
  NodeNamer& namer_;
  TraceBuilder& builder_;
  ReconcileSummary& summary_;
  MessageAttributes attributes_;
  absl::flat_hash_map<std::pair<StringId, StringId>, Flow> flows_;  // (client, server) endpoints
};

}  // namespace weft::reconcile
