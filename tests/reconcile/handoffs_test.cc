// FindHandoffs (reconcile/handoffs.h) on hand-written logs: which producer each consumer
// takes its work from, and which links are guesses.
#include "reconcile/handoffs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace weft::reconcile {
namespace {

using capture::Event;
using capture::EventOp;

constexpr uint64_t kMutex = 0x1000, kCond = 0x2000, kOtherCond = 0x3000, kSem = 0x4000;

class LogBuilder {
 public:
  LogBuilder& Add(EventOp op, int32_t tid, TimeNs entry, TimeNs exit, uint64_t object,
                  uint64_t second = 0) {
    Event e{.op = op};
    e.tid = tid;
    e.entry_ns = entry;
    e.exit_ns = exit;
    e.object = object;
    e.second = second;
    log_.events.push_back(e);
    return *this;
  }
  // A producer's critical section from `at` to `at + 2` that signals `cond` inside it
  // (capture logs no locks: reconcile must do without them).
  LogBuilder& Produce(int32_t tid, TimeNs at, uint64_t cond = kCond) {
    return Add(EventOp::kMutexLock, tid, at, at, kMutex)
        .Add(EventOp::kCondSignal, tid, at + 1, at + 1, cond, kMutex)
        .Add(EventOp::kMutexUnlock, tid, at + 2, at + 2, kMutex);
  }
  capture::EventLog Build() {
    std::stable_sort(log_.events.begin(), log_.events.end(),
                     [](const Event& a, const Event& b) { return a.entry_ns < b.entry_ns; });
    return log_;
  }

 private:
  capture::EventLog log_;
};

using Link = std::tuple<int32_t, TimeNs, int32_t, TimeNs, bool>;

std::vector<Link> Links(const capture::EventLog& log, HandoffCounts& counts) {
  std::vector<Link> links;
  for (const Handoff& h : FindHandoffs(log, counts))
    links.emplace_back(h.from_tid, h.from_time, h.to_tid, h.to_time, h.ambiguous);
  std::sort(links.begin(), links.end());
  return links;
}

// Two workers wait on the queue's condition variable; the k-th item produced is the k-th
// taken, whether the taker waited for it (woken) or found it there (a lock, no wait).
TEST(FindHandoffs, PairsQueueItemsInMutexOrder) {
  LogBuilder b;
  b.Add(EventOp::kMutexLock, 2, 1, 1, kMutex)
      .Add(EventOp::kCondWait, 2, 2, 15, kCond, kMutex)  // woken by the first item
      .Add(EventOp::kMutexUnlock, 2, 16, 16, kMutex)
      .Add(EventOp::kMutexLock, 3, 3, 3, kMutex)
      .Add(EventOp::kCondWait, 3, 4, 5, kCond, kMutex)  // a spurious wake-up: waits again
      .Add(EventOp::kCondWait, 3, 6, 30, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 3, 31, 31, kMutex)
      .Produce(1, 10)
      .Produce(1, 20);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts),
            (std::vector<Link>{{1, 12, 2, 16, false}, {1, 22, 3, 31, false}}));
  EXPECT_EQ(counts.queue_items, 2u);
  EXPECT_EQ(counts.fifo_assumed, 0u);
  EXPECT_EQ(counts.takes_unexplained, 0u);
  EXPECT_EQ(counts.items_never_taken, 0u);
}

// A broadcast announces a change of state to whoever waits then (Varnish's fetch thread
// telling the client's thread that the response has come): each thread waiting on the
// condition variable takes from it, ambiguously when there were several; a thread that
// holds the mutex later without waiting (a lookup under the same lock) takes nothing.
TEST(FindHandoffs, BroadcastsHandOverToTheirWaitersOnly) {
  LogBuilder b;
  b.Add(EventOp::kMutexLock, 2, 1, 1, kMutex)
      .Add(EventOp::kCondWait, 2, 2, 12, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 2, 13, 13, kMutex)
      .Add(EventOp::kMutexLock, 1, 10, 10, kMutex)
      .Add(EventOp::kCondBroadcast, 1, 11, 11, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 1, 11, 11, kMutex)
      .Add(EventOp::kMutexLock, 1, 20, 20, kMutex)  // nobody waits: unheard
      .Add(EventOp::kCondBroadcast, 1, 21, 21, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 1, 21, 21, kMutex)
      .Add(EventOp::kMutexLock, 4, 30, 30, kMutex)  // a lookup, long after
      .Add(EventOp::kMutexUnlock, 4, 31, 31, kMutex)
      .Add(EventOp::kMutexLock, 2, 40, 40, kMutex)  // two waiters, one broadcast
      .Add(EventOp::kCondWait, 2, 41, 52, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 2, 53, 53, kMutex)
      .Add(EventOp::kMutexLock, 3, 42, 42, kMutex)
      .Add(EventOp::kCondWait, 3, 43, 54, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 3, 55, 55, kMutex)
      .Add(EventOp::kMutexLock, 1, 50, 50, kMutex)
      .Add(EventOp::kCondBroadcast, 1, 51, 51, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 1, 51, 51, kMutex);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts),
            (std::vector<Link>{{1, 11, 2, 13, false}, {1, 51, 2, 53, true}, {1, 51, 3, 55, true}}));
  EXPECT_EQ(counts.queue_items, 3u);
  EXPECT_EQ(counts.broadcasts_shared, 2u);
  EXPECT_EQ(counts.broadcasts_unheard, 1u);
  EXPECT_EQ(counts.takes_unexplained, 1u);  // thread 4's lookup
  EXPECT_EQ(counts.items_never_taken, 0u);
}

