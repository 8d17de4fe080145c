// The attributes reconcile gives a message beyond its columns: its first bytes
// (payload.prefix) and what a protocol processor logged where it ended ("protocol" and the
// processor's own keys), for stream and datagram messages alike; and the witness that
// pairs a request with its reply where a protocol may answer out of order
// (capture/protocols/descriptor.h). Internal to reconcile.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "capture/event_log.h"
#include "reconcile/connection_table.h"
#include "reconcile/message_splitter.h"
#include "reconcile/reconcile.h"
#include "trace/trace.h"

namespace weft::reconcile {

// The value of the witness attribute (the DNS id, ...) that the processor of `protocol`
// logged in `logged`, or null when the protocol has no witness or it was not logged.
// `logged` may be null.
const std::string* FindWitness(uint8_t protocol, const capture::Boundary* logged);

class MessageAttributes {
 public:
  // All three must outlive it.
  MessageAttributes(std::span<const capture::EventLog> logs, TraceBuilder& builder,
                    ReconcileSummary& summary)
      : logs_(logs),
        builder_(builder),
        summary_(summary),
        payload_key_(builder.String(kPayloadAttribute)),
        protocol_key_(builder.String(kProtocolAttribute)) {}

  // payload.prefix: the message's first bytes as lowercase hex, from the prefix of
  // logs[log].payloads[payload] (none if `payload` < 0) less its first `skip` bytes (a
  // message that begins inside the call that logged it); nothing when none is left.
  void AddPayload(uint32_t row, uint32_t log, int32_t payload, int64_t skip = 0);

  // payload.prefix of a stream message `span` of `definer`'s sends (`sends`) or receives:
  // its first bytes as the calls that moved them logged them, up to the prefix length the
  // first call's log asked for (--payload-prefix N). The first call's prefix goes on with
  // the next calls' while each logged all it moved: a sender that writes a message in
  // pieces (tinyproxy writes each header line by itself) still shows its first N bytes.
  void AddStreamPayload(uint32_t row, const ConnectionEnd& definer, bool sends,
                        const MessageSpan& span);

  // "protocol" for a message that ended at a boundary `protocol`'s processor found, and
  // what it logged there (`logged`, may be null); counted in the summary by protocol.
  void AddProtocol(uint32_t row, uint8_t protocol, const capture::Boundary* logged);

 private:
  void AddPayloadBytes(uint32_t row, std::string_view bytes);

  std::span<const capture::EventLog> logs_;
  TraceBuilder& builder_;
  ReconcileSummary& summary_;
  StringId payload_key_;
  StringId protocol_key_;
};

}  // namespace weft::reconcile
