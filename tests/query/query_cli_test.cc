// `weft query` as a user runs it: a generated multitier trace whose client calls carry a
// URL, its truth paths, and queries in every output format, checked against counts taken
// straight from the trace's text; then the error paths (a bad query, an unknown
// tracepoint, paths from another trace, --plot without --interval).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::CommandRun;
using testing::Weft;

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The URL each request (ground-truth path) asked for; the last needs quoting in CSV.
std::string UrlOf(int path) {
  static const char* kUrls[] = {"/buy", "/home", "/search?q=a,b"};
  return kUrls[path % 3];
}

// The field `key=` of a text trace line, or "".
std::string Field(const std::string& line, const std::string& key) {
  size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 2;
  return line.substr(start, line.find(' ', start) - start);
}

class QueryCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("weft-query-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    CommandRun gen = Weft("gen multitier --messages 3000 --seed 3 -o " + Path("gen.txt"));
    ASSERT_EQ(gen.rc, 0) << gen.output;
    // The client's calls carry http.url; count the database calls of each request.
    std::ifstream in(dir_ / "gen.txt");
    std::ofstream out(dir_ / "mt.txt");
    std::map<int, int> db_calls;
    std::map<int, std::string> url;
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string time, op, sender, receiver;
      fields >> time >> op >> sender >> receiver;
      if (op == "CALL_SENT" && !Field(line, "path").empty()) {
        int path = std::stoi(Field(line, "path"));
        if (sender == "CLIENT") {
          url[path] = UrlOf(path);
          line += " http.url=" + UrlOf(path);
        }
        if (receiver == "DB") ++db_calls[path];
      }
      out << line << '\n';
    }
    out.close();
    for (const auto& [path, calls] : db_calls) expected_db_calls_[url.at(path)] += calls;
    requests_ = url.size();
    CommandRun infer = Weft("infer " + Path("mt.txt") + " --algo truth -o " + Path("mt.paths"));
    ASSERT_EQ(infer.rc, 0) << infer.output;
    CommandRun other = Weft("gen children-parallel --messages 200 -o " + Path("cp.txt"));
    ASSERT_EQ(other.rc, 0) << other.output;
    other = Weft("infer " + Path("cp.txt") + " --algo truth -o " + Path("cp.paths"));
    ASSERT_EQ(other.rc, 0) << other.output;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string Path(const std::string& name) { return (dir_ / name).string(); }
  // weft query over the multitier trace and its truth paths.
  static CommandRun Query(const std::string& args) {
    return Weft("query " + Path("mt.txt") + " " + Path("mt.paths") + " " + args);
  }

  static fs::path dir_;
  static std::map<std::string, int> expected_db_calls_;  // by URL
  static size_t requests_;
};

fs::path QueryCliTest::dir_;
std::map<std::string, int> QueryCliTest::expected_db_calls_;
size_t QueryCliTest::requests_ = 0;

// Database calls per URL (Pivot Tracing Q2's shape): the database's Requests joined with
// the first Request of theirs, where the client's URL arrived.
const char* kDbCallsPerUrl =
    "'From d In Request Join q In First(Request) On q -> d Where d.procname == \"DB\" "
    "GroupBy q.http.url Select q.http.url, COUNT'";

TEST_F(QueryCliTest, TableCountsDatabaseCallsPerUrl) {
  ASSERT_EQ(expected_db_calls_.size(), 3u);
  CommandRun run = Query(kDbCallsPerUrl);
  ASSERT_EQ(run.rc, 0) << run.output;
  std::string expected = "http.url       COUNT\n";
  for (const auto& [url, calls] : expected_db_calls_)
    expected += fmt::format("{:<13}  {:>5}\n", url, calls);
  EXPECT_EQ(run.output, expected);
}

TEST_F(QueryCliTest, CsvQuotesAndJsonIsTyped) {
  CommandRun csv = Query(std::string(kDbCallsPerUrl) + " --format csv");
  ASSERT_EQ(csv.rc, 0) << csv.output;
  std::string expected = "http.url,COUNT\n";
  for (const auto& [url, calls] : expected_db_calls_) {
    expected +=
        fmt::format("{},{}\n", url.find(',') != std::string::npos ? "\"" + url + "\"" : url, calls);
  }
  EXPECT_EQ(csv.output, expected);

  CommandRun json = Query(std::string(kDbCallsPerUrl) + " --format json");
  ASSERT_EQ(json.rc, 0) << json.output;
  nlohmann::json j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["columns"], nlohmann::json::parse(R"(["http.url","COUNT"])"));
  EXPECT_EQ(j["weighted"], false);
  EXPECT_EQ(j["aggregated"], true);
  EXPECT_EQ(j["counters"]["requests"], requests_);
  std::string paths = ReadWhole(dir_ / "mt.paths");
  size_t at = paths.find("\"trace_fingerprint\":\"");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(j["trace_fingerprint"], paths.substr(at + 21, 16));
  ASSERT_EQ(j["rows"].size(), expected_db_calls_.size());
  size_t r = 0;
  for (const auto& [url, calls] : expected_db_calls_) {
    EXPECT_EQ(j["rows"][r][0], url);
    EXPECT_EQ(j["rows"][r][1].get<double>(), calls);
    ++r;
  }
}

