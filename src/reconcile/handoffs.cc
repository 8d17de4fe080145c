// Pairs producers with consumers per synchronisation object; handoffs.h gives the rules.
#include "reconcile/handoffs.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <deque>
#include <tuple>
#include <utility>

namespace weft::reconcile {
namespace {

using capture::Event;
using capture::EventOp;

bool Contains(const std::vector<uint64_t>& v, uint64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One critical section on a queue's mutex.
struct Section {
  int32_t tid = 0;
  TimeNs released = 0;               // an unlock's or a wait's entry
  uint64_t wait_on = 0;              // the condition variable it ends waiting on; 0: an unlock
  std::vector<uint64_t> signals;     // condition variables its thread signalled in or after it
  std::vector<uint64_t> broadcasts;  // of them, those it broadcast

  bool ends_in_wait() const { return wait_on != 0; }
};

// The queues of one log: per mutex its sections in time order, per condition variable its
// mutex and the threads that wait on it.
class Queues {
 public:
  explicit Queues(const capture::EventLog& log) {
    // A wait names its condition variable's mutex; so does a signal (the mutex its thread
    // held, or had just released), which matters for a pool that never waited.
    for (const Event& e : log.events) {
      if (e.op != EventOp::kCondWait) continue;
      mutex_of_.try_emplace(e.object, e.second);
      waiters_[e.object].insert(e.tid);
    }
    for (const Event& e : log.events) {
      if ((e.op == EventOp::kCondSignal || e.op == EventOp::kCondBroadcast) && e.second > 1)
        mutex_of_.try_emplace(e.object, e.second & ~uint64_t(1));
    }
    for (const auto& [cond, mutex] : mutex_of_) sections_.try_emplace(mutex);
    // Threads that signal or wait on some condition variable of a mutex play a part in its
    // queues; the others that hold it are takers (a worker that never had to wait).
    for (const Event& e : log.events) {
      const bool wait = e.op == EventOp::kCondWait;
      if (!wait && e.op != EventOp::kCondSignal && e.op != EventOp::kCondBroadcast) continue;
      auto mutex = mutex_of_.find(e.object);
      if (mutex != mutex_of_.end()) signalling_or_waiting_[mutex->second].insert(e.tid);
    }
    if (!mutex_of_.empty()) CollectSections(log);
  }

  // Pairs the k-th item produced through each condition variable with the k-th taken.
  void Pair(std::vector<Handoff>& out, HandoffCounts& counts) const {
    static const absl::flat_hash_set<int32_t> kNone;
    for (const auto& [cond, mutex] : mutex_of_) {
      auto w = waiters_.find(cond);
      const absl::flat_hash_set<int32_t>& waiters = w == waiters_.end() ? kNone : w->second;
      auto p = signalling_or_waiting_.find(mutex);
      const absl::flat_hash_set<int32_t>& parts =
          p == signalling_or_waiting_.end() ? kNone : p->second;
      std::deque<const Section*> queued;
      // Threads waiting on `cond` now, and those a broadcast woke, by whom and whether it
      // woke others too, until they take.
      absl::flat_hash_set<int32_t> waiting;
      absl::flat_hash_map<int32_t, std::pair<const Section*, bool>> woken;
      for (const Section& s : sections_.at(mutex)) {
        // A taker waits on this condition variable, or holds the mutex and neither signals
        // nor waits on any of its condition variables (a worker that never had to wait).
        const bool waiter = waiters.contains(s.tid) || !parts.contains(s.tid);
        if (s.wait_on == cond) {
          woken.erase(s.tid);  // woken and back to waiting without taking
          waiting.insert(s.tid);
        }
        if (!waiter && Contains(s.broadcasts, cond)) {
          // A broadcast hands over to the threads waiting then, not to later takers: a
          // change of state (Varnish's fetch progress) is no item in a queue.
          for (int32_t t : waiting) woken[t] = {&s, waiting.size() > 1};
          counts.broadcasts_unheard += waiting.empty();
          waiting.clear();
        } else if (!waiter && Contains(s.signals, cond)) {
          queued.push_back(&s);
        } else if (waiter && !s.ends_in_wait()) {
          waiting.erase(s.tid);
          if (auto it = woken.find(s.tid); it != woken.end()) {
            const auto [from, shared] = it->second;
            out.push_back({from->tid, from->released, s.tid, s.released, shared});
            ++counts.queue_items;
            counts.broadcasts_shared += shared;
            woken.erase(it);
            continue;
          }
          if (queued.empty()) {
            ++counts.takes_unexplained;
            continue;
          }
          counts.fifo_assumed += queued.size() > 1;
          const Section* from = queued.front();
          queued.pop_front();
          out.push_back({from->tid, from->released, s.tid, s.released, false});
          ++counts.queue_items;
        }
      }
      counts.items_never_taken += queued.size();
    }
  }

 private:
  // A section is known by its end (an unlock, or a wait's entry); capture logs no locks.
  // A signal sent while its thread held the mutex belongs to the section that ends at the
  // thread's next release of it; one sent just after (the signal names the mutex plus 1)
  // to the section that ended at its last.
  void CollectSections(const capture::EventLog& log) {
    struct ThreadState {
      Section pending;    // the signals of the section still open
      int64_t last = -1;  // its last section, an index into sections_[mutex]
    };
    absl::flat_hash_map<std::pair<int32_t, uint64_t>, ThreadState> threads;
    auto release = [&](int32_t tid, uint64_t mutex, TimeNs at, uint64_t wait_on) {
      std::vector<Section>& list = sections_[mutex];
      ThreadState& t = threads[{tid, mutex}];
      Section& s = list.emplace_back(std::move(t.pending));
      s.tid = tid;
      s.released = at;
      s.wait_on = wait_on;
      t.pending = Section{};
      t.last = int64_t(list.size()) - 1;
    };
    for (const Event& e : log.events) {
      switch (e.op) {
        case EventOp::kMutexUnlock:
          if (sections_.contains(e.object)) release(e.tid, e.object, e.entry_ns, 0);
          break;
        case EventOp::kCondWait:
          release(e.tid, e.second, e.entry_ns, e.object);
          break;
        case EventOp::kCondSignal:
        case EventOp::kCondBroadcast: {
          auto mutex = mutex_of_.find(e.object);
          if (mutex == mutex_of_.end()) break;
          const bool after = e.second == (mutex->second | 1);
          ThreadState& t = threads[{e.tid, mutex->second}];
          Section* section = &t.pending;
          if (after) {
            if (t.last < 0) break;
            section = &sections_[mutex->second][size_t(t.last)];
          }
          if (!Contains(section->signals, e.object)) section->signals.push_back(e.object);
          if (e.op == EventOp::kCondBroadcast && !Contains(section->broadcasts, e.object))
            section->broadcasts.push_back(e.object);
          break;
        }
        default:
          break;
      }
    }
    // Log order is entry order; sections on one mutex never overlap, so the order of their
    // ends is the order the mutex was held in.
    for (auto& [mutex, list] : sections_) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Section& a, const Section& b) { return a.released < b.released; });
    }
  }

