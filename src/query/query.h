// The query engine's front door (Pivot Tracing §3-§4): compile a parsed query against a
// set of tracepoints into advice, optionally optimized by the rewrite rules of Table 3,
// and evaluate the advice over request executions, carrying baggage along them.
//
//   auto program = ParseProgram(text);
//   auto compiled = Compile(*program, tracepoints, {.text = text});
//   Evaluator evaluator(*compiled, events, {});
//   for (const Execution& e : executions) evaluator.Run(e);
//   QueryResult result = std::move(evaluator).Finish();
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "query/ast.h"
#include "query/execution.h"
#include "query/result.h"

namespace weft::query {

struct CompiledQuery;  // advice per tracepoint (query/advice.h)

struct CompileOptions {
  std::string_view text;              // the query's text, for diagnostics with a caret
  std::string_view source = "query";  // its origin, for diagnostics
  bool optimize = true;               // apply the rewrite rules of Pivot Tracing Table 3
};

// Resolves every name (tracepoints, named queries, aliases, fields) and type-checks the
// Select and GroupBy. A bad name is a diagnostic naming the nearest known one.
Result<std::shared_ptr<const CompiledQuery>> Compile(const Program& program,
                                                     std::span<const Tracepoint> tracepoints,
                                                     const CompileOptions& options);

// The advice per tracepoint, one operation per line, as `weft query --explain` prints it
// (OBSERVE, UNPACK, FILTER, PACK-FIRST ..., EMIT).
std::string ExplainAdvice(const CompiledQuery& query);
// The result's column names.
std::vector<std::string> ResultColumns(const CompiledQuery& query);
// Which tracepoints have advice, and whether the query joins (needs happened-before).
ReplayNeeds NeedsOf(const CompiledQuery& query);

struct EvaluateOptions {
  TimeNs interval = 0;  // > 0: one set of rows per interval of event time
  TimeNs origin = 0;    // where interval 0 starts
};

// Runs advice over executions. Not thread-safe; one Evaluator per thread.
class Evaluator {
 public:
  Evaluator(std::shared_ptr<const CompiledQuery> query, const EventSource& events,
            EvaluateOptions options);
  ~Evaluator();
  Evaluator(Evaluator&&) noexcept;

  void Run(const Execution& execution);
  QueryResult Finish() &&;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace weft::query
