// Executions written by hand for the query engine's tests: tracepoints with a few
// variables, events with values, and a script builder that fires, branches and joins.
#pragma once

#include <string>
#include <vector>

#include "query/execution.h"
#include "query/parser.h"
#include "query/query.h"

namespace weft::query::testing {

// Tracepoints A, B and C, each exporting `id` (the event's name, "a1"), `v` (an integer)
// and `host`.
inline std::vector<Tracepoint> AbcTracepoints() {
  return {{"A", {"id", "v", "host"}, ""},
          {"B", {"id", "v", "host"}, ""},
          {"C", {"id", "v", "host"}, ""}};
}

class HandEvents : public EventSource {
 public:
  struct Event {
    std::string id;
    int64_t v = 0;
    std::string host;
    TimeNs time = 0;
  };

  // Adds an event; its index.
  uint32_t Add(std::string id, int64_t v = 0, std::string host = "h", TimeNs time = 0) {
    events_.push_back({std::move(id), v, std::move(host), time});
    return uint32_t(events_.size() - 1);
  }
  Value Export(uint32_t, uint32_t export_id, uint32_t event) const override {
    const Event& e = events_[event];
    switch (export_id) {
      case 0:
        return Value::String(e.id);
      case 1:
        return Value::Int(e.v);
      default:
        return Value::String(e.host);
    }
  }
  TimeNs Time(uint32_t event) const override { return events_[event].time; }
  void Reserve(size_t n) { events_.reserve(n); }  // Export's strings point into events_

 private:
  std::vector<Event> events_;
};

// Builds one execution step by step.
class Script {
 public:
  Script& Fire(uint32_t segment, uint32_t tracepoint, uint32_t event) {
    execution_.steps.push_back({StepOp::kFire, segment, 0, tracepoint, event});
    return *this;
  }
  // A new segment branched from `segment`; its id.
  uint32_t Branch(uint32_t segment) {
    uint32_t other = execution_.segments++;
    execution_.steps.push_back({StepOp::kBranch, segment, other, 0, 0});
    return other;
  }
  Script& Join(uint32_t segment, uint32_t other) {
    execution_.steps.push_back({StepOp::kJoin, segment, other, 0, 0});
    return *this;
  }
  Execution Done(double weight = 1) {
    execution_.weight = weight;
    return std::move(execution_);
  }

 private:
  Execution execution_;
};

// The query's result over `executions`, or the error text.
struct Answer {
  std::string error;
  QueryResult result;
  std::string explain;
};

inline Answer Ask(const std::string& text, const std::vector<Tracepoint>& tracepoints,
                  const EventSource& events, const std::vector<Execution>& executions,
                  bool optimize = true, TimeNs interval = 0) {
  Answer answer;
  Result<Program> program = ParseProgram(text);
  if (!program.ok()) {
    answer.error = program.status().message();
    return answer;
  }
  auto compiled =
      Compile(*program, tracepoints, {.text = text, .source = "query", .optimize = optimize});
  if (!compiled.ok()) {
    answer.error = compiled.status().message();
    return answer;
  }
  answer.explain = ExplainAdvice(**compiled);
  Evaluator evaluator(*compiled, events, {.interval = interval, .origin = 0});
  for (const Execution& e : executions) evaluator.Run(e);
  answer.result = std::move(evaluator).Finish();
  return answer;
}

// Rows as text: "a1 b2" per row (values joined by spaces), with "xW" after a row whose
// weight is not 1 in a query without aggregates.
inline std::vector<std::string> Rows(const QueryResult& result) {
  std::vector<std::string> rows;
  for (const ResultRow& row : result.rows) {
    std::string text;
    for (const Value& v : row.values) text += (text.empty() ? "" : " ") + FormatValue(v);
    if (!result.aggregated && row.weight != 1) text += " x" + FormatValue(Value::Float(row.weight));
    rows.push_back(text);
  }
  return rows;
}

}  // namespace weft::query::testing
