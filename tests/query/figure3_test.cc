// Pivot Tracing's Figure 3 as tests: an execution that fires tracepoints A, B and C, and
// the tuples each happened-before join query returns.
//
// The figure's execution, as we read it: the request splits into two branches that never
// communicate. One branch fires b1, then c1. The other fires a1, a2, b2, c2 in that order.
// So a1 -> b2, a2 -> b2, b1 -> c1, b2 -> c2, a1 -> c2, a2 -> c2, and b1 happened before
// nothing of the second branch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/hand_events.h"

namespace weft::query::testing {
namespace {

using ::testing::ElementsAre;

class Figure3 : public ::testing::Test {
 protected:
  Figure3() {
    events_.Reserve(16);
    uint32_t a1 = events_.Add("a1", 1), a2 = events_.Add("a2", 2), b1 = events_.Add("b1", 10),
             b2 = events_.Add("b2", 20), c1 = events_.Add("c1", 100), c2 = events_.Add("c2", 200);
    Script s;
    uint32_t left = s.Branch(0), right = s.Branch(0);
    s.Fire(left, kB, b1).Fire(left, kC, c1);
    s.Fire(right, kA, a1).Fire(right, kA, a2).Fire(right, kB, b2).Fire(right, kC, c2);
    executions_.push_back(s.Done());
  }

  // Rows of the query, optimized and not: both must give the same.
  std::vector<std::string> Query(const std::string& text) {
    Answer plain = Ask(text, AbcTracepoints(), events_, executions_, false);
    Answer optimized = Ask(text, AbcTracepoints(), events_, executions_, true);
    EXPECT_EQ(plain.error, "");
    EXPECT_EQ(Rows(plain.result), Rows(optimized.result)) << text;
    return Rows(optimized.result);
  }

