// Event isolation; see isolation.h for what it does and the rules it keeps.
#include "capture/preload/isolation.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/preload/protocol_streams.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

namespace weft_preload {

bool g_isolate = false;

namespace {

uint64_t g_isolated_reads = 0;  // reads cut short at a message end
uint64_t g_held_reads = 0;      // reads served from held bytes (no system call)
uint64_t g_held_bytes = 0;      // bytes held back in all

void Count(uint64_t* counter, uint64_t n) { __atomic_fetch_add(counter, n, __ATOMIC_RELAXED); }

long ResultOf(long r, int error) { return r < 0 ? -error : r; }

size_t IovBytes(const struct iovec* iov, int iovcnt) {
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  return total;
}

// Copies `n` bytes from `from` into the program's buffers.
void CopyIn(const struct iovec* iov, int iovcnt, const uint8_t* from, size_t n) {
  for (int i = 0; i < iovcnt && n > 0; ++i) {
    size_t take = iov[i].iov_len < n ? iov[i].iov_len : n;
    memcpy(iov[i].iov_base, from, take);
    from += take;
    n -= take;
  }
}

// Copies `n` bytes starting `skip` bytes into the program's buffers out to `to`.
void CopyOut(const struct iovec* iov, int iovcnt, size_t skip, uint8_t* to, size_t n) {
  for (int i = 0; i < iovcnt && n > 0; ++i) {
    size_t length = iov[i].iov_len;
    if (skip >= length) {
      skip -= length;
      continue;
    }
    size_t take = length - skip < n ? length - skip : n;
    memcpy(to, static_cast<const uint8_t*>(iov[i].iov_base) + skip, take);
    to += take;
    n -= take;
    skip = 0;
  }
}

// Room for `n` held bytes: the old mapping if it is large enough, else a new one.
bool Reserve(HeldBytes* held, size_t n) {
  if (n > 0xffffffffu) return false;
  if (held->data != nullptr && held->capacity >= n) return true;
  size_t size = (n + 4095) & ~size_t(4095);
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return false;
  if (held->data != nullptr) munmap(held->data, held->capacity);
  held->data = static_cast<uint8_t*>(memory);
  held->capacity = uint32_t(size);
  return true;
}

// The real call the program made, on `iov` (for read and recv, its one buffer).
ssize_t RealRead(uint8_t op, int fd, const struct iovec* iov, int iovcnt, int flags,
                 struct msghdr* message, struct sockaddr* address, socklen_t* length) {
  switch (op) {
    case wire::kOpRead:
      return Real().read(fd, iov[0].iov_base, iov[0].iov_len);
    case wire::kOpReadv:
      return Real().readv(fd, iov, iovcnt);
    case wire::kOpRecv:
      return Real().recv(fd, iov[0].iov_base, iov[0].iov_len, flags);
    case wire::kOpRecvfrom:
      return Real().recvfrom(fd, iov[0].iov_base, iov[0].iov_len, flags, address, length);
    default:
      return Real().recvmsg(fd, message, flags);
  }
}

// A read served without the kernel says no more than a stream receive does: no source
// address, no control messages, no flags.
void ClearReceiveDetails(struct msghdr* message, socklen_t* length) {
  if (length != nullptr) *length = 0;
  if (message != nullptr) {
    message->msg_namelen = 0;
    message->msg_controllen = 0;
    message->msg_flags = 0;
  }
}

// The rest of a MSG_WAITALL read after `done` bytes came from held bytes: the kernel's,
// into the program's buffers past them. Returns the bytes it added, or -1 (errno set).
ssize_t RestOfWaitAll(int fd, const struct iovec* iov, int iovcnt, size_t done, int flags) {
  struct iovec rest[64];
  int count = 0;
  for (int i = 0; i < iovcnt && count < 64; ++i) {
    size_t length = iov[i].iov_len;
    if (done >= length) {
      done -= length;
      continue;
    }
    rest[count].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + done;
    rest[count].iov_len = length - done;
    ++count;
    done = 0;
  }
  struct msghdr m = {};
  m.msg_iov = rest;
  m.msg_iovlen = size_t(count);
  return count > 0 ? Real().recvmsg(fd, &m, flags) : 0;
}

}  // namespace

void ConfigureIsolation(bool on) { g_isolate = on; }

void IsolationCounters(uint64_t* isolated_reads, uint64_t* held_reads, uint64_t* held_bytes) {
  *isolated_reads = __atomic_load_n(&g_isolated_reads, __ATOMIC_RELAXED);
  *held_reads = __atomic_load_n(&g_held_reads, __ATOMIC_RELAXED);
  *held_bytes = __atomic_load_n(&g_held_bytes, __ATOMIC_RELAXED);
}

bool IsolatedRead(uint8_t op, int fd, const struct iovec* iov, int iovcnt, int flags,
                  struct msghdr* message, struct sockaddr* address, socklen_t* length,
                  ssize_t* result) {
  if ((flags & (MSG_OOB | MSG_TRUNC | MSG_ERRQUEUE)) != 0) return false;
  size_t capacity = IovBytes(iov, iovcnt);
  if (capacity == 0) return false;
  bool peek = (flags & MSG_PEEK) != 0;
  bool wait_all = (flags & MSG_WAITALL) != 0 && !peek;
  InputSide side;
  if (!LockInput(fd, &side)) return false;
  HeldBytes* held = side.held;
  // Once the log is closed (the image is ending) nothing is isolated or logged any more,
  // but bytes already held are still the program's: they are served first.
  bool logging = Logging();
  if (!logging && held->length == 0) {
    UnlockInput(side);
    return false;
  }
  int64_t entry = logging ? BeginCall() : 0;

  if (held->length > 0) {
    // Served from the held bytes (§5.2: "the processor considers the cached data first").
    const uint8_t* from = held->data + held->start;
    size_t available = held->length < capacity ? held->length : capacity;
    size_t k = wait_all ? available : InputBoundary(side, from, nullptr, 0, available);
    CopyIn(iov, iovcnt, from, k);
    if (!peek) {
      held->start += uint32_t(k);
      held->length -= uint32_t(k);
      if (held->length == 0) {
        held->start = 0;
        __atomic_sub_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
      }
    }
    ClearReceiveDetails(message, length);
    if (logging) {
      int64_t exit = NowNs();
      LogCallWithPayload(op, fd, entry, exit, long(k), flags, nullptr, iov, iovcnt);
      if (!peek) FeedInputTaken(side, fd, entry, exit, nullptr, iov, iovcnt, k);
    }
    Count(&g_held_reads, 1);
    UnlockInput(side);
    ssize_t total = ssize_t(k);
    if (wait_all && k < capacity && !logging) {
      ssize_t r = RestOfWaitAll(fd, iov, iovcnt, k, flags);
      if (r > 0) total += r;
    } else if (wait_all && k < capacity) {
      // The kernel's part, logged as a call of its own: reconcile counts bytes by calls.
      int64_t rest_entry = BeginCall();
      ssize_t r = RestOfWaitAll(fd, iov, iovcnt, k, flags);
      int error = errno;
      int64_t rest_exit = NowNs();
      if (r > 0) {
        struct iovec part[64];
        int count = 0;
        size_t skip = k;
        for (int i = 0; i < iovcnt && count < 64; ++i) {
          if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
          }
          part[count].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + skip;
          part[count++].iov_len = iov[i].iov_len - skip;
          skip = 0;
        }
        LogCallWithPayload(op, fd, rest_entry, rest_exit, long(r), flags, nullptr, part, count);
        FeedStream(fd, false, rest_entry, rest_exit, nullptr, part, count, size_t(r));
        total += r;
      }
      // An error or the end of the stream after some bytes: the bytes are the result, as
      // the kernel would give them.
      errno = error;
    }
    *result = total;
    return true;
  }

