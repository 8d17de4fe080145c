// nginx as a reverse proxy in front of the testbed, under weft capture;
// the fixture and helpers are in real_servers.h, the figures in docs/reconcile.md ("Real
// servers").
#include "capture/real_servers_nginx.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "capture/real_servers.h"
#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "testbed/truth.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::ExactTrees;
using testing::Fill;
using testing::IdsOf;
using testing::kNginxConf;
using testing::kProxiedTopology;
using testing::PayloadPrefix;
using testing::ProgramOf;
using testing::RealServersTest;
using testing::TestbedIds;
using testing::Weft;

void CheckHttpAttributes(const Trace& trace, const std::vector<MessageId>& requests,
                         const std::vector<MessageId>& replies) {
  int urls = 0, statuses = 0;
  for (MessageId m : requests) {
    std::string url, method;
    if (testing::AttributeOf(trace, m, "http.url", &url)) {
      ++urls;
      std::string prefix = PayloadPrefix(trace, m);
      EXPECT_EQ(url, prefix.substr(5, prefix.find(' ', 5) - 5));  // "POST /r0 HTTP/1.1"
    }
    if (testing::AttributeOf(trace, m, "http.method", &method)) {
      EXPECT_EQ(method, "POST");
    }
  }
  for (MessageId m : replies) {
    std::string status;
    if (!testing::AttributeOf(trace, m, "http.status", &status)) continue;
    ++statuses;
    EXPECT_EQ(status, "200");
  }
  std::cerr << "http.url on " << urls << " of " << requests.size() << " requests, http.status on "
            << statuses << " of " << replies.size() << " replies\n";
  EXPECT_EQ(urls, int(requests.size()));
  EXPECT_EQ(statuses, int(replies.size()));
}

// nginx in front of the testbed, every process captured (with --isolate if `isolate_`).
class NginxFrontTest : public RealServersTest {
 protected:
  void Run();
};

// Without isolation: every message is reconciled with its ids, and fragment gets nearly
// every tree (a few go wrong where one epoll round hands the worker two inputs at once).
TEST_F(NginxFrontTest, ReconcilesEveryRequest) { Run(); }

// With --isolate, each epoll_wait reports the worker one input (BorderPatrol §3.2): every
// request's tree is exact for fragment.
TEST_F(NginxFrontTest, IsolateMakesEveryTreeExactForFragment) {
  isolate_ = true;
  Run();
}

