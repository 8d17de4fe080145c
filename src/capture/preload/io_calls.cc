// Wrappers for the calls that move bytes (read/write, send/recv families, sendfile) and
// wait for them (poll, select, epoll). The common path of the whole library: a table
// lookup, two vDSO clock readings around the real call, one 32-byte record.
//
// Reads and writes are logged only on sockets and pipes (WAP5 §3: "all socket-API
// activity"; file I/O is counted, LibSockCap's 0.02 us path). Datagram calls carry an
// XXH3-64 of the datagram (WAP5 §3, Table 1 "checksum") and its peer; the first datagram
// sent on a socket nobody bound also names the socket, since the kernel bound it then.
#include <errno.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture/preload/isolation.h"
#include "capture/preload/protocol_streams.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

long ResultOf(long r, int error) { return r < 0 ? -error : r; }

// Kind of a descriptor table entry, without its flag bits.
uint8_t KindOf(uint8_t entry) { return entry & uint8_t(~kFlagBits); }
// A stream read that event isolation handles (isolation.h): tested with the entry the
// wrapper already loaded, so streams without a processor pay one more bit test. Not on a
// TLS socket: its bytes are ciphertext (the plaintext reads are the TLS library's).
bool Isolated(uint8_t entry) {
  return __builtin_expect((entry & (kProtocolBit | kTlsBit)) == kProtocolBit, 0) && Isolating() &&
         !IsDatagramKind(KindOf(entry));
}

// After a datagram went out on a socket without a name yet: name it (the kernel picked
// its port at this send).
void NameIfNeeded(uint8_t op, int fd, uint8_t kind, int64_t time) {
  if (!FdNamed(fd)) LogEndpoint(op, fd, kind, nullptr, 0, time);
}

// One call on a stream or datagram descriptor that moved `data` (or `iov`).
void LogTransfer(uint8_t op, int fd, uint8_t kind, int64_t entry, long r, int error, int arg,
                 const void* data, const struct iovec* iov, int iovcnt, const struct sockaddr* peer,
                 socklen_t peer_length, bool sending) {
  int64_t exit = NowNs();
  if (IsDatagramKind(kind)) {
    LogDatagram(op, fd, entry, exit, ResultOf(r, error), arg, data, iov, iovcnt,
                r > 0 ? size_t(r) : 0, peer, peer_length);
    if (sending && r >= 0) NameIfNeeded(op, fd, kind, exit);
    if (r > 0 && kind == wire::kKindUdp && ProtocolsEnabled()) {
      FeedDatagram(fd, sending, entry, exit, data, iov, iovcnt, size_t(r), peer, peer_length);
    }
  } else {
    if (__builtin_expect((FdEntry(fd) & kTlsBit) != 0, 0)) {
      // Ciphertext under a TLS library's calls (tls_calls.cc): not the connection's data.
      LogCall(wire::kOpTlsTransport, fd, entry, exit, ResultOf(r, error), op);
      return;
    }
    LogCallWithPayload(op, fd, entry, exit, ResultOf(r, error), arg, data, iov, iovcnt);
    if (__builtin_expect(FdHasProtocol(fd), 0) && r > 0) {
      // recv, recvfrom, recvmsg: arg is the flags. A peek moves nothing (the next receive
      // moves the bytes again); MSG_TRUNC on a stream drops them unseen.
      bool flags_arg = op == wire::kOpRecv || op == wire::kOpRecvfrom || op == wire::kOpRecvmsg;
      if (flags_arg && (arg & MSG_PEEK) != 0) return;
      if (flags_arg && (arg & MSG_TRUNC) != 0) {
        AbandonStream(fd, false);
        return;
      }
      FeedStream(fd, sending, entry, exit, data, iov, iovcnt, size_t(r));
    }
  }
}

