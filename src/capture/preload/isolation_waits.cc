// Event isolation at the waits (BorderPatrol EuroSys'08 §3.2: "By returning only one
// event at a time to the black-box module, BorderPatrol can attribute the following
// fragment of work to the request associated with the event"; §5.2 for held bytes). See
// isolation.h for the rules; this file is poll/ppoll, select/pselect, epoll_wait/
// epoll_pwait and the epoll_ctl bookkeeping they need.
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "capture/preload/isolation.h"
#include "capture/preload/log_file.h"
#include "capture/preload/protocol_streams.h"
#include "capture/preload/real.h"

namespace weft_preload {

namespace {

uint64_t g_split_waits = 0;  // waits that reported one input and kept the rest for later

// --- one input per wait: which one --------------------------------------------------------
//
// An input is a readable descriptor on the input direction of a stream with a running
// protocol processor (FdIsInput). Everything else a wait reports passes through: listening
// sockets (an accept reads no message, so the work it starts belongs to no request yet,
// and holding it back would only slow connection setup), pipes, eventfds, timers, streams
// without a processor, and every writable or error condition of a descriptor that is not
// also a readable input. Those are not what fragment attributes work to.
//
// Of several inputs the one waiting longest is reported (FIFO, so none starves): an input
// passed over is stamped with the turn it was first passed over at, and the oldest stamp
// wins; fresh ones (no stamp) come after stamped ones, in the order the call gave them.
// Descriptors above kWaitFds are never inputs here (they pass through).
constexpr int kWaitFds = 1 << 16;
uint32_t g_pending_since[kWaitFds];  // turn an input was first passed over at; 0: not pending
uint32_t g_turn = 1;                 // advanced by each wait that splits its inputs

bool IsInput(int fd) { return fd >= 0 && fd < kWaitFds && FdIsInput(fd); }

uint32_t AgeOf(int fd, uint32_t now) {
  uint32_t since = __atomic_load_n(&g_pending_since[fd], __ATOMIC_RELAXED);
  return since == 0 ? 0 : now - since + 1;
}

void PassOver(int fd, uint32_t turn) {
  uint32_t expected = 0;
  __atomic_compare_exchange_n(&g_pending_since[fd], &expected, turn, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
}

void Reported(int fd) { __atomic_store_n(&g_pending_since[fd], 0, __ATOMIC_RELAXED); }

// A wait that reported one input and held others back, counted (the end record's
// split_waits: each such wait means one more wait than the program would have made
// untraced).
void CountSplit() { __atomic_fetch_add(&g_split_waits, 1, __ATOMIC_RELAXED); }

// A new turn for a wait that splits its inputs; counted.
uint32_t SplitTurn() {
  CountSplit();
  return __atomic_fetch_add(&g_turn, 1, __ATOMIC_RELAXED);
}

// poll and select are level-triggered: a readable descriptor not reported now is reported
// again by the next call that asks about it, at once, as long as it stays readable (and
// held bytes are marked again while held). So nothing is remembered for them, and the
// next wait is not made to return early: a descriptor the program drained meanwhile is
// simply not ready any more.
constexpr short kPollIn = POLLIN | POLLRDNORM;
constexpr short kPollWrite = POLLOUT | POLLWRNORM | POLLWRBAND;

int OneInputOfPoll(struct pollfd* fds, nfds_t n, int r) {
  uint32_t now = __atomic_load_n(&g_turn, __ATOMIC_RELAXED);
  nfds_t chosen = n;
  uint32_t best = 0;
  int inputs = 0;
  for (nfds_t i = 0; i < n; ++i) {
    if ((fds[i].revents & kPollIn) == 0 || !IsInput(fds[i].fd)) continue;
    ++inputs;
    uint32_t age = AgeOf(fds[i].fd, now);
    if (chosen == n || age > best) {
      chosen = i;
      best = age;
    }
  }
  if (inputs < 2) return r;
  uint32_t turn = SplitTurn();
  for (nfds_t i = 0; i < n; ++i) {
    if (i == chosen || (fds[i].revents & kPollIn) == 0 || !IsInput(fds[i].fd)) continue;
    PassOver(fds[i].fd, turn);
    // Its hang-up or error goes with its input: a loop that reads on POLLHUP would read it.
    fds[i].revents = short(fds[i].revents & kPollWrite);
    if (fds[i].revents == 0) --r;
  }
  Reported(fds[chosen].fd);
  return r;
}

int OneInputOfSelect(int n, fd_set* readable, int r) {
  if (n > FD_SETSIZE) n = FD_SETSIZE;
  uint32_t now = __atomic_load_n(&g_turn, __ATOMIC_RELAXED);
  int chosen = -1, inputs = 0;
  uint32_t best = 0;
  for (int fd = 0; fd < n; ++fd) {
    if (!FD_ISSET(fd, readable) || !IsInput(fd)) continue;
    ++inputs;
    uint32_t age = AgeOf(fd, now);
    if (chosen < 0 || age > best) {
      chosen = fd;
      best = age;
    }
  }
  if (inputs < 2) return r;
  uint32_t turn = SplitTurn();
  for (int fd = 0; fd < n; ++fd) {
    if (fd == chosen || !FD_ISSET(fd, readable) || !IsInput(fd)) continue;
    PassOver(fd, turn);
    FD_CLR(fd, readable);
    --r;  // select counts set bits, one per set
  }
  Reported(chosen);
  return r;
}

// --- epoll registrations -----------------------------------------------------------------

// What each descriptor below kWaitFds is registered for: its epoll set, events and data,
// and a generation that every change (epoll_ctl, close) advances, so that an event kept
// for later can tell it still belongs to the registration it came from. Written by
// epoll_ctl (the program's own order), read by the waits. A descriptor added to a second
// set is known in the later one, and the earlier registration is put by (g_displaced) and
// comes back when the later ends (its EPOLL_CTL_DEL, or the set's close): PostgreSQL adds
// a client's socket to a temporary set while its TLS handshake waits (WaitLatchOrSocket),
// and the waits of its long-lived set must go on seeing the bytes isolation holds for it.
struct Registration {
  uint64_t set_events;  // epoll fd + 1 in the high half (0: none), events in the low half
  uint64_t data;
  uint32_t generation;
};
Registration g_registrations[kWaitFds];
struct Displaced {
  uint64_t set_events;  // as Registration's; 0: none
  uint64_t data;
};
Displaced g_displaced[kWaitFds];   // written only with the registration, by epoll_ctl and close
uint8_t g_is_epoll_set[kWaitFds];  // this number has been an epoll set's
int g_registered_top = -1;         // highest descriptor ever registered

// epoll reports the program's epoll_data, not the descriptor: a direct-mapped guess from
// (set, data) to the descriptor last registered with them, checked against the table; a
// wrong guess (two registrations in one slot) falls back to a scan.
constexpr int kHintBits = 16;
int32_t g_hint[1 << kHintBits];  // descriptor + 1; 0: none

uint32_t HintSlot(int epfd, uint64_t data) {
  return uint32_t(((data ^ (uint64_t(epfd) << 48)) * 0x9e3779b97f4a7c15ull) >> (64 - kHintBits));
}

bool RegisteredAs(int fd, int epfd, uint64_t data) {
  uint64_t v = __atomic_load_n(&g_registrations[fd].set_events, __ATOMIC_ACQUIRE);
  return (v >> 32) == uint64_t(epfd) + 1 &&
         __atomic_load_n(&g_registrations[fd].data, __ATOMIC_RELAXED) == data;
}

// The descriptor registered in `epfd` with `data`, or -1.
int FdOfEvent(int epfd, uint64_t data) {
  int hint = __atomic_load_n(&g_hint[HintSlot(epfd, data)], __ATOMIC_RELAXED) - 1;
  if (hint >= 0 && RegisteredAs(hint, epfd, data)) return hint;
  int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
  for (int fd = 0; fd <= top; ++fd) {
    if (RegisteredAs(fd, epfd, data)) return fd;
  }
  return -1;
}

// --- events kept for later (edge-triggered and one-shot registrations) --------------------
//
// The kernel reports an edge-triggered registration once per change of state and a
// one-shot one once until it is re-armed: an input held back from such a wait would never
// be reported again. So it is kept here, with the bits not yet reported, and the next wait
// on the set reports it (calling the kernel with a zero timeout and merging, so that it
// never waits for what it already has). A kept event is dropped when its registration
// changes (EPOLL_CTL_MOD re-arms and re-polls: the kernel reports it again if it is still
// ready; EPOLL_CTL_DEL and close end it), checked by generation under the lock, so one is
// never reported for a closed descriptor or for a later registration of its number.
// A full table keeps nothing: the event is reported now, never lost.
struct Kept {
  int32_t epfd;
  int32_t fd;
  uint32_t events;      // the bits not yet reported
  uint32_t generation;  // of fd's registration when it was held back
  uint64_t data;
};
constexpr int kMaxKept = 4096;
Kept g_kept[kMaxKept];
int g_kept_count = 0;  // read without the lock: 0 means nothing to look at
// The holder (the address of a thread-local of its thread); never held across a system
// call. Not the tid: gettid is a system call, and isolated waits take this lock several
// times a request (4 gettid calls per request in nginx over TLS, under strace -c).
uintptr_t g_kept_lock = 0;
__thread char t_kept_token __attribute__((tls_model("initial-exec")));

bool LockKept() {
  uintptr_t self = reinterpret_cast<uintptr_t>(&t_kept_token);
  for (int spins = 0;; ++spins) {
    uintptr_t expected = 0;
    if (__atomic_compare_exchange_n(&g_kept_lock, &expected, self, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      return true;
    }
    if (expected == self) return false;  // a signal handler on the holder's thread
    if (spins > 50) sched_yield();
  }
}
void UnlockKept() { __atomic_store_n(&g_kept_lock, 0, __ATOMIC_RELEASE); }

bool StillRegistered(const Kept& k) {
  return RegisteredAs(k.fd, k.epfd, k.data) &&
         __atomic_load_n(&g_registrations[k.fd].generation, __ATOMIC_ACQUIRE) == k.generation;
}

enum class Keep { kKept, kStale, kFull };
// Keeps `k` (k.events of k.fd's registration in k.epfd, as of k.generation) for a later
// wait, merged with any kept already (`merge`: else known to be none); with the lock held.
// kStale: the registration changed since: nothing to keep.
Keep KeepLocked(const Kept& k, bool merge) {
  if (!StillRegistered(k)) return Keep::kStale;
  int i = merge ? 0 : g_kept_count;
  while (i < g_kept_count && (g_kept[i].epfd != k.epfd || g_kept[i].fd != k.fd)) ++i;
  if (i < g_kept_count) {
    g_kept[i].events |= k.events;
    g_kept[i].generation = k.generation;
  } else if (g_kept_count < kMaxKept) {
    g_kept[g_kept_count] = k;
    __atomic_store_n(&g_kept_count, g_kept_count + 1, __ATOMIC_RELEASE);
  } else {
    return Keep::kFull;
  }
  return Keep::kKept;
}

// The first event kept for `epfd` that still belongs to its registration (the one kept
// longest: events are kept in the order they were passed over), copied to *out; the stale
// ones before it are dropped. It stays kept until the wait reports it (TakeKept): a wait
// reports one input, and taking them all only to keep them again cost a busy proxy a pass
// over every event it had kept, in every wait.
bool FirstKept(int epfd, Kept* out) {
  if (__atomic_load_n(&g_kept_count, __ATOMIC_ACQUIRE) == 0 || !LockKept()) return false;
  int left = 0, i = 0;
  bool found = false;
  for (; i < g_kept_count && !found; ++i) {
    if (g_kept[i].epfd == epfd && StillRegistered(g_kept[i])) {
      *out = g_kept[i];
      found = true;
    }
    if (g_kept[i].epfd != epfd || found) g_kept[left++] = g_kept[i];
  }
  if (left < i) {
    memmove(&g_kept[left], &g_kept[i], sizeof(Kept) * size_t(g_kept_count - i));
    __atomic_store_n(&g_kept_count, left + g_kept_count - i, __ATOMIC_RELEASE);
  }
  UnlockKept();
  return found;
}

// The wait reports `k`, found by FirstKept: it is kept no more. True if events are still
// kept for its set (the wait held them back).
bool TakeKept(const Kept& k) {
  if (!LockKept()) return false;
  int i = 0;
  bool others = false;
  while (i < g_kept_count && (g_kept[i].epfd != k.epfd || g_kept[i].fd != k.fd)) {
    others = others || g_kept[i].epfd == k.epfd;
    ++i;
  }
  if (i < g_kept_count) {
    memmove(&g_kept[i], &g_kept[i + 1], sizeof(Kept) * size_t(g_kept_count - i - 1));
    __atomic_store_n(&g_kept_count, g_kept_count - 1, __ATOMIC_RELEASE);
  }
  for (; i < g_kept_count && !others; ++i) others = g_kept[i].epfd == k.epfd;
  UnlockKept();
  return others;
}

// Drops what is kept for descriptor `fd` in `epfd` (-1: in any set), and, when `fd` is
// an epoll set, everything kept for its members.
void DropKept(int epfd, int fd) {
  if (__atomic_load_n(&g_kept_count, __ATOMIC_ACQUIRE) == 0 || !LockKept()) return;
  int left = 0;
  for (int i = 0; i < g_kept_count; ++i) {
    const Kept& k = g_kept[i];
    if ((k.fd == fd && (epfd < 0 || k.epfd == epfd)) || (epfd < 0 && k.epfd == fd)) continue;
    g_kept[left++] = k;
  }
  __atomic_store_n(&g_kept_count, left, __ATOMIC_RELEASE);
  UnlockKept();
}

// True if events are kept for epoll set `epfd`. A program may wait on the set itself
// with poll or select (and then call epoll_wait with no timeout): the kernel does not
// know it has something to report, so these waits mark it readable, as held bytes.
bool SetHasKept(int epfd) {
  if (__atomic_load_n(&g_kept_count, __ATOMIC_ACQUIRE) == 0 || epfd < 0 || epfd >= kWaitFds ||
      __atomic_load_n(&g_is_epoll_set[epfd], __ATOMIC_RELAXED) == 0 || !LockKept()) {
    return false;
  }
  bool found = false;
  for (int i = 0; i < g_kept_count && !found; ++i) found = g_kept[i].epfd == epfd;
  UnlockKept();
  return found;
}

// Up to `room` descriptors registered in `epfd` for reading whose streams hold bytes.
// Only the descriptors marked in g_held_fds are asked (a busy server has many registered
// and few holding), unless a stream was ever shared (protocol_streams.h).
int HeldInSet(int epfd, int* held, int room) {
  if (__atomic_load_n(&g_held_streams, __ATOMIC_RELAXED) == 0) return 0;
  int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
  if (top >= kHeldFdBits) top = kHeldFdBits - 1;
  auto registered_here = [epfd](int fd) {
    uint64_t v = __atomic_load_n(&g_registrations[fd].set_events, __ATOMIC_ACQUIRE);
    return (v >> 32) == uint64_t(epfd) + 1 && (uint32_t(v) & EPOLLIN) != 0;
  };
  int count = 0;
  if (__atomic_load_n(&g_streams_shared, __ATOMIC_SEQ_CST)) {
    for (int fd = 0; fd <= top && count < room; ++fd) {
      if (registered_here(fd) && FdHasHeld(fd)) held[count++] = fd;
    }
    return count;
  }
  for (int word = 0; word <= top >> 6 && count < room; ++word) {
    uint64_t bits = __atomic_load_n(&g_held_fds[word], __ATOMIC_SEQ_CST);
    for (; bits != 0 && count < room; bits &= bits - 1) {
      int fd = word * 64 + __builtin_ctzll(bits);
      if (fd > top) break;
      if (!FdHasHeld(fd)) {
        // Stale: unmarked, then asked again, so that bytes held (and marked) meanwhile
        // are not missed (StartHolding marks after storing them).
        uint64_t bit = uint64_t(1) << (fd & 63);
        __atomic_fetch_and(&g_held_fds[word], ~bit, __ATOMIC_SEQ_CST);
        if (!FdHasHeld(fd)) continue;
        __atomic_fetch_or(&g_held_fds[word], bit, __ATOMIC_SEQ_CST);
      }
      if (registered_here(fd)) held[count++] = fd;
    }
  }
  return count;
}

// Readable whatever the kernel says: held bytes (§5.2), or an epoll set with kept events.
bool HeldOrKept(int fd) { return FdHasHeld(fd) || SetHasKept(fd); }
bool AnyHeldOrKept() {
  return __atomic_load_n(&g_held_streams, __ATOMIC_RELAXED) != 0 ||
         __atomic_load_n(&g_kept_count, __ATOMIC_RELAXED) != 0;
}

constexpr uint32_t kEpollWrite = EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;

// Of the `r` events, reports one input and holds the other inputs' read side back (their
// writable bits are reported now). Level-triggered registrations need nothing kept (the
// kernel reports them again, as for poll); edge-triggered and one-shot ones are kept.
// Returns the new count (an event left with no bits is removed). The descriptors of
// events[known_from...] are known already (held or kept ones the wait added): known_fd.
// events[first_kept] (if >= 0) is the event kept longest (FirstKept), which stays kept:
// `split` tells whether inputs were held back, and whether that one was.
struct Split {
  bool any;
  bool first_kept;
};
int OneInputOfEpoll(int epfd, struct epoll_event* events, int r, const int* known_fd = nullptr,
                    int known_from = 0, int first_kept = -1, Split* split = nullptr) {
  // A set inside another set (epoll_ctl of one epoll descriptor into another): the outer
  // wait would not know the inner one has kept events. Not split.
  if (__atomic_load_n(&g_registrations[epfd].set_events, __ATOMIC_RELAXED) != 0) return r;
  int readable = 0;
  for (int i = 0; i < r && readable < 2; ++i) readable += (events[i].events & EPOLLIN) != 0;
  if (readable < 2) return r;  // the common case: no lookup at all
  // Each event's input descriptor (-1: not an input), looked up once for both passes; past
  // kLookedUp events (a wait may return hundreds), looked up again in the second.
  constexpr int kLookedUp = 256;
  int input_fd[kLookedUp];
  auto input_of = [&](int i) {
    if ((events[i].events & EPOLLIN) == 0) return -1;
    int fd = known_fd != nullptr && i >= known_from ? known_fd[i - known_from]
                                                    : FdOfEvent(epfd, events[i].data.u64);
    return IsInput(fd) ? fd : -1;
  };
  uint32_t now = __atomic_load_n(&g_turn, __ATOMIC_RELAXED);
  int chosen = -1, chosen_fd = -1, inputs = 0;
  uint32_t best = 0;
  for (int i = 0; i < r; ++i) {
    int fd = input_of(i);
    if (i < kLookedUp) input_fd[i] = fd;
    if (fd < 0) continue;
    ++inputs;
    uint32_t age = AgeOf(fd, now);
    if (chosen < 0 || age > best) {
      chosen = i;
      chosen_fd = fd;
      best = age;
    }
  }
  if (inputs < 2) return r;
  uint32_t turn = SplitTurn();
  if (split != nullptr) split->any = true;
  // The edge-triggered and one-shot inputs passed over are kept under one hold of the lock
  // (a busy server passes over several inputs in every wait). When nothing is kept for this
  // set, there is nothing to merge with: then none is looked for. (Two events of one
  // descriptor, which only a program that registers two with the same epoll_data could
  // get, would then be kept twice: a later keep merges them.)
  bool locked = LockKept();
  bool merge = false;
  for (int i = 0; locked && i < g_kept_count && !merge; ++i) merge = g_kept[i].epfd == epfd;
  int out = 0;
  for (int i = 0; i < r; ++i) {
    struct epoll_event e = events[i];
    int fd = i == chosen ? -1 : i < kLookedUp ? input_fd[i] : input_of(i);
    if (fd >= 0) {
      Registration& reg = g_registrations[fd];
      uint32_t generation = __atomic_load_n(&reg.generation, __ATOMIC_ACQUIRE);
      uint32_t registered = uint32_t(__atomic_load_n(&reg.set_events, __ATOMIC_ACQUIRE));
      uint32_t later = e.events & ~kEpollWrite;
      bool keep = true;
      // An event the wait added holds nothing new to keep: the kept event is kept still,
      // and held bytes make every wait add one while they are held (the read that takes
      // the last of them refills them from the kernel: RefillHeld).
      const bool added = known_fd != nullptr && i >= known_from;
      if ((registered & (EPOLLET | EPOLLONESHOT)) != 0 && !added) {
        // Stale: its registration changed, the kernel re-polls it. Full (or no lock, in a
        // signal handler that interrupted its holder): reported now.
        keep =
            locked && KeepLocked({epfd, fd, later, generation, e.data.u64}, merge) != Keep::kFull;
      }
      if (keep) {
        PassOver(fd, turn);
        if (i == first_kept && split != nullptr) split->first_kept = true;
        e.events &= kEpollWrite;
        if (e.events == 0) continue;
      }
    }
    events[out++] = e;
  }
  if (locked) UnlockKept();
  Reported(chosen_fd);
  return out;
}

// EPOLLONESHOT: the kernel reports a registration once, until the program re-arms it
// with EPOLL_CTL_MOD; so do the held-bytes scan and the inputs kept for later (a one-shot
// program hands the descriptor to one thread, and a second report would give it to two).
// The registration's EPOLLIN is taken out of the table for each one-shot event reported
// (its other bits stay: the mode is still one-shot). Only looked at once some
// registration was one-shot.
bool g_any_one_shot = false;

int Reporting(int epfd, const struct epoll_event* events, int r) {
  if (!__atomic_load_n(&g_any_one_shot, __ATOMIC_RELAXED)) return r;
  for (int i = 0; i < r; ++i) {
    int fd = FdOfEvent(epfd, events[i].data.u64);
    if (fd < 0) continue;
    uint64_t v = __atomic_load_n(&g_registrations[fd].set_events, __ATOMIC_RELAXED);
    if ((uint32_t(v) & EPOLLONESHOT) != 0) {
      __atomic_store_n(&g_registrations[fd].set_events, v & ~uint64_t(EPOLLIN), __ATOMIC_RELAXED);
    }
  }
  return r;
}

}  // namespace

uint64_t SplitWaits() { return __atomic_load_n(&g_split_waits, __ATOMIC_RELAXED); }

void ResetWaitsAfterFork() {
  // Another thread may have held the lock at the fork. What is kept stays: the child shares
  // the epoll sets, and may be the one that goes on waiting on them (a daemon's parent
  // exits); an event reported in both processes is a spurious wake-up in one, never a loss.
  g_kept_lock = 0;
  g_split_waits = 0;
}

// --- the waits -----------------------------------------------------------------------------

int IsolatedPoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout, const sigset_t* mask,
                 bool ppoll_call, int poll_timeout) {
  NewTurn();
  bool any = false;
  if (AnyHeldOrKept()) {
    for (nfds_t i = 0; i < n && !any; ++i) {
      any = (fds[i].events & POLLIN) != 0 && HeldOrKept(fds[i].fd);
    }
  }
  int r;
  if (!any) {
    r = ppoll_call ? Real().ppoll(fds, n, timeout, mask) : Real().poll(fds, n, poll_timeout);
  } else {
    // A descriptor with held bytes is readable now: ask the kernel about the rest without
    // waiting, then mark it (§5.2).
    struct timespec zero = {0, 0};
    r = ppoll_call ? Real().ppoll(fds, n, &zero, mask) : Real().poll(fds, n, 0);
    if (r < 0) {
      if (errno != EINTR) return r;
      r = 0;
      for (nfds_t i = 0; i < n; ++i) fds[i].revents = 0;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if ((fds[i].events & POLLIN) == 0 || !HeldOrKept(fds[i].fd)) continue;
      if (fds[i].revents == 0) ++r;
      fds[i].revents = short(fds[i].revents | POLLIN);
    }
  }
  return r >= 2 ? OneInputOfPoll(fds, n, r) : r;
}

int IsolatedSelect(int n, fd_set* readable, fd_set* writable, fd_set* failed,
                   struct timeval* timeout, const struct timespec* ptimeout, const sigset_t* mask,
                   bool pselect_call) {
  NewTurn();
  fd_set held;
  FD_ZERO(&held);
  bool any = false;
  if (readable != nullptr && AnyHeldOrKept()) {
    for (int fd = 0; fd < n && fd < FD_SETSIZE; ++fd) {
      if (FD_ISSET(fd, readable) && HeldOrKept(fd)) {
        FD_SET(fd, &held);
        any = true;
      }
    }
  }
  int r;
  if (!any) {
    r = pselect_call ? Real().pselect(n, readable, writable, failed, ptimeout, mask)
                     : Real().select(n, readable, writable, failed, timeout);
  } else {
    struct timeval zero = {0, 0};
    struct timespec pzero = {0, 0};
    r = pselect_call ? Real().pselect(n, readable, writable, failed, &pzero, mask)
                     : Real().select(n, readable, writable, failed, &zero);
    if (r < 0) {
      if (errno != EINTR) return r;
      r = 0;
      FD_ZERO(readable);
      if (writable != nullptr) FD_ZERO(writable);
      if (failed != nullptr) FD_ZERO(failed);
    }
    for (int fd = 0; fd < n && fd < FD_SETSIZE; ++fd) {
      if (!FD_ISSET(fd, &held)) continue;
      if (!FD_ISSET(fd, readable)) ++r;  // select counts a descriptor once per set
      FD_SET(fd, readable);
    }
  }
  return r >= 2 && readable != nullptr ? OneInputOfSelect(n, readable, r) : r;
}

// Ends `fd`'s registration in the set `epfd + 1 == set` (a DEL, or the set closed): the one
// it displaced, if any and still in another set, is `fd`'s registration again.
void EndRegistration(int fd, uint64_t set) {
  Registration& r = g_registrations[fd];
  Displaced& d = g_displaced[fd];
  if ((d.set_events >> 32) == set) d = {};
  if ((__atomic_load_n(&r.set_events, __ATOMIC_ACQUIRE) >> 32) != set) return;
  __atomic_add_fetch(&r.generation, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&r.data, d.data, __ATOMIC_RELAXED);
  __atomic_store_n(&r.set_events, d.set_events, __ATOMIC_RELEASE);
  d = {};
}

void NoteEpollCtl(int epfd, int op, int fd, const struct epoll_event* event) {
  if (fd < 0 || fd >= kWaitFds || epfd < 0 || epfd >= kWaitFds) return;
  Registration& r = g_registrations[fd];
  if (op == EPOLL_CTL_DEL) {
    EndRegistration(fd, uint64_t(epfd) + 1);
    DropKept(epfd, fd);
    return;
  }
  if (event == nullptr) return;
  // Added to a second set: the first registration waits for the second to end.
  const uint64_t before = __atomic_load_n(&r.set_events, __ATOMIC_ACQUIRE);
  if (op == EPOLL_CTL_ADD && before != 0 && (before >> 32) != uint64_t(epfd) + 1) {
    g_displaced[fd] = {before, __atomic_load_n(&r.data, __ATOMIC_RELAXED)};
  }
  __atomic_add_fetch(&r.generation, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&g_is_epoll_set[epfd], 1, __ATOMIC_RELAXED);
  __atomic_store_n(&r.data, event->data.u64, __ATOMIC_RELAXED);
  __atomic_store_n(&r.set_events, (uint64_t(epfd) + 1) << 32 | event->events, __ATOMIC_RELEASE);
  __atomic_store_n(&g_hint[HintSlot(epfd, event->data.u64)], fd + 1, __ATOMIC_RELAXED);
  if ((event->events & EPOLLONESHOT) != 0)
    __atomic_store_n(&g_any_one_shot, true, __ATOMIC_RELAXED);
  int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
  while (fd > top && !__atomic_compare_exchange_n(&g_registered_top, &top, fd, false,
                                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  // A re-armed registration is polled again by the kernel: what was kept is its to report.
  if (op == EPOLL_CTL_MOD) DropKept(epfd, fd);
}

void ForgetWaits(int fd) {
  if (fd < 0 || fd >= kWaitFds) return;
  Reported(fd);
  // The registration first, then what was kept: a wait putting an event back after this
  // finds the generation changed (KeepForLater checks under the lock).
  __atomic_add_fetch(&g_registrations[fd].generation, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&g_registrations[fd].set_events, 0, __ATOMIC_RELEASE);
  g_displaced[fd] = {};
  if (__atomic_load_n(&g_is_epoll_set[fd], __ATOMIC_RELAXED) != 0) {
    __atomic_store_n(&g_is_epoll_set[fd], 0, __ATOMIC_RELAXED);
    // The set closed: every registration in it ends (the kernel drops them).
    int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
    for (int i = 0; i <= top; ++i) EndRegistration(i, uint64_t(fd) + 1);
  }
  DropKept(-1, fd);
}

int IsolatedEpollWait(int epfd, struct epoll_event* events, int max, int timeout,
                      const sigset_t* mask, bool pwait_call) {
  NewTurn();
  if (epfd < 0 || epfd >= kWaitFds || max <= 0) {
    return pwait_call ? Real().epoll_pwait(epfd, events, max, timeout, mask)
                      : Real().epoll_wait(epfd, events, max, timeout);
  }
  Kept kept{};
  const bool any_kept = FirstKept(epfd, &kept);
  int held[64];
  int held_count = HeldInSet(epfd, held, 64);
  if (!any_kept && held_count == 0) {
    int r = pwait_call ? Real().epoll_pwait(epfd, events, max, timeout, mask)
                       : Real().epoll_wait(epfd, events, max, timeout);
    return Reporting(epfd, events, r >= 2 ? OneInputOfEpoll(epfd, events, r) : r);
  }
  int r = pwait_call ? Real().epoll_pwait(epfd, events, max, 0, mask)
                     : Real().epoll_wait(epfd, events, max, 0);
  if (r < 0) {
    if (errno != EINTR) return r;
    r = 0;
  }
  // The user's epoll_data names the descriptor: merge by it, add the rest while room lasts
  // (a held descriptor that does not fit is still held, and a kept event still kept, so
  // the next wait reports them without blocking). An event is looked for only where
  // `present` (a bit per hash of the data of the events so far) says one may be; those
  // added carry their descriptors to OneInputOfEpoll.
  uint64_t present = 0;
  auto bit = [](uint64_t data) { return uint64_t(1) << ((data * 0x9e3779b97f4a7c15ull) >> 58); };
  for (int i = 0; i < r; ++i) present |= bit(events[i].data.u64);
  const int added_from = r;
  int added_fd[64 + 1];
  // The index of the event `data` is now in (-1: no room).
  auto merge = [&](uint64_t data, uint32_t bits, int fd) {
    int i = (present & bit(data)) != 0 ? 0 : r;
    while (i < r && events[i].data.u64 != data) ++i;
    if (i < r) {
      events[i].events |= bits;
      return i;
    }
    if (r == max) return -1;
    events[r].events = bits;
    events[r].data.u64 = data;
    added_fd[r - added_from] = fd;
    present |= bit(data);
    return r++;
  };
  const int first_kept = any_kept ? merge(kept.data, kept.events, kept.fd) : -1;
  for (int h = 0; h < held_count; ++h) {
    merge(__atomic_load_n(&g_registrations[held[h]].data, __ATOMIC_RELAXED), EPOLLIN, held[h]);
  }
  Split split{};
  if (r >= 2) r = OneInputOfEpoll(epfd, events, r, added_fd, added_from, first_kept, &split);
  // Reported now, it is kept no more; if others still are, this wait held them back.
  if (first_kept >= 0 && !split.first_kept && TakeKept(kept) && !split.any) CountSplit();
  return Reporting(epfd, events, r);
}

}  // namespace weft_preload
