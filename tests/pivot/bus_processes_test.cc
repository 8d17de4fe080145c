// The bus between real processes: three publisher processes (pivot_bus_peer) as agents,
// this process as the front end, and a real nats-server or embedded hub process that is
// killed (SIGKILL) and restarted in the middle of the run.
//
// What is asserted is delivery, order and counts: every message of the first phase
// arrives in order; while the server is down the publishers go on at their rate and count
// drops; after the restart every publisher's new messages arrive again, still in order.
// How fast they arrive is measured by bench/pivot_bus_bench, not asserted here.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/bus_peer.h"
#include "pivot/processes.h"

namespace weft::pivot {
namespace {

namespace fs = std::filesystem;
constexpr int kPublishers = 3;

// A publisher process and the counters it shares with us.
struct Publisher {
  pid_t pid = -1;
  PeerStats* stats = nullptr;
};

// What the front end (this process) received, per publisher.
class Results {
 public:
  Bus::Handler handler() {
    return [this](std::string_view subject, std::string_view payload) {
      uint64_t seq;
      int64_t send_ns;
      size_t dot = subject.rfind('.');
      if (!ParsePeerMessage(payload, &seq, &send_ns) || dot == std::string_view::npos) return;
      std::lock_guard lock(mu_);
      seqs_[std::stoi(std::string(subject.substr(dot + 1)))].push_back(seq);
    };
  }
  std::vector<uint64_t> of(pid_t pid) {
    std::lock_guard lock(mu_);
    return seqs_[pid];
  }

 private:
  std::mutex mu_;
  std::map<pid_t, std::vector<uint64_t>> seqs_;
};

// One transport's server: how to start it (again, at the same address) and where.
struct Server {
  std::string url;
  std::function<pid_t()> start;  // returns once it accepts connections
};

class BusProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-pivot-proc-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (Publisher& p : publishers_) {
      if (p.pid > 0) ReapProcess(p.pid, SIGKILL);
    }
    if (server_pid_ > 0) ReapProcess(server_pid_, SIGKILL);
    fs::remove_all(dir_);
  }

