#include "infer/call_pairs.h"

#include <gtest/gtest.h>

#include "infer/forest.h"
#include "infer/linking/linking.h"
#include "infer/nesting/nesting.h"
#include "trace/text_format.h"

namespace weft {
namespace {

using Answer = CallPairingOptions::Answer;
using Order = CallPairingOptions::Order;

Trace Parse(std::string_view text) {
  Result<Trace> t = ParseTextTrace(text, "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

// Each message's partner as an index, -1 for none: {0, 1} reads "0 pairs with 1".
std::vector<int> Partners(const CallPairs& pairs) {
  std::vector<int> out;
  for (MessageId m : pairs.partner) out.push_back(m.valid() ? int(m.value()) : -1);
  return out;
}

// Precise pairing: the call id alone names the call, wherever it was seen; a second CALL
// with one id answers later RETURNs, and so does a resent RETURN; messages without an id
// and MSGs are left out.
TEST(CallPairsTest, PreciseByCallIdAlone) {
  Trace trace = Parse(R"(
1 CALL_SENT A B x
2 CALL_SENT A C -
3 MSG_SENT A B x
4 RET_SENT B A x
5 CALL_SENT A B y
6 CALL_SENT D E y
7 RET_SENT B A y
8 RET_SENT B A y
9 RET_SENT C A -
10 RET_SENT B A z
)");
  CallPairs pairs = PairCalls(trace, kPreciseCallPairing);
  // The RETURN B->A y answers the latest CALL with id y although it went D->E: the
  // precise algorithms trust reconcile's ids over node names.
  EXPECT_EQ(Partners(pairs), (std::vector<int>{3, -1, -1, 0, -1, 6, 5, 5, -1, -1}));
  EXPECT_EQ(pairs.pairs, 3);
  EXPECT_EQ(pairs.unmatched_calls, 1);    // the CALL A->B y at 5
  EXPECT_EQ(pairs.unmatched_returns, 1);  // z
  EXPECT_EQ(
      CallsAnswered(trace),
      (std::vector<MessageId>{MessageId(), MessageId(), MessageId(), MessageId(0), MessageId(),
                              MessageId(), MessageId(5), MessageId(5), MessageId(), MessageId()}));
}

// Without call ids a RETURN answers the earliest open call between its pair (Project 5
// §5.1.1.1), which is wrong when a later call returns first; with ids it is right.
TEST(CallPairsTest, NoCallIdsPairsEarliestOpenCallPerNodePair) {
  Trace trace = Parse(R"(
1 CALL_SENT A B p
2 CALL_SENT A B q
3 CALL_SENT C B r
4 RET_SENT B A q
5 RET_SENT B C r
6 RET_SENT B A p
)");
  NestingOptions nesting;
  nesting.use_call_ids = false;
  EXPECT_EQ(Partners(PairCalls(trace, NestingCallPairing(nesting))),
            (std::vector<int>{3, 5, 4, 0, 2, 1}));
  nesting.use_call_ids = true;
  EXPECT_EQ(Partners(PairCalls(trace, NestingCallPairing(nesting))),
            (std::vector<int>{5, 3, 4, 1, 2, 0}));
}

// Nested calls on one key: a stack answers the latest open call first (linking), a queue
// the earliest (nesting without ids).
TEST(CallPairsTest, NestedCallsOnOnePair) {
  Trace trace = Parse(R"(
1 CALL_SENT A B x
2 CALL_SENT A B x
3 RET_SENT B A x
4 RET_SENT B A x
)");
  CallPairingOptions options;
  options.answer = Answer::kLatestOpen;
  CallPairs stack = PairCalls(trace, options);
  EXPECT_EQ(Partners(stack), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(stack.pairs, 2);
  options.answer = Answer::kEarliestOpen;
  EXPECT_EQ(Partners(PairCalls(trace, options)), (std::vector<int>{2, 3, 0, 1}));
  // kLatest answers both returns with the second call.
  options.answer = Answer::kLatest;
  CallPairs latest = PairCalls(trace, options);
  EXPECT_EQ(Partners(latest), (std::vector<int>{-1, 2, 1, 1}));
  EXPECT_EQ(latest.pairs, 2);
  EXPECT_EQ(latest.unmatched_calls, 1);
}

// Unmatched calls and returns are counted; a return that sorts before its call waits for
// it only with returns_wait; a reused id gives the open call up only with
// give_up_reused_ids.
TEST(CallPairsTest, UnmatchedCallsAndReturns) {
  Trace trace = Parse(R"(
1 RET_SENT B A r
2 CALL_SENT A B r
3 CALL_SENT A B x
4 CALL_SENT A B x
5 RET_SENT B A x
6 RET_SENT B A y
7 CALL_SENT A C -
)");
  CallPairingOptions strict;
  strict.require_call_id = false;
  CallPairs s = PairCalls(trace, strict);
  EXPECT_EQ(Partners(s), (std::vector<int>{-1, -1, 4, -1, 2, -1, -1}));
  EXPECT_EQ(s.pairs, 1);
  EXPECT_EQ(s.unmatched_calls, 3);    // r, the second x, and A->C
  EXPECT_EQ(s.unmatched_returns, 2);  // r (too early) and y
  EXPECT_TRUE(s.given_up.empty());

  CallPairs n = PairCalls(trace, NestingCallPairing(NestingOptions{}));
  EXPECT_EQ(Partners(n), (std::vector<int>{1, 0, -1, 4, 3, -1, -1}));
  EXPECT_EQ(n.pairs, 2);
  EXPECT_EQ(n.unmatched_calls, 2);  // the first x, given up, and A->C
  EXPECT_EQ(n.unmatched_returns, 1);
  ASSERT_EQ(n.given_up.size(), 1u);
  EXPECT_EQ(n.given_up[0].call, MessageId(2));
  EXPECT_EQ(n.given_up[0].by, MessageId(3));
}

// Two node pairs with the same ids, interleaved: pairing by nodes keeps them apart.
TEST(CallPairsTest, InterleavedPairs) {
  Trace trace = Parse(R"(
1 CALL_SENT A B 1
2 CALL_SENT C D 1
3 CALL_SENT A B 2
4 RET_SENT D C 1
5 CALL_SENT C D 2
6 RET_SENT B A 1
7 RET_SENT D C 2
8 RET_SENT B A 2
)");
  CallPairs pairs = PairCalls(trace, CallPairingOptions{});
  EXPECT_EQ(Partners(pairs), (std::vector<int>{5, 3, 7, 1, 6, 0, 4, 2}));
  EXPECT_EQ(pairs.pairs, 4);
  EXPECT_EQ(pairs.unmatched_calls, 0);
  EXPECT_EQ(pairs.unmatched_returns, 0);
  // By call id alone the two pairs mix.
  CallPairingOptions ids_only;
  ids_only.nodes = false;
  EXPECT_EQ(Partners(PairCalls(trace, ids_only)), (std::vector<int>{3, 5, 6, 0, 7, 1, 2, 4}));
}

// Linking orders each pair on the clock that saw both ends: B's clock runs 100 ns behind
// A's, so the RETURN sorts before its CALL in the trace, yet on A's clock (call sent at
// 110, return received at 130) it comes after.
TEST(CallPairsTest, LocalClockOrder) {
  Trace trace = Parse(R"(
110 CALL_SENT A B x recv=15
20 RET_SENT B A x recv=130
)");
  ASSERT_EQ(trace.columns().kind[0], MessageKind::kReturn);
  CallPairingOptions by_trace = kLinkingCallPairing;
  by_trace.order = Order::kTrace;
  CallPairs in_trace_order = PairCalls(trace, by_trace);
  EXPECT_EQ(in_trace_order.pairs, 0);
  EXPECT_EQ(in_trace_order.unmatched_returns, 1);
  CallPairs local = PairCalls(trace, kLinkingCallPairing);
  EXPECT_EQ(Partners(local), (std::vector<int>{1, 0}));
  EXPECT_EQ(local.pairs, 1);
  EXPECT_EQ(local.unmatched_calls, 0);
}

// A call timed only by its callee and a return timed only by the caller share no clock.
TEST(CallPairsTest, LocalClockNeedsOneClock) {
  Trace trace = Parse(R"(
- CALL_SENT A B x recv=10
- RET_SENT B A x recv=20
)");
  CallPairs local = PairCalls(trace, kLinkingCallPairing);
  EXPECT_EQ(local.pairs, 0);
  EXPECT_EQ(local.unmatched_calls, 1);
  EXPECT_EQ(local.unmatched_returns, 1);
}

}  // namespace
}  // namespace weft
