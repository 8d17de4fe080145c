// Speed of offline Pivot Tracing queries over inferred paths (docs/query.md, "Speed").
//
// A multitier trace of --messages messages (Project 5 Figure 10's system) with its truth
// paths; then, on one thread, median of --runs runs each:
//   read      the baseline: a pass that reads every instance's messages and the columns
//             a query reads (times, nodes, bytes), and nothing else
//   replay    every instance replayed as an execution (BlackBoxEvents::BuildExecution),
//             no advice
//   queries   whole queries through RunOffline: replay + advice + baggage + aggregation
// Tracepoint events per second count the firings that ran advice (the interpreter's
// `events` counter); the ratio is the query's time over the read pass's.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "gen/gen.h"
#include "infer/truth/truth.h"
#include "query/blackbox.h"
#include "query/parser.h"

namespace weft {
namespace {

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "query_bench: {}\n", s.message());
  std::exit(1);
}

template <typename Fn>
double MedianSeconds(int runs, Fn&& fn) {
  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

struct NamedQuery {
  const char* name;
  const char* text;
};

int Run(uint64_t messages, int runs) {
  Result<GenConfig> config = LoadGenConfig("multitier");
  if (!config.ok()) Die(config.status());
  config->messages = messages;
  Result<Trace> trace = MakeTrace(*config);
  if (!trace.ok()) Die(trace.status());
  Result<TruthInference> truth = InferFromTruth(*trace);
  if (!truth.ok()) Die(truth.status());
  const PathSet& paths = truth->paths;
  Result<query::BlackBoxEvents> events = query::BlackBoxEvents::Make(*trace, paths);
  if (!events.ok()) Die(events.status());

  fmt::print(
      "query_bench: multitier trace, {} messages, {} instances; one thread, median of {} runs\n\n",
      trace->size(), paths.instance_count(), runs);
  fmt::print("{:<34} {:>9} {:>12} {:>11} {:>9}\n", "pass", "seconds", "events", "M events/s",
             "x read");

  // The baseline: read what a query reads, instance by instance.
  const TraceColumns& c = trace->columns();
  int64_t sink = 0;
  double read = MedianSeconds(runs, [&] {
    for (size_t i = 0; i < paths.instance_count(); ++i) {
      for (MessageId m : paths.InstanceMessages(i)) {
        sink += c.send_time[m.value()] + c.recv_time[m.value()] + c.bytes[m.value()] +
                c.sender[m.value()].value() + c.receiver[m.value()].value();
      }
    }
  });
  fmt::print("{:<34} {:>9.3f} {:>12} {:>11} {:>9}\n", "read instances (baseline)", read, "-", "-",
             "1.00");

  query::Execution execution;
  size_t steps = 0;
  double replay = MedianSeconds(runs, [&] {
    steps = 0;
    for (size_t i = 0; i < events->executions(); ++i) {
      events->BuildExecution(i, execution);
      steps += execution.steps.size();
    }
  });
  fmt::print("{:<34} {:>9.3f} {:>12} {:>11} {:>9.2f}\n", "replay executions (no advice)", replay,
             steps, "-", replay / read);

  const NamedQuery queries[] = {
      {"requests per node", "From r In Request GroupBy r.node Select r.node, COUNT"},
      {"mean latency per node", "From r In Reply GroupBy r.node Select r.node, AVERAGE(r.latency)"},
      {"calls per tier by entry node",
       "From c In Call Join q In First(Request) On q -> c GroupBy q.node, c.peer Select q.node, "
       "c.peer, COUNT"},
      {"bytes by the client's request",
       "From s In Send Join q In First(Request) On q -> s GroupBy q.peer Select q.peer, "
       "SUM(s.bytes)"},
      {"slow visits by entry node",
       "From r In Reply Join q In First(Request) On q -> r Where r.latency > 1000000 "
       "GroupBy q.node, r.node Select q.node, r.node, COUNT, MAX(r.latency)"},
  };
  for (const NamedQuery& q : queries) {
    Result<query::Program> program = query::ParseProgram(q.text);
    if (!program.ok()) Die(program.status());
    auto compiled = query::Compile(*program, events->tracepoints(), {.text = q.text});
    if (!compiled.ok()) Die(compiled.status());
    uint64_t fired = 0;
    double seconds = MedianSeconds(runs, [&] {
      query::QueryResult result = query::RunOffline(*compiled, *events, {});
      fired = result.counters.events;
    });
    fmt::print("{:<34} {:>9.3f} {:>12} {:>11.2f} {:>9.2f}\n", q.name, seconds, fired,
               double(fired) / seconds / 1e6, seconds / read);
  }
  return sink == 42 ? 1 : 0;  // keeps the read pass from being optimized away
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  uint64_t messages = 2'000'000;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--messages") {
      messages = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--runs") {
      runs = std::max(1, std::atoi(argv[i + 1]));
    } else {
      fmt::print(stderr, "usage: query_bench [--messages N] [--runs N]\n");
      return 2;
    }
  }
  return weft::Run(messages, runs);
}
