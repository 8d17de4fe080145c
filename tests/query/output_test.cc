// Exact text of query results as tables, CSV and JSON, and the shape of their SVG plots.
#include "query/output.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace weft::query {
namespace {

ResultRow Row(std::vector<Value> values, double weight = 1, TimeNs interval = kNoTime) {
  return ResultRow{interval, std::move(values), weight};
}

// Database calls per URL: strings, integers, floats and a null.
QueryResult Aggregated() {
  QueryResult r;
  r.columns = {"q.url", "COUNT", "AVERAGE(c.latency)"};
  r.aggregated = true;
  r.rows = {Row({Value::String("/cart"), Value::Int(12), Value::Float(1534.25)}),
            Row({Value::String("/checkout, now"), Value::Int(3), Value::Float(0.5)}),
            Row({Value::String("/\"quoted\""), Value::Int(100), Value::Null()})};
  r.counters = {.requests = 115,
                .events = 900,
                .tuples_observed = 400,
                .tuples_packed = 115,
                .tuples_emitted = 115,
                .baggage_tuples_max = 1,
                .baggage_tuples_mean = 1};
  return r;
}

TEST(OutputTest, TableAlignsNumbersRightAndStringsLeft) {
  EXPECT_EQ(FormatTable(Aggregated(), {}),
            "q.url           COUNT  AVERAGE(c.latency)\n"
            "/cart              12             1534.25\n"
            "/checkout, now      3                 0.5\n"
            "/\"quoted\"         100                   -\n");
}

TEST(OutputTest, CsvQuotesPerRfc4180) {
  EXPECT_EQ(FormatCsv(Aggregated(), {}),
            "q.url,COUNT,AVERAGE(c.latency)\n"
            "/cart,12,1534.25\n"
            "\"/checkout, now\",3,0.5\n"
            "\"/\"\"quoted\"\"\",100,\n");
}

TEST(OutputTest, JsonHasTypedValuesAndCounters) {
  EXPECT_EQ(FormatJson(Aggregated(), {}),
            "{\n"
            "  \"columns\": [\"q.url\",\"COUNT\",\"AVERAGE(c.latency)\"],\n"
            "  \"aggregated\": true,\n"
            "  \"weighted\": false,\n"
            "  \"rows\": [\n"
            "    [\"/cart\",12,1534.25],\n"
            "    [\"/checkout, now\",3,0.5],\n"
            "    [\"/\\\"quoted\\\"\",100,null]\n"
            "  ],\n"
            "  \"counters\": {\"requests\":115,\"events\":900,\"tuples_observed\":400,"
            "\"tuples_packed\":115,\"tuples_emitted\":115,\"baggage_tuples_max\":1,"
            "\"baggage_tuples_mean\":1.0}\n"
            "}\n");
}

TEST(OutputTest, RowsWithoutAggregatesRepeatByIntegralWeight) {
  QueryResult r;
  r.columns = {"r.node", "r.latency"};
  r.rows = {Row({Value::String("web"), Value::Int(30)}, 2),
            Row({Value::String("db"), Value::Int(5)}, 1)};
  EXPECT_EQ(FormatTable(r, {}),
            "r.node  r.latency\n"
            "web            30\n"
            "web            30\n"
            "db              5\n");
  EXPECT_EQ(FormatCsv(r, {}), "r.node,r.latency\nweb,30\nweb,30\ndb,5\n");
}

TEST(OutputTest, FractionalWeightsGetAWeightColumnAndANote) {
  QueryResult r;
  r.columns = {"r.node"};
  r.rows = {Row({Value::String("web")}, 1.5), Row({Value::String("db")}, 0.25)};
  r.counters.weighted = true;
  const std::string note =
      "# weighted by instance probability: tuples from statistically inferred paths count by "
      "their instance's probability, so counts and sums may be fractional\n";
  EXPECT_EQ(FormatTable(r, {}), note +
                                    "r.node  weight\n"
                                    "web        1.5\n"
                                    "db        0.25\n");
  EXPECT_EQ(FormatCsv(r, {}), note + "r.node,weight\nweb,1.5\ndb,0.25\n");
  std::string json = FormatJson(r, {});
  EXPECT_NE(json.find("\"weighted\": true,"), std::string::npos) << json;
  EXPECT_NE(json.find("[\"web\",1.5]"), std::string::npos) << json;
}

TEST(OutputTest, WeightedAggregatesSayItWithoutAWeightColumn) {
  QueryResult r = Aggregated();
  r.counters.weighted = true;
  std::string csv = FormatCsv(r, {});
  EXPECT_TRUE(csv.starts_with("# weighted by instance probability: ")) << csv;
  EXPECT_NE(csv.find("\nq.url,COUNT,AVERAGE(c.latency)\n"), std::string::npos) << csv;
}

QueryResult Series() {
  QueryResult r;
  r.columns = {"q.url", "COUNT"};
  r.aggregated = true;
  const TimeNs origin = 1'000 * kSecond;
  r.rows = {Row({Value::String("/a"), Value::Int(4)}, 4, origin),
            Row({Value::String("/b"), Value::Int(1)}, 1, origin),
            Row({Value::String("/a"), Value::Int(6)}, 6, origin + 500 * kMillisecond),
            Row({Value::String("/a"), Value::Int(2)}, 2, origin + 1500 * kMillisecond)};
  return r;
}

TEST(OutputTest, IntervalColumnIsSecondsSinceTheOrigin) {
  OutputOptions options{
      .interval = 500 * kMillisecond, .origin = 1'000 * kSecond, .trace_fingerprint = 0xabc};
  EXPECT_EQ(FormatTable(Series(), options),
            "interval  q.url  COUNT\n"
            "     0.0  /a         4\n"
            "     0.0  /b         1\n"
            "     0.5  /a         6\n"
            "     1.5  /a         2\n");
  EXPECT_EQ(FormatCsv(Series(), options),
            "interval,q.url,COUNT\n0.0,/a,4\n0.0,/b,1\n0.5,/a,6\n1.5,/a,2\n");
  EXPECT_EQ(FormatJson(Series(), options),
            "{\n"
            "  \"columns\": [\"interval\",\"q.url\",\"COUNT\"],\n"
            "  \"aggregated\": true,\n"
            "  \"weighted\": false,\n"
            "  \"interval_ns\": 500000000,\n"
            "  \"origin_ns\": 1000000000000,\n"
            "  \"trace_fingerprint\": \"0000000000000abc\",\n"
            "  \"rows\": [\n"
            "    [0,\"/a\",4],\n"
            "    [0,\"/b\",1],\n"
            "    [0.5,\"/a\",6],\n"
            "    [1.5,\"/a\",2]\n"
            "  ],\n"
            "  \"counters\": {\"requests\":0,\"events\":0,\"tuples_observed\":0,"
            "\"tuples_packed\":0,\"tuples_emitted\":0,\"baggage_tuples_max\":0,"
            "\"baggage_tuples_mean\":0.0}\n"
            "}\n");
  OutputOptions seconds{.interval = kSecond, .origin = 0};
  QueryResult one;
  one.columns = {"COUNT"};
  one.aggregated = true;
  one.rows = {Row({Value::Int(7)}, 7, 3 * kSecond)};
  EXPECT_EQ(FormatTable(one, seconds), "interval  COUNT\n       3      7\n");
}

TEST(OutputTest, FloatsReadPlainlyInTablesAndExactlyInCsv) {
  QueryResult r;
  r.columns = {"x"};
  r.aggregated = true;
  for (double x : {10005200.345678, 1.5e20, 0.000123456, 1e-7, 2.0, -0.25})
    r.rows.push_back(Row({Value::Float(x)}));
  EXPECT_EQ(FormatTable(r, {}),
            "          x\n"
            "   10005200\n"
            "    1.5e+20\n"
            "0.000123456\n"
            "      1e-07\n"
            "          2\n"
            "      -0.25\n");
  EXPECT_EQ(FormatCsv(r, {}), "x\n10005200.345678\n1.5e+20\n0.000123456\n1e-07\n2\n-0.25\n");
}

TEST(OutputTest, EmptyResultsKeepTheirHeader) {
  QueryResult r;
  r.columns = {"a", "b"};
  EXPECT_EQ(FormatTable(r, {}), "a  b\n");
  EXPECT_EQ(FormatCsv(r, {}), "a,b\n");
  EXPECT_NE(FormatJson(r, {}).find("\"rows\": [],\n"), std::string::npos);
}

TEST(OutputTest, TableEscapesControlCharactersAndCountsUtf8Width) {
  QueryResult r;
  r.columns = {"sql", "n"};
  r.aggregated = true;
  r.rows = {Row({Value::String("SELECT 1\nFROM t"), Value::Int(1)}),
            Row({Value::String("héllo"), Value::Int(22)})};
  EXPECT_EQ(FormatTable(r, {}),
            "sql                n\n"
            "SELECT 1\\nFROM t   1\n"
            "héllo             22\n");
  EXPECT_EQ(FormatCsv(r, {}), "sql,n\n\"SELECT 1\nFROM t\",1\nhéllo,22\n");
}

TEST(OutputTest, ParsesFormatNames) {
  EXPECT_EQ(*ParseOutputFormat("table"), OutputFormat::kTable);
  EXPECT_EQ(*ParseOutputFormat("csv"), OutputFormat::kCsv);
  EXPECT_EQ(*ParseOutputFormat("json"), OutputFormat::kJson);
  EXPECT_FALSE(ParseOutputFormat("xml").ok());
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(OutputTest, PlotDrawsOnePathPerGroupWithALegend) {
  PlotOptions options{.interval = 500 * kMillisecond, .origin = 1'000 * kSecond};
  Result<std::string> svg = PlotResultSvg(Series(), options);
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  EXPECT_TRUE(svg->starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")) << *svg;
  EXPECT_TRUE(svg->ends_with("</svg>\n"));
  EXPECT_EQ(Count(*svg, "<path "), 2u) << *svg;
  // /a is larger, so first; it misses the interval at 1.0 s, so its line breaks there.
  EXPECT_NE(svg->find("<title>/a</title>/a</text>"), std::string::npos) << *svg;
  EXPECT_NE(svg->find("<title>/b</title>/b</text>"), std::string::npos) << *svg;
  EXPECT_LT(svg->find("<title>/a</title>/a"), svg->find("<title>/b</title>/b"));
  EXPECT_NE(svg->find("COUNT per 500ms"), std::string::npos);
  EXPECT_NE(svg->find("seconds since 1000<"), std::string::npos) << *svg;
  size_t a = svg->find("<path d=\"");
  std::string d = svg->substr(a, svg->find('"', a + 9) - a);
  EXPECT_EQ(Count(d, "M"), 2u) << d;
  EXPECT_EQ(Count(d, "L"), 1u) << d;
}

// Stacked bars (Figure 9b's form): one bar per row of the last interval, a segment per
// column but the first and COUNT, which goes into the label; a zero draws no segment.
TEST(OutputTest, BarsStackTheColumnsOfTheLastInterval) {
  QueryResult r;
  r.columns = {"slow", "COUNT", "queue", "disk"};
  r.aggregated = true;
  r.rows = {Row({Value::Int(0), Value::Int(9), Value::Float(5), Value::Float(5)}, 1, 0),
            Row({Value::Int(0), Value::Int(70), Value::Float(10), Value::Float(20)}, 1, kSecond),
            Row({Value::Int(1), Value::Int(3), Value::Float(0), Value::Float(300)}, 1, kSecond)};
  Result<std::string> svg = PlotBarsSvg(r, {.interval = kSecond, .title = "where"});
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  EXPECT_TRUE(svg->ends_with("</svg>\n"));
  EXPECT_NE(svg->find(">0 (n=70)</text>"), std::string::npos) << *svg;
  EXPECT_NE(svg->find(">1 (n=3)</text>"), std::string::npos) << *svg;
  EXPECT_EQ(svg->find("n=9"), std::string::npos);  // an earlier interval
  EXPECT_EQ(Count(*svg, "<title>queue: "), 1u) << *svg;
  EXPECT_EQ(Count(*svg, "<title>disk: "), 2u) << *svg;
  EXPECT_NE(svg->find(">where</text>"), std::string::npos);
  r.rows = {Row({Value::Int(0), Value::Int(1), Value::Null(), Value::Float(0)})};
  EXPECT_FALSE(PlotBarsSvg(r, {.interval = kSecond}).ok());
}

TEST(OutputTest, PlotSumsGroupsBeyondTheLimitAsOther) {
  QueryResult r;
  r.columns = {"node", "port", "SUM(bytes)"};
  r.aggregated = true;
  // Values are views: the names outlive the result.
  std::vector<std::string> names;
  for (int g = 0; g < 20; ++g) names.push_back("host" + std::to_string(g));
  for (int g = 0; g < 20; ++g) {
    for (int t = 0; t < 3; ++t) {
      r.rows.push_back(
          Row({Value::String(names[size_t(g)]), Value::Int(80), Value::Float(1000.0 * (g + 1) + t)},
              1, t * kSecond));
    }
  }
  Result<std::string> svg = PlotResultSvg(r, {.interval = kSecond});
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  EXPECT_EQ(Count(*svg, "<path "), 12u);
  EXPECT_NE(svg->find(">other (9 groups, summed)</text>"), std::string::npos) << *svg;
  EXPECT_NE(svg->find(">host19, 80</text>"), std::string::npos);  // the largest stays
  EXPECT_EQ(svg->find(">host0, 80</text>"), std::string::npos);   // the smallest is summed
  EXPECT_NE(svg->find("SUM(bytes)"), std::string::npos);
}

TEST(OutputTest, PlotRefusesWhatItCannotDraw) {
  EXPECT_FALSE(PlotResultSvg(Series(), {}).ok());  // no interval
  QueryResult strings = Series();
  strings.columns = {"COUNT", "q.url"};
  for (ResultRow& row : strings.rows) std::swap(row.values[0], row.values[1]);
  Result<std::string> svg = PlotResultSvg(strings, {.interval = 500 * kMillisecond});
  ASSERT_FALSE(svg.ok());
  EXPECT_NE(svg.status().message().find("must be a number"), std::string::npos);
  QueryResult twice = Series();
  twice.rows.push_back(twice.rows[0]);
  twice.rows.back().values[1] = Value::Int(9);
  svg = PlotResultSvg(twice, {.interval = 500 * kMillisecond, .origin = 1'000 * kSecond});
  ASSERT_FALSE(svg.ok());
  EXPECT_NE(svg.status().message().find("several values in one interval"), std::string::npos);
}

TEST(OutputTest, PlotEscapesTextAndKeepsLongLabelsInside) {
  QueryResult r;
  r.columns = {"sql", "AVERAGE(latency)"};
  r.aggregated = true;
  std::string long_sql = "SELECT * FROM items WHERE name < 'a' AND " + std::string(100, 'x');
  r.rows = {Row({Value::String(long_sql), Value::Float(2.5e7)}, 1, 0),
            Row({Value::String(long_sql), Value::Float(3.5e7)}, 1, kSecond)};
  Result<std::string> svg = PlotResultSvg(r, {.interval = kSecond});
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  EXPECT_EQ(svg->find("< 'a'"), std::string::npos);
  EXPECT_NE(svg->find("&lt; 'a'"), std::string::npos);
  EXPECT_NE(svg->find("…</text>"), std::string::npos);             // the legend label, shortened
  EXPECT_NE(svg->find(">30M</text>"), std::string::npos) << *svg;  // SI ticks
  EXPECT_NE(svg->find(">0</text>"), std::string::npos) << *svg;
}

// The whole SVG of a small series against tests/data/query/plot.svg, so that a change to
// the drawing shows in review (open the file to see it). When a change is intended:
//     WEFT_UPDATE_GOLDEN=1 ctest -R OutputTest.PlotMatchesItsGoldenFile
TEST(OutputTest, PlotMatchesItsGoldenFile) {
  QueryResult r;
  r.columns = {"q.node", "c.peer", "AVERAGE(c.latency)"};
  r.aggregated = true;
  const std::string_view nodes[] = {"WS1", "WS2", "AP1"};
  for (int t = 0; t < 10; ++t) {
    for (int g = 0; g < 3; ++g) {
      if (g == 2 && (t == 4 || t == 5)) continue;  // a gap
      double latency = 1e6 * (10 * (g + 1) + (t * (g + 3)) % 7) + 250'000 * g;
      r.rows.push_back(Row({Value::String(nodes[g]), Value::String("DB"), Value::Float(latency)}, 1,
                           5 * kSecond + t * kSecond));
    }
  }
  Result<std::string> svg = PlotResultSvg(
      r, {.interval = kSecond, .origin = 5 * kSecond, .title = "mean DB latency per caller"});
  ASSERT_TRUE(svg.ok()) << svg.status().message();
  const std::filesystem::path golden = std::filesystem::path(WEFT_TEST_DATA) / "query/plot.svg";
  const char* update = std::getenv("WEFT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary) << *svg;
    return;
  }
  std::ifstream in(golden, std::ios::binary);
  ASSERT_TRUE(in) << golden << " is missing; make it with WEFT_UPDATE_GOLDEN=1";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(*svg, expected.str());
}

}  // namespace
}  // namespace weft::query
