// The body of the span format fuzz targets (otlp_fuzz, jaeger_fuzz, zipkin_fuzz,
// span_csv_fuzz): any input is read without a crash, what is read becomes a trace, and
// a trace with ground truth exports in the same format and reads back whole.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "export/spans_from_paths.h"
#include "import/span.h"
#include "import/span_trace.h"
#include "infer/truth/truth.h"

namespace weft {

inline int FuzzSpans(const uint8_t* data, size_t size, SpanFormat format) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)DetectSpanFormat(text);
  SpanRead read = ReadSpans(text, "fuzz", format);
  if (read.spans.empty()) return 0;
  SpanTraceCounters counters;
  Result<Trace> trace = SpansToTrace(read.spans, {}, &counters);
  if (!trace.ok() || !trace->HasTruth()) return 0;
  Result<TruthInference> truth = InferFromTruth(*trace);
  if (!truth.ok()) return 0;
  Result<std::vector<SpanTree>> trees = SpansFromPaths(truth->paths, *trace);
  if (!trees.ok()) {
    std::fprintf(stderr, "export failed: %s\n", trees.status().message().c_str());
    std::abort();
  }
  (void)FormatChromeTrace(*trees);
  if (format == SpanFormat::kCsv) return 0;  // weft writes no CSV
  std::string again = format == SpanFormat::kOtlp     ? FormatOtlp(*trees)
                      : format == SpanFormat::kJaeger ? FormatJaeger(*trees)
                                                      : FormatZipkin(*trees);
  SpanRead back = ReadSpans(again, "exported", format);
  if (!back.problem.ok()) {
    std::fprintf(stderr, "exported spans do not read back: %s\n", back.problem.message().c_str());
    std::abort();
  }
  return 0;
}

}  // namespace weft
