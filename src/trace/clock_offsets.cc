// Clock offsets, WAP5 §5.2 after Paxson (see clock_offsets.h).
#include "trace/clock_offsets.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <deque>
#include <limits>

namespace weft {

namespace {

// A pair of clocks by number, while the estimate is worked out.
struct PairOffset {
  uint32_t a, b;  // a < b
  TimeNs offset = 0;
  uint64_t messages = 0;
};

}  // namespace

ClockOffsets EstimateClockOffsets(const Trace& trace) {
  std::vector<ClockId> own(trace.nodes().size());
  std::vector<std::string> names(own.size());
  for (uint32_t n = 0; n < own.size(); ++n) {
    own[n] = ClockId(n);
    names[n] = std::string(trace.NodeName(NodeId(n)));
  }
  return EstimateClockOffsets(trace, own, names);
}

ClockOffsets EstimateClockOffsets(const Trace& trace, std::span<const ClockId> clock_of_node,
                                  std::span<const std::string> clock_names) {
  const uint32_t clocks = uint32_t(clock_names.size());
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
    const ClockId from = clock_of_node[c.sender[i].value()],
                  to = clock_of_node[c.receiver[i].value()];
    if (!from.valid() || !to.valid() || from == to) continue;
    const TimeNs apparent = c.recv_time[i] - c.send_time[i];
    const bool forward = from < to;
    const uint32_t a = (forward ? from : to).value(), b = (forward ? to : from).value();
    Minima& m = minima[uint64_t(a) << 32 | b];
    TimeNs& slot = forward ? m.ab : m.ba;
    slot = std::min(slot, apparent);
    ++m.messages;
    ++messages[a];
    ++messages[b];
  }
  std::vector<PairOffset> pairs;
  for (const auto& [key, m] : minima) {
    if (m.ab == std::numeric_limits<TimeNs>::max() || m.ba == std::numeric_limits<TimeNs>::max())
      continue;
    pairs.push_back({uint32_t(key >> 32), uint32_t(key), (m.ab - m.ba) / 2, m.messages});
  }
  std::sort(pairs.begin(), pairs.end(), [](const PairOffset& x, const PairOffset& y) {
    return std::pair(x.a, x.b) < std::pair(y.a, y.b);
  });
  // Per node, through a spanning tree of each group: breadth first from its busiest node,
  // over the pairs with most messages first (their minima are the most trustworthy).
  const size_t nodes = clocks;
  std::vector<std::vector<std::pair<uint32_t, size_t>>> adjacent(nodes);  // (node, pair)
  for (size_t p = 0; p < pairs.size(); ++p) {
    adjacent[pairs[p].a].emplace_back(pairs[p].b, p);
    adjacent[pairs[p].b].emplace_back(pairs[p].a, p);
  }
  for (auto& list : adjacent) {
    std::sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
      return pairs[x.second].messages > pairs[y.second].messages;
    });
  }
  std::vector<uint32_t> order(nodes);
  for (uint32_t n = 0; n < nodes; ++n) order[n] = n;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return messages[x] > messages[y]; });
  ClockOffsets out;
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
        const PairOffset& pair = pairs[p];
        out.node[next] = out.node[n] + (pair.a == n ? pair.offset : -pair.offset);
        queue.push_back(next);
      }
    }
  }
  out.pairs.reserve(pairs.size());
  for (const PairOffset& p : pairs)
    out.pairs.push_back({clock_names[p.a], clock_names[p.b], p.offset, p.messages});
  return out;
}

}  // namespace weft
