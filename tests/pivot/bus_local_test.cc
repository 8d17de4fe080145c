#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "pivot/bus.h"

namespace weft::pivot {
namespace {

TEST(SubjectMatchesTest, TokensWildcardsAndTails) {
  EXPECT_TRUE(SubjectMatches("weft.pivot.results.7", "weft.pivot.results.7"));
  EXPECT_FALSE(SubjectMatches("weft.pivot.results.7", "weft.pivot.results.70"));
  EXPECT_TRUE(SubjectMatches("weft.*.results.7", "weft.pivot.results.7"));
  EXPECT_FALSE(SubjectMatches("weft.*", "weft.pivot.results"));
  EXPECT_TRUE(SubjectMatches("weft.>", "weft.pivot.results"));
  EXPECT_FALSE(SubjectMatches("weft.>", "weft"));
  EXPECT_FALSE(SubjectMatches("weft.pivot", "weft"));
  EXPECT_FALSE(SubjectMatches("weft", "weft.pivot"));
}

TEST(LocalBusTest, DeliversEveryMessageToMatchingSubscribersInOrder) {
  auto bus = MakeLocalBus();
  std::mutex mu;
  std::vector<std::string> got;
  auto id = bus->Subscribe("a.>", [&](std::string_view subject, std::string_view payload) {
    std::lock_guard lock(mu);
    got.push_back(std::string(subject) + "=" + std::string(payload));
  });
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 100; ++i) bus->Publish(i % 2 ? "a.x" : "b.x", std::to_string(i));
  ASSERT_TRUE(bus->Flush(5000).ok());
  std::lock_guard lock(mu);
  ASSERT_EQ(got.size(), 50u);
  EXPECT_EQ(got[0], "a.x=1");
  EXPECT_EQ(got[49], "a.x=99");
  BusCounters c = bus->counters();
  EXPECT_EQ(c.published, 100u);
  EXPECT_EQ(c.received, 50u);
  EXPECT_EQ(c.dropped, 0u);
}

TEST(LocalBusTest, AHandlerMayPublishAndUnsubscribe) {
  auto bus = MakeLocalBus();
  std::atomic<int> replies{0};
  ASSERT_TRUE(
      bus->Subscribe("ping", [&](std::string_view, std::string_view p) { bus->Publish("pong", p); })
          .ok());
  auto pong = bus->Subscribe("pong", [&](std::string_view, std::string_view) { ++replies; });
  ASSERT_TRUE(pong.ok());
  bus->Publish("ping", "1");
  ASSERT_TRUE(bus->Flush(5000).ok());
  ASSERT_TRUE(bus->Flush(5000).ok());  // the pong published by the handler
  EXPECT_EQ(replies.load(), 1);
  bus->Unsubscribe(*pong);
  bus->Publish("ping", "2");
  ASSERT_TRUE(bus->Flush(5000).ok());
  ASSERT_TRUE(bus->Flush(5000).ok());
  EXPECT_EQ(replies.load(), 1);
}

}  // namespace
}  // namespace weft::pivot
