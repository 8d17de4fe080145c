#include "testbed/accept.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace weft::testbed {

AcceptFailure ClassifyAcceptError(int err) {
  switch (err) {
    case EINTR:
    case EAGAIN:
    case ECONNABORTED:
    // Linux hands pending network errors of the new connection to accept (accept(2)).
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return AcceptFailure::kRetry;
    case EBADF:
    case EINVAL:
    case ENOTSOCK:
    case EOPNOTSUPP:
    case EFAULT:
      return AcceptFailure::kFatal;
    default:  // EMFILE, ENFILE, ENOBUFS, ENOMEM, and whatever else: wait, never spin
      return AcceptFailure::kBackOff;
  }
}

TimeNs AcceptBackoff::Next() {
  TimeNs pause = next_;
  next_ = std::min(next_ * 2, kLongest);
  return pause;
}

Result<int> AcceptConnection(int listen_fd, std::string_view who, AcceptBackoff& backoff) {
  while (true) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      if (backoff.pausing()) fmt::print(stderr, "{}: accepting connections again\n", who);
      backoff.Reset();
      return fd;
    }
    int err = errno;
    switch (ClassifyAcceptError(err)) {
      case AcceptFailure::kRetry:
        break;
      case AcceptFailure::kFatal:
        return Status::IoError("accept: {}", std::strerror(err));
      case AcceptFailure::kBackOff:
        if (!backoff.pausing()) {
          fmt::print(stderr, "{}: accept: {}; pausing until connections close\n", who,
                     std::strerror(err));
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(backoff.Next()));
        break;
    }
  }
}

}  // namespace weft::testbed
