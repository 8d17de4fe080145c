// Clock offsets between nodes from two-timestamp messages (WAP5 §5.2, after Paxson):
// assuming the network delay is the same both ways, the offset of B's clock from A's is
// half the difference of the smallest apparent one-way delays,
//     offset(B) - offset(A) = (min(recv - send over A->B) - min(recv - send over B->A)) / 2,
// wrong by half the asymmetry of the two directions' minimum delays. The minimum filters
// out queueing. Clock skew (rate differences) is ignored, as WAP5 ignores it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/id.h"
#include "core/time.h"
#include "trace/trace.h"

namespace weft {

// One pair of nodes that exchanged messages timed at both ends in both directions.
struct PairOffset {
  NodeId a, b;        // a < b
  TimeNs offset = 0;  // b's clock minus a's
  TimeNs min_ab = 0;  // the smallest recv - send of a->b messages (both clocks raw)
  TimeNs min_ba = 0;
  uint64_t messages = 0;  // both-timestamp messages between them, both ways
};

struct ClockOffsets {
  std::vector<PairOffset> pairs;  // sorted by (a, b)
  // Per node: its clock minus the reference clock of its group (nodes joined by pairs; the
  // reference is the group's node with most messages), or kNoTime if it has no pair.
  std::vector<TimeNs> node;
};

ClockOffsets EstimateClockOffsets(const Trace& trace);

// The same with nodes that share a clock taken together (the processes of one host, in
// reconcile): `clock_of_node[n]` is node n's clock, numbered from 0 to `clocks` - 1, or
// kNoClock for a node whose times are not its own (an untraced peer). PairOffset's `a`
// and `b` and the result's `node` are then clock numbers.
inline constexpr uint32_t kNoClock = UINT32_MAX;
ClockOffsets EstimateClockOffsets(const Trace& trace, std::span<const uint32_t> clock_of_node,
                                  uint32_t clocks);

}  // namespace weft
