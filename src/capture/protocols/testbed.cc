// The testbed's frames (testbed/wire.h) as a protocol processor (BorderPatrol §3.3: a
// length count in the stream). A frame is a 4-byte big-endian payload length, then the
// payload: type (1 request, 2 reply, 3 error), request type index (2 bytes, big-endian),
// ids and padding. Both directions carry the same frames, so one processor serves both.
//
// The frame header is collected byte by byte (it may arrive split anywhere); the rest of
// the payload is counted, never buffered.
#include "capture/protocols/processors.h"

namespace weft::capture::protocols::internal {

namespace {

// testbed/wire.h: kPayloadHeader and kMaxPayload (the preload library cannot include
// wire.h, which needs the C++ library).
constexpr uint32_t kPayloadHeader = 27;
constexpr uint32_t kMaxPayload = 1u << 20;
// Length, type and request type: what the processor looks at.
constexpr uint32_t kHeaderBytes = 7;

struct TestbedState {
  uint8_t header[kHeaderBytes];
  uint8_t have;        // header bytes collected of the current frame
  uint32_t remaining;  // payload bytes after the header still to come
};

}  // namespace

void InitTestbed(Parser* parser) { InitState<TestbedState>(parser); }

size_t ConsumeTestbed(Parser* parser, const uint8_t* data, size_t length, bool* ended) {
  TestbedState* s = StateOf<TestbedState>(parser);
  size_t i = 0;
  while (s->have < kHeaderBytes) {
    if (i == length) return length;
    s->header[s->have++] = data[i++];
    if (s->have == 4) {
      uint32_t size = (uint32_t(s->header[0]) << 24) | (uint32_t(s->header[1]) << 16) |
                      (uint32_t(s->header[2]) << 8) | uint32_t(s->header[3]);
      if (size < kPayloadHeader || size > kMaxPayload) return Fail(parser, length, ended);
      s->remaining = size - (kHeaderBytes - 4);
    } else if (s->have == 5 && (s->header[4] < 1 || s->header[4] > 3)) {
      return Fail(parser, length, ended);
    }
  }
  size_t take = Min(length - i, s->remaining);
  s->remaining -= uint32_t(take);
  i += take;
  if (s->remaining != 0) return i;

  ClearAttributes(parser);
  if (s->header[4] == 1) {
    AddDecimalAttribute(parser, "testbed.request",
                        (uint32_t(s->header[5]) << 8) | uint32_t(s->header[6]));
  }
  s->have = 0;
  *ended = true;
  return i;
}

}  // namespace weft::capture::protocols::internal
