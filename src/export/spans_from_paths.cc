#include "export/spans_from_paths.h"

#include <fmt/format.h>

#include <algorithm>

namespace weft {
namespace {

TimeNs MessageTime(const Trace& trace, MessageId m) { return trace.SortTime(m); }

std::string SpanName(const Trace& trace, MessageId m,
                     const std::vector<std::pair<std::string, std::string>>& attributes) {
  auto find = [&](std::string_view key) -> const std::string* {
    for (const auto& [k, v] : attributes) {
      if (k == key) return &v;
    }
    return nullptr;
  };
  if (const std::string* name = find("span.name")) return *name;
  const std::string* method = find("http.method");
  const std::string* url = find("http.url");
  if (method && url) return *method + " " + *url;
  for (std::string_view key :
       {"http.url", "sql", "redis.command", "testbed.request", "dns.name", "line"}) {
    if (const std::string* v = find(key)) return *v;
  }
  bool one_way = trace.columns().kind[m.value()] == MessageKind::kMessage;
  return fmt::format("{} {}", one_way ? "message" : "call",
                     trace.NodeName(trace.columns().receiver[m.value()]));
}

bool Statistical(std::string_view algorithm) {
  return algorithm == "nesting" || algorithm == "convolution" || algorithm == "linking";
}

SpanKind KindFromName(std::string_view name) {
  for (SpanKind k : {SpanKind::kInternal, SpanKind::kServer, SpanKind::kClient, SpanKind::kProducer,
                     SpanKind::kConsumer}) {
    if (name == SpanKindName(k)) return k;
  }
  return SpanKind::kUnspecified;
}

}  // namespace

Result<std::vector<SpanTree>> SpansFromPaths(const PathSet& paths, const Trace& trace) {
  if (paths.trace_messages != trace.size() || paths.trace_fingerprint != TraceFingerprint(trace)) {
    return Status::InvalidArgument(
        "the paths were inferred from another trace ({} messages, fingerprint {:016x}; this "
        "trace has {} messages, fingerprint {:016x})",
        paths.trace_messages, paths.trace_fingerprint, trace.size(), TraceFingerprint(trace));
  }
  const TraceColumns& c = trace.columns();
  std::vector<SpanTree> trees;
  trees.reserve(paths.instance_count());
  for (size_t i = 0; i < paths.instance_count(); ++i) {
    std::span<const MessageId> messages = paths.InstanceMessages(i);
    std::span<const int32_t> parents = paths.InstanceParents(i);
    SpanTree tree;
    tree.trace_id = fmt::format("{:016x}{:016x}", paths.trace_fingerprint, i + 1);
    std::vector<int32_t> span_of(messages.size(), -1);
    std::vector<bool> answered;
    std::vector<int32_t> parent_span;  // per span, -1 for the root
    for (size_t k = 0; k < messages.size(); ++k) {
      MessageId m = messages[k];
      if (m.value() >= trace.size()) {
        return Status::InvalidArgument("instance {} names message {}, past the trace's end", i,
                                       m.value());
      }
      MessageKind kind = c.kind[m.value()];
      if (kind == MessageKind::kReturn) {
        int32_t p = parents[k];
        if (p >= 0 && span_of[size_t(p)] >= 0 &&
            c.kind[messages[size_t(p)].value()] == MessageKind::kCall &&
            !answered[size_t(span_of[size_t(p)])]) {
          Span& call = tree.spans[size_t(span_of[size_t(p)])];
          call.end = std::max(call.start, MessageTime(trace, m));
          answered[size_t(span_of[size_t(p)])] = true;
        }
        continue;
      }
      Span span;
      span.trace_id = tree.trace_id;
      span.span_id = fmt::format("{:016x}", uint64_t(m.value()) + 1);
      int32_t parent = -1;
      for (int32_t p = parents[k]; p >= 0; p = parents[size_t(p)]) {
        if (span_of[size_t(p)] >= 0) {
          parent = span_of[size_t(p)];
          span.parent_id = tree.spans[size_t(parent)].span_id;
          break;
        }
      }
      span.service = std::string(trace.NodeName(c.receiver[m.value()]));
      span.start = MessageTime(trace, m);
      span.end = span.start;
      if (kind == MessageKind::kMessage && c.send_time[m.value()] != kNoTime &&
          c.recv_time[m.value()] != kNoTime) {
        span.end = std::max(span.start, c.recv_time[m.value()]);
      }
      span.thread = c.receiver_thread[m.value()].value();
      std::vector<std::pair<std::string, std::string>> attributes;
      for (const Attribute& a : trace.AttributesOf(m)) {
        attributes.emplace_back(std::string(trace.strings().Get(a.key)),
                                std::string(trace.strings().Get(a.value)));
      }
      span.name = SpanName(trace, m, attributes);
      span.kind = kind == MessageKind::kMessage ? SpanKind::kConsumer : SpanKind::kServer;
      span.attributes.emplace_back("weft.caller", std::string(trace.NodeName(c.sender[m.value()])));
      if (kind == MessageKind::kMessage) span.attributes.emplace_back("weft.kind", "MSG");
      if (tree.spans.empty()) {
        span.attributes.emplace_back("weft.algorithm", paths.algorithm);
        span.attributes.emplace_back("weft.pattern", fmt::format("{}", paths.pattern[i]));
        if (Statistical(paths.algorithm) || paths.probability[i] != 1) {
          span.attributes.emplace_back("weft.probability", fmt::format("{}", paths.probability[i]));
        }
      }
      for (auto& [key, value] : attributes) {
        if (key == "span.name") continue;
        if (key == "span.kind") {
          span.kind = KindFromName(value);
          continue;
        }
        span.attributes.emplace_back(std::move(key), std::move(value));
      }
      span_of[k] = int32_t(tree.spans.size());
      tree.spans.push_back(std::move(span));
      answered.push_back(kind != MessageKind::kCall);
      parent_span.push_back(parent);
    }
    // A call nothing answered ends where the last work under it does.
    for (size_t s = tree.spans.size(); s-- > 0;) {
      if (!answered[s]) tree.spans[s].attributes.emplace_back("weft.unanswered", "1");
    }
    for (size_t s = tree.spans.size(); s-- > 0;) {
      int32_t p = parent_span[s];
      if (p >= 0 && !answered[size_t(p)]) {
        tree.spans[size_t(p)].end = std::max(tree.spans[size_t(p)].end, tree.spans[s].end);
      }
    }
    trees.push_back(std::move(tree));
  }
  return trees;
}

}  // namespace weft
