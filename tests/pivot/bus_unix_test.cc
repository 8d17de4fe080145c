// The embedded bus within one process: hub and clients on a temporary socket path.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/frame.h"

namespace weft::pivot {
namespace {

namespace fs = std::filesystem;

// Waits for `done`, up to a generous bound that only a broken bus reaches.
bool WaitFor(const std::function<bool()>& done, int ms = 10000) {
  for (int waited = 0; waited < ms; waited += 5) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// Collects what a subscription receives. The handler shares what it collects, so that a
// bus thread still delivering while a test ends (an Inbox declared after its bus dies first)
// writes into memory that is still there.
struct Inbox {
  struct Received {
    std::mutex mu;
    std::vector<std::string> got;
  };
  std::shared_ptr<Received> received = std::make_shared<Received>();
  Bus::Handler handler() {
    return [r = received](std::string_view subject, std::string_view payload) {
      std::lock_guard lock(r->mu);
      r->got.push_back(std::string(subject) + "=" + std::string(payload));
    };
  }
  size_t size() {
    std::lock_guard lock(received->mu);
    return received->got.size();
  }
  std::vector<std::string> Got() {  // a copy: deliveries may go on meanwhile
    std::lock_guard lock(received->mu);
    return received->got;
  }
};

// Publishes a probe on `from` until `to` has seen one: then `to`'s subscriptions made
// before the call are known to the hub.
void AwaitRoute(Bus* from, Bus* to) {
  std::atomic<bool> seen{false};
  auto id =
      to->Subscribe("weft.test.probe", [&](std::string_view, std::string_view) { seen = true; });
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(WaitFor([&] {
    from->Publish("weft.test.probe", "");
    return seen.load();
  }));
  to->Unsubscribe(*id);
}

int RawConnect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class EmbeddedBusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-pivot-bus-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    url_ = "unix:" + (dir_ / "bus.sock").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Bus> Open(OpenBusOptions options = {}) {
    auto bus = OpenBus(url_, options);
    EXPECT_TRUE(bus.ok()) << bus.status().message();
    return bus.ok() ? std::move(*bus) : nullptr;
  }
  std::unique_ptr<Bus> Host() { return Open({.may_host = true}); }

  fs::path dir_;
  std::string url_;
};

TEST_F(EmbeddedBusTest, DeliversBetweenHubAndClientsInOrder) {
  auto hub = Host();
  auto client = Open();
  auto other = Open();
  Inbox at_client, at_hub, at_other;
  ASSERT_TRUE(client->Subscribe("a.>", at_client.handler()).ok());
  ASSERT_TRUE(hub->Subscribe("b.*", at_hub.handler()).ok());
  ASSERT_TRUE(other->Subscribe("b.x", at_other.handler()).ok());
  AwaitRoute(hub.get(), client.get());
  AwaitRoute(hub.get(), other.get());
  for (int i = 0; i < 100; ++i) hub->Publish("a.x", std::to_string(i));
  for (int i = 0; i < 100; ++i) client->Publish(i % 2 ? "b.x" : "b.y", std::to_string(i));
  ASSERT_TRUE(client->Flush(10000).ok());
  ASSERT_TRUE(WaitFor(
      [&] { return at_client.size() == 100 && at_hub.size() == 100 && at_other.size() == 50; }));
  EXPECT_EQ(at_client.Got()[0], "a.x=0");
  EXPECT_EQ(at_client.Got()[99], "a.x=99");
  EXPECT_EQ(at_hub.Got()[0], "b.y=0");
  EXPECT_EQ(at_hub.Got()[99], "b.x=99");
  EXPECT_EQ(at_other.Got()[0], "b.x=1");
  EXPECT_EQ(at_other.Got()[49], "b.x=99");
  EXPECT_EQ(client->counters().dropped, 0u);
  EXPECT_EQ(hub->counters().dropped, 0u);
}

TEST_F(EmbeddedBusTest, ASecondFrontEndBecomesAClientOfTheFirst) {
  auto first = Host();
  auto second = Host();
  Inbox inbox;
  ASSERT_TRUE(first->Subscribe("t", inbox.handler()).ok());
  AwaitRoute(second.get(), first.get());
  second->Publish("t", "from the second");
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }));
  EXPECT_EQ(inbox.Got()[0], "t=from the second");
}

// The hosting front end goes: the second takes the hub over, with its subscriptions, and
// the agents' clients (which never host) reconnect to it.
TEST_F(EmbeddedBusTest, ASecondFrontEndTakesTheHubOverWhenTheFirstGoes) {
  auto first = Host();
  auto second = Host();
  auto agent = Open();
  Inbox at_second, at_agent;
  ASSERT_TRUE(second->Subscribe("results.>", at_second.handler()).ok());
  ASSERT_TRUE(agent->Subscribe("control.>", at_agent.handler()).ok());
  AwaitRoute(agent.get(), second.get());
  AwaitRoute(second.get(), agent.get());
  first.reset();
  // Its hub gone, the second becomes the hub (within a few retries) and both ways work
  // again: its old subscription still receives, the agent hears what it publishes.
  ASSERT_TRUE(WaitFor([&] {
    agent->Publish("results.q", "after");
    return at_second.size() > 0;
  }));
  ASSERT_TRUE(WaitFor([&] {
    second->Publish("control.install", "q");
    return at_agent.size() > 0;
  }));
  EXPECT_EQ(at_second.Got().back(), "results.q=after");
  EXPECT_EQ(at_agent.Got().back(), "control.install=q");
  EXPECT_GE(second->counters().reconnects, 1u);
  EXPECT_TRUE(second->counters().connected);
  // A third front end now finds the second hosting.
  auto third = Host();
  Inbox at_third;
  ASSERT_TRUE(third->Subscribe("results.>", at_third.handler()).ok());
  ASSERT_TRUE(WaitFor([&] {
    agent->Publish("results.q", "third");
    return at_third.size() > 0;
  }));
}

