// Server-to-server pipelining (testbed/topologies/pipelined.toml): every request completes,
// the truth gives one well-shaped tree per request, and the truth itself shows connections
// that carried several calls at once, never more than the caller's `pipeline`.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>

#include "testbed/runner.h"
#include "testbed/truth.h"
#include "testbed_test_util.h"

namespace weft::testbed {
namespace {

TEST(TestbedPipelining, ServersPipelineCallsAndTheTruthStaysExact) {
  Result<Topology> topo = LoadTopology(std::string(WEFT_TOPOLOGIES) + "/pipelined.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  RunOptions options;
  options.duration = 2 * kSecond;
  options.concurrency = 32;
  options.out_dir = TempDir("pipelined");
  Result<RunReport> report = RunTestbed(*topo, options);
  ExpectNoChildren();
  ASSERT_TRUE(report.ok()) << report.status().message();
  const LoadStats& s = report->load;
  EXPECT_GT(s.ok, 100u) << FormatLoadStats(s);
  EXPECT_EQ(s.ok, s.sent) << FormatLoadStats(s);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.failed, 0u);
  Result<Trace> trace = BuildTruthTrace(options.out_dir);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  Result<TruthCheck> check = CheckTruth(*trace, report->topology, true);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->requests, s.sent);
  EXPECT_EQ(check->shaped, s.sent);

  // Per caller tier -> callee tier: the deepest connection over its servers.
  std::map<std::pair<std::string, std::string>, uint32_t> depth;
  auto tier_of = [](const std::string& node) {
    return node.substr(0, node.find_first_of("0123456789"));
  };
  for (const ConnectionUse& use : CallsInFlight(*trace)) {
    SCOPED_TRACE(use.caller + " -> " + use.callee);
    uint32_t& d = depth[{tier_of(use.caller), tier_of(use.callee)}];
    d = std::max(d, use.max_in_flight);
    EXPECT_GE(use.connections, 1u);
    if (use.caller == "client") {
      EXPECT_EQ(use.max_in_flight, 1u);  // the client does not pipeline here
    } else {
      int tier = report->topology.TierIndex(tier_of(use.caller));
      ASSERT_GE(tier, 0);
      EXPECT_LE(use.max_in_flight, report->topology.tiers[tier].pipeline);
    }
  }
  // Every server-to-server edge pipelined: worker pool -> handoff (HTTP, in order), worker
  // pool -> event loop (frames, by call id), handoff and event loop -> thread per
  // connection (HTTP).
  for (const auto& edge : {std::pair<std::string, std::string>{"web", "app"},
                           {"web", "cache"},
                           {"app", "db"},
                           {"cache", "db"}}) {
    EXPECT_GE(depth[edge], 2u) << edge.first << " -> " << edge.second;
    std::cout << edge.first << " -> " << edge.second << ": up to " << depth[edge]
              << " calls in flight on one connection\n";
  }
  std::filesystem::remove_all(options.out_dir);
}

}  // namespace
}  // namespace weft::testbed
