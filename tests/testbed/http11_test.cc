// HTTP/1.1 between real processes: chunked replies, and "Connection: close" honoured by
// servers of every kind (reply, then close) and by every kind of caller (no reuse).
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "testbed/http.h"
#include "testbed/runner.h"
#include "testbed/truth.h"
#include "testbed_test_util.h"

namespace weft::testbed {
namespace {

// One exchange on `fd`: the reply's fields and its bytes exactly as they came.
struct RawReply {
  Frame frame;
  std::string wire;
};
RawReply Exchange(int fd, uint64_t call, bool close) {
  Frame f;
  f.request_id = call;
  f.call_id = call;
  f.close = close;
  EXPECT_TRUE(WriteAll(fd, EncodeHttp(f, 64)).ok());
  RawReply r;
  std::string buf;
  char chunk[4096];
  size_t bytes = 0;
  while (true) {
    Result<bool> taken = TakeHttp(buf, &r.frame, &bytes);
    EXPECT_TRUE(taken.ok()) << taken.status().message();
    if (!taken.ok() || *taken) break;
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      ADD_FAILURE() << "no whole reply to call " << call;
      break;
    }
    buf.append(chunk, size_t(n));
    r.wire.append(chunk, size_t(n));
  }
  EXPECT_TRUE(buf.empty()) << "bytes after the reply to call " << call;
  EXPECT_EQ(r.frame.call_id, call);
  EXPECT_EQ(r.frame.type, FrameType::kReply);
  return r;
}

// The server closed: the next read is the end of stream (not a timeout, not data).
void ExpectClosed(int fd) {
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0);
}

void TalkHttp11(const Topology& topo) {
  uint16_t port = topo.tiers[0].servers[0].port;
  // The client asks to close on its second request.
  Result<std::unique_ptr<Conn>> a = ConnectLoopback(port, kSecond);
  ASSERT_TRUE(a.ok());
  RawReply r = Exchange((*a)->fd, 101, false);
  EXPECT_FALSE(r.frame.close);
  EXPECT_NE(r.wire.find("\r\nTransfer-Encoding: chunked\r\n"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.find("Content-Length"), std::string::npos) << r.wire;
  EXPECT_EQ(r.wire.substr(r.wire.size() - 5), "0\r\n\r\n");
  r = Exchange((*a)->fd, 102, true);
  EXPECT_TRUE(r.frame.close);
  EXPECT_NE(r.wire.find("\r\nConnection: close\r\n"), std::string::npos) << r.wire;
  ExpectClosed((*a)->fd);
  // The server closes on its own after the third request (http_close_after = 3).
  Result<std::unique_ptr<Conn>> b = ConnectLoopback(port, kSecond);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(Exchange((*b)->fd, 201, false).frame.close);
  EXPECT_FALSE(Exchange((*b)->fd, 202, false).frame.close);
  EXPECT_TRUE(Exchange((*b)->fd, 203, false).frame.close);
  ExpectClosed((*b)->fd);
}

TEST(Http11, ServersSendChunkedRepliesAndHonourConnectionClose) {
  for (std::string model : {"thread-per-connection", "worker-pool", "staged", "event-loop"}) {
    SCOPED_TRACE(model);
    Result<Topology> topo = ParseTopology(R"(
[[tier]]
name = "web"
model = ")" + model + R"("
protocol = "http"
http_chunked = true
http_close_after = 3
[[tier.request]]
name = "r"
reply_bytes = 1500
)",
                                          "http11.toml");
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    RunOptions options;
    options.duration = 500 * kMillisecond;
    options.concurrency = 2;
    options.out_dir = TempDir("http11_server");
    options.during = TalkHttp11;
    Result<RunReport> report = RunTestbed(*topo, options);
    ExpectNoChildren();
    ASSERT_TRUE(report.ok()) << report.status().message();
    // The load client's pooled connections are closed every third request; it reconnects.
    EXPECT_GT(report->load.ok, 10u) << FormatLoadStats(report->load);
    EXPECT_EQ(report->load.ok, report->load.sent) << FormatLoadStats(report->load);
    std::filesystem::remove_all(options.out_dir);
  }
}

// Every caller kind meets closing and chunking servers: the load client (pooled) and a
// worker pool (pooled) are told "Connection: close" every few requests and must not reuse
// those connections; an event loop (not pooled) says "Connection: close" on each call, and
// its callee closes. All replies but the client's are chunked.
constexpr std::string_view kClosing = R"toml(
[[tier]]
name = "web"
model = "worker-pool"
workers = 4
protocol = "http"
http_close_after = 5
[[tier.request]]
name = "page"
reply_bytes = 3000
calls = [{ tier = "app", request = "render", count = "1-2" }]

[[tier]]
name = "app"
model = "event-loop"
protocol = "http"
http_chunked = true
http_close_after = 3
pooled = false
[[tier.request]]
name = "render"
before = "exp(100us)"
reply_bytes = 2500
calls = [{ tier = "db", request = "query", count = 1 }]

[[tier]]
name = "db"
model = "thread-per-connection"
protocol = "http"
http_chunked = true
[[tier.request]]
name = "query"
before = "exp(100us)"
reply_bytes = 700
)toml";

TEST(Http11, ClosingAndChunkingTiersKeepTheTruthExact) {
  Result<Topology> topo = ParseTopology(kClosing, "closing.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  RunOptions options;
  options.duration = 1500 * kMillisecond;
  options.concurrency = 32;
  options.out_dir = TempDir("http11_run");
  Result<RunReport> report = RunTestbed(*topo, options);
  ExpectNoChildren();
  ASSERT_TRUE(report.ok()) << report.status().message();
  const LoadStats& s = report->load;
  EXPECT_GT(s.ok, 100u) << FormatLoadStats(s);
  EXPECT_EQ(s.ok, s.sent) << FormatLoadStats(s);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.failed, 0u);
  for (const char* node : {"web0", "app0", "db0"}) {
    EXPECT_EQ(Slurp(options.out_dir + "/" + node + ".log"), "") << node;
  }
  Result<Trace> trace = BuildTruthTrace(options.out_dir);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<TruthCheck> check = CheckTruth(*trace, report->topology, true);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->shaped, s.sent);
  // A caller that reused a connection its server had closed would have failed a call
  // (checked above: no errors, no failures, nothing logged). Here: the connections were
  // really replaced. The truth names a connection by its endpoints, and the kernel hands
  // a freed port out again, so two connections may count as one: hence half the bound.
  const TraceColumns& col = trace->columns();
  std::map<std::string, std::map<std::pair<std::string, std::string>, uint32_t>> calls;
  for (uint32_t m = 0; m < trace->size(); ++m) {
    if (col.kind[m] != MessageKind::kCall) continue;
    ++calls[std::string(trace->NodeName(col.receiver[m]))]
           [{std::string(trace->strings().Get(col.sender_endpoint[m])),
             std::string(trace->strings().Get(col.receiver_endpoint[m]))}];
  }
  // Calls one connection carries at most: web0 closes after 5, app0 after 3, and each db0
  // connection carries one call (app0 does not pool and says Connection: close).
  const std::pair<const char*, uint32_t> limits[] = {{"web0", 5}, {"app0", 3}, {"db0", 1}};
  for (const auto& [callee, limit] : limits) {
    SCOPED_TRACE(callee);
    uint32_t total = 0;
    for (const auto& [conn, n] : calls[callee]) total += n;
    EXPECT_GT(total, 100u);
    EXPECT_GE(2 * calls[callee].size(), total / limit) << total << " calls";
  }
  std::filesystem::remove_all(options.out_dir);
}

}  // namespace
}  // namespace weft::testbed