  // Nothing held: the real call, without the side taken (it may block).
  UnlockInput(side);
  ssize_t r = RealRead(op, fd, iov, iovcnt, flags, message, address, length);
  int error = errno;
  size_t got = r > 0 ? (size_t(r) < capacity ? size_t(r) : capacity) : 0;
  bool control = message != nullptr && message->msg_controllen > 0 && r >= 0;
  bool taken = got > 0 && LockInput(fd, &side);
  if (taken) held = side.held;  // the descriptor's stream now (a close and reuse between)
  size_t k = got;
  // Held bytes that appeared meanwhile (another thread read concurrently, unordered
  // anyway): these bytes go through whole.
  if (taken && !wait_all && !control && held->length == 0) {
    k = InputBoundary(side, nullptr, iov, iovcnt, got);
    if (k < got && !peek) {
      if (Reserve(held, got - k)) {
        CopyOut(iov, iovcnt, k, held->data, got - k);
        held->start = 0;
        held->length = uint32_t(got - k);
        __atomic_add_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
        Count(&g_isolated_reads, 1);
        Count(&g_held_bytes, got - k);
      } else {
        k = got;  // no memory: not isolated, never lost
      }
    }
  }
  int64_t exit = NowNs();
  LogCallWithPayload(op, fd, entry, exit, r > 0 ? long(k) : ResultOf(r, error), flags, nullptr, iov,
                     iovcnt);
  if (got > 0 && !peek) {
    if (taken) {
      FeedInputTaken(side, fd, entry, exit, nullptr, iov, iovcnt, k);
    } else {
      FeedStream(fd, false, entry, exit, nullptr, iov, iovcnt, k);
    }
  }
  if (taken) UnlockInput(side);
  if (k < got && message != nullptr) message->msg_flags &= ~MSG_TRUNC;
  *result = r > 0 ? ssize_t(k) : r;
  errno = error;
  return true;
}

