// The span readers and SpansToTrace: a hand-written OTLP file from the OpenTelemetry
// specification's example, each format's fields, and damaged files that keep what was
// readable and name the record that was not.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "import/span.h"
#include "import/span_trace.h"
#include "infer/truth/truth.h"

namespace weft {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/spans/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Attr(const Trace& trace, MessageId m, std::string_view key) {
  for (const Attribute& a : trace.AttributesOf(m)) {
    if (trace.strings().Get(a.key) == key) return std::string(trace.strings().Get(a.value));
  }
  return "<none>";
}

// The message of `kind` from `sender` to `receiver`; fails the test if not exactly one.
MessageId Find(const Trace& trace, MessageKind kind, std::string_view sender,
               std::string_view receiver) {
  MessageId found;
  int n = 0;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const TraceColumns& c = trace.columns();
    if (c.kind[i] == kind && trace.NodeName(c.sender[i]) == sender &&
        trace.NodeName(c.receiver[i]) == receiver) {
      found = MessageId(i);
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << sender << ">" << receiver;
  return found;
}

TEST(OtlpImport, SpecificationExample) {
  std::string text = ReadData("otlp_spec_example.json");
  ASSERT_EQ(DetectSpanFormat(text), SpanFormat::kOtlp);
  SpanRead read = ReadOtlpSpans(text, "example.json");
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  ASSERT_EQ(read.spans.size(), 6u);
  const Span& server = read.spans[2];
  EXPECT_EQ(server.trace_id, "5B8EFFF798038103D269B633813FC60C");
  EXPECT_EQ(server.span_id, "EEE19B7EC3C1B174");
  EXPECT_EQ(server.parent_id, "EEE19B7EC3C1B173");
  EXPECT_EQ(server.service, "my.service");
  EXPECT_EQ(server.name, "I'm a server span");
  EXPECT_EQ(server.kind, SpanKind::kServer);
  EXPECT_EQ(server.start, 1544712660000000000);
  EXPECT_EQ(server.end, 1544712661000000000);
  ASSERT_EQ(server.attributes.size(), 1u);
  EXPECT_EQ(server.attributes[0].second, "some value");
  EXPECT_EQ(read.spans[1].kind, SpanKind::kClient);
  EXPECT_EQ(read.spans[5].kind, SpanKind::kServer);  // "SPAN_KIND_SERVER" spelt out

  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // Three spans are entered from another service (the root from the client); the
  // frontend's client span, the internal span and my.service's client span nest.
  EXPECT_EQ(counters.traces, 1u);
  EXPECT_EQ(counters.paths, 1u);
  EXPECT_EQ(counters.calls, 3u);
  EXPECT_EQ(counters.nested, 3u);
  EXPECT_EQ(counters.orphans, 0u);
  EXPECT_EQ(counters.outside_parent, 0u);
  ASSERT_EQ(trace->size(), 6u);
  MessageId root = Find(*trace, MessageKind::kCall, "client", "frontend");
  MessageId call = Find(*trace, MessageKind::kCall, "frontend", "my.service");
  MessageId query = Find(*trace, MessageKind::kCall, "my.service", "db");
  MessageId query_ret = Find(*trace, MessageKind::kReturn, "db", "my.service");
  MessageId call_ret = Find(*trace, MessageKind::kReturn, "my.service", "frontend");
  MessageId root_ret = Find(*trace, MessageKind::kReturn, "frontend", "client");
  const TraceColumns& c = trace->columns();
  EXPECT_EQ(c.send_time[root.value()], 1544712659900000000);
  EXPECT_EQ(c.send_time[call.value()], 1544712660000000000);
  EXPECT_EQ(c.send_time[query.value()], 1544712660210000000);
  EXPECT_EQ(c.send_time[query_ret.value()], 1544712660290000000);
  EXPECT_EQ(c.send_time[call_ret.value()], 1544712661000000000);
  EXPECT_EQ(c.send_time[root_ret.value()], 1544712661100000000);
  EXPECT_EQ(c.recv_time[call.value()], kNoTime);  // one timestamp per message
  // Truth: the db call nests in the call into my.service, through its internal span.
  EXPECT_FALSE(c.truth_parent[root.value()].valid());
  EXPECT_EQ(c.truth_parent[call.value()], root);
  EXPECT_EQ(c.truth_parent[query.value()], call);
  EXPECT_EQ(c.truth_parent[query_ret.value()], query);
  EXPECT_EQ(c.truth_parent[root_ret.value()], root);
  EXPECT_EQ(trace->strings().Get(c.call_id[call.value()]), "EEE19B7EC3C1B174");
  // Attributes: the operation, the kind and the span's own, AnyValues as text.
  EXPECT_EQ(Attr(*trace, root, "span.name"), "GET /checkout");
  EXPECT_EQ(Attr(*trace, root, "http.status_code"), "200");
  EXPECT_EQ(Attr(*trace, call, "my.span.attr"), "some value");
  EXPECT_EQ(Attr(*trace, call, "span.kind"), "server");
  EXPECT_EQ(Attr(*trace, query, "db.statement"), "SELECT * FROM carts");
  EXPECT_EQ(Attr(*trace, query, "db.rows"), "3");
  EXPECT_EQ(Attr(*trace, query, "db.cached"), "false");
  EXPECT_EQ(Attr(*trace, query, "db.ratio"), "0.5");
  EXPECT_EQ(Attr(*trace, query, "db.tables"), R"({"values":[{"stringValue":"carts"}]})");

  Result<TruthInference> truth = InferFromTruth(*trace);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  ASSERT_EQ(truth->paths.patterns.size(), 1u);
  EXPECT_EQ(truth->paths.patterns[0].key,
            "C:client>frontend(C:frontend>my.service(C:my.service>db(R:db>my.service) "
            "R:my.service>frontend) R:frontend>client)");

  Result<Trace> stripped = SpansToTrace(read.spans, {.strip_truth = true, .client = "users"});
  ASSERT_TRUE(stripped.ok());
  EXPECT_FALSE(stripped->HasTruth());
  Find(*stripped, MessageKind::kCall, "users", "frontend");
}

constexpr std::string_view kTwoSpans =
    R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},)"
    R"("scopeSpans":[{"spans":[)"
    R"({"traceId":"t1","spanId":"s1","name":"root","startTimeUnixNano":"100","endTimeUnixNano":"900"},)"
    R"({"traceId":"t1","spanId":"s2","parentSpanId":"s1","startTimeUnixNano":"200","endTimeUnixNano":"300"})"
    R"(]}]}]})";

