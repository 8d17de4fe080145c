// weft query: Pivot Tracing queries (Pivot Tracing §3-§4) over a trace and the paths
// inferred from it, the instances replayed as request executions with their baggage
// (query/blackbox.h); docs/query.md has the language and the tracepoints.
#include "query/query.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "core/file.h"
#include "paths/paths_file.h"
#include "query/blackbox.h"
#include "query/output.h"
#include "query/parser.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

using query::QueryResult;

struct QueryFlags {
  std::string trace, paths, text, file, format = "table", output, interval, plot;
  bool tracepoints = false, explain = false, no_optimize = false;
};

// --tracepoints: each tracepoint, what it is, and its exports wrapped to 80 columns.
std::string FormatTracepoints(std::span<const query::Tracepoint> tracepoints) {
  size_t name_width = 0;
  for (const query::Tracepoint& t : tracepoints) name_width = std::max(name_width, t.name.size());
  std::string out;
  for (const query::Tracepoint& t : tracepoints) {
    out += fmt::format("{:<{}}  {}\n", t.name, name_width, t.description);
    std::string line = "  exports:";
    for (size_t k = 0; k < t.exports.size(); ++k) {
      std::string item = " " + t.exports[k] + (k + 1 < t.exports.size() ? "," : "");
      if (line.size() + item.size() > 80) {
        out += line + "\n";
        line = "          ";
      }
      line += item;
    }
    out += line + "\n";
  }
  return out;
}

std::string Reduction(double before, double after) {
  if (before <= 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * (before - after) / before);
}

// --explain: the advice before and after rewriting, and what each plan carried.
Result<QueryResult> Explain(const query::Program& program, query::BlackBoxEvents& events,
                            const query::CompileOptions& compile,
                            const query::EvaluateOptions& evaluate, bool no_optimize) {
  query::CompileOptions plain = compile, rewritten = compile;
  plain.optimize = false;
  rewritten.optimize = true;
  WEFT_ASSIGN_OR_RETURN(auto unoptimized, query::Compile(program, events.tracepoints(), plain));
  WEFT_ASSIGN_OR_RETURN(auto optimized, query::Compile(program, events.tracepoints(), rewritten));
  fmt::print("advice before rewriting:\n{}\n", query::ExplainAdvice(*unoptimized));
  fmt::print("advice after rewriting (Pivot Tracing Table 3):\n{}\n",
             query::ExplainAdvice(*optimized));
  QueryResult before = query::RunOffline(unoptimized, events, evaluate);
  QueryResult after = query::RunOffline(optimized, events, evaluate);
  const query::EvaluationCounters &b = before.counters, &a = after.counters;
  fmt::print("baggage over {} requests:\n", a.requests);
  fmt::print("  {:<12} {:>14} {:>14} {:>13} {:>15}\n", "plan", "tuples packed", "baggage mean",
             "baggage max", "tuples emitted");
  fmt::print("  {:<12} {:>14} {:>14.2f} {:>13} {:>15}\n", "unoptimized", b.tuples_packed,
             b.baggage_tuples_mean, b.baggage_tuples_max, b.tuples_emitted);
  fmt::print("  {:<12} {:>14} {:>14.2f} {:>13} {:>15}\n", "optimized", a.tuples_packed,
             a.baggage_tuples_mean, a.baggage_tuples_max, a.tuples_emitted);
  fmt::print("  {:<12} {:>14} {:>14} {:>13} {:>15}\n\n", "reduction",
             Reduction(double(b.tuples_packed), double(a.tuples_packed)),
             Reduction(b.baggage_tuples_mean, a.baggage_tuples_mean),
             Reduction(double(b.baggage_tuples_max), double(a.baggage_tuples_max)),
             Reduction(double(b.tuples_emitted), double(a.tuples_emitted)));
  if (!query::SameAnswer(before, after))
    fmt::print(stderr, "warning: the optimized and unoptimized plans gave different results\n");
  return no_optimize ? std::move(before) : std::move(after);
}

