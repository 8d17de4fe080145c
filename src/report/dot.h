// Graphviz views of path patterns (Project 5 §5.4).
//
// RPC patterns follow Figure 8: an ellipse per node visit with the node's name and its
// mean latency (the visit, including its callees); an arrow per call labelled with the
// mean delay from the parent's entry to the child's entry; the first arrow, from the
// client, also carries the pattern's instance count and total latency (count x mean).
// Free-form message patterns are drawn the same way with one ellipse per message arrival
// and arrows labelled with the sender's mean delay.
#pragma once

#include <string>

#include "core/intern.h"
#include "paths/causal_graph.h"
#include "paths/path_set.h"

namespace weft {

// The dot source of one pattern of `set`.
std::string PatternToDot(const PathSet& set, uint32_t pattern);

// The convolution algorithm's causal graph in the style of Project 5 Figure 9: an
// ellipse per vertex (a node visit) with the node's name; an arrow per edge labelled with
// its message count and its delays, most frequent first. Edges with fewer than
// `min_messages` messages are left out, with their subtrees. Node names from `nodes`.
std::string CausalGraphToDot(const CausalGraph& graph, const NodeTable& nodes,
                             uint64_t min_messages = 0);

}  // namespace weft
