// weft capture --protocols on a real process (capture_probe http): the preload library
// finds each HTTP message's end in the bytes of every call, on both sides of a connection,
// whatever the calls' sizes, and logs it as a boundary record with the processor's
// attributes; a dup of the descriptor goes on with the same stream.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "capture/event_log.h"
#include "weft_cli.h"

namespace weft::capture {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

class CaptureProtocolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-capture-protocols-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `capture_probe http 3 CHUNK` with `protocols` (none: the default, auto) and
  // returns the logs, the client's (the child's) first. `probe` is the path it is run as.
  std::vector<EventLog> CaptureHttp(const std::string& protocols, int chunk = 7,
                                    const std::string& probe = CAPTURE_PROBE) {
    std::string flag = protocols.empty() ? "" : " --protocols " + protocols;
    auto run = Weft("capture -o " + dir_.string() + flag + " -- " + probe + " http 3 " +
                    std::to_string(chunk));
    EXPECT_EQ(run.rc, 0) << run.output;
    EXPECT_NE(run.output.find("http 3 requests, 96 + 120 bytes, child 0"), std::string::npos)
        << run.output;
    std::vector<EventLog> logs;
    auto paths = FindEventLogs(dir_.string());
    EXPECT_TRUE(paths.ok());
    if (!paths.ok()) return logs;
    for (const std::string& path : *paths) {
      auto log = ReadEventLog(path);
      EXPECT_TRUE(log.ok()) << log.status().message();
      if (!log.ok()) continue;
      EXPECT_EQ(log->loss.corrupt_bytes + log->loss.truncated_bytes, 0u);
      logs.push_back(std::move(*log));
    }
    if (logs.size() == 2 && logs[0].header.parent_pid != logs[1].header.pid)
      std::swap(logs[0], logs[1]);
    return logs;
  }

  fs::path dir_;
};

// "sent request 32 http.method=GET http.url=/0", one line per boundary in log order.
std::vector<std::string> Boundaries(const EventLog& log) {
  std::vector<std::string> lines;
  for (const Event& e : log.events) {
    if (e.op != EventOp::kBoundary) continue;
    const Boundary& b = log.boundaries[size_t(e.boundary)];
    std::string line = fmt::format("{} {} {} {}", b.protocol, b.sent ? "sent" : "received",
                                   b.request ? "request" : "response", b.offset);
    for (const auto& [key, value] : b.attributes) line += " " + key + "=" + value;
    lines.push_back(line);
  }
  return lines;
}

// Detected from the first request's bytes (the default, auto): three 32-byte requests in
// one write, read 7 bytes at a time, so two of the server's boundaries fall inside a read;
// three 40-byte replies in one write through a dup of the accepted socket.
TEST_F(CaptureProtocolsTest, HttpMessagesEndWhereverTheCallsSplitThem) {
  std::vector<EventLog> logs = CaptureHttp("");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(Boundaries(logs[0]), (std::vector<std::string>{
                                     "1 sent request 32 http.method=GET http.url=/0",
                                     "1 sent request 64 http.method=GET http.url=/1",
                                     "1 sent request 96 http.method=GET http.url=/2",
                                     "1 received response 40 http.status=200",
                                     "1 received response 80 http.status=200",
                                     "1 received response 120 http.status=200",
                                 }));
  EXPECT_EQ(Boundaries(logs[1]), (std::vector<std::string>{
                                     "1 received request 32 http.method=GET http.url=/0",
                                     "1 received request 64 http.method=GET http.url=/1",
                                     "1 received request 96 http.method=GET http.url=/2",
                                     "1 sent response 40 http.status=200",
                                     "1 sent response 80 http.status=200",
                                     "1 sent response 120 http.status=200",
                                 }));
  // Each boundary comes right after the call that moved its last byte, with its times.
  for (const EventLog& log : logs) {
    for (size_t i = 0; i < log.events.size(); ++i) {
      if (log.events[i].op != EventOp::kBoundary) continue;
      size_t call = i;
      while (call > 0 && log.events[call].op == EventOp::kBoundary) --call;
      EXPECT_TRUE(IsSendOp(log.events[call].op) || IsRecvOp(log.events[call].op));
      EXPECT_EQ(log.events[call].entry_ns, log.events[i].entry_ns);
      EXPECT_EQ(log.events[call].exit_ns, log.events[i].exit_ns);
    }
  }
}

// A server that reads 2 bytes at a time: "GE" cannot tell, so the first request bytes are
// kept until there are enough (16) and then fed to the processor from offset 0.
TEST_F(CaptureProtocolsTest, DetectionWaitsForEnoughFirstBytes) {
  std::vector<EventLog> logs = CaptureHttp("", 2);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(Boundaries(logs[1]), (std::vector<std::string>{
                                     "1 received request 32 http.method=GET http.url=/0",
                                     "1 received request 64 http.method=GET http.url=/1",
                                     "1 received request 96 http.method=GET http.url=/2",
                                     "1 sent response 40 http.status=200",
                                     "1 sent response 80 http.status=200",
                                     "1 sent response 120 http.status=200",
                                 }));
}

