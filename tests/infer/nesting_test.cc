#include "infer/nesting/nesting.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "trace/text_format.h"

namespace weft {
namespace {

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

NestingInference Infer(const Trace& trace, NestingOptions options = {}) {
  Result<NestingInference> set = InferNesting(trace, options);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set).value();
}

// Project 5 Figure 3: A calls B; B calls C, then D, then returns to A.
TEST(NestingTest, Figure3) {
  Trace trace = Parse(R"(
1 CALL_SENT A B 1
3 CALL_SENT B C 2
5 RET_SENT C B 2
7 CALL_SENT B D 3
9 RET_SENT D B 3
11 RET_SENT B A 1
)");
  auto [set, counters] = Infer(trace);
  ASSERT_EQ(set.instance_count(), 1u);
  ASSERT_EQ(set.patterns.size(), 1u);
  EXPECT_EQ(set.patterns[0].key, "C:A>B(C:B>C(R:C>B) C:B>D(R:D>B) R:B>A)");
  // Element 1 is the call B->C: call delay 2 ns after A->B; its return 2 ns later.
  EXPECT_EQ(set.patterns[0].elements[1].delay.mean(), 2.0);
  EXPECT_EQ(set.patterns[0].elements[2].delay.mean(), 2.0);
  EXPECT_EQ(set.patterns[0].latency.mean(), 10.0);
  EXPECT_EQ(counters.call_pairs, 3);
  EXPECT_EQ(counters.roots, 1);
}

// Two interleaved requests through B: the scoreboard's peak at the common delay assigns
// each child to the parent it recurs with (§5.1.1.2, Figure 5).
TEST(NestingTest, ScoreboardSeparatesInterleavedRequests) {
  std::string text;
  for (int r = 0; r < 50; ++r) {
    // Two overlapping requests, each calling C 10 us after arriving at B. Child c could
    // nest in a (10 us) or b (6 us); child d in a (14 us) or b (10 us).
    auto t = [&](int us) { return r * 1'000'000 + us * 1000; };
    text += fmt::format("{} CALL_SENT A B a{}\n{} CALL_SENT A B b{}\n", t(0), r, t(4), r);
    text += fmt::format("{} CALL_SENT B C c{}\n{} CALL_SENT B C d{}\n", t(10), r, t(14), r);
    text += fmt::format("{} RET_SENT C B c{}\n{} RET_SENT C B d{}\n", t(20), r, t(24), r);
    text += fmt::format("{} RET_SENT B A a{}\n{} RET_SENT B A b{}\n", t(30), r, t(34), r);
  }
  auto [set, counters] = Infer(Parse(text));
  ASSERT_EQ(set.patterns.size(), 1u);
  EXPECT_EQ(set.patterns[0].count, 100u);
  EXPECT_EQ(set.patterns[0].elements[1].delay.min(), 10'000);
  EXPECT_EQ(set.patterns[0].elements[1].delay.max(), 10'000);
}

TEST(NestingTest, NoCallsGivesNoPaths) {
  auto [set, counters] = Infer(Parse("1 MSG_SENT A B\n2 MSG_SENT B C\n"));
  EXPECT_EQ(set.instance_count(), 0u);
  EXPECT_EQ(counters.ignored_messages, 2);
}

TEST(NestingTest, OnlyReturnsAreUnmatched) {
  auto [set, counters] = Infer(Parse("1 RET_SENT B A 1\n2 RET_SENT B A 2\n"));
  EXPECT_EQ(set.instance_count(), 0u);
  EXPECT_EQ(counters.unmatched_returns, 2);
}

TEST(NestingTest, UnmatchedCallsAreDroppedAndCannotBeParents) {
  // A->B never returns (the trace was cut); B->C returns and becomes a root.
  auto [set, counters] = Infer(Parse("1 CALL_SENT A B 1\n2 CALL_SENT B C 2\n3 RET_SENT C B 2\n"));
  EXPECT_EQ(counters.unmatched_calls, 1);
  ASSERT_EQ(set.instance_count(), 1u);
  EXPECT_EQ(set.patterns[0].key, "C:B>C(R:C>B)");
}

TEST(NestingTest, IdenticalTimestamps) {
  auto [set, counters] = Infer(Parse(R"(
5 CALL_SENT A B 1
5 CALL_SENT B C 2
5 RET_SENT C B 2
5 RET_SENT B A 1
)"));
  ASSERT_EQ(set.instance_count(), 1u);
  EXPECT_EQ(set.patterns[0].key, "C:A>B(C:B>C(R:C>B) R:B>A)");
}

TEST(NestingTest, NodeCallingItself) {
  auto [set, counters] = Infer(Parse(R"(
1 CALL_SENT A A 1
2 CALL_SENT A A 2
3 RET_SENT A A 2
4 RET_SENT A A 1
)"));
  ASSERT_EQ(set.instance_count(), 1u);
  EXPECT_EQ(set.patterns[0].key, "C:A>A(C:A>A(R:A>A) R:A>A)");
  // With a skew window each call is a candidate parent of the other; no cycle forms.
  NestingOptions options;
  options.skew_window = 10;
  auto [skewed, skewed_counters] = Infer(
      Parse("1 CALL_SENT A A 1\n2 CALL_SENT A A 2\n3 RET_SENT A A 2\n4 RET_SENT A A 1\n"), options);
  EXPECT_EQ(skewed_counters.call_pairs, 2);
  EXPECT_EQ(skewed.instance_count(), 1u);
}

// §5.1.1.1: without call ids each return closes the earliest open call, which pairs
// (A,B,i,l) and (A,B,k,j) when the later call returns first.
TEST(NestingTest, WithoutCallIdsAPathThatOvertakesIsMispaired) {
  Trace trace = Parse("1 CALL_SENT A B x\n2 CALL_SENT A B y\n3 RET_SENT B A y\n4 RET_SENT B A x\n");
  auto [with_ids, with_ids_counters] = Infer(trace);
  NestingOptions no_ids;
  no_ids.use_call_ids = false;
  auto [without, without_counters] = Infer(trace, no_ids);
  ASSERT_EQ(with_ids.patterns.size(), 1u);
  ASSERT_EQ(without.patterns.size(), 1u);
  // Latencies: with ids 3 and 1 ns; without, 2 and 2 ns.
  EXPECT_EQ(with_ids.patterns[0].latency.min(), 1);
  EXPECT_EQ(with_ids.patterns[0].latency.max(), 3);
  EXPECT_EQ(without.patterns[0].latency.min(), 2);
  EXPECT_EQ(without.patterns[0].latency.max(), 2);
}

// Under clock skew a return can sort before its own call; it waits and pairs with it.
TEST(NestingTest, ReturnBeforeItsCallIsPaired) {
  auto [set, counters] =
      Infer(Parse("1 CALL_SENT A B 1\n2 RET_SENT C B 2\n3 CALL_SENT B C 2\n4 RET_SENT B A 1\n"));
  EXPECT_EQ(counters.call_pairs, 2);
  EXPECT_EQ(counters.unmatched_returns, 0);
  EXPECT_EQ(counters.unmatched_calls, 0);
}

// A call whose return was lost must not pair with the return of a later call that reuses
// its id (which would make it a candidate parent for everything in between).
TEST(NestingTest, LostReturnDoesNotStretchACall) {
  auto [set, counters] = Infer(Parse(R"(
1 CALL_SENT A B 7
100 CALL_SENT A B 7
101 CALL_SENT B C 9
102 RET_SENT C B 9
103 RET_SENT B A 7
)"));
  EXPECT_EQ(counters.unmatched_calls, 1);
  ASSERT_EQ(set.instance_count(), 1u);
  EXPECT_EQ(set.patterns[0].latency.max(), 3);  // the second call, 100 -> 103
  EXPECT_EQ(set.patterns[0].key, "C:A>B(C:B>C(R:C>B) R:B>A)");
}

// With receive times, a call sent before the child but queued until after the child
// left B cannot be its parent (times on B's clock), whatever the send order says.
TEST(NestingTest, ParentMustArriveBeforeTheChildLeaves) {
  auto [set, counters] = Infer(Parse(R"(
1000 CALL_SENT A B p1 recv=10000
2000 CALL_SENT A B p2 recv=3000
5000 CALL_SENT B C c recv=5000
6000 RET_SENT C B c recv=6000
7000 RET_SENT B A p2 recv=7000
12000 RET_SENT B A p1 recv=12000
)"));
  EXPECT_EQ(counters.candidate_parents, 1);
  ASSERT_EQ(set.instance_count(), 2u);
  // p2 (sent at 2000) carries the child; p1 is a root with no children.
  EXPECT_EQ(set.patterns[set.pattern[0]].key, "C:A>B(R:B>A)");
  EXPECT_EQ(set.patterns[set.pattern[1]].key, "C:A>B(C:B>C(R:C>B) R:B>A)");
}

TEST(NestingTest, RejectsNegativeKnobs) {
  NestingOptions options;
  options.skew_window = -1;
  EXPECT_EQ(InferNesting(Trace(), options).status().message(),
            "the skew window must not be negative");
}

TEST(NestingTest, DelayBins) {
  EXPECT_EQ(NestingDelayBin(-5), 0);
  EXPECT_EQ(NestingDelayBin(99), 0);
  EXPECT_EQ(NestingDelayBin(100), 1);
  EXPECT_EQ(NestingDelayBin(106), 2);  // 100 * 1.05 = 105
  EXPECT_EQ(NestingDelayBin(3600 * kSecond), 1 + int(std::log(3.6e10) / std::log(1.05)));
  EXPECT_EQ(NestingDelayBin(100 * 3600 * kSecond), kNestingBins - 1);
}

// NestingDelayBin finds bins in a table; it must give exactly the bin of the definition,
// 1 + floor(log_1.05(delay / 100 ns)), on both sides of every bin's first delay and
// anywhere else.
TEST(NestingTest, DelayBinsMatchTheLogarithm) {
  auto by_log = [](TimeNs delay) {
    if (delay < kNestingMinDelay) return 0;
    int bin = 1 + int(std::log(double(delay) / double(kNestingMinDelay)) / std::log(1.05));
    return std::min(bin, kNestingBins - 1);
  };
  int thresholds = 0;
  TimeNs delay = kNestingMinDelay;
  for (int bin = 1; bin < kNestingBins; ++bin) {
    // The first delay of this bin, by bisection over the definition.
    TimeNs low = delay, high = TimeNs(1) << 50;
    while (low < high) {
      TimeNs mid = low + (high - low) / 2;
      if (by_log(mid) >= bin)
        high = mid;
      else
        low = mid + 1;
    }
    delay = low;
    ASSERT_EQ(by_log(delay), bin);
    for (TimeNs d = delay - 64; d <= delay + 64; ++d) ASSERT_EQ(NestingDelayBin(d), by_log(d)) << d;
    ++thresholds;
  }
  EXPECT_EQ(thresholds, kNestingBins - 1);
  uint64_t x = 88172645463325252ull;  // xorshift: delays spread over every octave
  for (int i = 0; i < 2000000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const TimeNs d = TimeNs(x >> (x % 60 + 4)) - 50;
    ASSERT_EQ(NestingDelayBin(d), by_log(d)) << d;
  }
  for (TimeNs d = -1000; d < 200000; ++d) ASSERT_EQ(NestingDelayBin(d), by_log(d)) << d;
  EXPECT_EQ(NestingDelayBin(std::numeric_limits<TimeNs>::max()), kNestingBins - 1);
  EXPECT_EQ(NestingDelayBin(std::numeric_limits<TimeNs>::min()), 0);
}

}  // namespace
}  // namespace weft
