// The nesting algorithm (Project 5 §5.1): which RPC caused which, from message timestamps
// alone, in time linear in messages x per-node parallelism (§5.1.2).
//
//   FindCallPairs    §5.1.1.1  match each RETURN with its CALL; collect candidate parents
//   ScoreNestings    §5.1.1.2  scoreboard of (A, B, C, delay bin), each child weighted 1/N
//   FindNestedPairs  §5.1.1.3  pick each child's most likely parent, with child penalties,
//                              weighing what each choice leaves the node's next call
//   FindCallPaths    §5.1.1.4  trees from the root calls, aggregated into path patterns
//
// docs/nesting.md describes every knob and the measured accuracy.
#pragma once

#include "core/status.h"
#include "core/time.h"
#include "infer/call_pairs.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

struct NestingOptions {
  // Loosens every timestamp comparison that establishes nesting by this much, for traces
  // whose clocks are skewed (§7.5.6): a parent may be called up to this long after its
  // child and return up to this long before it.
  TimeNs skew_window = 0;
  // Child penalties of §5.1.1.3: a candidate parent's score is multiplied by
  // (1 + c)^-exponent for c of its already assigned children that overlap this child in
  // time (x), go to the same node (y), or exist at all (z). The defaults (x = 4, z = 1)
  // were chosen with lookahead and three sibling passes on the microservice scenarios and
  // checked on Figures 17-22 (docs/nesting.md); Project 5's scoring uses x = 2, z = 0
  // (PaperNestingOptions).
  double overlap_penalty = 4.0;
  double same_child_penalty = 0.0;
  double generic_child_penalty = 1.0;
  // Scale z, per node B, by how many calls a visit at B makes (weft's addition; see
  // docs/nesting.md): z x max(0, 1 - 1.5 / m), where m is B's calls that have a candidate
  // parent per call into B. The penalty spreads children evenly over open parents, which
  // holds where every visit makes a long series of calls (a microservice frontend) and
  // misleads where visits make one or two, whose counts differ by path rather than by
  // progress. False applies z as given at every node.
  bool scale_generic_penalty = true;
  // Also score how long after the child's return the parent returns (weft's addition; see
  // docs/nesting.md): a second scoreboard of (A, B, C, return gap), multiplied with the
  // paper's (A, B, C, call delay) as independent evidence.
  bool score_returns = true;
  // Standard deviation, in scoreboard bins, of the Gaussian each scoreboard histogram is
  // smoothed with (§5.1.1.2); 0 disables smoothing.
  double smoothing_bins = 0.0;
  // Match calls and returns by (sender, receiver, call id). Without ids (or false), each
  // return is matched with the earliest unmatched call between the pair (§5.1.1.1), which
  // fails when a later call between the same pair returns first.
  bool use_call_ids = true;
  // Choose again this many times, also scoring each candidate by how the child would
  // follow the parent's other children (first, after a returned sibling and how long
  // after, or overlapping one), as learned from the previous choice (weft's addition; see
  // docs/nesting.md). 0 with score_returns and lookahead false gives Project 5 exactly.
  int sibling_passes = 3;
  // Weigh each choice of parent with the best choice it leaves the next call from the same
  // node (weft's addition; see docs/nesting.md). False gives Project 5's greedy choice.
  bool lookahead = true;
  // Threads that choose parents (FindNestedPairs) for independent stretches of the trace,
  // where requests are open across none of their borders; 0 is one per hardware thread.
  // The result is the same for any number.
  int threads = 0;
};

// Project 5's algorithm exactly (--paper-scoring): call delays only, no return or sibling
// scoring, greedy choice, and the penalties weft used with it (x = 2, y = z = 0).
inline NestingOptions PaperNestingOptions() {
  NestingOptions o;
  o.overlap_penalty = 2.0;
  o.generic_child_penalty = 0.0;
  o.scale_generic_penalty = false;
  o.score_returns = false;
  o.sibling_passes = 0;
  o.lookahead = false;
  return o;
}

// Scoreboard bins (§5.1.1.2): the paper indexes delays by log base 1.05 from 1 ms to 2 h
// in 340 bins. weft keeps base 1.05 but starts at 100 ns, so that the microsecond delays
// of a LAN are resolved, and runs to about 7 hours (540 bins). Delays below 100 ns,
// including negative ones within the skew window, share bin 0.
inline constexpr double kNestingBinBase = 1.05;
inline constexpr TimeNs kNestingMinDelay = 100;
inline constexpr int kNestingBins = 540;
int NestingDelayBin(TimeNs delay);

// How FindCallPairs pairs calls (§5.1.1.1): in trace order, each RETURN B->A answers the
// earliest unanswered CALL A->B, with the same call id when `use_call_ids` (a message
// without one pairs by nodes alone). Departing from the paper, a RETURN met before its
// CALL waits for it, and a CALL reusing an open call's id gives that call up (nesting.cc).
CallPairingOptions NestingCallPairing(const NestingOptions& options);

// Runs the four steps over the CALL and RETURN messages of `trace` (MSG messages are
// ignored and counted). Unmatched calls and returns are dropped and counted, never fatal.
// Counters in the result: calls, returns, call_pairs, unmatched_calls, unmatched_returns,
// ignored_messages, roots, candidate_parents (summed over children that had any),
// children_with_candidates.
// What nesting counted: calls and returns seen, call_pairs matched, unmatched_calls,
// unmatched_returns, ignored_messages (not CALL or RETURN), roots (root calls), and
// candidate_parents over children_with_candidates, the mean per-node parallelism.
struct NestingCounters {
  int64_t calls = 0;
  int64_t returns = 0;
  int64_t call_pairs = 0;
  int64_t unmatched_calls = 0;
  int64_t unmatched_returns = 0;
  int64_t ignored_messages = 0;
  int64_t roots = 0;
  int64_t candidate_parents = 0;
  int64_t children_with_candidates = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const {
    return {{"calls", calls},
            {"returns", returns},
            {"call_pairs", call_pairs},
            {"unmatched_calls", unmatched_calls},
            {"unmatched_returns", unmatched_returns},
            {"ignored_messages", ignored_messages},
            {"roots", roots},
            {"candidate_parents", candidate_parents},
            {"children_with_candidates", children_with_candidates}};
  }
};
using NestingInference = Inference<NestingCounters>;

Result<NestingInference> InferNesting(const Trace& trace, const NestingOptions& options);

}  // namespace weft
