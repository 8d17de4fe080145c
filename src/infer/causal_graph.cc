// Keys and the text table of the convolution algorithm's causal graph (infer/paths.h).
#include <fmt/format.h>

#include "infer/paths.h"

namespace weft {

std::string CausalVertexKey(const PathSet& set, uint32_t vertex) {
  std::vector<uint32_t> chain;
  for (int32_t v = int32_t(vertex); v >= 0; v = set.graph.vertices[size_t(v)].parent)
    chain.push_back(uint32_t(v));
  std::string key;
  for (size_t i = chain.size(); i-- > 0;) {
    if (!key.empty()) key += '>';
    key += set.nodes.Get(set.graph.vertices[chain[i]].node);
  }
  return key;
}

std::string FormatCausalGraph(const PathSet& set) {
  const CausalGraph& g = set.graph;
  std::string out = fmt::format("causal graph: {} vertices, quantum {}\n", g.vertices.size(),
                                FormatDuration(g.quantum));
  std::vector<int> depth(g.vertices.size(), 0);
  for (size_t i = 0; i < g.vertices.size(); ++i) {
    const CausalVertex& v = g.vertices[i];
    if (v.parent >= 0) depth[i] = depth[size_t(v.parent)] + 1;
    std::string line(size_t(2 * depth[i]), ' ');
    line += set.nodes.Get(v.node);
    if (v.parent < 0) {
      line += fmt::format("  (root, {} msgs sent)", v.messages);
    } else {
      line += fmt::format("  <- {}  {} msgs  delays",
                          set.nodes.Get(g.vertices[size_t(v.parent)].node), v.messages);
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
