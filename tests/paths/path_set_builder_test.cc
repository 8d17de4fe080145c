// PathSetBuilder: validation, canonical order, keys, delays and histograms, ranking.
#include "paths/path_set_builder.h"

#include <gtest/gtest.h>

#include "paths/paths_file.h"
#include "paths/ranking.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// One RPC request, times in microseconds after 1 s (see the expected delays below):
//   a client→WS1 call; WS1 calls AUTH (b, returns c) then AP2 (d); AP2 calls DB (e, f);
//   AP2 returns (g); WS1 returns (h). Messages are listed out of time order on purpose.
constexpr std::string_view kRequest = R"(
1.001200 CALL_SENT WS1 AP2 d recv=1.001300
1.000000 CALL_SENT client WS1 a recv=1.000100
1.003500 RET_SENT WS1 client a recv=1.003600
1.000300 CALL_SENT WS1 AUTH b recv=1.000400
1.000900 RET_SENT AUTH WS1 b recv=1.001000
1.001500 CALL_SENT AP2 DB e recv=1.001600
1.002600 RET_SENT DB AP2 e recv=1.002700
1.003000 RET_SENT AP2 WS1 d recv=1.003100
)";

constexpr std::string_view kRequestKey =
    "C:client>WS1(C:WS1>AUTH(R:AUTH>WS1) C:WS1>AP2(C:AP2>DB(R:DB>AP2) R:AP2>WS1) R:WS1>client)";

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

// Time-sorted ids of kRequest: a=0 b=1 c=2 d=3 e=4 f=5 g=6 h=7.
std::vector<MessageId> Ids(std::initializer_list<uint32_t> ids) {
  std::vector<MessageId> out;
  for (uint32_t i : ids) out.push_back(MessageId(i));
  return out;
}

TEST(PathSetBuilder, CanonicalOrderKeyAndDelays) {
  Trace trace = Parse(kRequest);
  PathSetBuilder builder(trace, "test");
  // Given in a scrambled order: h, d, a, g, b, f, c, e with parents as indices here.
  auto messages = Ids({7, 3, 0, 6, 1, 5, 2, 4});
  std::vector<int32_t> parents = {2, 2, -1, 1, 2, 7, 4, 1};
  ASSERT_TRUE(builder.AddInstance(messages, parents).ok());
  PathSet set = std::move(builder).Finish();

  ASSERT_EQ(set.instance_count(), 1u);
  ASSERT_EQ(set.patterns.size(), 1u);
  const PathPattern& p = set.patterns[0];
  EXPECT_EQ(p.key, kRequestKey);
  EXPECT_EQ(p.count, 1u);
  EXPECT_EQ(p.expected_count, 1.0);
  // Pre-order: a, b, c, d, e, f, g, h.
  auto m = set.InstanceMessages(0);
  EXPECT_EQ(std::vector<MessageId>(m.begin(), m.end()), Ids({0, 1, 2, 3, 4, 5, 6, 7}));
  auto par = set.InstanceParents(0);
  EXPECT_EQ(std::vector<int32_t>(par.begin(), par.end()),
            (std::vector<int32_t>{-1, 0, 1, 0, 3, 4, 3, 0}));
  // Delay after the parent's arrival at the sender, element by element (microseconds).
  const int64_t expected_us[] = {0, 200, 500, 1100, 200, 1000, 1700, 3400};
  ASSERT_EQ(p.elements.size(), 8u);
  EXPECT_TRUE(p.elements[0].delay.empty());
  for (size_t k = 1; k < 8; ++k) {
    EXPECT_EQ(p.elements[k].delay.count(), 1u) << k;
    EXPECT_EQ(p.elements[k].delay.min(), expected_us[k] * kMicrosecond) << k;
    EXPECT_EQ(p.elements[k].parent, par[k]) << k;
  }
  EXPECT_EQ(set.nodes.Get(p.elements[3].sender), "WS1");
  EXPECT_EQ(set.nodes.Get(p.elements[3].receiver), "AP2");
  EXPECT_EQ(p.elements[6].kind, MessageKind::kReturn);
  EXPECT_EQ(p.latency.count(), 1u);
  EXPECT_EQ(p.latency.min(), 3600 * kMicrosecond);  // last receive 1.003600 - root send 1.0
  EXPECT_EQ(set.trace_messages, 8u);
  EXPECT_EQ(set.trace_fingerprint, TraceFingerprint(trace));
}

