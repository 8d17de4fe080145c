// Wrappers for the calls that create, name, copy and end descriptors: socket, socketpair,
// pipe, connect, accept, bind, listen, close, shutdown, dup*, fcntl(F_DUPFD*).
//
// WAP5 §3 (LibSockCap) records "the peer name even when accept does not ask for it, the
// local name bound when connect is called, and the number assigned to a dynamic listening
// port not specified with bind": here each of these calls is followed by an endpoint
// record (runtime.h LogEndpoint). These are connection-level calls, so the extra system
// calls (getsockname, getpeername, fstat, SO_PEERCRED) are paid once per connection.
// What the program sees is unchanged: same results, same errno.
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture/preload/isolation.h"
#include "capture/preload/log_file.h"
#include "capture/preload/protocol_streams.h"
#include "capture/preload/real.h"
#include "capture/preload/runtime.h"

using namespace weft_preload;

namespace {

long ResultOf(long r, int error) { return r < 0 ? -error : r; }

// The kind of a socket the table does not know yet (opened before logging started).
uint8_t KindOrAsk(int fd) {
  uint8_t kind = FdKind(fd);
  if (kind != 0) return kind;
  int domain = 0, type = 0;
  socklen_t length = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) return 0;
  length = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return 0;
  kind = SocketKindOf(domain, type);
  SetFdKind(fd, kind);
  return kind;
}

int Accept(int fd, struct sockaddr* address, socklen_t* length, int flags, bool four) {
  if (!Logging()) {
    return four ? Real().accept4(fd, address, length, flags) : Real().accept(fd, address, length);
  }
  uint8_t kind = KindOrAsk(fd);
  // Ask for the peer even when the program does not (WAP5 §3); what the program passed is
  // filled exactly as the kernel would.
  struct sockaddr_storage peer;
  socklen_t peer_length = sizeof peer;
  int64_t entry = NowNs();
  int r = four ? Real().accept4(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length, flags)
               : Real().accept(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length);
  int error = errno;
  int64_t exit = NowNs();
  if (r >= 0 && address != nullptr && length != nullptr) {
    socklen_t given = *length;
    memcpy(address, &peer, given < peer_length ? given : peer_length);
    *length = peer_length;
  }
  LogCall(wire::kOpAccept, fd, entry, exit, ResultOf(r, error), flags);
  if (r >= 0) {
    if (HasProtocolStream(r)) DetachProtocol(r);  // a number closed behind the library's back
    SetFdKind(r, kind);
    EndpointNames names;
    LogEndpoint(wire::kOpAccept, r, kind, reinterpret_cast<sockaddr*>(&peer), peer_length, exit,
                &names);
    // The server side: the listener's port or path says which protocol it serves.
    if (ProtocolsEnabled()) {
      AttachProtocol(r, kind, false, names.local.port, names.local_path, names.local.path_length);
    }
  }
  errno = error;
  return r;
}

int MakePair(uint8_t op, uint8_t kind, int* fds, int r, int error, int64_t entry) {
  int64_t exit = NowNs();
  if (r == 0) {
    SetFdKind(fds[0], kind);
    SetFdKind(fds[1], kind);
  }
  LogCall(op, r == 0 ? fds[0] : -1, entry, exit, ResultOf(r == 0 ? fds[0] : r, error),
          r == 0 ? fds[1] : -1);
  if (r == 0) LogPairEndpoints(op, fds, kind, exit);
  errno = error;
  return r;
}

