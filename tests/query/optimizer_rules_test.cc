// Each rewrite rule of Pivot Tracing's Table 3, shown on the advice it produces: P is the
// joined query (A, whose tuples travel in the baggage), Q the query that joins it (B).
// Every case also checks that the rewritten advice answers as the plain one does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "query/hand_events.h"

namespace weft::query::testing {
namespace {

// Requests in which A fires on two hosts before B, B fires before and after a call that
// fires more A and B, and one request's A comes after its B.
class Rules : public ::testing::Test {
 protected:
  Rules() {
    events_.Reserve(64);
    for (int r = 0; r < 4; ++r) {
      Script s;
      s.Fire(0, kA, events_.Add("a1", 1 + r, "h1"))
          .Fire(0, kA, events_.Add("a2", 3, r % 2 ? "h1" : "h2"));
      s.Fire(0, kB, events_.Add("b1", 5, "h1"));
      uint32_t call = s.Branch(0);
      s.Fire(call, kA, events_.Add("a3", 2 * r, "h2")).Fire(call, kB, events_.Add("b2", 7, "h2"));
      s.Join(0, s.Branch(call));
      s.Fire(0, kB, events_.Add("b3", 11 + r, "h1"));
      executions_.push_back(s.Done());
    }
    Script late;
    late.Fire(0, kB, events_.Add("b0", 1, "h1")).Fire(0, kA, events_.Add("a0", 9, "h1"));
    executions_.push_back(late.Done());
  }

  // The optimized advice; checks that both plans give the same rows.
  std::string Rewritten(const std::string& query) {
    Answer plain = Ask(query, AbcTracepoints(), events_, executions_, false);
    Answer optimized = Ask(query, AbcTracepoints(), events_, executions_, true);
    EXPECT_EQ(optimized.error, "");
    EXPECT_EQ(Rows(plain.result), Rows(optimized.result)) << query;
    EXPECT_FALSE(optimized.result.rows.empty()) << query;
    EXPECT_LE(optimized.result.counters.tuples_packed, plain.result.counters.tuples_packed);
    return optimized.explain;
  }

  static constexpr uint32_t kA = 0, kB = 1;
  HandEvents events_;
  std::vector<Execution> executions_;
};

// Π_{p,q}(P ⋈ Q) → Π_p(P) ⋈ Π_q(Q): P packs only what Q reads, and equal tuples merge.
TEST_F(Rules, Projection) {
  EXPECT_EQ(Rewritten("From b In B Join a In (From x In A Select x.id, x.v, x.host) On a -> b "
                      "Select a.id, b.id"),
            "A\n"
            "  advice x (a joined query, joined to b):\n"
            "    OBSERVE x.id\n"
            "    PACK-GROUPED a.id, COUNT\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.id\n"
            "    UNPACK a.id, COUNT\n"
            "    EMIT a.id, b.id\n");
}

// σ_p(P ⋈ Q) → σ_p(P) ⋈ Q
TEST_F(Rules, SelectionOnTheJoinedQuery) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b Where a.v > 1 Select b.id, a.id"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.v, a.id\n"
            "    FILTER a.v > 1\n"
            "    PACK-GROUPED a.id, COUNT\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.id\n"
            "    UNPACK a.id, COUNT\n"
            "    EMIT b.id, a.id\n");
}

// σ_q(P ⋈ Q) → P ⋈ σ_q(Q): Q filters before it unpacks.
TEST_F(Rules, SelectionOnTheJoiningQuery) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b Where b.v > 6 Select b.id, a.id"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.id\n"
            "    PACK-GROUPED a.id, COUNT\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.v, b.id\n"
            "    FILTER b.v > 6\n"
            "    UNPACK a.id, COUNT\n"
            "    EMIT b.id, a.id\n");
}

// A_p(P ⋈ Q) → Combine_p(A_p(P) ⋈ Q)
TEST_F(Rules, AggregateOfTheJoinedQuery) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b Select SUM(a.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.v\n"
            "    PACK-GROUPED COUNT, SUM(a.v)\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    UNPACK COUNT, SUM(a.v)\n"
            "    EMIT SUM(a.v)\n");
}

