// The optional baggage field of testbed frames and its W3C header over HTTP: carried when
// present, absent from old frames, ignored when it does not fit.
#include <gtest/gtest.h>

#include <string>

#include "pivot/baggage.h"
#include "testbed/http.h"
#include "testbed/wire.h"

namespace weft::testbed {
namespace {

Frame Call() {
  Frame f;
  f.type = FrameType::kRequest;
  f.request_type = 3;
  f.request_id = 0x1234;
  f.call_id = 0x99;
  f.parent_call = 0x7;
  return f;
}

// A real baggage's bytes: a branch of a request's that holds one tuple.
std::string SomeBaggage() {
  pivot::Baggage bag;
  query::Value v = query::Value::Int(42);
  bag.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, 1);
  return bag.Split().Serialize();
}

TEST(WireBaggage, FramesCarryItInTheirPadding) {
  Frame f = Call();
  f.baggage = SomeBaggage();
  ASSERT_FALSE(f.baggage.empty());
  std::string wire = EncodeFrame(f, 128);
  EXPECT_EQ(wire.size(), 4u + 128);  // fits in the padding: the size asked for
  std::string buf = wire;
  Frame got;
  size_t bytes = 0;
  ASSERT_TRUE(*TakeMessage(buf, false, &got, &bytes));
  EXPECT_EQ(bytes, wire.size());
  EXPECT_EQ(got.baggage, f.baggage);
  EXPECT_EQ(got.call_id, f.call_id);
  EXPECT_EQ(got.parent_call, f.parent_call);
}

TEST(WireBaggage, FramesGrowOnlyWhenItDoesNotFit) {
  Frame f = Call();
  f.baggage = std::string(100, 'x');
  std::string wire = EncodeFrame(f, 64);
  EXPECT_EQ(wire.size(), 4 + kPayloadHeader + kFrameBaggageHeader + 100);
  Result<Frame> got = DecodePayload(std::string_view(wire).substr(4));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->baggage, f.baggage);
  // Over the bound it is left out.
  f.baggage = std::string(kMaxFrameBaggage + 1, 'x');
  wire = EncodeFrame(f, 64);
  EXPECT_EQ(wire.size(), 4u + 64);
  EXPECT_TRUE(DecodePayload(std::string_view(wire).substr(4))->baggage.empty());
}

TEST(WireBaggage, OldFramesAndBrokenFieldsReadWithoutBaggage) {
  Frame f = Call();
  std::string wire = EncodeFrame(f, 64);  // no baggage: the format before the field
  EXPECT_EQ(wire.substr(4 + kPayloadHeader), std::string(64 - kPayloadHeader, '.'));
  Result<Frame> got = DecodePayload(std::string_view(wire).substr(4));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->baggage.empty());
  // Header only, and a field whose size runs past the frame.
  EXPECT_TRUE(DecodePayload(std::string_view(EncodeFrame(f, 0)).substr(4))->baggage.empty());
  f.baggage = "abc";
  wire = EncodeFrame(f, 64);
  wire[4 + kPayloadHeader + 5] = char(200);  // size 0x000000c8 > what follows
  got = DecodePayload(std::string_view(wire).substr(4));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->baggage.empty());
}

TEST(WireBaggage, HttpCarriesItAsAW3cBaggageHeader) {
  Frame f = Call();
  f.baggage = SomeBaggage();
  std::string wire = EncodeMessage(f, 32, true);
  EXPECT_NE(wire.find("\r\nbaggage: weft-pivot="), std::string::npos) << wire;
  std::string buf = wire;
  Frame got;
  size_t bytes = 0;
  ASSERT_TRUE(*TakeMessage(buf, true, &got, &bytes));
  EXPECT_EQ(got.baggage, f.baggage);
  // A foreign member and a malformed Pivot member: the message is read, without baggage.
  std::string foreign = EncodeMessage(Call(), 0, true);
  AddHttpHeader(&foreign, "baggage", "userId=alice,weft-pivot=%%%");
  ASSERT_TRUE(*TakeMessage(foreign, true, &got, &bytes));
  EXPECT_TRUE(got.baggage.empty());
}

}  // namespace
}  // namespace weft::testbed
