// How wrong a statistical algorithm's paths make Pivot Tracing's queries: the queries of
// tests/query/query_testbed_test.cc (Q2-Q7 and Figure 9b in spirit), over a generated
// multitier trace inferred by nesting, against the same queries over its truth paths.
// Per query: groups in the truth, groups missing from and extra in the inferred result,
// and the largest relative error of any aggregate of a group both have.
// docs/query.md ("The cost of a statistical algorithm's mistakes") records the output.
//   query_accuracy [--scenario multitier] [--messages N] [--parallelism FACTOR] [--show]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gen/gen.h"
#include "infer/nesting/nesting.h"
#include "infer/truth/truth.h"
#include "query/blackbox.h"
#include "query/parser.h"
#include "query/query.h"

namespace weft::query {
namespace {

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "query_accuracy: {}\n", s.message());
  std::exit(1);
}

template <typename T>
T Check(Result<T> r) {
  if (!r.ok()) Die(r.status());
  return std::move(r).value();
}

QueryResult Run(const std::string& text, BlackBoxEvents& events) {
  Program program = Check(ParseProgram(text));
  auto compiled = Check(Compile(program, events.tracepoints(), {.text = text}));
  return RunOffline(compiled, events, {});
}

struct Case {
  std::string name, text;
  size_t keys;  // the leading columns that name a group; the rest are aggregates
};

struct Error {
  size_t truth_groups = 0, missing = 0, extra = 0;
  double max_relative = 0;        // over the groups both have, every aggregate column
  std::string worst;              // the group and column it was in
  double max_value_relative = 0;  // the same, leaving out COUNT: latencies, sums
};

Error Compare(const Case& c, const QueryResult& truth, const QueryResult& inferred) {
  auto key = [&](const ResultRow& row) {
    std::string k;
    for (size_t i = 0; i < c.keys; ++i) k += FormatValue(row.values[i]) + " ";
    return k;
  };
  std::map<std::string, const ResultRow*> found;
  for (const ResultRow& row : inferred.rows) found[key(row)] = &row;
  Error e;
  e.truth_groups = truth.rows.size();
  std::map<std::string, bool> seen;
  for (const ResultRow& row : truth.rows) {
    std::string k = key(row);
    seen[k] = true;
    auto it = found.find(k);
    if (it == found.end()) {
      ++e.missing;
      continue;
    }
    for (size_t col = c.keys; col < row.values.size(); ++col) {
      const Value &want = row.values[col], &got = it->second->values[col];
      if (!want.is_number() || !got.is_number()) continue;
      double w = want.AsDouble(), g = got.AsDouble();
      double rel = w == 0 ? (g == 0 ? 0 : 1) : std::abs(g - w) / std::abs(w);
      if (!truth.columns[col].starts_with("COUNT")) {
        e.max_value_relative = std::max(e.max_value_relative, rel);
      }
      if (rel > e.max_relative) {
        e.max_relative = rel;
        e.worst = k + truth.columns[col];
      }
    }
  }
  for (const ResultRow& row : inferred.rows) e.extra += !seen.count(key(row));
  return e;
}