TEST(OtlpImport, JsonLinesAndATruncatedLine) {
  std::string text = std::string(kTwoSpans) + "\n" + std::string(kTwoSpans.substr(0, 150)) + "\n" +
                     std::string(kTwoSpans) + "\n";
  SpanRead read = ReadOtlpSpans(text, "lines.json");
  // Lines 1 and 3 are whole; line 2 is cut inside its first span.
  EXPECT_EQ(read.spans.size(), 4u);
  ASSERT_FALSE(read.problem.ok());
  EXPECT_EQ(read.problem.message(),
            "lines.json:2: byte 150: truncated in span 2 "
            "(line 2, resourceSpans[0].scopeSpans[0].spans[0]); kept the 2 spans read before it");
}

TEST(OtlpImport, TruncatedDocumentKeepsTheSpansBeforeTheCut) {
  std::string text(kTwoSpans.substr(0, kTwoSpans.find("\"s2\"")));
  SpanRead read = ReadOtlpSpans(text, "cut.json");
  ASSERT_EQ(read.spans.size(), 1u);
  EXPECT_EQ(read.spans[0].span_id, "s1");
  ASSERT_FALSE(read.problem.ok());
  EXPECT_EQ(read.problem.message(),
            fmt::format("cut.json: byte {}: truncated in span 1 "
                        "(resourceSpans[0].scopeSpans[0].spans[1]); kept the 1 spans read "
                        "before it",
                        text.size()));
}

TEST(OtlpImport, MissingFieldsAndWrongTypesNameTheSpan) {
  std::string text(kTwoSpans);
  std::string missing = text;
  missing.replace(missing.find("\"spanId\":\"s2\","), 14, "");
  SpanRead read = ReadOtlpSpans(missing, "m.json");
  EXPECT_EQ(read.spans.size(), 1u);
  EXPECT_EQ(read.bad_records, 1u);
  EXPECT_EQ(read.problem.message(),
            "m.json: span 1 (resourceSpans[0].scopeSpans[0].spans[1]): missing 'spanId'");

  std::string wrong = text;
  wrong.replace(wrong.find("\"100\""), 5, "{}");
  read = ReadOtlpSpans(wrong, "w.json");
  EXPECT_EQ(read.spans.size(), 1u);
  EXPECT_EQ(read.problem.message(),
            "w.json: span 0 (resourceSpans[0].scopeSpans[0].spans[0]): 'startTimeUnixNano' is "
            "an object, want an integer");

  std::string backwards = text;
  backwards.replace(backwards.find("\"300\""), 5, "\"150\"");
  read = ReadOtlpSpans(backwards, "b.json");
  EXPECT_EQ(read.spans.size(), 1u);
  EXPECT_NE(read.problem.message().find("ends (150) before it starts (200)"), std::string::npos);

  read = ReadOtlpSpans("[1, 2]", "a.json");
  EXPECT_TRUE(read.spans.empty());
  EXPECT_EQ(read.problem.message(),
            "a.json: the document: is an array, want an object with 'resourceSpans'");
}