void NginxFrontTest::Run() {
  if (!Installed("/usr/sbin/nginx")) GTEST_SKIP() << "nginx not installed (scripts/install-deps)";
  auto [web, db, front] = testing::FreePorts<3>();
  ASSERT_TRUE(web != 0 && db != 0 && front != 0);
  std::string topology = Path("topology.toml"), truth_dir = Path("truth"), prefix = Path("nginx");
  fs::create_directories(truth_dir);
  fs::create_directories(prefix);
  std::ofstream(topology) << Fill(kProxiedTopology,
                                  {{"@WEB@", std::to_string(web)}, {"@DB@", std::to_string(db)}});
  std::string conf = prefix + "/nginx.conf";
  std::ofstream(conf) << Fill(
      kNginxConf,
      {{"@P@", prefix}, {"@WEB@", std::to_string(web)}, {"@PORT@", std::to_string(front)}});
  pid_t db0 = StartCaptured("db0", {WEFT_TESTBED_SERVER, topology, "db0", truth_dir});
  pid_t web0 = StartCaptured("web0", {WEFT_TESTBED_SERVER, topology, "web0", truth_dir});
  pid_t nginx =
      StartCaptured("nginx", {"/usr/sbin/nginx", "-c", conf, "-p", prefix, "-e",
                              prefix + "/error.log", "-g", "daemon off; master_process on;"});
  ASSERT_TRUE(testing::WaitForPort(db) && testing::WaitForPort(web) && testing::WaitForPort(front))
      << testing::ReadFile(prefix + "/error.log");
  auto load = Weft(Capture("client", std::string(WEFT_BINARY) + " testbed load " + topology +
                                         " --entry-port " + std::to_string(front) +
                                         " --duration 1s --concurrency 4 -o " + truth_dir));
  ASSERT_EQ(load.rc, 0) << load.output;
  std::cerr << load.output;
  for (pid_t pid : {nginx, web0, db0}) {
    int status = background_->Stop(pid, SIGTERM);
    EXPECT_TRUE(WIFEXITED(status)) << "pid " << pid << " status " << status;
  }
  std::string nginx_log = testing::ReadFile(prefix + "/error.log");
  EXPECT_EQ(nginx_log.find("[error]"), std::string::npos) << nginx_log;

  Result<Trace> truth = testbed::BuildTruthTrace(truth_dir);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  Trace trace = Reconcile();
  testing::PairCounts pairs = testing::CountByNodes(trace);
  std::cerr << testing::FormatCounts(pairs);

  // The truth's calls per tier pair, and their call ids.
  testing::CallsByPair truth_calls = testing::TruthCalls(*truth);
  size_t requests = truth_calls[{MessageKind::kCall, "client>web0"}].size();
  // How many ran in the second depends on the machine's load (137 under a load average of
  // 16, over 500 when quiet); every one of them is checked below.
  ASSERT_GT(requests, 0u);

  // Which process is which: the load client is the only traced "weft"; nginx's worker is
  // the nginx process it calls; web0 is what the worker calls, db0 what web0 calls.
  const TraceColumns& c = trace.columns();
  auto node = [&](size_t i, bool sender) {
    return std::string(trace.NodeName(sender ? c.sender[i] : c.receiver[i]));
  };
  // process -> client | nginx | web0 | db0
  std::map<std::string, std::string> role =
      testing::ProxyRoles(trace, {{"weft", "client"}}, "nginx");
  ASSERT_EQ(role.size(), 4u) << "client, nginx worker, web0, db0";
  std::string client;
  for (const auto& [process, r] : role) {
    if (r == "client") client = process;
    EXPECT_EQ(ProgramOf(process), r == "client"  ? "weft"
                                  : r == "nginx" ? "nginx"
                                                 : "weft-testbed-server");
  }

  // Every message between these four, by role pair, with the ids it carries.
  testing::CallsByPair trace_calls;
  std::vector<MessageId> http_requests, http_replies;
  int untimed = 0, other = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    auto from = role.find(node(i, true)), to = role.find(node(i, false));
    if (from == role.end() || to == role.end()) {
      // nginx's master talks to its worker over a socketpair (the channel): kind MSG.
      other += !(c.kind[i] == MessageKind::kMessage && ProgramOf(node(i, true)) == "nginx");
      continue;
    }
    MessageId m{uint32_t(i)};
    TestbedIds ids = IdsOf(PayloadPrefix(trace, m));
    EXPECT_NE(ids.request, 0u) << "message " << i << " carries no testbed ids";
    trace_calls[{c.kind[i], from->second + ">" + to->second}].insert(ids.call);
    untimed += c.send_time[i] == kNoTime || c.recv_time[i] == kNoTime;
    bool http = from->second != "db0" && to->second != "db0";
    if (http) (c.kind[i] == MessageKind::kCall ? http_requests : http_replies).push_back(m);
  }
  EXPECT_EQ(other, 0);
  EXPECT_EQ(untimed, 0);
  // Each of the truth's client calls to web0 went client -> nginx and nginx -> web0, and
  // came back the same way; web0's calls to db0 are the truth's, one for one, by call id.
  testing::ExpectCallsAsInTruth(trace_calls, truth_calls, "nginx");
  CheckHttpAttributes(trace, http_requests, http_replies);

  // Every request's tree. db calls per request, from web0's frames (checked against the
  // truth above).
  std::map<uint64_t, int> db_calls;
  for (MessageId m : http_requests) {
    if (role[node(m.value(), true)] == "client")
      db_calls[IdsOf(PayloadPrefix(trace, m)).request] += 0;
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kCall && role.count(node(i, true)) &&
        role[node(i, true)] == "web0") {
      ++db_calls[IdsOf(PayloadPrefix(trace, MessageId{uint32_t(i)})).request];
    }
  }
  ASSERT_EQ(db_calls.size(), requests);
  Result<FragmentInference> fragment = InferFragment(trace);
  Result<ThreadInference> thread = InferThread(trace);
  ASSERT_TRUE(fragment.ok() && thread.ok());
  std::set<uint64_t> wrong;
  int fragment_exact = ExactTrees(trace, fragment->paths, client, db_calls, 4, 5, &wrong);
  int thread_exact = ExactTrees(trace, thread->paths, client, db_calls);
  std::cerr << requests << " requests; exact trees: fragment " << fragment_exact << ", thread "
            << thread_exact << "\n";
  // The requests whose call to web0 was the first message on its connection: nginx
  // connected (non-blocking) while handling the request and wrote the call when the
  // connection became writable, in a fragment of its own.
  std::map<std::pair<StringId, StringId>, std::pair<TimeNs, uint64_t>> first_on_connection;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kCall || !role.count(node(i, true)) ||
        role[node(i, true)] != "nginx")
      continue;
    auto [it, inserted] = first_on_connection.try_emplace(
        {c.sender_endpoint[i], c.receiver_endpoint[i]}, c.send_time[i], 0);
    if (inserted || c.send_time[i] < it->second.first) {
      it->second = {c.send_time[i], IdsOf(PayloadPrefix(trace, MessageId{uint32_t(i)})).request};
    }
  }
  std::set<uint64_t> opened;
  for (const auto& [connection, first] : first_on_connection) opened.insert(first.second);
  int wrong_opened = 0;
  for (uint64_t r : wrong) wrong_opened += opened.count(r) != 0;
  std::cerr << "fragment: " << wrong.size() << " trees wrong, " << wrong_opened
            << " of them requests that opened one of " << opened.size()
            << " upstream connections\n";
  // nginx's worker is one event loop: vPath's assumption (one thread per request) fails,
  // BorderPatrol's holds as long as each input is handled before the next is read.
  // Without isolation a few requests go wrong where one epoll round hands the worker two
  // inputs at once (measured 99.9% exact; docs/precise.md). With it every tree is exact:
  // one input per wait, and the requests that opened an upstream connection (nginx
  // connects without blocking, takes the next client's input, and writes the call when
  // the connection is writable) are followed by the connect (connect_time, BorderPatrol
  // §3: connection creation is an output of the request that made it).
  if (isolate_) {
    EXPECT_EQ(fragment_exact, int(requests));
    EXPECT_EQ(wrong_opened, 0);
  } else {
    EXPECT_GE(fragment_exact, int(requests * 95 / 100));
  }
  EXPECT_LT(thread_exact, int(requests));
}

}  // namespace
}  // namespace weft
