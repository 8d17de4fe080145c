// OTLP JSON (the OpenTelemetry protocol's JSON encoding, as the Collector's file exporter
// writes it): one ExportTraceServiceRequest, {"resourceSpans": [...]}, per file or per
// line. A resource's service.name attribute names the service of its spans; ids are hex
// strings, times are nanoseconds since the epoch written as decimal strings (or numbers),
// and attribute values are AnyValue objects ({"stringValue": ...}, {"intValue": ...}).
// Older exporters wrote instrumentationLibrarySpans for scopeSpans; both are read.
#include <fmt/format.h>

#include "import/span.h"
#include "import/span_json.h"

namespace weft {
namespace {

using span_json::Json;

// An AnyValue as text: scalars as they are, arrays and key-value lists as JSON.
std::optional<std::string> AnyValueText(const Json& value, std::string& error) {
  if (!value.is_object()) {
    error = fmt::format("attribute value is {}, want an object", span_json::TypeName(value));
    return std::nullopt;
  }
  for (const char* key : {"stringValue", "intValue", "doubleValue", "boolValue", "bytesValue"}) {
    auto it = value.find(key);
    if (it != value.end()) return span_json::AsText(*it);
  }
  for (const char* key : {"arrayValue", "kvlistValue"}) {
    auto it = value.find(key);
    if (it != value.end()) return span_json::AsText(*it);
  }
  return std::string();  // an empty AnyValue
}

// Reads key/value attribute lists into `out`; false with `error` on a bad entry.
bool ReadAttributes(const Json& owner, std::vector<std::pair<std::string, std::string>>& out,
                    std::string& error) {
  auto it = owner.find("attributes");
  if (it == owner.end() || it->is_null()) return true;
  if (!it->is_array()) {
    error = fmt::format("'attributes' is {}, want an array", span_json::TypeName(*it));
    return false;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& kv = (*it)[i];
    if (!kv.is_object()) {
      error = fmt::format("attributes[{}] is {}, want an object", i, span_json::TypeName(kv));
      return false;
    }
    std::optional<std::string> key = span_json::String(kv, "key", error);
    if (!key) {
      error = fmt::format("attributes[{}]: {}", i, error);
      return false;
    }
    auto v = kv.find("value");
    std::optional<std::string> value =
        v == kv.end() ? std::optional<std::string>("") : AnyValueText(*v, error);
    if (!value) {
      error = fmt::format("attributes[{}]: {}", i, error);
      return false;
    }
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return true;
}

SpanKind OtlpKind(const Json& span) {
  auto it = span.find("kind");
  if (it == span.end()) return SpanKind::kUnspecified;
  int64_t k = -1;
  if (it->is_number_integer() || it->is_number_unsigned()) {
    k = it->get<int64_t>();
  } else if (it->is_string()) {
    static constexpr std::string_view kNames[] = {"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL",
                                                  "SPAN_KIND_SERVER",      "SPAN_KIND_CLIENT",
                                                  "SPAN_KIND_PRODUCER",    "SPAN_KIND_CONSUMER"};
    for (int i = 0; i < 6; ++i) {
      if (it->get_ref<const std::string&>() == kNames[i]) k = i;
    }
  }
  return k >= 0 && k <= 5 ? SpanKind(k) : SpanKind::kUnspecified;
}

// Returns false with `error` if the span cannot be read.
bool ReadSpan(const Json& json, const std::string& service, Span& span, std::string& error) {
  if (!json.is_object()) {
    error = fmt::format("is {}, want an object", span_json::TypeName(json));
    return false;
  }
  auto trace_id = span_json::String(json, "traceId", error);
  if (!trace_id) return false;
  auto span_id = span_json::String(json, "spanId", error);
  if (!span_id) return false;
  if (trace_id->empty() || span_id->empty()) {
    error = trace_id->empty() ? "'traceId' is empty" : "'spanId' is empty";
    return false;
  }
  span.trace_id = std::move(*trace_id);
  span.span_id = std::move(*span_id);
  if (json.contains("parentSpanId")) {
    auto parent = span_json::String(json, "parentSpanId", error);
    if (!parent) return false;
    span.parent_id = std::move(*parent);
  }
  if (json.contains("name")) {
    auto name = span_json::String(json, "name", error);
    if (!name) return false;
    span.name = std::move(*name);
  }
  auto start = span_json::Time(json, "startTimeUnixNano", 1, error);
  if (!start) return false;
  auto end = span_json::Time(json, "endTimeUnixNano", 1, error);
  if (!end) return false;
  if (*end < *start) {
    error = fmt::format("ends ({}) before it starts ({})", *end, *start);
    return false;
  }
  span.start = *start;
  span.end = *end;
  span.kind = OtlpKind(json);
  span.service = service;
  return ReadAttributes(json, span.attributes, error);
}

// Reads one ExportTraceServiceRequest. `index` counts spans across the file.
void ReadRequest(const Json& request, size_t line, size_t& index, SpanRead& read,
                 span_json::Problems& problems, std::string& last_record) {
  std::string prefix = line > 0 ? fmt::format("line {}, ", line) : "";
  if (!request.is_object()) {
    problems.BadRecord(
        line > 0 ? fmt::format("line {}", line) : "the document",
        fmt::format("is {}, want an object with 'resourceSpans'", span_json::TypeName(request)));
    return;
  }
  auto rs = request.find("resourceSpans");
  if (rs == request.end() || !rs->is_array()) {
    problems.BadRecord(
        line > 0 ? fmt::format("line {}", line) : "the document",
        rs == request.end() ? "missing 'resourceSpans'" : "'resourceSpans' is not an array");
    return;
  }
  for (size_t r = 0; r < rs->size(); ++r) {
    const Json& resource_spans = (*rs)[r];
    std::string where = fmt::format("{}resourceSpans[{}]", prefix, r);
    if (!resource_spans.is_object()) {
      problems.BadRecord(where, "is not an object");
      continue;
    }
    std::string service = "unknown_service";  // the specification's default
    auto resource = resource_spans.find("resource");
    if (resource != resource_spans.end() && resource->is_object()) {
      std::vector<std::pair<std::string, std::string>> attributes;
      std::string error;
      if (!ReadAttributes(*resource, attributes, error)) {
        problems.BadRecord(where + ".resource", error);
        continue;
      }
      for (auto& [k, v] : attributes) {
        if (k == "service.name") service = v;
      }
    }
    auto scopes = resource_spans.find("scopeSpans");
    const char* scope_key = "scopeSpans";
    if (scopes == resource_spans.end()) {
      scopes = resource_spans.find("instrumentationLibrarySpans");
      scope_key = "instrumentationLibrarySpans";
    }
    if (scopes == resource_spans.end()) continue;  // a resource without spans
    if (!scopes->is_array()) {
      problems.BadRecord(where, fmt::format("'{}' is not an array", scope_key));
      continue;
    }
    for (size_t s = 0; s < scopes->size(); ++s) {
      const Json& scope = (*scopes)[s];
      std::string scope_where = fmt::format("{}.{}[{}]", where, scope_key, s);
      if (!scope.is_object()) {
        problems.BadRecord(scope_where, "is not an object");
        continue;
      }
      auto spans = scope.find("spans");
      if (spans == scope.end()) continue;
      if (!spans->is_array()) {
        problems.BadRecord(scope_where, "'spans' is not an array");
        continue;
      }
      for (size_t k = 0; k < spans->size(); ++k, ++index) {
        last_record = fmt::format("span {} ({}.spans[{}])", index, scope_where, k);
        Span span;
        std::string error;
        if (!ReadSpan((*spans)[k], service, span, error)) {
          problems.BadRecord(last_record, error);
          continue;
        }
        read.spans.push_back(std::move(span));
      }
    }
  }
}

// A file is JSON lines when its first line is a whole object and more lines follow.
bool IsJsonLines(std::string_view text) {
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return false;
  std::string_view rest = text.substr(nl + 1);
  if (rest.find_first_not_of(" \t\r\n") == std::string_view::npos) return false;
  span_json::Document first = span_json::Parse(text.substr(0, nl));
  return !first.damaged && first.value.is_object();
}

}  // namespace

SpanRead ReadOtlpSpans(std::string_view text, std::string_view source) {
  SpanRead read;
  span_json::Problems problems(read, source);
  size_t index = 0;
  std::string last_record;
  if (!IsJsonLines(text)) {
    span_json::Document doc = span_json::Parse(text);
    ReadRequest(doc.value, 0, index, read, problems, last_record);
    if (doc.damaged) problems.Damaged(doc, 0, last_record);
    return read;
  }
  Status first_damage;
  size_t line = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view one = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (one.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    span_json::Document doc = span_json::Parse(one);
    last_record.clear();
    ReadRequest(doc.value, line, index, read, problems, last_record);
    if (doc.damaged && first_damage.ok()) {
      problems.Damaged(doc, line, last_record);
      first_damage = read.problem;
    }
  }
  if (!first_damage.ok()) read.problem = first_damage;
  return read;
}

}  // namespace weft
