// weft export: inferred request instances as spans for Jaeger, Tempo, Zipkin or Perfetto.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "core/file.h"
#include "export/spans_from_paths.h"
#include "paths/paths_file.h"
#include "trace/io.h"

namespace weft::cli {

void AddExportCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand(
      "export", "Inferred requests as traces of spans: OTLP, Jaeger, Zipkin or Chrome JSON");
  cmd->footer(
      "Each path instance of PATHS (weft infer's output) becomes one trace: a span per call\n"
      "(CALL to RETURN) in the node that received it, under the span of the call it is\n"
      "nested in, with the messages' attributes and the node as service.name. otlp is\n"
      "OTLP JSON as the OpenTelemetry Collector's file exporter writes it (one request per\n"
      "line; Tempo, the Collector's otlpjsonfile receiver); jaeger opens in Jaeger's UI\n"
      "(Search > JSON File); zipkin is Zipkin v2 JSON; chrome is trace-event JSON for\n"
      "Perfetto (ui.perfetto.dev) and chrome://tracing, a process per node and a lane per\n"
      "thread. Instances of nesting, convolution and linking carry weft.probability.\n"
      "`weft import spans` reads otlp, jaeger and zipkin back into the same trees.\n"
      "See docs/export.md.\n\n"
      "Examples:\n"
      "  weft infer run.weft --algo nesting -o run.paths.json\n"
      "  weft export jaeger run.paths.json --trace run.weft -o run.jaeger.json\n"
      "  weft export otlp run.paths.json --trace run.weft -o run.otlp.json\n"
      "  weft export chrome run.paths.json --trace run.weft -o run.perfetto.json\n");
  static std::string format, paths_name, trace_name, output;
  cmd->add_option("format", format, "otlp, jaeger, zipkin or chrome")
      ->required()
      ->check(CLI::IsMember({"otlp", "jaeger", "zipkin", "chrome"}));
  cmd->add_option("paths", paths_name, "Paths file (weft infer -o)")->required();
  cmd->add_option("--trace", trace_name, "The trace PATHS was inferred from")->required();
  cmd->add_option("-o,--output", output, "File to write (- for stdout)")->required();
  cmd->callback([&result] {
    result = [&]() -> Status {
      WEFT_ASSIGN_OR_RETURN(PathsFile paths, ReadPaths(paths_name));
      WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(trace_name));
      Result<std::vector<SpanTree>> trees = SpansFromPaths(paths.paths, trace);
      if (!trees.ok()) return trees.status().WithContext(paths_name);
      std::string text = format == "otlp"     ? FormatOtlp(*trees)
                         : format == "jaeger" ? FormatJaeger(*trees)
                         : format == "zipkin" ? FormatZipkin(*trees)
                                              : FormatChromeTrace(*trees);
      WEFT_RETURN_IF_ERROR(WriteFile(output, text));
      size_t spans = 0;
      for (const SpanTree& t : *trees) spans += t.spans.size();
      fmt::print(stderr, "{}: {} requests, {} spans ({} algorithm)\n", format, trees->size(), spans,
                 paths.paths.algorithm);
      return Status::Ok();
    }();
  });
}

}  // namespace weft::cli