constexpr std::string_view kJaeger = R"({"data":[{"traceID":"abc","spans":[
 {"traceID":"abc","spanID":"1","operationName":"GET /","references":[],"startTime":1000,
  "duration":500,"tags":[{"key":"span.kind","type":"string","value":"server"},
  {"key":"http.status_code","type":"int64","value":200}],"processID":"p1"},
 {"traceID":"abc","spanID":"2","operationName":"SELECT","references":[{"refType":"CHILD_OF",
  "traceID":"abc","spanID":"1"}],"startTime":1100,"duration":100,"tags":[],"processID":"p2"},
 {"traceID":"abc","spanID":"3","operationName":"x","references":[],"startTime":1100,
  "duration":100,"processID":"p9"}],
 "processes":{"p1":{"serviceName":"web","tags":[]},"p2":{"serviceName":"db","tags":[]}}}]})";

TEST(JaegerImport, UiExport) {
  ASSERT_EQ(DetectSpanFormat(kJaeger), SpanFormat::kJaeger);
  SpanRead read = ReadJaegerSpans(kJaeger, "j.json");
  ASSERT_EQ(read.spans.size(), 2u);
  EXPECT_EQ(read.problem.message(),
            "j.json: span 2 (data[0].spans[2]): 'processID' p9 names no process in 'processes'");
  EXPECT_EQ(read.spans[0].service, "web");
  EXPECT_EQ(read.spans[0].kind, SpanKind::kServer);
  EXPECT_EQ(read.spans[0].start, 1000000);
  EXPECT_EQ(read.spans[0].end, 1500000);
  ASSERT_EQ(read.spans[0].attributes.size(), 1u);  // span.kind became the kind
  EXPECT_EQ(read.spans[0].attributes[0].second, "200");
  EXPECT_EQ(read.spans[1].parent_id, "1");
  EXPECT_EQ(read.spans[1].service, "db");
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(counters.calls, 2u);
  Find(*trace, MessageKind::kCall, "web", "db");
}

TEST(ZipkinImport, SharedSpanIsTheServersHalfUnderTheClients) {
  constexpr std::string_view kZipkin = R"([
    {"traceId":"a1","id":"01","name":"get /","kind":"SERVER","timestamp":10,"duration":90,
     "localEndpoint":{"serviceName":"front"},"tags":{"http.path":"/"}},
    {"traceId":"a1","parentId":"01","id":"02","name":"get cart","kind":"CLIENT","timestamp":20,
     "duration":50,"localEndpoint":{"serviceName":"front"}},
    {"traceId":"a1","parentId":"01","id":"02","name":"get cart","kind":"SERVER","timestamp":25,
     "duration":40,"localEndpoint":{"serviceName":"cart"},"shared":true},
    {"traceId":"a1","id":"03","timestamp":"x","localEndpoint":{"serviceName":"cart"}}])";
  ASSERT_EQ(DetectSpanFormat(kZipkin), SpanFormat::kZipkin);
  SpanRead read = ReadZipkinSpans(kZipkin, "z.json");
  ASSERT_EQ(read.spans.size(), 3u);
  EXPECT_EQ(read.problem.message(), "z.json: span 3: 'timestamp' is 'x', not an integer");
  EXPECT_EQ(read.spans[0].attributes[0],
            std::make_pair(std::string("http.path"), std::string("/")));
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(counters.duplicates, 0u);
  EXPECT_EQ(counters.calls, 2u);   // client > front, front > cart
  EXPECT_EQ(counters.nested, 1u);  // the client half, inside front
  MessageId call = Find(*trace, MessageKind::kCall, "front", "cart");
  EXPECT_EQ(trace->columns().send_time[call.value()], 25000);
  MessageId root = Find(*trace, MessageKind::kCall, "client", "front");
  EXPECT_EQ(trace->columns().truth_parent[call.value()], root);
}

