// libFuzzer target for the protocol processors (capture/protocols/protocol.h). The first
// byte picks the protocol (low 3 bits, and bit 4 as the protocol's bit 3: 0x10 is mysql,
// 0x11 memcached, 0x12 http2; past the last protocol Init takes none) and direction (bit 3),
// the second seeds the split
// points, the rest is the stream. Checks Consume's contract on every call (progress when
// given bytes, never more than given, all of it unless a message ended, nothing ends once
// failed), that ends lie within the stream in increasing order, that attributes stay in
// bounds, and the core property: the stream fed in random pieces, and byte by byte, gives
// the same ends, attributes and failure as fed whole. HTTP/2's header-block bytes must lie
// in what each call took, and be the same bytes however the stream is split, and each frame
// end's numbers (EndedHttp2Frame) give its attributes. Also runs ConsumeDatagram and Detect.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "capture/protocols/protocol.h"

namespace {

namespace p = weft::capture::protocols;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

struct End {
  uint64_t offset;
  std::string attributes;
  bool operator==(const End&) const = default;
};
struct Result {
  std::vector<End> ends;
  std::string header_blocks;  // HTTP/2: the header-block bytes, call after call
  bool failed = false;
  bool operator==(const Result&) const = default;
};

std::string CheckedAttributes(const p::Attributes& a) {
  if (a.count > p::kMaxAttributes) Fail("too many attributes");
  std::string s;
  for (int i = 0; i < a.count; ++i) {
    if (a.items[i].key == nullptr) Fail("attribute without a key");
    if (a.items[i].length > p::kMaxValue) Fail("attribute value too long");
    s += a.items[i].key;
    s += '=';
    s.append(a.items[i].value, a.items[i].length);
    s += '\n';
  }
  return s;
}

// Feeds `data` in pieces whose sizes come from `next_piece` (0: the rest).
template <typename NextPiece>
Result Feed(p::Protocol protocol, p::Direction direction, const uint8_t* data, size_t size,
            NextPiece next_piece) {
  p::Parser parser;
  p::Init(&parser, protocol, direction);
  Result result;
  size_t offset = 0;
  while (offset < size) {
    size_t piece = next_piece();
    if (piece == 0 || piece > size - offset) piece = size - offset;
    size_t left = piece;
    while (left > 0) {
      bool was_failed = parser.failed;
      uint64_t before = parser.consumed;
      bool ended = false;
      size_t n = p::Consume(&parser, data + offset, left, &ended);
      if (n == 0) Fail("Consume made no progress");
      if (n > left) Fail("Consume took more than it was given");
      if (parser.consumed != before + n) Fail("consumed does not add up");
      if (!ended && n != left) Fail("Consume stopped short without an end");
      if (parser.failed && ended) Fail("a failed parser reported an end");
      if (was_failed && n != left) Fail("a failed parser did not take everything");
      size_t block_begin = 0, block_count = 0;
      if (p::HeaderBlockBytes(&parser, &block_begin, &block_count) &&
          (block_count == 0 || block_begin + block_count > n)) {
        Fail("header-block bytes outside what the call took");
      }
      if (block_count > 0) {
        result.header_blocks.append(reinterpret_cast<const char*>(data + offset + block_begin),
                                    block_count);
      }
      std::string attributes = CheckedAttributes(parser.attributes);
      if (ended) {
        uint64_t end = parser.consumed;
        if (end > size) Fail("an end past the stream");
        if (!result.ends.empty() && end <= result.ends.back().offset) {
          Fail("ends not increasing");
        }
        result.ends.push_back({end, attributes});
        // Capture logs an HTTP/2 frame's end as its numbers: they must give these attributes.
        p::Http2Frame frame;
        if (p::EndedHttp2Frame(&parser, &frame)) {
          p::Attributes rebuilt;
          p::SetHttp2FrameAttributes(frame, &rebuilt);
          if (CheckedAttributes(rebuilt) != attributes) Fail("an HTTP/2 frame's numbers differ");
        }
      }
      offset += n;
      left -= n;
    }
  }
  if (parser.consumed != size) Fail("consumed differs from the stream's size");
  if (parser.messages != result.ends.size()) Fail("messages differs from the ends reported");
  if (protocol == p::kNone || protocol == p::kOneShot) {
    if (!result.ends.empty()) Fail("a one-shot stream reported an end");
  }
  result.failed = parser.failed;
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  auto protocol = p::Protocol((data[0] & 7) | ((data[0] >> 1) & 8));
  auto direction = (data[0] & 8) ? p::Direction::kResponse : p::Direction::kRequest;
  uint32_t seed = data[1] * 2654435761u + 1;
  const uint8_t* stream = data + 2;
  size_t n = size - 2;

  Result whole = Feed(protocol, direction, stream, n, [] { return size_t(0); });
  // Random pieces: mostly small, sometimes large, so both header and body splits occur.
  uint32_t x = seed;
  Result split = Feed(protocol, direction, stream, n, [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return size_t(1 + (x % 8 == 0 ? x % 4096 : x % 16));
  });
  if (!(split == whole)) Fail("random pieces gave different ends than the whole stream");
  if (n <= 4096) {
    Result bytes = Feed(protocol, direction, stream, n, [] { return size_t(1); });
    if (!(bytes == whole)) Fail("byte by byte gave different ends than the whole stream");
  }

  p::Parser datagram;
  p::Init(&datagram, protocol, direction);
  p::ConsumeDatagram(&datagram, stream, n);
  CheckedAttributes(datagram.attributes);
  if (datagram.messages != 1 || datagram.consumed != n) Fail("a datagram is one message");

  p::Protocol detected = p::Detect(stream, n);
  if (detected >= p::kProtocolCount) Fail("Detect returned no protocol");
  p::Protocol responding = p::DetectResponse(stream, n);
  if (responding != p::kNone && responding != p::kHttp2) Fail("DetectResponse: not HTTP/2");
  return 0;
}
