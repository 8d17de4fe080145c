// weft import spans: OTLP, Jaeger, Zipkin or CSV spans -> a message trace with ground truth.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "core/file.h"
#include "import/span.h"
#include "import/span_trace.h"
#include "trace/io.h"

namespace weft::cli {

void AddImportSpansCommand(CLI::App& import, Status& result) {
  auto* cmd = import.add_subcommand(
      "spans", "Spans (OTLP JSON, Jaeger JSON, Zipkin v2 JSON or CSV) -> a message trace");
  cmd->footer(
      "A span whose parent is in another service becomes a CALL from the parent's service\n"
      "to its own at the span's start and a RETURN at its end; spans inside one service\n"
      "nest into its work; a root span is a call from the --client node. Ground truth\n"
      "(path=, parent=) comes from the trace and span ids, so `weft infer --algo truth`\n"
      "gives the traced trees and any other algorithm can be scored against them; with\n"
      "--strip-truth the trace has none. The format is found from the content (OTLP:\n"
      "resourceSpans, one request per file or per line; Jaeger: the UI's export, data[] of\n"
      "traceID, spans, processes; Zipkin: an array of spans; CSV: a header line naming\n"
      "trace id, span id, parent id, service, operation, start and end or duration\n"
      "columns, guessed from the names or given with --columns). A bad record is\n"
      "skipped and the first one named; what was readable is still written, and the exit\n"
      "status is 1. See docs/import.md.\n\n"
      "Examples:\n"
      "  weft import spans otel-collector.json -o run.weft\n"
      "  weft import spans jaeger-trace.json --strip-truth -o blind.weft\n"
      "  weft import spans calls.csv --columns trace=tid,span=sid,parent=psid,unit=us -o c.weft\n"
      "  weft infer run.weft --algo truth -o truth.paths.json\n");
  static std::string input, output, format, client = "client", columns;
  static bool strip_truth = false;
  cmd->add_option("input", input, "Span file (- for stdin)")->required();
  cmd->add_option("-o,--output", output, "Trace to write (.weft, text, or - for stdout)")
      ->required();
  cmd->add_option("--format", format, "otlp, jaeger, zipkin or csv (default: from the content)");
  cmd->add_flag("--strip-truth", strip_truth, "Write no ground truth (a trace to infer from)");
  cmd->add_option("--client", client, "Node that calls root spans (default: client)");
  cmd->add_option("--columns", columns,
                  "CSV columns as FIELD=NAME,... (fields: trace, span, parent, service, "
                  "operation, start, end, duration; unit=s|ms|us|ns|auto)");
  cmd->callback([&result] {
    result = [&]() -> Status {
      WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(input));
      SpanFormat span_format;
      if (!format.empty()) {
        WEFT_ASSIGN_OR_RETURN(span_format, ParseSpanFormat(format));
      } else {
        std::optional<SpanFormat> detected = DetectSpanFormat(text);
        if (!detected) {
          return Status::InvalidArgument(
              "{}: not OTLP, Jaeger or Zipkin JSON, nor CSV with a header (name the format "
              "with --format)",
              input);
        }
        span_format = *detected;
      }
      CsvColumns csv;
      if (!columns.empty()) WEFT_RETURN_IF_ERROR(ParseCsvColumns(columns, csv));
      SpanRead read = ReadSpans(text, input, span_format, csv);
      if (read.spans.empty() && !read.problem.ok()) return read.problem;  // nothing to keep
      SpanTraceCounters counters;
      WEFT_ASSIGN_OR_RETURN(
          Trace trace,
          SpansToTrace(read.spans, {.strip_truth = strip_truth, .client = client}, &counters));
      WEFT_RETURN_IF_ERROR(SaveTrace(trace, output));
      fmt::print(stderr,
                 "{}: {} spans in {} traces -> {} messages: {} calls, {} spans nested in their "
                 "service{}\n",
                 SpanFormatName(span_format), counters.spans, counters.traces, counters.messages,
                 counters.calls, counters.nested,
                 strip_truth ? ", no ground truth" : fmt::format(", {} paths", counters.paths));
      if (counters.orphans + counters.duplicates + counters.unreachable + counters.outside_parent >
          0) {
        fmt::print(stderr,
                   "unsure: {} spans whose parent is not in the file (made roots), {} duplicate "
                   "span ids (left out), {} in parent cycles (left out), {} outside their "
                   "parent's time\n",
                   counters.orphans, counters.duplicates, counters.unreachable,
                   counters.outside_parent);
      }
      if (!read.problem.ok()) {
        return Status(read.problem.code(),
                      fmt::format("{} ({} bad records skipped; the trace holds the rest)",
                                  read.problem.message(), read.bad_records));
      }
      return Status::Ok();
    }();
  });
}

}  // namespace weft::cli
