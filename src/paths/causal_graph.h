// The causal graph of the convolution algorithm (Project 5 §5.2, Figure 9;
// docs/convolution.md): a forest with a vertex per node visit. Each non-root vertex holds
// the edge from its parent: how many messages went along it and the delays the parent
// node spent before sending them (one per correlation spike), most frequent first.
// Convolution gives this instead of path instances (infer/convolution/convolution.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/id.h"
#include "core/intern.h"
#include "core/time.h"

namespace weft {

struct CausalDelay {
  TimeNs delay = 0;    // median sender delay of the messages of this spike
  uint64_t count = 0;  // messages with this delay
};

struct CausalVertex {
  NodeId node;                      // in the node table the graph was inferred over
  int32_t parent = -1;              // index of the parent vertex, -1 for a root
  uint64_t messages = 0;            // messages on the edge from the parent (for a root: sent by it)
  std::vector<CausalDelay> delays;  // empty for a root
};

struct CausalGraph {
  TimeNs quantum = 0;  // the time quantum mu it was inferred at (0 for a derived graph)
  std::vector<CausalVertex> vertices;  // parents before children (depth-first order)
  bool empty() const { return vertices.empty(); }
};

// A vertex's path from its root: node names (from `nodes`) joined by '>'
// ("CLIENT>WS2>AUTH"). Two graphs are compared vertex by vertex on these keys (eval).
std::string CausalVertexKey(const CausalGraph& graph, const NodeTable& nodes, uint32_t vertex);

}  // namespace weft
