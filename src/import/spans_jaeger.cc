// Jaeger JSON as its UI exports a trace and opens one ("JSON File" upload): {"data":
// [trace, ...]} where a trace is {traceID, spans, processes}; a span names its process by
// processID (a key of processes, whose serviceName is the service), its parent by a
// CHILD_OF reference (or FOLLOWS_FROM, or the older parentSpanID field), and its times in
// microseconds since the epoch (startTime, duration). A bare array of traces, or one trace
// object, is read too.
#include <fmt/format.h>

#include <map>

#include "import/span.h"
#include "import/span_json.h"

namespace weft {
namespace {

using span_json::Json;

bool ReadTags(const Json& owner, std::vector<std::pair<std::string, std::string>>& out,
              std::string& error) {
  auto it = owner.find("tags");
  if (it == owner.end() || it->is_null()) return true;
  if (!it->is_array()) {
    error = fmt::format("'tags' is {}, want an array", span_json::TypeName(*it));
    return false;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& tag = (*it)[i];
    if (!tag.is_object()) {
      error = fmt::format("tags[{}] is {}, want an object", i, span_json::TypeName(tag));
      return false;
    }
    auto key = span_json::String(tag, "key", error);
    if (!key) {
      error = fmt::format("tags[{}]: {}", i, error);
      return false;
    }
    auto v = tag.find("value");
    out.emplace_back(std::move(*key), v == tag.end() ? "" : span_json::AsText(*v));
  }
  return true;
}

SpanKind KindFromTag(std::string_view v) {
  if (v == "server") return SpanKind::kServer;
  if (v == "client") return SpanKind::kClient;
  if (v == "producer") return SpanKind::kProducer;
  if (v == "consumer") return SpanKind::kConsumer;
  if (v == "internal") return SpanKind::kInternal;
  return SpanKind::kUnspecified;
}

bool ReadParent(const Json& json, const std::string& trace_id, Span& span, std::string& error) {
  auto refs = json.find("references");
  if (refs != json.end() && !refs->is_null()) {
    if (!refs->is_array()) {
      error = fmt::format("'references' is {}, want an array", span_json::TypeName(*refs));
      return false;
    }
    // CHILD_OF first; a span that only follows from another is placed under it too.
    for (const char* type : {"CHILD_OF", "FOLLOWS_FROM"}) {
      for (size_t i = 0; i < refs->size(); ++i) {
        const Json& ref = (*refs)[i];
        if (!ref.is_object()) {
          error = fmt::format("references[{}] is {}, want an object", i, span_json::TypeName(ref));
          return false;
        }
        auto ref_type = span_json::String(ref, "refType", error);
        auto ref_span = span_json::String(ref, "spanID", error);
        if (!ref_type || !ref_span) {
          error = fmt::format("references[{}]: {}", i, error);
          return false;
        }
        auto ref_trace = ref.find("traceID");
        if (ref_trace != ref.end() && ref_trace->is_string() && *ref_trace != trace_id) continue;
        if (*ref_type == type) {
          span.parent_id = *ref_span;
          return true;
        }
      }
    }
  }
  if (json.contains("parentSpanID")) {
    auto parent = span_json::String(json, "parentSpanID", error);
    if (!parent) return false;
    span.parent_id = *parent;
  }
  return true;
}

bool ReadSpan(const Json& json, const std::string& trace_id_default,
              const std::map<std::string, std::string, std::less<>>& services, Span& span,
              std::string& error) {
  if (!json.is_object()) {
    error = fmt::format("is {}, want an object", span_json::TypeName(json));
    return false;
  }
  std::string trace_id = trace_id_default;
  if (json.contains("traceID")) {
    auto t = span_json::String(json, "traceID", error);
    if (!t) return false;
    trace_id = *t;
  }
  if (trace_id.empty()) {
    error = "missing 'traceID'";
    return false;
  }
  auto span_id = span_json::String(json, "spanID", error);
  if (!span_id) return false;
  if (span_id->empty()) {
    error = "'spanID' is empty";
    return false;
  }
  span.trace_id = trace_id;
  span.span_id = *span_id;
  if (json.contains("operationName")) {
    auto name = span_json::String(json, "operationName", error);
    if (!name) return false;
    span.name = *name;
  }
  if (!ReadParent(json, trace_id, span, error)) return false;
  auto start = span_json::Time(json, "startTime", 1000, error);
  if (!start) return false;
  auto duration = span_json::Time(json, "duration", 1000, error);
  if (!duration) return false;
  if (*duration < 0) {
    error = fmt::format("'duration' is negative ({})", *duration / 1000);
    return false;
  }
  span.start = *start;
  span.end = *start + *duration;
  // The process: by id into processes, or inline (older exports).
  auto process = json.find("process");
  if (json.contains("processID")) {
    auto id = span_json::String(json, "processID", error);
    if (!id) return false;
    auto it = services.find(*id);
    if (it == services.end()) {
      error = fmt::format("'processID' {} names no process in 'processes'", *id);
      return false;
    }
    span.service = it->second;
  } else if (process != json.end() && process->is_object()) {
    auto name = span_json::String(*process, "serviceName", error);
    if (!name) return false;
    span.service = *name;
  } else {
    error = "missing 'processID'";
    return false;
  }
  if (!ReadTags(json, span.attributes, error)) return false;
  for (auto it = span.attributes.begin(); it != span.attributes.end(); ++it) {
    if (it->first == "span.kind") {
      span.kind = KindFromTag(it->second);
      span.attributes.erase(it);
      break;
    }
  }
  return true;
}

void ReadTrace(const Json& trace, size_t t, size_t& index, SpanRead& read,
               span_json::Problems& problems, std::string& last_record) {
  std::string where = fmt::format("data[{}]", t);
  if (!trace.is_object()) {
    problems.BadRecord(where,
                       fmt::format("is {}, want a trace object", span_json::TypeName(trace)));
    return;
  }
  std::string trace_id;
  if (auto it = trace.find("traceID"); it != trace.end() && it->is_string()) {
    trace_id = it->get<std::string>();
  }
  std::map<std::string, std::string, std::less<>> services;
  if (auto it = trace.find("processes"); it != trace.end() && it->is_object()) {
    for (auto& [id, process] : it->items()) {
      std::string error;
      std::optional<std::string> name;
      if (process.is_object()) name = span_json::String(process, "serviceName", error);
      if (!name) {
        problems.BadRecord(fmt::format("{}.processes.{}", where, id),
                           process.is_object() ? error : "is not an object");
        continue;
      }
      services[id] = *name;
    }
  }
  auto spans = trace.find("spans");
  if (spans == trace.end() || !spans->is_array()) {
    problems.BadRecord(where, spans == trace.end() ? "missing 'spans'" : "'spans' is not an array");
    return;
  }
  for (size_t k = 0; k < spans->size(); ++k, ++index) {
    last_record = fmt::format("span {} ({}.spans[{}])", index, where, k);
    Span span;
    std::string error;
    if (!ReadSpan((*spans)[k], trace_id, services, span, error)) {
      problems.BadRecord(last_record, error);
      continue;
    }
    read.spans.push_back(std::move(span));
  }
}

}  // namespace

SpanRead ReadJaegerSpans(std::string_view text, std::string_view source) {
  SpanRead read;
  span_json::Problems problems(read, source);
  span_json::Document doc = span_json::Parse(text);
  size_t index = 0;
  std::string last_record;
  const Json& root = doc.value;
  if (root.is_object() && root.contains("data")) {
    const Json& data = root["data"];
    if (data.is_array()) {
      for (size_t t = 0; t < data.size(); ++t)
        ReadTrace(data[t], t, index, read, problems, last_record);
    } else {
      problems.BadRecord("the document", "'data' is not an array");
    }
  } else if (root.is_array()) {
    for (size_t t = 0; t < root.size(); ++t)
      ReadTrace(root[t], t, index, read, problems, last_record);
  } else if (root.is_object() && root.contains("spans")) {
    ReadTrace(root, 0, index, read, problems, last_record);
  } else {
    problems.BadRecord("the document", "has no 'data' array of traces");
  }
  if (doc.damaged) problems.Damaged(doc, 0, last_record);
  return read;
}

}  // namespace weft