// dup, dup2, dup3 and fcntl(F_DUPFD*): the new descriptor is a copy of the old one's
// entry (kind and name); one that was a traced socket and is replaced is thereby closed.
int Duplicated(int old_fd, int new_fd_before, int r, int error, int64_t entry, int variant) {
  int64_t exit = NowNs();
  uint8_t entry_old = FdEntry(old_fd);
  bool replaced = new_fd_before >= 0 && new_fd_before != old_fd && FdKind(new_fd_before) != 0;
  if (r >= 0 && r != old_fd) {
    // The new descriptor shares the old one's open file description, and with it the
    // protocol stream; one that dup2 replaced drops its own first, and its registrations
    // (the kernel closed it).
    if (Isolating()) ForgetWaits(r);
    if (HasProtocolStream(r)) DetachProtocol(r);
    if (HasProtocolStream(old_fd)) ShareProtocol(old_fd, r);
    SetFdKind(r, entry_old);
  }
  if ((entry_old != 0 || replaced) && Logging()) {
    LogCall(wire::kOpDup, old_fd, entry, exit, ResultOf(r, error), variant);
  }
  errno = error;
  return r;
}

}  // namespace

WEFT_EXPORT int socket(int domain, int type, int protocol) noexcept {
  if (!Logging()) return Real().socket(domain, type, protocol);
  int64_t entry = NowNs();
  int r = Real().socket(domain, type, protocol);
  int error = errno;
  uint8_t kind = SocketKindOf(domain, type);
  if (r >= 0) SetFdKind(r, kind);
  LogCall(wire::kOpSocket, r, entry, NowNs(), ResultOf(r, error), kind);
  errno = error;
  return r;
}

WEFT_EXPORT int socketpair(int domain, int type, int protocol, int fds[2]) noexcept {
  if (!Logging()) return Real().socketpair(domain, type, protocol, fds);
  int64_t entry = NowNs();
  int r = Real().socketpair(domain, type, protocol, fds);
  return MakePair(wire::kOpSocketpair, SocketKindOf(domain, type), fds, r, errno, entry);
}

WEFT_EXPORT int pipe(int fds[2]) noexcept {
  if (!Logging()) return Real().pipe(fds);
  int64_t entry = NowNs();
  int r = Real().pipe(fds);
  return MakePair(wire::kOpPipe, wire::kKindPipe, fds, r, errno, entry);
}

WEFT_EXPORT int pipe2(int fds[2], int flags) noexcept {
  if (!Logging()) return Real().pipe2(fds, flags);
  int64_t entry = NowNs();
  int r = Real().pipe2(fds, flags);
  return MakePair(wire::kOpPipe, wire::kKindPipe, fds, r, errno, entry);
}

WEFT_EXPORT int connect(int fd, const struct sockaddr* address, socklen_t length) {
  if (!Logging()) return Real().connect(fd, address, length);
  uint8_t kind = KindOrAsk(fd);
  int64_t entry = NowNs();
  int r = Real().connect(fd, address, length);
  int error = errno;
  int64_t exit = NowNs();
  LogCall(wire::kOpConnect, fd, entry, exit, ResultOf(r, error), 0);
  // A non-blocking connect (EINPROGRESS) or an interrupted one (EINTR) goes on in the
  // kernel: the local name is already bound, so it is recorded now.
  if (kind != 0 && (r == 0 || error == EINPROGRESS || error == EINTR)) {
    EndpointNames names;
    LogEndpoint(wire::kOpConnect, fd, kind, address, length, exit, &names);
    // The client side: the port or path connected to says which protocol it speaks.
    if (ProtocolsEnabled()) {
      if (kind == wire::kKindUdp) {
        AttachDatagramProtocol(fd, names.peer.port, false);
      } else {
        AttachProtocol(fd, kind, true, names.peer.port, names.peer_path, names.peer.path_length);
      }
    }
  }
  errno = error;
  return r;
}

WEFT_EXPORT int accept(int fd, struct sockaddr* address, socklen_t* length) {
  return Accept(fd, address, length, 0, false);
}

WEFT_EXPORT int accept4(int fd, struct sockaddr* address, socklen_t* length, int flags) {
  return Accept(fd, address, length, flags, true);
}

