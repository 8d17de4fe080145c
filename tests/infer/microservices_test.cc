// The microservice scenarios (docs/microservices.md): the baselines on hand-made traces,
// linking and auto on a trace with one timestamp per message, and the accuracy table's
// rows at 1 and 4 requests in flight and shop at 8, against ground truth.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "eval/eval.h"
#include "gen/gen.h"
#include "infer/baseline/baseline.h"
#include "infer/choose.h"
#include "infer/linking/linking.h"
#include "infer/nesting/nesting.h"
#include "infer/truth/truth.h"
#include "sanitizer_build.h"
#include "scenario_trace.h"
#include "trace/text_format.h"

namespace weft {
namespace {

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

using testing::ScenarioTrace;

EvalReport Score(const Trace& trace, const PathSet& inferred) {
  Result<TruthInference> truth = InferFromTruth(trace);
  EXPECT_TRUE(truth.ok()) << truth.status().message();
  Result<EvalReport> r = Evaluate(truth->paths, inferred, EvalOptions{.max_n = 1});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return std::move(r).value();
}

// B takes two requests (c1, then c2) and calls C once while both are open: latest-open
// gives the call to c2, earliest-open to c1. The truth says c1.
constexpr std::string_view kTwoOpen = R"(
1.0 CALL_SENT A B c1 path=1 msg=1
1.1 CALL_SENT A B c2 path=2 msg=2
1.2 CALL_SENT B C c3 path=1 msg=3 parent=1
1.3 RET_SENT C B c3 path=1 msg=4 parent=3
1.4 RET_SENT B A c1 path=1 msg=5 parent=1
1.5 RET_SENT B A c2 path=2 msg=6 parent=2
1.6 MSG_SENT X Y
)";

TEST(Baseline, LatestAndEarliestOpenCall) {
  Trace trace = Parse(kTwoOpen);
  Result<BaselineInference> latest = InferBaseline(trace, BaselineRule::kLatestOpen);
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  EXPECT_EQ(latest->counters.calls, 3);
  EXPECT_EQ(latest->counters.call_pairs, 3);
  EXPECT_EQ(latest->counters.roots, 2);
  EXPECT_EQ(latest->counters.other_messages, 1);  // the MSG
  EvalReport r = Score(trace, latest->paths);
  EXPECT_EQ(r.requests.exact, 0u);  // both requests have the wrong tree
  EXPECT_EQ(r.parent_links.messages, 3u);
  EXPECT_EQ(r.parent_links.correct, 2u);  // the two roots

  Result<BaselineInference> earliest = InferBaseline(trace, BaselineRule::kEarliestOpen);
  ASSERT_TRUE(earliest.ok());
  r = Score(trace, earliest->paths);
  EXPECT_EQ(r.requests.exact, 2u);
  EXPECT_EQ(r.parent_links.correct, 3u);
}

// Span data has send times only. Linking reads them as one clock: it pairs calls with
// their returns (RPC mode) and links calls to the calls that enclose them.
TEST(OneTimestamp, LinkingLinksCallsAndReturns) {
  Trace trace = ScenarioTrace("shop", 1, 20000, /*send_times_only=*/true);
  ASSERT_TRUE(std::all_of(trace.columns().recv_time.begin(), trace.columns().recv_time.end(),
                          [](TimeNs t) { return t == kNoTime; }));
  Result<LinkingInference> linking = InferLinking(trace, LinkingOptions{});
  ASSERT_TRUE(linking.ok()) << linking.status().message();
  EXPECT_EQ(linking->counters.rpc, 1);
  EXPECT_EQ(linking->counters.unpaired_returns, 0);
  // Every message but the roots has a cause: the returns by pairing, the calls by linking.
  EvalReport r = Score(trace, linking->paths);
  EXPECT_GT(ExplainedShare(linking->paths), 0.95);
  EXPECT_GT(r.parent_links.Share(), 0.80);
  EXPECT_GT(r.requests.Share(r.requests.exact), 0.20);
}

// auto weighs linking and nesting by how much of the trace each explains, and on a tie
// with one timestamp per message takes nesting; the one it takes is never the one that
// explains less, and here it is also the more accurate.
TEST(OneTimestamp, AutoTakesTheAlgorithmThatExplainsMost) {
  Trace trace = ScenarioTrace("shop", 1, 20000, /*send_times_only=*/true);
  Result<AutoInference> decided = ChooseAlgorithm(trace);
  ASSERT_TRUE(decided.ok()) << decided.status().message();
  const AutoChoice& choice = decided->choice;
  ASSERT_TRUE(choice.linking_explained.has_value());
  ASSERT_TRUE(choice.nesting_explained.has_value());
  ASSERT_TRUE(decided->linking.has_value());
  ASSERT_TRUE(decided->nesting.has_value());
  EXPECT_EQ(*choice.linking_explained, ExplainedShare(decided->linking->paths));
  EXPECT_EQ(*choice.nesting_explained, ExplainedShare(decided->nesting->paths));
  const double chosen = choice.algorithm == AutoAlgorithm::kNesting ? *choice.nesting_explained
                                                                    : *choice.linking_explained;
  EXPECT_GE(chosen, std::max(*choice.linking_explained, *choice.nesting_explained));
  EXPECT_EQ(choice.algorithm, AutoAlgorithm::kNesting) << choice.Describe();
  EXPECT_NE(choice.Describe().find("one timestamp per message"), std::string::npos)
      << choice.Describe();
  EvalReport by_nesting = Score(trace, decided->nesting->paths);
  EvalReport by_linking = Score(trace, decided->linking->paths);
  EXPECT_GT(by_nesting.requests.exact, by_linking.requests.exact);
}

// With receive times the same shop is again a tie (every message but the roots explained by
// both), but linking has more ambiguous links in most trees than its try-both budget weighs
// and guesses the rest: auto takes nesting, says why, and nesting is the more accurate.
TEST(TwoTimestamps, AutoLeavesLinkingThatGuessedMostTrees) {
  Trace trace = ScenarioTrace("shop", 1, 20000);
  Result<AutoInference> decided = ChooseAlgorithm(trace);
  ASSERT_TRUE(decided.ok()) << decided.status().message();
  const AutoChoice& choice = decided->choice;
  ASSERT_TRUE(decided->linking.has_value() && decided->nesting.has_value());
  EXPECT_EQ(*choice.linking_explained, *choice.nesting_explained);
  EXPECT_EQ(choice.linking_trees, decided->linking->counters.roots);
  EXPECT_EQ(choice.linking_trees_guessed, decided->linking->counters.budget_exhausted);
  EXPECT_GT(2 * choice.linking_trees_guessed, choice.linking_trees);
  EXPECT_EQ(choice.algorithm, AutoAlgorithm::kNesting) << choice.Describe();
  EXPECT_NE(choice.Describe().find("so nesting is preferred"), std::string::npos)
      << choice.Describe();
  EvalReport by_nesting = Score(trace, decided->nesting->paths);
  EvalReport by_linking = Score(trace, decided->linking->paths);
  EXPECT_GT(by_nesting.requests.Share(by_nesting.requests.exact),
            by_linking.requests.Share(by_linking.requests.exact) + 0.3);
}

// One row of docs/microservices.md's table, on a 40,000-message trace of the scenario's
// fixed seed (80,000 for shop at 8 in flight, the hardest cell): nesting with its defaults
// and both baselines, whole trees exact and parent links. Thresholds are a few points below
// what was measured (the figures in the rows); the baselines' are ceilings, a few points
// above.
struct Row {
  std::string_view scenario;
  double in_flight;  // --parallelism
  double nesting_exact, nesting_links;
  double latest_exact, latest_links;
  double earliest_exact, earliest_links;
  uint64_t messages = 40000;  // shop at 8 in flight needs more to learn from
};

class MicroserviceRowTest : public ::testing::TestWithParam<Row> {};

TEST_P(MicroserviceRowTest, StatisticalBeatsBothBaselines) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  const Row& row = GetParam();
  Trace trace = ScenarioTrace(row.scenario, row.in_flight, row.messages);
  Result<NestingInference> nesting = InferNesting(trace, NestingOptions{});
  ASSERT_TRUE(nesting.ok()) << nesting.status().message();
  Result<BaselineInference> latest = InferBaseline(trace, BaselineRule::kLatestOpen);
  Result<BaselineInference> earliest = InferBaseline(trace, BaselineRule::kEarliestOpen);
  ASSERT_TRUE(latest.ok() && earliest.ok());
  auto percent = [](const EvalReport& r) {
    return std::pair(100 * r.requests.Share(r.requests.exact), 100 * r.parent_links.Share());
  };
  auto [n_exact, n_links] = percent(Score(trace, nesting->paths));
  auto [l_exact, l_links] = percent(Score(trace, latest->paths));
  auto [e_exact, e_links] = percent(Score(trace, earliest->paths));
  EXPECT_GE(n_exact, row.nesting_exact - 3);
  EXPECT_GE(n_links, row.nesting_links - 2);
  EXPECT_LE(l_exact, row.latest_exact + 3);
  EXPECT_LE(l_links, row.latest_links + 2);
  EXPECT_LE(e_exact, row.earliest_exact + 3);
  EXPECT_LE(e_links, row.earliest_links + 2);
  // What the table claims in every cell.
  EXPECT_GE(n_exact, std::max(l_exact, e_exact) + 15);
  EXPECT_GT(n_links, std::max(l_links, e_links));
}

