// Client aggregation (WAP5 §2.5.1): thousands of clients, each with ephemeral ports, would
// each start their own path patterns; named by role instead they aggregate into one.
//
// A port (an endpoint "address:port") is fixed if it talks with at least
// `fixed_port_peers` distinct other endpoints (a server's listening port, DNS's 53), and
// ephemeral otherwise. A node that uses a fixed port at least once is a server; a node
// that has endpoints but never a fixed one is a client and is named "CLIENT". A node whose
// name is itself an ephemeral endpoint (an untraced peer named by endpoint) becomes
// "address:*". Nodes without endpoints keep their names: there is nothing to judge by.
#pragma once

#include <cstdint>
#include <vector>

#include "core/id.h"
#include "core/intern.h"
#include "trace/trace.h"

namespace weft {

inline constexpr std::string_view kClientNode = "CLIENT";

struct NodeAggregation {
  NodeTable names;            // the aggregated node names
  std::vector<NodeId> alias;  // per trace node: its id in `names`
  uint32_t clients = 0;       // trace nodes named CLIENT
};

inline constexpr uint32_t kMaxPeersCounted = 8;  // fixed_port_peers is at most this

NodeAggregation AggregateClients(const Trace& trace, uint32_t fixed_port_peers = 3);

}  // namespace weft
