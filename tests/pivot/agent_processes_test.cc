// Live queries end to end between real processes: three instrumented programs
// (pivot_agent_peer, each with its agent started from WEFT_PIVOT_BUS), this process as
// the front end (LiveSession), over the embedded bus (this process hosts the hub) and over
// a real nats-server, which one test kills with SIGKILL mid-run and starts again.
//
// What is asserted is what is not timing: every interval the front end returns has the
// partials of all three agents; the counts equal what the programs say they fired; none
// arrived late; during an outage the programs keep firing and the agents count the
// partials they could not send, and after it results arrive from all three again; a
// forked child's tuples reach the results and the parent's are not counted twice. How
// soon results arrive, and the programs' rate during an outage, are measured by
// bench/pivot_agents_bench.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pivot/agent_peer.h"
#include "pivot/bus.h"
#include "pivot/frontend.h"
#include "pivot/processes.h"
#include "pivot/protocol.h"

namespace weft::pivot {
namespace {

namespace fs = std::filesystem;
constexpr int kPeers = 3;
constexpr int64_t kSecond = 1'000'000'000;
const char* const kTickQuery =
    "From t In Peer.Tick GroupBy t.peer Select t.peer, COUNT, MIN(t.seq), MAX(t.seq)";
const char* const kChildQuery = "From c In Peer.Child GroupBy c.peer Select c.peer, COUNT";

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t AsInt(const query::Value& v) {
  return v.type == query::ValueType::kFloat ? int64_t(v.f) : v.i;
}

// Which agents sent partials for each interval of a query, seen on the bus itself.
class PartialsSeen {
 public:
  Status Subscribe(Bus& bus, const std::string& id) {
    WEFT_ASSIGN_OR_RETURN(sub_, bus.Subscribe(ResultsSubject(id), [this](auto, auto payload) {
      Result<PartialResults> p = DecodePartials(payload);
      if (!p.ok() || p->final) return;
      std::lock_guard lock(mu_);
      agents_[p->interval_start_ns].insert(p->pid);
    }));
    bus_ = &bus;
    return Status::Ok();
  }
  ~PartialsSeen() {
    if (bus_ != nullptr) bus_->Unsubscribe(sub_);
    if (bus_ != nullptr) (void)bus_->Flush(1000);
  }
  std::set<int64_t> of(int64_t interval) {
    std::lock_guard lock(mu_);
    return agents_[interval];
  }

