// Text for people about paths and causal graphs, shared by report, eval and the CLI:
// compact shapes, attribute summaries and the causal graph as a table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/intern.h"
#include "paths/causal_graph.h"
#include "paths/path_set.h"

namespace weft {

// An element's attributes for a table or a graph: for each key, its most frequent value,
// with its share of the pattern's `instances` when not all of them had it:
// "http.method=GET http.url=/home (75%)". Values are cut to `max_value` bytes; "" if none.
std::string DescribeAttributes(const PatternElement& element, uint64_t instances,
                               size_t max_value = 48);

// The shape for a one-line table: "client→WS1[→AUTH] →AP2→DB". RETURNs are left out (in
// a call tree they are implied by their CALL); every child but the last is put in [...].
std::string CompactShape(const PathSet& set, const PathPattern& pattern);

// The causal graph as a table, one line per vertex, indented by depth, node names from
// `nodes`: "    AUTH  <- WS2  1234 msgs  delays 50.1ms (1100), 12.0ms (134)".
std::string FormatCausalGraph(const CausalGraph& graph, const NodeTable& nodes);

}  // namespace weft