Status RunQuery(const QueryFlags& f) {
  WEFT_ASSIGN_OR_RETURN(query::OutputFormat format, query::ParseOutputFormat(f.format));
  if (f.tracepoints) {
    WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.trace));
    if (!f.paths.empty()) {  // say now if the paths were not inferred from this trace
      WEFT_ASSIGN_OR_RETURN(PathsFile paths, ReadPaths(f.paths));
      Result<query::BlackBoxEvents> made = query::BlackBoxEvents::Make(trace, paths.paths);
      if (!made.ok()) return made.status().WithContext(fmt::format("{} over {}", f.paths, f.trace));
    }
    fmt::print("{}", FormatTracepoints(query::BlackBoxTracepoints(trace)));
    return Status::Ok();
  }
  // The query: inline, or -f FILE; with -f the second positional argument is PATHS.
  if (f.paths.empty()) return Status::InvalidArgument("give PATHS, the paths inferred from TRACE");
  if (f.file.empty() == f.text.empty()) {
    return Status::InvalidArgument(
        "{}", f.file.empty() ? "give the query, as an argument or with -f FILE"
                             : "give the query either as an argument or with -f FILE, not both");
  }
  std::string text = f.text;
  std::string source = "query";
  if (!f.file.empty()) {
    WEFT_ASSIGN_OR_RETURN(text, ReadFile(f.file));
    source = f.file == "-" ? "stdin" : f.file;
  }
  query::EvaluateOptions evaluate;
  if (!f.interval.empty()) {
    Result<TimeNs> interval = ParseDuration(f.interval);
    if (!interval.ok()) return interval.status().WithContext("--interval");
    if (*interval <= 0)
      return Status::InvalidArgument("--interval must be positive, not {}", f.interval);
    evaluate.interval = *interval;
  }
  if (!f.plot.empty() && evaluate.interval == 0)
    return Status::InvalidArgument("--plot draws a time series: give --interval too (e.g. 1s)");
  // A bad query is a diagnostic with its line, column and caret; report it before the
  // (possibly large) trace and paths are read.
  WEFT_ASSIGN_OR_RETURN(query::Program program, query::ParseProgram(text, source));
  WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.trace));
  if (evaluate.interval > 0) evaluate.origin = trace.StartTime();
  WEFT_ASSIGN_OR_RETURN(PathsFile paths, ReadPaths(f.paths));
  if (!paths.graph.empty()) {
    return Status::InvalidArgument(
        "{} holds a causal graph (convolution), not path instances: infer with another "
        "algorithm to query",
        f.paths);
  }
  Result<query::BlackBoxEvents> made = query::BlackBoxEvents::Make(trace, paths.paths);
  if (!made.ok()) return made.status().WithContext(fmt::format("{} over {}", f.paths, f.trace));
  query::BlackBoxEvents& events = *made;
  query::CompileOptions compile{.text = text, .source = source, .optimize = !f.no_optimize};

  QueryResult result;
  if (f.explain) {
    WEFT_ASSIGN_OR_RETURN(result, Explain(program, events, compile, evaluate, f.no_optimize));
  } else {
    WEFT_ASSIGN_OR_RETURN(auto compiled, query::Compile(program, events.tracepoints(), compile));
    result = query::RunOffline(compiled, events, evaluate);
  }

  std::string out = query::FormatResult(result, format,
                                        {.interval = evaluate.interval,
                                         .origin = evaluate.origin,
                                         .trace_fingerprint = paths.paths.trace_fingerprint});
  if (f.output.empty() || f.output == "-") {
    fmt::print("{}", out);
    std::fflush(stdout);  // before any error about the chart on stderr
  } else {
    WEFT_RETURN_IF_ERROR(WriteFile(f.output, out));
  }
  // The chart after the result, so that a result the chart cannot draw is still shown.
  if (!f.plot.empty()) {
    // The title: the query on one line.
    std::string title;
    for (char c : text) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      if (c != ' ' || (!title.empty() && title.back() != ' ')) title += c;
    }
    while (!title.empty() && (title.back() == ' ' || title.back() == ';')) title.pop_back();
    WEFT_ASSIGN_OR_RETURN(
        std::string svg,
        query::PlotResultSvg(
            result, {.interval = evaluate.interval, .origin = evaluate.origin, .title = title}));
    WEFT_RETURN_IF_ERROR(WriteFile(f.plot, svg));
  }
  return Status::Ok();
}

}  // namespace

void AddQueryCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand(
      "query", "Run a Pivot Tracing query over a trace and the paths inferred from it");
  cmd->footer(
      "Each inferred path instance is replayed as a request: the black-box tracepoints\n"
      "(Request, Call, Reply, Send, Receive; --tracepoints lists them with their exports)\n"
      "fire at its messages in causal order, and the query's advice runs there, its baggage\n"
      "travelling along the instance as it would live. Instances with a probability below 1\n"
      "(statistical inference) count by it, and the output says so. docs/query.md has the\n"
      "language.\n\n"
      "Examples:\n"
      "  weft gen multitier -o mt.weft\n"
      "  weft infer mt.weft --algo truth -o mt.paths.json\n"
      "  weft query --tracepoints mt.weft\n"
      "  # database calls per front-end web server\n"
      "  weft query mt.weft mt.paths.json 'From d In Request Join q In First(Request) On q -> d\n"
      "      Where d.node == \"DB\" GroupBy q.node Select q.node, COUNT'\n"
      "  # mean latency (ns) per node, for requests slower than 30ms\n"
      "  weft query mt.weft mt.paths.json 'From r In Reply Join q In First(Request) On q -> r\n"
      "      Where q.latency > 30ms GroupBy r.node Select r.node, AVERAGE(r.latency)'\n"
      "  # the same database calls per second, as a table and an SVG line chart\n"
      "  weft query mt.weft mt.paths.json --interval 1s --plot db.svg 'From d In Request\n"
      "      Join q In First(Request) On q -> d Where d.node == \"DB\" GroupBy q.node\n"
      "      Select q.node, COUNT'\n"
      "  # on a captured run (capture, reconcile --nodes process, infer) whose database is\n"
      "  # the program postgres: database calls per URL\n"
      "  weft query run.weft run.paths.json 'From d In Request Join q In First(Request)\n"
      "      On q -> d Where d.procname == \"postgres\" GroupBy q.http.url\n"
      "      Select q.http.url, COUNT'\n"
      "  weft query mt.weft mt.paths.json -f query.pq --format csv -o result.csv\n"
      "  weft query mt.weft mt.paths.json --explain 'From c In Call Join q In Request\n"
      "      On q -> c Where q.node == \"WS1\" GroupBy c.peer Select c.peer, COUNT'\n");
  static QueryFlags flags;
  cmd->add_option("trace", flags.trace, "Trace the paths were inferred from (.weft, .txt)")
      ->required();
  cmd->add_option("paths", flags.paths, "Paths inferred from TRACE (.paths.json)");
  cmd->add_option("query", flags.text, "The query (or -f FILE)");
  cmd->add_option("-f,--file", flags.file, "Read the query from FILE (- for stdin)");
  cmd->add_option("--format", flags.format, "Output as table, csv or json")->capture_default_str();
  cmd->add_option("-o,--output", flags.output, "Write the result to FILE instead of stdout");
  cmd->add_option("--interval", flags.interval,
                  "Report one set of rows per interval of event time (e.g. 1s, 100ms); a "
                  "first column gives its start in seconds since the trace's start");
  cmd->add_option("--plot", flags.plot,
                  "Also draw the time series as an SVG line chart, one line per group (the "
                  "columns but the last; y is the last); needs --interval");
  cmd->add_flag("--tracepoints", flags.tracepoints,
                "List the black-box tracepoints of TRACE and their exports, and exit");
  cmd->add_flag("--explain", flags.explain,
                "Print the advice per tracepoint before and after rewriting and the tuples "
                "each plan packed into baggage, then the result");
  cmd->add_flag("--no-optimize", flags.no_optimize,
                "Evaluate the advice without the rewrite rules (Pivot Tracing Table 3)");
  cmd->callback([&result] { result = RunQuery(flags); });
}

}  // namespace weft::cli
