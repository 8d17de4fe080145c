// Hand-offs between threads of one process, found in its captured synchronisation calls
// (capture/preload/sync_calls.cc): the trace's HANDOFF links (trace.h). Internal to
// reconcile; docs/reconcile.md, "Hand-offs", gives the rules and their limits.
//
// What carries a request from one thread to another is the identity of what is handed
// over (Whodunit, EuroSys'07, follows transactions through the critical sections of
// shared queues):
//   - a queue: a condition variable C waited on with, or signalled under, mutex M. The
//     critical sections on M never overlap, so the order of their ends (an unlock, or a
//     wait's entry; capture logs no locks) is M's order. A section during which (or right
//     after which) its thread signals C, by a thread that never waits on C, produces an
//     item; a section ending in an unlock, of a thread that waits on C or that neither
//     signals nor waits on any condition variable of M, takes one. The k-th item produced
//     is the k-th taken (a FIFO queue).
//     A worker woken on its own condition variable (a targeted wake: Varnish, MariaDB) is
//     the same rule with one waiter. A broadcast produces no item: it hands over to each
//     thread waiting on C when it was sent (ambiguous when there were several), at that
//     thread's next take; a change of state announced to whoever waits (Varnish's fetch
//     progress) is not work a later taker picks up;
//   - a semaphore: the k-th post is taken by the k-th wait that returned;
//   - an eventfd: a write is taken by the next read of it (one read may take several
//     writes: the earliest is linked and the link marked ambiguous);
//   - a timerfd: the last arm before an expiry is taken by the read that reports it; a
//     timerfd re-armed before it expired serves several deadlines (a loop's heap of timers
//     behind one timerfd, as libuv and nginx keep theirs), and its links are ambiguous.
// Wake-ups are not one per item (a signal without a waiter makes no system call; one
// eventfd read covers several writes), which is why queues are paired by their critical
// sections, not by their wake-ups.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/event_log.h"
#include "core/time.h"

namespace weft::reconcile {

struct Handoff {
  int32_t from_tid = 0;
  TimeNs from_time = 0;  // the producer let go of the work (its log's monotonic clock)
  int32_t to_tid = 0;
  TimeNs to_time = 0;  // the consumer took it
  bool ambiguous = false;
};

struct HandoffCounts {
  uint64_t queue_items = 0;         // queue items taken, each a link
  uint64_t fifo_assumed = 0;        // of them, taken while several were queued (FIFO assumed)
  uint64_t takes_unexplained = 0;   // a taker's section with no item queued for it
  uint64_t items_never_taken = 0;   // produced, never taken before the log ended
  uint64_t broadcasts_unheard = 0;  // broadcasts with no thread waiting
  uint64_t broadcasts_shared = 0;   // links from a broadcast that woke several (ambiguous)
  uint64_t wakes = 0;               // semaphore, eventfd and timer wake-ups linked
  uint64_t wakes_ambiguous = 0;     // one read took several eventfd writes, or a shared timer
};

// The hand-offs in one program image's log, in no particular order.
std::vector<Handoff> FindHandoffs(const capture::EventLog& log, HandoffCounts& counts);

}  // namespace weft::reconcile
