// The HTML report's data, read back from the page: the cap on embedded requests, the
// spans of a request, the trace check, and data that cannot end its <script> early.
#include "report/html.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "infer/truth/truth.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// Three requests: A calls B, which calls C (whose URL holds "</script>"); the second is
// the slowest; the third is A→B alone.
constexpr std::string_view kTrace =
    "1.000 CALL_SENT A B c1 recv=1.001 path=1 msg=1\n"
    "1.002 CALL_SENT B C c2 recv=1.003 path=1 msg=2 parent=1 http.url=</script><b>\n"
    "1.004 RET_SENT C B c2 recv=1.005 path=1 msg=3 parent=2\n"
    "1.006 RET_SENT B A c1 recv=1.007 path=1 msg=4 parent=1\n"
    "2.000 CALL_SENT A B c3 recv=2.001 path=2 msg=5\n"
    "2.002 CALL_SENT B C c4 recv=2.003 path=2 msg=6 parent=5\n"
    "2.050 RET_SENT C B c4 recv=2.051 path=2 msg=7 parent=6\n"
    "2.052 RET_SENT B A c3 recv=2.053 path=2 msg=8 parent=5\n"
    "3.000 CALL_SENT A B c5 recv=3.001 path=3 msg=9\n"
    "3.002 RET_SENT B A c5 recv=3.003 path=3 msg=10 parent=9\n";

struct Fixture {
  Trace trace;
  PathSet set;
};

Fixture Make() {
  Result<Trace> trace = ParseTextTrace(kTrace, "t.trace");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Result<TruthInference> set = InferFromTruth(*trace, {});
  EXPECT_TRUE(set.ok()) << set.status().message();
  return {std::move(*trace), std::move(set->paths)};
}

nlohmann::json PageData(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"weft-data\">";
  size_t begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  begin += open.size();
  size_t end = page.find("</script>", begin);
  return nlohmann::json::parse(page.substr(begin, end - begin));
}

TEST(HtmlReport, EmbedsAtMostTheCapWithTheirSpans) {
  Fixture f = Make();
  ASSERT_EQ(f.set.patterns.size(), 2u);
  Result<std::string> page = HtmlReport(
      f.set, {.title = "t", .trace = &f.trace, .max_waterfalls = 2, .examples_per_pattern = 1});
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ(page->find("http://"), page->find("http://www.w3.org/2000/svg"));  // no fetches
  EXPECT_EQ(page->find("src="), std::string::npos);
  nlohmann::json data = PageData(*page);
  EXPECT_EQ(data["patterns"].size(), 2u);
  EXPECT_EQ(data["instances"], 3);
  const nlohmann::json& requests = data["requests"];
  EXPECT_EQ(requests["total"], 3);
  EXPECT_EQ(requests["embedded"], 2);  // one per pattern: the slowest of each
  ASSERT_EQ(requests["items"].size(), 2u);
  const nlohmann::json& slowest = requests["items"][0];
  EXPECT_EQ(slowest["latency"], 53'000'000);
  EXPECT_EQ(slowest["lanes"], nlohmann::json({"A", "B", "C"}));
  ASSERT_EQ(slowest["spans"].size(), 2u);  // the two CALLs, their RETURNs folded in
  const nlohmann::json& inner = slowest["spans"][1];
  EXPECT_EQ(inner["parent"], 0);
  EXPECT_EQ(inner["send"], 2'000'000);
  EXPECT_EQ(inner["recv"], 3'000'000);
  EXPECT_EQ(inner["ret_send"], 50'000'000);
  EXPECT_EQ(inner["ret_recv"], 51'000'000);
  EXPECT_EQ(requests["items"][1]["spans"].size(), 1u);  // A→B alone
}

TEST(HtmlReport, DataCannotCloseItsScript) {
  Fixture f = Make();
  Result<std::string> page = HtmlReport(f.set, {.title = "</script>", .trace = &f.trace});
  ASSERT_TRUE(page.ok());
  nlohmann::json data = PageData(*page);  // parses: the data ended where it should
  EXPECT_EQ(data["title"], "</script>");
  EXPECT_NE(page->find("<\\/script><b>"), std::string::npos);
}

TEST(HtmlReport, RefusesAnotherTrace) {
  Fixture f = Make();
  Result<Trace> other = ParseTextTrace("1.000 CALL_SENT A B c1 recv=1.001\n", "o.trace");
  ASSERT_TRUE(other.ok());
  Result<std::string> page = HtmlReport(f.set, {.trace = &*other});
  EXPECT_FALSE(page.ok());
  // Without a trace: patterns only, no waterfalls.
  page = HtmlReport(f.set, {});
  ASSERT_TRUE(page.ok());
  EXPECT_FALSE(PageData(*page).contains("requests"));
}

}  // namespace
}  // namespace weft