TEST_F(QueryCliTest, QueryFromAFileOrStdinAndToAFile) {
  std::ofstream(dir_ / "q.pq") << "From d In Request\n"
                                  "Join q In First(Request) On q -> d\n"
                                  "Where d.procname == \"DB\"\n"
                                  "GroupBy q.http.url\n"
                                  "Select q.http.url, COUNT\n";
  CommandRun inline_query = Query(kDbCallsPerUrl);
  CommandRun file = Query("-f " + Path("q.pq"));
  EXPECT_EQ(file.rc, 0) << file.output;
  EXPECT_EQ(file.output, inline_query.output);
  CommandRun in = Query("-f - < " + Path("q.pq"));
  EXPECT_EQ(in.rc, 0) << in.output;
  EXPECT_EQ(in.output, inline_query.output);
  CommandRun to_file = Query("-f " + Path("q.pq") + " --format csv -o " + Path("out.csv"));
  EXPECT_EQ(to_file.rc, 0) << to_file.output;
  EXPECT_EQ(to_file.output, "");
  EXPECT_TRUE(ReadWhole(dir_ / "out.csv").starts_with("http.url,COUNT\n"));
  // An error in a file names the file, the line and the column.
  std::ofstream(dir_ / "bad.pq") << "From c In Call\nWhere c.latency >\nSelect c.node\n";
  CommandRun bad = Query("-f " + Path("bad.pq"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.output.find("weft query: " + Path("bad.pq") + ":3:1: "), std::string::npos)
      << bad.output;
}

TEST_F(QueryCliTest, IntervalsAddUpToTheTotalAndPlot) {
  CommandRun run =
      Query(std::string(kDbCallsPerUrl) + " --format csv --interval 1s --plot " + Path("urls.svg"));
  ASSERT_EQ(run.rc, 0) << run.output;
  std::istringstream lines(run.output);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "interval,http.url,COUNT");
  std::map<std::string, int> totals;
  int last_interval = -1;
  while (std::getline(lines, line)) {
    int interval = std::stoi(line.substr(0, line.find(',')));
    EXPECT_GE(interval, last_interval);  // in time order
    last_interval = interval;
    std::string url = line.substr(line.find(',') + 1, line.rfind(',') - line.find(',') - 1);
    if (url.starts_with('"')) url = url.substr(1, url.size() - 2);
    totals[url] += std::stoi(line.substr(line.rfind(',') + 1));
  }
  EXPECT_EQ(totals, expected_db_calls_);
  EXPECT_GE(last_interval, 5);  // the trace is ~8 s long
  std::string svg = ReadWhole(dir_ / "urls.svg");
  EXPECT_TRUE(svg.starts_with("<svg ")) << svg;
  size_t paths = 0;
  for (size_t at = svg.find("<path "); at != std::string::npos; at = svg.find("<path ", at + 1))
    ++paths;
  EXPECT_EQ(paths, 3u);
  EXPECT_NE(svg.find(">/search?q=a,b</text>"), std::string::npos);

  CommandRun no_interval = Query(std::string(kDbCallsPerUrl) + " --plot " + Path("x.svg"));
  EXPECT_EQ(no_interval.rc, 1);
  EXPECT_NE(no_interval.output.find("weft query: --plot draws a time series: give --interval"),
            std::string::npos)
      << no_interval.output;
  EXPECT_FALSE(fs::exists(dir_ / "x.svg"));

  // A last column that is not a number cannot be drawn; the result is still printed.
  CommandRun strings = Query(
      "'From d In Request Join q In First(Request) On q -> d Where d.procname == \"DB\" "
      "GroupBy q.http.url Select COUNT, q.http.url' --interval 1s --plot " +
      Path("y.svg"));
  EXPECT_EQ(strings.rc, 1);
  EXPECT_TRUE(strings.output.starts_with("interval  COUNT  http.url\n")) << strings.output;
  EXPECT_NE(strings.output.find("\nweft query: cannot plot 'http.url': the last column is the "
                                "y axis and must be a number"),
            std::string::npos)
      << strings.output;
  EXPECT_FALSE(fs::exists(dir_ / "y.svg"));
}

