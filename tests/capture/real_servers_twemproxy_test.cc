// twemproxy 0.5 (Debian's nutcracker), a Redis and memcached proxy weft was not tuned on:
// one event loop that multiplexes its clients' commands onto one connection to each
// server (commands that come together may leave in one write: 6 writes of two among 794
// in a run by hand), so that no connection onward belongs to a client. In front of it
// eight client connections each write four SETs at a time (tests/capture/redis_pipeliner.py,
// every key once); behind it one redis-server. All three under `weft capture` with the Redis
// processor on both ports. Each command's tree must be exactly its four messages: the
// client's SET, the proxy's forward of it (the same key), and their two answers. Measured
// by hand first (2026-11-30): 800 of 800 for fragment, nesting and auto, one command at a
// time and four; linking 799 and 800.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "capture/real_servers.h"
#include "weft_cli.h"

namespace weft {
namespace {

using testing::AttributeOf;
using testing::RealServersTest;
using testing::Weft;

constexpr int kConnections = 8, kCommands = 100;

class TwemproxyTest : public RealServersTest {};

TEST_F(TwemproxyTest, EveryPipelinedCommandIsFollowedThroughTheSharedConnection) {
  if (!Installed("/usr/sbin/nutcracker") || !Installed("/usr/bin/redis-server") ||
      !Installed("/usr/bin/python3"))
    GTEST_SKIP() << "nutcracker, redis-server or python3 not installed (scripts/install-deps)";
  const auto [redis_port, proxy_port, stats_port] = testing::FreePorts<3>();
  ASSERT_NE(redis_port, 0);
  const std::string redis = std::to_string(redis_port), proxy = std::to_string(proxy_port);
  const std::string protocols = "auto,redis=" + redis + ",redis=" + proxy;
  auto captured = [&](const std::string& sub, std::vector<std::string> argv) {
    std::vector<std::string> full = {WEFT_BINARY,   "capture", "-o", Path("capture/" + sub),
                                     "--protocols", protocols, "--"};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
  };
  const pid_t server =
      background_->Start(captured("redis", {"/usr/bin/redis-server", "--port", redis, "--bind",
                                            "127.0.0.1", "--save", "", "--appendonly", "no"}),
                         Path("redis.out"));
  ASSERT_TRUE(testing::WaitForPort(redis_port)) << Path("redis.out");
  const std::string config = Path("nutcracker.yml");
  std::ofstream(config) << fmt::format(R"(pool:
  listen: 127.0.0.1:{}
  redis: true
  hash: fnv1a_64
  distribution: ketama
  timeout: 4000
  server_connections: 1
  servers:
   - 127.0.0.1:{}:1
)",
                                       proxy, redis);
  const pid_t twemproxy =
      background_->Start(captured("nutcracker", {"/usr/sbin/nutcracker", "-c", config, "-s",
                                                 std::to_string(stats_port), "-a", "127.0.0.1"}),
                         Path("nutcracker.out"));
  ASSERT_TRUE(testing::WaitForPort(proxy_port)) << Path("nutcracker.out");

  const std::string tag = "run" + std::to_string(getpid());
  auto client = Weft(fmt::format(
      "capture -o {} --protocols {} -- /usr/bin/python3 {} {} {} {} 4 {}", Path("capture/client"),
      protocols, REDIS_PIPELINER, proxy, kConnections, kCommands, tag));
  ASSERT_EQ(client.rc, 0) << client.output;
  EXPECT_NE(client.output.find(std::to_string(kConnections * kCommands) + "\n"), std::string::npos)
      << client.output;
  background_->Stop(twemproxy, SIGTERM);
  background_->Stop(server, SIGTERM);
  const Trace trace = Reconcile();

  // Each command's calls (the client's and the forward), by key.
  std::map<std::string, std::vector<MessageId>> by_key;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string key;
    if (trace.columns().kind[i] == MessageKind::kCall &&
        AttributeOf(trace, MessageId(i), "redis.key", &key) && key.ends_with(tag))
      by_key[key].push_back(MessageId(i));
  }
  ASSERT_EQ(by_key.size(), size_t(kConnections * kCommands));
  for (const auto& [key, calls] : by_key) EXPECT_EQ(calls.size(), 2u) << key;

  // Trees of four messages holding both calls of one key (a RETURN goes with its call).
  testing::ExpectFragmentChosenAndExact(
      trace, kConnections * kCommands, [&](std::span<const MessageId> tree) {
        std::string key;
        if (tree.size() != 4 || !AttributeOf(trace, tree[0], "redis.key", &key)) return false;
        auto it = by_key.find(key);
        return it != by_key.end() &&
               std::all_of(it->second.begin(), it->second.end(), [&](MessageId m) {
                 return std::find(tree.begin(), tree.end(), m) != tree.end();
               });
      });
}

}  // namespace
}  // namespace weft
