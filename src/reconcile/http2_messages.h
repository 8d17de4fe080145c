// HTTP/2 messages back from frames (docs/reconcile.md "Multiplexed messages"). Capture's
// http2 processor ends a "message" at every stream frame (DATA, HEADERS, CONTINUATION,
// RST_STREAM, and PUSH_PROMISE for its header block), since frames of many streams
// interleave on one connection and no contiguous byte range is one request. Here each
// direction's frames are gathered per stream into messages: a stream's frames up to
// END_STREAM (or RST_STREAM) in that direction, its header blocks put back together from
// the header-block pieces capture logged and decoded in the order they were sent (HPACK's
// table is the direction's). Internal to reconcile.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "capture/event_log.h"
#include "reconcile/connection_table.h"
#include "reconcile/http2_headers.h"

namespace weft::reconcile {

struct Http2Message {
  uint32_t stream = 0;
  int64_t begin = 0;                  // stream offset of its first frame's first byte
  int64_t end = 0;                    // just past its last frame's last byte
  int64_t bytes = 0;                  // its own frames' bytes (9 + payload each), not the span
  bool complete = false;              // END_STREAM or RST_STREAM ended it (else the stream stopped)
  bool headers_known = false;         // its first header block was decoded
  std::vector<HeaderField> headers;   // the first header block's fields
  std::vector<HeaderField> trailers;  // a later block's (gRPC's grpc-status), if any
  const StreamBoundary* last = nullptr;  // the boundary of its last frame
  // A pushed response (RFC 9113 §8.4): the stream whose PUSH_PROMISE promised this one
  // (0: not pushed), and the request the promise carried (its :method, :path).
  uint32_t pushed_by = 0;
  std::vector<HeaderField> promised_request;
};

// What a StreamBoundary refers to: the logged record with its attributes or bytes.
using BoundaryLookup = std::function<const capture::Boundary*(const StreamBoundary&)>;

// The messages of one direction, by the offsets of their last frames. `frames`: the
// direction's http2 boundaries, sorted by offset; `pieces`: the header-block pieces logged
// by the same end for the same direction (any order). Frames whose attributes cannot be
// read are skipped; a header block with a piece missing, or that does not decode, leaves
// that message and every later one in the direction without header fields.
// `table_size_limit`: the largest SETTINGS_HEADER_TABLE_SIZE the receiving peer announced
// (PeerHeaderTableSize; 4,096 when it announced none). The sender's encoder signals every
// change of its table size in its header blocks (RFC 7541 §4.2), so a decoder that allows
// the largest announced size follows it exactly, whenever each SETTINGS took effect.
// A stream's frames after its message ended (a RST_STREAM after END_STREAM, frames in
// flight after a reset) start no second message: they are counted in *late_frames.
std::vector<Http2Message> AssembleHttp2Messages(std::span<const StreamBoundary* const> frames,
                                                std::span<const StreamBoundary* const> pieces,
                                                const BoundaryLookup& lookup,
                                                uint32_t table_size_limit = 4096,
                                                uint64_t* late_frames = nullptr);

// The largest SETTINGS_HEADER_TABLE_SIZE among a direction's reported SETTINGS frames
// (capture reports those that set it), at least the protocol's initial 4,096.
uint32_t PeerHeaderTableSize(std::span<const StreamBoundary* const> frames,
                             const BoundaryLookup& lookup);

// The attributes a message gets: http2.stream; http.method and http.url (:path) for a
// request, http.status for a response; http.request_id and http.traceparent (x-request-id
// and traceparent, cut to 64 bytes, as the HTTP/1.x processor logs them); for gRPC (content-type
// application/grpc...) grpc.method (the :path) and grpc.status (the trailers' grpc-status);
// for a pushed response http2.pushed_by and the promised request's http.method and http.url.
std::vector<std::pair<std::string, std::string>> Http2Attributes(const Http2Message& m);

}  // namespace weft::reconcile
