#include "pivot/frame.h"

#include <cstring>

namespace weft::pivot {
namespace {

void PutU16(uint16_t v, std::string* out) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}
void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

bool ValidSubject(std::string_view s) {
  if (s.empty() || s.size() > kMaxSubject) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

void AppendPublishFrame(std::string_view subject, std::string_view payload, std::string* out) {
  PutU32(static_cast<uint32_t>(1 + 2 + subject.size() + payload.size()), out);
  out->push_back(static_cast<char>(FrameType::kPublish));
  PutU16(static_cast<uint16_t>(subject.size()), out);
  out->append(subject);
  out->append(payload);
}

void AppendSubscribeFrame(uint64_t id, std::string_view pattern, std::string* out) {
  PutU32(static_cast<uint32_t>(1 + 8 + pattern.size()), out);
  out->push_back(static_cast<char>(FrameType::kSubscribe));
  PutU64(id, out);
  out->append(pattern);
}

void AppendUnsubscribeFrame(uint64_t id, std::string* out) {
  PutU32(1 + 8, out);
  out->push_back(static_cast<char>(FrameType::kUnsubscribe));
  PutU64(id, out);
}

void FrameDecoder::Append(std::string_view bytes) {
  if (!error_.empty()) return;
  // Drop what earlier frames used once it is most of the buffer, so that appends stay
  // amortized O(bytes) without moving memory on every frame.
  if (consumed_ > 0 && consumed_ >= buffer_.size() / 2) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

FrameDecoder::Outcome FrameDecoder::Fail(std::string why) {
  error_ = std::move(why);
  buffer_.clear();
  consumed_ = 0;
  return Outcome::kBad;
}

FrameDecoder::Outcome FrameDecoder::Next(Frame* frame) {
  if (!error_.empty()) return Outcome::kBad;
  std::string_view rest(buffer_.data() + consumed_, buffer_.size() - consumed_);
  if (rest.size() < kFrameHeader) return Outcome::kNeedMore;
  uint64_t length = GetLe(rest.data(), 4);
  if (length == 0 || length > kMaxFrameBody) {
    return Fail("frame length " + std::to_string(length) + " out of bounds");
  }
  if (rest.size() < kFrameHeader + length) return Outcome::kNeedMore;
  std::string_view body = rest.substr(kFrameHeader, length);
  *frame = Frame{};
  switch (static_cast<FrameType>(body[0])) {
    case FrameType::kPublish: {
      if (body.size() < 3) return Fail("publish frame shorter than its header");
      size_t subject_len = GetLe(body.data() + 1, 2);
      if (body.size() < 3 + subject_len) return Fail("publish frame subject past its end");
      frame->type = FrameType::kPublish;
      frame->subject = body.substr(3, subject_len);
      frame->payload = body.substr(3 + subject_len);
      if (!ValidSubject(frame->subject)) return Fail("publish frame with a bad subject");
      if (frame->payload.size() > kMaxPayload) return Fail("publish frame payload too long");
      break;
    }
    case FrameType::kSubscribe:
      if (body.size() < 9) return Fail("subscribe frame shorter than its header");
      frame->type = FrameType::kSubscribe;
      frame->id = GetLe(body.data() + 1, 8);
      frame->subject = body.substr(9);
      if (!ValidSubject(frame->subject)) return Fail("subscribe frame with a bad pattern");
      break;
    case FrameType::kUnsubscribe:
      if (body.size() != 9) return Fail("unsubscribe frame of the wrong length");
      frame->type = FrameType::kUnsubscribe;
      frame->id = GetLe(body.data() + 1, 8);
      break;
    default:
      return Fail("unknown frame type " + std::to_string(static_cast<unsigned char>(body[0])));
  }
  consumed_ += kFrameHeader + length;
  return Outcome::kFrame;
}

}  // namespace weft::pivot
