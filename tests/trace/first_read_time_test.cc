// The first read time column (TraceColumns::first_read_time): kept by the builder's sort,
// written and read by both formats (binary section 20, text `first_read=`), absent from
// files that have none, and never after the receive time.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "trace/binary_format.h"
#include "trace/text_format.h"
#include "trace/trace.h"
#include "trace/trace_testing.h"

namespace weft {
namespace {

constexpr TimeNs kSend = 1'700'000'000'500'000'000;

// Two calls added out of time order; the later-added (earlier) one was read in two calls,
// the first of which ended 20 us before the second.
Trace TwoCalls() {
  TraceBuilder b;
  MessageRecord r;
  r.sender = b.Node("proxy");
  r.receiver = b.Node("web");
  r.kind = MessageKind::kCall;
  r.send_time = kSend + 1000;
  r.recv_time = kSend + 50'000;
  b.Add(r);
  r.send_time = kSend;
  r.recv_time = kSend + 40'000;
  r.first_read_time = kSend + 20'000;
  b.Add(r);
  Result<Trace> t = std::move(b).Finish();
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

uint32_t SectionCount(const std::string& file) {
  uint32_t n;
  std::memcpy(&n, file.data() + 32, 4);
  return n;
}

TEST(TraceFirstReadTime, BuilderSortKeepsItWithItsMessage) {
  Trace t = TwoCalls();
  EXPECT_EQ(t.columns().first_read_time[0], kSend + 20'000);
  EXPECT_EQ(t.columns().first_read_time[1], kNoTime);
  EXPECT_EQ(t.Row(MessageId(0)).first_read_time, kSend + 20'000);
  // Where no first read is known, the receive time stands for it.
  EXPECT_EQ(t.columns().FirstReadTime(0), kSend + 20'000);
  EXPECT_EQ(t.columns().FirstReadTime(1), kSend + 50'000);
}

TEST(TraceFirstReadTime, BinaryRoundTripWritesSectionTwentyOnlyWhenNeeded) {
  Trace t = TwoCalls();
  std::string file = EncodeBinaryTrace(t);
  EXPECT_EQ(SectionCount(file), 17u);  // the 16 required ones and first_read_time
  Result<Trace> back =
      DecodeBinaryTrace({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "t");
  ASSERT_TRUE(back.ok()) << back.status().message();
  testing::ExpectIdenticalTrace(t, *back);
  EXPECT_EQ(EncodeBinaryTrace(*back), file);
  EXPECT_EQ(SectionCount(EncodeBinaryTrace(testing::SampleTrace())), 16u);
}

TEST(TraceFirstReadTime, TextRoundTrip) {
  Trace t = TwoCalls();
  std::string text = FormatTextTrace(t);
  EXPECT_NE(text.find(" first_read=1700000000.500020000"), std::string::npos) << text;
  Result<Trace> back = ParseTextTrace(text, "t");
  ASSERT_TRUE(back.ok()) << back.status().message();
  testing::ExpectSameMessages(t, *back);
}

// A message's first byte cannot be read after its last, nor without its being received.
TEST(TraceFirstReadTime, NotAfterTheReceiveTime) {
  EXPECT_FALSE(ParseTextTrace("1 CALL_SENT a b c1 recv=3 first_read=4\n", "t").ok());
  EXPECT_FALSE(ParseTextTrace("1 CALL_SENT a b c1 first_read=2\n", "t").ok());
  EXPECT_TRUE(ParseTextTrace("1 CALL_SENT a b c1 recv=3 first_read=2\n", "t").ok());
}

}  // namespace
}  // namespace weft
