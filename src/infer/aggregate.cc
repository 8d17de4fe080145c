// Client aggregation, WAP5 §2.5.1 (see aggregate.h).
#include "infer/aggregate.h"

#include <absl/container/flat_hash_map.h>

#include <string>

namespace weft {

NodeAggregation AggregateClients(const Trace& trace, uint32_t fixed_port_peers) {
  const TraceColumns& c = trace.columns();
  // Distinct peers per endpoint, counted up to the threshold: (endpoint, peer) pairs are
  // deduplicated by a set of pairs, the count kept per endpoint.
  absl::flat_hash_map<uint32_t, uint32_t> peers;  // endpoint -> distinct peers (capped)
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, bool> seen;
  auto note = [&](StringId endpoint, StringId peer) {
    if (!endpoint.valid() || !peer.valid()) return;
    uint32_t& n = peers[endpoint.value()];
    if (n >= fixed_port_peers) return;
    if (seen.try_emplace({endpoint.value(), peer.value()}, true).second) ++n;
  };
  for (size_t i = 0; i < trace.size(); ++i) {
    note(c.sender_endpoint[i], c.receiver_endpoint[i]);
    note(c.receiver_endpoint[i], c.sender_endpoint[i]);
  }
  auto fixed = [&](StringId e) {
    auto it = e.valid() ? peers.find(e.value()) : peers.end();
    return it != peers.end() && it->second >= fixed_port_peers;
  };
  NodeAggregation out;
  for (const auto& [endpoint, n] : peers) out.fixed_ports += n >= fixed_port_peers;
  const size_t nodes = trace.nodes().size();
  std::vector<bool> has_endpoint(nodes, false), server(nodes, false);
  for (size_t i = 0; i < trace.size(); ++i) {
    for (auto [node, endpoint] : {std::pair(c.sender[i], c.sender_endpoint[i]),
                                  std::pair(c.receiver[i], c.receiver_endpoint[i])}) {
      if (!endpoint.valid()) continue;
      has_endpoint[node.value()] = true;
      if (fixed(endpoint)) server[node.value()] = true;
    }
  }
  out.alias.resize(nodes);
  for (size_t n = 0; n < nodes; ++n) {
    std::string_view name = trace.nodes().Get(NodeId(uint32_t(n)));
    std::string renamed(name);
    if (has_endpoint[n] && !server[n]) {
      renamed = kClientNode;
      ++out.clients;
    } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
      // Named by an endpoint that is ephemeral: its port says nothing about its role.
      StringId as_endpoint = trace.strings().Find(name);
      if (as_endpoint.valid() && peers.contains(as_endpoint.value()) && !fixed(as_endpoint)) {
        renamed = std::string(name.substr(0, colon)) + ":*";
      }
    }
    out.alias[n] = out.names.Intern(renamed);
  }
  return out;
}

}  // namespace weft
