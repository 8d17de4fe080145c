// The nesting algorithm against ground truth on generated traces: the accuracy figures of
// docs/nesting.md (Project 5 Figure 17 and the added-delay experiment of §7.2).
#include <gtest/gtest.h>

#include <string>

#include "eval/eval.h"
#include "gen/gen.h"
#include "infer/nesting/nesting.h"
#include "infer/truth/truth.h"
#include "sanitizer_build.h"

namespace weft {
namespace {

// Project 5 Table 1's "normal" multi-tier trace: 202,520 messages, mean per-node
// parallelism 1.641. multitier's 42 default loops give 3.45 (its paths are longer-lived
// than the paper's; docs/nesting.md); a factor of 0.28 gives 1.648.
constexpr double kPaperParallelismFactor = 0.28;

Trace Generate(const std::string& scenario) {
  Result<GenConfig> config = LoadGenConfig(scenario);
  EXPECT_TRUE(config.ok()) << config.status().message();
  config->parallelism = kPaperParallelismFactor;
  config->messages = 200'000;
  Result<Trace> trace = MakeTrace(*config);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

// weft's scoring (the default) or Project 5's exactly (--paper-scoring).
NestingInference Nesting(const Trace& trace, bool weft_scoring) {
  Result<NestingInference> set =
      InferNesting(trace, weft_scoring ? NestingOptions{} : PaperNestingOptions());
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set).value();
}

double PerNodeParallelism(const NestingCounters& c) {
  return double(c.candidate_parents) / double(c.children_with_candidates);
}

// Figure 17: the number of true top-N patterns missing from the inferred top N. Issue 3
// asks for at most one (a false negative rate of at most 1/N) for every N up to 30.
// weft's default (return and sibling scoring, lookahead) holds that on this trace and on
// four other seeds (docs/nesting.md); the paper's scoring alone misses two from N = 10.
// Both curves are pinned here so that a change in either direction shows.
TEST(NestingAccuracyTest, TopNFalseNegatives) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  Trace trace = Generate("multitier");
  Result<TruthInference> truth = InferFromTruth(trace);
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->paths.patterns.size(), 34u);
  struct Expected {
    bool weft_scoring;
    int bounded_up_to;  // FN <= 1 for N up to here
    uint64_t worst;     // the largest FN for N up to 30
    double correct;     // instances exactly right
  };
  for (Expected e : {Expected{true, 30, 1, 0.887}, Expected{false, 9, 4, 0.701}}) {
    NestingInference inferred = Nesting(trace, e.weft_scoring);
    EXPECT_NEAR(PerNodeParallelism(inferred.counters), 1.641, 0.02);
    Result<EvalReport> report = Evaluate(truth->paths, inferred.paths, EvalOptions{.max_n = 30});
    ASSERT_TRUE(report.ok()) << report.status().message();
    ASSERT_EQ(report->top_n.size(), 30u);
    uint64_t worst = 0;
    for (const TopNPoint& point : report->top_n) {
      worst = std::max(worst, point.false_negatives[0]);
      if (point.n <= e.bounded_up_to) {
        EXPECT_LE(point.false_negatives[0], 1u)
            << "N=" << point.n << " weft_scoring=" << e.weft_scoring;
      }
    }
    EXPECT_EQ(worst, e.worst) << "weft_scoring=" << e.weft_scoring;
    double correct = double(report->instances.correct) / double(report->instances.truth);
    EXPECT_NEAR(correct, e.correct, 0.005) << "weft_scoring=" << e.weft_scoring;
  }
}

// The count-weighted mean call delay of WS2's calls to an application server: the time
// from the request's arrival at WS2 to WS2's call to AP1 or AP2 (after its AUTH call).
double Ws2ToApCallDelay(const PathSet& set) {
  double sum = 0, count = 0;
  for (const PathPattern& p : set.patterns) {
    for (const PatternElement& e : p.elements) {
      if (e.kind != MessageKind::kCall || set.nodes.Get(e.sender) != "WS2") continue;
      if (!set.nodes.Get(e.receiver).starts_with("AP")) continue;
      sum += e.delay.mean() * double(e.delay.count());
      count += double(e.delay.count());
    }
  }
  return count ? sum / count : 0;
}

