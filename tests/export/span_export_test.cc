// weft export's writers: export then import gives back the same trees (OTLP, Jaeger,
// Zipkin), the Chrome JSON follows the trace-event format, and the Jaeger JSON has every
// field of the schema Jaeger's UI reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "export/spans_from_paths.h"
#include "gen/gen.h"
#include "import/span.h"
#include "import/span_trace.h"
#include "infer/nesting/nesting.h"
#include "infer/truth/truth.h"

namespace weft {
namespace {

using Json = nlohmann::json;

Trace Generate(uint64_t messages) {
  Result<GenConfig> config = LoadGenConfig("multitier");
  EXPECT_TRUE(config.ok());
  config->messages = messages;
  Result<Trace> trace = MakeTrace(*config);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

// Each instance as its pattern key and root start: the tree, node names and all.
std::multiset<std::pair<std::string, TimeNs>> Trees(const PathSet& set, const Trace& trace,
                                                    TimeNs round_to) {
  std::multiset<std::pair<std::string, TimeNs>> out;
  for (size_t i = 0; i < set.instance_count(); ++i) {
    TimeNs t = trace.SortTime(set.InstanceMessages(i)[0]);
    out.emplace(set.patterns[set.pattern[i]].key, t / round_to);
  }
  return out;
}

PathSet TruthOf(const Trace& trace) {
  Result<TruthInference> truth = InferFromTruth(trace);
  EXPECT_TRUE(truth.ok()) << truth.status().message();
  return std::move(truth).value().paths;
}

class RoundTrip : public ::testing::TestWithParam<SpanFormat> {};

TEST_P(RoundTrip, ExportThenImportGivesTheSameTrees) {
  Trace trace = Generate(4000);
  PathSet truth = TruthOf(trace);
  ASSERT_GT(truth.instance_count(), 300u);
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth, trace);
  ASSERT_TRUE(trees.ok()) << trees.status().message();
  SpanFormat format = GetParam();
  std::string text = format == SpanFormat::kOtlp     ? FormatOtlp(*trees)
                     : format == SpanFormat::kJaeger ? FormatJaeger(*trees)
                                                     : FormatZipkin(*trees);
  ASSERT_EQ(DetectSpanFormat(text), format);
  SpanRead read = ReadSpans(text, "exported", format);
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  SpanTraceCounters counters;
  Result<Trace> back = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->size(), trace.size());
  EXPECT_EQ(counters.paths, truth.instance_count());
  EXPECT_EQ(counters.outside_parent, 0u);
  PathSet again = TruthOf(*back);
  // Jaeger and Zipkin keep microseconds: compare root times to the microsecond.
  TimeNs unit = format == SpanFormat::kOtlp ? 1 : 1000;
  EXPECT_EQ(Trees(again, *back, unit), Trees(truth, trace, unit));
  EXPECT_EQ(again.patterns.size(), truth.patterns.size());
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(SpanFormat::kOtlp, SpanFormat::kJaeger,
                                           SpanFormat::kZipkin),
                         [](const auto& param_info) {
                           return std::string(SpanFormatName(param_info.param));
                         });

// Inferred (not true) instances go through the same way, and carry their probability.
TEST(Export, NestingInstancesRoundTripWithTheirProbability) {
  Trace trace = Generate(3000);
  NestingOptions options;
  Result<NestingInference> nesting = InferNesting(trace, options);
  ASSERT_TRUE(nesting.ok()) << nesting.status().message();
  Result<std::vector<SpanTree>> trees = SpansFromPaths(nesting->paths, trace);
  ASSERT_TRUE(trees.ok());
  ASSERT_EQ(trees->size(), nesting->paths.instance_count());
  for (const SpanTree& tree : *trees) {
    const auto& attributes = tree.spans[0].attributes;
    EXPECT_NE(std::find_if(attributes.begin(), attributes.end(),
                           [](const auto& a) { return a.first == "weft.probability"; }),
              attributes.end());
  }
  SpanRead read = ReadOtlpSpans(FormatOtlp(*trees), "nesting.json");
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  Result<Trace> back = SpansToTrace(read.spans, {});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Trees(TruthOf(*back), *back, 1), Trees(nesting->paths, trace, 1));
}

// Mail relays: every hop a one-way message (MSG), exported as a span from send to
// receive and read back as one MSG.
TEST(Export, MessageHopsRoundTrip) {
  Result<GenConfig> config = LoadGenConfig("email");
  ASSERT_TRUE(config.ok());
  config->messages = 2000;
  Result<Trace> trace = MakeTrace(*config);
  ASSERT_TRUE(trace.ok());
  PathSet truth = TruthOf(*trace);
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth, *trace);
  ASSERT_TRUE(trees.ok());
  SpanRead read = ReadOtlpSpans(FormatOtlp(*trees), "email.json");
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  SpanTraceCounters counters;
  Result<Trace> back = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(counters.calls, 0u);
  EXPECT_EQ(counters.messages, trace->size());
  EXPECT_EQ(counters.outside_parent, 0u);
  EXPECT_EQ(
      std::count(back->columns().kind.begin(), back->columns().kind.end(), MessageKind::kMessage),
      int64_t(trace->size()));
  EXPECT_EQ(Trees(TruthOf(*back), *back, 1), Trees(truth, *trace, 1));
}

