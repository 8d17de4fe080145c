// --algo truth from a hand-written trace, and its errors.
#include "infer/truth/truth.h"

#include <gtest/gtest.h>

#include "trace/text_format.h"

namespace weft {
namespace {

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

TEST(InferFromTruth, GroupsByPathAndLinksByParent) {
  // Two interleaved requests (paths 7 and 3) of the same shape, one of another shape
  // (path 5), and a message with no ground truth.
  Trace trace = Parse(R"(
1.0 CALL_SENT client WS1 recv=1.1 path=7 msg=1
1.05 CALL_SENT client WS1 recv=1.15 path=3 msg=2
1.2 CALL_SENT WS1 DB recv=1.3 path=7 msg=3 parent=1
1.25 CALL_SENT WS1 DB recv=1.32 path=3 msg=4 parent=2
1.35 RET_SENT DB WS1 recv=1.4 path=7 msg=5 parent=3
1.37 RET_SENT DB WS1 recv=1.4 path=3 msg=6 parent=4
1.45 RET_SENT WS1 client recv=1.5 path=7 msg=7 parent=1
1.5 RET_SENT WS1 client recv=1.55 path=3 msg=8 parent=2
2.5 MSG_SENT noise WS1
3.0 MSG_SENT client WS1 recv=3.1 path=5
)");
  Result<TruthInference> set = InferFromTruth(trace);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->paths.algorithm, "truth");
  EXPECT_EQ(set->counters.messages_without_truth, 1);
  ASSERT_EQ(set->paths.instance_count(), 3u);
  ASSERT_EQ(set->paths.patterns.size(), 2u);
  EXPECT_EQ(set->paths.patterns[0].key, "C:client>WS1(C:WS1>DB(R:DB>WS1) R:WS1>client)");
  EXPECT_EQ(set->paths.patterns[0].count, 2u);
  EXPECT_EQ(set->paths.patterns[1].key, "M:client>WS1");
  // Time-sorted ids: path 7 is 0, 2, 4, 6; path 3 is 1, 3, 5, 7 (first message first).
  auto m0 = set->paths.InstanceMessages(0);
  auto m1 = set->paths.InstanceMessages(1);
  EXPECT_EQ(std::vector<MessageId>(m0.begin(), m0.end()),
            (std::vector<MessageId>{MessageId(0), MessageId(2), MessageId(4), MessageId(6)}));
  EXPECT_EQ(std::vector<MessageId>(m1.begin(), m1.end()),
            (std::vector<MessageId>{MessageId(1), MessageId(3), MessageId(5), MessageId(7)}));
  auto p0 = set->paths.InstanceParents(0);
  EXPECT_EQ(std::vector<int32_t>(p0.begin(), p0.end()), (std::vector<int32_t>{-1, 0, 1, 0}));
  EXPECT_EQ(set->paths.InstanceMessages(2)[0], MessageId(9));
  // Call delays at WS1: 100 ms in both; DB visits: 50 ms in both; WS1 visits 350 ms.
  const PathPattern& p = set->paths.patterns[0];
  EXPECT_EQ(p.elements[1].delay.min(), 100 * kMillisecond);
  EXPECT_EQ(p.elements[1].delay.max(), 100 * kMillisecond);
  EXPECT_EQ(p.elements[2].delay.count(), 2u);
  EXPECT_DOUBLE_EQ(p.elements[2].delay.mean(), 50.0 * kMillisecond);
  EXPECT_DOUBLE_EQ(p.elements[3].delay.mean(), 350.0 * kMillisecond);
  EXPECT_DOUBLE_EQ(p.latency.mean(), 500.0 * kMillisecond);
}

TEST(InferFromTruth, Errors) {
  auto error = [](std::string_view text) {
    Result<TruthInference> r = InferFromTruth(Parse(text));
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(error("1.0 MSG_SENT a b\n"),
            "the trace has no ground truth (no message has a path id)");
  EXPECT_EQ(error("1.0 MSG_SENT a b path=1\n2.0 MSG_SENT b c path=1\n"),
            "path 1 has two roots (messages 0 and 1)");
  EXPECT_EQ(error("1.0 MSG_SENT a b path=1 msg=1\n2.0 MSG_SENT b c path=2 msg=2 parent=1\n"),
            "path 2: message 1 has parent 0, which is in path 1");
  EXPECT_EQ(error("1.0 MSG_SENT a b msg=1\n2.0 MSG_SENT b c path=2 msg=2 parent=1\n"),
            "path 2: message 1 has parent 0, which has no path id");
  EXPECT_EQ(
      error("1.0 MSG_SENT a b path=4 msg=1 parent=2\n2.0 MSG_SENT b c path=4 msg=2 parent=1\n"),
      "path 4 has no root: its parents form a cycle (message 0 is on it)");
  EXPECT_EQ(error("1.0 MSG_SENT a b path=4 msg=1\n2.0 MSG_SENT b c path=4 msg=2 parent=3\n"
                  "3.0 MSG_SENT c d path=4 msg=3 parent=2\n"),
            "path 4: instance 0: 2 of its 3 messages are on a cycle, not under the root");
}

}  // namespace
}  // namespace weft