TEST_F(EmbeddedBusTest, AStaleSocketFileIsReplaced) {
  {  // a socket file whose process is gone: bound, never listening, closed
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", url_.c_str() + 5);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    close(fd);
  }
  ASSERT_TRUE(fs::exists(url_.substr(5)));
  auto hub = Host();
  auto client = Open();
  Inbox inbox;
  ASSERT_TRUE(hub->Subscribe("t", inbox.handler()).ok());
  client->Publish("t", "1");
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }));
  hub.reset();
  EXPECT_FALSE(fs::exists(url_.substr(5)));  // the hub removes its own socket file
}

TEST_F(EmbeddedBusTest, AClientWithoutAHubQueuesToItsBoundThenDrops) {
  auto client = Open({.max_queued_messages = 10});
  for (int i = 0; i < 25; ++i) client->Publish("t", std::to_string(i));
  EXPECT_EQ(client->counters().published, 10u);
  EXPECT_EQ(client->counters().dropped, 15u);
  Status flush = client->Flush(50);
  EXPECT_FALSE(flush.ok());
  EXPECT_NE(flush.message().find("no hub connected"), std::string::npos) << flush.message();
  // A hub that comes later gets the ten that were queued, in order.
  auto hub = Host();
  Inbox inbox;
  ASSERT_TRUE(hub->Subscribe("t", inbox.handler()).ok());
  ASSERT_TRUE(client->Flush(10000).ok());
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 10; }));
  EXPECT_EQ(inbox.Got()[0], "t=0");
  EXPECT_EQ(inbox.Got()[9], "t=9");
}

TEST_F(EmbeddedBusTest, ABadFrameClosesOnlyThatConnection) {
  auto hub = Host();
  auto client = Open();
  Inbox inbox;
  ASSERT_TRUE(client->Subscribe("t", inbox.handler()).ok());
  AwaitRoute(hub.get(), client.get());
  int raw = RawConnect(url_.substr(5));
  ASSERT_GE(raw, 0);
  ASSERT_EQ(write(raw, "\xff\xff\xff\xffgarbage", 11), 11);
  char byte;
  EXPECT_EQ(read(raw, &byte, 1), 0);  // the hub closed it
  close(raw);
  EXPECT_EQ(hub->counters().bad_frames, 1u);
  hub->Publish("t", "still here");
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }));
}

TEST_F(EmbeddedBusTest, AClientThatStopsReadingDoesNotHoldUpTheOthers) {
  std::atomic<size_t> received{0};  // before the buses: it outlives their threads
  auto hub = Host();
  auto client = Open();
  ASSERT_TRUE(
      client->Subscribe("x.>", [&](std::string_view, std::string_view) { ++received; }).ok());
  AwaitRoute(hub.get(), client.get());
  int stuck = RawConnect(url_.substr(5));
  ASSERT_GE(stuck, 0);
  std::string subscribe;
  AppendSubscribeFrame(1, ">", &subscribe);
  ASSERT_EQ(write(stuck, subscribe.data(), subscribe.size()),
            static_cast<ssize_t>(subscribe.size()));
  AwaitRoute(client.get(), hub.get());  // the hub has read the stuck client's subscription
  // 12 MiB for a client that reads nothing: past its 4 MiB queue and its socket buffer.
  std::string payload(4096, 'p');
  constexpr size_t kMessages = 3000;
  for (size_t i = 0; i < kMessages; ++i) {
    hub->Publish("x.y", payload);
    if (i % 500 == 499) {
      ASSERT_TRUE(hub->Flush(10000).ok());  // stay within the queue
      // And the reading client within its 4 MiB: on a loaded machine its thread may not
      // have run for the last 2 MiB, and the hub would drop for it too, rightly.
      ASSERT_TRUE(WaitFor([&] { return received.load() == i + 1; })) << received.load();
    }
  }
  ASSERT_TRUE(WaitFor([&] { return received.load() == kMessages; }));
  EXPECT_GT(hub->counters().dropped, 0u);
  EXPECT_EQ(client->counters().dropped, 0u);
  close(stuck);
}

TEST(OpenBusTest, NamesEachBadUrlInOneLine) {
  for (const char* url : {"udp://x", "nats://host", "nats://host:0", "nats://host:70000",
                          "nats://:4222", "unix:", "local2"}) {
    auto bus = OpenBus(url);
    ASSERT_FALSE(bus.ok()) << url;
    EXPECT_EQ(bus.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_EQ(bus.status().message().find('\n'), std::string::npos);
  }
  EXPECT_EQ(OpenBus("udp://x").status().message(),
            "bad bus URL 'udp://x': expected local, unix:PATH or nats://HOST:PORT");
}

TEST(OpenBusTest, TheEmptyUrlReadsTheEnvironment) {
  setenv("WEFT_PIVOT_BUS", "local", 1);
  auto bus = OpenBus("");
  unsetenv("WEFT_PIVOT_BUS");
  ASSERT_TRUE(bus.ok());
  EXPECT_EQ((*bus)->url(), "local");
  setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
  EXPECT_EQ(DefaultBusUrl(), "unix:/run/user/7/weft-pivot.sock");
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(DefaultBusUrl(), "unix:/tmp/weft-pivot-" + std::to_string(geteuid()) + "/bus.sock");
}

}  // namespace
}  // namespace weft::pivot
