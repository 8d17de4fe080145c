#include "report/dot.h"

#include <gtest/gtest.h>

#include "infer/nesting/nesting.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// Project 5 Figure 8's layout for Figure 3's path, twice: A calls B; B calls C, then D.
TEST(DotTest, Figure8Layout) {
  Result<Trace> trace = ParseTextTrace(R"(
0.000 CALL_SENT A B 1
0.003 CALL_SENT B C 2
0.005 RET_SENT C B 2
0.007 CALL_SENT B D 3
0.009 RET_SENT D B 3
0.011 RET_SENT B A 1
1.000 CALL_SENT A B 4
1.005 CALL_SENT B C 5
1.007 RET_SENT C B 5
1.009 CALL_SENT B D 6
1.011 RET_SENT D B 6
1.013 RET_SENT B A 4
)",
                                       "test");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<NestingInference> set = InferNesting(*trace, {});
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->paths.patterns.size(), 1u);
  EXPECT_EQ(PatternToDot(set->paths, 0), R"(digraph pattern_0 {
  rankdir=TB;
  node [shape=ellipse];
  root [label="A", shape=box];
  e0 [label="B\n12ms"];
  root -> e0 [label="2 x, total 24ms"];
  e1 [label="C\n2ms"];
  e0 -> e1 [label="4ms"];
  e3 [label="D\n2ms"];
  e0 -> e3 [label="8ms"];
}
)");
}

}  // namespace
}  // namespace weft