// --- readiness -------------------------------------------------------------------------

int IsolatedPoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                 const sigset_t* mask, bool ppoll_call, int poll_timeout) {
  bool any = false;
  if (__atomic_load_n(&g_held_streams, __ATOMIC_RELAXED) != 0) {
    for (nfds_t i = 0; i < n && !any; ++i) {
      any = (fds[i].events & POLLIN) != 0 && FdHasHeld(fds[i].fd);
    }
  }
  if (!any) {
    return ppoll_call ? Real().ppoll(fds, n, timeout, mask) : Real().poll(fds, n, poll_timeout);
  }
  // A descriptor with held bytes is readable now: ask the kernel about the rest without
  // waiting, then mark it (§5.2).
  struct timespec zero = {0, 0};
  int r = ppoll_call ? Real().ppoll(fds, n, &zero, mask) : Real().poll(fds, n, 0);
  if (r < 0) {
    if (errno != EINTR) return r;
    r = 0;
    for (nfds_t i = 0; i < n; ++i) fds[i].revents = 0;
  }
  for (nfds_t i = 0; i < n; ++i) {
    if ((fds[i].events & POLLIN) == 0 || !FdHasHeld(fds[i].fd)) continue;
    if (fds[i].revents == 0) ++r;
    fds[i].revents = short(fds[i].revents | POLLIN);
  }
  return r;
}

int IsolatedSelect(int n, fd_set* readable, fd_set* writable, fd_set* failed,
                   struct timeval* timeout, const struct timespec* ptimeout, const sigset_t* mask,
                   bool pselect_call) {
  fd_set held;
  FD_ZERO(&held);
  bool any = false;
  if (readable != nullptr && __atomic_load_n(&g_held_streams, __ATOMIC_RELAXED) != 0) {
    for (int fd = 0; fd < n && fd < FD_SETSIZE; ++fd) {
      if (FD_ISSET(fd, readable) && FdHasHeld(fd)) {
        FD_SET(fd, &held);
        any = true;
      }
    }
  }
  if (!any) {
    return pselect_call ? Real().pselect(n, readable, writable, failed, ptimeout, mask)
                        : Real().select(n, readable, writable, failed, timeout);
  }
  struct timeval zero = {0, 0};
  struct timespec pzero = {0, 0};
  int r = pselect_call ? Real().pselect(n, readable, writable, failed, &pzero, mask)
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
  return r;
}

// --- epoll registrations -----------------------------------------------------------------

namespace {

// What each descriptor below kEpollFds is registered for: its epoll set, events and data.
// Written by epoll_ctl (the program's own order), read by epoll_wait while bytes are held.
// One registration per descriptor: one added to two sets is known in the later only.
constexpr int kEpollFds = 1 << 16;
struct Registration {
  uint64_t set_events;  // epoll fd + 1 in the high half (0: none), events in the low half
  uint64_t data;
};
Registration g_registrations[kEpollFds];
uint8_t g_is_epoll_set[kEpollFds];  // this number has been an epoll set's
int g_registered_top = -1;          // highest descriptor ever registered

}  // namespace

