// The protocol processors against the testbed's own encoder (testbed/wire.h, http.h): the
// frames and HTTP/1.1 messages the three-tier testbed really sends, pipelined, end exactly
// where the testbed's reader takes them, with the request type and URL as attributes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/protocols/protocol.h"
#include "capture/protocols_feed.h"
#include "testbed/wire.h"

namespace weft::capture::protocols {
namespace {

using testing::Concat;
using testing::Ends;
using testing::ExpectSplitInvariant;
using testing::Feed;
using testing::Piece;
using testing::Stream;
using weft::testbed::Frame;
using weft::testbed::FrameType;

// A conversation's messages in one direction, as EncodeMessage writes them, and what the
// processor should say about each.
std::vector<Piece> Messages(bool http, bool requests, bool chunked) {
  std::vector<Piece> pieces;
  for (int i = 0; i < 12; ++i) {
    Frame frame;
    frame.request_type = uint16_t(i * 37 % 11);
    frame.request_id = 1000 + i;
    frame.call_id = 7 * i + 1;
    frame.parent_call = i;
    frame.type = requests     ? FrameType::kRequest
                 : i % 5 == 4 ? FrameType::kError
                              : FrameType::kReply;
    uint32_t payload = uint32_t(27 + (i * 977) % 3000);
    std::string wire = weft::testbed::EncodeMessage(frame, payload, http, chunked);
    std::string attributes;
    if (!http) {
      if (requests) attributes = "testbed.request=" + std::to_string(frame.request_type);
    } else if (requests) {
      attributes = "http.method=POST|http.url=/r" + std::to_string(frame.request_type);
    } else {
      attributes = frame.type == FrameType::kError ? "http.status=500" : "http.status=200";
    }
    pieces.push_back({wire, attributes});
  }
  return pieces;
}

TEST(TestbedWireProcessorTest, ProcessorsEndWhereTheTestbedReaderTakes) {
  for (bool http : {false, true}) {
    for (bool chunked : {false, true}) {
      if (!http && chunked) continue;
      for (bool requests : {true, false}) {
        std::vector<Piece> pieces = Messages(http, requests, chunked);
        std::string stream = Concat(pieces);
        Protocol protocol = http ? kHttp : kTestbed;
        Direction direction = requests ? Direction::kRequest : Direction::kResponse;
        Stream run = Feed(protocol, direction, stream);
        EXPECT_FALSE(run.failed);
        EXPECT_EQ(run.ends, Ends(pieces)) << http << chunked << requests;
        ExpectSplitInvariant(protocol, direction, stream, 0);
        // The testbed's own reader takes the same messages.
        std::string buf = stream;
        for (const Piece& piece : pieces) {
          Frame frame;
          size_t bytes = 0;
          auto taken = weft::testbed::TakeMessage(buf, http, &frame, &bytes);
          ASSERT_TRUE(taken.ok() && *taken);
          EXPECT_EQ(bytes, piece.bytes.size());
        }
        EXPECT_TRUE(buf.empty());
        if (requests) {
          EXPECT_EQ(Detect(reinterpret_cast<const uint8_t*>(stream.data()), stream.size()),
                    protocol);
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::capture::protocols