// A producer that signals after its unlock (`notify_one` outside the lock) still produced
// in that section; two items queued before a taker came are taken in order, and counted as
// taken while others waited (the FIFO assumption at work).
TEST(FindHandoffs, SignalAfterUnlockAndQueuedItems) {
  LogBuilder b;
  b.Add(EventOp::kMutexLock, 2, 1, 1, kMutex).Add(EventOp::kCondWait, 2, 2, 3, kCond, kMutex);
  b.Add(EventOp::kMutexUnlock, 2, 4, 4, kMutex);  // took nothing: nothing was queued
  for (TimeNs at : {10, 20}) {
    b.Add(EventOp::kMutexLock, 1, at, at, kMutex)
        .Add(EventOp::kMutexUnlock, 1, at + 1, at + 1, kMutex)
        .Add(EventOp::kCondSignal, 1, at + 2, at + 2, kCond, kMutex | 1);
  }
  b.Add(EventOp::kMutexLock, 2, 30, 30, kMutex).Add(EventOp::kMutexUnlock, 2, 31, 31, kMutex);
  b.Add(EventOp::kMutexLock, 2, 40, 40, kMutex).Add(EventOp::kMutexUnlock, 2, 41, 41, kMutex);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts),
            (std::vector<Link>{{1, 11, 2, 31, false}, {1, 21, 2, 41, false}}));
  EXPECT_EQ(counts.fifo_assumed, 1u);
  EXPECT_EQ(counts.takes_unexplained, 1u);
}

// Varnish's pool: each worker waits on its own condition variable under the pool's one
// mutex; a producer wakes the worker it chose. Each wake goes to that worker only.
TEST(FindHandoffs, TargetedWakesGoToTheirWorker) {
  LogBuilder b;
  b.Add(EventOp::kMutexLock, 2, 1, 1, kMutex)
      .Add(EventOp::kCondWait, 2, 2, 13, kCond, kMutex)
      .Add(EventOp::kMutexUnlock, 2, 14, 14, kMutex)
      .Add(EventOp::kMutexLock, 3, 3, 3, kMutex)
      .Add(EventOp::kCondWait, 3, 4, 23, kOtherCond, kMutex)
      .Add(EventOp::kMutexUnlock, 3, 24, 24, kMutex)
      .Produce(1, 20, kOtherCond)  // wakes worker 3 first
      .Produce(1, 10, kCond);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts),
            (std::vector<Link>{{1, 12, 2, 14, false}, {1, 22, 3, 24, false}}));
}

// One eventfd read that takes two writes links the first, marked ambiguous; a timerfd armed
// once and read links its arm; one re-armed before it expired serves several deadlines.
TEST(FindHandoffs, WakeDescriptors) {
  LogBuilder b;
  b.Add(EventOp::kWakeCreate, 1, 1, 1, 7)
      .Add(EventOp::kWakeWrite, 4, 10, 10, 7, 1)
      .Add(EventOp::kWakeWrite, 5, 11, 11, 7, 1)
      .Add(EventOp::kWakeRead, 1, 15, 15, 7, 2)
      .Add(EventOp::kWakeWrite, 4, 20, 20, 7, 1)
      .Add(EventOp::kWakeRead, 1, 25, 25, 7, 1);
  b.Add(EventOp::kWakeCreate, 1, 2, 2, 8, 1)
      .Add(EventOp::kTimerArm, 1, 30, 30, 8, 40)
      .Add(EventOp::kWakeRead, 1, 41, 41, 8, 1);
  b.Add(EventOp::kWakeCreate, 1, 3, 3, 9, 1)
      .Add(EventOp::kTimerArm, 1, 50, 50, 9, 80)
      .Add(EventOp::kTimerArm, 1, 55, 55, 9, 70)  // re-armed: a heap of timers behind it
      .Add(EventOp::kWakeRead, 1, 71, 71, 9, 1);
  b.Add(EventOp::kSemPost, 6, 90, 90, kSem).Add(EventOp::kSemWait, 7, 85, 91, kSem);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts), (std::vector<Link>{{1, 30, 1, 41, false},
                                                         {1, 55, 1, 71, true},
                                                         {4, 10, 1, 15, true},
                                                         {4, 20, 1, 25, false},
                                                         {6, 90, 7, 91, false}}));
  EXPECT_EQ(counts.wakes, 5u);
  EXPECT_EQ(counts.wakes_ambiguous, 2u);
}

// An eventfd in semaphore mode (EFD_SEMAPHORE) gives one unit per read: each read takes
// one write, and none is a guess.
TEST(FindHandoffs, SemaphoreModeEventfdTakesOneWritePerRead) {
  LogBuilder b;
  b.Add(EventOp::kWakeCreate, 1, 1, 1, 7)
      .Add(EventOp::kWakeWrite, 4, 10, 10, 7, 1)
      .Add(EventOp::kWakeWrite, 5, 11, 11, 7, 1)
      .Add(EventOp::kWakeRead, 2, 15, 15, 7, 1)
      .Add(EventOp::kWakeRead, 3, 16, 16, 7, 1);
  HandoffCounts counts;
  EXPECT_EQ(Links(b.Build(), counts),
            (std::vector<Link>{{4, 10, 2, 15, false}, {5, 11, 3, 16, false}}));
  EXPECT_EQ(counts.wakes_ambiguous, 0u);
}

}  // namespace
}  // namespace weft::reconcile
