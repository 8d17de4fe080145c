// Wrappers for the calls through which threads of one process hand work to each other:
// the evidence reconcile turns into HANDOFF links (docs/capture.md, "Hand-offs").
//
// Whodunit (EuroSys'07) follows a transaction through the critical sections of a shared
// queue; weft logs what identifies one: per call the object (the address of the mutex,
// condition variable or semaphore; the eventfd or timerfd), the thread (the block's tid),
// and entry and exit times. What each kind gives reconcile:
//   - a condition variable that only one thread ever waits on is a targeted wake (Varnish
//     and MariaDB wake one chosen worker on its own condvar): the signal names its consumer;
//   - the critical sections on a mutex that a condition variable waits with are a queue:
//     the k-th section that produced (signalled the condvar) pairs with the k-th that
//     consumed (a waiter's section ending in unlock) when the queue is FIFO;
//   - semaphores pair the k-th post with the k-th wait that took a unit;
//   - eventfd writes and reads, and timerfd arms and expiries, wake a loop.
//
// Cost. An uncontended lock, unlock or signal costs a few nanoseconds untraced, and a clock
// reading alone some 20 on a virtual machine, so the queue path logs as little as it can:
// one record with one time per signal and per unlock of a queue's mutex, nothing for a
// lock (the sections' ends order them), and only mutexes that guard a queue: those a
// condition variable waited with or was signalled under (WEFT_SYNC=all logs every
// mutex's unlocks; WEFT_SYNC=off no synchronisation at all). Any other mutex costs a lookup
// in a small lock-free set of addresses and a note in the thread's held list. Waits,
// semaphores, eventfds and timers, each a system call when it matters, log entry and exit.
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>

#include "capture/preload/log_file.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

// The mutexes a condition variable has waited with: open addressing over addresses, never
// removed (a queue's mutex lives as long as its queue, as a rule). Full: no more are added.
constexpr uint32_t kWatchedSlots = 1 << 12;
uintptr_t g_watched[kWatchedSlots];