WEFT_EXPORT int bind(int fd, const struct sockaddr* address, socklen_t length) noexcept {
  if (!Logging()) return Real().bind(fd, address, length);
  uint8_t kind = KindOrAsk(fd);
  int64_t entry = NowNs();
  int r = Real().bind(fd, address, length);
  int error = errno;
  int64_t exit = NowNs();
  LogCall(wire::kOpBind, fd, entry, exit, ResultOf(r, error), 0);
  if (r == 0 && kind != 0) LogEndpoint(wire::kOpBind, fd, kind, nullptr, 0, exit);
  if (r == 0 && kind == wire::kKindUdp && ProtocolsEnabled()) {
    AttachDatagramProtocol(fd, PortOf(address, length), true);  // a DNS server's socket
  }
  errno = error;
  return r;
}

WEFT_EXPORT int listen(int fd, int backlog) noexcept {
  if (!Logging()) return Real().listen(fd, backlog);
  uint8_t kind = KindOrAsk(fd);
  int64_t entry = NowNs();
  int r = Real().listen(fd, backlog);
  int error = errno;
  int64_t exit = NowNs();
  LogCall(wire::kOpListen, fd, entry, exit, ResultOf(r, error), backlog);
  // The port the kernel chose if there was no bind.
  if (r == 0 && kind != 0) LogEndpoint(wire::kOpListen, fd, kind, nullptr, 0, exit);
  errno = error;
  return r;
}

WEFT_EXPORT int close(int fd) {
  KeepLogFdFrom(fd);
  if (Isolating()) ForgetWaits(fd);  // its registrations (isolation.h)
  uint8_t kind = FdKind(fd);
  if (kind == 0) return Real().close(fd);
  // Forget the descriptor before the kernel may hand its number to another thread.
  SetFdKind(fd, 0);
  if (HasProtocolStream(fd)) DetachProtocol(fd);
  if (!Logging()) return Real().close(fd);
  int64_t entry = NowNs();
  int r = Real().close(fd);
  int error = errno;
  LogCall(wire::kOpClose, fd, entry, NowNs(), ResultOf(r, error), 0);
  errno = error;
  return r;
}

WEFT_EXPORT int shutdown(int fd, int how) noexcept {
  if (FdKind(fd) == 0 || !Logging()) return Real().shutdown(fd, how);
  int64_t entry = NowNs();
  int r = Real().shutdown(fd, how);
  int error = errno;
  LogCall(wire::kOpShutdown, fd, entry, NowNs(), ResultOf(r, error), how);
  errno = error;
  return r;
}

WEFT_EXPORT int dup(int fd) noexcept {
  int64_t entry = NowNs();
  int r = Real().dup(fd);
  return Duplicated(fd, -1, r, errno, entry, 0);
}

WEFT_EXPORT int dup2(int fd, int new_fd) noexcept {
  KeepLogFdFrom(new_fd);
  int64_t entry = NowNs();
  int r = Real().dup2(fd, new_fd);
  return Duplicated(fd, new_fd, r, errno, entry, 1);
}

WEFT_EXPORT int dup3(int fd, int new_fd, int flags) noexcept {
  KeepLogFdFrom(new_fd);
  int64_t entry = NowNs();
  int r = Real().dup3(fd, new_fd, flags);
  return Duplicated(fd, new_fd, r, errno, entry, 2);
}

// fcntl's third argument is an int or a pointer depending on the command; like the C
// library itself, pass it on as a pointer-sized value.
WEFT_EXPORT int fcntl(int fd, int command, ...) {
  va_list args;
  va_start(args, command);
  void* argument = va_arg(args, void*);
  va_end(args);
  if (command != F_DUPFD && command != F_DUPFD_CLOEXEC) return Real().fcntl(fd, command, argument);
  int64_t entry = NowNs();
  int r = Real().fcntl(fd, command, argument);
  return Duplicated(fd, -1, r, errno, entry, 3);
}

WEFT_EXPORT int fcntl64(int fd, int command, ...) {
  va_list args;
  va_start(args, command);
  void* argument = va_arg(args, void*);
  va_end(args);
  return fcntl(fd, command, argument);
}
