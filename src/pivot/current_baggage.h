// The current baggage: the one a thread's running request carries (Pivot Tracing §5
// "Baggage": a thread-local, set when a request starts, cleared when it ends), and the
// helpers that carry it where the request goes next -- Pivot's AspectJ wrappers of Thread,
// Runnable, Callable and Queue, written out:
//
//   queue hand-off  producer: item.baggage = TakeCurrentBaggage();
//                   consumer: ScopedBaggage scope(std::move(item.baggage));
//   spawned thread  std::thread t(WithBranchOfCurrentBaggage(fn));   // fn runs on a branch
//                   or, to join the branch back when the thread ends:
//                     Baggage branch = CurrentBaggage().Split();
//                     std::thread t([&] { RunWithBaggage(branch, fn); });
//                     t.join();
//                     CurrentBaggage().Join(std::move(branch));
//   fork()          pid_t pid = ForkWithBaggage();   // the child continues a split
//   request start   CurrentBaggage().Clear();  or  Deserialize(bytes from the message)
//   a thread takes up a request whose baggage lives elsewhere (a job's member) and puts it
//   down again:     InstalledBaggage scope(job.baggage);   // in place: nothing moves
//
// Advice (the agent) packs and unpacks through CurrentBaggage().Contents().
#pragma once

#include <sys/types.h>

#include <utility>

#include "pivot/baggage.h"

namespace weft::pivot {

namespace internal {
// The baggage an InstalledBaggage put in place on this thread; null: the thread's own.
// constinit: read without a thread-local initialization guard.
extern thread_local constinit Baggage* installed_baggage;
Baggage& ThreadOwnBaggage();
}  // namespace internal

// This thread's current baggage: empty until a request installs one. The one an
// InstalledBaggage scope installed, else the thread's own.
inline Baggage& CurrentBaggage() {
  Baggage* installed = internal::installed_baggage;
  return installed != nullptr ? *installed : internal::ThreadOwnBaggage();
}

// Makes `*baggage` this thread's current baggage in place (null: the thread's own) and
// returns what it replaces, to be put back the same way. InstalledBaggage does both.
inline Baggage* ExchangeCurrentBaggage(Baggage* baggage) {
  return std::exchange(internal::installed_baggage, baggage);
}

// While alive, `baggage` itself is this thread's current baggage: what the thread packs,
// splits, joins or assigns goes to it in place, with no move and no swap (a thread takes up
// a request several times, and puts it down). The previous current baggage comes back when
// the scope ends. `baggage` must outlive the scope and not be moved meanwhile; scopes nest.
class InstalledBaggage {
 public:
  explicit InstalledBaggage(Baggage& baggage) : previous_(ExchangeCurrentBaggage(&baggage)) {}
  ~InstalledBaggage() { ExchangeCurrentBaggage(previous_); }
  InstalledBaggage(const InstalledBaggage&) = delete;
  InstalledBaggage& operator=(const InstalledBaggage&) = delete;

 private:
  Baggage* previous_;
};

// Moves the current baggage out, leaving the thread an empty one: the request leaves
// this thread (a queue hand-off, a message sent without a reply to wait for).
Baggage TakeCurrentBaggage();

// Makes `baggage` this thread's current one (the previous one is dropped).
void SetCurrentBaggage(Baggage baggage);

// Installs a baggage for a scope and puts the previous one back when the scope ends;
// what the scope left in the current baggage is then in baggage().
class ScopedBaggage {
 public:
  explicit ScopedBaggage(Baggage baggage);
  ~ScopedBaggage();
  ScopedBaggage(const ScopedBaggage&) = delete;
  ScopedBaggage& operator=(const ScopedBaggage&) = delete;

  // After the scope ends: what the scope's request carried when it ended. Before: the
  // baggage of the thread outside the scope.
  Baggage& baggage() { return saved_; }

 private:
  Baggage saved_;
};

// Runs fn() with `baggage` as the current baggage; `baggage` holds what fn left in it.
template <typename Fn>
decltype(auto) RunWithBaggage(Baggage& baggage, Fn&& fn) {
  struct Restore {
    Baggage& b;
    Baggage outer;
    ~Restore() {
      b = std::move(CurrentBaggage());
      CurrentBaggage() = std::move(outer);
    }
  } restore{baggage, std::move(CurrentBaggage())};
  CurrentBaggage() = std::move(baggage);
  return std::forward<Fn>(fn)();
}

// Splits the current baggage now and returns a callable that runs fn on that branch, in
// whichever thread calls it (once). The branch ends with the callable: nothing joins it
// back (use RunWithBaggage to keep it).
template <typename Fn>
auto WithBranchOfCurrentBaggage(Fn fn) {
  return [fn = std::move(fn), branch = CurrentBaggage().Split()]() mutable {
    return RunWithBaggage(branch, fn);
  };
}

// fork() after splitting the current baggage: the child's current baggage is the branch,
// the parent keeps its side (the child's half comes back, if ever, through Deserialize and
// Join). Returns what fork() returns; on failure the branch is joined back.
pid_t ForkWithBaggage();

}  // namespace weft::pivot