ssize_t Read(int fd, void* buffer, size_t n) {
  uint8_t e = FdEntry(fd);
  uint8_t kind = KindOf(e);
  if (Isolated(e)) {
    struct iovec one = {buffer, n};
    ssize_t r;
    if (IsolatedRead(wire::kOpRead, fd, &one, 1, 0, nullptr, nullptr, nullptr, &r)) return r;
  }
  if (kind == 0 || !Logging()) {
    if (kind == 0) CountUntracedIo();
    return Real().read(fd, buffer, n);
  }
  if (kind >= wire::kKindEventfd) return WakeRead(fd, buffer, n);
  int64_t entry = BeginCall();
  ssize_t r = Real().read(fd, buffer, n);
  int error = errno;
  LogTransfer(wire::kOpRead, fd, kind, entry, r, error, 0, buffer, nullptr, 0, nullptr, 0, false);
  errno = error;
  return r;
}

ssize_t RecvFrom(int fd, void* buffer, size_t n, int flags, struct sockaddr* address,
                 socklen_t* length, uint8_t op = wire::kOpRecvfrom) {
  uint8_t e = FdEntry(fd);
  uint8_t kind = KindOf(e);
  if (Isolated(e)) {
    struct iovec one = {buffer, n};
    ssize_t r;
    if (IsolatedRead(op, fd, &one, 1, flags, nullptr, address, length, &r)) return r;
  }
  if (kind == 0 || !Logging()) return Real().recvfrom(fd, buffer, n, flags, address, length);
  // A datagram's source is recorded even when the program does not ask for it.
  struct sockaddr_storage own;
  socklen_t own_length = sizeof own;
  bool borrow = IsDatagramKind(kind) && (address == nullptr || length == nullptr);
  struct sockaddr* source = borrow ? reinterpret_cast<sockaddr*>(&own) : address;
  socklen_t* source_length = borrow ? &own_length : length;
  socklen_t given = source_length != nullptr ? *source_length : 0;
  int64_t entry = BeginCall();
  ssize_t r = Real().recvfrom(fd, buffer, n, flags, source, source_length);
  int error = errno;
  bool source_whole = r >= 0 && source != nullptr && *source_length <= given;
  LogTransfer(op, fd, kind, entry, r < 0 ? r : long(size_t(r) < n ? r : long(n)), error, flags,
              buffer, nullptr, 0, source_whole ? source : nullptr,
              source_whole ? *source_length : 0, false);
  errno = error;
  return r;
}

ssize_t Recv(int fd, void* buffer, size_t n, int flags) {
  uint8_t e = FdEntry(fd);
  uint8_t kind = KindOf(e);
  if (Isolated(e)) {
    struct iovec one = {buffer, n};
    ssize_t r;
    if (IsolatedRead(wire::kOpRecv, fd, &one, 1, flags, nullptr, nullptr, nullptr, &r)) return r;
  }
  if (kind == 0 || !Logging()) return Real().recv(fd, buffer, n, flags);
  // A datagram's source is recorded even from recv (it is recvfrom without an address).
  if (IsDatagramKind(kind)) return RecvFrom(fd, buffer, n, flags, nullptr, nullptr, wire::kOpRecv);
  int64_t entry = BeginCall();
  ssize_t r = Real().recv(fd, buffer, n, flags);
  int error = errno;
  size_t got = r > 0 ? (size_t(r) < n ? size_t(r) : n) : 0;  // MSG_TRUNC may return more
  LogTransfer(wire::kOpRecv, fd, kind, entry, r < 0 ? r : long(got), error, flags, buffer, nullptr,
              0, nullptr, 0, false);
  errno = error;
  return r;
}

ssize_t Send(int fd, const void* buffer, size_t n, int flags) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) return Real().send(fd, buffer, n, flags);
  int64_t entry = BeginCall();
  ssize_t r = Real().send(fd, buffer, n, flags);
  int error = errno;
  LogTransfer(wire::kOpSend, fd, kind, entry, r, error, flags, buffer, nullptr, 0, nullptr, 0,
              true);
  errno = error;
  return r;
}

}  // namespace

WEFT_EXPORT ssize_t read(int fd, void* buffer, size_t n) { return Read(fd, buffer, n); }