  Publisher StartPublisher(const std::string& url, int index) {
    std::string stats_path = (dir_ / ("stats" + std::to_string(index))).string();
    int fd = open(stats_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    EXPECT_EQ(ftruncate(fd, sizeof(PeerStats)), 0);
    void* map = mmap(nullptr, sizeof(PeerStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    // A small queue, so that an outage of a few intervals overflows it and drops count.
    return {SpawnProcess({PIVOT_BUS_PEER, "publish", url, stats_path, "5", "512"}),
            static_cast<PeerStats*>(map)};
  }

  void RunOutage(const Server& server) {
    server_pid_ = server.start();
    ASSERT_GT(server_pid_, 0);
    auto front = OpenBus(server.url);
    ASSERT_TRUE(front.ok()) << front.status().message();
    Results results;
    ASSERT_TRUE((*front)->Subscribe("weft.pivot.results.>", results.handler()).ok());
    // Once a probe comes back, the server knows our subscriptions.
    std::atomic<bool> probed{false};
    ASSERT_TRUE((*front)->Subscribe("weft.test.probe", [&](auto, auto) { probed = true; }).ok());
    ASSERT_TRUE(WaitUntil([&] {
      (*front)->Publish("weft.test.probe", "");
      return probed.load();
    }));

    for (int i = 0; i < kPublishers; ++i) publishers_.push_back(StartPublisher(server.url, i));
    ASSERT_TRUE(WaitUntil([&] {
      for (const Publisher& p : publishers_) {
        if (results.of(p.pid).size() < 5) return false;
      }
      return true;
    }));
    // Phase 1: every message so far, in order.
    std::vector<uint64_t> last_before(kPublishers);
    for (int i = 0; i < kPublishers; ++i) {
      std::vector<uint64_t> seqs = results.of(publishers_[i].pid);
      for (size_t k = 0; k < seqs.size(); ++k) ASSERT_EQ(seqs[k], k) << "publisher " << i;
    }

    // Phase 2: the server dies. The publishers go on at their rate and count drops.
    std::vector<uint64_t> iterations_a(kPublishers), iterations_b(kPublishers),
        dropped_b(kPublishers);
    for (int i = 0; i < kPublishers; ++i) iterations_a[i] = publishers_[i].stats->iterations;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (int i = 0; i < kPublishers; ++i) {
      iterations_b[i] = publishers_[i].stats->iterations;
      dropped_b[i] = publishers_[i].stats->dropped;
    }
    ReapProcess(server_pid_, SIGKILL);
    server_pid_ = -1;
    for (int i = 0; i < kPublishers; ++i) {
      std::vector<uint64_t> seqs = results.of(publishers_[i].pid);
      last_before[i] = seqs.empty() ? 0 : seqs.back();
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (int i = 0; i < kPublishers; ++i) {
      uint64_t before = iterations_b[i] - iterations_a[i];                   // in 1 s
      uint64_t during = publishers_[i].stats->iterations - iterations_b[i];  // in 2 s
      EXPECT_GE(during, before) << "publisher " << i << " slowed down without a server";
      EXPECT_GT(publishers_[i].stats->dropped.load(), dropped_b[i]) << "publisher " << i;
    }
    EXPECT_EQ(dropped_b, std::vector<uint64_t>(kPublishers, 0));

    // Phase 3: a new server at the same address; every publisher's messages arrive again.
    server_pid_ = server.start();
    ASSERT_GT(server_pid_, 0);
    ASSERT_TRUE(WaitUntil([&] {
      for (int i = 0; i < kPublishers; ++i) {
        std::vector<uint64_t> seqs = results.of(publishers_[i].pid);
        if (seqs.empty() || seqs.back() <= last_before[i] + 1) return false;
      }
      return true;
    }));
    for (int i = 0; i < kPublishers; ++i) {
      std::vector<uint64_t> seqs = results.of(publishers_[i].pid);
      for (size_t k = 1; k < seqs.size(); ++k) {
        ASSERT_LT(seqs[k - 1], seqs[k]) << "publisher " << i << " out of order at " << k;
      }
      EXPECT_EQ(ReapProcess(publishers_[i].pid, SIGTERM), 0) << "publisher " << i;
      publishers_[i].pid = -1;
    }
    EXPECT_GE((*front)->counters().reconnects, 1u);
  }

  fs::path dir_;
  std::vector<Publisher> publishers_;
  pid_t server_pid_ = -1;
};

TEST_F(BusProcessesTest, NatsServerKilledAndRestarted) {
  int port = PickFreeTcpPort();
  Server server{"nats://127.0.0.1:" + std::to_string(port), [port] {
                  pid_t pid = StartNatsServer(NATS_SERVER, port);
                  EXPECT_GT(pid, 0) << "nats-server did not start on port " << port;
                  return pid;
                }};
  RunOutage(server);
}

TEST_F(BusProcessesTest, EmbeddedHubKilledAndRestarted) {
  std::string path = (dir_ / "bus.sock").string();
  Server server{"unix:" + path, [path] {
                  pid_t pid = SpawnProcess({PIVOT_BUS_PEER, "hub", path});
                  bool up = WaitUntil([&] { return CanConnectUnixPath(path); });
                  EXPECT_TRUE(up) << "the hub did not start at " << path;
                  return up ? pid : -1;
                }};
  RunOutage(server);
}

}  // namespace
}  // namespace weft::pivot

namespace weft::pivot {
namespace {

// Opening never fails for want of a server: both ends come up before nats-server, the
// publisher's messages beyond its reconnect buffer drop and count, and once the server is
// up the subscription made before it reaches it and new messages arrive.
TEST(NatsBusTest, OpensBeforeItsServerAndConnectsWhenItComes) {
  int port = PickFreeTcpPort();
  std::string url = "nats://127.0.0.1:" + std::to_string(port);
  auto front = OpenBus(url);
  ASSERT_TRUE(front.ok()) << front.status().message();
  auto agent = OpenBus(url, {.max_queued_bytes = 256});
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  std::atomic<int> received{0};
  ASSERT_TRUE((*front)->Subscribe("weft.pivot.results.>", [&](auto, auto) { ++received; }).ok());
  for (int i = 0; i < 50; ++i) (*agent)->Publish("weft.pivot.results.1", std::to_string(i));
  ASSERT_TRUE(WaitUntil([&] {
    BusCounters c = (*agent)->counters();
    return c.published + c.dropped == 50;
  }));
  EXPECT_GT((*agent)->counters().dropped, 0u);
  EXPECT_FALSE((*agent)->Flush(50).ok());
  pid_t server =
      SpawnProcess({NATS_SERVER, "-a", "127.0.0.1", "-p", std::to_string(port)}, {}, true);
  ASSERT_TRUE(WaitUntil([&] {
    (*agent)->Publish("weft.pivot.results.1", "after");
    return received.load() > 0;
  }));
  EXPECT_TRUE((*agent)->Flush(10000).ok());
  ReapProcess(server, SIGKILL);
}

}  // namespace
}  // namespace weft::pivot
