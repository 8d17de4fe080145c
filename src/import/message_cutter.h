// One direction of a reassembled TCP connection -> messages, the way reconcile cuts a
// captured connection (reconcile/message_splitter.h), so that a sniffer's trace and a
// capture's trace of the same run hold the same messages.
//
// Without protocol knowledge a message is a run of the direction's bytes until the other
// direction sends (Project 5 §3's and WAP5's "fat messages"). Where a protocol processor
// (capture/protocols/protocol.h) reads the direction, it is cut where the processor says
// a message ends instead, and a run end inside a message does not cut it; bytes after the
// processor's last end (it gave up, or the connection closed mid-message) are cut at run
// ends again. Streaming, that means a run end is remembered while the processor reads and
// used only if no end comes after it.
//
// A sniffer sees each byte once, so a message has one time: when the packet holding its
// first byte was captured.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/protocols/protocol.h"
#include "core/time.h"

namespace weft::import {

struct CutMessage {
  int64_t begin = 0, end = 0;  // byte offsets [begin, end) of the direction
  TimeNs time = kNoTime;       // capture time of the packet holding byte `begin`
  uint32_t run = 0;            // the direction's run (0, 1, ...) that byte `begin` is in
  // The processor's attributes when it found the end at `end`; null for a run end.
  const capture::protocols::Attributes* attributes = nullptr;
  capture::protocols::Protocol protocol = capture::protocols::kNone;
  int64_t gap_before = 0;  // bytes missing from the capture just before `begin`
};

class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual void OnMessage(int direction, const CutMessage& message) = 0;
};

class MessageCutter {
 public:
  MessageCutter(int direction, MessageSink* sink) : direction_(direction), sink_(sink) {}

  // From now on `protocol`'s processor reads the direction; the direction's bytes so far
  // (`length` at `data`, all still pending) are fed to it first. Only before a gap.
  void StartParser(capture::protocols::Protocol protocol, const uint8_t* data, size_t length);
  bool parsing() const { return parsing_; }

  // The next `length` bytes, in run `run` of the direction, captured at `time`.
  void Append(const uint8_t* data, size_t length, TimeNs time, uint32_t run);
  // The other direction sent: this direction's run ended.
  void OnTurn();
  // `length` bytes were never captured: what is pending is cut at its runs, the processor
  // stops (its offsets no longer hold), and the next message says what is missing.
  void OnGap(int64_t length);
  // The direction is over: what is pending is cut at its runs.
  void Finish();

 private:
  struct Piece {  // the pending bytes from `start` on are in run `run`
    int64_t start;
    TimeNs time;
    uint32_t run;
  };
  void Feed(const uint8_t* data, size_t length);
  void CutAt(int64_t end, const capture::protocols::Attributes* attributes);
  // Cuts the pending bytes at each run end; the last run stays pending if `keep_last`.
  void CutRuns(bool keep_last);
  // The message from begin_ to `end`, whose first byte is in `first`.
  void Emit(int64_t end, const capture::protocols::Attributes* attributes, const Piece& first);

  int direction_;
  MessageSink* sink_;
  bool parsing_ = false;
  capture::protocols::Parser parser_{};
  int64_t delivered_ = 0;      // bytes of the direction so far (gaps included)
  int64_t begin_ = 0;          // first pending byte
  std::vector<Piece> pieces_;  // the pending bytes' runs, in order; empty when none pend
  int64_t chunk_start_ = 0;    // the last Append's bytes and time
  TimeNs chunk_time_ = kNoTime;
  int64_t gap_before_ = 0;
};

}  // namespace weft::import
