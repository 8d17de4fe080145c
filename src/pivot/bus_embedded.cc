// The embedded bus's socket helpers (bus_embedded.h).
#include "pivot/bus_embedded.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weft::pivot::embedded {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status MakeAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    return Status::InvalidArgument("unix:{}: a socket path must have 1 to {} bytes", path,
                                   sizeof(addr->sun_path) - 1);
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return Status::Ok();
}

int ConnectTo(const sockaddr_un& addr, int* error) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = errno;
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteSome(int fd, std::string* out, size_t* offset) {
  while (*offset < out->size()) {
    ssize_t n = send(fd, out->data() + *offset, out->size() - *offset, MSG_NOSIGNAL);
    if (n > 0) {
      *offset += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  out->clear();
  *offset = 0;
  return true;
}

bool ReadSome(int fd, FrameDecoder* decoder) {
  char chunk[kReadChunk];
  for (int rounds = 0; rounds < 16; ++rounds) {  // bounded: let the other sockets in
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      decoder->Append(std::string_view(chunk, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < sizeof(chunk)) return true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

}  // namespace weft::pivot::embedded
