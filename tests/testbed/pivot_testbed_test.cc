// Live queries on a running testbed: every server process starts its agent (the bus named
// by WEFT_PIVOT_BUS, an embedded hub this test hosts), queries are installed through the
// agent protocol, and what the agents publish, merged, must equal the counts in the truth
// logs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/merge.h"
#include "pivot/protocol.h"
#include "sanitizer_build.h"
#include "testbed/runner.h"
#include "testbed/testbed_test_util.h"
#include "testbed/topology.h"

namespace weft::testbed {
namespace {

using Counts = std::map<std::string, int64_t>;

// A front tier in `model` serving two request types, each reading from a storage tier of
// three replicas that prefers its first (the case study's shape, docs/testbed.md).
// "MODEL/http": the storage tier speaks HTTP (baggage in a W3C baggage header).
std::string TopologyText(std::string model) {
  bool http = model.ends_with("/http");
  if (http) model.resize(model.size() - 5);
  std::string text = R"toml(
name = "pivot-MODEL"
[[tier]]
name = "front"
model = "MODEL"
workers = 4
[[tier.request]]
name = "read"
before = "exp(50us)"
calls = [{ tier = "storage", request = "get", count = "1-3" }]
[[tier.request]]
name = "list"
weight = 0.5
calls = [{ tier = "storage", request = "scan", count = "0-2", parallel = true }]
[[tier]]
name = "storage"
model = "MODEL"
workers = 4
balance = "prefer-first"
prefer_share = 0.6
servers = 3
protocol = "PROTOCOL"
[[tier.request]]
name = "get"
before = "exp(50us)"
disk_bytes = 4096
[[tier.request]]
name = "scan"
before = "exp(50us)"
disk_bytes = 65536
)toml";
  for (size_t at; (at = text.find("MODEL")) != std::string::npos;) text.replace(at, 5, model);
  text.replace(text.find("PROTOCOL"), 8, http ? "http" : "tcp");
  return text;
}

// What the truth logs say: requests received per type, calls sent per type of the request
// that made them, and disk reads (requests received by storage) per server.
struct Truth {
  Counts requests, calls_by_request, storage_by_server;
  // Storage requests by the type of the front request that called them.
  Counts storage_by_front_type;
  // Per type of storage request, the disk reads its reply can see: its own, and those of
  // the calls its front request made before it, in sequence (their replies brought them
  // back, and the next call carried them down): k(k+1)/2 over a request's k sequential
  // calls, k over k parallel ones.
  Counts reads_seen_by_storage_replies;
};

Truth ReadTruth(const std::string& dir) {
  Truth t;
  std::map<std::string, std::string> front_type_of_call;  // a call the front sent
  std::vector<std::string> storage_calls;                 // calls storage received
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".truth") continue;
    std::string node = entry.path().stem().string();
    if (node == "client") continue;
    std::ifstream in(entry.path());
    std::map<std::string, std::string> type_of_call;        // received call id -> its type
    std::vector<std::pair<std::string, std::string>> sent;  // parent call, type
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("#")) continue;  // the header
      std::istringstream f(line);
      std::string when, thread, dir_, type, local, peer, request, call, parent, bytes, name;
      f >> when >> thread >> dir_ >> type >> local >> peer >> request >> call >> parent >> bytes >>
          name;
      if (name == "-" || name == "?") continue;
      if (dir_ == "R") {
        ++t.requests[name];
        type_of_call[call] = name;
        if (node.starts_with("storage")) {
          ++t.storage_by_server[node];
          storage_calls.push_back(call);
        }
      } else {
        sent.emplace_back(parent, call);
      }
    }
    std::map<std::string, int64_t> calls_of;  // per request received here
    for (const auto& [parent, call] : sent) {
      ++t.calls_by_request[type_of_call[parent]];
      front_type_of_call[call] = type_of_call[parent];
      ++calls_of[parent];
    }
    for (const auto& [parent, k] : calls_of) {
      // The topology: "read" calls "get" in sequence, "list" calls "scan" in parallel.
      if (type_of_call[parent] == "read") t.reads_seen_by_storage_replies["get"] += k * (k + 1) / 2;
      if (type_of_call[parent] == "list") t.reads_seen_by_storage_replies["scan"] += k;
    }
  }
  for (const std::string& call : storage_calls) ++t.storage_by_front_type[front_type_of_call[call]];
  return t;
}

