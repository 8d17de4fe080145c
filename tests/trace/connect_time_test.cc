// The connect time column (TraceColumns::connect_time): kept by the builder's sort, written
// and read by both formats (binary section 18, text `connect=`), absent from files that
// have none, and read from the `net.connected` attributes of files written before it was
// a column.
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
constexpr TimeNs kConnect = 1'700'000'000'400'000'000;

// Two calls added out of time order; the later-added (earlier) one has a connect time.
Trace TwoCalls(bool legacy_attribute) {
  TraceBuilder b;
  MessageRecord r;
  r.sender = b.Node("web");
  r.receiver = b.Node("db");
  r.kind = MessageKind::kCall;
  r.sender_thread = ThreadId(7);
  r.send_time = kSend + 1000;
  b.Add(r);
  r.send_time = kSend;
  if (!legacy_attribute) r.connect_time = kConnect;
  uint32_t row = b.Add(r);
  if (legacy_attribute) {
    b.AddAttribute(row, b.String("net.connected"), b.String(std::to_string(kConnect)));
  }
  b.AddAttribute(row, b.String("sql"), b.String("SELECT 1"));
  Result<Trace> t = std::move(b).Finish();
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

Result<Trace> DecodeBinary(const std::string& file) {
  return DecodeBinaryTrace({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "t");
}

uint32_t SectionCount(const std::string& file) {
  uint32_t n;
  std::memcpy(&n, file.data() + 32, 4);
  return n;
}

TEST(TraceConnectTime, BuilderSortKeepsItWithItsMessage) {
  Trace t = TwoCalls(false);
  EXPECT_EQ(t.columns().connect_time[0], kConnect);
  EXPECT_EQ(t.columns().connect_time[1], kNoTime);
  EXPECT_EQ(t.Row(MessageId(0)).connect_time, kConnect);
}

TEST(TraceConnectTime, BinaryRoundTripWritesSectionEighteenOnlyWhenNeeded) {
  Trace t = TwoCalls(false);
  std::string file = EncodeBinaryTrace(t);
  EXPECT_EQ(SectionCount(file), 17u);  // the 16 required ones and connect_time
  Result<Trace> back = DecodeBinary(file);
  ASSERT_TRUE(back.ok()) << back.status().message();
  testing::ExpectIdenticalTrace(t, *back);
  EXPECT_EQ(EncodeBinaryTrace(*back), file);
  EXPECT_EQ(SectionCount(EncodeBinaryTrace(testing::SampleTrace())), 16u);
}

TEST(TraceConnectTime, TextRoundTrip) {
  Trace t = TwoCalls(false);
  std::string text = FormatTextTrace(t);
  EXPECT_NE(text.find(" connect=1700000000.400000000 "), std::string::npos) << text;
  Result<Trace> back = ParseTextTrace(text, "t");
  ASSERT_TRUE(back.ok()) << back.status().message();
  testing::ExpectSameMessages(t, *back);
}

// Files from before the column: the attribute becomes the column, and is gone.
TEST(TraceConnectTime, LegacyAttributeIsReadIntoTheColumn) {
  Trace legacy = TwoCalls(true);
  Trace current = TwoCalls(false);
  ASSERT_EQ(legacy.attributes().size(), 2u);
  Result<Trace> binary = DecodeBinary(EncodeBinaryTrace(legacy));
  ASSERT_TRUE(binary.ok()) << binary.status().message();
  testing::ExpectSameMessages(current, *binary);
  Result<Trace> text = ParseTextTrace(FormatTextTrace(legacy), "t");
  ASSERT_TRUE(text.ok()) << text.status().message();
  testing::ExpectSameMessages(current, *text);
  EXPECT_FALSE(ParseTextTrace("1 CALL a b net.connected=x1\n", "t").ok());
}

}  // namespace
}  // namespace weft
