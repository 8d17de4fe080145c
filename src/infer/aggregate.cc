// Client aggregation, WAP5 §2.5.1 (see aggregate.h).
#include "infer/aggregate.h"

#include <algorithm>
#include <string>

namespace weft {

NodeAggregation AggregateClients(const Trace& trace, uint32_t fixed_port_peers) {
  const TraceColumns& c = trace.columns();
  // Distinct peers per endpoint, counted up to the threshold. Only an endpoint that occurs
  // that often can have that many peers, which rules out the ephemeral ones (a call and
  // its return) before any peer is kept; the others keep their first few peers, which is
  // all it takes to count that far. Endpoints are interned strings: dense ids, no hashing.
  fixed_port_peers = std::clamp<uint32_t>(fixed_port_peers, 1, kMaxPeersCounted);
  const size_t strings = trace.strings().size();
  std::vector<uint32_t> occurrences(strings, 0);
  for (size_t i = 0; i < trace.size(); ++i) {
    for (StringId e : {c.sender_endpoint[i], c.receiver_endpoint[i]}) {
      if (e.valid()) ++occurrences[e.value()];
    }
  }
  struct Peers {
    uint32_t count = 0;
    uint32_t first[kMaxPeersCounted];
  };
  std::vector<int32_t> slot(strings, -1);
  std::vector<Peers> peers;
  for (size_t e = 0; e < strings; ++e) {
    if (occurrences[e] >= fixed_port_peers) {
      slot[e] = int32_t(peers.size());
      peers.emplace_back();
    }
  }
  auto note = [&](StringId endpoint, StringId peer) {
    if (!endpoint.valid() || !peer.valid() || slot[endpoint.value()] < 0) return;
    Peers& p = peers[size_t(slot[endpoint.value()])];
    if (p.count >= fixed_port_peers) return;
    for (uint32_t i = 0; i < p.count; ++i) {
      if (p.first[i] == peer.value()) return;
    }
    p.first[p.count++] = peer.value();
  };
  for (size_t i = 0; i < trace.size(); ++i) {
    note(c.sender_endpoint[i], c.receiver_endpoint[i]);
    note(c.receiver_endpoint[i], c.sender_endpoint[i]);
  }
  auto fixed = [&](StringId e) {
    return e.valid() && slot[e.value()] >= 0 &&
           peers[size_t(slot[e.value()])].count >= fixed_port_peers;
  };
  NodeAggregation out;
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
      if (as_endpoint.valid() && occurrences[as_endpoint.value()] > 0 && !fixed(as_endpoint)) {
        renamed = std::string(name.substr(0, colon)) + ":*";
      }
    }
    out.alias[n] = out.names.Intern(renamed);
  }
  return out;
}

}  // namespace weft
