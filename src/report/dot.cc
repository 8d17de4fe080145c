#include "report/dot.h"

#include <iterator>

#include <fmt/format.h>

#include "core/time.h"

namespace weft {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

TimeNs Mean(const LatencyHistogram& h) { return TimeNs(h.mean()); }

}  // namespace

std::string PatternToDot(const PathSet& set, uint32_t index) {
  const PathPattern& p = set.patterns[index];
  std::string out = fmt::format("digraph pattern_{} {{\n  rankdir=TB;\n  node [shape=ellipse];\n", index);
  auto it = std::back_inserter(out);
  // The visit latency of a CALL element is the delay of its RETURN child.
  std::vector<const LatencyHistogram*> visit_latency(p.elements.size(), nullptr);
  for (size_t e = 0; e < p.elements.size(); ++e) {
    const PatternElement& el = p.elements[e];
    if (el.kind == MessageKind::kReturn && el.parent >= 0) visit_latency[size_t(el.parent)] = &el.delay;
  }
  fmt::format_to(it, "  root [label={}, shape=box];\n",
                 Quote(set.nodes.Get(p.elements.empty() ? NodeId(0) : p.elements[0].sender)));
  for (size_t e = 0; e < p.elements.size(); ++e) {
    const PatternElement& el = p.elements[e];
    if (el.kind == MessageKind::kReturn) continue;  // drawn as its call's latency
    // Graphviz reads \n inside a quoted label as a line break.
    std::string label = Quote(set.nodes.Get(el.receiver));
    if (visit_latency[e]) label.insert(label.size() - 1, "\\n" + FormatDuration(Mean(*visit_latency[e])));
    fmt::format_to(it, "  e{} [label={}];\n", e, label);
    std::string from = el.parent < 0 ? "root" : fmt::format("e{}", el.parent);
    std::string edge;
    if (el.parent < 0) {
      edge = fmt::format("{} x, total {}", p.count,
                         FormatDuration(TimeNs(p.latency.mean() * double(p.count))));
    } else {
      edge = FormatDuration(Mean(el.delay));
    }
    fmt::format_to(it, "  {} -> e{} [label={}];\n", from, e, Quote(edge));
  }
  out += "}\n";
  return out;
}

}  // namespace weft
