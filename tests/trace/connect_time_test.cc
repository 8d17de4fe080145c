// The connect time column (TraceColumns::connect_time): kept by the builder's sort, written
// and read by both formats (binary section 18, text `connect=`), absent from files that
// have none, and read from the `net.connected` attributes of files written before it was
// a column. And the accept time column (TraceColumns::accept_time, binary section 21,
// text `accept=`) likewise.
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

constexpr TimeNs kRecv = kSend + 200'000;
constexpr TimeNs kAccept = kSend - 50'000;

// A call read on a connection its receiver accepted, and one that was not.
Trace AcceptedCall(TimeNs accept) {
  TraceBuilder b;
  MessageRecord r;
  r.sender = b.Node("client");
  r.receiver = b.Node("proxy");
  r.kind = MessageKind::kCall;
  r.receiver_thread = ThreadId(9);
  r.send_time = kSend;
  r.recv_time = kRecv;
  r.accept_time = accept;
  b.Add(r);
  r.send_time = kSend + 1000;
  r.recv_time = kRecv + 1000;
  r.accept_time = kNoTime;
  b.Add(r);
  Result<Trace> t = std::move(b).Finish();
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(TraceAcceptTime, BothFormatsKeepItAndWriteItOnlyWhenNeeded) {
  Trace t = AcceptedCall(kAccept);
  EXPECT_EQ(t.Row(MessageId(0)).accept_time, kAccept);
  std::string file = EncodeBinaryTrace(t);
  EXPECT_EQ(SectionCount(file), 17u);  // the 16 required ones and accept_time
  Result<Trace> back = DecodeBinary(file);
  ASSERT_TRUE(back.ok()) << back.status().message();
  testing::ExpectIdenticalTrace(t, *back);
  EXPECT_EQ(SectionCount(EncodeBinaryTrace(AcceptedCall(kNoTime))), 16u);
  std::string text = FormatTextTrace(t);
  EXPECT_NE(text.find(" accept=1700000000.499950000 "), std::string::npos) << text;
  Result<Trace> parsed = ParseTextTrace(text, "t");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  testing::ExpectSameMessages(t, *parsed);
}

// An accept after the read it led to (or with no read) is no accept time: rejected.
TEST(TraceAcceptTime, AnAcceptAfterItsReadIsCorrupt) {
  TraceBuilder b;
  MessageRecord r;
  r.sender = b.Node("client");
  r.receiver = b.Node("proxy");
  r.kind = MessageKind::kCall;
  r.send_time = kSend;
  r.recv_time = kRecv;
  r.accept_time = kRecv + 1;
  b.Add(r);
  Result<Trace> t = std::move(b).Finish();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("accept time"), std::string::npos) << t.status().message();
  EXPECT_FALSE(ParseTextTrace("1.0 CALL a b - recv=2.0 accept=3.0\n", "t").ok());
}

}  // namespace
}  // namespace weft
