// Two DNS forwarders weft was not tuned on, between a client that keeps 16 queries in
// flight on one UDP socket and an upstream server that answers each query from a thread of
// its own after 0.5 to 4 ms, so that the answers come back out of order
// (tests/capture/dns_peers.py): dnsmasq 2.90 (one loop: it reads a query, forwards it with
// an id of its own, answers when the upstream answer comes) and unbound 1.17 (two threads,
// each with a socket of its own on the port; a thread reads the queries waiting for it
// before it forwards any, each from a port it binds and connects). All three processes run
// under `weft capture` with the DNS processor on both ports; reconcile matches the
// datagrams by their hashes and pairs each call with its answer by the DNS id. Each
// query's tree must be exactly its four messages, all with its name: the client's query,
// the forward, the upstream's answer and the forwarder's answer.
//
// What they found: the upstream's threads pass Python's interpreter lock, and replies
// contradicted those hand-offs (auto fell back to linking, 561-581 of 600); dnsmasq's
// signal handler's byte into its own pipe at exit joined the last query's tree; unbound's
// forwards, from sockets bound and connected, were one-way messages (0 of 600), and then
// went first come where its threads read several queries before forwarding (258 of 600)
// until the forward's name was followed without its id, which a forwarder replaces.
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

constexpr int kQueries = 600;

class DnsForwarderTest : public RealServersTest {
 protected:
  void SetUp() override {
    RealServersTest::SetUp();
    const auto [upstream, front] = testing::FreePorts<2>();
    upstream_ = std::to_string(upstream);
    front_ = std::to_string(front);
    protocols_ = "auto,dns=" + upstream_ + ",dns=" + front_;
  }

  // `weft capture` of argv, logs under capture/<sub>, with the DNS processor on both ports.
  std::vector<std::string> Captured(const std::string& sub, std::vector<std::string> argv) const {
    std::vector<std::string> full = {WEFT_BINARY,   "capture",  "-o", Path("capture/" + sub),
                                     "--protocols", protocols_, "--"};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
  }

  // Starts the upstream server, then the forwarder (argv, logging `started` to its output
  // once it serves), runs the client, stops both, and checks every query's tree.
  void ForwardEveryQuery(const std::vector<std::string>& forwarder, const std::string& started) {
    ASSERT_NE(front_, "0");
    const pid_t upstream = background_->Start(
        Captured("upstream", {"/usr/bin/python3", DNS_PEERS, "upstream", upstream_}),
        Path("upstream.out"), SIGINT);
    ASSERT_TRUE(testing::WaitForLog(Path("upstream.out"), "ready")) << Path("upstream.out");
    const pid_t server =
        background_->Start(Captured("forwarder", forwarder), Path("forwarder.out"));
    ASSERT_TRUE(testing::WaitForLog(Path("forwarder.out"), started)) << Path("forwarder.out");

    const std::string tag = "run" + std::to_string(getpid());
    auto client = Weft("capture -o " + Path("capture/client") + " --protocols " + protocols_ +
                       " -- /usr/bin/python3 " + DNS_PEERS + " client " + front_ + " " +
                       std::to_string(kQueries) + " 16 " + tag);
    ASSERT_EQ(client.rc, 0) << client.output;
    EXPECT_NE(client.output.find(std::to_string(kQueries) + "\n"), std::string::npos)
        << client.output;
    background_->Stop(server, SIGTERM);
    background_->Stop(upstream, SIGINT);  // Python's KeyboardInterrupt: a clean exit
    const Trace trace = Reconcile();

    // Each query's messages, by the name it asked for.
    std::map<std::string, std::vector<MessageId>> by_name;
    for (size_t i = 0; i < trace.size(); ++i) {
      std::string name;
      if (AttributeOf(trace, MessageId(i), "dns.name", &name) && name.ends_with(tag + ".weft"))
        by_name[name].push_back(MessageId(i));
    }
    ASSERT_EQ(by_name.size(), size_t(kQueries));
    for (const auto& [name, messages] : by_name) EXPECT_EQ(messages.size(), 4u) << name;

    // Trees that are exactly one query's four messages.
    testing::ExpectFragmentChosenAndExact(trace, kQueries, [&](std::span<const MessageId> tree) {
      std::string name;
      if (tree.empty() || !AttributeOf(trace, tree[0], "dns.name", &name)) return false;
      auto it = by_name.find(name);
      return it != by_name.end() && tree.size() == it->second.size() &&
             std::is_permutation(tree.begin(), tree.end(), it->second.begin(), it->second.end());
    });
  }

  std::string upstream_, front_, protocols_;
};

TEST_F(DnsForwarderTest, DnsmasqGivesEveryQueryItsOwnTree) {
  if (!Installed("/usr/sbin/dnsmasq") || !Installed("/usr/bin/python3"))
    GTEST_SKIP() << "dnsmasq or python3 not installed (scripts/install-deps)";
  std::vector<std::string> argv = {"/usr/sbin/dnsmasq", "--keep-in-foreground",
                                   "--no-resolv",       "--no-hosts",
                                   "--port=" + front_,  "--listen-address=127.0.0.1",
                                   "--bind-interfaces", "--server=127.0.0.1#" + upstream_,
                                   "--cache-size=0",    "--log-facility=-"};
  if (getuid() == 0) argv.push_back("--user=root");
  ForwardEveryQuery(argv, "started");
}

TEST_F(DnsForwarderTest, UnboundGivesEveryQueryItsOwnTree) {
  if (!Installed("/usr/sbin/unbound") || !Installed("/usr/bin/python3"))
    GTEST_SKIP() << "unbound or python3 not installed (scripts/install-deps)";
  // Two threads, no cache, no daemon, no privileges dropped, forwarding everything to the
  // upstream server on loopback (which unbound declines by default).
  const std::string config = Path("unbound.conf");
  std::ofstream(config) << fmt::format(R"(server:
  interface: 127.0.0.1
  port: {}
  num-threads: 2
  so-reuseport: yes
  do-daemonize: no
  use-syslog: no
  logfile: ""
  username: ""
  chroot: ""
  directory: "{}"
  pidfile: ""
  do-not-query-localhost: no
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  msg-cache-size: 0
  rrset-cache-size: 0
  qname-minimisation: no
  prefetch: no
  do-ip6: no
forward-zone:
  name: "."
  forward-addr: 127.0.0.1@{}
)",
                                       front_, Path(""), upstream_);
  ForwardEveryQuery({"/usr/sbin/unbound", "-d", "-c", config}, "start of service");
}

}  // namespace
}  // namespace weft