WEFT_EXPORT ssize_t __read_chk(int fd, void* buffer, size_t n, size_t buffer_size) {
  if (n > buffer_size) return Real().__read_chk(fd, buffer, n, buffer_size);  // aborts
  return Read(fd, buffer, n);
}

WEFT_EXPORT ssize_t readv(int fd, const struct iovec* iov, int iovcnt) {
  uint8_t e = FdEntry(fd);
  uint8_t kind = KindOf(e);
  if (Isolated(e) && iovcnt > 0) {
    ssize_t r;
    if (IsolatedRead(wire::kOpReadv, fd, iov, iovcnt, 0, nullptr, nullptr, nullptr, &r)) return r;
  }
  if (kind == 0 || !Logging()) {
    if (kind == 0) CountUntracedIo();
    return Real().readv(fd, iov, iovcnt);
  }
  int64_t entry = BeginCall();
  ssize_t r = Real().readv(fd, iov, iovcnt);
  int error = errno;
  LogTransfer(wire::kOpReadv, fd, kind, entry, r, error, 0, nullptr, iov, iovcnt, nullptr, 0,
              false);
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t write(int fd, const void* buffer, size_t n) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) {
    if (kind == 0) CountUntracedIo();
    return Real().write(fd, buffer, n);
  }
  if (kind >= wire::kKindEventfd) return WakeWrite(fd, buffer, n);
  int64_t entry = BeginCall();
  ssize_t r = Real().write(fd, buffer, n);
  int error = errno;
  LogTransfer(wire::kOpWrite, fd, kind, entry, r, error, 0, buffer, nullptr, 0, nullptr, 0, true);
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) {
    if (kind == 0) CountUntracedIo();
    return Real().writev(fd, iov, iovcnt);
  }
  int64_t entry = BeginCall();
  ssize_t r = Real().writev(fd, iov, iovcnt);
  int error = errno;
  LogTransfer(wire::kOpWritev, fd, kind, entry, r, error, 0, nullptr, iov, iovcnt, nullptr, 0,
              true);
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t send(int fd, const void* buffer, size_t n, int flags) {
  return Send(fd, buffer, n, flags);
}

WEFT_EXPORT ssize_t sendto(int fd, const void* buffer, size_t n, int flags,
                           const struct sockaddr* address, socklen_t length) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) return Real().sendto(fd, buffer, n, flags, address, length);
  int64_t entry = BeginCall();
  ssize_t r = Real().sendto(fd, buffer, n, flags, address, length);
  int error = errno;
  LogTransfer(wire::kOpSendto, fd, kind, entry, r, error, flags, buffer, nullptr, 0, address,
              length, true);
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t sendmsg(int fd, const struct msghdr* message, int flags) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) return Real().sendmsg(fd, message, flags);
  int64_t entry = BeginCall();
  ssize_t r = Real().sendmsg(fd, message, flags);
  int error = errno;
  LogTransfer(wire::kOpSendmsg, fd, kind, entry, r, error, flags, nullptr, message->msg_iov,
              int(message->msg_iovlen), static_cast<const sockaddr*>(message->msg_name),
              message->msg_namelen, true);
  errno = error;
  return r;
}

WEFT_EXPORT int sendmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) return Real().sendmmsg(fd, messages, count, flags);
  int64_t entry = BeginCall();
  int r = Real().sendmmsg(fd, messages, count, flags);
  int error = errno;
  if (r < 0) {
    LogCall(wire::kOpSendmmsg, fd, entry, NowNs(), -error, 0);
  }
  for (int i = 0; i < r; ++i) {  // one record per message sent
    const msghdr& m = messages[i].msg_hdr;
    LogTransfer(wire::kOpSendmmsg, fd, kind, entry, long(messages[i].msg_len), 0, i, nullptr,
                m.msg_iov, int(m.msg_iovlen), static_cast<const sockaddr*>(m.msg_name),
                m.msg_namelen, true);
  }
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t recv(int fd, void* buffer, size_t n, int flags) {
  return Recv(fd, buffer, n, flags);
}

