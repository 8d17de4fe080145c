// Timelines (WAP5 §6.1) and node delay histograms from a hand-made two-timestamp trace.
#include "report/timeline.h"

#include <gtest/gtest.h>

#include "infer/truth/truth.h"
#include "trace/text_format.h"

namespace weft {
namespace {

// A calls B (10 ms away, both traced); B calls C, which is not traced, 2 ms after the call
// arrived, hears back 38 ms later, and answers A 1 ms after that.
constexpr std::string_view kTrace =
    "1.000 CALL_SENT A B c1 recv=1.010 path=1 msg=1\n"
    "1.012 CALL_SENT B C c2 path=1 msg=2 parent=1\n"
    "- RET_SENT C B c2 recv=1.050 path=1 msg=3 parent=2\n"
    "1.051 RET_SENT B A c1 recv=1.061 path=1 msg=4 parent=1\n";

PathSet Truth() {
  Result<Trace> trace = ParseTextTrace(kTrace, "t.trace");
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Result<TruthInference> set = InferFromTruth(*trace, {.clock_offsets = true});
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set->paths);
}

TEST(Timeline, LaysOutMeanTimes) {
  PathSet set = Truth();
  ASSERT_EQ(set.patterns.size(), 1u);
  std::vector<TimelineEvent> events = LayOutTimeline(set, 0);
  ASSERT_EQ(events.size(), 4u);
  const double ms = 1e6;
  // Pre-order: A->B, B->C, C->B, B->A.
  EXPECT_NEAR(events[0].send, 0, 1e3);
  EXPECT_NEAR(events[0].arrive, 10 * ms, 1e3);
  EXPECT_NEAR(events[0].network, 10 * ms, 1e3);
  EXPECT_NEAR(events[1].send, 12 * ms, 1e3);
  EXPECT_NEAR(events[1].node_delay, 2 * ms, 1e3);
  EXPECT_FALSE(events[1].network_known);  // C was not traced
  EXPECT_TRUE(events[2].round_trip);
  EXPECT_NEAR(events[2].node_delay, 38 * ms, 1e3);
  EXPECT_NEAR(events[2].arrive, 50 * ms, 1e3);
  EXPECT_NEAR(events[3].send, 51 * ms, 1e3);
  EXPECT_NEAR(events[3].node_delay, 1 * ms, 1e3);  // B's own time, after C's answer
  EXPECT_NEAR(events[3].arrive, 61 * ms, 1e3);

  std::string text = TimelineText(set, 0);
  EXPECT_NE(text.find("◇ 38.000 round trip"), std::string::npos) << text;
  std::string svg = TimelineSvg(set, 0);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("<polygon"), std::string::npos);  // C's diamond
  EXPECT_NE(svg.find("38.000 ms via C"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(Timeline, NodeDelaysAreOwnTimesOnly) {
  std::string text = NodeDelayHistograms(Truth());
  // B's first call (2 ms) only: its return counts C's time too, and C's is a round trip.
  EXPECT_EQ(text.rfind("B: mean 2ms", 0), 0u) << text;
  EXPECT_EQ(text.find("C:"), std::string::npos);
}

}  // namespace
}  // namespace weft
