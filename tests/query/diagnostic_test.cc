#include "query/diagnostic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::query {
namespace {

std::string Render(SourceLocation where, std::string_view text, std::string message = "bad") {
  Status s = DiagnosticStatus(Diagnostic{where, std::move(message)}, text, "q.pq");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return s.message();
}

TEST(DiagnosticTest, RendersPositionLineAndCaret) {
  EXPECT_EQ(Render({2, 11, 22}, "From c In Call\nJoin q In Requst On q -> c\nSelect COUNT",
                   "unknown tracepoint 'Requst'; did you mean 'Request'?"),
            "q.pq:2:11: unknown tracepoint 'Requst'; did you mean 'Request'?\n"
            "  Join q In Requst On q -> c\n"
            "            ^");
  EXPECT_EQ(Render({1, 1, 0}, "From"), "q.pq:1:1: bad\n  From\n  ^");
}

TEST(DiagnosticTest, FindsTheLineByNumberAndDropsCarriageReturns) {
  // No offset: the line number alone finds the line.
  EXPECT_EQ(Render({3, 2, 0}, "a\r\nb\r\ncd\r\n"), "q.pq:3:2: bad\n  cd\n   ^");
}

TEST(DiagnosticTest, CaretFollowsTabsAndUtf8) {
  EXPECT_EQ(Render({1, 3, 2}, "\t\tx"), "q.pq:1:3: bad\n  \t\tx\n  \t\t^");
  // "é" is two bytes and one column on a terminal.
  EXPECT_EQ(Render({1, 4, 3}, "\xc3\xa9 x"), "q.pq:1:4: bad\n  \xc3\xa9 x\n    ^");
}

TEST(DiagnosticTest, PositionsPastTheTextStayOnTheLastLine) {
  EXPECT_EQ(Render({1, 5, 4}, "From"), "q.pq:1:5: bad\n  From\n      ^");
  EXPECT_EQ(Render({2, 1, 5}, "From\n"), "q.pq:2:1: bad\n  \n  ^");
  EXPECT_EQ(Render({9, 1, 0}, "From"), "q.pq:9:1: bad\n  \n  ^");
}

TEST(DiagnosticTest, LongLinesShowAWindowAroundTheCaret) {
  std::string line = std::string(200, 'a') + "X" + std::string(200, 'b');
  std::string shown = Render({1, 201, 200}, line);
  EXPECT_EQ(shown, "q.pq:1:201: bad\n  ..." + std::string(70, 'a') + "X" + std::string(69, 'b') +
                       "...\n  " + std::string(73, ' ') + "^");
}

TEST(DiagnosticTest, NearestNameIgnoresCaseAndCountsSwaps) {
  std::vector<std::string> tracepoints = {"Request", "Reply", "Call", "Send", "Receive"};
  EXPECT_EQ(NearestName("Requst", tracepoints), "Request");
  EXPECT_EQ(NearestName("request", tracepoints), "Request");
  EXPECT_EQ(NearestName("Rqeuest", tracepoints), "Request");  // one swap
  EXPECT_EQ(NearestName("Recieve", tracepoints), "Receive");
  EXPECT_EQ(NearestName("Cal", tracepoints), "Call");
  EXPECT_EQ(NearestName("Rep", tracepoints), "");  // 2 edits; a third of 3 is 1
  EXPECT_EQ(NearestName("Disk", tracepoints), "");
  EXPECT_EQ(NearestName("", tracepoints), "");
  EXPECT_EQ(NearestName("Request", {}), "");
}

TEST(DiagnosticTest, NearestNameThresholdIsAThirdOfTheLength) {
  std::vector<std::string> names = {"DataNodeMetrics.incrBytesRead"};
  // 15 bytes: up to 5 edits, and the name is 14 longer.
  EXPECT_EQ(NearestName("DataNodeMetrics", names), "");
  // 32 bytes: up to 10 edits; Read to Written is 7.
  EXPECT_EQ(NearestName("DataNodeMetrics.incrBytesWritten", names),
            "DataNodeMetrics.incrBytesRead");
  EXPECT_EQ(NearestName("datanodemetrics.incrbytes", names), "DataNodeMetrics.incrBytesRead");
  EXPECT_EQ(NearestName("x", {{"y"}}), "y");  // at least 1
  EXPECT_EQ(NearestName("xy", {{"yz"}}), "");
}

TEST(DiagnosticTest, NearestNamePrefersTheClosestThenTheFirst) {
  std::vector<std::string> names = {"host", "hosts", "ghost", "post"};
  EXPECT_EQ(NearestName("hots", names), "host");
  EXPECT_EQ(NearestName("hostss", names), "hosts");
  EXPECT_EQ(NearestName("most", {{"post", "host"}}), "post");
}

TEST(DiagnosticTest, WithSuggestion) {
  std::vector<std::string> names = {"Request", "Reply"};
  EXPECT_EQ(WithSuggestion("unknown tracepoint 'Requst'", "Requst", names),
            "unknown tracepoint 'Requst'; did you mean 'Request'?");
  EXPECT_EQ(WithSuggestion("unknown tracepoint 'Disk'", "Disk", names),
            "unknown tracepoint 'Disk'");
  EXPECT_EQ(WithSuggestion("unknown 'Reply'", "Reply", names), "unknown 'Reply'");
}

}  // namespace
}  // namespace weft::query
