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
};

// What a StreamBoundary refers to: the logged record with its attributes or bytes.
using BoundaryLookup = std::function<const capture::Boundary*(const StreamBoundary&)>;

// The messages of one direction, by the offsets of their last frames. `frames`: the
// direction's http2 boundaries, sorted by offset; `pieces`: the header-block pieces logged
// by the same end for the same direction (any order). Frames whose attributes cannot be
// read are skipped; a header block with a piece missing, or that does not decode, leaves
// that message and every later one in the direction without header fields.
std::vector<Http2Message> AssembleHttp2Messages(std::span<const StreamBoundary* const> frames,
                                                std::span<const StreamBoundary* const> pieces,
                                                const BoundaryLookup& lookup);

// The attributes a message gets: http2.stream; http.method and http.url (:path) for a
// request, http.status for a response; http.request_id and http.traceparent (x-request-id
// and traceparent, cut to 64 bytes, as the HTTP/1.x processor logs them); for gRPC (content-type
// application/grpc...) grpc.method (the :path) and grpc.status (the trailers' grpc-status).
std::vector<std::pair<std::string, std::string>> Http2Attributes(const Http2Message& m);

}  // namespace weft::reconcile
