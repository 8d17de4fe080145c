// The pool models' dispatcher reads without blocking: a peer that sends half a request and
// stalls holds up only its own connection, and its request is served once the rest comes.
#include <gtest/gtest.h>

#include <string>

#include "testbed/runner.h"
#include "testbed/wire.h"
#include "testbed_test_util.h"

namespace weft::testbed {
namespace {

constexpr TimeNs kIoTimeout = 10 * kSecond;
// Well under io_timeout, and far above any latency of a loaded machine: the old
// dispatcher, blocked in a read of the half frame, held every other connection for the
// whole io_timeout.
constexpr TimeNs kPrompt = 2 * kSecond;

Frame Request(uint64_t id) {
  Frame f;
  f.request_type = 0;
  f.request_id = id;
  f.call_id = id;
  return f;
}

// Exchanges one request on a fresh connection; returns how long the reply took, or -1.
TimeNs TimedExchange(const Topology& topo, uint64_t id) {
  const Tier& tier = topo.tiers[0];
  Result<std::unique_ptr<Conn>> c = ConnectLoopback(tier.servers[0].port, kIoTimeout);
  if (!c.ok()) return -1;
  (*c)->http = tier.http;
  TimeNs start = WallNow();
  if (!WriteAll((*c)->fd, EncodeMessage(Request(id), 64, tier.http)).ok()) return -1;
  size_t bytes = 0;
  Result<std::optional<Frame>> r = ReadConnFrame(**c, &bytes);
  if (!r.ok() || !r->has_value() || (*r)->call_id != id || (*r)->type != FrameType::kReply) {
    return -1;
  }
  return WallNow() - start;
}

// Opens a connection, sends the first half of a request and stalls; meanwhile 20 requests
// on other connections must each be answered promptly. Then the rest of the stalled
// request goes out, and it too is answered: the dispatcher kept the partial message.
void StallHalfARequest(const Topology& topo) {
  const Tier& tier = topo.tiers[0];
  Result<std::unique_ptr<Conn>> stalled = ConnectLoopback(tier.servers[0].port, kIoTimeout);
  ASSERT_TRUE(stalled.ok());
  (*stalled)->http = tier.http;
  std::string wire = EncodeMessage(Request(0xabc), 64, tier.http);
  std::string_view first = std::string_view(wire).substr(0, wire.size() / 2);
  ASSERT_TRUE(WriteAll((*stalled)->fd, first).ok());
  Serve(50 * kMillisecond);  // the dispatcher has read the half by now
  for (uint64_t id = 1; id <= 20; ++id) {
    TimeNs took = TimedExchange(topo, 0x1000 + id);
    ASSERT_GE(took, 0) << "request " << id << " got no reply";
    EXPECT_LT(took, kPrompt) << "request " << id;
  }
  ASSERT_TRUE(WriteAll((*stalled)->fd, std::string_view(wire).substr(first.size())).ok());
  size_t bytes = 0;
  Result<std::optional<Frame>> r = ReadConnFrame(**stalled, &bytes);
  ASSERT_TRUE(r.ok() && r->has_value()) << (r.ok() ? "end of stream" : r.status().message());
  EXPECT_EQ((*r)->type, FrameType::kReply);
  EXPECT_EQ((*r)->call_id, 0xabcu);
}

TEST(TestbedDispatcher, HalfARequestStallsOnlyItsOwnConnection) {
  for (std::string model : {"worker-pool", "handoff", "staged"}) {
    for (std::string protocol : {"tcp", "http"}) {
      SCOPED_TRACE(model + " " + protocol);
      Result<Topology> topo = ParseTopology(R"(
io_timeout = "10s"
[[tier]]
name = "web"
model = ")" + model + R"("
protocol = ")" + protocol + R"("
workers = 2
[[tier.request]]
name = "r"
before = "1ms"
reply_bytes = 100
)",
                                            "stall.toml");
      ASSERT_TRUE(topo.ok()) << topo.status().message();
      RunOptions options;
      options.duration = 1000 * kMillisecond;
      options.concurrency = 4;
      options.out_dir = TempDir("stall");
      options.during = StallHalfARequest;
      Result<RunReport> report = RunTestbed(*topo, options);
      ExpectNoChildren();
      ASSERT_TRUE(report.ok()) << report.status().message();
      const LoadStats& s = report->load;
      EXPECT_GT(s.ok, 50u) << FormatLoadStats(s);
      EXPECT_EQ(s.ok, s.sent) << FormatLoadStats(s);
      EXPECT_EQ(s.failed, 0u);
      EXPECT_LT(s.latency.max(), kPrompt) << FormatLoadStats(s);
      std::filesystem::remove_all(options.out_dir);
    }
  }
}

}  // namespace
}  // namespace weft::testbed
