// Vertex keys of the convolution algorithm's causal graph (paths/causal_graph.h).
#include "paths/causal_graph.h"

namespace weft {

std::string CausalVertexKey(const CausalGraph& graph, const NodeTable& nodes, uint32_t vertex) {
  std::vector<uint32_t> chain;
  for (int32_t v = int32_t(vertex); v >= 0; v = graph.vertices[size_t(v)].parent)
    chain.push_back(uint32_t(v));
  std::string key;
  for (size_t i = chain.size(); i-- > 0;) {
    if (!key.empty()) key += '>';
    key += nodes.Get(graph.vertices[chain[i]].node);
  }
  return key;
}

}  // namespace weft