// §7.2: multitier-added-delay holds each request 200 ms at WS2 between its AUTH call and
// its AP call; the inferred WS2 -> AP call delay must grow by 200 ms +/- 10%.
TEST(NestingAccuracyTest, AddedDelayShowsOnTheWs2ToApCall) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  Trace normal = Generate("multitier");
  Trace added = Generate("multitier-added-delay");
  double truth_growth = Ws2ToApCallDelay(InferFromTruth(added)->paths) -
                        Ws2ToApCallDelay(InferFromTruth(normal)->paths);
  EXPECT_NEAR(truth_growth, 200e6, 5e6);
  for (bool weft_scoring : {false, true}) {
    double growth = Ws2ToApCallDelay(Nesting(added, weft_scoring).paths) -
                    Ws2ToApCallDelay(Nesting(normal, weft_scoring).paths);
    EXPECT_NEAR(growth, 200e6, 20e6) << "weft_scoring=" << weft_scoring;
  }
}

// The share of inferred path instances that are wrong, on a Figure 19 cell: `scenario`
// at `factor` times its parallelism, 50,000 messages (bench/nesting_sweeps).
double FalsePositiveRate(const std::string& scenario, double factor, const NestingOptions& o) {
  Result<GenConfig> config = LoadGenConfig(scenario);
  EXPECT_TRUE(config.ok()) << config.status().message();
  config->parallelism *= factor;
  config->messages = 50'000;
  Result<Trace> trace = MakeTrace(*config);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  Result<NestingInference> inferred = InferNesting(*trace, o);
  Result<TruthInference> truth = InferFromTruth(*trace);
  EXPECT_TRUE(inferred.ok() && truth.ok());
  Result<EvalReport> report = Evaluate(truth->paths, inferred->paths, EvalOptions{.max_n = 1});
  EXPECT_TRUE(report.ok()) << report.status().message();
  return report->instances.FalsePositiveRate();
}

// The generic child penalty z, scaled by the calls per visit (scale_generic_penalty): at
// children-parallel's and children-d-cc's B, whose visits make two calls or fewer, z at
// full strength sends a parent's second child to a fresh parent, and the defaults of issue
// 21 were worse there than the defaults before it (x = 2, z = 0, one sibling pass, greedy).
// Scaled, no cell of Figures 18-22 is worse than before; these are the three that were.
// Measured (false positives: before issue 21, scaled, fixed): children-parallel x2 91.6%,
// 90.9%, 92.3%; x4 99.5%, 99.4%, 99.6%; children-d-cc x4 88.2%, 86.1%, 92.0%.
TEST(NestingAccuracyTest, ScaledGenericPenaltyOnTheChildrenCases) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  NestingOptions before;  // the defaults before issue 21
  before.overlap_penalty = 2;
  before.generic_child_penalty = 0;
  before.sibling_passes = 1;
  before.lookahead = false;
  NestingOptions fixed;
  fixed.scale_generic_penalty = false;
  struct Cell {
    std::string scenario;
    double factor;
  };
  for (const Cell& c :
       {Cell{"children-parallel", 2}, Cell{"children-parallel", 4}, Cell{"children-d-cc", 4}}) {
    const double earlier = FalsePositiveRate(c.scenario, c.factor, before);
    EXPECT_LE(FalsePositiveRate(c.scenario, c.factor, NestingOptions{}), earlier)
        << c.scenario << " x" << c.factor;
    EXPECT_GT(FalsePositiveRate(c.scenario, c.factor, fixed), earlier)
        << c.scenario << " x" << c.factor;
  }
}

}  // namespace
}  // namespace weft
