// The .paths.json file: exact round trips, and one clear error for each malformation.
#include "paths/paths_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "paths/path_set_builder.h"
#include "trace/text_format.h"

namespace weft {
namespace {

using nlohmann::json;

// Two shapes, one with delays of both signs (clock skew) and a zero, probabilities < 1.
PathsFile MakeSet() {
  Result<Trace> trace = ParseTextTrace(R"(
1.000000 CALL_SENT client WS1 recv=1.000100
1.000300 CALL_SENT WS1 DB recv=1.000400
1.000350 RET_SENT DB WS1 recv=1.000500
1.000500 RET_SENT WS1 client recv=1.000600
2.000000 CALL_SENT client WS1 recv=2.000100
2.000050 CALL_SENT WS1 DB recv=2.000400
2.000400 RET_SENT DB WS1 recv=2.000500
2.000900 RET_SENT WS1 client recv=2.001000
3.000000 MSG_SENT odd%09name WS1
)",
                                       "t.trace");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  PathSetBuilder builder(*trace, "test");
  auto add = [&](std::vector<uint32_t> ids, std::vector<int32_t> parents, double p) {
    std::vector<MessageId> m;
    for (uint32_t i : ids) m.push_back(MessageId(i));
    EXPECT_TRUE(builder.AddInstance(m, parents, p).ok());
  };
  add({0, 1, 2, 3}, {-1, 0, 1, 0}, 1.0);
  add({4, 5, 6, 7}, {-1, 0, 1, 0}, 0.3);
  add({8}, {-1}, 0.1);
  return {std::move(builder).Finish(), {{"unmatched_returns", 7}, {"negative", -2}}, {}};
}

void ExpectSameHistogram(const LatencyHistogram& a, const LatencyHistogram& b) {
  EXPECT_EQ(a.count(), b.count());
  EXPECT_EQ(a.zeros(), b.zeros());
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  EXPECT_EQ(a.sum(), b.sum());
  EXPECT_EQ(a.sum_of_squares(), b.sum_of_squares());
  EXPECT_EQ(a.positive().first_bin, b.positive().first_bin);
  EXPECT_EQ(a.positive().counts, b.positive().counts);
  EXPECT_EQ(a.negative().first_bin, b.negative().first_bin);
  EXPECT_EQ(a.negative().counts, b.negative().counts);
}

TEST(PathsFile, RoundTripIsExact) {
  const PathsFile file = MakeSet();
  const PathSet& set = file.paths;
  // The second instance's DB call was sent 50us before WS1's clock says the request
  // arrived (2.00005 - 2.0001): a negative delay, as under clock skew.
  EXPECT_EQ(set.patterns[0].elements[1].delay.min(), -50 * kMicrosecond);
  std::string text = FormatPaths(file);
  Result<PathsFile> back = ParsePaths(text, "t.paths.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(FormatPaths(*back), text);
  EXPECT_EQ(back->paths.algorithm, "test");
  EXPECT_EQ(back->paths.trace_messages, 9u);
  EXPECT_EQ(back->paths.trace_fingerprint, set.trace_fingerprint);
  ASSERT_EQ(back->paths.nodes.size(), set.nodes.size());
  EXPECT_EQ(back->paths.nodes.Get(NodeId(3)), "odd\tname");
  EXPECT_EQ(back->counters, file.counters);
  EXPECT_EQ(back->paths.instance_begin, set.instance_begin);
  EXPECT_EQ(back->paths.messages, set.messages);
  EXPECT_EQ(back->paths.parent, set.parent);
  EXPECT_EQ(back->paths.pattern, set.pattern);
  EXPECT_EQ(back->paths.probability, set.probability);
  ASSERT_EQ(back->paths.patterns.size(), set.patterns.size());
  for (size_t i = 0; i < set.patterns.size(); ++i) {
    const PathPattern& a = set.patterns[i];
    const PathPattern& b = back->paths.patterns[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.expected_count, b.expected_count);
    EXPECT_EQ(a.max_probability, b.max_probability);
    ExpectSameHistogram(a.latency, b.latency);
    ASSERT_EQ(a.elements.size(), b.elements.size());
    for (size_t k = 0; k < a.elements.size(); ++k) {
      EXPECT_EQ(a.elements[k].kind, b.elements[k].kind);
      EXPECT_EQ(a.elements[k].sender, b.elements[k].sender);
      EXPECT_EQ(a.elements[k].receiver, b.elements[k].receiver);
      EXPECT_EQ(a.elements[k].parent, b.elements[k].parent);
      ExpectSameHistogram(a.elements[k].delay, b.elements[k].delay);
    }
  }
  EXPECT_DOUBLE_EQ(back->paths.patterns[0].expected_count, 1.3);
}

TEST(PathsFile, WriteAndReadAFile) {
  const PathsFile set = MakeSet();
  std::string path =
      (std::filesystem::temp_directory_path() / "weft_paths_file_test.paths.json").string();
  ASSERT_TRUE(WritePaths(set, path).ok());
  Result<PathsFile> back = ReadPaths(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(FormatPaths(*back), FormatPaths(set));
  { std::ofstream(path, std::ios::trunc); }
  EXPECT_EQ(ReadPaths(path).status().message(), path + ": empty file, not a paths file");
  std::filesystem::remove(path);
  EXPECT_FALSE(ReadPaths(path).ok());
}

// A file of many pieces (the writer hands on pieces of a few MiB while formatting the
// rest): the bytes on disk are exactly FormatPaths's.
TEST(PathsFile, ALargeFileIsWrittenExactlyAsFormatted) {
  PathsFile file = MakeSet();
  PathSet& set = file.paths;
  const std::vector<PathPattern> two = set.patterns;
  for (int i = 0; i < 5000; ++i) set.patterns.push_back(two[size_t(i % 2)]);
  for (uint32_t m = 0; m < 1'500'000; ++m) {
    set.messages.push_back(MessageId(m));
    set.parent.push_back(-1);
    set.instance_begin.push_back(uint32_t(set.messages.size()));
    set.pattern.push_back(m % 5000);
    set.probability.push_back(1.0 / (1 + m % 7));
  }
  const std::string text = FormatPaths(file);
  ASSERT_GT(text.size(), size_t(30) << 20);
  std::string path =
      (std::filesystem::temp_directory_path() / "weft_paths_file_large_test.paths.json").string();
  ASSERT_TRUE(WritePaths(file, path).ok());
  Result<std::string> back = ReadFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == text) << "sizes " << back->size() << " and " << text.size();
  std::filesystem::remove(path);
}

// Applies `mutate` to the JSON of MakeSet() and returns ParsePaths's error.
std::string ErrorAfter(const std::function<void(json&)>& mutate) {
  json j = json::parse(FormatPaths(MakeSet()));
  mutate(j);
  Result<PathsFile> r = ParsePaths(j.dump(), "t.paths.json");
  return r.ok() ? "ok" : r.status().message();
}

TEST(PathsFile, RejectsEachMalformation) {
  std::string text = FormatPaths(MakeSet());
  for (size_t cut : {size_t(0), size_t(1), text.size() / 3, text.size() / 2, text.size() - 3}) {
    Result<PathsFile> r = ParsePaths(text.substr(0, cut), "t.paths.json");
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().message().rfind("t.paths.json: byte ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos);
  }
  EXPECT_EQ(ParsePaths("[1]", "t.paths.json").status().message(),
            "t.paths.json: top level: expected a JSON object");

  struct Case {
    std::function<void(json&)> mutate;
    std::string error;
  };
  const Case cases[] = {
      {[](json& j) { j["format"] = "other"; }, "format: not a weft paths file"},
      {[](json& j) { j["version"] = 2; },
       "version: version 2 is not supported (this weft reads 1)"},
      {[](json& j) { j.erase("patterns"); }, "top level: missing field 'patterns'"},
      {[](json& j) { j["trace_messages"] = -1; }, "trace_messages: expected an unsigned integer"},
      {[](json& j) { j["trace_messages"] = 5000000000ull; },
       "trace_messages: 5000000000 is more messages than a trace can hold"},
      {[](json& j) { j["trace_fingerprint"] = "12"; },
       "trace_fingerprint: expected 16 lower-case hex digits"},
      {[](json& j) { j["nodes"][1] = "client"; }, "nodes[1]: node 'client' appears twice"},
      {[](json& j) { j["counters"][0] = json::array({"x"}); },
       "counters[0]: expected [name, value]"},
      {[](json& j) { j["patterns"][0]["elements"][1]["sender"] = 9; },
       "patterns[0].elements[1].sender: node 9 is not among the 4 nodes"},
      {[](json& j) { j["patterns"][0]["elements"][1]["kind"] = "CALL"; },
       "patterns[0].elements[1].kind: unknown kind 'CALL' (CALL_SENT, RET_SENT or MSG_SENT)"},
      {[](json& j) { j["patterns"][0]["elements"][1]["parent"] = 1; },
       "patterns[0].elements[1].parent: parent 1 is not an earlier element (or -1 for element 0)"},
      {[](json& j) { j["patterns"][0]["elements"][0]["parent"] = 0; },
       "patterns[0].elements[0].parent: parent 0 is not an earlier element (or -1 for element 0)"},
      {[](json& j) { j["patterns"][0]["elements"][3]["parent"] = 1; },
       "patterns[0].key: does not match its elements, which give "
       "'C:client>WS1(C:WS1>DB(R:DB>WS1 R:WS1>client))'"},
      {[](json& j) { j["patterns"][0]["key"] = "C:client>WS1"; },
       "patterns[0].key: does not match its elements, which give "
       "'C:client>WS1(C:WS1>DB(R:DB>WS1) R:WS1>client)'"},
      {[](json& j) { j["patterns"][1] = j["patterns"][0]; },
       "patterns: key 'C:client>WS1(C:WS1>DB(R:DB>WS1) R:WS1>client)' appears twice"},
      {[](json& j) { j["patterns"][0]["elements"] = json::array(); },
       "patterns[0].elements: expected a non-empty array"},
      {[](json& j) { j["patterns"][0]["count"] = 3; },
       "patterns[0].count: is 3 but 2 instances have this pattern"},
      {[](json& j) { j["patterns"][0]["latency"]["min"] = "0"; },
       "patterns[0].latency.min: expected an integer"},
      {[](json& j) { j["patterns"][0]["latency"]["min"] = 1000000000; },
       "patterns[0].latency: min 1000000000 is above max 1000000"},
      {[](json& j) { j["patterns"][0]["latency"]["positive"]["first_bin"] = 5000; },
       "patterns[0].latency.positive: bins 5000..5027 are outside the range of durations"},
      {[](json& j) { j["patterns"][0]["elements"][1]["delay"]["negative"]["counts"][0] = -1; },
       "patterns[0].elements[1].delay.negative.counts[0]: expected an unsigned integer"},
      {[](json& j) { j["patterns"][1]["max_probability"] = nullptr; },
       "patterns[1].max_probability: expected a number"},
      {[](json& j) { j["instances"]["messages"][2] = 9; },
       "instances.messages[2]: 9 is outside [0, 8]"},
      {[](json& j) { j["instances"]["messages"][2] = 5; },
       "instances.messages: message 5 is in two instances"},
      {[](json& j) { j["instances"]["pattern"][2] = 2; },
       "instances.pattern[2]: 2 is outside [0, 1]"},
      {[](json& j) { j["instances"]["pattern"][2] = 0; },
       "instances[2]: has 1 messages but its pattern 0 has 4 elements"},
      {[](json& j) { j["instances"]["parent"][3] = 1; },
       "instances[0]: element 3 has parent 1 but its pattern 0 has 0"},
      {[](json& j) { j["instances"]["parent"].erase(0); }, "instances: 9 messages but 8 parents"},
      {[](json& j) { j["instances"]["begin"][1] = 0; },
       "instances[0]: is empty (begin must increase)"},
      {[](json& j) { j["instances"]["begin"][0] = 1; },
       "instances.begin: must start at 0 and end at the 9 messages"},
      {[](json& j) { j["instances"]["begin"].erase(3); },
       "instances: begin has 3 entries, pattern 3 and probability 3: expected n+1, n, n"},
      {[](json& j) { j["instances"]["probability"][0] = 1.5; },
       "instances.probability[0]: probability 1.5 is outside (0, 1]"},
      {[](json& j) { j["instances"] = json::array(); }, "instances: expected an object"},
      {[](json& j) { j["patterns"] = json::array(); },
       "instances.pattern[0]: 0 is outside [0, -1]"},
      {[](json& j) { j["patterns"][0]["max_probability"] = 2; },
       "patterns[0].max_probability: 2 is outside [0, 1]"},
  };
  for (const Case& c : cases) EXPECT_EQ(ErrorAfter(c.mutate), "t.paths.json: " + c.error);
}

}  // namespace
}  // namespace weft