TEST(PathSetBuilder, HistogramsAggregateInstancesOfOneShape) {
  // Two A→B→C chains, B's delay 200us then 600us; a third with another shape.
  Trace trace = Parse(R"(
1.000000 MSG_SENT A B recv=1.000100
1.000300 MSG_SENT B C recv=1.000500
2.000000 MSG_SENT A B recv=2.000100
2.000700 MSG_SENT B C recv=2.001000
3.000000 MSG_SENT A D recv=3.000100
)");
  PathSetBuilder builder(trace, "test");
  ASSERT_TRUE(builder.AddInstance(Ids({0, 1}), std::vector<int32_t>{-1, 0}).ok());
  ASSERT_TRUE(builder.AddInstance(Ids({3, 2}), std::vector<int32_t>{1, -1}, 0.5).ok());
  ASSERT_TRUE(builder.AddInstance(Ids({4}), std::vector<int32_t>{-1}, 0.25).ok());
  PathSet set = std::move(builder).Finish();

  ASSERT_EQ(set.patterns.size(), 2u);
  const PathPattern& chain = set.patterns[0];
  EXPECT_EQ(chain.key, "M:A>B(M:B>C)");
  EXPECT_EQ(chain.count, 2u);
  EXPECT_DOUBLE_EQ(chain.expected_count, 1.5);
  EXPECT_EQ(chain.max_probability, 1.0);
  const LatencyHistogram& d = chain.elements[1].delay;
  EXPECT_EQ(d.count(), 2u);
  EXPECT_EQ(d.min(), 200 * kMicrosecond);
  EXPECT_EQ(d.max(), 600 * kMicrosecond);
  EXPECT_DOUBLE_EQ(d.mean(), 400.0 * kMicrosecond);
  EXPECT_DOUBLE_EQ(d.sum_of_squares(), 200e3 * 200e3 + 600e3 * 600e3);
  // End to end: 500us and 1000us.
  EXPECT_EQ(chain.latency.count(), 2u);
  EXPECT_DOUBLE_EQ(chain.latency.mean(), 750.0 * kMicrosecond);
  EXPECT_EQ(set.patterns[1].key, "M:A>D");
  EXPECT_EQ(set.patterns[1].max_probability, 0.25);
  EXPECT_EQ(set.pattern, (std::vector<uint32_t>{0, 0, 1}));
  EXPECT_EQ(set.instance_begin, (std::vector<uint32_t>{0, 2, 4, 5}));

  EXPECT_EQ(RankPatterns(set, PatternOrder::kCount), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(RankPatterns(set, PatternOrder::kLatency), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(RankPatterns(set, PatternOrder::kExpected), (std::vector<uint32_t>{0, 1}));
}

TEST(PathSetBuilder, DelayFallsBackToParentSendAndSkipsMissingTimes) {
  // C's parent (A→B) arrived at B, not at C's sender X: delay from A→B's send.
  // D's parent (B→X) has no receive time: delay from its send. E has no send time.
  Trace trace = Parse(R"(
1.000000 MSG_SENT A B recv=1.000100
1.000200 MSG_SENT X Y recv=1.000300
1.000400 MSG_SENT B X
- MSG_SENT B Z recv=1.000900
1.001000 MSG_SENT X W recv=1.001100
)");
  PathSetBuilder builder(trace, "test");
  // 0: A→B root; 1: X→Y child of 0; 2: B→X child of 0; 3: B→Z (no send) child of 0;
  // 4: X→W child of 2.
  ASSERT_TRUE(builder.AddInstance(Ids({0, 1, 2, 3, 4}), std::vector<int32_t>{-1, 0, 0, 0, 2}).ok());
  PathSet set = std::move(builder).Finish();
  const PathPattern& p = set.patterns[0];
  // Children of the root by time: X→Y (1.0002), B→X (1.0004), B→Z (recv 1.0009).
  EXPECT_EQ(p.key, "M:A>B(M:X>Y M:B>X(M:X>W) M:B>Z)");
  EXPECT_EQ(p.elements[1].delay.min(), 200 * kMicrosecond);  // X→Y: from A→B's send
  EXPECT_EQ(p.elements[2].delay.min(), 300 * kMicrosecond);  // B→X: from A→B's arrival
  EXPECT_EQ(p.elements[3].delay.min(), 600 * kMicrosecond);  // X→W: from B→X's send
  EXPECT_TRUE(p.elements[4].delay.empty());                  // B→Z: no send time
  EXPECT_EQ(p.latency.min(), 1100 * kMicrosecond);
}

TEST(PathSetBuilder, TiesByLabelThenShape) {
  // Two instances: WS1 sends to AUTH and AP2 at the same instant. Label order puts AP2
  // first ('P' < 'U') whatever the order of addition. In the second instance two calls
  // to AP2 at the same instant differ in shape only (one has a DB call).
  Trace trace = Parse(R"(
1.0 CALL_SENT client WS1 recv=1.1
1.2 CALL_SENT WS1 AUTH recv=1.3
1.2 CALL_SENT WS1 AP2 recv=1.3
2.0 CALL_SENT client WS1 recv=2.1
2.2 CALL_SENT WS1 AP2 recv=2.3
2.2 CALL_SENT WS1 AP2 recv=2.3
2.4 CALL_SENT AP2 DB recv=2.5
3.0 CALL_SENT client WS1 recv=3.1
3.2 CALL_SENT WS1 AP2 recv=3.3
3.2 CALL_SENT WS1 AP2 recv=3.3
3.4 CALL_SENT AP2 DB recv=3.5
)");
  PathSetBuilder builder(trace, "test");
  ASSERT_TRUE(builder.AddInstance(Ids({1, 0, 2}), std::vector<int32_t>{1, -1, 1}).ok());
  // DB call under the first AP2 call (id 4) in one instance, under the second (9) in the other.
  ASSERT_TRUE(builder.AddInstance(Ids({3, 4, 5, 6}), std::vector<int32_t>{-1, 0, 0, 1}).ok());
  ASSERT_TRUE(builder.AddInstance(Ids({7, 8, 9, 10}), std::vector<int32_t>{-1, 0, 0, 2}).ok());
  PathSet set = std::move(builder).Finish();
  ASSERT_EQ(set.patterns.size(), 2u);
  EXPECT_EQ(set.patterns[0].key, "C:client>WS1(C:WS1>AP2 C:WS1>AUTH)");
  auto m0 = set.InstanceMessages(0);
  EXPECT_EQ(std::vector<MessageId>(m0.begin(), m0.end()), Ids({0, 2, 1}));
  EXPECT_EQ(set.pattern[1], set.pattern[2]);  // the same shape, whichever AP2 call has the child
  EXPECT_EQ(set.patterns[1].count, 2u);
  EXPECT_EQ(set.InstanceParents(1)[3], set.InstanceParents(2)[3]);
}

TEST(PathSetBuilder, RejectsMalformedInstancesAndChangesNothing) {
  Trace trace = Parse(kRequest);
  PathSetBuilder builder(trace, "test");
  auto expect_error = [&](std::vector<MessageId> m, std::vector<int32_t> p,
                          std::string_view message, double probability = 1.0) {
    Status s = builder.AddInstance(m, p, probability);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message(), message);
  };
  expect_error({}, {}, "instance 0 has no messages");
  expect_error(Ids({0, 1}), {-1}, "instance 0 has 2 messages but 1 parents");
  expect_error(Ids({0, 1}), {-1, 0}, "instance 0 has probability 0 outside (0, 1]", 0.0);
  expect_error(Ids({0, 8}), {-1, 0}, "instance 0: message 8 is beyond the trace's 8 messages");
  expect_error(Ids({0, 0}), {-1, 0}, "instance 0: message 0 appears twice");
  expect_error(Ids({0, 1}), {-1, 2}, "instance 0: message 1 has parent index 2 (of 2)");
  expect_error(Ids({0, 1}), {-1, 1}, "instance 0: message 1 has parent index 1 (of 2)");
  expect_error(Ids({0, 1}), {-1, -1}, "instance 0 has two roots (messages 0 and 1)");
  expect_error(Ids({0, 1}), {1, 0}, "instance 0 has no root (its parents form a cycle)");
  expect_error(Ids({0, 1, 2}), {-1, 2, 1},
               "instance 0: 2 of its 3 messages are on a cycle, not under the root");
  ASSERT_TRUE(builder.AddInstance(Ids({0, 1}), std::vector<int32_t>{-1, 0}).ok());
  expect_error(Ids({2, 1}), {-1, 0}, "instance 1: message 1 is already in another instance");
  PathSet set = std::move(builder).Finish();
  EXPECT_EQ(set.instance_count(), 1u);
  EXPECT_EQ(set.messages.size(), 2u);
  EXPECT_EQ(set.patterns.size(), 1u);
}

TEST(PathSetBuilder, NamesAreEscapedInKeys) {
  Trace trace = Parse("1.0 MSG_SENT a%20(b) c>d%25\n");
  PathSetBuilder builder(trace, "test");
  ASSERT_TRUE(builder.AddInstance(Ids({0}), std::vector<int32_t>{-1}).ok());
  PathSet set = std::move(builder).Finish();
  EXPECT_EQ(set.patterns[0].key, "M:a%20%28b%29>c%3Ed%25");
}

TEST(PatternKey, RejectsTreesNotInPreOrder) {
  std::vector<std::string> labels = {"M:a>b", "M:b>c", "M:c>d", "M:b>e"};
  Result<std::string> key = PatternKey(labels, std::vector<int32_t>{-1, 0, 1, 0});
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "M:a>b(M:b>c(M:c>d) M:b>e)");
  Result<std::string> bad = PatternKey(labels, std::vector<int32_t>{-1, 0, 0, 1});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "element 3 has parent 1, which is not an ancestor of element 2 (not a pre-order tree)");
}