  absl::flat_hash_map<uint64_t, uint64_t> mutex_of_;  // condition variable -> its mutex
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<int32_t>> waiters_;
  // Per queue mutex: the threads that signal or wait on one of its condition variables.
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<int32_t>> signalling_or_waiting_;
  absl::flat_hash_map<uint64_t, std::vector<Section>> sections_;  // per queue mutex
};

// The k-th post of a semaphore is taken by the k-th wait to return after it.
void PairSemaphores(const capture::EventLog& log, std::vector<Handoff>& out,
                    HandoffCounts& counts) {
  absl::flat_hash_map<uint64_t, std::deque<const Event*>> posted;
  std::vector<const Event*> ordered;
  for (const Event& e : log.events) {
    if (e.op == EventOp::kSemPost || e.op == EventOp::kSemWait) ordered.push_back(&e);
  }
  // A post counts when it returned, a wait when it returned: by exit time.
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Event* a, const Event* b) { return a->exit_ns < b->exit_ns; });
  for (const Event* e : ordered) {
    std::deque<const Event*>& queue = posted[e->object];
    if (e->op == EventOp::kSemPost) {
      queue.push_back(e);
    } else if (!queue.empty()) {
      out.push_back({queue.front()->tid, queue.front()->entry_ns, e->tid, e->exit_ns, false});
      queue.pop_front();
      ++counts.wakes;
    }
  }
}