 private:
  Bus* bus_ = nullptr;
  uint64_t sub_ = 0;
  std::mutex mu_;
  std::map<int64_t, std::set<int64_t>> agents_;
};

// Per peer (the query's first column), the sum of the second column and the extremes of
// the third and fourth, over `results`.
struct PeerTotals {
  int64_t count = 0, min = INT64_MAX, max = -1;
};
std::map<int64_t, PeerTotals> Totals(const std::vector<query::QueryResult>& results) {
  std::map<int64_t, PeerTotals> out;
  for (const query::QueryResult& r : results) {
    for (const query::ResultRow& row : r.rows) {
      PeerTotals& t = out[AsInt(row.values[0])];
      t.count += AsInt(row.values[1]);
      if (row.values.size() >= 4) {
        t.min = std::min(t.min, AsInt(row.values[2]));
        t.max = std::max(t.max, AsInt(row.values[3]));
      }
    }
  }
  return out;
}

class AgentProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-pivot-agents-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t p : peers_) {
      if (p > 0) ReapProcess(p, SIGKILL);
    }
    if (server_ > 0) ReapProcess(server_, SIGKILL);
    fs::remove_all(dir_);
  }

  // Starts a nats-server on a free port (kept in server_, killed at the end) and returns
  // its URL, or "" if it did not start.
  std::string StartNats(int* port_out = nullptr) {
    const int port = PickFreeTcpPort();
    server_ = StartNatsServer(NATS_SERVER, port);
    if (server_ <= 0) return "";
    if (port_out != nullptr) *port_out = port;
    return "nats://127.0.0.1:" + std::to_string(port);
  }

  // Three peers on `url`, firing every `period_us`, forking every `fork_every` firings.
  void StartPeers(const std::string& url, int64_t period_us, uint64_t fork_every = 0) {
    for (int i = 0; i < kPeers; ++i) {
      std::string path = (dir_ / ("stats" + std::to_string(i))).string();
      stats_.push_back(MapAgentPeerStats(path));
      ASSERT_NE(stats_.back(), nullptr);
      peers_.push_back(SpawnProcess({PIVOT_AGENT_PEER, path, std::to_string(i),
                                     std::to_string(period_us), std::to_string(fork_every)},
                                    {{"WEFT_PIVOT_BUS", url}}));
    }
  }

  // Waits until the three agents answer a list, then installs `text`, and waits until
  // every agent has woven it.
  std::unique_ptr<LiveSession> Install(Bus& bus, const std::string& text, int64_t interval_ns) {
    EXPECT_TRUE(WaitUntil([&] {
      Result<std::vector<AgentDescription>> a = ListAgents(bus, 200);
      return a.ok() && a->size() == kPeers;
    }));
    auto session = LiveSession::Install(bus, text, {.interval_ns = interval_ns});
    EXPECT_TRUE(session.ok()) << session.status().message();
    if (!session.ok()) return nullptr;
    EXPECT_EQ((*session)->agents(), size_t(kPeers));
    const std::string id = (*session)->id();
    EXPECT_TRUE(WaitUntil([&] {
      Result<std::vector<AgentDescription>> agents = ListAgents(bus, 100);
      if (!agents.ok() || agents->size() != kPeers) return false;
      for (const AgentDescription& a : *agents) {
        if (std::none_of(a.queries.begin(), a.queries.end(),
                         [&](const InstalledQueryInfo& q) { return q.id == id && q.woven; })) {
          return false;
        }
      }
      return true;
    }));
    return std::move(*session);
  }

  void SetPhase(AgentPeerStats::Phase phase) {
    for (AgentPeerStats* s : stats_) s->phase.store(phase);
    if (phase == AgentPeerStats::kStop) {
      ASSERT_TRUE(WaitUntil([&] {
        for (AgentPeerStats* s : stats_) {
          if (s->stopped.load() == 0) return false;
        }
        return true;
      }));
    }
  }

  uint64_t Firings(int peer) const { return stats_[size_t(peer)]->firings.load(); }

  // Results for `seconds` of firing, polled as `weft pivot install` does, then the rest
  // at Finish. Checks each interval taken while running as it comes.
  void RunAndCheck(Bus& bus, int64_t interval_ns, int seconds) {
    std::unique_ptr<LiveSession> session = Install(bus, kTickQuery, interval_ns);
    ASSERT_NE(session, nullptr);
    PartialsSeen seen;
    ASSERT_TRUE(seen.Subscribe(bus, session->id()).ok());
    const int64_t go = WallNs();
    SetPhase(AgentPeerStats::kFire);
    std::vector<query::QueryResult> results;
    while (WallNs() - go < seconds * kSecond) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (query::QueryResult& r : session->TakeComplete(WallNs())) {
        results.push_back(std::move(r));
      }
    }
    SetPhase(AgentPeerStats::kStop);
    const int64_t stop = WallNs();
    ASSERT_GE(results.size(), size_t(seconds * kSecond / interval_ns - 2));
    for (query::QueryResult& r : session->Finish(10000)) results.push_back(std::move(r));

    // Every interval taken while running: all three agents' partials, and while every
    // peer fired all through it, a row of each.
    int full = 0;
    for (const query::QueryResult& r : results) {
      if (r.rows.empty()) continue;
      const int64_t start = r.rows[0].interval_start;
      if (start + interval_ns > stop) continue;  // the last, partly the final partials
      EXPECT_EQ(seen.of(start).size(), size_t(kPeers)) << "interval " << start;
      if (start >= go) {
        ++full;
        EXPECT_EQ(r.rows.size(), size_t(kPeers)) << "interval " << start;
      }
    }
    EXPECT_GE(full, seconds * kSecond / interval_ns - 2);
    EXPECT_EQ(session->late(), 0u);
    EXPECT_FALSE(session->lost().any());

    // Every firing counted once: per peer, COUNT over the intervals is what the peer
    // fired, seq 0 to the last (a firing that met a harvest is dropped and counted).
    std::map<int64_t, PeerTotals> totals = Totals(results);
    ASSERT_EQ(totals.size(), size_t(kPeers));
    uint64_t counted = 0, fired = 0;
    for (int i = 0; i < kPeers; ++i) {
      counted += uint64_t(totals[i].count);
      fired += Firings(i);
      EXPECT_GT(Firings(i), 0u);
      if (session->drops() == 0) {
        EXPECT_EQ(uint64_t(totals[i].count), Firings(i)) << "peer " << i;
        EXPECT_EQ(totals[i].min, 0) << "peer " << i;
        EXPECT_EQ(uint64_t(totals[i].max), Firings(i) - 1) << "peer " << i;
      }
    }
    EXPECT_EQ(counted + session->drops(), fired);
  }

  fs::path dir_;
  std::vector<pid_t> peers_;
  std::vector<AgentPeerStats*> stats_;
  pid_t server_ = -1;
};

TEST_F(AgentProcessesTest, ResultsOfThreeProgramsOverTheEmbeddedBus) {
  const std::string url = "unix:" + (dir_ / "bus.sock").string();
  auto bus = OpenBus(url, {.may_host = true});  // this front end hosts the hub
  ASSERT_TRUE(bus.ok()) << bus.status().message();
  StartPeers(url, 1000);
  RunAndCheck(**bus, kSecond, 4);
}

TEST_F(AgentProcessesTest, ResultsOfThreeProgramsOverNats) {
  const std::string url = StartNats();
  ASSERT_FALSE(url.empty()) << "nats-server did not start";
  auto bus = OpenBus(url);
  ASSERT_TRUE(bus.ok()) << bus.status().message();
  StartPeers(url, 1000);
  RunAndCheck(**bus, kSecond, 4);
}