TEST(RankPatterns, TiesBrokenByKey) {
  Trace trace = Parse("1.0 MSG_SENT b c\n2.0 MSG_SENT a c\n3.0 MSG_SENT a b\n4.0 MSG_SENT a b\n");
  PathSetBuilder builder(trace, "test");
  for (uint32_t i = 0; i < 4; ++i)
    ASSERT_TRUE(builder.AddInstance(Ids({i}), std::vector<int32_t>{-1}).ok());
  PathSet set = std::move(builder).Finish();
  // Patterns in order of appearance: b>c (1), a>c (1), a>b (2).
  EXPECT_EQ(RankPatterns(set, PatternOrder::kCount), (std::vector<uint32_t>{2, 1, 0}));
  // All single messages without receive times: every latency is 0, so all tie.
  EXPECT_EQ(RankPatterns(set, PatternOrder::kLatency), (std::vector<uint32_t>{2, 1, 0}));
  EXPECT_TRUE(ParsePatternOrder("expected").ok());
  EXPECT_EQ(
      ParsePatternOrder("size").status().message(),
      "unknown order 'size' (available: count, latency, expected, probability, expected-sqrt)");
}

// WAP5 §6.6's composite metrics: expected / count favours confident patterns,
// expected / sqrt(count) confident ones seen often.
TEST(RankPatterns, CompositeMetrics) {
  PathSet set;
  auto add = [&](std::string key, uint64_t count, double expected) {
    PathPattern p;
    p.key = std::move(key);
    p.count = count;
    p.expected_count = expected;
    set.patterns.push_back(std::move(p));
  };
  add("a", 100, 30);  // probability 0.3, 3.0 per sqrt
  add("b", 4, 3.6);   // probability 0.9, 1.8 per sqrt
  add("c", 25, 20);   // probability 0.8, 4.0 per sqrt
  EXPECT_EQ(RankPatterns(set, PatternOrder::kExpected), (std::vector<uint32_t>{0, 2, 1}));
  EXPECT_EQ(RankPatterns(set, *ParsePatternOrder("probability")), (std::vector<uint32_t>{1, 2, 0}));
  EXPECT_EQ(RankPatterns(set, *ParsePatternOrder("expected-sqrt")),
            (std::vector<uint32_t>{2, 0, 1}));
  EXPECT_EQ(PatternOrderName(PatternOrder::kExpectedSqrt), "expected-sqrt");
}

