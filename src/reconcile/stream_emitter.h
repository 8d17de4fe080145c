// Stream connections and pipes -> messages (reconcile.h steps 3 and 4): each direction of
// a connection cut into messages (message_splitter.h) and lined up with the other end's
// reads by byte offset; a pipe's writes grouped until its reader drains it. Internal to
// reconcile.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "capture/event_log.h"
#include "reconcile/connection_table.h"
#include "reconcile/end_pairing.h"
#include "reconcile/grpc_handoffs.h"
#include "reconcile/http2_messages.h"
#include "reconcile/message_attributes.h"
#include "reconcile/message_splitter.h"
#include "reconcile/node_namer.h"
#include "reconcile/reconcile.h"
#include "trace/trace.h"

namespace weft::reconcile {

class StreamEmitter {
 public:
  // Everything given must outlive the emitter.
  StreamEmitter(std::span<const capture::EventLog> logs, NodeNamer& namer, TraceBuilder& builder,
                ReconcileSummary& summary)
      : logs_(logs),
        namer_(namer),
        builder_(builder),
        summary_(summary),
        attributes_(logs, builder, summary) {}

  // Connection number `connection` (1, 2, ... in order of opening): its CALLs then its
  // RETURNs (MSGs both ways for a socketpair).
  void Emit(const ConnectionPair& pair, uint32_t connection);

  // Pipe number `number`. A pipe flows one way, so it has no direction turns: a message
  // is a run of writes that ends when the reader has drained the pipe (a read completes
  // exactly at the last byte written so far) before the next write. With the reader
  // untraced every write is a message; with the writer untraced every read is.
  void EmitPipe(const ConnectionEnd& pipe, uint32_t number);

  // The HTTP/2 requests emitted so far whose header fields were decoded, as each traced end
  // saw them: what gRPC's API records are tied to (grpc_handoffs.h).
  const std::vector<GrpcWireCall>& grpc_wire_calls() const { return grpc_wire_calls_; }

 private:
  // The ends of one direction of a connection and how its messages are named.
  struct Direction {
    const ConnectionEnd* sender;  // either may be null, not both
    const ConnectionEnd* receiver;
    MessageKind kind;
    uint32_t connection;
    bool ordered;  // call ids by position (descriptor.h replies_in_order)
    bool greets;   // the server's first message answers no request (server_greets)
  };
  void EmitDirection(const Direction& d);
  // An HTTP/2 direction: messages assembled per stream from its frames (http2_messages.h),
  // each with call id "c<connection>.w<stream>" so that a stream's request and response
  // pair.
  void EmitHttp2Direction(const Direction& d, const ConnectionEnd& definer,
                          std::span<const StreamBoundary* const> frames);
  // Notes a request's metadata hash at each traced end (grpc_wire_calls).
  void NoteWireCall(const Direction& d, const Http2Message& m, const MessageRecord& record,
                    uint32_t row);
  // The first call of a connection: when its sender's thread connected and when its
  // receiver's thread accepted, where those threads send and read it (TraceColumns).
  static void SetOpenTimes(const Direction& d, MessageRecord& record);
  // Fills the sender and receiver of a message spanning `span` of direction `d`.
  void SetEnds(const Direction& d, const MessageSpan& span, ReadCursor& cursor,
               MessageRecord& record);
  std::string CallId(const Direction& d, uint32_t sequence, const MessageSpan& span) const;
  uint32_t AddPipeMessage(const ConnectionEnd& pipe, uint32_t number, uint32_t sequence,
                          const StreamIo* first_write, const StreamIo* completing_read,
                          int64_t bytes);

  std::span<const capture::EventLog> logs_;
  NodeNamer& namer_;
  TraceBuilder& builder_;
  ReconcileSummary& summary_;
  MessageAttributes attributes_;
  std::vector<GrpcWireCall> grpc_wire_calls_;
};

}  // namespace weft::reconcile