void NoteEpollCtl(int epfd, int op, int fd, const struct epoll_event* event) {
  if (fd < 0 || fd >= kEpollFds || epfd < 0 || epfd >= kEpollFds) return;
  Registration& r = g_registrations[fd];
  if (op == EPOLL_CTL_DEL) {
    if ((r.set_events >> 32) == uint64_t(epfd) + 1) __atomic_store_n(&r.set_events, 0, __ATOMIC_RELEASE);
    return;
  }
  if (event == nullptr) return;
  __atomic_store_n(&g_is_epoll_set[epfd], 1, __ATOMIC_RELAXED);
  __atomic_store_n(&r.data, event->data.u64, __ATOMIC_RELAXED);
  __atomic_store_n(&r.set_events, (uint64_t(epfd) + 1) << 32 | event->events, __ATOMIC_RELEASE);
  int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
  while (fd > top && !__atomic_compare_exchange_n(&g_registered_top, &top, fd, false,
                                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void ForgetEpoll(int fd) {
  if (fd < 0 || fd >= kEpollFds) return;
  __atomic_store_n(&g_registrations[fd].set_events, 0, __ATOMIC_RELEASE);
  if (__atomic_load_n(&g_is_epoll_set[fd], __ATOMIC_RELAXED) == 0) return;
  __atomic_store_n(&g_is_epoll_set[fd], 0, __ATOMIC_RELAXED);
  int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
  for (int i = 0; i <= top; ++i) {
    uint64_t v = __atomic_load_n(&g_registrations[i].set_events, __ATOMIC_ACQUIRE);
    if ((v >> 32) == uint64_t(fd) + 1) __atomic_store_n(&g_registrations[i].set_events, 0, __ATOMIC_RELEASE);
  }
}

int IsolatedEpollWait(int epfd, struct epoll_event* events, int max, int timeout,
                      const sigset_t* mask, bool pwait_call) {
  int held[64];
  int held_count = 0;
  if (__atomic_load_n(&g_held_streams, __ATOMIC_RELAXED) != 0 && epfd >= 0 && epfd < kEpollFds) {
    int top = __atomic_load_n(&g_registered_top, __ATOMIC_RELAXED);
    for (int fd = 0; fd <= top && held_count < 64; ++fd) {
      uint64_t v = __atomic_load_n(&g_registrations[fd].set_events, __ATOMIC_ACQUIRE);
      if ((v >> 32) != uint64_t(epfd) + 1 || (uint32_t(v) & EPOLLIN) == 0) continue;
      if (FdHasHeld(fd)) held[held_count++] = fd;
    }
  }
  if (held_count == 0) {
    return pwait_call ? Real().epoll_pwait(epfd, events, max, timeout, mask)
                      : Real().epoll_wait(epfd, events, max, timeout);
  }
  int r = pwait_call ? Real().epoll_pwait(epfd, events, max, 0, mask)
                     : Real().epoll_wait(epfd, events, max, 0);
  if (r < 0) {
    if (errno != EINTR) return r;
    r = 0;
  }
  // The user's epoll_data names the descriptor: merge by it, add the rest while room lasts
  // (one that does not fit is still held, so the next wait reports it without blocking).
  for (int h = 0; h < held_count; ++h) {
    Registration& reg = g_registrations[held[h]];
    uint64_t data = __atomic_load_n(&reg.data, __ATOMIC_RELAXED);
    int i = 0;
    while (i < r && events[i].data.u64 != data) ++i;
    if (i < r) {
      events[i].events |= EPOLLIN;
    } else if (r < max) {
      events[r].events = EPOLLIN;
      events[r].data.u64 = data;
      ++r;
    } else {
      continue;
    }
    // EPOLLONESHOT: reported once, until the program re-arms it with EPOLL_CTL_MOD.
    uint64_t v = __atomic_load_n(&reg.set_events, __ATOMIC_RELAXED);
    if ((uint32_t(v) & EPOLLONESHOT) != 0) {
      __atomic_store_n(&reg.set_events, v & ~uint64_t(0xffffffffu), __ATOMIC_RELAXED);
    }
  }
  return r;
}

}  // namespace weft_preload
