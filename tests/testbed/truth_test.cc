#include "testbed/truth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace weft::testbed {
namespace {

class TruthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "weft_truth_test_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

// client -> web0 (request 1, call 1) -> db0 (call 2); web0's log was cut mid-line.
TEST_F(TruthTest, JoinsSidesAndNestsCalls) {
  Write("client.truth",
        "# weft testbed truth v1 node=client pid=1\n"
        "100 7 S 1 127.0.0.1:5000 127.0.0.1:80 1 1 0 68 home\n"
        "900 7 R 2 127.0.0.1:5000 127.0.0.1:80 1 1 0 100 -\n");
  Write("web0.truth",
        "# weft testbed truth v1 node=web0 pid=2\n"
        "110 8 R 1 127.0.0.1:80 127.0.0.1:5000 1 1 0 68 home\n"
        "200 8 S 1 127.0.0.1:6000 127.0.0.1:90 1 2 1 68 select\n"
        "500 8 R 2 127.0.0.1:6000 127.0.0.1:90 1 2 0 40 -\n"
        "800 8 S 2 127.0.0.1:80 127.0.0.1:5000 1 1 0 100 -\n"
        "850 8 S 1 127.0.0.1:6000 127.0.0.1:90 1 3 1 6");
  Write("db0.truth",
        "# weft testbed truth v1 node=db0 pid=3\n"
        "210 9 R 1 127.0.0.1:90 127.0.0.1:6000 1 2 1 68 select\n"
        "490 9 S 2 127.0.0.1:90 127.0.0.1:6000 1 2 0 40 -\n");
  Result<Trace> trace = BuildTruthTrace(dir_);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->size(), 4u);  // the partial line (call 3) is not read
  const TraceColumns& c = trace->columns();
  // Time order: call 1 (100), call 2 (200), return 2 (490), return 1 (800).
  EXPECT_EQ(trace->NodeName(c.sender[0]), "client");
  EXPECT_EQ(trace->NodeName(c.receiver[0]), "web0");
  EXPECT_EQ(c.recv_time[0], 110);
  EXPECT_EQ(c.sender_thread[0], ThreadId(7));
  EXPECT_EQ(c.receiver_thread[0], ThreadId(8));
  EXPECT_FALSE(c.truth_parent[0].valid());
  EXPECT_EQ(c.truth_parent[1], MessageId(0));  // db call nested in the web call
  EXPECT_EQ(c.kind[2], MessageKind::kReturn);
  EXPECT_EQ(c.truth_parent[2], MessageId(1));
  EXPECT_EQ(c.truth_parent[3], MessageId(0));
  for (uint32_t m = 0; m < 4; ++m) EXPECT_EQ(c.truth_path[m], PathId(0));

  Result<Topology> topo = ParseTopology(R"(
[[tier]]
name = "web"
[[tier.request]]
name = "home"
calls = [{ tier = "db", request = "select", count = "1-2" }]
[[tier]]
name = "db"
[[tier.request]]
name = "select"
)",
                                        "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  Result<TruthCheck> check = CheckTruth(*trace, *topo, true);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->requests, 1u);
  EXPECT_EQ(check->shaped, 1u);
  // One db call where the call graph allows none.
  topo->tiers[0].requests[0].calls[0].max_count = 0;
  topo->tiers[0].requests[0].calls[0].min_count = 0;
  EXPECT_FALSE(CheckTruth(*trace, *topo, true).ok());
}

// web0 sends call 3 while call 2 is unanswered on the same connection (two in flight),
// then call 4 at the very instant call 3's reply arrives (still two at most).
TEST_F(TruthTest, CountsCallsInFlightPerConnection) {
  Write("client.truth",
        "# weft testbed truth v1 node=client pid=1\n"
        "100 7 S 1 127.0.0.1:5000 127.0.0.1:80 1 1 0 68 home\n"
        "900 7 R 2 127.0.0.1:5000 127.0.0.1:80 1 1 0 100 -\n");
  Write("web0.truth",
        "# weft testbed truth v1 node=web0 pid=2\n"
        "110 8 R 1 127.0.0.1:80 127.0.0.1:5000 1 1 0 68 home\n"
        "200 8 S 1 127.0.0.1:6000 127.0.0.1:90 1 2 1 68 select\n"
        "210 9 S 1 127.0.0.1:6000 127.0.0.1:90 1 3 1 68 select\n"
        "500 10 R 2 127.0.0.1:6000 127.0.0.1:90 1 2 0 40 -\n"
        "520 10 R 2 127.0.0.1:6000 127.0.0.1:90 1 3 0 40 -\n"
        "520 8 S 1 127.0.0.1:6000 127.0.0.1:90 1 4 1 68 select\n"
        "600 10 R 2 127.0.0.1:6000 127.0.0.1:90 1 4 0 40 -\n"
        "610 8 S 1 127.0.0.1:6001 127.0.0.1:90 1 5 1 68 select\n"
        "700 8 R 2 127.0.0.1:6001 127.0.0.1:90 1 5 0 40 -\n"
        "800 8 S 2 127.0.0.1:80 127.0.0.1:5000 1 1 0 100 -\n");
  Result<Trace> trace = BuildTruthTrace(dir_);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  std::vector<ConnectionUse> use = CallsInFlight(*trace);
  ASSERT_EQ(use.size(), 2u);
  EXPECT_EQ(use[0].caller, "client");
  EXPECT_EQ(use[0].callee, "web0");
  EXPECT_EQ(use[0].connections, 1u);
  EXPECT_EQ(use[0].max_in_flight, 1u);
  // db0 never logged: the callee is named by its endpoint.
  EXPECT_EQ(use[1].caller, "web0");
  EXPECT_EQ(use[1].callee, "127.0.0.1:90");
  EXPECT_EQ(use[1].connections, 2u);
  EXPECT_EQ(use[1].max_in_flight, 2u);
}

TEST_F(TruthTest, RejectsAMalformedRecord) {
  Write("client.truth", "# weft testbed truth v1 node=client pid=1\nnonsense here\n");
  Result<Trace> trace = BuildTruthTrace(dir_);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("client.truth:2: malformed"), std::string::npos);
}

}  // namespace
}  // namespace weft::testbed
