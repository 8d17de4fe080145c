// Event isolation; see isolation.h for what it does and the rules it keeps.
#include "capture/preload/isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

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

// One request per turn (isolation.h, "Deferred reads"): the request stream this thread
// last read from since it last waited or answered there, and the streams whose reads it
// deferred since (each once: a program that retries at once gets its bytes).
constexpr int kDeferredPerTurn = 4;
__thread int t_request_fd __attribute__((tls_model("initial-exec"))) = -1;
__thread int t_deferred[kDeferredPerTurn] __attribute__((tls_model("initial-exec")));
__thread int t_deferred_count __attribute__((tls_model("initial-exec"))) = 0;

// The calling thread's turns so far (TLS reads: one message per stream per turn); its
// address names the thread.
__thread uint32_t t_turn __attribute__((tls_model("initial-exec"))) = 0;

bool DeferredThisTurn(int fd) {
  for (int i = 0; i < t_deferred_count; ++i) {
    if (t_deferred[i] == fd) return true;
  }
  return false;
}

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

// After a read took the last held bytes: what the kernel has received meanwhile goes into
// the held bytes too. The wait that reported the descriptor readable for those bytes was
// used up by the held ones, and an edge-triggered epoll (nginx's) reports no new edge for
// bytes already there; a program that read less than it asked for takes the socket for
// drained and waits, and they would sit in the kernel until more came. Held, they keep
// the descriptor readable in the waits' eyes (isolation_waits.cc). FIONREAD first, so that
// no error or end of stream the program has yet to see is consumed here.
void RefillHeld(int fd, HeldBytes* held) {
  int available = 0;
  if (ioctl(fd, FIONREAD, &available) != 0 || available <= 0) return;
  if (!Reserve(held, size_t(available))) return;
  ssize_t r = Real().recv(fd, held->data, size_t(available), MSG_DONTWAIT);
  if (r <= 0) return;
  held->start = 0;
  held->length = uint32_t(r);
  StartHolding(fd);
  Count(&g_held_bytes, uint64_t(r));
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

// True if the control messages of a received `message` are only TCP_CM_INQ: the bytes the
// kernel still holds for the socket after this read (gRPC asks for it with TCP_INQ and
// reads on while it is not 0). Unlike descriptors or credentials it belongs to no byte of
// the data, so such a read may be cut at a message end: the count stays the kernel's, and
// a program that reads on only while it is not 0 waits for the held bytes instead, which
// the wait reports readable, one message per turn as isolation means.
bool OnlyQueueLength(const struct msghdr* message) {
  for (const struct cmsghdr* c = CMSG_FIRSTHDR(message); c != nullptr;
       c = CMSG_NXTHDR(const_cast<struct msghdr*>(message), const_cast<struct cmsghdr*>(c))) {
    if (c->cmsg_level != IPPROTO_TCP || c->cmsg_type != TCP_CM_INQ) return false;
  }
  return true;
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

void NewTurn() {
  ++t_turn;
  t_request_fd = -1;
  t_deferred_count = 0;
}

void SentOn(int fd) {
  if (fd == t_request_fd) NewTurn();
}

namespace {

// A read of a request on `fd` (the side taken, nothing held) in a turn that already read
// another stream's: takes the kernel's bytes into the held bytes and tells the program
// there are none yet (EAGAIN), once per stream per turn. The next wait reports the stream
// readable (its held bytes) and the read after it gets them. Only a non-blocking read may
// say EAGAIN, so a blocking one is never deferred. True if it deferred.
bool DeferRead(uint8_t op, int fd, int flags, size_t capacity, const InputSide& side) {
  if (side.direction != 0 || t_request_fd < 0 || t_request_fd == fd || op == wire::kOpRecvmsg ||
      t_deferred_count == kDeferredPerTurn || DeferredThisTurn(fd)) {
    return false;
  }
  if ((flags & MSG_DONTWAIT) == 0 && (Real().fcntl(fd, F_GETFL) & O_NONBLOCK) == 0) return false;
  HeldBytes* held = side.held;
  if (!Reserve(held, capacity)) return false;
  ssize_t r = Real().recv(fd, held->data, capacity, MSG_DONTWAIT);
  // Nothing there, the end, or an error: the program's own read says so.
  if (r <= 0) return false;
  held->start = 0;
  held->length = uint32_t(r);
  StartHolding(fd);
  Count(&g_isolated_reads, 1);
  Count(&g_held_bytes, uint64_t(r));
  t_deferred[t_deferred_count++] = fd;
  return true;
}

}  // namespace

void IsolationCounters(uint64_t* isolated_reads, uint64_t* held_reads, uint64_t* held_bytes,
                       uint64_t* split_waits) {
  *isolated_reads = __atomic_load_n(&g_isolated_reads, __ATOMIC_RELAXED);
  *held_reads = __atomic_load_n(&g_held_reads, __ATOMIC_RELAXED);
  *held_bytes = __atomic_load_n(&g_held_bytes, __ATOMIC_RELAXED);
  *split_waits = SplitWaits();
}

void ResetIsolationAfterFork() {
  g_isolated_reads = g_held_reads = g_held_bytes = 0;
  ResetWaitsAfterFork();
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
        if (!wait_all) RefillHeld(fd, held);
      }
    }
    ClearReceiveDetails(message, length);
    if (logging) {
      int64_t exit = NowNs();
      LogCallWithPayload(op, fd, entry, exit, long(k), flags, nullptr, iov, iovcnt);
      if (!peek) FeedInputTaken(side, fd, entry, exit, nullptr, iov, iovcnt, k);
    }
    Count(&g_held_reads, 1);
    if (side.direction == 0 && !peek) t_request_fd = fd;
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

  if (!peek && !wait_all && logging && DeferRead(op, fd, flags, capacity, side)) {
    UnlockInput(side);
    LogCall(op, fd, entry, NowNs(), -EAGAIN, flags);
    *result = -1;
    errno = EAGAIN;
    return true;
  }

  // Nothing held: the real call, without the side taken (it may block).
  UnlockInput(side);
  ssize_t r = RealRead(op, fd, iov, iovcnt, flags, message, address, length);
  int error = errno;
  size_t got = r > 0 ? (size_t(r) < capacity ? size_t(r) : capacity) : 0;
  bool control =
      message != nullptr && message->msg_controllen > 0 && r >= 0 && !OnlyQueueLength(message);
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
        StartHolding(fd);
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
    if (taken && side.direction == 0) t_request_fd = fd;
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

namespace {

// What one drain takes from a TLS library at most (it reads a record, 16 KiB, per call).
constexpr size_t kDrainChunk = 16 * 1024 + 256;
constexpr size_t kMaxDrain = 1 << 20;

// Room for `more` bytes after the held ones, which are kept (moved to the front, or into a
// larger mapping).
bool ReserveMore(HeldBytes* held, size_t more) {
  size_t need = size_t(held->length) + more;
  if (need > 0xffffffffu) return false;
  if (held->data != nullptr && size_t(held->capacity) - held->start - held->length >= more)
    return true;
  if (held->data != nullptr && held->capacity >= need) {
    memmove(held->data, held->data + held->start, held->length);
    held->start = 0;
    return true;
  }
  size_t size = (need + 4095) & ~size_t(4095);
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return false;
  if (held->data != nullptr) {
    memcpy(memory, held->data + held->start, held->length);
    munmap(held->data, held->capacity);
  }
  held->data = static_cast<uint8_t*>(memory);
  held->capacity = uint32_t(size);
  held->start = 0;
  return true;
}

// Asked once per stream: a program sets O_NONBLOCK before its first read and keeps it (an
// fcntl per turn cost nginx over TLS about 3% of its requests a second).
bool NonBlocking(int fd, HeldBytes* held) {
  if (held->nonblocking < 0) held->nonblocking = (Real().fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
  return held->nonblocking != 0;
}

// Drains what the library has (its buffered plaintext, the kernel's records) into the held
// bytes of `fd`'s stream, with the side taken: the library's calls only read. Returns the reader's
// last answer: 0 if it would block, -1 if it ended otherwise, > 0 if it stopped at kMaxDrain.
long Drain(int fd, HeldBytes* held, const TlsReader& reader) {
  bool was_empty = held->length == 0;
  size_t drained = 0;
  long last = 0;
  while (drained < kMaxDrain && ReserveMore(held, kDrainChunk)) {
    last = reader.read(reader.context, held->data + held->start + held->length, kDrainChunk);
    if (last <= 0) break;
    held->length += uint32_t(last);
    drained += size_t(last);
  }
  if (held->length > 0 && was_empty) StartHolding(fd);
  if (drained > 0) Count(&g_held_bytes, drained);
  held->drained = held->length == 0 && last == 0;
  return last;
}

void Given(HeldBytes* held) {
  held->given_thread = &t_turn;
  held->given_turn = t_turn;
  held->drained = false;
}

}  // namespace

TlsRead IsolatedTlsRead(int fd, void* buffer, size_t n, const TlsReader& reader, size_t* bytes) {
  *bytes = 0;
  if (n == 0) return TlsRead::kNotIsolated;
  InputSide side;
  if (!LockInput(fd, &side)) return TlsRead::kNotIsolated;
  HeldBytes* held = side.held;
  bool given = held->given_thread == &t_turn && held->given_turn == t_turn;
  if (given && NonBlocking(fd, held)) {
    // This turn had its message of this stream: the program is told to wait. Held bytes,
    // or a library that said it had nothing (since this turn began), make that true;
    // otherwise the library is drained first, and if it has nothing, its answer is given.
    if (held->length == 0 && !held->drained) Drain(fd, held, reader);
    bool again = held->length > 0 || held->drained;
    if (held->length > 0) Count(&g_isolated_reads, 1);
    UnlockInput(side);
    return again ? TlsRead::kAgain : TlsRead::kLibrary;
  }
  if (held->length > 0) {
    const uint8_t* from = held->data + held->start;
    size_t available = held->length < n ? held->length : n;
    size_t k = InputBoundary(side, from, nullptr, 0, available);
    memcpy(buffer, from, k);
    held->start += uint32_t(k);
    held->length -= uint32_t(k);
    Given(held);
    if (held->length == 0) {
      held->start = 0;
      __atomic_sub_fetch(&g_held_streams, 1, __ATOMIC_RELAXED);
      // What came meanwhile, held too (RefillHeld's reason).
      if (NonBlocking(fd, held)) Drain(fd, held, reader);
    }
    Count(&g_held_reads, 1);
    UnlockInput(side);
    *bytes = k;
    return TlsRead::kBytes;
  }
  // Nothing held: the library's read, without the side taken (it may block).
  UnlockInput(side);
  long got = reader.read(reader.context, buffer, n);
  if (got <= 0) return TlsRead::kLibrary;
  *bytes = size_t(got);
  if (!LockInput(fd, &side)) return TlsRead::kBytes;
  held = side.held;
  if (held->length == 0) {
    size_t k = InputBoundary(side, buffer, nullptr, 0, size_t(got));
    if (k < size_t(got) && ReserveMore(held, size_t(got) - k)) {
      memcpy(held->data + held->start, static_cast<const uint8_t*>(buffer) + k, size_t(got) - k);
      held->length = uint32_t(size_t(got) - k);
      StartHolding(fd);
      Count(&g_isolated_reads, 1);
      Count(&g_held_bytes, size_t(got) - k);
      *bytes = k;
    }
  }
  Given(held);
  UnlockInput(side);
  return TlsRead::kBytes;
}

}  // namespace weft_preload
