// Fat messages cut by protocol processors (message_cutter.h).
#include "import/message_cutter.h"

namespace weft::import {

namespace protocols = capture::protocols;

void MessageCutter::StartParser(protocols::Protocol protocol, const uint8_t* data, size_t length) {
  if (gap_before_ > 0 || delivered_ != int64_t(length)) return;
  protocols::Init(
      &parser_, protocol,
      direction_ == 0 ? protocols::Direction::kRequest : protocols::Direction::kResponse);
  parsing_ = true;
  Feed(data, length);
}

void MessageCutter::Append(const uint8_t* data, size_t length, TimeNs time, uint32_t run) {
  if (length == 0) return;
  if (pieces_.empty() || pieces_.back().run != run) pieces_.push_back({delivered_, time, run});
  chunk_start_ = delivered_;
  chunk_time_ = time;
  delivered_ += int64_t(length);
  if (parsing_) Feed(data, length);
}

void MessageCutter::Feed(const uint8_t* data, size_t length) {
  int stalls = 0;
  while (length > 0) {
    bool ended = false;
    size_t used = protocols::Consume(&parser_, data, length, &ended);
    if (used > length) used = length;
    // A processor that takes nothing would loop forever: as the preload library does, the
    // direction's processor stops there.
    if (used == 0 && (!ended || ++stalls > 1)) {
      parser_.failed = true;
      break;
    }
    data += used;
    length -= used;
    if (ended) CutAt(int64_t(parser_.consumed), &parser_.attributes);
  }
  if (parser_.failed) {
    parsing_ = false;
    CutRuns(true);
  }
}

void MessageCutter::OnTurn() {
  if (!parsing_) CutRuns(false);
}

void MessageCutter::OnGap(int64_t length) {
  CutRuns(false);
  parsing_ = false;
  delivered_ += length;
  begin_ = delivered_;
  gap_before_ += length;
}

void MessageCutter::Finish() { CutRuns(false); }

void MessageCutter::CutAt(int64_t end, const protocols::Attributes* attributes) {
  if (end <= begin_ || end > delivered_ || pieces_.empty()) return;
  Emit(end, attributes, pieces_[0]);
  // Keep the pieces from the one holding byte `end` on; it now starts there.
  size_t keep = 0;
  while (keep + 1 < pieces_.size() && pieces_[keep + 1].start <= end) ++keep;
  pieces_.erase(pieces_.begin(), pieces_.begin() + long(keep));
  if (end == delivered_) {
    pieces_.clear();
  } else {
    pieces_[0].start = end;
    if (end >= chunk_start_) pieces_[0].time = chunk_time_;
  }
  begin_ = end;
}

void MessageCutter::CutRuns(bool keep_last) {
  size_t cut = keep_last && !pieces_.empty() ? pieces_.size() - 1 : pieces_.size();
  for (size_t i = 0; i < cut; ++i) {
    int64_t end = i + 1 < pieces_.size() ? pieces_[i + 1].start : delivered_;
    begin_ = pieces_[i].start;
    Emit(end, nullptr, pieces_[i]);
    begin_ = end;
  }
  pieces_.erase(pieces_.begin(), pieces_.begin() + long(cut));
  if (pieces_.empty()) begin_ = delivered_;
}

void MessageCutter::Emit(int64_t end, const protocols::Attributes* attributes, const Piece& first) {
  CutMessage m;
  m.begin = begin_;
  m.end = end;
  m.time = first.time;
  m.run = first.run;
  m.attributes = attributes;
  m.protocol = attributes != nullptr ? parser_.protocol : protocols::kNone;
  m.gap_before = gap_before_;
  gap_before_ = 0;
  if (m.end > m.begin) sink_->OnMessage(direction_, m);
}

}  // namespace weft::import
