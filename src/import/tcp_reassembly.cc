// TCP reassembly by sequence number (tcp_reassembly.h).
#include "import/tcp_reassembly.h"

#include <algorithm>

namespace weft::import {

void TcpReassembler::Syn(uint32_t seq) {
  if (started_) return;  // a retransmitted SYN
  started_ = true;
  next_seq_ = seq + 1;
}

void TcpReassembler::Segment(uint32_t seq, const uint8_t* data, size_t length, TimeNs time,
                             bool fin, StreamSink& sink) {
  if (!started_) {
    started_ = true;
    without_handshake_ = true;
    next_seq_ = seq;
  }
  int64_t offset = OffsetOf(seq);
  if (fin && fin_offset_ < 0) fin_offset_ = offset + int64_t(length);
  if (length == 0) return;
  int64_t end = offset + int64_t(length);
  if (end <= next_offset_) {
    ++counters_->retransmissions;
    return;
  }
  if (offset < next_offset_) {  // overlaps bytes already delivered: only the new ones
    ++counters_->retransmissions;
    size_t skip = size_t(next_offset_ - offset);
    data += skip;
    length -= skip;
    offset = next_offset_;
  }
  if (offset == next_offset_) {
    Deliver(data, length, time, sink);
    DeliverHeld(sink);
    return;
  }
  auto [it, inserted] = held_.try_emplace(offset);
  if (!inserted) {
    ++counters_->retransmissions;
    if (it->second.bytes.size() >= length) return;  // holds as much already
    held_bytes_ -= it->second.bytes.size();
  }
  it->second.bytes.assign(reinterpret_cast<const char*>(data), length);
  it->second.time = time;
  held_bytes_ += length;
  if (held_bytes_ > kMaxHeldBytes) Gap(held_.begin()->first, sink);
}

void TcpReassembler::PeerAck(uint32_t ack, StreamSink& sink) {
  if (!started_) return;
  int64_t acked = OffsetOf(ack);
  acked_offset_ = std::max(acked_offset_, acked);
  // The receiver has bytes the capture missed, and the bytes after them are here: the
  // hole will not be filled by a retransmission.
  if (!held_.empty() && acked > next_offset_) Gap(std::min(acked, held_.begin()->first), sink);
}

void TcpReassembler::Finish(StreamSink& sink) {
  while (!held_.empty()) Gap(held_.begin()->first, sink);
  // A FIN occupies one sequence number, so its acknowledgement is one past the last byte.
  int64_t promised = fin_offset_ >= 0 ? fin_offset_ : acked_offset_;
  if (promised > next_offset_) Gap(promised, sink);
}

void TcpReassembler::Deliver(const uint8_t* data, size_t length, TimeNs time, StreamSink& sink) {
  sink.OnBytes(data, length, time);
  next_offset_ += int64_t(length);
  next_seq_ += uint32_t(length);
}

void TcpReassembler::DeliverHeld(StreamSink& sink) {
  while (!held_.empty()) {
    auto it = held_.begin();
    if (it->first > next_offset_) return;
    int64_t end = it->first + int64_t(it->second.bytes.size());
    if (end > next_offset_) {
      size_t skip = size_t(next_offset_ - it->first);
      Deliver(reinterpret_cast<const uint8_t*>(it->second.bytes.data()) + skip,
              it->second.bytes.size() - skip, it->second.time, sink);
    } else {
      ++counters_->retransmissions;
    }
    held_bytes_ -= it->second.bytes.size();
    held_.erase(it);
  }
}

void TcpReassembler::Gap(int64_t to, StreamSink& sink) {
  if (to <= next_offset_) return;
  int64_t missing = to - next_offset_;
  ++counters_->gaps;
  counters_->gap_bytes += uint64_t(missing);
  sink.OnGap(missing);
  next_offset_ = to;
  next_seq_ += uint32_t(missing);
  DeliverHeld(sink);
}

}  // namespace weft::import