int Main(int argc, char** argv) {
  std::string scenario = "multitier";
  uint64_t messages = 0;
  double parallelism = 1;
  bool show = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--show")) {
      show = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--scenario")) {
      scenario = argv[i + 1];
    } else if (!std::strcmp(argv[i], "--parallelism")) {
      parallelism = std::strtod(argv[i + 1], nullptr);
    } else if (!std::strcmp(argv[i], "--messages")) {
      messages = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      Die(Status::InvalidArgument("unknown flag {}", argv[i]));
    }
  }
  GenConfig config = Check(LoadGenConfig(scenario));
  if (messages > 0) config.messages = messages;
  config.parallelism *= parallelism;
  Trace trace = Check(MakeTrace(config));
  TruthInference truth = Check(InferFromTruth(trace));
  NestingInference nesting = Check(InferNesting(trace, {}));
  BlackBoxEvents truth_events = Check(BlackBoxEvents::Make(trace, truth.paths));
  BlackBoxEvents nesting_events = Check(BlackBoxEvents::Make(trace, nesting.paths));

  // The slowest 1% by the truth: the 99th percentile of the root Request's latency.
  std::vector<int64_t> root_latency;
  {
    Execution execution;
    for (size_t i = 0; i < truth_events.executions(); ++i) {
      truth_events.BuildExecution(i, execution);
      for (const ExecutionStep& step : execution.steps) {
        if (step.op != StepOp::kFire ||
            truth_events.tracepoints()[step.tracepoint].name != "Request") {
          continue;
        }
        Value v = truth_events.Export(step.tracepoint, 10, step.event);
        if (v.type == ValueType::kInt) root_latency.push_back(v.i);
        break;
      }
    }
  }
  std::sort(root_latency.begin(), root_latency.end());
  const int64_t p99 = root_latency.empty() ? 0 : root_latency[root_latency.size() * 99 / 100];

  const std::vector<Case> cases = {
      {"calls per tier per entry",
       "From c In Call Join q In First(Request) On q -> c "
       "GroupBy q.node, c.node, c.peer Select q.node, c.node, c.peer, COUNT",
       3},
      {"DB latency by entry",
       "From r In Request Join q In First(Request) On q -> r Where r.node == \"DB\" "
       "GroupBy q.node, r.peer Select q.node, r.peer, COUNT, AVERAGE(r.latency)",
       2},
      {"slowest 1% by tier",
       fmt::format("From r In Reply Join q In First(Request) On q -> r Where q.latency > {} "
                   "GroupBy r.node Select r.node, COUNT, AVERAGE(r.latency)",
                   p99),
       1},
      {"messages per client",
       "From s In Send Join q In First(Request) On q -> s "
       "GroupBy q.peer, q.node, s.node Select q.peer, q.node, s.node, COUNT",
       3},
      {"most recent reply before each DB call",
       "From c In Call Join p In MostRecent(Receive) On p -> c Where c.peer == \"DB\" "
       "GroupBy c.node, p.node, p.kind Select c.node, p.node, p.kind, COUNT",
       3},
      {"DB requests under AP, by entry",
       "From d In Request Join a In Request On a -> d Join w In First(Request) On w -> a "
       "Where d.node == \"DB\" and (a.node == \"AP1\" or a.node == \"AP2\") and "
       "(d.latency > 12ms or w.node == \"WS2\") "
       "GroupBy w.node, a.node Select w.node, a.node, COUNT, MIN(d.latency)",
       2},
  };

  fmt::print("{} messages, {} truth instances, {} nesting instances; p99 of entry latency {} ns\n",
             trace.size(), truth.paths.instance_count(), nesting.paths.instance_count(), p99);
  fmt::print("{:<40} {:>7} {:>8} {:>6} {:>10} {:>12}  {}\n", "query", "groups", "missing", "extra",
             "max error", "non-COUNT", "(where)");
  for (const Case& c : cases) {
    QueryResult want = Run(c.text, truth_events), got = Run(c.text, nesting_events);
    if (show) {
      for (const auto& [what, result] : {std::pair{"truth", &want}, std::pair{"nesting", &got}}) {
        fmt::print("  {} {}:\n", c.name, what);
        for (const ResultRow& row : result->rows) {
          std::string line;
          for (const Value& v : row.values) line += FormatValue(v) + "  ";
          fmt::print("    {}\n", line);
        }
      }
    }
    Error e = Compare(c, want, got);
    fmt::print("{:<40} {:>7} {:>8} {:>6} {:>9.2f}% {:>11.2f}%  ({})\n", c.name, e.truth_groups,
               e.missing, e.extra, 100 * e.max_relative, 100 * e.max_value_relative, e.worst);
  }
  return 0;
}

}  // namespace
}  // namespace weft::query

int main(int argc, char** argv) { return weft::query::Main(argc, argv); }