TEST_F(CaptureProtocolsTest, NoneAndOtherProtocolsLogNoBoundaries) {
  for (std::string spec : {"none", "redis=auto,postgres=5432"}) {
    std::vector<EventLog> logs = CaptureHttp(spec);
    ASSERT_EQ(logs.size(), 2u) << spec;
    EXPECT_TRUE(logs[0].boundaries.empty()) << spec;
    EXPECT_TRUE(logs[1].boundaries.empty()) << spec;
    fs::remove_all(dir_);
  }
  std::vector<EventLog> logs = CaptureHttp("http=auto");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].boundaries.size(), 6u);
}

// The program name selects too: every stream of capture_probe is HTTP.
TEST_F(CaptureProtocolsTest, ProgramNameSelectsTheProtocol) {
  std::string program = fs::path(CAPTURE_PROBE).filename().string();
  std::vector<EventLog> logs = CaptureHttp("http=" + program);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[1].boundaries.size(), 6u);
}

// A program run through a link by another name (Debian's redis-server, a link to
// redis-check-rdb) goes by the name it was run as: the rule and the node name alike.
TEST_F(CaptureProtocolsTest, ProgramNameIsTheCommandItWasRunAs) {
  fs::path bin = dir_.string() + "-bin";
  fs::create_directories(bin);
  fs::create_symlink(CAPTURE_PROBE, bin / "http-probe");
  std::vector<EventLog> logs = CaptureHttp("http=http-probe", 7, (bin / "http-probe").string());
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[1].boundaries.size(), 6u);
  EXPECT_EQ(logs[1].header.executable, fs::canonical(CAPTURE_PROBE).string());
  EXPECT_EQ(ProgramName(logs[0]), "http-probe");
  EXPECT_EQ(ProgramName(logs[1]), "http-probe");
  fs::remove_all(dir_);
  logs = CaptureHttp("http=capture_probe", 7, (bin / "http-probe").string());
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_TRUE(logs[1].boundaries.empty());
  fs::remove_all(bin);
}

// DNS over UDP: each datagram to or from the port named for dns is one message with the
// query's id and name, on both sockets (the client's unbound one, the server's bound one).
TEST_F(CaptureProtocolsTest, DnsDatagramsCarryIdAndName) {
  auto run = Weft("capture -o " + dir_.string() + " --protocols dns=53053 -- " + CAPTURE_PROBE +
                  " dns 53053");
  ASSERT_EQ(run.rc, 0) << run.output;
  ASSERT_NE(run.output.find("dns 29-byte answer"), std::string::npos) << run.output;
  auto paths = FindEventLogs(dir_.string());
  ASSERT_TRUE(paths.ok() && paths->size() == 1u);
  auto log = ReadEventLog(paths->front());
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(Boundaries(*log), (std::vector<std::string>{
                                  "5 sent request 0 dns.id=4660 dns.name=example.com",
                                  "5 received request 0 dns.id=4660 dns.name=example.com",
                                  "5 sent response 0 dns.id=4660 dns.name=example.com",
                                  "5 received response 0 dns.id=4660 dns.name=example.com",
                              }));
}

// Event isolation (capture --isolate, BorderPatrol §5.2) on a real process (capture_probe
// isolate): three batches of three 32-byte HTTP requests, each batch whole in the kernel
// before the server reads. Every read stops at a request's end; the rest is held and
// served first by the next read, readv, recv, recvmsg or peek (which consumes none); poll,
// select and epoll (with the program's epoll_data) report held bytes readable though the
// kernel has none, and do not wait; a non-blocking read after the held bytes are gone gets
// EAGAIN; held bytes follow the stream through a dup and die with its last close;
// MSG_WAITALL is served whole. Without --isolate the same program reads what it reads
// untraced. Boundaries count the bytes the program got, so they are the same either way.
TEST_F(CaptureProtocolsTest, IsolateStopsReadsAtMessageEnds) {
  const std::string untraced =
      "isolate read 96 /0 poll 0 peek -11 readv -11 dup-read -11 drained -11 recv 96 /3 select 0 "
      "epoll 0 recvmsg -11 recv -11 epoll-empty 0 recv 96 /6 waitall -11; 288 bytes read, child 0";
  const std::string isolated =
      "isolate read 32 /0 poll 1 peek 32 /1 readv 32 /1 dup-read 32 /2 drained -11 recv 32 /3 "
      "select 1 epoll 1 data 77 recvmsg 32 /4 recv 32 /5 epoll-empty 0 recv 32 /6 waitall 40 /7; "
      "264 bytes read, child 0";
  for (bool isolate : {false, true}) {
    fs::remove_all(dir_);
    auto run = Weft("capture -o " + dir_.string() + (isolate ? " --isolate" : " --no-isolate") +
                    " -- " + CAPTURE_PROBE + " isolate");
    ASSERT_EQ(run.rc, 0) << run.output;
    EXPECT_NE(run.output.find(isolate ? isolated : untraced), std::string::npos) << run.output;
    auto paths = FindEventLogs(dir_.string());
    ASSERT_TRUE(paths.ok() && paths->size() == 2u);
    for (const std::string& path : *paths) {
      auto log = ReadEventLog(path);
      ASSERT_TRUE(log.ok()) << log.status().message();
      std::vector<std::string> received;
      for (const std::string& line : Boundaries(*log)) {
        if (line.find("received") != std::string::npos) received.push_back(line);
      }
      if (received.empty()) continue;     // the client
      size_t messages = isolate ? 8 : 9;  // isolated, the last request's bytes die held
      ASSERT_EQ(received.size(), messages);
      for (size_t i = 0; i < messages; ++i) {
        EXPECT_EQ(received[i], fmt::format("1 received request {} http.method=GET http.url=/{}",
                                           32 * (i + 1), i));
      }
      // Figure 15's extra work: 3 reads cut short, 6 served from 3 x 64 held bytes.
      EXPECT_EQ(log->loss.isolated_reads, isolate ? 3u : 0u);
      EXPECT_EQ(log->loss.held_reads, isolate ? 6u : 0u);
      EXPECT_EQ(log->loss.held_bytes, isolate ? 192u : 0u);
    }
  }
}

