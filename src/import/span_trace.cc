#include "import/span_trace.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <numeric>
#include <string_view>
#include <vector>

namespace weft {
namespace {

// Attributes weft's exporter writes to carry what spans have no field for; read here,
// not copied to the messages.
constexpr std::string_view kCaller = "weft.caller";
constexpr std::string_view kKind = "weft.kind";
constexpr std::string_view kUnanswered = "weft.unanswered";

const std::string* FindAttribute(const Span& span, std::string_view key) {
  for (const auto& [k, v] : span.attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

// weft.caller and the rest, and what the exporter adds to a root (weft.algorithm,
// weft.pattern, weft.probability): about the export, not the request.
bool IsBookkeeping(std::string_view key) { return key.starts_with("weft."); }

// No parent: an empty id, or an all-zero one, which W3C Trace Context and OpenTelemetry
// define as invalid and which some exporters write for a root ("0", "0000000000000000").
bool NamesNoParent(std::string_view parent_id) {
  return parent_id.find_first_not_of('0') == std::string_view::npos;
}

}  // namespace

Result<Trace> SpansToTrace(std::span<const Span> spans, const SpanTraceOptions& options,
                           SpanTraceCounters* counters_out) {
  SpanTraceCounters counters;
  counters.spans = spans.size();
  // Traces in order of first appearance; spans of each in file order.
  absl::flat_hash_map<std::string_view, uint32_t> trace_index;
  std::vector<std::vector<uint32_t>> traces;
  for (uint32_t i = 0; i < spans.size(); ++i) {
    auto [it, added] = trace_index.try_emplace(spans[i].trace_id, uint32_t(traces.size()));
    if (added) traces.emplace_back();
    traces[it->second].push_back(i);
  }
  counters.traces = traces.size();

  // Roots of all traces, so that paths are numbered by root start across the file.
  struct Root {
    uint32_t trace;
    uint32_t span;
  };
  std::vector<Root> roots;
  // children[i]: the spans whose parent is span i (global indices).
  std::vector<std::vector<uint32_t>> children(spans.size());
  std::vector<int64_t> parent_of(spans.size(), -1);
  std::vector<bool> skipped(spans.size(), false);
  for (uint32_t t = 0; t < traces.size(); ++t) {
    absl::flat_hash_map<std::string_view, uint32_t> by_id;
    // Zipkin's shared RPC spans: a client's and a server's half under one id. The server's
    // half becomes the client's child.
    absl::flat_hash_map<uint32_t, uint32_t> shared;  // server half → client half
    for (uint32_t i : traces[t]) {
      auto [it, added] = by_id.try_emplace(spans[i].span_id, i);
      if (added) continue;
      const Span& first = spans[it->second];
      if (first.kind == SpanKind::kClient && spans[i].kind == SpanKind::kServer) {
        shared[i] = it->second;
      } else if (first.kind == SpanKind::kServer && spans[i].kind == SpanKind::kClient) {
        shared[it->second] = i;
        it->second = i;
      } else {
        skipped[i] = true;
        ++counters.duplicates;
      }
    }
    for (uint32_t i : traces[t]) {
      if (skipped[i]) continue;
      if (auto half = shared.find(i); half != shared.end()) {
        parent_of[i] = half->second;
        continue;
      }
      const Span& s = spans[i];
      if (NamesNoParent(s.parent_id)) continue;
      auto it = by_id.find(s.parent_id);
      if (it == by_id.end() || it->second == i) {
        ++counters.orphans;
      } else {
        parent_of[i] = it->second;
      }
    }
    for (uint32_t i : traces[t]) {
      if (skipped[i]) continue;
      if (parent_of[i] < 0) {
        roots.push_back({t, i});
      } else {
        children[size_t(parent_of[i])].push_back(i);
      }
    }
  }
  auto by_start = [&](uint32_t a, uint32_t b) {
    return spans[a].start != spans[b].start ? spans[a].start < spans[b].start : a < b;
  };
  for (auto& c : children) std::sort(c.begin(), c.end(), by_start);
  std::stable_sort(roots.begin(), roots.end(),
                   [&](const Root& a, const Root& b) { return by_start(a.span, b.span); });

  TraceBuilder builder;
  StringId span_name_key = builder.String("span.name");
  StringId span_kind_key = builder.String("span.kind");
  NodeId client = builder.Node(options.client);
  // A cycle of parent ids never reaches a root and so is never visited; a span visited
  // twice cannot happen because each has one parent.
  std::vector<bool> visited(spans.size(), false);
  struct Frame {
    uint32_t span;
    int64_t entry;     // row of the message this span's work was entered by (or inherited)
    int64_t call_row;  // row of this span's own CALL, -1 if it made none
    size_t next_child;
  };
  std::vector<Frame> stack;
  uint32_t path = 0;
  for (const Root& root : roots) {
    PathId path_id(path++);
    stack.push_back({root.span, -1, -1, 0});
    bool fresh = true;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const Span& s = spans[f.span];
      if (fresh) {
        fresh = false;
        visited[f.span] = true;
        int64_t parent_entry = f.entry;
        const std::string* caller = FindAttribute(s, kCaller);
        const std::string* kind = FindAttribute(s, kKind);
        bool is_root = parent_of[f.span] < 0;
        const Span* parent = is_root ? nullptr : &spans[size_t(parent_of[f.span])];
        bool makes_message = is_root || caller != nullptr || parent->service != s.service;
        if (makes_message) {
          MessageRecord m;
          m.send_time = s.start;
          m.sender = caller != nullptr ? builder.Node(*caller)
                     : is_root         ? client
                                       : builder.Node(parent->service);
          m.receiver = builder.Node(s.service);
          bool one_way = kind != nullptr && *kind == "MSG";
          m.kind = one_way ? MessageKind::kMessage : MessageKind::kCall;
          if (one_way && s.end != s.start) m.recv_time = s.end;
          m.call_id = one_way ? StringId() : builder.String(s.span_id);
          if (!options.strip_truth) m.truth_path = path_id;
          uint32_t row = builder.Add(m);
          if (!options.strip_truth && parent_entry >= 0)
            builder.SetParent(row, uint32_t(parent_entry));
          if (!s.name.empty()) builder.AddAttribute(row, span_name_key, builder.String(s.name));
          if (s.kind != SpanKind::kUnspecified) {
            builder.AddAttribute(row, span_kind_key, builder.String(SpanKindName(s.kind)));
          }
          for (const auto& [k, v] : s.attributes) {
            if (!IsBookkeeping(k)) builder.AddAttribute(row, builder.String(k), builder.String(v));
          }
          ++counters.messages;
          f.entry = row;
          if (!one_way) {
            f.call_row = row;
            ++counters.calls;
          }
        } else {
          ++counters.nested;
        }
        // A call lies inside its caller's work unless clocks disagree; a message hop
        // (MSG, producer/consumer) may well go on after the one that caused it.
        auto hop = [](const Span& x) {
          const std::string* k = FindAttribute(x, kKind);
          return (k != nullptr && *k == "MSG") || x.kind == SpanKind::kProducer ||
                 x.kind == SpanKind::kConsumer;
        };
        if (parent != nullptr && !hop(s) && !hop(*parent) &&
            (s.start < parent->start || s.end > parent->end)) {
          ++counters.outside_parent;
        }
      }
      if (f.next_child < children[f.span].size()) {
        uint32_t child = children[f.span][f.next_child++];
        int64_t entry = f.entry;
        stack.push_back({child, entry, -1, 0});
        fresh = true;
        continue;
      }
      // Leaving the span: its RETURN.
      if (f.call_row >= 0 && FindAttribute(s, kUnanswered) == nullptr) {
        MessageRecord m;
        m.send_time = s.end;
        const std::string* caller = FindAttribute(s, kCaller);
        bool is_root = parent_of[f.span] < 0;
        m.sender = builder.Node(s.service);
        m.receiver = caller != nullptr ? builder.Node(*caller)
                     : is_root         ? client
                                       : builder.Node(spans[size_t(parent_of[f.span])].service);
        m.kind = MessageKind::kReturn;
        m.call_id = builder.String(s.span_id);
        if (!options.strip_truth) m.truth_path = path_id;
        uint32_t row = builder.Add(m);
        if (!options.strip_truth) builder.SetParent(row, uint32_t(f.call_row));
        ++counters.messages;
      }
      stack.pop_back();
    }
  }
  counters.paths = path;
  for (uint32_t i = 0; i < spans.size(); ++i) {
    if (!visited[i] && !skipped[i]) ++counters.unreachable;
  }
  if (counters_out != nullptr) *counters_out = counters;
  return std::move(builder).Finish();
}

}  // namespace weft
