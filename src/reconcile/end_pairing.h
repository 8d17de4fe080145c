// Which connection ends are the two ends of one connection, and which end is the client
// (reconcile.h step 2). Internal to reconcile.
#pragma once

#include <vector>

#include "core/status.h"
#include "reconcile/connection_table.h"

namespace weft::reconcile {

// A stream connection as reconcile emits it: its client end (whose messages are CALLs)
// and its server end (RETURNs); either may be null (untraced), not both.
struct ConnectionPair {
  const ConnectionEnd* client = nullptr;
  const ConnectionEnd* server = nullptr;
  bool symmetric = false;  // socketpair: neither end is a client (MSG both ways)
};

// Pairs each end with its other end: for TCP the end whose 4-tuple is its reverse and
// whose lifetime overlaps it, nearest in open time, so a reused port gives one pair per
// lifetime (vPath §3.3); for Unix sockets the end with the inode it names as its peer
// (exact, however many connections join the same two processes on one path). Ends merged
// away and pipes are left out. The pairs point into `ends`, which must outlive them. An
// error only for a TCP endpoint whose port does not parse (never one reconcile formatted).
Result<std::vector<ConnectionPair>> PairEnds(const std::vector<ConnectionEnd>& ends);

}  // namespace weft::reconcile
