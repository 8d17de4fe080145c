// Pivot Tracing's queries on programs nobody instrumented: the real testbed's three-tier
// topology (in HTTP) runs under weft capture, reconcile makes the trace, `--algo auto`'s
// choice infers its paths, and queries in the spirit of Pivot Tracing's Q2-Q7 and Figure
// 9b must give exactly the rows on the inferred paths that they give on the truth paths
// the servers logged themselves (eval/align.h copies that truth onto the run).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "eval/align.h"
#include "infer/choose.h"
#include "infer/truth/truth.h"
#include "query/blackbox.h"
#include "query/parser.h"
#include "query/query.h"
#include "testbed/truth.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft::query {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

// `text` over every instance of `events`.
QueryResult RunQuery(const std::string& text, BlackBoxEvents& events) {
  Result<Program> program = ParseProgram(text);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return {};
  Result<std::shared_ptr<const CompiledQuery>> compiled =
      Compile(*program, events.tracepoints(), {.text = text});
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return {};
  return RunOffline(*compiled, events, {});
}

std::string Format(const QueryResult& result) {
  std::string out;
  for (const std::string& c : result.columns) out += c + "\t";
  out += "\n";
  for (const ResultRow& row : result.rows) {
    for (const Value& v : row.values) out += FormatValue(v) + "\t";
    out += fmt::format("(weight {})\n", row.weight);
  }
  return out;
}

bool SameRows(const QueryResult& a, const QueryResult& b) {
  if (a.columns != b.columns || a.rows.size() != b.rows.size()) return false;
  for (size_t r = 0; r < a.rows.size(); ++r) {
    const ResultRow &x = a.rows[r], &y = b.rows[r];
    if (x.weight != y.weight || x.values.size() != y.values.size()) return false;
    for (size_t c = 0; c < x.values.size(); ++c) {
      if (!(x.values[c] == y.values[c])) return false;
    }
  }
  return true;
}

// The pid `dir/NAME.truth` says its server ran as.
std::string TruthPid(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / (name + ".truth"));
  std::string line;
  std::getline(in, line);
  size_t at = line.find("pid=");
  EXPECT_NE(at, std::string::npos) << line;
  return at == std::string::npos ? "" : line.substr(at + 4);
}

// The trace's node for the process `pid` ("host:program[pid]").
std::string NodeOfPid(const Trace& trace, const std::string& pid) {
  for (uint32_t n = 0; n < trace.nodes().size(); ++n) {
    std::string_view name = trace.NodeName(NodeId(n));
    if (name.ends_with("[" + pid + "]")) return std::string(name);
  }
  ADD_FAILURE() << "no node with pid " << pid;
  return "";
}

class QueryTestbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / ("weft-query-testbed-" + std::to_string(getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "kept " << base_.string() << "\n";
    } else {
      fs::remove_all(base_);
    }
  }

  // testbed/topologies/three-tier.toml with every tier speaking HTTP, so that capture's
  // HTTP processor gives each call its http.url ("/r0" for the tier's first request type).
  // Under capture at concurrency 8 for 2 s; the reconciled trace with the truth copied on.
  Trace CaptureThreeTier() {
    std::ifstream in(std::string(WEFT_TOPOLOGIES) + "/three-tier.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    const std::string model = "model = \"thread-per-connection\"\n";
    for (size_t at = 0; (at = toml.find(model, at)) != std::string::npos;) {
      at += model.size();
      toml.insert(at, "protocol = \"http\"\n");
    }
    std::string topology = (base_ / "three-tier.toml").string(),
                capture = (base_ / "capture").string(), truth_dir = (base_ / "truth").string(),
                run = (base_ / "run.weft").string();
    std::ofstream(topology) << toml;
    auto traced = Weft("capture -o " + capture + " -- " + WEFT_BINARY + " testbed run " + topology +
                       " --duration 2s --concurrency 8 -o " + truth_dir);
    EXPECT_EQ(traced.rc, 0) << traced.output;
    auto reconciled = Weft("reconcile " + capture + " -o " + run + " --nodes process");
    EXPECT_EQ(reconciled.rc, 0) << reconciled.output;
    Result<Trace> truth = testbed::BuildTruthTrace(truth_dir);
    Result<Trace> trace = LoadTrace(run);
    EXPECT_TRUE(truth.ok() && trace.ok());
    AlignSummary aligned;
    Result<Trace> labelled = CopyTruth(*truth, *trace, &aligned);
    EXPECT_TRUE(labelled.ok()) << labelled.status().message();
    std::cerr << aligned.OneLine() << "\n";
    EXPECT_EQ(aligned.labelled, aligned.requests);
    // Enough requests for the groups to mean something; how many the 2 s get is the
    // machine's (precise_testbed_test.cc met fewer than 500 beside another run).
    EXPECT_GT(aligned.requests, 100u);
    return std::move(*labelled);
  }

  fs::path base_;
};