// The front end's side of the agent protocol, on a hub it hosts.
class FrontEnd {
 public:
  explicit FrontEnd(const std::string& url) {
    auto bus = pivot::OpenBus(url, {.may_host = true});
    EXPECT_TRUE(bus.ok()) << bus.status().message();
    if (!bus.ok()) return;
    bus_ = std::move(*bus);
    auto results =
        bus_->Subscribe("weft.pivot.results.>", [this](std::string_view, std::string_view payload) {
          auto p = pivot::DecodePartials(payload);
          std::lock_guard lock(mu_);
          if (!p.ok()) {
            ++bad_;
            return;
          }
          if (p->final) finals_[p->id].insert(p->pid);
          merged_[p->id].Add(*p);
        });
    EXPECT_TRUE(results.ok());
    auto replies = bus_->Subscribe("weft.pivot.reply.testbed",
                                   [this](std::string_view, std::string_view payload) {
                                     auto a = pivot::DecodeAgent(payload);
                                     std::lock_guard lock(mu_);
                                     if (!a.ok()) return;
                                     std::set<std::string>& ids = agents_[a->pid];
                                     for (const pivot::InstalledQueryInfo& q : a->queries)
                                       ids.insert(q.id);
                                   });
    EXPECT_TRUE(replies.ok());
  }
  bool ok() const { return bus_ != nullptr; }

  // Lists the agents until `n` of them answer having every query of `ids` installed (a
  // liveness bound, not a timing threshold: the agents connect in the background).
  bool AwaitAgents(size_t n, const std::set<std::string>& ids) {
    for (int attempt = 0; attempt < 600; ++attempt) {
      {
        std::lock_guard lock(mu_);
        agents_.clear();
      }
      bus_->Publish(pivot::kListSubject,
                    pivot::EncodeList({.reply_to = "weft.pivot.reply.testbed"}));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard lock(mu_);
      size_t ready = 0;
      for (const auto& [pid, installed] : agents_) {
        bool all = true;
        for (const std::string& id : ids) all = all && installed.contains(id);
        ready += all;
      }
      if (ready >= n) return true;
    }
    return false;
  }

  void Install(const std::string& id, const std::string& text, uint32_t slot_base) {
    pivot::InstallMessage m{.id = id, .text = text, .slot_base = slot_base};
    m.catalog = {
        {"Testbed.Request", {"type", "bytes", "client", "server", "time"}, ""},
        {"Testbed.Call", {"type", "bytes", "tier", "to", "server", "replicas", "time"}, ""},
        {"Testbed.Reply", {"type", "status", "bytes", "latency", "server", "time"}, ""},
        {"Testbed.DiskRead", {"type", "bytes", "server", "duration", "time"}, ""},
        {"Testbed.QueueWait", {"wait", "stage", "server", "time"}, ""}};
    bus_->Publish(pivot::kInstallSubject, pivot::EncodeInstall(m));
  }

