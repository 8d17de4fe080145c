// Zipkin v2 JSON (the /api/v2/spans model): an array of spans, each with traceId, id,
// parentId, name, kind, timestamp and duration in microseconds since the epoch,
// localEndpoint.serviceName and tags (an object of strings). Zipkin may report one RPC as
// two spans sharing an id, the client's and the server's (shared: true); SpansToTrace
// puts the server's half under the client's.
#include <fmt/format.h>

#include "import/span.h"
#include "import/span_json.h"

namespace weft {
namespace {

using span_json::Json;

SpanKind ZipkinKind(std::string_view v) {
  if (v == "SERVER") return SpanKind::kServer;
  if (v == "CLIENT") return SpanKind::kClient;
  if (v == "PRODUCER") return SpanKind::kProducer;
  if (v == "CONSUMER") return SpanKind::kConsumer;
  return SpanKind::kUnspecified;
}

bool ReadSpan(const Json& json, Span& span, std::string& error) {
  if (!json.is_object()) {
    error = fmt::format("is {}, want an object", span_json::TypeName(json));
    return false;
  }
  auto trace_id = span_json::String(json, "traceId", error);
  if (!trace_id) return false;
  auto id = span_json::String(json, "id", error);
  if (!id) return false;
  if (trace_id->empty() || id->empty()) {
    error = trace_id->empty() ? "'traceId' is empty" : "'id' is empty";
    return false;
  }
  span.trace_id = *trace_id;
  span.span_id = *id;
  if (json.contains("parentId") && !json["parentId"].is_null()) {
    auto parent = span_json::String(json, "parentId", error);
    if (!parent) return false;
    span.parent_id = *parent;
  }
  if (json.contains("name")) {
    auto name = span_json::String(json, "name", error);
    if (!name) return false;
    span.name = *name;
  }
  if (json.contains("kind")) {
    auto kind = span_json::String(json, "kind", error);
    if (!kind) return false;
    span.kind = ZipkinKind(*kind);
  }
  auto start = span_json::Time(json, "timestamp", 1000, error);
  if (!start) return false;
  TimeNs duration = 0;
  if (json.contains("duration")) {
    auto d = span_json::Time(json, "duration", 1000, error);
    if (!d) return false;
    if (*d < 0) {
      error = "'duration' is negative";
      return false;
    }
    duration = *d;
  }
  span.start = *start;
  span.end = *start + duration;
  span.service = "unknown";
  if (auto ep = json.find("localEndpoint"); ep != json.end() && !ep->is_null()) {
    if (!ep->is_object()) {
      error = fmt::format("'localEndpoint' is {}, want an object", span_json::TypeName(*ep));
      return false;
    }
    if (ep->contains("serviceName")) {
      auto name = span_json::String(*ep, "serviceName", error);
      if (!name) return false;
      span.service = *name;
    }
  }
  if (auto tags = json.find("tags"); tags != json.end() && !tags->is_null()) {
    if (!tags->is_object()) {
      error = fmt::format("'tags' is {}, want an object", span_json::TypeName(*tags));
      return false;
    }
    for (auto& [key, value] : tags->items())
      span.attributes.emplace_back(key, span_json::AsText(value));
  }
  return true;
}

}  // namespace

SpanRead ReadZipkinSpans(std::string_view text, std::string_view source) {
  SpanRead read;
  span_json::Problems problems(read, source);
  span_json::Document doc = span_json::Parse(text);
  std::string last_record;
  if (!doc.value.is_array()) {
    problems.BadRecord("the document", fmt::format("is {}, want an array of spans",
                                                   span_json::TypeName(doc.value)));
  } else {
    for (size_t i = 0; i < doc.value.size(); ++i) {
      last_record = fmt::format("span {}", i);
      Span span;
      std::string error;
      if (!ReadSpan(doc.value[i], span, error)) {
        problems.BadRecord(last_record, error);
        continue;
      }
      read.spans.push_back(std::move(span));
    }
  }
  if (doc.damaged) problems.Damaged(doc, 0, last_record);
  return read;
}

}  // namespace weft