// nats-server killed with SIGKILL while a query runs, and started again on its port: the
// programs fire on, the agents count the partials they could not send (and say so in
// their next results and list replies), the front end's session reconnects, and
// intervals after the restart have all three agents again.
TEST_F(AgentProcessesTest, NatsServerKilledWhileAQueryRuns) {
  int port = 0;
  const std::string url = StartNats(&port);
  ASSERT_FALSE(url.empty()) << "nats-server did not start";
  auto bus = OpenBus(url);
  ASSERT_TRUE(bus.ok()) << bus.status().message();
  StartPeers(url, 1000);
  constexpr int64_t kInterval = kSecond / 2;
  std::unique_ptr<LiveSession> session = Install(**bus, kTickQuery, kInterval);
  ASSERT_NE(session, nullptr);
  SetPhase(AgentPeerStats::kFire);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  std::vector<uint64_t> before(kPeers), during(kPeers);
  for (int i = 0; i < kPeers; ++i) before[i] = Firings(i);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int i = 0; i < kPeers; ++i) before[i] = Firings(i) - before[i];  // in 1 s
  (void)session->TakeComplete(WallNs());

  ReapProcess(server_, SIGKILL);
  server_ = -1;
  for (int i = 0; i < kPeers; ++i) during[i] = Firings(i);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (int i = 0; i < kPeers; ++i) {
    during[i] = Firings(i) - during[i];  // in 2 s
    // A loose sanity bound: the loop rate itself is measured by the bench.
    EXPECT_GE(during[i], before[i]) << "peer " << i << " slowed down without a server";
  }

  server_ = StartNatsServer(NATS_SERVER, port);
  ASSERT_GT(server_, 0);
  const int64_t restarted = WallNs();
  // An interval wholly after the restart, with every peer's partials and rows.
  bool resumed = WaitUntil(
      [&] {
        for (const query::QueryResult& r : session->TakeComplete(WallNs())) {
          if (!r.rows.empty() && r.rows[0].interval_start >= restarted && r.rows.size() == kPeers) {
            return true;
          }
        }
        return false;
      },
      20000);
  EXPECT_TRUE(resumed) << "no interval with all three peers after the restart";
  // Each agent counted the partials it did not send while the server was down.
  EXPECT_GE(session->lost().partials, uint64_t(kPeers));
  Result<std::vector<AgentDescription>> agents = ListAgents(**bus, 300);
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), size_t(kPeers));
  for (const AgentDescription& a : *agents) EXPECT_GT(a.lost.partials, 0u) << a.host;
  // And `weft pivot list` shows it, per process.
  std::string listed;
  if (FILE* list = popen((std::string(WEFT_BINARY) + " pivot list --bus " + url).c_str(), "r")) {
    char line[4096];
    while (fgets(line, sizeof line, list) != nullptr) listed += line;
    EXPECT_EQ(pclose(list), 0);
  }
  size_t shown = 0;
  for (size_t at = 0;
       (at = listed.find("partial results unsent (bus down)", at)) != std::string::npos; ++at) {
    ++shown;
  }
  EXPECT_EQ(shown, size_t(kPeers)) << listed;
  SetPhase(AgentPeerStats::kStop);
  (void)session->Finish(10000);
  EXPECT_GE((*bus)->counters().reconnects, 1u);
}

// A fork model: every 25th firing, a peer forks a child that fires Peer.Child three times
// and leaves with _exit. The children's tuples reach the results, and the parent's
// tuples the child inherited at the fork are not counted again.
TEST_F(AgentProcessesTest, ForkedChildrensTuplesReachTheResults) {
  const std::string url = "unix:" + (dir_ / "bus.sock").string();
  auto bus = OpenBus(url, {.may_host = true});
  ASSERT_TRUE(bus.ok()) << bus.status().message();
  StartPeers(url, 1000, 25);
  std::unique_ptr<LiveSession> children = Install(**bus, kChildQuery, kSecond);
  ASSERT_NE(children, nullptr);
  std::unique_ptr<LiveSession> ticks = Install(**bus, kTickQuery, kSecond);
  ASSERT_NE(ticks, nullptr);
  SetPhase(AgentPeerStats::kFire);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  SetPhase(AgentPeerStats::kStop);
  std::map<int64_t, PeerTotals> child_totals = Totals(children->Finish(10000));
  std::map<int64_t, PeerTotals> tick_totals = Totals(ticks->Finish(10000));
  EXPECT_FALSE(children->lost().any());
  EXPECT_EQ(children->drops(), 0u);
  for (int i = 0; i < kPeers; ++i) {
    const AgentPeerStats& s = *stats_[size_t(i)];
    EXPECT_GT(s.children.load(), 0u);
    EXPECT_EQ(uint64_t(child_totals[i].count), s.child_firings.load()) << "peer " << i;
    if (ticks->drops() == 0) {
      EXPECT_EQ(uint64_t(tick_totals[i].count), Firings(i)) << "peer " << i;
    }
  }
}

}  // namespace
}  // namespace weft::pivot
