#include "import/span.h"

#include <fmt/format.h>

#include "core/text.h"

namespace weft {

std::string_view SpanKindName(SpanKind kind) {
  switch (kind) {
    case SpanKind::kInternal:
      return "internal";
    case SpanKind::kServer:
      return "server";
    case SpanKind::kClient:
      return "client";
    case SpanKind::kProducer:
      return "producer";
    case SpanKind::kConsumer:
      return "consumer";
    default:
      return "unspecified";
  }
}

std::string_view SpanFormatName(SpanFormat format) {
  switch (format) {
    case SpanFormat::kOtlp:
      return "otlp";
    case SpanFormat::kJaeger:
      return "jaeger";
    case SpanFormat::kZipkin:
      return "zipkin";
    case SpanFormat::kCsv:
      return "csv";
  }
  return "?";
}

Result<SpanFormat> ParseSpanFormat(std::string_view name) {
  for (SpanFormat f :
       {SpanFormat::kOtlp, SpanFormat::kJaeger, SpanFormat::kZipkin, SpanFormat::kCsv}) {
    if (name == SpanFormatName(f)) return f;
  }
  return Status::InvalidArgument("unknown span format '{}' (want otlp, jaeger, zipkin or csv)",
                                 name);
}

std::optional<SpanFormat> DetectSpanFormat(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  // The keys each format's first records carry; the first 64 KiB decide.
  std::string_view head = text.substr(first, 65536);
  auto has = [&](std::string_view key) { return head.find(key) != std::string_view::npos; };
  if (head[0] == '{' || head[0] == '[') {
    if (has("\"resourceSpans\"")) return SpanFormat::kOtlp;
    if (has("\"spanID\"") || has("\"traceID\"") || has("\"processes\"")) return SpanFormat::kJaeger;
    if (head[0] == '[' && (has("\"traceId\"") || has("\"localEndpoint\"")))
      return SpanFormat::kZipkin;
    return std::nullopt;
  }
  // A CSV header line names its columns.
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.find(',') != std::string_view::npos) return SpanFormat::kCsv;
  return std::nullopt;
}

SpanRead ReadSpans(std::string_view text, std::string_view source, SpanFormat format,
                   const CsvColumns& csv) {
  switch (format) {
    case SpanFormat::kOtlp:
      return ReadOtlpSpans(text, source);
    case SpanFormat::kJaeger:
      return ReadJaegerSpans(text, source);
    case SpanFormat::kZipkin:
      return ReadZipkinSpans(text, source);
    case SpanFormat::kCsv:
      return ReadCsvSpans(text, source, csv);
  }
  return {};
}

}  // namespace weft
