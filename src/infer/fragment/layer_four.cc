// Fragment's pairing of a layer-4 proxy's connections (layer_four.h).
#include "infer/fragment/layer_four.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <tuple>

namespace weft {

void PairLayerFourConnections(const Trace& trace, const std::vector<MessageId>& call_of,
                              std::vector<MessageId>& parent) {
  const TraceColumns& c = trace.columns();
  // Per node and endpoints, the calls on each connection in order: a connect (outbound)
  // or an accept (inbound) starts a new one where a port was reused.
  using Key = std::tuple<uint32_t, StringId, StringId>;
  auto runs = [&](bool outbound) {
    std::vector<uint32_t> calls;
    const std::vector<TimeNs>& time = outbound ? c.send_time : c.recv_time;
    for (size_t i = 0; i < trace.size(); ++i) {
      if (c.kind[i] == MessageKind::kCall && time[i] != kNoTime && c.sender_endpoint[i].valid() &&
          c.receiver_endpoint[i].valid())
        calls.push_back(uint32_t(i));
    }
    std::stable_sort(calls.begin(), calls.end(),
                     [&](uint32_t a, uint32_t b) { return time[a] < time[b]; });
    absl::flat_hash_map<Key, std::vector<std::vector<uint32_t>>> by_connection;
    for (uint32_t i : calls) {
      auto& list = by_connection[{(outbound ? c.sender : c.receiver)[i].value(),
                                  c.sender_endpoint[i], c.receiver_endpoint[i]}];
      if (list.empty() || (outbound ? c.connect_time : c.accept_time)[i] != kNoTime)
        list.emplace_back();
      list.back().push_back(i);
    }
    return by_connection;
  };
  const auto outbound = runs(true), inbound = runs(false);
  absl::flat_hash_map<uint32_t, const std::vector<uint32_t>*> opened_by;  // first request
  for (const auto& [key, connections] : inbound)
    for (const std::vector<uint32_t>& requests : connections) opened_by[requests[0]] = &requests;
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> reply(trace.size(), kNone);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn && call_of[i].valid())
      reply[call_of[i].value()] = uint32_t(i);
  }
  auto read = [&](uint32_t m) {
    return c.first_read_time[m] != kNoTime ? c.first_read_time[m] : c.recv_time[m];
  };
  auto forwards = [&](uint32_t call, uint32_t request) {
    if (c.bytes[call] < 0 || c.bytes[call] != c.bytes[request] || c.send_time[call] < read(request))
      return false;
    const uint32_t back = reply[call], answer = reply[request];
    return back == kNone || answer == kNone || c.recv_time[back] == kNoTime ||
           c.send_time[answer] == kNoTime ||
           (c.recv_time[back] <= c.send_time[answer] && c.bytes[back] == c.bytes[answer]);
  };
  for (const auto& [key, connections] : outbound) {
    for (const std::vector<uint32_t>& calls : connections) {
      const uint32_t first = calls[0];
      const MessageId request = parent[first];
      if (calls.size() < 2 || c.connect_time[first] == kNoTime || !request.valid()) continue;
      auto client = opened_by.find(request.value());
      if (client == opened_by.end() || c.connect_time[first] >= read(request.value())) continue;
      const std::vector<uint32_t>& requests = *client->second;
      bool fits = calls.size() <= requests.size();
      for (size_t k = 0; fits && k < calls.size(); ++k) fits = forwards(calls[k], requests[k]);
      if (!fits) continue;
      for (size_t k = 1; k < calls.size(); ++k) {
        parent[calls[k]] = MessageId(requests[k]);
      }
    }
  }
}

}  // namespace weft