// One isolated input per wait (capture --isolate, BorderPatrol §3.2) on a real process
// (capture_probe one-input): connections with HTTP requests waiting in the kernel. With
// isolation each poll, select and epoll_wait reports one of them, the one waiting longest
// (so a connection with a second request held back goes to the back of the line), until
// every request was read; level-triggered waits get the rest from the kernel again,
// edge-triggered ones from what the library kept. A kept event dies with its
// registration: a connection closed, or taken out of the set, while its event was kept is
// not reported; a new connection on the closed one's descriptor number is reported under
// its own registration, and the one taken out again once it is added back (first: its
// request has waited longest); a poll of the epoll descriptor says readable while events
// are kept for it. Writable bits and the listener pass through at once.
// Without --isolate each wait reports every ready connection, as untraced.
TEST_F(CaptureProtocolsTest, IsolateReportsOneInputPerWait) {
  const std::string untraced =
      "one-input poll 0+1+2; select 0+1; epoll-lt 0+1; epoll-et 0+1+2+3+4+5; "
      "first wait: 6 writable, listener yes; set readable 10";
  const std::string isolated =
      "one-input poll 0 1 2 0 1 2; select 0 1; epoll-lt 0 1; "
      "epoll-et 0 1 (closed 2, deleted 3, new 6 on 2's descriptor) 4 5 (added 3) 3 6; "
      "first wait: 6 writable, listener yes; set readable 1111110";
  for (bool isolate : {false, true}) {
    SCOPED_TRACE(isolate ? "--isolate" : "capture");
    fs::remove_all(dir_);
    auto run = Weft("capture -o " + dir_.string() + (isolate ? " --isolate" : " --no-isolate") +
                    " -- " + CAPTURE_PROBE + " one-input");
    ASSERT_EQ(run.rc, 0) << run.output;
    EXPECT_NE(run.output.find(isolate ? isolated : untraced), std::string::npos) << run.output;
    auto paths = FindEventLogs(dir_.string());
    ASSERT_TRUE(paths.ok() && paths->size() == 1u);
    auto log = ReadEventLog(paths->front());
    ASSERT_TRUE(log.ok()) << log.status().message();
    // Waits that held inputs back: poll 5 (3 inputs, then 3, 3, 2... see above), select 1,
    // epoll-lt 1, epoll-et 5 (6 inputs; 5 kept; 2 kept and the new one; 5 and the new one
    // kept; the new one kept and the one added back).
    EXPECT_EQ(log->loss.split_waits, isolate ? 12u : 0u);
    // Every request was read once: 6 + 2 + 2 + 6 (untraced, all at the first epoll-et wait;
    // isolated, all but the closed connection's, never reported, never read, and the new
    // connection's).
    size_t received = 0;
    for (const std::string& line : Boundaries(*log))
      received += line.find("received request") != std::string::npos;
    EXPECT_EQ(received, 16u);
  }
}

TEST_F(CaptureProtocolsTest, BadSpecIsRefusedWithOneLine) {
  auto run = Weft("capture -o " + dir_.string() + " --protocols gopher=70 -- /bin/true");
  EXPECT_NE(run.rc, 0);
  EXPECT_NE(run.output.find("--protocols: 'gopher': unknown protocol"), std::string::npos)
      << run.output;
  run = Weft("capture -o " + dir_.string() + " --protocols http=99999 -- /bin/true");
  EXPECT_NE(run.rc, 0);
  EXPECT_NE(run.output.find("port out of range"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace weft::capture