// Lookahead is what wins the shop at 4 in flight: without it (greedy choice, as in
// Project 5) two free parents at the frontend swap the tails of their trees whenever the
// first of two close calls takes the parent the second fits better. Measured on this
// trace: 51.9% whole trees exact with lookahead, 33.2% without (links 85.2% and 77.5%).
TEST(MicroserviceLookaheadTest, LookaheadWinsTheShopAtFourInFlight) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  Trace trace = ScenarioTrace("shop", 4, 40000);
  NestingOptions greedy;
  greedy.lookahead = false;
  Result<NestingInference> with = InferNesting(trace, NestingOptions{});
  Result<NestingInference> without = InferNesting(trace, greedy);
  ASSERT_TRUE(with.ok() && without.ok());
  const EvalReport a = Score(trace, with->paths), b = Score(trace, without->paths);
  const double exact_with = 100 * a.requests.Share(a.requests.exact);
  const double exact_without = 100 * b.requests.Share(b.requests.exact);
  EXPECT_GE(exact_with, 50);
  EXPECT_LE(exact_without, 40);
  EXPECT_GT(a.parent_links.Share(), b.parent_links.Share());
}

INSTANTIATE_TEST_SUITE_P(Rows, MicroserviceRowTest,
                         ::testing::Values(Row{"shop", 1, 91.1, 98.1, 24.4, 81.7, 11.9, 67.0},
                                           Row{"booking", 1, 99.6, 100.0, 64.5, 96.7, 11.7, 86.1},
                                           Row{"social", 1, 54.4, 89.4, 23.4, 79.5, 7.8, 69.4},
                                           Row{"shop", 4, 51.9, 85.2, 0.5, 50.8, 0.1, 27.2},
                                           Row{"booking", 4, 87.1, 98.9, 3.8, 77.3, 0.0, 44.3},
                                           Row{"social", 4, 41.8, 89.0, 4.0, 72.3, 0.0, 35.6},
                                           Row{"shop", 8, 17.7, 65.2, 0.0, 38.6, 0.0, 17.9, 80000}),
                         [](const ::testing::TestParamInfo<Row>& row) {
                           return std::string(row.param.scenario) + "_" +
                                  std::to_string(int(row.param.in_flight)) + "_in_flight";
                         });

}  // namespace
}  // namespace weft