// An eventfd write is taken by the next read; a timerfd's last arm by the read of its
// expiry. A descriptor's creation starts it afresh (numbers are reused).
void PairWakeDescriptors(const capture::EventLog& log, std::vector<Handoff>& out,
                         HandoffCounts& counts) {
  struct Pending {
    std::deque<const Event*> writes;  // eventfd writes not read yet
    const Event* armed = nullptr;     // the timerfd's last arm
    // Re-armed before it expired: one timer for several deadlines (a loop's heap of timers
    // behind one timerfd), so the last arm need not be the work its expiry resumes.
    bool shared = false;
  };
  absl::flat_hash_map<uint64_t, Pending> pending;
  std::vector<const Event*> ordered;
  for (const Event& e : log.events) {
    if (e.op == EventOp::kWakeCreate || e.op == EventOp::kWakeWrite || e.op == EventOp::kWakeRead ||
        e.op == EventOp::kTimerArm) {
      ordered.push_back(&e);
    }
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Event* a, const Event* b) { return a->exit_ns < b->exit_ns; });
  for (const Event* e : ordered) {
    Pending& p = pending[e->object];
    switch (e->op) {
      case EventOp::kWakeCreate:
        p = Pending{};
        break;
      case EventOp::kWakeWrite:
        p.writes.push_back(e);
        break;
      case EventOp::kTimerArm:
        p.shared = p.shared || p.armed != nullptr;
        p.armed = e->second != 0 ? e : nullptr;
        break;
      case EventOp::kWakeRead:
        if (!p.writes.empty()) {
          // A read takes the counter's value: every pending write, or one unit of a
          // semaphore-mode eventfd.
          const Event* first = p.writes.front();
          uint64_t taken = 0;
          size_t writes = 0;
          while (!p.writes.empty() && (writes == 0 || taken < e->second)) {
            taken += p.writes.front()->second;
            p.writes.pop_front();
            ++writes;
          }
          out.push_back({first->tid, first->entry_ns, e->tid, e->exit_ns, writes > 1});
          ++counts.wakes;
          counts.wakes_ambiguous += writes > 1;
        } else if (p.armed != nullptr && TimeNs(p.armed->second) <= e->exit_ns) {
          out.push_back({p.armed->tid, p.armed->entry_ns, e->tid, e->exit_ns, p.shared});
          ++counts.wakes;
          counts.wakes_ambiguous += p.shared;
          p.armed = nullptr;  // a periodic timer's later expiries belong to no request
        }
        break;
      default:
        break;
    }
  }
}

}  // namespace

std::vector<Handoff> FindHandoffs(const capture::EventLog& log, HandoffCounts& counts) {
  std::vector<Handoff> out;
  Queues(log).Pair(out, counts);
  PairSemaphores(log, out, counts);
  PairWakeDescriptors(log, out, counts);
  // One order whatever the hash maps' (reconcile's output is the same for the same logs).
  std::sort(out.begin(), out.end(), [](const Handoff& a, const Handoff& b) {
    return std::tie(a.from_time, a.from_tid, a.to_time, a.to_tid) <
           std::tie(b.from_time, b.from_tid, b.to_time, b.to_tid);
  });
  return out;
}

}  // namespace weft::reconcile