WEFT_EXPORT ssize_t __recv_chk(int fd, void* buffer, size_t n, size_t buffer_size, int flags) {
  if (n > buffer_size) return Real().__recv_chk(fd, buffer, n, buffer_size, flags);  // aborts
  return Recv(fd, buffer, n, flags);
}

WEFT_EXPORT ssize_t recvfrom(int fd, void* buffer, size_t n, int flags, struct sockaddr* address,
                             socklen_t* length) {
  return RecvFrom(fd, buffer, n, flags, address, length);
}

WEFT_EXPORT ssize_t __recvfrom_chk(int fd, void* buffer, size_t n, size_t buffer_size, int flags,
                                   struct sockaddr* address, socklen_t* length) {
  if (n > buffer_size) {
    return Real().__recvfrom_chk(fd, buffer, n, buffer_size, flags, address, length);  // aborts
  }
  return RecvFrom(fd, buffer, n, flags, address, length);
}

WEFT_EXPORT ssize_t recvmsg(int fd, struct msghdr* message, int flags) {
  uint8_t e = FdEntry(fd);
  uint8_t kind = KindOf(e);
  if (Isolated(e) && message->msg_iovlen > 0 && message->msg_iovlen <= 1024) {
    ssize_t r;
    if (IsolatedRead(wire::kOpRecvmsg, fd, message->msg_iov, int(message->msg_iovlen), flags,
                     message, nullptr, nullptr, &r)) {
      return r;
    }
  }
  if (kind == 0 || !Logging()) return Real().recvmsg(fd, message, flags);
  // A datagram's source is recorded even when the program does not ask for it; the
  // program's msghdr is given back as it was.
  struct sockaddr_storage own;
  bool borrow = IsDatagramKind(kind) && message->msg_name == nullptr;
  if (borrow) {
    message->msg_name = &own;
    message->msg_namelen = sizeof own;
  }
  socklen_t given = message->msg_namelen;
  int64_t entry = BeginCall();
  ssize_t r = Real().recvmsg(fd, message, flags);
  int error = errno;
  bool source_whole = r >= 0 && message->msg_name != nullptr && message->msg_namelen <= given;
  LogTransfer(wire::kOpRecvmsg, fd, kind, entry, r, error, flags, nullptr, message->msg_iov,
              int(message->msg_iovlen),
              source_whole ? static_cast<const sockaddr*>(message->msg_name) : nullptr,
              source_whole ? message->msg_namelen : 0, false);
  if (borrow) {
    message->msg_name = nullptr;
    message->msg_namelen = 0;
  }
  errno = error;
  return r;
}

WEFT_EXPORT int recvmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags,
                         struct timespec* timeout) {
  uint8_t kind = FdKind(fd);
  if (kind == 0 || !Logging()) return Real().recvmmsg(fd, messages, count, flags, timeout);
  int64_t entry = BeginCall();
  int r = Real().recvmmsg(fd, messages, count, flags, timeout);
  int error = errno;
  if (r < 0) LogCall(wire::kOpRecvmmsg, fd, entry, NowNs(), -error, 0);
  for (int i = 0; i < r; ++i) {  // one record per message received
    const msghdr& m = messages[i].msg_hdr;
    LogTransfer(wire::kOpRecvmmsg, fd, kind, entry, long(messages[i].msg_len), 0, i, nullptr,
                m.msg_iov, int(m.msg_iovlen), static_cast<const sockaddr*>(m.msg_name),
                m.msg_name != nullptr ? m.msg_namelen : 0, false);
  }
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) noexcept {
  uint8_t kind = FdKind(out_fd);
  if (kind == 0 || !Logging()) return Real().sendfile(out_fd, in_fd, offset, count);
  int64_t entry = BeginCall();
  ssize_t r = Real().sendfile(out_fd, in_fd, offset, count);
  int error = errno;
  if (__builtin_expect((FdEntry(out_fd) & kTlsBit) != 0, 0)) {
    // SSL_sendfile (kernel TLS): plaintext the library never sees as a record call.
    LogCall(wire::kOpTlsTransport, out_fd, entry, NowNs(), ResultOf(r, error), wire::kOpSendfile);
    if (r > 0 && FdHasProtocol(out_fd)) AbandonStream(out_fd, true);
    errno = error;
    return r;
  }
  LogCall(wire::kOpSendfile, out_fd, entry, NowNs(), ResultOf(r, error), in_fd);
  if (r > 0 && FdHasProtocol(out_fd)) AbandonStream(out_fd, true);  // bytes the library never sees
  errno = error;
  return r;
}