TEST(Export, RefusesPathsOfAnotherTrace) {
  Trace trace = Generate(1000);
  PathSet truth = TruthOf(trace);
  Trace other = Generate(2000);
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth, other);
  ASSERT_FALSE(trees.ok());
  EXPECT_NE(trees.status().message().find("inferred from another trace"), std::string::npos);
}

// The Trace Event Format: {"traceEvents": [...]}, "X" events with ts and dur in
// microseconds, integer pid and tid, a process_name for every pid, and on every (pid,
// tid) complete events that nest (each starts after the one before ends, or lies in it).
TEST(Export, ChromeTraceFollowsTheTraceEventFormat) {
  Trace trace = Generate(3000);
  PathSet truth = TruthOf(trace);
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth, trace);
  ASSERT_TRUE(trees.ok());
  size_t spans = 0;
  for (const SpanTree& t : *trees) spans += t.spans.size();
  Json doc = Json::parse(FormatChromeTrace(*trees));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> lanes;
  size_t complete = 0;
  for (const Json& e : doc["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string());
    ASSERT_TRUE(e["pid"].is_number_integer());
    ASSERT_TRUE(e["tid"].is_number_integer());
    ASSERT_TRUE(e["name"].is_string());
    std::string ph = e["ph"];
    if (ph == "M") {
      std::string name = e["name"];
      ASSERT_TRUE(name == "process_name" || name == "thread_name") << name;
      ASSERT_TRUE(e["args"]["name"].is_string());
      if (name == "process_name") process_names[e["pid"]] = e["args"]["name"];
      continue;
    }
    ASSERT_EQ(ph, "X");
    ASSERT_TRUE(e["ts"].is_number());
    ASSERT_TRUE(e["dur"].is_number());
    // Microseconds with nanosecond fractions: back to integer nanoseconds.
    int64_t ts = std::llround(e["ts"].get<double>() * 1000);
    int64_t dur = std::llround(e["dur"].get<double>() * 1000);
    ASSERT_GE(ts, 0);
    ASSERT_GE(dur, 0);
    lanes[{e["pid"], e["tid"]}].emplace_back(ts, ts + dur);
    ++complete;
  }
  EXPECT_EQ(complete, spans);
  EXPECT_EQ(process_names.size(), 6u);  // every node but CLIENT receives calls
  for (auto& [lane, events] : lanes) {
    ASSERT_TRUE(process_names.count(lane.first)) << "pid " << lane.first << " has no name";
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<int64_t> open;
    for (auto [start, end] : events) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      ASSERT_TRUE(open.empty() || end <= open.back())
          << "pid " << lane.first << " tid " << lane.second << ": [" << start << ", " << end
          << ") crosses an event ending at " << open.back();
      open.push_back(end);
    }
  }
  // One span: the first request's root, on the node that received it.
  const Span& root = (*trees)[0].spans[0];
  EXPECT_EQ(root.service, trace.NodeName(trace.columns().receiver[0]));
}

// Jaeger's UI reads {"data": [trace]}; a trace has traceID, spans and processes; a span
// has traceID, spanID, operationName, references (refType CHILD_OF or FOLLOWS_FROM,
// traceID, spanID of a span of the trace), startTime and duration (integer µs), tags
// (key, type, value), logs and a processID that processes names with a serviceName.
TEST(Export, JaegerJsonHasTheUisImportSchema) {
  Trace trace = Generate(2000);
  PathSet truth = TruthOf(trace);
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth, trace);
  ASSERT_TRUE(trees.ok());
  Json doc = Json::parse(FormatJaeger(*trees));
  ASSERT_TRUE(doc["data"].is_array());
  ASSERT_EQ(doc["data"].size(), trees->size());
  for (const Json& t : doc["data"]) {
    ASSERT_TRUE(t["traceID"].is_string());
    ASSERT_TRUE(t["processes"].is_object());
    ASSERT_TRUE(t["spans"].is_array());
    std::set<std::string> ids;
    for (const Json& s : t["spans"]) ids.insert(s["spanID"].get<std::string>());
    int roots = 0;
    for (const Json& s : t["spans"]) {
      EXPECT_EQ(s["traceID"], t["traceID"]);
      ASSERT_TRUE(s["spanID"].is_string());
      ASSERT_TRUE(s["operationName"].is_string());
      ASSERT_TRUE(s["startTime"].is_number_integer());
      ASSERT_TRUE(s["duration"].is_number_integer());
      EXPECT_GE(s["duration"].get<int64_t>(), 0);
      ASSERT_TRUE(s["logs"].is_array());
      ASSERT_TRUE(s["tags"].is_array());
      for (const Json& tag : s["tags"]) {
        ASSERT_TRUE(tag["key"].is_string());
        ASSERT_TRUE(tag["type"] == "string" || tag["type"] == "float64");
        ASSERT_TRUE(tag.contains("value"));
      }
      ASSERT_TRUE(s["processID"].is_string());
      ASSERT_TRUE(t["processes"].contains(s["processID"].get<std::string>()));
      ASSERT_TRUE(t["processes"][s["processID"].get<std::string>()]["serviceName"].is_string());
      ASSERT_TRUE(s["references"].is_array());
      if (s["references"].empty()) ++roots;
      for (const Json& ref : s["references"]) {
        EXPECT_EQ(ref["refType"], "CHILD_OF");
        EXPECT_EQ(ref["traceID"], t["traceID"]);
        EXPECT_TRUE(ids.count(ref["spanID"].get<std::string>()));
      }
    }
    EXPECT_EQ(roots, 1);
  }
}

}  // namespace
}  // namespace weft