uint32_t SlotOf(uintptr_t address) {
  return uint32_t((address >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (kWatchedSlots - 1);
}

bool IsWatched(const void* mutex) {
  if (SyncMode() == kSyncAll) return true;
  uintptr_t address = reinterpret_cast<uintptr_t>(mutex);
  for (uint32_t i = SlotOf(address), probes = 0; probes < 16;
       ++probes, i = (i + 1) & (kWatchedSlots - 1)) {
    uintptr_t v = __atomic_load_n(&g_watched[i], __ATOMIC_RELAXED);
    if (v == address) return true;
    if (v == 0) return false;
  }
  return false;
}

void Watch(const void* mutex) {
  uintptr_t address = reinterpret_cast<uintptr_t>(mutex);
  for (uint32_t i = SlotOf(address), probes = 0; probes < 16;
       ++probes, i = (i + 1) & (kWatchedSlots - 1)) {
    uintptr_t v = __atomic_load_n(&g_watched[i], __ATOMIC_RELAXED);
    if (v == address) return;
    if (v == 0 && __atomic_compare_exchange_n(&g_watched[i], &v, address, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED)) {
      return;
    }
    if (v == address) return;
  }
}

bool Logged() { return Logging() && SyncMode() != kSyncOff; }

// The mutexes this thread holds (the innermost few), and the one it released last: a
// condition variable signalled under a mutex (or right after releasing it) is that queue's,
// even when no consumer ever waited on it (a pool that never idles, under load).
constexpr int kHeldSlots = 4;
__thread const void* t_held[kHeldSlots] __attribute__((tls_model("initial-exec")));
__thread int t_held_count __attribute__((tls_model("initial-exec"))) = 0;
__thread const void* t_released __attribute__((tls_model("initial-exec"))) = nullptr;

void Held(const void* mutex) {
  if (t_held_count < kHeldSlots) t_held[t_held_count] = mutex;
  ++t_held_count;
}

void Released(const void* mutex) {
  t_released = mutex;
  int n = t_held_count < kHeldSlots ? t_held_count : kHeldSlots;
  for (int i = n - 1; i >= 0; --i) {
    if (t_held[i] != mutex) continue;
    for (int j = i; j + 1 < n; ++j) t_held[j] = t_held[j + 1];
    break;
  }
  if (t_held_count > 0) --t_held_count;
}

// The mutex a signal on a condition variable belongs to: the innermost one held, else the
// one released last (`notify_one` after the unlock), else none.
const void* SignalledMutex() {
  if (t_held_count > 0 && t_held_count <= kHeldSlots) return t_held[t_held_count - 1];
  return t_held_count == 0 ? t_released : nullptr;
}

uint64_t Address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

int64_t TimespecNs(const struct timespec& t) {
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A condition wait: the mutex is released at entry and taken again at exit.
template <typename Wait>
int LoggedWait(pthread_cond_t* cond, pthread_mutex_t* mutex, Wait wait) {
  if (!Logged()) return wait();
  Watch(mutex);
  int64_t entry = NowNs();
  int r = wait();
  LogSync(wire::kOpCondWait, Address(cond), Address(mutex), entry, NowNs(), -r);
  return r;
}

template <typename Wait>
int LoggedSemWait(sem_t* sem, Wait wait) {
  if (!Logged()) return wait();
  int64_t entry = NowNs();
  int r = wait();
  int error = errno;
  if (r == 0) LogSync(wire::kOpSemWait, Address(sem), 0, entry, NowNs(), 0);
  errno = error;
  return r;
}

}  // namespace

// A lock is not logged: the order of a mutex's critical sections is the order of their
// ends, and reconcile needs no more. It only notes the mutex as held, for signals.
WEFT_EXPORT int pthread_mutex_lock(pthread_mutex_t* mutex) noexcept {
  int r = Real().pthread_mutex_lock(mutex);
  if (r == 0 && Logged()) Held(mutex);
  return r;
}

WEFT_EXPORT int pthread_mutex_trylock(pthread_mutex_t* mutex) noexcept {
  int r = Real().pthread_mutex_trylock(mutex);
  if (r == 0 && Logged()) Held(mutex);
  return r;
}

// An unlock of a queue's mutex ends a critical section: one time, taken before the mutex
// is free (nobody else's section can start before it).
WEFT_EXPORT int pthread_mutex_unlock(pthread_mutex_t* mutex) noexcept {
  if (!Logged()) return Real().pthread_mutex_unlock(mutex);
  Released(mutex);
  if (!IsWatched(mutex)) return Real().pthread_mutex_unlock(mutex);
  int64_t now = NowNs();
  int r = Real().pthread_mutex_unlock(mutex);
  if (r == 0) LogSync(wire::kOpMutexUnlock, Address(mutex), 0, now, now, 0);
  return r;
}

WEFT_EXPORT int pthread_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  return LoggedWait(cond, mutex, [&] { return Real().pthread_cond_wait(cond, mutex); });
}

WEFT_EXPORT int pthread_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                       const struct timespec* deadline) {
  return LoggedWait(cond, mutex,
                    [&] { return Real().pthread_cond_timedwait(cond, mutex, deadline); });
}

// libstdc++'s condition_variable::wait_for and wait_until call this one (glibc 2.30+).
WEFT_EXPORT int pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                       clockid_t clock, const struct timespec* deadline) {
  if (Real().pthread_cond_clockwait == nullptr) return EINVAL;  // a C library without it
  return LoggedWait(cond, mutex,
                    [&] { return Real().pthread_cond_clockwait(cond, mutex, clock, deadline); });
}

// A signal names the mutex it was sent under (SignalledMutex), plus 1 when its thread had
// already released it (`notify_one` after the unlock): the section it belongs to is the
// one that ends at the thread's next release of the mutex, or that ended at its last. The
// mutex is watched from then on, so that section's end is logged.
template <typename Signal>
int LoggedSignal(uint8_t op, pthread_cond_t* cond, Signal signal) {
  if (!Logged()) return signal();
  const void* mutex = SignalledMutex();
  if (mutex != nullptr) Watch(mutex);
  int64_t now = NowNs();
  int r = signal();
  uint64_t named = mutex == nullptr ? 0 : Address(mutex) | (t_held_count == 0 ? 1 : 0);
  LogSync(op, Address(cond), named, now, now, -r);
  return r;
}

WEFT_EXPORT int pthread_cond_signal(pthread_cond_t* cond) noexcept {
  return LoggedSignal(wire::kOpCondSignal, cond, [&] { return Real().pthread_cond_signal(cond); });
}

WEFT_EXPORT int pthread_cond_broadcast(pthread_cond_t* cond) noexcept {
  return LoggedSignal(wire::kOpCondBroadcast, cond,
                      [&] { return Real().pthread_cond_broadcast(cond); });
}