TEST(CsvImport, ColumnsGuessedFromTheHeader) {
  constexpr std::string_view kCsv =
      "Trace ID,Span ID,Parent Span ID,Service Name,Operation Name,Start Time,Duration\n"
      "t1,a,,web,\"GET /a, b\",1700000000000000,300\n"
      "t1,b,a,app,work,1700000000000100,100\n"
      "t1,c,a,web,render,1700000000000250,20\n"
      "t2,d,-1,web,GET /,1700000000001000,10\n"
      "t2,e,zz,app,lost,1700000000001001,5\n"
      "t2,f,d,app,short\n"
      "t2,g,d,app,bad,soon,5\n";
  ASSERT_EQ(DetectSpanFormat(kCsv), SpanFormat::kCsv);
  SpanRead read = ReadCsvSpans(kCsv, "s.csv", {});
  ASSERT_EQ(read.spans.size(), 5u);
  EXPECT_EQ(read.bad_records, 2u);
  EXPECT_EQ(read.problem.message(), "s.csv:7: 5 fields, the header has 7");
  // Microseconds since the epoch, from the magnitude.
  EXPECT_EQ(read.spans[0].start, 1700000000000000000);
  EXPECT_EQ(read.spans[0].end, 1700000000000300000);
  EXPECT_EQ(read.spans[0].name, "GET /a, b");
  EXPECT_EQ(read.spans[3].parent_id, "");  // -1 is a root
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(counters.traces, 2u);
  EXPECT_EQ(counters.orphans, 1u);  // e's parent zz is not in the file: a root of its own
  EXPECT_EQ(counters.paths, 3u);
  EXPECT_EQ(counters.nested, 1u);  // c, inside web
  EXPECT_EQ(counters.calls, 4u);
}

TEST(SpanImport, AnAllZeroParentIdIsARoot) {
  constexpr std::string_view kCsv =
      "trace,span,parent,service,start,end\n"
      "t1,a,0,web,1700000000000000,1700000000000300\n"
      "t1,b,a,app,1700000000000100,1700000000000200\n"
      "t2,c,0000000000000000,web,1700000000001000,1700000000001100\n";
  SpanRead read = ReadCsvSpans(kCsv, "z.csv", {});
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(counters.orphans, 0u);
  EXPECT_EQ(counters.paths, 2u);
  EXPECT_EQ(counters.calls, 3u);  // two roots from the client, b from web
}

TEST(CsvImport, ColumnsNamedAndUnitGiven) {
  constexpr std::string_view kCsv =
      "tid,sid,psid,svc,begin_ts,end_ts\n"
      "1,10,,a,1.5,2.25\n"
      "1,11,10,b,1.75,2\n";
  CsvColumns columns;
  ASSERT_TRUE(ParseCsvColumns("trace=tid,span=sid,parent=psid,service=svc,start=begin_ts,"
                              "end=end_ts,unit=s",
                              columns)
                  .ok());
  SpanRead read = ReadCsvSpans(kCsv, "n.csv", columns);
  ASSERT_TRUE(read.problem.ok()) << read.problem.message();
  ASSERT_EQ(read.spans.size(), 2u);
  EXPECT_EQ(read.spans[0].start, 1500000000);
  EXPECT_EQ(read.spans[1].end, 2000000000);
  EXPECT_FALSE(ParseCsvColumns("trace", columns).ok());
  EXPECT_FALSE(ParseCsvColumns("unit=weeks", columns).ok());
  read = ReadCsvSpans("a,b\n1,2\n", "x.csv", {});
  EXPECT_EQ(read.problem.message(),
            "x.csv:1: no trace column in the header (name it with --columns trace=NAME)");
}

TEST(SpanTrace, CyclesAndDuplicatesAreCountedNotGuessed) {
  auto span = [](std::string id, std::string parent, std::string service, TimeNs start) {
    Span s;
    s.trace_id = "t";
    s.span_id = std::move(id);
    s.parent_id = std::move(parent);
    s.service = std::move(service);
    s.start = start;
    s.end = start + 10;
    return s;
  };
  std::vector<Span> spans = {span("r", "", "a", 0), span("x", "y", "b", 1), span("y", "x", "c", 2),
                             span("r", "", "a", 3), span("k", "r", "b", 5)};
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(spans, {}, &counters);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(counters.duplicates, 1u);
  EXPECT_EQ(counters.unreachable, 2u);
  EXPECT_EQ(counters.calls, 2u);
  EXPECT_EQ(counters.outside_parent, 1u);  // k ends at 15, r at 10
}

}  // namespace
}  // namespace weft
