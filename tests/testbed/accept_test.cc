// Accepting connections without spinning: which accept(2) failures are retried at once,
// which pause the server, and which stop it.
#include "testbed/accept.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "testbed/runner.h"
#include "testbed/wire.h"

namespace weft::testbed {
namespace {

TEST(AcceptTest, ClassifiesFailures) {
  // The peer gave up, a signal, or a network error of the new connection: retry at once.
  for (int err : {EINTR, EAGAIN, ECONNABORTED, EPROTO, ENETUNREACH}) {
    EXPECT_EQ(ClassifyAcceptError(err), AcceptFailure::kRetry) << err;
  }
  // Out of descriptors or memory: the connection stays queued, so retrying would spin.
  for (int err : {EMFILE, ENFILE, ENOBUFS, ENOMEM}) {
    EXPECT_EQ(ClassifyAcceptError(err), AcceptFailure::kBackOff) << err;
  }
  for (int err : {EBADF, EINVAL, ENOTSOCK, EOPNOTSUPP}) {
    EXPECT_EQ(ClassifyAcceptError(err), AcceptFailure::kFatal) << err;
  }
}

TEST(AcceptTest, BackoffDoublesUpToASecondAndResets) {
  AcceptBackoff backoff;
  EXPECT_FALSE(backoff.pausing());
  TimeNs expected = 10 * kMillisecond;
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(backoff.Next(), expected);
    expected = std::min(expected * 2, kSecond);
  }
  EXPECT_EQ(backoff.Next(), kSecond);
  EXPECT_TRUE(backoff.pausing());
  backoff.Reset();
  EXPECT_FALSE(backoff.pausing());
  EXPECT_EQ(backoff.Next(), 10 * kMillisecond);
}

// A listening socket that can never accept stops the server at once instead of spinning.
TEST(AcceptTest, BrokenListeningSocketIsAnErrorNotASpin) {
  AcceptBackoff backoff;
  int not_listening = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(not_listening, 0);
  Result<int> fd = AcceptConnection(not_listening, "test", backoff);
  EXPECT_FALSE(fd.ok());
  close(not_listening);
  fd = AcceptConnection(not_listening, "test", backoff);  // closed: EBADF
  EXPECT_FALSE(fd.ok());
}

TEST(AcceptTest, AcceptsAPendingConnection) {
  uint16_t port = 0;
  Result<int> listener = BindLoopback(0, false, &port);
  ASSERT_TRUE(listener.ok()) << listener.status().message();
  Result<std::unique_ptr<Conn>> client = ConnectLoopback(port, kSecond);
  ASSERT_TRUE(client.ok()) << client.status().message();
  AcceptBackoff backoff;
  Result<int> fd = AcceptConnection(*listener, "test", backoff);
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_GE(*fd, 0);
  close(*fd);
  close(*listener);
}

}  // namespace
}  // namespace weft::testbed
