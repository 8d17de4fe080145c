// Inferred request instances as traces of spans, for the tools people already read traces
// in (Jaeger, Tempo, Perfetto): each path instance of a PathSet is one trace, and each
// call in it (a CALL and the RETURN that answers it) one span in the service that received
// the call, from the CALL's time to the RETURN's, under the span of the call it is nested
// in (the CALL's parent in the instance, paths/path_set.h's convention). A one-way
// message (MSG) is a span from its send to its receive. The message's attributes are the
// span's; the span's name is its span.name attribute where it has one (a trace imported
// from spans), else what the protocol named (http.method and http.url, sql, ...), else
// "call NODE".
//
// What spans have no field for rides in weft.* attributes, which `weft import spans`
// reads back, so that export and import give back the same trees: weft.caller (the node
// that sent the call), weft.kind=MSG, weft.unanswered=1 (a CALL with no RETURN in the
// instance: the span ends where its last child does). The root span of each trace
// carries weft.algorithm and weft.pattern, and, for statistical algorithms (nesting,
// convolution, linking) or any instance less than certain, weft.probability.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "import/span.h"
#include "paths/path_set.h"
#include "trace/trace.h"

namespace weft {

struct SpanTree {
  std::string trace_id;     // 32 hex digits: the trace's fingerprint, then the instance
  std::vector<Span> spans;  // the root first, then in pre-order; parents come first
};

// An error if `paths` was not inferred from `trace` (fingerprint or size differ).
Result<std::vector<SpanTree>> SpansFromPaths(const PathSet& paths, const Trace& trace);

// The writers, each in the form its tool reads (docs/export.md):
// OTLP JSON as the OpenTelemetry Collector's file exporter writes it, one
// ExportTraceServiceRequest per line (one request instance each), spans grouped by
// service into resourceSpans.
std::string FormatOtlp(const std::vector<SpanTree>& trees);
// Jaeger JSON as its UI exports and opens: {"data": [{traceID, spans, processes}]},
// microseconds, CHILD_OF references.
std::string FormatJaeger(const std::vector<SpanTree>& trees);
// Zipkin v2 JSON: one array of spans, microseconds.
std::string FormatZipkin(const std::vector<SpanTree>& trees);
// Chrome trace-event JSON, as Perfetto's UI and chrome://tracing open: a process per node
// (service), complete events ("X") with ts and dur in microseconds from the first span,
// one lane (tid) per thread where known, more lanes where events on one would not nest:
// on every lane the complete events nest properly.
std::string FormatChromeTrace(const std::vector<SpanTree>& trees);

}  // namespace weft
