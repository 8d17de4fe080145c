// What a log keeps when its process is stopped: sender_probe writes numbered messages to a
// socket whose other end this test reads, and every message the test received must be in
// the sender's log. SIGTERM (at its default action, with a handler that bypasses the C
// library, blocked in the sending thread; sent by a shell script): every message, as the
// sender sits in a blocking call when it comes. SIGKILL at 100 points of the sending loop:
// every message but possibly the one whose call was in flight.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "capture/event_log.h"
#include "weft_cli.h"

namespace weft::capture {
namespace {

namespace fs = std::filesystem;

constexpr int kSenderFd = 3;  // where the sender finds its socket

std::string Message(long i) {
  char text[33];
  std::snprintf(text, sizeof text, "message %010ld", i);
  std::string m(text);
  m.resize(31, ' ');
  return m + "\n";
}

// Reads `fd` to its end on a thread of its own, so that the sender never waits for it.
class Receiver {
 public:
  explicit Receiver(int fd)
      : fd_(fd), thread_([this] {
          char buffer[65536];
          for (;;) {
            ssize_t n = read(fd_, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            received_.fetch_add(uint64_t(n));
          }
        }) {}
  uint64_t Received() const { return received_.load(); }
  // Waits for the end of the stream (every copy of the other end closed).
  uint64_t Finish() {
    thread_.join();
    close(fd_);
    return received_.load();
  }

 private:
  int fd_;
  std::atomic<uint64_t> received_{0};
  std::thread thread_;
};

// The sends on the sender's socket in its log, checked to be the numbered messages in
// order from 0 (their payload prefixes). Returns how many.
long CheckedSends(const EventLog& log) {
  long n = 0;
  for (const Event& e : log.events) {
    if (e.op != EventOp::kSend || e.fd != kSenderFd) continue;
    EXPECT_EQ(e.result, 32) << log.path;
    if (e.payload == kNone || log.payloads[e.payload] != Message(n)) {
      ADD_FAILURE() << log.path << ": send " << n << " is not message " << n;
      break;
    }
    ++n;
  }
  return n;
}

// The sender's log in `dir` (the one whose program is sender_probe).
std::optional<EventLog> SenderLog(const fs::path& dir) {
  auto paths = FindEventLogs(dir.string());
  if (!paths.ok()) return std::nullopt;
  for (const std::string& path : *paths) {
    auto log = ReadEventLog(path);
    if (log.ok() && !log->header.arguments.empty() &&
        log->header.arguments[0].ends_with("sender_probe")) {
      return std::move(*log);
    }
  }
  return std::nullopt;
}

// Runs `command` with `socket` as its descriptor 3 (and nothing else of this process's);
// returns what it printed (stdout and stderr) and its exit status.
std::pair<std::string, int> RunWithSocket(const std::vector<std::string>& command, int socket) {
  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) return {"", -1};
  pid_t child = fork();
  if (child == 0) {
    dup2(output[1], 1);
    dup2(output[1], 2);
    dup2(socket, kSenderFd);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(output[1]);
  close(socket);  // the stream ends when the sender and the script are gone
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(output[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buffer, size_t(n));
  }
  close(output[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return {text, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

class DurableLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-durable-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "kept " << dir_.string() << "\n";
    } else {
      fs::remove_all(dir_);
    }
  }
  fs::path dir_;
};

// A shell script (traced as a whole by weft capture) starts the sender in the background,
// waits until it has sent its messages and kills it with SIGTERM, as a service script
// does. Whatever the sender does with SIGTERM, its log holds every message.
TEST_F(DurableLogTest, SigtermFromAShellScriptKeepsEveryMessage) {
  constexpr long kMessages = 5000;  // several chunks of call and payload records
  const std::string script =
      "\"$0\" 3 \"$1\" \"$2\" \"$3\" & pid=$!; "
      "while [ ! -e \"$3\" ]; do sleep 0.01; done; kill $pid; wait $pid; echo \"status $?\"";
  struct Case {
    std::string mode;
    std::string status;  // the script's `wait`
    bool end_record;
  };
  for (const Case& c : {Case{"default", "status 143", true}, Case{"blocked", "status 143", true},
                        Case{"exit-group", "status 0", false}}) {
    SCOPED_TRACE(c.mode);
    fs::path out = dir_ / c.mode;
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    Receiver receiver(pair[0]);
    std::vector<std::string> command = {WEFT_BINARY,
                                        "capture",
                                        "--payload-prefix",
                                        "32",
                                        "-o",
                                        out.string(),
                                        "--",
                                        "bash",
                                        "-c",
                                        script,
                                        SENDER_PROBE,
                                        c.mode,
                                        std::to_string(kMessages),
                                        (dir_ / (c.mode + ".sent")).string()};
    auto [output, status] = RunWithSocket(command, pair[1]);
    EXPECT_EQ(status, 0) << output;
    EXPECT_NE(output.find(c.status + "\n"), std::string::npos) << output;
    uint64_t received = receiver.Finish();
    EXPECT_EQ(received, uint64_t(kMessages) * 32);
    auto log = SenderLog(out);
    ASSERT_TRUE(log.has_value());
    EXPECT_EQ(CheckedSends(*log), kMessages);
    EXPECT_EQ(log->loss.has_end_record, c.end_record);
    EXPECT_EQ(log->loss.dropped_events, 0u);
    EXPECT_EQ(log->loss.truncated_bytes + log->loss.corrupt_bytes, 0u);
  }
}

// The sender, preloaded directly (no weft capture, to start fast), is killed with SIGKILL
// when the test has received a random number of bytes, 100 times. The kill lands anywhere
// in the loop: in the wrapper, in send, in a record being committed, in a chunk being
// changed. Every message received is in the log, except possibly the last one (its call
// was in flight: the bytes left, its record was not committed yet).
TEST_F(DurableLogTest, SigkillAtRandomPointsLosesNoCommittedRecord) {
  std::mt19937 random(20261124);
  std::uniform_int_distribution<uint64_t> kill_after(0, 400'000);  // bytes, ~12,500 messages
  int in_flight = 0;
  for (int run = 0; run < 100; ++run) {
    SCOPED_TRACE(run);
    fs::path out = dir_ / std::to_string(run);
    fs::create_directories(out);
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    uint64_t target = kill_after(random);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      dup2(pair[1], kSenderFd);  // dup2 clears close-on-exec
      setenv("LD_PRELOAD", PRELOAD_LIBRARY, 1);
      setenv("WEFT_CAPTURE_DIR", out.c_str(), 1);
      setenv("WEFT_PAYLOAD_PREFIX", "32", 1);
      execl(SENDER_PROBE, "sender_probe", "3", "default", "100000000", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(pair[1]);
    Receiver receiver(pair[0]);
    while (receiver.Received() < target) std::this_thread::yield();
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    uint64_t received = receiver.Finish();
    ASSERT_EQ(received % 32, 0u);
    long messages = long(received / 32);
    auto log = SenderLog(out);
    ASSERT_TRUE(log.has_value());
    long logged = CheckedSends(*log);
    EXPECT_TRUE(logged == messages || logged == messages - 1)
        << logged << " sends logged, " << messages << " messages received";
    if (logged == messages - 1) ++in_flight;
    EXPECT_FALSE(log->loss.has_end_record);
    EXPECT_EQ(log->loss.corrupt_bytes, 0u);
    EXPECT_EQ(log->loss.dropped_events, 0u);
    // At most the call and payload record being written when the signal came.
    EXPECT_LE(log->loss.truncated_bytes, 32u + 48u);
    if (!HasFailure()) fs::remove_all(out);
  }
  std::printf("100 kills: %d with the last received message's call in flight\n", in_flight);
}

}  // namespace
}  // namespace weft::capture
