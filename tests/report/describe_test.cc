// Text for people about paths and causal graphs: compact shapes, attribute summaries,
// the causal graph table.
#include "report/describe.h"

#include <gtest/gtest.h>

#include "paths/path_set_builder.h"
#include "trace/text_format.h"

namespace weft {
namespace {

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

std::vector<MessageId> Ids(std::initializer_list<uint32_t> ids) {
  std::vector<MessageId> out;
  for (uint32_t i : ids) out.push_back(MessageId(i));
  return out;
}

// One RPC request: client→WS1; WS1 calls AUTH, then AP2, which calls DB.
TEST(CompactShape, LeavesOutReturnsAndBracketsAllButTheLastChild) {
  Trace trace = Parse(R"(
1.000000 CALL_SENT client WS1 a recv=1.000100
1.000300 CALL_SENT WS1 AUTH b recv=1.000400
1.000900 RET_SENT AUTH WS1 b recv=1.001000
1.001200 CALL_SENT WS1 AP2 d recv=1.001300
1.001500 CALL_SENT AP2 DB e recv=1.001600
1.002600 RET_SENT DB AP2 e recv=1.002700
1.003000 RET_SENT AP2 WS1 d recv=1.003100
1.003500 RET_SENT WS1 client a recv=1.003600
)");
  PathSetBuilder builder(trace, "test");
  ASSERT_TRUE(
      builder
          .AddInstance(Ids({0, 1, 2, 3, 4, 5, 6, 7}), std::vector<int32_t>{-1, 0, 1, 0, 3, 4, 3, 0})
          .ok());
  PathSet set = std::move(builder).Finish();
  ASSERT_EQ(set.patterns.size(), 1u);
  EXPECT_EQ(CompactShape(set, set.patterns[0]), "client→WS1[→AUTH] →AP2→DB");
}

TEST(DescribeAttributes, MostFrequentValuePerKeyWithItsShare) {
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
  EXPECT_EQ(DescribeAttributes(set.patterns[0].elements[0], 3),
            "http.method=GET http.url=/a (67%)");
  EXPECT_EQ(DescribeAttributes(set.patterns[0].elements[1], 3), "http.status=200 (67%)");
  EXPECT_EQ(DescribeAttributes(set.patterns[0].elements[0], 3, 1),
            "http.method=G... http.url=/... (67%)");
}

TEST(FormatCausalGraph, OneLinePerVertexIndentedByDepth) {
  NodeTable nodes;
  NodeId a = nodes.Intern("A"), b = nodes.Intern("B"), c = nodes.Intern("C");
  CausalGraph graph;
  graph.quantum = 5 * kMillisecond;
  graph.vertices = {
      {a, -1, 50, {}}, {b, 0, 50, {}}, {c, 1, 40, {{20 * kMillisecond, 30}, {kSecond, 10}}}};
  EXPECT_EQ(FormatCausalGraph(graph, nodes),
            "causal graph: 3 vertices, quantum 5ms\n"
            "A  (root, 50 msgs sent)\n"
            "  B  <- A  50 msgs  delays\n"
            "    C  <- B  40 msgs  delays 20ms (30), 1s (10)\n");
  EXPECT_EQ(CausalVertexKey(graph, nodes, 2), "A>B>C");
}

}  // namespace
}  // namespace weft
