// Accepting connections without spinning: what a testbed server does when accept4 fails.
// A peer that gave up before its connection was taken, or a signal, is retried at once;
// running out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) leaves the
// connection queued, so retrying at once would spin on it: the server pauses, doubling
// the pause up to a second, until connections close; a broken listening socket (EBADF,
// EINVAL, ENOTSOCK, ...) never recovers, and the server stops.
#pragma once

#include <string_view>

#include "core/status.h"
#include "core/time.h"

namespace weft::testbed {

enum class AcceptFailure {
  kRetry,    // retry at once
  kBackOff,  // retry after a pause
  kFatal,    // the listening socket is unusable
};

// What an accept4 failure with `err` (an errno value) calls for. EAGAIN is kRetry: a
// blocking socket reports it only when a receive timeout is set, and a non-blocking
// caller checks for it before asking.
AcceptFailure ClassifyAcceptError(int err);

// Pauses after out-of-resource failures: 10 ms, doubling to 1 s, back to 10 ms after a
// connection was accepted.
class AcceptBackoff {
 public:
  static constexpr TimeNs kFirst = 10 * kMillisecond;
  static constexpr TimeNs kLongest = kSecond;
  // The pause before the next try; the next one is twice as long.
  TimeNs Next();
  void Reset() { next_ = kFirst; }
  bool pausing() const { return next_ != kFirst; }

 private:
  TimeNs next_ = kFirst;
};

// Accepts one connection on the blocking listening socket `listen_fd` (SOCK_CLOEXEC),
// retrying or pausing as ClassifyAcceptError says and telling stderr once per run of
// pauses, with `who` (the server's name) in front. An error only when the listening
// socket is unusable.
Result<int> AcceptConnection(int listen_fd, std::string_view who, AcceptBackoff& backoff);

}  // namespace weft::testbed
