// Test helpers for the protocol processors: feed a byte stream in given pieces and record
// every message end (stream offset and attributes), checking Consume's contract on the
// way; and the split-anywhere property (any split gives what the whole stream gives).
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "capture/protocols/protocol.h"

namespace weft::capture::protocols::testing {

// One message that ended: where (the offset just past its last byte) and its attributes
// as "key=value" joined by '|'.
struct End {
  uint64_t offset;
  std::string attributes;
  bool operator==(const End&) const = default;
};
inline std::ostream& operator<<(std::ostream& os, const End& e) {
  return os << "{" << e.offset << ", \"" << e.attributes << "\"}";
}

struct Stream {
  std::vector<End> ends;
  bool failed = false;
  uint64_t consumed = 0;
  bool operator==(const Stream&) const = default;
};
inline std::ostream& operator<<(std::ostream& os, const Stream& r) {
  os << "failed=" << r.failed << " consumed=" << r.consumed << " ends=[";
  for (const End& e : r.ends) os << e << " ";
  return os << "]";
}

inline std::string Format(const Attributes& a) {
  std::string s;
  for (int i = 0; i < a.count; ++i) {
    if (i > 0) s += '|';
    s += a.items[i].key;
    s += '=';
    s.append(a.items[i].value, a.items[i].length);
  }
  return s;
}

// A stream as consecutive messages, each with its expected attributes.
struct Piece {
  std::string bytes;
  std::string attributes;
};
inline std::string Concat(const std::vector<Piece>& pieces) {
  std::string s;
  for (const Piece& p : pieces) s += p.bytes;
  return s;
}
// The ends those messages should give.
inline std::vector<End> Ends(const std::vector<Piece>& pieces) {
  std::vector<End> ends;
  uint64_t offset = 0;
  for (const Piece& p : pieces) {
    offset += p.bytes.size();
    ends.push_back({offset, p.attributes});
  }
  return ends;
}

// Feeds `bytes` cut at the increasing offsets `cuts`, calling Consume until each piece is
// used up, as the preload library does. End offsets are the parser's stream offsets;
// `consumed` counts this call's bytes.
inline Stream Feed(Parser* parser, std::string_view bytes, const std::vector<size_t>& cuts = {}) {
  Stream run;
  const uint64_t consumed_before = parser->consumed;
  const uint64_t messages_before = parser->messages;
  size_t start = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(bytes.size());
  for (size_t stop : ends) {
    const auto* piece = reinterpret_cast<const uint8_t*>(bytes.data()) + start;
    size_t left = stop - start;
    while (left > 0) {
      bool ended = true;
      size_t n = Consume(parser, piece, left, &ended);
      EXPECT_GT(n, 0u) << "no progress at offset " << parser->consumed;
      EXPECT_LE(n, left);
      if (n == 0 || n > left) return run;
      if (ended) {
        run.ends.push_back({parser->consumed, Format(parser->attributes)});
        // Capture logs an HTTP/2 frame's end as numbers; they must say the same.
        Http2Frame frame;
        if (EndedHttp2Frame(parser, &frame) && !parser->frame_numbers_only) {
          Attributes rebuilt;
          SetHttp2FrameAttributes(frame, &rebuilt);
          EXPECT_EQ(Format(rebuilt), run.ends.back().attributes);
        }
      } else {
        EXPECT_EQ(n, left) << "consumed part of a piece without an end";
      }
      piece += n;
      left -= n;
    }
    start = stop;
  }
  run.failed = parser->failed;
  run.consumed = parser->consumed - consumed_before;
  EXPECT_EQ(run.consumed, bytes.size());
  EXPECT_EQ(parser->messages - messages_before, run.ends.size());
  return run;
}

inline Stream Feed(Protocol protocol, Direction direction, std::string_view bytes,
                   const std::vector<size_t>& cuts = {}) {
  Parser parser;
  Init(&parser, protocol, direction);
  return Feed(&parser, bytes, cuts);
}

// The core property: the stream split at every single position, byte by byte, and at
// random points gives the same run as the whole stream. Streams longer than
// `exhaustive` bytes get random splits only.
inline void ExpectSplitInvariant(Protocol protocol, Direction direction, std::string_view bytes,
                                 size_t exhaustive = 4096) {
  Stream whole = Feed(protocol, direction, bytes);
  if (bytes.size() <= exhaustive) {
    for (size_t k = 1; k < bytes.size(); ++k) {
      ASSERT_EQ(Feed(protocol, direction, bytes, {k}), whole) << "split at " << k;
    }
    std::vector<size_t> every;
    for (size_t k = 1; k < bytes.size(); ++k) every.push_back(k);
    ASSERT_EQ(Feed(protocol, direction, bytes, every), whole) << "byte by byte";
  }
  std::mt19937_64 random(bytes.size());
  for (int round = 0; round < 200; ++round) {
    std::vector<size_t> cuts;
    size_t at = 0;
    while (true) {
      at += 1 + random() % (round % 2 ? 7 : 1 + bytes.size() / 4);
      if (at >= bytes.size()) break;
      cuts.push_back(at);
    }
    ASSERT_EQ(Feed(protocol, direction, bytes, cuts), whole) << "random round " << round;
  }
}

}  // namespace weft::capture::protocols::testing
