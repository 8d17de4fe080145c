// Clock offsets, WAP5 §5.2 after Paxson (see clock_offsets.h).
#include "trace/clock_offsets.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <deque>
#include <limits>

namespace weft {

ClockOffsets EstimateClockOffsets(const Trace& trace) {
  std::vector<uint32_t> own(trace.nodes().size());
  for (uint32_t n = 0; n < own.size(); ++n) own[n] = n;
  return EstimateClockOffsets(trace, own, uint32_t(own.size()));
}

ClockOffsets EstimateClockOffsets(const Trace& trace, std::span<const uint32_t> clock_of_node,
                                  uint32_t clocks) {
  const TraceColumns& c = trace.columns();
  struct Minima {
    TimeNs ab = std::numeric_limits<TimeNs>::max();
    TimeNs ba = std::numeric_limits<TimeNs>::max();
    uint64_t messages = 0;
  };
  absl::flat_hash_map<uint64_t, Minima> minima;
  std::vector<uint64_t> messages(clocks, 0);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.send_time[i] == kNoTime || c.recv_time[i] == kNoTime) continue;
    const uint32_t from = clock_of_node[c.sender[i].value()],
                   to = clock_of_node[c.receiver[i].value()];
    if (from == kNoClock || to == kNoClock || from == to) continue;
    const TimeNs apparent = c.recv_time[i] - c.send_time[i];
    const bool forward = from < to;
    const NodeId a(forward ? from : to), b(forward ? to : from);
    Minima& m = minima[uint64_t(a.value()) << 32 | b.value()];
    TimeNs& slot = forward ? m.ab : m.ba;
    slot = std::min(slot, apparent);
    ++m.messages;
    ++messages[a.value()];
    ++messages[b.value()];
  }
  ClockOffsets out;
  for (const auto& [key, m] : minima) {
    if (m.ab == std::numeric_limits<TimeNs>::max() || m.ba == std::numeric_limits<TimeNs>::max())
      continue;
    out.pairs.push_back({NodeId(uint32_t(key >> 32)), NodeId(uint32_t(key)), (m.ab - m.ba) / 2,
                         m.ab, m.ba, m.messages});
  }
  std::sort(out.pairs.begin(), out.pairs.end(), [](const PairOffset& x, const PairOffset& y) {
    return std::pair(x.a, x.b) < std::pair(y.a, y.b);
  });
  // Per node, through a spanning tree of each group: breadth first from its busiest node,
  // over the pairs with most messages first (their minima are the most trustworthy).
  const size_t nodes = clocks;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> adjacent(nodes);  // (node, pair)
  for (size_t p = 0; p < out.pairs.size(); ++p) {
    adjacent[out.pairs[p].a.value()].emplace_back(out.pairs[p].b.value(), p);
    adjacent[out.pairs[p].b.value()].emplace_back(out.pairs[p].a.value(), p);
  }
  for (auto& list : adjacent) {
    std::sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
      return out.pairs[x.second].messages > out.pairs[y.second].messages;
    });
  }
  std::vector<uint32_t> order(nodes);
  for (uint32_t n = 0; n < nodes; ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return messages[x] > messages[y]; });
  out.node.assign(nodes, kNoTime);
  for (uint32_t root : order) {
    if (out.node[root] != kNoTime || adjacent[root].empty()) continue;
    out.node[root] = 0;
    std::deque<uint32_t> queue{root};
    while (!queue.empty()) {
      const uint32_t n = queue.front();
      queue.pop_front();
      for (auto [next, p] : adjacent[n]) {
        if (out.node[next] != kNoTime) continue;
        const PairOffset& pair = out.pairs[p];
        out.node[next] = out.node[n] + (pair.a.value() == n ? pair.offset : -pair.offset);
        queue.push_back(next);
      }
    }
  }
  return out;
}

}  // namespace weft
