// Clock offsets between nodes from two-timestamp messages (WAP5 §5.2, after Paxson):
// assuming the network delay is the same both ways, the offset of B's clock from A's is
// half the difference of the smallest apparent one-way delays,
//     offset(B) - offset(A) = (min(recv - send over A->B) - min(recv - send over B->A)) / 2,
// wrong by half the asymmetry of the two directions' minimum delays. The minimum filters
// out queueing. Clock skew (rate differences) is ignored, as WAP5 ignores it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/id.h"
#include "core/time.h"
#include "trace/trace.h"

namespace weft {

// The estimated offset of clock b from clock a, by the clocks' names: nodes of a trace, or
// the hosts of a capture in reconcile. The one clock-offset type of weft: inference keeps
// these in a PathSet (paths.h), reconcile in its summary.
struct ClockOffset {
  std::string a, b;       // a's clock number is below b's
  TimeNs offset = 0;      // b's clock minus a's
  uint64_t messages = 0;  // both-timestamp messages between them, both ways
  bool operator==(const ClockOffset&) const = default;
};

struct ClockOffsets {
  // Per pair of clocks that exchanged messages timed at both ends in both directions,
  // sorted by the clocks' numbers.
  std::vector<ClockOffset> pairs;
  // Per clock: its time minus the reference clock of its group (clocks joined by pairs; the
  // reference is the group's clock with most messages), or kNoTime if it has no pair.
  std::vector<TimeNs> node;
};

// Every node its own clock, named as the node.
ClockOffsets EstimateClockOffsets(const Trace& trace);

// The same with nodes that share a clock taken together (the processes of one host, in
// reconcile): `clock_of_node[n]` is node n's clock, below `clock_names.size()`, or invalid
// for a node whose times are not its own (an untraced peer). The result's `node` is then
// per clock.
ClockOffsets EstimateClockOffsets(const Trace& trace, std::span<const ClockId> clock_of_node,
                                  std::span<const std::string> clock_names);

}  // namespace weft