WEFT_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t* offset, size_t count) noexcept {
  return sendfile(out_fd, in_fd, offset, count);
}

// Waiting: logged with the ready count, so reconcile can tell an event loop's wake-ups
// (BorderPatrol §5.4 needs them for event isolation).
#define WEFT_LOG_WAIT(op, fd, arg, call)                    \
  if (!Logging()) return call;                              \
  int64_t entry = NowNs();                                  \
  int r = call;                                             \
  int error = errno;                                        \
  LogCall(op, fd, entry, NowNs(), ResultOf(r, error), arg); \
  errno = error;                                            \
  return r

// With isolation on, a descriptor with held bytes is readable whatever the kernel says
// (isolation.h); the Isolated* calls do the real wait themselves.
WEFT_EXPORT int poll(struct pollfd* fds, nfds_t n, int timeout) {
  WEFT_LOG_WAIT(wire::kOpPoll, -1, int(n),
                Isolating() ? IsolatedPoll(fds, n, nullptr, nullptr, false, timeout)
                            : Real().poll(fds, n, timeout));
}

WEFT_EXPORT int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout,
                      const sigset_t* mask) {
  WEFT_LOG_WAIT(wire::kOpPoll, -1, int(n),
                Isolating() ? IsolatedPoll(fds, n, timeout, mask, true, 0)
                            : Real().ppoll(fds, n, timeout, mask));
}

WEFT_EXPORT int select(int n, fd_set* readable, fd_set* writable, fd_set* failed,
                       struct timeval* timeout) {
  WEFT_LOG_WAIT(
      wire::kOpSelect, -1, n,
      Isolating() ? IsolatedSelect(n, readable, writable, failed, timeout, nullptr, nullptr, false)
                  : Real().select(n, readable, writable, failed, timeout));
}

WEFT_EXPORT int pselect(int n, fd_set* readable, fd_set* writable, fd_set* failed,
                        const struct timespec* timeout, const sigset_t* mask) {
  WEFT_LOG_WAIT(wire::kOpSelect, -1, n,
                Isolating()
                    ? IsolatedSelect(n, readable, writable, failed, nullptr, timeout, mask, true)
                    : Real().pselect(n, readable, writable, failed, timeout, mask));
}

WEFT_EXPORT int epoll_wait(int epfd, struct epoll_event* events, int max, int timeout) {
  WEFT_LOG_WAIT(wire::kOpEpollWait, epfd, 0,
                Isolating() ? IsolatedEpollWait(epfd, events, max, timeout, nullptr, false)
                            : Real().epoll_wait(epfd, events, max, timeout));
}

WEFT_EXPORT int epoll_pwait(int epfd, struct epoll_event* events, int max, int timeout,
                            const sigset_t* mask) {
  WEFT_LOG_WAIT(wire::kOpEpollWait, epfd, 0,
                Isolating() ? IsolatedEpollWait(epfd, events, max, timeout, mask, true)
                            : Real().epoll_pwait(epfd, events, max, timeout, mask));
}

// Registrations are noted only with isolation on: epoll_wait needs them to report held
// bytes with the program's epoll_data.
WEFT_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept {
  int r = Real().epoll_ctl(epfd, op, fd, event);
  if (Isolating() && r == 0) {
    int error = errno;
    NoteEpollCtl(epfd, op, fd, event);
    errno = error;
  }
  return r;
}