TEST_F(QueryCliTest, ListsTracepointsWithTheTracesAttributes) {
  CommandRun run = Weft("query --tracepoints " + Path("mt.txt"));
  ASSERT_EQ(run.rc, 0) << run.output;
  for (const char* name : {"Request ", "Call ", "Reply ", "Send ", "Receive "})
    EXPECT_NE(("\n" + run.output).find(std::string("\n") + name), std::string::npos) << name;
  EXPECT_TRUE(run.output.starts_with("Request ")) << run.output;
  EXPECT_NE(run.output.find("  exports: host, procname, procid, tracepoint, timestamp"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("http.url"), std::string::npos) << run.output;
  // With PATHS, they must have been inferred from this trace.
  EXPECT_EQ(Weft("query --tracepoints " + Path("mt.txt") + " " + Path("mt.paths")).output,
            run.output);
  EXPECT_EQ(Weft("query --tracepoints " + Path("mt.txt") + " " + Path("cp.paths")).rc, 1);
}

TEST_F(QueryCliTest, ExplainShowsBothPlansAndTheirBaggage) {
  // A filter on the joined side: the optimizer moves it to Request, before the PACK, so
  // fewer tuples travel in baggage.
  std::string query =
      "'From c In Call Join q In Request On q -> c Where q.node == \"WS1\" GroupBy c.peer "
      "Select c.peer, COUNT'";
  CommandRun run = Query("--explain " + query);
  ASSERT_EQ(run.rc, 0) << run.output;
  const std::string& out = run.output;
  size_t before = out.find("advice before rewriting:\n");
  size_t after = out.find("advice after rewriting (Pivot Tracing Table 3):\n");
  size_t baggage = out.find(fmt::format("baggage over {} requests:\n", requests_));
  ASSERT_NE(before, std::string::npos) << out;
  ASSERT_NE(after, std::string::npos) << out;
  ASSERT_NE(baggage, std::string::npos) << out;
  EXPECT_LT(before, after);
  EXPECT_LT(after, baggage);
  EXPECT_NE(out.find("OBSERVE"), std::string::npos);
  EXPECT_NE(out.find("EMIT"), std::string::npos);
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  // The packed tuples per plan: the optimized plan packs fewer.
  auto packed = [&](const std::string& plan) {
    size_t at = out.find("\n  " + plan + " ", baggage);
    EXPECT_NE(at, std::string::npos) << plan << "\n" << out;
    std::istringstream fields(out.substr(at + 3 + plan.size()));
    uint64_t n = 0;
    fields >> n;
    return n;
  };
  uint64_t unoptimized = packed("unoptimized"), optimized = packed("optimized");
  EXPECT_GT(unoptimized, 0u);
  EXPECT_LT(optimized, unoptimized);
  EXPECT_NE(out.find("\n  reduction "), std::string::npos);
  // Then the result, the same as without --explain, and as without rewriting.
  CommandRun plain = Query(query);
  ASSERT_EQ(plain.rc, 0);
  EXPECT_TRUE(out.ends_with("\n\n" + plain.output)) << out;
  EXPECT_EQ(Query("--no-optimize " + query).output, plain.output);
}

TEST_F(QueryCliTest, ABadQueryNamesItsPositionWithACaret) {
  CommandRun run = Query("'From c In Call Where c.latency > Select c.node'");
  EXPECT_EQ(run.rc, 1);
  EXPECT_TRUE(run.output.starts_with("weft query: query:1:34: ")) << run.output;
  EXPECT_NE(run.output.find("\n  From c In Call Where c.latency > Select c.node\n" +
                            std::string(2 + 33, ' ') + "^\n"),
            std::string::npos)
      << run.output;
}

TEST_F(QueryCliTest, AnUnknownTracepointSuggestsTheNearest) {
  CommandRun run = Query("'From c In Call Join q In Requst On q -> c Select c.node'");
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.output.find("weft query: query:1:26: unknown tracepoint 'Requst'; did you mean "
                            "'Request'?\n"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("\n" + std::string(2 + 25, ' ') + "^\n"), std::string::npos)
      << run.output;
  CommandRun field = Query("'From c In Call Select c.nod'");
  EXPECT_EQ(field.rc, 1);
  EXPECT_NE(field.output.find("did you mean 'node'?"), std::string::npos) << field.output;
}

TEST_F(QueryCliTest, PathsFromAnotherTraceAreRefused) {
  CommandRun run =
      Weft("query " + Path("mt.txt") + " " + Path("cp.paths") + " 'From c In Call Select c.node'");
  EXPECT_EQ(run.rc, 1);
  EXPECT_NE(run.output.find("weft query: " + Path("cp.paths") + " over " + Path("mt.txt") + ": "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("not inferred from this trace"), std::string::npos) << run.output;
}

TEST_F(QueryCliTest, MissingArgumentsAreExplained) {
  CommandRun no_query = Query("");
  EXPECT_EQ(no_query.rc, 1);
  EXPECT_NE(no_query.output.find("give the query"), std::string::npos) << no_query.output;
  CommandRun format = Query(std::string(kDbCallsPerUrl) + " --format xml");
  EXPECT_EQ(format.rc, 1);
  EXPECT_NE(format.output.find("unknown format 'xml'"), std::string::npos) << format.output;
  CommandRun interval = Query(std::string(kDbCallsPerUrl) + " --interval soon");
  EXPECT_EQ(interval.rc, 1);
  EXPECT_NE(interval.output.find("--interval"), std::string::npos) << interval.output;
}

}  // namespace
}  // namespace weft
