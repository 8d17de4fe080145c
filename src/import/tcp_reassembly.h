// One direction of a TCP connection as a sniffer sees it -> its bytes in order, once each.
//
// Segments are placed by sequence number (RFC 9293 §3.4): a segment wholly before the next
// expected byte is a retransmission and is dropped; one that overlaps it is trimmed; one
// after it waits (copied: the only allocation, and only for segments out of order) until
// the bytes before it arrive. Bytes the capture never saw are a gap, and a gap is never
// guessed over: it is declared when it is certain the bytes will not come (the other side
// acknowledged past them while later bytes wait, or the direction ended: FIN, RST, the end
// of the file), or when too much waits behind it; the sink is told how many bytes are
// missing, and the stream goes on after them.
//
// Offsets count from the first byte after the SYN (or, for a connection whose handshake
// the capture missed, from the first byte seen), in 64 bits: sequence numbers wrap, a
// long connection's offsets do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/time.h"

namespace weft::import {

// Where in-order bytes go.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // `length` bytes at `data` (valid only during the call), the next ones of the direction,
  // first seen in a packet captured at `time`.
  virtual void OnBytes(const uint8_t* data, size_t length, TimeNs time) = 0;
  // `length` bytes of the direction were never captured: the next bytes follow them.
  virtual void OnGap(int64_t length) = 0;
};

struct ReassemblyCounters {
  uint64_t retransmissions = 0;  // segments whose bytes (some or all) had been seen already
  uint64_t gaps = 0;
  uint64_t gap_bytes = 0;
};

class TcpReassembler {
 public:
  // At most this many bytes wait out of order behind a hole; more, and the hole is a gap.
  static constexpr size_t kMaxHeldBytes = 8 << 20;

  explicit TcpReassembler(ReassemblyCounters* counters) : counters_(counters) {}

  // The direction's SYN with sequence number `seq`: its first byte is seq + 1.
  void Syn(uint32_t seq);
  bool started() const { return started_; }
  // True if the first segment seen was not a SYN (the handshake was not captured).
  bool without_handshake() const { return without_handshake_; }

  // A segment: `length` payload bytes at `data` from sequence number `seq`, captured at
  // `time`; `fin` if it carries FIN. In-order bytes go to `sink` at once.
  void Segment(uint32_t seq, const uint8_t* data, size_t length, TimeNs time, bool fin,
               StreamSink& sink);
  // The other direction acknowledged up to `ack`: bytes before it reached the receiver.
  void PeerAck(uint32_t ack, StreamSink& sink);
  // The direction is over (RST, the connection ended, the file ended): what still waits
  // is delivered, with gaps for the holes, and bytes acknowledged or promised by a FIN but
  // never seen are a gap at the end.
  void Finish(StreamSink& sink);

  int64_t next_offset() const { return next_offset_; }
  bool fin_seen() const { return fin_offset_ >= 0; }
  // The FIN's sequence position has been reached: every byte before it was delivered.
  bool finished() const { return fin_offset_ >= 0 && next_offset_ >= fin_offset_; }

 private:
  struct Held {
    std::string bytes;
    TimeNs time;
  };
  int64_t OffsetOf(uint32_t seq) const { return next_offset_ + int32_t(seq - next_seq_); }
  void Deliver(const uint8_t* data, size_t length, TimeNs time, StreamSink& sink);
  void DeliverHeld(StreamSink& sink);
  void Gap(int64_t to, StreamSink& sink);

  ReassemblyCounters* counters_;
  bool started_ = false;
  bool without_handshake_ = false;
  uint32_t next_seq_ = 0;    // sequence number of the next byte expected
  int64_t next_offset_ = 0;  // its offset
  int64_t fin_offset_ = -1;
  int64_t acked_offset_ = 0;  // the furthest the other side acknowledged
  std::map<int64_t, Held> held_;
  size_t held_bytes_ = 0;
};

}  // namespace weft::import
