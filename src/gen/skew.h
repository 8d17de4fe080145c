// skewer (Project 5 §7.5.6): per-node clock offsets added to an existing trace.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "trace/trace.h"

namespace weft {

struct SkewOptions {
  // Explicit offsets by node name: a node's clock runs this much ahead (negative: behind).
  std::vector<std::pair<std::string, TimeNs>> offsets;
  // Nodes without an explicit offset get one drawn from N(0, random_sd), in node order,
  // from `seed`. 0: they keep their clock.
  TimeNs random_sd = 0;
  uint64_t seed = 1;
};

// Shifts the send times of the messages each node sent and the receive times of the
// messages it received by that node's offset, and re-sorts the trace by time. Ground
// truth is kept (parents follow their messages to their new positions). An unknown node
// name is an error naming it. `applied`, if given, receives the offset of every node by
// NodeId.
Result<Trace> SkewTrace(const Trace& trace, const SkewOptions& options,
                        std::vector<TimeNs>* applied = nullptr);

// "WS2=+30ms": a node name and a signed duration.
Result<std::pair<std::string, TimeNs>> ParseNodeOffset(std::string_view text);

}  // namespace weft