  // Uninstalls `id` and waits for `n` agents' final partials.
  bool Uninstall(const std::string& id, size_t n) {
    bus_->Publish(pivot::kUninstallSubject, pivot::EncodeUninstall({.id = id}));
    for (int attempt = 0; attempt < 600; ++attempt) {
      {
        std::lock_guard lock(mu_);
        if (finals_[id].size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // The merged answer of a "GroupBy key Select key, COUNT" query.
  Counts Result(const std::string& id) {
    std::lock_guard lock(mu_);
    Counts out;
    for (const query::ResultRow& row : merged_[id].Result().rows) {
      if (row.values.size() != 2) continue;
      out[std::string(row.values[0].s)] += row.values[1].i;
    }
    return out;
  }
  // Every merged row of `id`.
  std::vector<query::ResultRow> Rows(const std::string& id) {
    std::lock_guard lock(mu_);
    return merged_[id].Result().rows;
  }
  uint64_t drops(const std::string& id) {
    std::lock_guard lock(mu_);
    return merged_[id].drops();
  }
  int bad() {
    std::lock_guard lock(mu_);
    return bad_;
  }

 private:
  std::unique_ptr<pivot::Bus> bus_;
  std::mutex mu_;
  std::map<std::string, pivot::ResultMerger> merged_;
  std::map<std::string, std::set<int64_t>> finals_;
  std::map<int64_t, std::set<std::string>> agents_;
  int bad_ = 0;
};

// The live counts of query `id` equal the truth's. An agent drops (and counts) a tuple
// whose firing meets a harvest of its buffer rather than make the program wait
// (src/pivot/live_query.h): then each count is at most the truth's and they miss exactly
// the drops.
void ExpectCounts(FrontEnd& front, const std::string& id, const Counts& truth) {
  Counts live = front.Result(id);
  uint64_t drops = front.drops(id);
  if (drops == 0) {
    EXPECT_EQ(live, truth) << id;
    return;
  }
  int64_t missing = 0;
  for (const auto& [key, n] : truth) {
    EXPECT_LE(live[key], n) << id << " " << key;
    missing += n - live[key];
  }
  EXPECT_EQ(live.size(), truth.size()) << id;
  EXPECT_EQ(uint64_t(missing), drops) << id;
}

// Queries by id, with their first baggage slots.
struct LiveQuery {
  std::string id, text;
  uint32_t slot_base = 0;
};

// Runs the topology in `model` three times (short runs, a few clients) with `queries`
// installed in every server's agent before the load starts, and hands their merged final
// results and the run's truth to `check`.
void RunLiveTopology(const Result<Topology>& topo, const std::string& name,
                     const std::vector<LiveQuery>& queries,
                     const std::function<void(FrontEnd&, Truth&)>& check) {
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  size_t servers = 0;
  for (const Tier& t : topo->tiers) servers += t.servers.size();
  std::set<std::string> ids;
  for (const LiveQuery& q : queries) ids.insert(q.id);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::string dir = TempDir("pivot_" + name);
    std::string url = "unix:" + dir + "/bus.sock";
    setenv("WEFT_PIVOT_BUS", url.c_str(), 1);
    std::unique_ptr<FrontEnd> front;
    bool ready = false, finished = true;
    RunOptions options;
    options.duration = kSecond;
    options.concurrency = 4;
    options.out_dir = dir;
    options.before_load = [&](const Topology&) {
      // Hosted here, after the servers were forked: RunTestbed forks with one thread.
      front = std::make_unique<FrontEnd>(url);
      if (!front->ok()) return;
      ASSERT_TRUE(front->AwaitAgents(servers, {}));
      for (const LiveQuery& q : queries) front->Install(q.id, q.text, q.slot_base);
      ready = front->AwaitAgents(servers, ids);
    };
    options.after_load = [&](const Topology&) {
      if (front == nullptr || !front->ok()) return;
      for (const std::string& id : ids) finished = front->Uninstall(id, servers) && finished;
    };
    Result<RunReport> report = RunTestbed(*topo, options);
    unsetenv("WEFT_PIVOT_BUS");
    ExpectNoChildren();
    ASSERT_TRUE(report.ok()) << report.status().message();
    ASSERT_TRUE(front != nullptr && front->ok());
    ASSERT_TRUE(ready) << "the agents did not all install the queries";
    EXPECT_TRUE(finished) << "some agent sent no final results";
    // Any request will do: the counts are compared with the truth of however many ran (a
    // machine under heavy load has completed as few as 9 in the second).
    EXPECT_GT(report->load.ok, 0u);
    EXPECT_EQ(report->load.errors, 0u);
    Truth truth = ReadTruth(dir);
    check(*front, truth);
    EXPECT_EQ(front->bad(), 0);
    front.reset();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
  }
}

void RunLive(const std::string& model, const std::vector<LiveQuery>& queries,
             const std::function<void(FrontEnd&, Truth&)>& check) {
  RunLiveTopology(ParseTopology(TopologyText(model), "inline"), model.substr(0, model.find('/')),
                  queries, check);
}

class PivotTestbedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // AddressSanitizer does not lock its allocator across fork, GCC 12's nor clang 14's
    // (LLVM's does from release 17): a child forked while another of the server's threads
    // allocates waits forever at its own first allocation of that size (seen in gdb, in
    // the agent's pthread_atfork handler and in the child's request), and its request is
    // lost.
    if (weft::testing::kSanitized && GetParam() == "fork") {
      GTEST_SKIP() << "the fork model deadlocks under this ASan";
    }
  }
};

// Queries within one process: counts per type, a happened-before join of each call with
// the request that made it, and the disk reads per storage replica (the biased one shows).
TEST_P(PivotTestbedTest, LiveCountsEqualTruth) {
  RunLive(GetParam(),
          {{"requests", "From r In Testbed.Request GroupBy r.type Select r.type, COUNT", 0},
           {"calls",
            "From c In Testbed.Call Join r In First(Testbed.Request) On r -> c "
            "GroupBy r.type Select r.type, COUNT",
            4},
           {"disk", "From d In Testbed.DiskRead GroupBy d.server Select d.server, COUNT", 8}},
          [](FrontEnd& front, Truth& truth) {
            ExpectCounts(front, "requests", truth.requests);
            ExpectCounts(front, "calls", truth.calls_by_request);
            ExpectCounts(front, "disk", truth.storage_by_server);
            EXPECT_GT(truth.storage_by_server["storage0"], truth.storage_by_server["storage1"]);
            EXPECT_GT(truth.storage_by_server["storage0"], truth.storage_by_server["storage2"]);
          });
}

// Queries across processes: the front request's type seen at the storage replica's disk
// read (baggage sent down with the call), and every disk read seen again at the front's
// reply (baggage brought back with the reply and joined).
TEST_P(PivotTestbedTest, BaggageCrossesProcessesBothWays) {
  RunLive(GetParam(),
          {{"down",
            "From d In Testbed.DiskRead Join r In First(Testbed.Request) On r -> d "
            "GroupBy r.type Select r.type, COUNT",
            0},
           {"up",
            "From r In Testbed.Reply Join d In Testbed.DiskRead On d -> r "
            "GroupBy r.type Select r.type, COUNT",
            4}},
          [](FrontEnd& front, Truth& truth) {
            ExpectCounts(front, "down", truth.storage_by_front_type);
            // The front's replies see every disk read their calls made; storage's see their
            // own and the earlier calls' of the same front request.
            Counts up = truth.calls_by_request;
            for (const auto& [type, n] : truth.reads_seen_by_storage_replies) up[type] = n;
            ExpectCounts(front, "up", up);
          });
}

INSTANTIATE_TEST_SUITE_P(Models, PivotTestbedTest,
                         ::testing::Values("thread-per-connection", "worker-pool", "handoff",
                                           "staged", "event-loop", "spawn", "fork",
                                           "worker-pool/http", "event-loop/http"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::erase(name, '-');
                           std::erase(name, '/');
                           return name;
                         });

// The case study of docs/pivot.md, on its own topology: four storage servers hold each
// block three times, the locations listed in a fixed order, and the balancer takes the first
// listed nine times in ten (prefer_share = 0.9).
Result<Topology> CaseStudy() {
  return LoadTopology(std::string(WEFT_TOPOLOGIES) + "/replica-favourites.toml");
}

// Q7's answer: which replica each call chose, given its candidates. The live counts per
// replica equal the truth's; every choice is one of the call's three candidates, listed in
// the tier's order; and the first listed is chosen in a share of the calls that a fair
// coin of prefer_share explains (within five standard deviations: the balancer's draws are
// seeded, so this is a property of the seed, not of the run's timing).
TEST(PivotCaseStudyTest, TheFirstListedReplicaIsChosen) {
  Result<Topology> topo = CaseStudy();
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  const double prefer_share = topo->tiers[1].prefer_share;
  RunLiveTopology(
      topo, "favourites",
      {{"chosen", "From c In Testbed.Call GroupBy c.replicas, c.to Select c.replicas, c.to, COUNT",
        0}},
      [&](FrontEnd& front, Truth& truth) {
        Counts by_replica;
        int64_t calls = 0, first = 0;
        for (const query::ResultRow& row : front.Rows("chosen")) {
          ASSERT_EQ(row.values.size(), 3u);
          std::string replicas(row.values[0].s), to(row.values[1].s);
          int64_t n = row.values[2].i;
          by_replica[to] += n;
          calls += n;
          std::vector<std::string> listed;
          for (size_t at = 0; at <= replicas.size();) {
            size_t comma = std::min(replicas.find(',', at), replicas.size());
            listed.push_back(replicas.substr(at, comma - at));
            at = comma + 1;
          }
          EXPECT_EQ(listed.size(), 3u) << replicas;
          EXPECT_TRUE(std::is_sorted(listed.begin(), listed.end())) << replicas;
          EXPECT_NE(std::find(listed.begin(), listed.end(), to), listed.end()) << replicas;
          if (to == listed[0]) first += n;
        }
        // As ExpectCounts: a tuple an agent dropped is missing from the live counts.
        int64_t truth_calls = 0;
        for (const auto& [replica, n] : truth.storage_by_server) {
          EXPECT_LE(by_replica[replica], n) << replica;
          truth_calls += n;
        }
        EXPECT_EQ(by_replica.size(), truth.storage_by_server.size());
        EXPECT_EQ(calls + int64_t(front.drops("chosen")), truth_calls);
        ASSERT_GT(calls, 0);
        double share = double(first) / double(calls);
        double sigma = std::sqrt(prefer_share * (1 - prefer_share) / double(calls));
        EXPECT_NEAR(share, prefer_share, 5 * sigma) << first << " of " << calls;
      });
}

// Pivot's request/response join of replies: what advice packs at a storage server's Reply
// goes back in the reply's baggage, so each front reply sees the storage replies of its
// calls: exactly one per read (one block call), and for a list one per meta call it made.
TEST(PivotCaseStudyTest, CallerRepliesSeeTheCalleesReplies) {
  RunLiveTopology(CaseStudy(), "replies",
                  {{"replies",
                    "From r In Testbed.Reply Join s In Testbed.Reply On s -> r "
                    "GroupBy r.type Select r.type, COUNT",
                    0}},
                  [&](FrontEnd& front, Truth& truth) {
                    ExpectCounts(front, "replies",
                                 {{"read", truth.calls_by_request["read"]},
                                  {"list", truth.calls_by_request["list"]}});
                  });
}

// The latency decomposition: each read's end-to-end latency at the front (Reply's latency)
// split into the front's queue, the front's work, the call until the disk read starts, the
// disk read, and the rest (the storage's reply, the way back, the front's work after), from
// tuples packed at the front and at the storage server and brought back in the reply's
// baggage. One row per read (the truth's count), every component non-negative (the
// tracepoints fired in the request's order), and the components add up to the latency
// exactly, in integer nanoseconds.
TEST(PivotCaseStudyTest, ComponentsAddUpToTheLatency) {
  RunLiveTopology(
      CaseStudy(), "decomposition",
      {{"parts",
        "From r In Testbed.Reply Join f In First(Testbed.Request) On f -> r "
        "Join q In Testbed.QueueWait On q -> r Join c In Testbed.Call On c -> r "
        "Join d In Testbed.DiskRead On d -> r Where r.type == \"read\" "
        "Select COUNT, SUM(r.latency), SUM(q.time - f.time), SUM(c.time - q.time), "
        "SUM(d.time - c.time), SUM(d.duration), SUM(r.time - d.time - d.duration), "
        "MIN(q.time - f.time), MIN(c.time - q.time), MIN(d.time - c.time), MIN(d.duration), "
        "MIN(r.time - d.time - d.duration)",
        0}},
      [&](FrontEnd& front, Truth& truth) {
        std::vector<query::ResultRow> rows = front.Rows("parts");
        ASSERT_EQ(rows.size(), 1u);
        const std::vector<query::Value>& v = rows[0].values;
        ASSERT_EQ(v.size(), 12u);
        int64_t reads = truth.requests["read"];
        EXPECT_EQ(v[0].i + int64_t(front.drops("parts")), reads);
        double parts = 0;
        for (size_t k = 2; k <= 6; ++k) parts += v[k].AsDouble();
        EXPECT_EQ(parts, v[1].AsDouble());
        for (size_t k = 7; k <= 11; ++k) EXPECT_GE(v[k].AsDouble(), 0) << "component " << k - 7;
      });
}

}  // namespace
}  // namespace weft::testbed
