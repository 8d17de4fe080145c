// gRPC calls from the wire to the application's threads (docs/reconcile.md "gRPC"):
// HANDOFF links between the thread that read or wrote an RPC's HTTP/2 stream and the
// application thread that took the call from gRPC or started it, from capture's gRPC API
// records (capture/preload/grpc_calls.cc). Internal to reconcile.
//
// A server call's take (kOpGrpcTake) is the stream received by the same process with the
// same application metadata (capture/grpc_metadata.h), read before the take; a client
// call's start (kOpGrpcStart on a call the process created, kOpGrpcCreate) is the stream
// sent by the same process with the same metadata, written after the start. Each wire
// stream is one call's at most. Where more than one stream fits (calls whose metadata are
// alike), nothing is linked and the call is counted: the hash ties two observations of one
// message, it does not choose between messages. A start on a taken call (a server's reply)
// is the RETURN the process sent on that call's stream, known from the take.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "capture/event_log.h"
#include "core/time.h"
#include "reconcile/connection_table.h"
#include "trace/trace.h"

namespace weft::reconcile {

// An HTTP/2 request (a CALL) as one traced end of its stream saw it.
struct GrpcWireCall {
  uint32_t log = 0;                       // the log of the end that saw it
  bool sent = false;                      // that end sent it (else received it)
  uint64_t hash = 0;                      // its application metadata's (GrpcFieldHash summed)
  int32_t tid = 0;                        // the thread that wrote its first frame or read its last
  TimeNs time = 0;                        // then (epoch)
  uint32_t row = 0;                       // the message's row in the trace builder
  MessageKind kind = MessageKind::kCall;  // or the RETURN a server sent on the stream
  StringId call_id;                       // connection and stream: a CALL's and its RETURN's
};

struct GrpcHandoffCounts {
  uint64_t takes = 0;            // server calls taken by application threads
  uint64_t takes_linked = 0;     // of them, tied to their stream: a link
  uint64_t takes_ambiguous = 0;  // several streams with the same metadata fitted: no link
  uint64_t starts = 0;           // client calls started
  uint64_t starts_linked = 0;
  uint64_t starts_ambiguous = 0;
  uint64_t answers_linked = 0;  // replies to taken calls tied to the RETURN on their stream
};

// Adds a HANDOFF link per take and per start tied to its wire stream.
void AddGrpcHandoffs(std::span<const capture::EventLog> logs, const BootOffsets& boot_offsets,
                     std::span<const GrpcWireCall> wire,
                     const std::function<NodeId(uint32_t log, int32_t tid)>& node_of,
                     TraceBuilder& builder, GrpcHandoffCounts& counts);

}  // namespace weft::reconcile