TEST_F(QueryTestbedTest, InferredPathsAnswerAsTheTruthDoes) {
  SKIP_UNDER_ASAN();
  Trace trace = CaptureThreeTier();
  ASSERT_FALSE(HasFailure());

  Result<TruthInference> truth = InferFromTruth(trace);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  Result<AutoInference> chosen = ChooseAlgorithm(trace);
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  std::cerr << "auto: " << chosen->choice.Describe() << "\n";
  const PathSet* inferred = nullptr;
  if (chosen->choice.algorithm == AutoAlgorithm::kThread) inferred = &chosen->thread->paths;
  if (chosen->choice.algorithm == AutoAlgorithm::kFragment) inferred = &chosen->fragment->paths;
  ASSERT_NE(inferred, nullptr) << "auto chose linking on a thread-per-connection run";
  const size_t requests = truth->paths.instance_count();
  ASSERT_EQ(inferred->instance_count(), requests);

  Result<BlackBoxEvents> truth_events = BlackBoxEvents::Make(trace, truth->paths);
  Result<BlackBoxEvents> inferred_events = BlackBoxEvents::Make(trace, *inferred);
  ASSERT_TRUE(truth_events.ok() && inferred_events.ok());

  const fs::path truth_dir = base_ / "truth";
  const std::string web = NodeOfPid(trace, TruthPid(truth_dir, "web0")),
                    app = NodeOfPid(trace, TruthPid(truth_dir, "app0")),
                    db = NodeOfPid(trace, TruthPid(truth_dir, "db0"));

  // The slowest 1% by the truth: the 99th percentile of the latency of the request's work at
  // its entry (the root Request), from the truth's own instances.
  std::vector<int64_t> root_latency;
  {
    const uint32_t request = 0, latency = 10;
    ASSERT_EQ(truth_events->tracepoints()[request].name, "Request");
    ASSERT_EQ(truth_events->tracepoints()[request].exports[latency], "latency");
    Execution execution;
    for (size_t i = 0; i < requests; ++i) {
      truth_events->BuildExecution(i, execution);
      for (const ExecutionStep& step : execution.steps) {
        if (step.op != StepOp::kFire || step.tracepoint != request) continue;
        Value v = truth_events->Export(request, latency, step.event);
        if (v.type == ValueType::kInt) root_latency.push_back(v.i);
        break;
      }
    }
  }
  ASSERT_EQ(root_latency.size(), requests);
  std::sort(root_latency.begin(), root_latency.end());
  const int64_t p99 = root_latency[root_latency.size() * 99 / 100];

  struct Case {
    std::string name, text;
    size_t min_rows = 2;
  };
  const std::vector<Case> cases = {
      // Q6's shape: calls to each tier, by the node the request entered and its URL.
      {"calls per tier per entry",
       "From c In Call Join q In First(Request) On q -> c "
       "GroupBy q.node, q.http.url, c.peer Select q.node, q.http.url, c.peer, COUNT"},
      // Q2's shape: the deepest tier's mean latency by the URL that started the request.
      {"db latency by entry URL",
       fmt::format("From r In Request Join q In First(Request) On q -> r "
                   "Where r.node == \"{}\" GroupBy q.http.url, r.http.url "
                   "Select q.http.url, r.http.url, COUNT, AVERAGE(r.latency), MAX(r.latency)",
                   db)},
      // Figure 9b: where the slowest 1% of requests spend their time, by tier.
      {"slowest 1% by tier", fmt::format("From r In Reply Join q In First(Request) On q -> r "
                                         "Where q.latency > {} GroupBy r.node "
                                         "Select r.node, COUNT, AVERAGE(r.latency), SUM(r.latency)",
                                         p99)},
      // Q2's "bytes per client": what every node sent for each client, by entry URL.
      {"bytes per client",
       "From s In Send Join q In First(Request) On q -> s "
       "GroupBy q.peer, q.http.url, s.node Select q.peer, q.http.url, s.node, SUM(s.bytes), COUNT"},
      // A temporal filter: each db call, and the reply its caller received just before it
      // (the previous db call's, or app's own call's for the first).
      {"most recent reply before each db call",
       fmt::format("From c In Call Join p In MostRecent(Receive) On p -> c "
                   "Where c.peer == \"{}\" GroupBy c.http.url, p.node, p.kind "
                   "Select c.http.url, p.node, p.kind, COUNT",
                   db)},
      // Q7's shape: two joins, a Where with and/or.
      {"db requests under app, by entry",
       fmt::format("From d In Request Join a In Request On a -> d "
                   "Join w In First(Request) On w -> a "
                   "Where d.node == \"{}\" and a.node == \"{}\" and "
                   "(d.latency > 100us or w.http.url == \"/r1\") "
                   "GroupBy w.http.url, a.http.url, d.http.url "
                   "Select w.http.url, a.http.url, d.http.url, COUNT, MIN(d.latency)",
                   db, app)},
  };
  for (const Case& c : cases) {
    QueryResult want = RunQuery(c.text, *truth_events);
    QueryResult got = RunQuery(c.text, *inferred_events);
    std::cerr << c.name << ":\n" << c.text << "\n" << Format(want);
    EXPECT_GE(want.rows.size(), c.min_rows) << c.name;
    EXPECT_TRUE(SameRows(want, got)) << c.name << "\ntruth:\n"
                                     << Format(want) << "inferred:\n"
                                     << Format(got);
    EXPECT_EQ(want.counters.requests, requests);
  }

  // Counts that are known: every request enters web once, and web calls app once per
  // home (/r0) and twice per buy (/r1).
  QueryResult entries = RunQuery(fmt::format("From q In Request Where q.node == \"{}\" "
                                             "GroupBy q.http.url Select q.http.url, COUNT",
                                             web),
                                 *inferred_events);
  ASSERT_EQ(entries.rows.size(), 2u) << Format(entries);
  EXPECT_EQ(entries.rows[0].values[1].AsDouble() + entries.rows[1].values[1].AsDouble(),
            double(requests));
  QueryResult app_calls = RunQuery(
      fmt::format("From c In Call Join q In First(Request) On q -> c Where c.node == \"{}\" "
                  "GroupBy q.http.url Select q.http.url, COUNT",
                  web),
      *inferred_events);
  ASSERT_EQ(app_calls.rows.size(), 2u) << Format(app_calls);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(app_calls.rows[r].values[0].s, entries.rows[r].values[0].s);
    EXPECT_EQ(app_calls.rows[r].values[1].AsDouble(),
              entries.rows[r].values[1].AsDouble() * (r == 0 ? 1 : 2));
  }
}

}  // namespace
}  // namespace weft::query
