// Accuracy metrics (Project 5 §7.5.1) with exact counts: the paper's worked example, truth
// against itself, a near tie in the top-N curve, latency errors, mismatched traces.
#include "eval/eval.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "infer/truth/truth.h"
#include "paths/path_set_builder.h"
#include "trace/text_format.h"

namespace weft {
namespace {

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

PathSet Truth(const Trace& trace) {
  Result<TruthInference> set = InferFromTruth(trace);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return std::move(set->paths);
}

// An inferred set from instances written as (message ids, parent indices).
PathSet Inferred(
    const Trace& trace,
    const std::vector<std::pair<std::vector<uint32_t>, std::vector<int32_t>>>& instances) {
  PathSetBuilder builder(trace, "hand");
  for (const auto& [ids, parents] : instances) {
    std::vector<MessageId> m;
    for (uint32_t i : ids) m.push_back(MessageId(i));
    Status s = builder.AddInstance(m, parents);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return std::move(builder).Finish();
}

void ExpectCounts(const ErrorCounts& c, uint64_t truth, uint64_t inferred, uint64_t correct,
                  uint64_t fp, uint64_t fn) {
  EXPECT_EQ(c.truth, truth);
  EXPECT_EQ(c.inferred, inferred);
  EXPECT_EQ(c.correct, correct);
  EXPECT_EQ(c.false_positives, fp);
  EXPECT_EQ(c.false_negatives, fn);
}

// The system ran A→B→C→D twice (messages 0-2 and 3-5).
constexpr std::string_view kTwoChains = R"(
1.0 MSG_SENT A B recv=1.1 path=1 msg=1
1.2 MSG_SENT B C recv=1.3 path=1 msg=2 parent=1
1.4 MSG_SENT C D recv=1.5 path=1 msg=3 parent=2
2.0 MSG_SENT A B recv=2.1 path=2 msg=4
2.2 MSG_SENT B C recv=2.3 path=2 msg=5 parent=4
2.4 MSG_SENT C D recv=2.5 path=2 msg=6 parent=5
)";

TEST(Evaluate, ProjectFiveWorkedExample) {
  Trace trace = Parse(kTwoChains);
  // Found: one A→B→C→D, one A→B, one C→D; B→C of the second run is in no instance.
  PathSet inferred = Inferred(trace, {{{0, 1, 2}, {-1, 0, 1}}, {{3}, {-1}}, {{5}, {-1}}});
  Result<EvalReport> r = Evaluate(Truth(trace), inferred);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ExpectCounts(r->patterns, 1, 3, 1, /*fp=*/2, /*fn=*/0);
  ExpectCounts(r->instances, 2, 3, 1, /*fp=*/2, /*fn=*/1);
  // Messages: 3 of 6 not ascribed to the right path (FN 3); the 2 put in wrong instances
  // are the false positives; the unassigned B→C is a false negative only.
  ExpectCounts(r->messages, 6, 5, 3, /*fp=*/2, /*fn=*/3);
  EXPECT_EQ(r->truth_messages_unassigned, 1u);
  EXPECT_EQ(r->messages_without_truth, 0u);
  // Parent links: the first run's three and the second's root are right; B→C is in no
  // instance and C→D lost its parent.
  EXPECT_EQ(r->parent_links.messages, 6u);
  EXPECT_EQ(r->parent_links.correct, 4u);
  EXPECT_DOUBLE_EQ(r->instances.FalseNegativeRate(), 0.5);
  EXPECT_DOUBLE_EQ(r->patterns.FalsePositiveRate(), 2.0 / 3.0);
  // Top N, up to the larger number of patterns: all three inferred patterns have count 1
  // and rank by key, "M:A>B" first, so at N = 1 the truth pattern is missed — an exact
  // tie, forgiven by any tolerance.
  ASSERT_EQ(r->top_n.size(), 3u);
  EXPECT_EQ(r->top_n[0].false_negatives, (std::vector<uint64_t>{1, 0, 0}));
  EXPECT_EQ(r->top_n[1].false_negatives, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(r->top_n[2].false_negatives, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(r->latency_patterns, 1u);
  EXPECT_EQ(r->max_latency_error, 0.0);
  EXPECT_EQ(r->max_delay_error, 0.0);
}

TEST(Evaluate, WrongParentLinkMakesAnInstanceWrong) {
  Trace trace = Parse(kTwoChains);
  // Second run with all its messages but C→D hung under A→B: same messages, other links.
  PathSet inferred = Inferred(trace, {{{0, 1, 2}, {-1, 0, 1}}, {{3, 4, 5}, {-1, 0, 0}}});
  Result<EvalReport> r = Evaluate(Truth(trace), inferred);
  ASSERT_TRUE(r.ok());
  ExpectCounts(r->patterns, 1, 2, 1, 1, 0);
  ExpectCounts(r->instances, 2, 2, 1, 1, 1);
  ExpectCounts(r->messages, 6, 6, 3, 3, 3);
  EXPECT_EQ(r->truth_messages_unassigned, 0u);
  EXPECT_EQ(r->parent_links.messages, 6u);
  EXPECT_EQ(r->parent_links.correct, 5u);  // only C→D's parent is wrong
}

TEST(Evaluate, TruthAgainstTruthHasNoError) {
  Trace trace = Parse(R"(
1.0 CALL_SENT client WS1 recv=1.1 path=1 msg=1
1.05 CALL_SENT client WS2 recv=1.15 path=2 msg=2
1.2 CALL_SENT WS1 DB recv=1.3 path=1 msg=3 parent=1
1.25 CALL_SENT WS2 DB recv=1.32 path=2 msg=4 parent=2
1.35 RET_SENT DB WS1 recv=1.4 path=1 msg=5 parent=3
1.37 RET_SENT DB WS2 recv=1.4 path=2 msg=6 parent=4
1.45 RET_SENT WS1 client recv=1.5 path=1 msg=7 parent=1
1.5 RET_SENT WS2 client recv=1.55 path=2 msg=8 parent=2
1.6 MSG_SENT noise DB
2.0 CALL_SENT client WS1 recv=2.1 path=3 msg=9
2.3 RET_SENT WS1 client recv=2.4 path=3 msg=10 parent=9
)");
  PathSet truth = Truth(trace);
  Result<EvalReport> r = Evaluate(truth, truth);
  ASSERT_TRUE(r.ok());
  ExpectCounts(r->patterns, 3, 3, 3, 0, 0);
  ExpectCounts(r->instances, 3, 3, 3, 0, 0);
  ExpectCounts(r->messages, 10, 10, 10, 0, 0);
  EXPECT_EQ(r->messages_without_truth, 1u);
  EXPECT_EQ(r->parent_links.messages, 5u);  // the five calls; returns are not counted
  EXPECT_EQ(r->parent_links.correct, 5u);
  EXPECT_EQ(r->inferred_without_truth, 0u);
  ASSERT_EQ(r->top_n.size(), 3u);
  for (const TopNPoint& p : r->top_n)
    EXPECT_EQ(p.false_negatives, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_TRUE(r->missed.empty());
  EXPECT_EQ(r->latency_patterns, 3u);
  EXPECT_EQ(r->mean_latency_error, 0.0);
  EXPECT_EQ(r->max_delay_error, 0.0);
  EXPECT_EQ(r->undefined_errors, 0u);
}

// Single-message paths: `p` messages a→b, then `q` messages a→c, each its own truth path.
Trace Singles(int p, int q) {
  std::string text;
  int id = 0;
  for (int i = 0; i < p + q; ++i, ++id) {
    text +=
        fmt::format("{} MSG_SENT a {} recv={} path={}\n", 1 + id, i < p ? "b" : "c", 1 + id, id);
  }
  return Parse(text);
}

// Inferred: every message alone, except the first 2 * `merged` a→b messages, paired.
PathSet MergeFirstPairs(const Trace& trace, int merged) {
  std::vector<std::pair<std::vector<uint32_t>, std::vector<int32_t>>> instances;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    if (i < uint32_t(2 * merged)) {
      if (i % 2 == 0) instances.push_back({{i, i + 1}, {-1, 0}});
    } else {
      instances.push_back({{i}, {-1}});
    }
  }
  return Inferred(trace, instances);
}

TEST(Evaluate, TopNNearTieForgivenByTolerance) {
  // Truth: a→b 101 times, a→c 100 times. The inference breaks 2 a→b into one false
  // a→b(a→b), so it ranks a→c (100) above a→b (99): at N = 1 the top truth pattern is
  // missed, but 99 >= 0.98 x 100, so 2% tolerance forgives it.
  Trace trace = Singles(101, 100);
  Result<EvalReport> r = Evaluate(Truth(trace), MergeFirstPairs(trace, 1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->inferred_order, PatternOrder::kCount);
  ASSERT_EQ(r->top_n.size(), 3u);
  EXPECT_EQ(r->top_n[0].n, 1);
  EXPECT_EQ(r->top_n[0].false_negatives, (std::vector<uint64_t>{1, 0, 0}));
  EXPECT_EQ(r->top_n[1].false_negatives, (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(r->top_n[2].false_negatives, (std::vector<uint64_t>{0, 0, 0}));
  ExpectCounts(r->patterns, 2, 3, 2, 1, 0);
  ExpectCounts(r->instances, 201, 200, 199, 1, 2);

  // 3 broken pairs leave a→b 95 times: 95 < 98 but >= 94, forgiven at 6% only. 4 broken
  // pairs leave 93 < 94: a miss at every tolerance.
  Result<EvalReport> three = Evaluate(Truth(trace), MergeFirstPairs(trace, 3));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->top_n[0].false_negatives, (std::vector<uint64_t>{1, 1, 0}));
  Result<EvalReport> four = Evaluate(Truth(trace), MergeFirstPairs(trace, 4));
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->top_n[0].false_negatives, (std::vector<uint64_t>{1, 1, 1}));
  ASSERT_EQ(four->missed.size(), 0u);  // listed at the last N only, where nothing is missed

  EvalOptions one;
  one.max_n = 1;
  Result<EvalReport> listed = Evaluate(Truth(trace), MergeFirstPairs(trace, 4), one);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->top_n.size(), 1u);
  ASSERT_EQ(listed->missed.size(), 1u);
  EXPECT_EQ(listed->missed[0].key, "M:a>b");
  EXPECT_EQ(listed->missed[0].truth_count, 101u);
  EXPECT_EQ(listed->missed[0].inferred_rank, 2);
  EXPECT_EQ(listed->missed[0].inferred_score, 93.0);
  EXPECT_EQ(listed->missed[0].shape, "a→b");
}

TEST(Evaluate, LatencyErrorOfACorrectPatternBuiltFromWrongMessages) {
  // Two runs of A→B→C; the inference pairs the first A→B with the second B→C and leaves
  // the others alone. Truth: B's delay 20us and 40us (mean 30us), end to end 40us and
  // 60us (mean 50us). Inferred A→B→C: delay 55 - 10 = 45us (+50%), end to end 65us (+30%).
  Trace trace = Parse(R"(
0.000000 MSG_SENT A B recv=0.000010 path=1 msg=1
0.000005 MSG_SENT A B recv=0.000015 path=2 msg=2
0.000030 MSG_SENT B C recv=0.000040 path=1 msg=3 parent=1
0.000055 MSG_SENT B C recv=0.000065 path=2 msg=4 parent=2
)");
  PathSet inferred = Inferred(trace, {{{0, 3}, {-1, 0}}, {{1}, {-1}}, {{2}, {-1}}});
  Result<EvalReport> r = Evaluate(Truth(trace), inferred);
  ASSERT_TRUE(r.ok());
  ExpectCounts(r->patterns, 1, 3, 1, 2, 0);
  ExpectCounts(r->instances, 2, 3, 0, 3, 2);
  ExpectCounts(r->messages, 4, 4, 0, 4, 4);
  EXPECT_EQ(r->latency_patterns, 1u);
  EXPECT_NEAR(r->mean_latency_error, 0.3, 1e-12);
  EXPECT_NEAR(r->max_latency_error, 0.3, 1e-12);
  EXPECT_NEAR(r->mean_delay_error, 0.5, 1e-12);
  EXPECT_NEAR(r->max_delay_error, 0.5, 1e-12);
  ASSERT_EQ(r->latency.size(), 1u);
  EXPECT_EQ(r->latency[0].truth_count, 2u);
}

TEST(Evaluate, DifferentTracesAreAnError) {
  Trace a = Parse(kTwoChains);
  Trace b = Parse("1.0 MSG_SENT A B path=1\n");
  PathSet ta = Truth(a), tb = Truth(b);
  Result<EvalReport> r = Evaluate(ta, tb);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      fmt::format("the truth and the inferred paths come from different traces (truth: 6 messages, "
                  "fingerprint {:016x}; inferred: 1 messages, fingerprint {:016x})",
                  ta.trace_fingerprint, tb.trace_fingerprint));
  PathSet same_size = ta;
  same_size.trace_fingerprint ^= 1;
  EXPECT_FALSE(Evaluate(ta, same_size).ok());
}

TEST(Evaluate, ProbabilisticInferenceRankedByExpectedCount) {
  Trace trace = Singles(3, 2);
  PathSetBuilder builder(trace, "guess");
  for (uint32_t i = 0; i < 5; ++i) {
    std::vector<MessageId> m{MessageId(i)};
    // a→b: 3 x 0.2 = 0.6 expected; a→c: 2 x 0.9 = 1.8 expected.
    ASSERT_TRUE(builder.AddInstance(m, std::vector<int32_t>{-1}, i < 3 ? 0.2 : 0.9).ok());
  }
  PathSet inferred = std::move(builder).Finish();
  Result<EvalReport> r = Evaluate(Truth(trace), inferred);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->inferred_order, PatternOrder::kExpected);
  EXPECT_EQ(r->top_n[0].false_negatives, (std::vector<uint64_t>{1, 1, 1}));  // 0.6 is far below 1.8
  ExpectCounts(r->instances, 5, 5, 5, 0, 0);
  EvalOptions by_count;
  by_count.inferred_order = PatternOrder::kCount;
  Result<EvalReport> c = Evaluate(Truth(trace), inferred, by_count);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->top_n[0].false_negatives, (std::vector<uint64_t>{0, 0, 0}));
}

TEST(EvalReport, TextAndJson) {
  Trace trace = Parse(kTwoChains);
  PathSet inferred = Inferred(trace, {{{0, 1, 2}, {-1, 0, 1}}, {{3}, {-1}}, {{5}, {-1}}});
  Result<EvalReport> r = Evaluate(Truth(trace), inferred);
  ASSERT_TRUE(r.ok());
  std::string text = FormatEvalReport(*r);
  EXPECT_NE(
      text.find(
          "path patterns            1         3         1         2         0   66.67%    0.00%"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "path instances           2         3         1         2         1   66.67%   50.00%"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "messages                 6         5         3         2         3   40.00%   50.00%"),
      std::string::npos)
      << text;
  nlohmann::json j = nlohmann::json::parse(FormatEvalReportJson(*r));
  EXPECT_EQ(j["messages"]["false_negatives"], 3);
  EXPECT_EQ(j["instances"]["false_positives"], 2);
  EXPECT_EQ(j["top_n"].size(), 3u);
  EXPECT_EQ(j["tolerances"][1], 0.02);
}

}  // namespace
}  // namespace weft
