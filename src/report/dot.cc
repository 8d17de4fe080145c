#include "report/dot.h"

#include <fmt/format.h>

#include <iterator>

#include "core/time.h"
#include "report/describe.h"

namespace weft {
namespace {

// A quoted Graphviz string; a '\n' in `s` becomes a line break of the label.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

TimeNs Mean(const LatencyHistogram& h) { return TimeNs(h.mean()); }

}  // namespace

std::string PatternToDot(const PathSet& set, uint32_t index) {
  const PathPattern& p = set.patterns[index];
  std::string out =
      fmt::format("digraph pattern_{} {{\n  rankdir=TB;\n  node [shape=ellipse];\n", index);
  auto it = std::back_inserter(out);
  // The visit latency of a CALL element is the delay of its RETURN child.
  std::vector<const LatencyHistogram*> visit_latency(p.elements.size(), nullptr);
  for (size_t e = 0; e < p.elements.size(); ++e) {
    const PatternElement& el = p.elements[e];
    if (el.kind == MessageKind::kReturn && el.parent >= 0)
      visit_latency[size_t(el.parent)] = &el.delay;
  }
  fmt::format_to(it, "  root [label={}, shape=box];\n",
                 Quote(set.nodes.Get(p.elements.empty() ? NodeId(0) : p.elements[0].sender)));
  for (size_t e = 0; e < p.elements.size(); ++e) {
    const PatternElement& el = p.elements[e];
    if (el.kind == MessageKind::kReturn) continue;  // drawn as its call's latency
    std::string label(set.nodes.Get(el.receiver));
    if (visit_latency[e]) label += "\n" + FormatDuration(Mean(*visit_latency[e]));
    // What the call asked for (http.url, sql, ...), from the protocol processors.
    if (std::string what = DescribeAttributes(el, p.count, 32); !what.empty()) label += "\n" + what;
    fmt::format_to(it, "  e{} [label={}];\n", e, Quote(label));
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

std::string CausalGraphToDot(const CausalGraph& g, const NodeTable& nodes, uint64_t min_messages) {
  std::string out = "digraph causal_graph {\n  rankdir=TB;\n  node [shape=ellipse];\n";
  auto it = std::back_inserter(out);
  std::vector<bool> shown(g.vertices.size(), false);
  for (size_t v = 0; v < g.vertices.size(); ++v) {
    const CausalVertex& vertex = g.vertices[v];
    if (vertex.parent >= 0 && (!shown[size_t(vertex.parent)] || vertex.messages < min_messages))
      continue;
    shown[v] = true;
    fmt::format_to(it, "  v{} [label={}{}];\n", v, Quote(nodes.Get(vertex.node)),
                   vertex.parent < 0 ? ", shape=box" : "");
    if (vertex.parent < 0) continue;
    // Figure 9: "count: delay1, delay2, ..." (Graphviz reads \n in a label as a break).
    std::string label = fmt::format("{}{}", vertex.messages, vertex.delays.empty() ? "" : ":");
    for (size_t d = 0; d < vertex.delays.size(); ++d) {
      label += fmt::format("{}{}", d ? ", " : " ", FormatDuration(vertex.delays[d].delay));
    }
    fmt::format_to(it, "  v{} -> v{} [label={}];\n", vertex.parent, v, Quote(label));
  }
  out += "}\n";
  return out;
}

}  // namespace weft
