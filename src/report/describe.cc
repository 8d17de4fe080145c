// Text for people about paths and causal graphs (report/describe.h).
#include "report/describe.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace weft {

std::string DescribeAttributes(const PatternElement& element, uint64_t instances,
                               size_t max_value) {
  std::string out;
  std::vector<std::string_view>
      keys;  // attributes are most frequent first: the first of a key is its top
  for (const AttributeCount& a : element.attributes) {
    if (std::find(keys.begin(), keys.end(), a.key) != keys.end()) continue;
    keys.push_back(a.key);
    std::string value = a.value.size() > max_value ? a.value.substr(0, max_value) + "..." : a.value;
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", a.key, value);
    if (a.count < instances)
      out += fmt::format(" ({:.0f}%)", 100.0 * double(a.count) / double(instances));
  }
  return out;
}

std::string CompactShape(const PathSet& set, const PathPattern& pattern) {
  const auto& e = pattern.elements;
  if (e.empty()) return "";
  // Children lists in element (canonical) order, RETURNs left out.
  std::vector<std::vector<int32_t>> children(e.size());
  for (size_t k = 1; k < e.size(); ++k) {
    if (e[k].kind != MessageKind::kReturn && e[k].parent >= 0 && size_t(e[k].parent) < k) {
      children[size_t(e[k].parent)].push_back(int32_t(k));
    }
  }
  std::string out(set.nodes.Get(e[0].sender));
  // Iterative, so that a deep chain cannot overflow the stack: each frame is an element
  // and how many of its children have been written.
  struct Frame {
    int32_t element;
    size_t next_child;
    bool bracketed;  // this element was opened with '['
  };
  std::vector<Frame> stack;
  out += "→";
  out += set.nodes.Get(e[0].receiver);
  stack.push_back({0, 0, false});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& kids = children[size_t(f.element)];
    if (f.next_child == kids.size()) {
      if (f.bracketed) out += ']';
      stack.pop_back();
      continue;
    }
    int32_t child = kids[f.next_child++];
    bool last = f.next_child == kids.size();
    if (last && kids.size() > 1) out += ' ';
    if (!last) out += '[';
    out += "→";
    out += set.nodes.Get(e[size_t(child)].receiver);
    stack.push_back({child, 0, !last});
  }
  return out;
}

std::string FormatCausalGraph(const CausalGraph& g, const NodeTable& nodes) {
  std::string out = fmt::format("causal graph: {} vertices, quantum {}\n", g.vertices.size(),
                                FormatDuration(g.quantum));
  std::vector<int> depth(g.vertices.size(), 0);
  for (size_t i = 0; i < g.vertices.size(); ++i) {
    const CausalVertex& v = g.vertices[i];
    if (v.parent >= 0) depth[i] = depth[size_t(v.parent)] + 1;
    std::string line(size_t(2 * depth[i]), ' ');
    line += nodes.Get(v.node);
    if (v.parent < 0) {
      line += fmt::format("  (root, {} msgs sent)", v.messages);
    } else {
      line += fmt::format("  <- {}  {} msgs  delays", nodes.Get(g.vertices[size_t(v.parent)].node),
                          v.messages);
      for (size_t d = 0; d < v.delays.size(); ++d) {
        line += fmt::format("{} {} ({})", d ? "," : "", FormatDuration(v.delays[d].delay),
                            v.delays[d].count);
      }
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace weft
