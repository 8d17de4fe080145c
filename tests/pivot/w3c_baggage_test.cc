// The W3C baggage header: the spec's examples, foreign members kept verbatim and in order,
// malformed members skipped and counted, Pivot's member, and the limits.
#include "pivot/w3c_baggage.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::pivot {
namespace {

std::vector<std::string> Members(const W3cBaggage& b) {
  std::vector<std::string> out;
  for (size_t i = 0; i < b.size(); ++i) out.emplace_back(b.member(i));
  return out;
}

TEST(W3cBaggage, TheSpecsExamples) {
  auto b = W3cBaggage::Parse("key1=value1;property1;property2, key2 = value2, key3=value3; propertyKey=propertyValue");
  EXPECT_EQ(b.malformed(), 0u);
  EXPECT_EQ(Members(b), (std::vector<std::string>{"key1=value1;property1;property2",
                                                  "key2 = value2",
                                                  "key3=value3; propertyKey=propertyValue"}));
  EXPECT_EQ(b.key(1), "key2");
  EXPECT_EQ(b.value(1), "value2");
  EXPECT_EQ(b.value(2), "value3");
  EXPECT_EQ(b.Serialize(),
            "key1=value1;property1;property2,key2 = value2,key3=value3; propertyKey=propertyValue");
  auto c = W3cBaggage::Parse("userId=alice,serverNode=DF%2028,isProduction=false");
  EXPECT_EQ(c.Get("serverNode"), "DF 28");
  EXPECT_EQ(c.Get("userId"), "alice");
  EXPECT_EQ(c.Get("nobody"), std::nullopt);
  EXPECT_EQ(W3cBaggage::Parse("k=a%2").Get("k"), "a%2");  // not an escape: kept
  EXPECT_EQ(W3cBaggage::Parse("k=").Get("k"), "");
}

TEST(W3cBaggage, MalformedMembersAreSkippedAndCounted) {
  uint64_t before = GlobalW3cCounters().malformed_members.load();
  auto b = W3cBaggage::Parse(
      "a=1,=nokey,b c=2,novalue, ,d=\"quoted\",e=1;;,f=2;=x,g=caf\xc3\xa9,h=ok ;p=1,i=1 2,j=3");
  EXPECT_EQ(Members(b), (std::vector<std::string>{"a=1", "h=ok ;p=1", "j=3"}));
  EXPECT_EQ(b.malformed(), 9u);
  EXPECT_EQ(GlobalW3cCounters().malformed_members.load(), before + 9);
  EXPECT_EQ(W3cBaggage::Parse("").size(), 0u);
  EXPECT_EQ(W3cBaggage::Parse(" \t ").malformed(), 0u);
  EXPECT_EQ(W3cBaggage::Parse("a=1,").malformed(), 1u);
}

TEST(W3cBaggage, PivotsMemberRoundTrips) {
  Baggage bag;
  query::Value v = query::Value::Int(12345);
  bag.Contents().Active(1, 1, 0).Append(&v, nullptr, 1, 0);
  auto h = W3cBaggage::Parse("userId=alice,isProduction=false");
  EXPECT_FALSE(h.has_pivot());
  h.PutPivot(bag);
  std::string header = h.Serialize();
  ASSERT_TRUE(header.starts_with("userId=alice,isProduction=false,weft-pivot="));

  auto back = W3cBaggage::Parse(header);
  EXPECT_EQ(Members(back), (std::vector<std::string>{"userId=alice", "isProduction=false"}));
  ASSERT_TRUE(back.has_pivot());
  Baggage got;
  ASSERT_TRUE(back.GetPivot(got).ok());
  EXPECT_EQ(got.Serialize(), bag.Serialize());
  EXPECT_EQ(got.tuples(), 1u);
  // Forwarding without looking inside re-emits the same text.
  EXPECT_EQ(back.Serialize(), header);

  // An empty baggage removes the member; a second member with Pivot's key is skipped.
  back.PutPivot(Baggage());
  EXPECT_EQ(back.Serialize(), "userId=alice,isProduction=false");
  auto twice = W3cBaggage::Parse(header + ",weft-pivot=AAAA");
  EXPECT_EQ(twice.malformed(), 1u);
  Baggage again;
  EXPECT_TRUE(twice.GetPivot(again).ok());
  EXPECT_EQ(again.tuples(), 1u);
  // Not base64url: refused and counted.
  uint64_t rejected = GlobalW3cCounters().pivot_rejected.load();
  EXPECT_FALSE(W3cBaggage::Parse("weft-pivot=A").GetPivot(again).ok());
  EXPECT_FALSE(W3cBaggage::Parse("weft-pivot=AB%3D").GetPivot(again).ok());
  EXPECT_EQ(GlobalW3cCounters().pivot_rejected.load(), rejected + 2);
  EXPECT_TRUE(W3cBaggage::Parse("a=b").GetPivot(again).code() == StatusCode::kNotFound);
}

TEST(W3cBaggage, Base64UrlIsRfc4648Section5) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"foob", "Zm9vYg"},
      {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}, {"\xfb\xff", "-_8"}};
  for (const auto& [raw, text] : cases) {
    std::string enc;
    AppendBase64Url(raw, enc);
    EXPECT_EQ(enc, text);
    std::string dec;
    ASSERT_TRUE(DecodeBase64Url(text, dec)) << text;
    EXPECT_EQ(dec, raw);
  }
  std::string dec;
  EXPECT_FALSE(DecodeBase64Url("Zm9=", dec));
  EXPECT_FALSE(DecodeBase64Url("Zh", dec));  // leftover bits not zero
  EXPECT_FALSE(DecodeBase64Url("Z", dec));
}

