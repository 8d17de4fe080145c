#include "pivot/frame.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::pivot {
namespace {

TEST(FrameTest, RoundTripsEveryTypeAcrossSplitReads) {
  std::string bytes;
  AppendSubscribeFrame(7, "weft.pivot.>", &bytes);
  AppendPublishFrame("weft.pivot.results.12", std::string("a\0b", 3), &bytes);
  AppendPublishFrame("x", "", &bytes);
  AppendUnsubscribeFrame(7, &bytes);
  FrameDecoder decoder;
  Frame frame;
  std::vector<std::string> got;
  for (char c : bytes) {  // one byte at a time: every frame boundary is a split
    decoder.Append(std::string_view(&c, 1));
    while (decoder.Next(&frame) == FrameDecoder::Outcome::kFrame) {
      got.push_back(std::string(1, static_cast<char>(frame.type)) + std::to_string(frame.id) +
                    "|" + std::string(frame.subject) + "|" + std::string(frame.payload));
    }
  }
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "S7|weft.pivot.>|");
  EXPECT_EQ(got[1], std::string("P0|weft.pivot.results.12|a\0b", 28));
  EXPECT_EQ(got[2], "P0|x|");
  EXPECT_EQ(got[3], "U7||");
  EXPECT_EQ(decoder.buffered(), 0u);
}

FrameDecoder::Outcome Decode(std::string_view bytes, std::string* error) {
  FrameDecoder decoder;
  decoder.Append(bytes);
  Frame frame;
  FrameDecoder::Outcome outcome = decoder.Next(&frame);
  *error = decoder.error();
  return outcome;
}

TEST(FrameTest, RejectsFramesOutOfBounds) {
  std::string error;
  EXPECT_EQ(Decode(std::string("\0\0\0\0", 4), &error), FrameDecoder::Outcome::kBad);
  EXPECT_EQ(error, "frame length 0 out of bounds");
  EXPECT_EQ(Decode("\xff\xff\xff\x7f", &error), FrameDecoder::Outcome::kBad);
  EXPECT_EQ(Decode(std::string("\x01\0\0\0Z", 5), &error), FrameDecoder::Outcome::kBad);
  EXPECT_EQ(error, "unknown frame type 90");
  // A subject length past the end of the frame.
  EXPECT_EQ(Decode(std::string("\x04\0\0\0P\x09\0a", 8), &error), FrameDecoder::Outcome::kBad);
  // A subject with a space, and an empty one.
  EXPECT_EQ(Decode(std::string("\x05\0\0\0P\x02\0a ", 9), &error), FrameDecoder::Outcome::kBad);
  EXPECT_EQ(Decode(std::string("\x03\0\0\0P\0\0", 7), &error), FrameDecoder::Outcome::kBad);
  EXPECT_EQ(Decode(std::string("\x0a\0\0\0U123456789", 14), &error),
            FrameDecoder::Outcome::kBad);
  // Incomplete is not bad.
  EXPECT_EQ(Decode(std::string("\x05\0\0\0P\x02", 6), &error), FrameDecoder::Outcome::kNeedMore);
}

}  // namespace
}  // namespace weft::pivot
