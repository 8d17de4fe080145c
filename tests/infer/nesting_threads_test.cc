// Nesting chooses parents on several threads, one per stretch of the trace that no request
// spans (choose_parents.cc, FindSegments). The paths file must be the same, byte for byte, for
// any number of threads, with every switch that changes how parents are chosen.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "gen/gen.h"
#include "infer/nesting/nesting.h"
#include "paths/paths_file.h"
#include "sanitizer_build.h"
#include "scenario_trace.h"

namespace weft {
namespace {

using testing::ScenarioTrace;

// 40,000 messages give each thread many stretches; the sanitizer build, which looks for
// memory errors, runs a quarter of that.
constexpr uint64_t kMessages = testing::kSanitized ? 10000 : 40000;

std::string PathsText(const Trace& trace, NestingOptions options, int threads) {
  options.threads = threads;
  Result<NestingInference> inferred = InferNesting(trace, options);
  EXPECT_TRUE(inferred.ok()) << inferred.status().message();
  return FormatPaths(ToPathsFile(std::move(inferred).value()));
}

void ExpectSameForAnyThreads(const Trace& trace, const NestingOptions& options) {
  const std::string one = PathsText(trace, options, 1);
  EXPECT_GT(one.size(), 1000u);
  for (int threads : {2, 3, 8}) {
    EXPECT_TRUE(PathsText(trace, options, threads) == one) << threads << " threads";
  }
}

TEST(NestingThreadsTest, ShopAtOneAndEightInFlight) {
  ExpectSameForAnyThreads(ScenarioTrace("shop", 1, kMessages), NestingOptions{});
  ExpectSameForAnyThreads(ScenarioTrace("shop", 8, kMessages), NestingOptions{});
}

TEST(NestingThreadsTest, SocialAndBookingAtFourInFlight) {
  ExpectSameForAnyThreads(ScenarioTrace("social", 4, kMessages), NestingOptions{});
  ExpectSameForAnyThreads(ScenarioTrace("booking", 4, kMessages), NestingOptions{});
}

TEST(NestingThreadsTest, MultitierWithEverySwitch) {
  const Trace trace = ScenarioTrace("multitier", 0.28, kMessages);
  ExpectSameForAnyThreads(trace, NestingOptions{});
  ExpectSameForAnyThreads(trace, PaperNestingOptions());
  NestingOptions greedy;
  greedy.lookahead = false;
  greedy.sibling_passes = 1;
  ExpectSameForAnyThreads(trace, greedy);
  NestingOptions same_child;
  same_child.same_child_penalty = 1;
  ExpectSameForAnyThreads(trace, same_child);
  NestingOptions no_ids;
  no_ids.use_call_ids = false;
  ExpectSameForAnyThreads(trace, no_ids);
}

TEST(NestingThreadsTest, OneTimestampPerMessageAndASkewWindow) {
  ExpectSameForAnyThreads(ScenarioTrace("shop", 4, kMessages, /*send_times_only=*/true),
                          NestingOptions{});
  NestingOptions skew;
  skew.skew_window = 30 * kMillisecond;
  skew.smoothing_bins = 4;
  ExpectSameForAnyThreads(ScenarioTrace("multitier", 0.28, kMessages), skew);
}

TEST(NestingThreadsTest, RejectsNegativeThreads) {
  NestingOptions options;
  options.threads = -1;
  EXPECT_EQ(InferNesting(Trace(), options).status().message(), "threads must not be negative");
}

}  // namespace
}  // namespace weft
