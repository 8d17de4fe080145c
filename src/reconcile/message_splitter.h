// Where the messages of one direction of a connection begin and end (reconcile.h step 3).
//
// Without protocol knowledge a message is a run of sends in one direction until the
// direction turns (vPath §3.2's normalisation; WAP5's "fat messages"): two requests
// written back to back before any reply are one message. Where capture's protocol
// processors logged message boundaries (BorderPatrol §3.3), the direction is cut at each
// boundary offset instead, so pipelined requests are one message each, and a boundary in
// the middle of a call (two requests in one write or one read) cuts that call too. After
// a direction's last boundary (a processor that gave up on bytes it did not understand,
// a connection closed mid-message) the direction turns cut again.
//
// Boundaries are taken from the sender when it logged any for the direction, else from
// the receiver: both count the same stream offsets (docs/formats.md, boundary record).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "reconcile/connection_table.h"

namespace weft::reconcile {

// One message: a range of bytes of a direction and the calls that moved it on the end
// that defined it.
struct MessageSpan {
  size_t first = 0, last = 0;  // indices into that end's io: the calls that moved the
                               // message's first and last byte (both in the direction)
  int64_t begin = 0, end = 0;  // byte offsets [begin, end) in the direction's stream
  int64_t first_begin = 0;     // offset of the first byte `first` moved (<= begin)
  size_t run = 0;              // which direction-turn run (0, 1, ...) its first byte is in
  const StreamBoundary* boundary = nullptr;  // the protocol boundary at `end`, if any
};

// The boundaries for the direction from `sender` to `receiver` (either may be null): the
// sender's sent ones if it logged any, else the receiver's received ones; sorted by
// offset, one per offset.
std::vector<const StreamBoundary*> DirectionBoundaries(const ConnectionEnd* sender,
                                                       const ConnectionEnd* receiver);

// Cuts `definer`'s sends (`sends` true) or receives into messages: at every offset in
// `boundaries` (sorted, as DirectionBoundaries gives them) and, after the last of them,
// at direction turns. With no boundaries these are exactly the direction-turn runs.
std::vector<MessageSpan> SplitMessages(const ConnectionEnd& definer, bool sends,
                                       std::span<const StreamBoundary* const> boundaries);

// Walks an end's receives in offset order to find the one holding a given byte.
class ReadCursor {
 public:
  explicit ReadCursor(const ConnectionEnd* end) : end_(end) {}
  // The read that delivered byte `offset`, or null if the reads stop before it. Offsets
  // asked for must not decrease.
  const StreamIo* ReadHolding(int64_t offset);
  int64_t BytesRead() {
    ReadHolding(INT64_MAX);
    return read_;
  }

 private:
  const ConnectionEnd* end_;
  size_t index_ = 0;
  int64_t read_ = 0;
};

}  // namespace weft::reconcile
