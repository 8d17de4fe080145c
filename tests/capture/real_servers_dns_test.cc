// dnsmasq 2.90, a DNS forwarder weft was not tuned on: one loop that reads a query, forwards
// it from a port of its own choosing with an id of its own, and answers when the upstream
// answer comes. In front of it a client keeps 16 queries in flight on one UDP socket; behind
// it an upstream server answers each query from a thread of its own after 0.5 to 4 ms, so
// the answers come back out of order (tests/capture/dns_peers.py). All three run under
// `weft capture` with the DNS processor on both ports; reconcile matches the datagrams by
// their hashes and pairs each call with its answer by the DNS id. Each query's tree must be
// exactly its four messages, all with its name: the client's query, dnsmasq's forward, the
// upstream's answer and dnsmasq's answer. When SIGTERM ends it, dnsmasq's signal handler
// writes a byte into its own pipe; once the last query had been answered that byte joined
// its tree (799 of 800 exact), until a wake-up sent after its request was answered went
// to no request.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "capture/real_servers.h"
#include "infer/choose.h"
#include "weft_cli.h"

namespace weft {
namespace {

using testing::AttributeOf;
using testing::RealServersTest;
using testing::Weft;

constexpr int kQueries = 600;

class DnsmasqTest : public RealServersTest {};

TEST_F(DnsmasqTest, ForwardsEveryQueryInItsOwnTree) {
  if (!Installed("/usr/sbin/dnsmasq") || !Installed("/usr/bin/python3"))
    GTEST_SKIP() << "dnsmasq or python3 not installed (scripts/install-deps)";
  const auto [upstream_port, port] = testing::FreePorts<2>();
  ASSERT_NE(port, 0);
  const std::string upstream = std::to_string(upstream_port), front = std::to_string(port);
  const std::string protocols = "auto,dns=" + upstream + ",dns=" + front;
  auto captured = [&](const std::string& sub) {
    return std::vector<std::string>{WEFT_BINARY,   "capture", "-o", Path("capture/" + sub),
                                    "--protocols", protocols, "--"};
  };
  std::vector<std::string> argv = captured("upstream");
  argv.insert(argv.end(), {"/usr/bin/python3", DNS_PEERS, "upstream", upstream});
  const pid_t upstream_server = background_->Start(argv, Path("upstream.out"), SIGINT);
  ASSERT_TRUE(testing::WaitForLog(Path("upstream.out"), "ready")) << Path("upstream.out");
  argv = captured("dnsmasq");
  argv.insert(argv.end(), {"/usr/sbin/dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
                           "--port=" + front, "--listen-address=127.0.0.1", "--bind-interfaces",
                           "--server=127.0.0.1#" + upstream, "--cache-size=0", "--log-facility=-"});
  if (getuid() == 0) argv.push_back("--user=root");
  const pid_t dnsmasq = background_->Start(argv, Path("dnsmasq.out"));
  ASSERT_TRUE(testing::WaitForLog(Path("dnsmasq.out"), "started")) << Path("dnsmasq.out");

  const std::string tag = "run" + std::to_string(getpid());
  auto client = Weft("capture -o " + Path("capture/client") + " --protocols " + protocols +
                     " -- /usr/bin/python3 " + DNS_PEERS + " client " + front + " " +
                     std::to_string(kQueries) + " 16 " + tag);
  ASSERT_EQ(client.rc, 0) << client.output;
  EXPECT_NE(client.output.find(std::to_string(kQueries) + "\n"), std::string::npos)
      << client.output;
  background_->Stop(dnsmasq, SIGTERM);
  background_->Stop(upstream_server, SIGINT);  // Python's KeyboardInterrupt: a clean exit
  const Trace trace = Reconcile();

  // Each query's messages, by the name it asked for.
  std::map<std::string, std::vector<MessageId>> by_name;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string name;
    if (AttributeOf(trace, MessageId(i), "dns.name", &name) && name.ends_with(tag + ".test"))
      by_name[name].push_back(MessageId(i));
  }
  ASSERT_EQ(by_name.size(), size_t(kQueries));
  for (const auto& [name, messages] : by_name) EXPECT_EQ(messages.size(), 4u) << name;

  // Trees that are exactly one query's four messages.
  auto exact = [&](const PathSet& paths) {
    int n = 0;
    for (size_t i = 0; i < paths.instance_count(); ++i) {
      auto messages = paths.InstanceMessages(i);
      std::string name;
      if (messages.empty() || !AttributeOf(trace, messages[0], "dns.name", &name)) continue;
      auto it = by_name.find(name);
      n += it != by_name.end() && messages.size() == it->second.size() &&
           std::is_permutation(messages.begin(), messages.end(), it->second.begin(),
                               it->second.end());
    }
    return n;
  };
  Result<AutoInference> decided = ChooseAlgorithm(trace);
  ASSERT_TRUE(decided.ok()) << decided.status().message();
  const std::string says = decided->choice.Describe();
  std::cerr << "auto: " << says << "\n";
  ASSERT_EQ(decided->choice.algorithm, AutoAlgorithm::kFragment) << says;
  EXPECT_EQ(exact(decided->fragment->paths), kQueries) << says;
}

}  // namespace
}  // namespace weft