  static constexpr uint32_t kA = 0, kB = 1, kC = 2;
  HandEvents events_;
  std::vector<Execution> executions_;
};

TEST_F(Figure3, OneTracepoint) {
  EXPECT_THAT(Query("From a In A Select a.id"), ElementsAre("a1", "a2"));
  EXPECT_THAT(Query("From b In B Select b.id"), ElementsAre("b1", "b2"));
}

TEST_F(Figure3, HappenedBeforeJoin) {
  EXPECT_THAT(Query("From b In B Join a In A On a -> b Select a.id, b.id"),
              ElementsAre("a1 b2", "a2 b2"));
  EXPECT_THAT(Query("From c In C Join b In B On b -> c Select b.id, c.id"),
              ElementsAre("b1 c1", "b2 c2"));
  EXPECT_THAT(Query("From c In C Join a In A On a -> c Select a.id, c.id"),
              ElementsAre("a1 c2", "a2 c2"));
  // Nothing of A happened before a B on the other branch, nor before anything in A's own
  // first event.
  EXPECT_THAT(Query("From a In A Join c In C On c -> a Select c.id, a.id"), ElementsAre());
}

TEST_F(Figure3, ChainedJoins) {
  EXPECT_THAT(
      Query("From c In C Join b In B On b -> c Join a In A On a -> b Select a.id, b.id, c.id"),
      ElementsAre("a1 b2 c2", "a2 b2 c2"));
  // Two joins to the same alias: every pair of tuples that happened before it.
  EXPECT_THAT(
      Query("From c In C Join a In A On a -> c Join b In B On b -> c Select a.id, b.id, c.id"),
      ElementsAre("a1 b2 c2", "a2 b2 c2"));
}

TEST_F(Figure3, TemporalFilters) {
  EXPECT_THAT(Query("From b In B Join a In First(A) On a -> b Select a.id, b.id"),
              ElementsAre("a1 b2"));
  EXPECT_THAT(Query("From b In B Join a In MostRecent(A) On a -> b Select a.id, b.id"),
              ElementsAre("a2 b2"));
  EXPECT_THAT(Query("From c In C Join a In FirstN(A, 2) On a -> c Select a.id, c.id"),
              ElementsAre("a1 c2", "a2 c2"));
  EXPECT_THAT(Query("From c In C Join a In MostRecentN(A, 5) On a -> c Select a.id, c.id"),
              ElementsAre("a1 c2", "a2 c2"));
}

TEST_F(Figure3, SelfJoin) {
  // An event never happens before itself.
  EXPECT_THAT(Query("From x In A Join y In A On y -> x Select y.id, x.id"), ElementsAre("a1 a2"));
}

TEST_F(Figure3, ColumnsAreNamedByFieldUnlessTheyClash) {
  Answer answer =
      Ask("From b In B Join a In A On a -> b GroupBy a.id, b.id, b.v "
          "Select a.id, b.id, b.v, COUNT As n",
          AbcTracepoints(), events_, executions_);
  EXPECT_THAT(answer.result.columns, ElementsAre("a.id", "b.id", "v", "n"));
}

TEST_F(Figure3, Aggregates) {
  EXPECT_THAT(Query("From b In B Join a In A On a -> b Select COUNT"), ElementsAre("2"));
  EXPECT_THAT(Query("From b In B Join a In A On a -> b GroupBy b.id Select b.id, SUM(a.v)"),
              ElementsAre("b2 3"));
  EXPECT_THAT(Query("From c In C Join a In A On a -> c Join b In B On b -> c "
                    "GroupBy c.id Select c.id, COUNT, SUM(a.v), SUM(b.v), MIN(a.id), MAX(a.v)"),
              ElementsAre("c2 2 3 40 a1 2"));
}

TEST_F(Figure3, Union) {
  EXPECT_THAT(Query("From x In A, B Select x.id"), ElementsAre("a1", "a2", "b1", "b2"));
  EXPECT_THAT(Query("From c In C Join x In A, B On x -> c Select x.id, c.id"),
              ElementsAre("a1 c2", "a2 c2", "b1 c1", "b2 c2"));
}

// Branches that rejoin: what each packed becomes visible to the other side only after the
// join (Pivot Tracing §5, "Branches and Versioning").
TEST(Baggage, BranchesSeeEachOtherOnlyAfterTheyJoin) {
  HandEvents events;
  events.Reserve(8);
  uint32_t a0 = events.Add("a0"), a1 = events.Add("a1"), a2 = events.Add("a2"),
           b1 = events.Add("b1"), b2 = events.Add("b2"), c = events.Add("c");
  Script s;
  s.Fire(0, 0, a0);
  uint32_t left = s.Branch(0), right = s.Branch(0);
  s.Fire(left, 0, a1).Fire(right, 0, a2).Fire(left, 1, b1).Fire(right, 1, b2);
  s.Join(0, left).Join(0, right).Fire(0, 2, c);
  std::vector<Execution> executions{s.Done()};
  auto rows = [&](const std::string& q, bool optimize) {
    return Rows(Ask(q, AbcTracepoints(), events, executions, optimize).result);
  };
  for (bool optimize : {false, true}) {
    EXPECT_THAT(rows("From b In B Join a In A On a -> b Select a.id, b.id", optimize),
                ElementsAre("a0 b1", "a0 b2", "a1 b1", "a2 b2"));
    // a0 was packed before the split: after the join it is one tuple, not two.
    EXPECT_THAT(rows("From c In C Join a In A On a -> c Select a.id", optimize),
                ElementsAre("a0", "a1", "a2"));
    EXPECT_THAT(rows("From c In C Join a In First(A) On a -> c Select a.id", optimize),
                ElementsAre("a0"));
    EXPECT_THAT(rows("From c In C Join a In MostRecent(A) On a -> c Select a.id", optimize),
                ElementsAre("a2"));
    EXPECT_THAT(rows("From c In C Join a In A On a -> c Select COUNT", optimize), ElementsAre("3"));
  }
}

// Equal tuples merge in the baggage up to a limit on distinct ones (300 here), and stay
// apart past it; the answer is the same either way.
TEST(Baggage, ManyDistinctTuplesCountRight) {
  HandEvents events;
  events.Reserve(1000);
  Script s;
  for (int i = 0; i < 300; ++i) s.Fire(0, 0, events.Add("a", i % 100));
  for (int i = 0; i < 300; ++i) s.Fire(0, 0, events.Add("a", 1000 + i));
  uint32_t call = s.Branch(0);
  for (int i = 0; i < 50; ++i) s.Fire(call, 0, events.Add("a", i));
  s.Join(0, s.Branch(call)).Fire(0, 1, events.Add("b"));
  std::vector<Execution> executions{s.Done()};
  const std::string q = "From b In B Join a In A On a -> b GroupBy a.v Select a.v, COUNT";
  Answer plain = Ask(q, AbcTracepoints(), events, executions, false);
  Answer optimized = Ask(q, AbcTracepoints(), events, executions, true);
  std::vector<std::string> rows = Rows(optimized.result);
  EXPECT_EQ(Rows(plain.result), rows);
  ASSERT_EQ(rows.size(), 400u);
  EXPECT_EQ(rows[0], "0 4");
  EXPECT_EQ(rows[49], "49 4");
  EXPECT_EQ(rows[50], "50 3");
  EXPECT_EQ(rows[399], "1299 1");
  EXPECT_LT(optimized.result.counters.tuples_packed, plain.result.counters.tuples_packed);
}

TEST(Baggage, RequestsWeighByTheirProbability) {
  HandEvents events;
  events.Reserve(4);
  uint32_t a = events.Add("a", 4), b = events.Add("b");
  Script s1, s2;
  s1.Fire(0, 0, a).Fire(0, 1, b);
  s2.Fire(0, 0, a).Fire(0, 1, b);
  std::vector<Execution> executions{s1.Done(0.25), s2.Done(0.5)};
  Answer answer = Ask("From b In B Join a In A On a -> b Select COUNT, SUM(a.v), AVERAGE(a.v)",
                      AbcTracepoints(), events, executions);
  EXPECT_THAT(Rows(answer.result), ElementsAre("0.75 3 4"));
  EXPECT_TRUE(answer.result.counters.weighted);
}

}  // namespace
}  // namespace weft::query::testing
