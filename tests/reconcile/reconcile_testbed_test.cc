// weft capture + weft reconcile on the testbed's real servers, checked against the truth
// logs the servers write themselves (docs/testbed.md): every message the truth knows is
// reconciled between the same two endpoints, in the same direction, with the same size,
// and the processes behind each endpoint are the truth's nodes. Pipelined connections too:
// capture's protocol processors (on by default) mark where each frame or HTTP message
// ends, and reconcile cuts messages there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "reconcile/reconcile.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft::reconcile {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

// "web0" -> "web", "client" -> "client".
std::string TierOf(std::string_view node) {
  while (!node.empty() && node.back() >= '0' && node.back() <= '9') node.remove_suffix(1);
  return std::string(node);
}

using MessageKey = std::tuple<MessageKind, std::string, std::string, int64_t>;

// Bytes per direction of each connection (sender endpoint, receiver endpoint).
std::map<std::pair<std::string, std::string>, int64_t> BytesByDirection(const Trace& trace) {
  std::map<std::pair<std::string, std::string>, int64_t> bytes;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    bytes[{std::string(trace.strings().Get(c.sender_endpoint[i])),
           std::string(trace.strings().Get(c.receiver_endpoint[i]))}] += c.bytes[i];
  }
  return bytes;
}

std::string_view AttributeOf(const Trace& trace, MessageId m, std::string_view key) {
  for (const Attribute& a : trace.AttributesOf(m)) {
    if (trace.strings().Get(a.key) == key) return trace.strings().Get(a.value);
  }
  return {};
}

// What a message's payload prefix (hex, --payload-prefix) says about it: the testbed call
// id it carries, from a frame (wire.h: 4-byte length, type, request type (2), request id
// (8), call id (8), all big-endian) or from an HTTP message's "X-Weft-Ids: type
// request-type request-id call-id parent" header (testbed/http.cc); empty if neither.
struct PayloadIds {
  std::string call;          // hex, as the truth's call ids
  std::string request_type;  // HTTP only: decimal, the "/r<type>" of the request's URL
};
PayloadIds IdsOf(const Trace& trace, MessageId m) {
  std::string_view hex = AttributeOf(trace, m, kPayloadAttribute);
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  PayloadIds ids;
  if (bytes.rfind("POST ", 0) == 0 || bytes.rfind("HTTP/", 0) == 0) {
    size_t at = bytes.find("X-Weft-Ids: ");
    size_t end = at == std::string::npos ? at : bytes.find("\r\n", at);
    if (end == std::string::npos) return ids;
    std::istringstream fields(bytes.substr(at + 12, end - at - 12));
    std::string type, request_id, parent;
    fields >> type >> ids.request_type >> request_id >> ids.call >> parent;
    return ids;
  }
  if (bytes.size() < 23 || bytes[4] < 1 || bytes[4] > 3) return ids;
  uint64_t call = 0;
  for (int i = 15; i < 23; ++i) call = call << 8 | uint8_t(bytes[size_t(i)]);
  ids.call = fmt::format("{:x}", call);
  return ids;
}

std::map<MessageKey, int> CountByEndpoints(const Trace& trace) {
  std::map<MessageKey, int> counts;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    ++counts[{c.kind[i], std::string(trace.strings().Get(c.sender_endpoint[i])),
              std::string(trace.strings().Get(c.receiver_endpoint[i])), c.bytes[i]}];
  }
  return counts;
}

class ReconcileTestbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) /
            ("weft-reconcile-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override { fs::remove_all(base_); }

  // Runs the topology traced (protocol processors on, as by default: every testbed
  // connection is detected as frames or HTTP from its first request), reconciles, and
  // compares with the truth: the same messages, one for one, pipelined or not, since each
  // message ends at the boundary the protocol processor found. `http` topologies have
  // HTTP tiers, whose CALLs must carry the request's method and URL as attributes.
  void CheckAgainstTruth(const std::string& topology, bool http) {
    SKIP_UNDER_ASAN();
    std::string capture = (base_ / "capture").string(), truth_dir = (base_ / "truth").string();
    auto run =
        Weft("capture -o " + capture + " --payload-prefix 128 -- " + WEFT_BINARY + " testbed run " +
             WEFT_TOPOLOGIES + "/" + topology + " --duration 2s --concurrency 8 -o " + truth_dir);
    ASSERT_EQ(run.rc, 0) << run.output;
    std::string truth_file = (base_ / "truth.weft").string(),
                run_file = (base_ / "run.weft").string();
    auto truth_run = Weft("testbed truth " + truth_dir + " -o " + truth_file);
    ASSERT_EQ(truth_run.rc, 0) << truth_run.output;
    auto reconciled = Weft("reconcile " + capture + " -o " + run_file + " --nodes process");
    ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
    std::cerr << reconciled.output;
    Result<Trace> truth = LoadTrace(truth_file);
    Result<Trace> trace = LoadTrace(run_file);
    ASSERT_TRUE(truth.ok()) << truth.status().message();
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    ASSERT_GT(truth->size(), 1000u);

    // Compared direction by direction, so that a failure names the connections that differ.
    const auto run_bytes = BytesByDirection(*trace), truth_bytes = BytesByDirection(*truth);
    int differences = 0;
    for (const auto& [direction, bytes] : truth_bytes) {
      auto it = run_bytes.find(direction);
      int64_t got = it == run_bytes.end() ? -1 : it->second;
      if (got != bytes && ++differences <= 5) {
        ADD_FAILURE() << direction.first << " -> " << direction.second << ": truth " << bytes
                      << " bytes, reconciled " << got << " (-1: no message)";
      }
    }
    EXPECT_EQ(differences, 0);
    EXPECT_EQ(run_bytes.size(), truth_bytes.size());
    // Same messages, endpoint for endpoint, direction and size.
    EXPECT_EQ(trace->size(), truth->size());
    EXPECT_EQ(CountByEndpoints(*trace), CountByEndpoints(*truth));

    // A server's listening endpoint names one truth node for the whole run (client ports
    // are reused across connections, so only the server side is used). Each reconciled
    // process must be exactly one truth node; the one that never serves is the client.
    // Then the number of messages between each pair of tiers is the truth's.
    const TraceColumns& t = truth->columns();
    std::map<std::string, std::string> server_of_endpoint;
    std::map<std::pair<std::string, std::string>, int> truth_tiers, trace_tiers;
    for (size_t i = 0; i < truth->size(); ++i) {
      bool call = t.kind[i] == MessageKind::kCall;
      std::string_view endpoint =
          truth->strings().Get(call ? t.receiver_endpoint[i] : t.sender_endpoint[i]);
      server_of_endpoint[std::string(endpoint)] =
          truth->NodeName(call ? t.receiver[i] : t.sender[i]);
      ++truth_tiers[{TierOf(truth->NodeName(t.sender[i])), TierOf(truth->NodeName(t.receiver[i]))}];
    }
    const TraceColumns& c = trace->columns();
    std::map<std::string, std::set<std::string>> truth_nodes_of_process;
    for (size_t i = 0; i < trace->size(); ++i) {
      bool call = c.kind[i] == MessageKind::kCall;
      std::string endpoint(
          trace->strings().Get(call ? c.receiver_endpoint[i] : c.sender_endpoint[i]));
      std::string process(trace->NodeName(call ? c.receiver[i] : c.sender[i]));
      ASSERT_TRUE(server_of_endpoint.count(endpoint)) << endpoint << " serves nothing in the truth";
      truth_nodes_of_process[process].insert(server_of_endpoint[endpoint]);
    }
    std::map<std::string, std::string> truth_node_of_process;
    for (const auto& [process, nodes] : truth_nodes_of_process) {
      EXPECT_EQ(nodes.size(), 1u) << process << " is " << nodes.size() << " truth nodes";
      truth_node_of_process[process] = *nodes.begin();
    }
    int both_times = 0, clients = 0;
    for (size_t i = 0; i < trace->size(); ++i) {
      auto node = [&](NodeId n) {
        auto it = truth_node_of_process.find(std::string(trace->NodeName(n)));
        return it != truth_node_of_process.end() ? it->second : std::string("client");
      };
      ++trace_tiers[{TierOf(node(c.sender[i])), TierOf(node(c.receiver[i]))}];
      both_times += c.send_time[i] != kNoTime && c.recv_time[i] != kNoTime;
    }
    for (size_t n = 0; n < trace->nodes().size(); ++n) {
      clients += !truth_node_of_process.count(std::string(trace->NodeName(NodeId(uint32_t(n)))));
    }
    EXPECT_EQ(clients, 1);  // the load client: the only process that serves nothing
    EXPECT_EQ(trace_tiers, truth_tiers);
    EXPECT_EQ(both_times, int(trace->size()));

    // The call id in each message's payload (its frame, or its X-Weft-Ids header) names a
    // truth message with the same kind and the same two endpoints: every message went to
    // the right sender and receiver. Each HTTP CALL carries the request's method and URL.
    std::map<std::pair<std::string, MessageKind>, std::pair<std::string, std::string>>
        truth_by_call;
    for (size_t i = 0; i < truth->size(); ++i) {
      truth_by_call[{std::string(truth->strings().Get(t.call_id[i])), t.kind[i]}] = {
          std::string(truth->strings().Get(t.sender_endpoint[i])),
          std::string(truth->strings().Get(t.receiver_endpoint[i]))};
    }
    int identified = 0, right = 0, http_calls = 0, http_attributes_right = 0, with_protocol = 0;
    for (size_t i = 0; i < trace->size(); ++i) {
      MessageId m{uint32_t(i)};
      with_protocol += !AttributeOf(*trace, m, kProtocolAttribute).empty();
      PayloadIds ids = IdsOf(*trace, m);
      if (ids.call.empty()) continue;
      ++identified;
      auto it = truth_by_call.find({ids.call, c.kind[i]});
      right +=
          it != truth_by_call.end() &&
          it->second == std::make_pair(std::string(trace->strings().Get(c.sender_endpoint[i])),
                                       std::string(trace->strings().Get(c.receiver_endpoint[i])));
      if (!ids.request_type.empty() && c.kind[i] == MessageKind::kCall) {
        ++http_calls;
        http_attributes_right += AttributeOf(*trace, m, kProtocolAttribute) == "http" &&
                                 AttributeOf(*trace, m, "http.method") == "POST" &&
                                 AttributeOf(*trace, m, "http.url") == "/r" + ids.request_type;
      }
    }
    EXPECT_EQ(identified, int(trace->size()));
    EXPECT_EQ(right, identified);
    EXPECT_EQ(http_attributes_right, http_calls);
    if (http) {
      EXPECT_GT(http_calls, 0);
    }
    // Every stream message ended at a protocol boundary (datagrams are each one message).
    if (topology != "dns.toml") {
      EXPECT_EQ(with_protocol, int(trace->size()));
    }
    // Named by name (--nodes name), the processes are the truth's nodes: each server calls
    // itself by its server's name, the runner "client" while it drives the load.
    std::string named_file = (base_ / "named.weft").string();
    auto named_run = Weft("reconcile " + capture + " -o " + named_file + " --nodes name");
    ASSERT_EQ(named_run.rc, 0) << named_run.output;
    Result<Trace> named = LoadTrace(named_file);
    ASSERT_TRUE(named.ok()) << named.status().message();
    auto pairs_of = [](const Trace& messages) {
      std::map<std::pair<std::string, std::string>, int> pairs;
      auto bare = [&](NodeId n) {  // without "host:"
        std::string_view name = messages.NodeName(n);
        return std::string(name.substr(name.find(':') + 1));
      };
      for (size_t i = 0; i < messages.size(); ++i) {
        ++pairs[{bare(messages.columns().sender[i]), bare(messages.columns().receiver[i])}];
      }
      return pairs;
    };
    EXPECT_EQ(pairs_of(*named), pairs_of(*truth));

    std::cerr << topology << ": truth " << truth->size() << " messages, reconciled "
              << trace->size() << ", identified by payload " << identified << " (" << right
              << " right), HTTP calls " << http_calls << " (" << http_attributes_right
              << " with the right method and URL)\n";
  }

  fs::path base_;
};

TEST_F(ReconcileTestbedTest, ThreeTierMatchesTruth) { CheckAgainstTruth("three-tier.toml", false); }
// Pipelined calls (up to 8 in flight per connection, written back to back; HTTP answered in
// order, frames out of order by the event loop) are one message each, as in the truth.
TEST_F(ReconcileTestbedTest, PipelinedMatchesTruth) { CheckAgainstTruth("pipelined.toml", true); }
// UDP tiers: one message per datagram, paired by ports and payload hash.
TEST_F(ReconcileTestbedTest, DnsOverUdpMatchesTruth) { CheckAgainstTruth("dns.toml", false); }
TEST_F(ReconcileTestbedTest, EveryModelMatchesTruth) {
  CheckAgainstTruth("every-model.toml", false);
}

}  // namespace
}  // namespace weft::reconcile