WEFT_EXPORT int sem_post(sem_t* sem) noexcept {
  if (!Logged()) return Real().sem_post(sem);
  int64_t entry = NowNs();
  int r = Real().sem_post(sem);
  int error = errno;
  if (r == 0) LogSync(wire::kOpSemPost, Address(sem), 0, entry, NowNs(), 0);
  errno = error;
  return r;
}

WEFT_EXPORT int sem_wait(sem_t* sem) {
  return LoggedSemWait(sem, [&] { return Real().sem_wait(sem); });
}

WEFT_EXPORT int sem_timedwait(sem_t* sem, const struct timespec* deadline) {
  return LoggedSemWait(sem, [&] { return Real().sem_timedwait(sem, deadline); });
}

WEFT_EXPORT int sem_trywait(sem_t* sem) noexcept {
  return LoggedSemWait(sem, [&] { return Real().sem_trywait(sem); });
}

WEFT_EXPORT int eventfd(unsigned int initial, int flags) noexcept {
  int fd = Real().eventfd(initial, flags);
  if (fd >= 0 && Logging()) {
    SetFdKind(fd, wire::kKindEventfd);
    if (Logged()) {
      int64_t now = NowNs();
      LogSync(wire::kOpWakeCreate, uint64_t(fd), 0, now, now, 0);
    }
  }
  return fd;
}

WEFT_EXPORT int timerfd_create(int clock, int flags) noexcept {
  int fd = Real().timerfd_create(clock, flags);
  if (fd >= 0 && Logging()) {
    SetFdKind(fd, wire::kKindTimerfd);
    if (Logged()) {
      int64_t now = NowNs();
      LogSync(wire::kOpWakeCreate, uint64_t(fd), 1, now, now, 0);
    }
  }
  return fd;
}

// The first expiry, on CLOCK_MONOTONIC: relative values are added to the arming time; an
// absolute one is logged as given (right for the CLOCK_MONOTONIC timers event loops use).
WEFT_EXPORT int timerfd_settime(int fd, int flags, const struct itimerspec* value,
                                struct itimerspec* old) noexcept {
  if (!Logged() || FdKind(fd) != wire::kKindTimerfd || value == nullptr) {
    return Real().timerfd_settime(fd, flags, value, old);
  }
  int64_t entry = NowNs();
  int64_t expiry = 0;
  int64_t given = TimespecNs(value->it_value);
  if (given != 0) {
    expiry = (flags & TFD_TIMER_ABSTIME) != 0 ? given : entry + given;
  }
  int r = Real().timerfd_settime(fd, flags, value, old);
  int error = errno;
  if (r == 0) LogSync(wire::kOpTimerArm, uint64_t(fd), uint64_t(expiry), entry, NowNs(), 0);
  errno = error;
  return r;
}

WEFT_EXPORT int eventfd_read(int fd, eventfd_t* value) {
  ssize_t r = WakeRead(fd, value, sizeof *value);
  return r == sizeof *value ? 0 : -1;
}

WEFT_EXPORT int eventfd_write(int fd, eventfd_t value) {
  ssize_t r = WakeWrite(fd, &value, sizeof value);
  return r == sizeof value ? 0 : -1;
}

namespace weft_preload {

namespace {

// One 8-byte read or write of a wake-up descriptor (`io`), logged with the value moved.
template <typename Io>
ssize_t LoggedWake(uint8_t op, int fd, const void* value, Io io) {
  int64_t entry = NowNs();
  ssize_t r = io();
  int error = errno;
  if (r == 8) {
    uint64_t moved;
    memcpy(&moved, value, 8);
    LogSync(op, uint64_t(fd), moved, entry, NowNs(), 0);
  }
  errno = error;
  return r;
}

}  // namespace

ssize_t WakeRead(int fd, void* buffer, size_t n) {
  if (!Logged() || FdKind(fd) < wire::kKindEventfd) return Real().read(fd, buffer, n);
  return LoggedWake(wire::kOpWakeRead, fd, buffer, [&] { return Real().read(fd, buffer, n); });
}

// Only eventfds are written to (a timerfd write is an error the program gets as is).
ssize_t WakeWrite(int fd, const void* buffer, size_t n) {
  if (!Logged() || FdKind(fd) != wire::kKindEventfd) return Real().write(fd, buffer, n);
  return LoggedWake(wire::kOpWakeWrite, fd, buffer, [&] { return Real().write(fd, buffer, n); });
}

}  // namespace weft_preload