TEST(W3cBaggage, TheLimitsHoldAndDropsAreCounted) {
  W3cCounters& counters = GlobalW3cCounters();
  // 70 foreign members: the first 64 are kept, six dropped.
  std::string header;
  for (int i = 0; i < 70; ++i) header += (i ? "," : "") + ("k" + std::to_string(i) + "=v");
  uint64_t dropped = counters.dropped_members.load();
  auto many = W3cBaggage::Parse(header);
  EXPECT_EQ(many.size(), 70u);
  auto out = W3cBaggage::Parse(many.Serialize());
  EXPECT_EQ(out.size(), kW3cMaxMembers);
  EXPECT_EQ(out.key(63), "k63");
  EXPECT_EQ(counters.dropped_members.load(), dropped + 6);

  // Pivot's member is dropped first when it would not fit; the header stays valid.
  Baggage bag;
  std::string text(3000, 'x');
  query::Value v = query::Value::String(bag.Intern(text));
  bag.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, 0);
  auto h = W3cBaggage::Parse("big=" + std::string(6000, 'y') + ",small=1");
  h.PutPivot(bag);
  uint64_t pivot_dropped = counters.pivot_dropped.load();
  std::string s = h.Serialize();
  EXPECT_EQ(counters.pivot_dropped.load(), pivot_dropped + 1);
  EXPECT_LE(s.size(), kW3cMaxBytes);
  EXPECT_EQ(Members(W3cBaggage::Parse(s)).size(), 2u);
  EXPECT_FALSE(W3cBaggage::Parse(s).has_pivot());
  // With room it goes through.
  auto roomy = W3cBaggage::Parse("small=1");
  roomy.PutPivot(bag);
  EXPECT_TRUE(W3cBaggage::Parse(roomy.Serialize()).has_pivot());
  // A foreign member over 8,192 bytes alone is dropped; what follows still fits.
  auto huge = W3cBaggage::Parse("huge=" + std::string(9000, 'z') + ",after=1");
  EXPECT_EQ(huge.Serialize(), "after=1");
  // At exactly 8,192 bytes it is kept.
  std::string exact = "e=" + std::string(kW3cMaxBytes - 2, 'q');
  EXPECT_EQ(W3cBaggage::Parse(exact).Serialize(), exact);
}

}  // namespace
}  // namespace weft::pivot
