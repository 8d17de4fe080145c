// Spans: what tracing systems (OpenTelemetry, Jaeger, Zipkin, the CSV files public
// microservice datasets ship) record, and the one model weft reads them into and writes
// them from. A span is a unit of work in one service with a start and an end; its parent
// is the span that caused it, in the same trace. Span data has one clock reading per end
// of a span, so a message made from a span has one timestamp (Project 5 §3: a passive
// trace of who called whom and when).
//
// The readers (one file per format: spans_otlp.cc, spans_jaeger.cc, spans_zipkin.cc,
// spans_csv.cc) never trust their input: a record that is missing a field or has one of
// the wrong type is skipped and counted, the first such problem is reported as one line
// that names the file and the record, and everything that was readable is kept. A JSON
// document cut short keeps the records before the cut.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace weft {

enum class SpanKind : uint8_t { kUnspecified, kInternal, kServer, kClient, kProducer, kConsumer };
std::string_view SpanKindName(SpanKind kind);  // "unspecified", "internal", "server", ...

struct Span {
  std::string trace_id;   // as the file spells it (hex in OTLP, Jaeger and Zipkin)
  std::string span_id;    // unique within its trace
  std::string parent_id;  // empty for a root
  std::string service;    // the resource's service.name, Jaeger's process, Zipkin's endpoint
  std::string name;       // the operation
  SpanKind kind = SpanKind::kUnspecified;
  TimeNs start = kNoTime;
  TimeNs end = kNoTime;  // at or after start
  uint32_t thread = 0;   // the thread that did the work, where known (0: unknown)
  std::vector<std::pair<std::string, std::string>> attributes;  // in the file's order
};

enum class SpanFormat : uint8_t { kOtlp, kJaeger, kZipkin, kCsv };
std::string_view SpanFormatName(SpanFormat format);  // "otlp", "jaeger", "zipkin", "csv"
Result<SpanFormat> ParseSpanFormat(std::string_view name);
// The format a file's content is in, from its first bytes and keys; nullopt if none fits.
std::optional<SpanFormat> DetectSpanFormat(std::string_view text);

// Where the CSV reader finds each field: a column name per field; an empty name is
// guessed from the header (trace id, span id, parent id, service, operation, start, and
// end or duration). Times are integers or decimals in `time_unit`; "auto" guesses from
// the first start time's magnitude as since the Unix epoch (s, ms, µs or ns).
struct CsvColumns {
  std::string trace, span, parent, service, operation, start, end, duration;
  std::string time_unit = "auto";  // "s", "ms", "us", "ns" or "auto"
};
// Parses "trace=TraceId,span=SpanId,..." (keys: trace, span, parent, service, operation,
// start, end, duration, unit) into `columns`.
Status ParseCsvColumns(std::string_view spec, CsvColumns& columns);

// What a reader returns: the spans it could read, and the first problem (ok if none).
struct SpanRead {
  std::vector<Span> spans;
  Status problem;
  uint64_t bad_records = 0;  // records skipped, the first of them named by `problem`
};

SpanRead ReadOtlpSpans(std::string_view text, std::string_view source);
SpanRead ReadJaegerSpans(std::string_view text, std::string_view source);
SpanRead ReadZipkinSpans(std::string_view text, std::string_view source);
SpanRead ReadCsvSpans(std::string_view text, std::string_view source, const CsvColumns& columns);
// Dispatches on `format`.
SpanRead ReadSpans(std::string_view text, std::string_view source, SpanFormat format,
                   const CsvColumns& csv = {});

}  // namespace weft