TEST(TraceFingerprint, DependsOnTimesAndNamesNotOnTruth) {
  Trace a = Parse("1.0 MSG_SENT a b path=1\n2.0 MSG_SENT b c path=1\n");
  Trace b = Parse("1.0 MSG_SENT a b\n2.0 MSG_SENT b c\n");
  Trace c = Parse("1.0 MSG_SENT a b\n2.000000001 MSG_SENT b c\n");
  Trace d = Parse("1.0 MSG_SENT a b\n2.0 MSG_SENT b x\n");
  EXPECT_EQ(TraceFingerprint(a), TraceFingerprint(b));
  EXPECT_NE(TraceFingerprint(a), TraceFingerprint(c));
  EXPECT_NE(TraceFingerprint(a), TraceFingerprint(d));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Protocol attributes of an element's messages are counted per pattern, most frequent
// first; payload bytes are not; the paths file keeps them.
TEST(PathSetBuilder, CountsAttributesPerElement) {
  Trace trace = Parse(R"(
1.0 CALL_SENT client WS1 a http.method=GET http.url=/a payload.prefix=4745
1.1 RET_SENT WS1 client a http.status=200
2.0 CALL_SENT client WS1 b http.method=GET http.url=/a
2.1 RET_SENT WS1 client b http.status=200
3.0 CALL_SENT client WS1 c http.method=GET http.url=/b
3.1 RET_SENT WS1 client c http.status=404
)");
  PathSetBuilder builder(trace, "test");
  const std::vector<int32_t> parents = {-1, 0};
  for (uint32_t call : {0u, 2u, 4u})
    ASSERT_TRUE(builder.AddInstance(Ids({call, call + 1}), parents).ok());
  PathSet set = std::move(builder).Finish();
  ASSERT_EQ(set.patterns.size(), 1u);
  const PatternElement& call = set.patterns[0].elements[0];
  ASSERT_EQ(call.attributes.size(), 3u);
  EXPECT_EQ(call.attributes[0].key, "http.method");
  EXPECT_EQ(call.attributes[0].value, "GET");
  EXPECT_EQ(call.attributes[0].count, 3u);
  EXPECT_EQ(call.attributes[1].value, "/a");
  EXPECT_EQ(call.attributes[1].count, 2u);
  EXPECT_EQ(call.attributes[2].value, "/b");

  Result<PathsFile> back = ParsePaths(FormatPaths({set}), "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(FormatPaths(*back), FormatPaths({set}));
  ASSERT_EQ(back->paths.patterns[0].elements[0].attributes.size(), 3u);
  EXPECT_EQ(back->paths.patterns[0].elements[0].attributes[2].value, "/b");
}

}  // namespace
}  // namespace weft