// GA_p(P ⋈ Q) → G_p Combine_p(GA_p(P) ⋈ Q)
TEST_F(Rules, GroupedAggregateOfTheJoinedQuery) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b GroupBy a.host Select a.host, SUM(a.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.host, a.v\n"
            "    PACK-GROUPED a.host, COUNT, SUM(a.v)\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    UNPACK a.host, COUNT, SUM(a.v)\n"
            "    EMIT a.host, SUM(a.v) GROUPBY a.host\n");
}

// GA_q(P ⋈ Q) → G_q Combine_p(P ⋈ GA_q(Q)): P packs only how many tuples it had.
TEST_F(Rules, GroupedAggregateOfTheJoiningQuery) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b GroupBy b.host Select b.host, SUM(b.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    PACK-GROUPED COUNT\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.host, b.v\n"
            "    UNPACK COUNT\n"
            "    EMIT b.host, SUM(b.v) GROUPBY b.host\n");
}

// G_p A_q(P ⋈ Q) → G_p Combine_q(Π_p(P) ⋈ A_q(Q))
TEST_F(Rules, GroupByTheJoinedAggregateTheJoining) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b GroupBy a.host Select a.host, SUM(b.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.host\n"
            "    PACK-GROUPED a.host, COUNT\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.v\n"
            "    UNPACK a.host, COUNT\n"
            "    EMIT a.host, SUM(b.v) GROUPBY a.host\n");
}

// G_q A_p(P ⋈ Q) → G_q Combine_p(A_p(P) ⋈ Π_q(Q))
TEST_F(Rules, GroupByTheJoiningAggregateTheJoined) {
  EXPECT_EQ(Rewritten("From b In B Join a In A On a -> b GroupBy b.host Select b.host, SUM(a.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.v\n"
            "    PACK-GROUPED COUNT, SUM(a.v)\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    OBSERVE b.host\n"
            "    UNPACK COUNT, SUM(a.v)\n"
            "    EMIT b.host, SUM(a.v) GROUPBY b.host\n");
}

// No rule crosses a join that keeps only the first or latest tuples: filtering before
// packing would change which tuple is first.
TEST_F(Rules, NothingCrossesFirst) {
  EXPECT_EQ(Rewritten("From b In B Join a In First(A) On a -> b Where a.v > 1 GroupBy a.host "
                      "Select a.host, SUM(a.v)"),
            "A\n"
            "  advice a (joined to b):\n"
            "    OBSERVE a.v, a.host\n"
            "    PACK-FIRST a.v, a.host\n"
            "B\n"
            "  advice b (the answered query):\n"
            "    UNPACK a.v, a.host\n"
            "    FILTER a.v > 1\n"
            "    EMIT a.host, SUM(a.v) GROUPBY a.host\n");
}

// Pivot's Q2 (§3, Figure 4): A1 packs the first client's process name, A2 unpacks it and
// emits the bytes read per process name.
TEST(Advice, PivotQ2CompilesToFigure4) {
  std::vector<Tracepoint> tracepoints = {{"ClientProtocols", {"procName", "host"}, ""},
                                         {"DataNodeMetrics.incrBytesRead", {"delta", "host"}, ""}};
  HandEvents events;
  Answer answer =
      Ask("From incr In DataNodeMetrics.incrBytesRead\n"
          "Join cl In First(ClientProtocols) On cl -> incr\n"
          "GroupBy cl.procName\n"
          "Select cl.procName, SUM(incr.delta)",
          tracepoints, events, {});
  EXPECT_EQ(answer.explain,
            "ClientProtocols\n"
            "  advice cl (joined to incr):\n"
            "    OBSERVE cl.procName\n"
            "    PACK-FIRST cl.procName\n"
            "DataNodeMetrics.incrBytesRead\n"
            "  advice incr (the answered query):\n"
            "    OBSERVE incr.delta\n"
            "    UNPACK cl.procName\n"
            "    EMIT cl.procName, SUM(incr.delta) GROUPBY cl.procName\n");
}

}  // namespace
}  // namespace weft::query::testing
