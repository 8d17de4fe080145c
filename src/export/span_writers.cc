// The OTLP, Jaeger and Zipkin writers (docs/export.md has an example of each).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "export/spans_from_paths.h"

namespace weft {
namespace {

using Json = nlohmann::ordered_json;

// Attributes whose values are numbers are written as numbers.
bool IsNumeric(std::string_view key) { return key == "weft.probability"; }

// Microseconds, widened outward so that a span still contains what it contained.
int64_t FloorUs(TimeNs t) { return t >= 0 ? t / 1000 : -((-t + 999) / 1000); }
int64_t CeilUs(TimeNs t) { return -FloorUs(-t); }

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::string FormatOtlp(const std::vector<SpanTree>& trees) {
  std::string out;
  for (const SpanTree& tree : trees) {
    // Spans grouped by service, services in order of first appearance.
    std::vector<std::string> services;
    std::vector<Json> service_spans;
    for (const Span& span : tree.spans) {
      size_t s = std::find(services.begin(), services.end(), span.service) - services.begin();
      if (s == services.size()) {
        services.push_back(span.service);
        service_spans.push_back(Json::array());
      }
      Json j = Json::object();
      j["traceId"] = span.trace_id;
      j["spanId"] = span.span_id;
      if (!span.parent_id.empty()) j["parentSpanId"] = span.parent_id;
      j["name"] = span.name;
      j["kind"] = int(span.kind);
      j["startTimeUnixNano"] = fmt::format("{}", span.start);
      j["endTimeUnixNano"] = fmt::format("{}", span.end);
      Json attributes = Json::array();
      for (const auto& [key, value] : span.attributes) {
        Json v = Json::object();
        if (IsNumeric(key)) {
          v["doubleValue"] = std::strtod(value.c_str(), nullptr);
        } else {
          v["stringValue"] = value;
        }
        attributes.push_back(Json{{"key", key}, {"value", std::move(v)}});
      }
      if (!attributes.empty()) j["attributes"] = std::move(attributes);
      j["status"] = Json::object();
      service_spans[s].push_back(std::move(j));
    }
    Json resource_spans = Json::array();
    for (size_t s = 0; s < services.size(); ++s) {
      Json resource = {
          {"attributes", Json::array({Json{{"key", "service.name"},
                                           {"value", {{"stringValue", services[s]}}}}})}};
      Json scope = {{"scope", {{"name", "weft"}, {"version", "0.1"}}},
                    {"spans", std::move(service_spans[s])}};
      resource_spans.push_back(
          Json{{"resource", std::move(resource)}, {"scopeSpans", Json::array({std::move(scope)})}});
    }
    out += Dump(Json{{"resourceSpans", std::move(resource_spans)}});
    out += '\n';
  }
  return out;
}

std::string FormatJaeger(const std::vector<SpanTree>& trees) {
  // One trace at a time, so that a large export never holds the whole document as JSON.
  std::string out = "{\"data\":[";
  bool first = true;
  for (const SpanTree& tree : trees) {
    std::vector<std::string> services;
    Json spans = Json::array();
    for (const Span& span : tree.spans) {
      size_t s = std::find(services.begin(), services.end(), span.service) - services.begin();
      if (s == services.size()) services.push_back(span.service);
      Json references = Json::array();
      if (!span.parent_id.empty()) {
        references.push_back(
            Json{{"refType", "CHILD_OF"}, {"traceID", span.trace_id}, {"spanID", span.parent_id}});
      }
      Json tags = Json::array();
      if (span.kind != SpanKind::kUnspecified) {
        tags.push_back(
            Json{{"key", "span.kind"}, {"type", "string"}, {"value", SpanKindName(span.kind)}});
      }
      for (const auto& [key, value] : span.attributes) {
        if (IsNumeric(key)) {
          tags.push_back(Json{
              {"key", key}, {"type", "float64"}, {"value", std::strtod(value.c_str(), nullptr)}});
        } else {
          tags.push_back(Json{{"key", key}, {"type", "string"}, {"value", value}});
        }
      }
      int64_t start = FloorUs(span.start);
      spans.push_back(Json{{"traceID", span.trace_id},
                           {"spanID", span.span_id},
                           {"flags", 1},
                           {"operationName", span.name},
                           {"references", std::move(references)},
                           {"startTime", start},
                           {"duration", CeilUs(span.end) - start},
                           {"tags", std::move(tags)},
                           {"logs", Json::array()},
                           {"processID", fmt::format("p{}", s + 1)},
                           {"warnings", nullptr}});
    }
    Json processes = Json::object();
    for (size_t s = 0; s < services.size(); ++s) {
      processes[fmt::format("p{}", s + 1)] =
          Json{{"serviceName", services[s]}, {"tags", Json::array()}};
    }
    if (!first) out += ',';
    first = false;
    out += Dump(Json{{"traceID", tree.trace_id},
                     {"spans", std::move(spans)},
                     {"processes", std::move(processes)},
                     {"warnings", nullptr}});
  }
  out += "],\"total\":0,\"limit\":0,\"offset\":0,\"errors\":null}\n";
  return out;
}

std::string FormatZipkin(const std::vector<SpanTree>& trees) {
  std::string out = "[";
  bool first = true;
  for (const SpanTree& tree : trees) {
    for (const Span& span : tree.spans) {
      Json j = Json::object();
      j["traceId"] = span.trace_id;
      if (!span.parent_id.empty()) j["parentId"] = span.parent_id;
      j["id"] = span.span_id;
      switch (span.kind) {
        case SpanKind::kServer:
          j["kind"] = "SERVER";
          break;
        case SpanKind::kClient:
          j["kind"] = "CLIENT";
          break;
        case SpanKind::kProducer:
          j["kind"] = "PRODUCER";
          break;
        case SpanKind::kConsumer:
          j["kind"] = "CONSUMER";
          break;
        default:
          break;
      }
      j["name"] = span.name;
      int64_t start = FloorUs(span.start);
      j["timestamp"] = start;
      j["duration"] = CeilUs(span.end) - start;
      j["localEndpoint"] = Json{{"serviceName", span.service}};
      Json tags = Json::object();
      for (const auto& [key, value] : span.attributes)
        tags[key] = value;  // Zipkin tags are strings
      if (!tags.empty()) j["tags"] = std::move(tags);
      if (!first) out += ',';
      first = false;
      out += Dump(j);
    }
  }
  return out + "]\n";
}

}  // namespace weft
