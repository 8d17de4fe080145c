// Message linking (WAP5 §5.1): which message caused which, from two timestamps per message
// (send on the sender's clock, receive on the receiver's), with no calls, returns or
// synchronised clocks needed. Each message gets a probability for each possible parent;
// path instances are built from those links with a bounded number of try-both decisions
// and aggregated into patterns with expected counts.
//
//   EstimateCausalDelays  step 1  per sender->receiver pair, the mean delay d from the
//                                 latest message into the sender (gaps over x ignored)
//   ScoreParents          step 2  weight e^(-delay/d) per possible parent, the spontaneous
//                                 option as a delay of y*d; normalised; inverted to children
//   BuildTrees            step 3  trees from each probable root: probably-true,
//                                 probably-false and try-both links, instance probability
//                                 the product of p and 1-p of its decisions
//
// docs/linking.md describes every knob and the measured accuracy.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/time.h"
#include "infer/call_pairs.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

struct LinkingOptions {
  // x: a message into the sender longer than this before a message cannot have caused it
  // (WAP5 uses 2 s for Coral and CoDeeN, 100 ms for a LAN application).
  TimeNs window = 2 * kSecond;
  // y: the spontaneous option weighs as much as a parent y*d before the message.
  double spontaneous_delay = 4;
  // Iterations of the learned delay model after the paper's exponential one (weft's
  // addition, docs/linking.md); 0 gives WAP5's algorithm exactly.
  uint32_t learning_iterations = 6;
  // Try-both decisions allowed per tree (WAP5's "try-both bits"): a tree yields at most
  // 2^budget instances.
  uint32_t try_both_budget = 2;
  // A link with probability in [low, high] is ambiguous (try-both while budget lasts);
  // above high it is probably true, below low probably false unless it is the message's
  // most likely cause.
  double try_both_low = 0.2;
  double try_both_high = 0.8;
  // Links less likely than this are dropped after normalisation (they would only ever be
  // probably-false decisions with a factor of nearly 1).
  double min_link = 0.01;
  // Name clients "CLIENT" (WAP5 §2.5.1) when the trace has endpoints to judge by.
  bool aggregate_clients = true;
  // RPC mode: when messages are CALLs and RETURNs with call ids, pair them and let a CALL
  // be caused only by a CALL that encloses it on its sender's clock (weft's addition).
  bool use_calls = true;
  // Paths that are calls and returns follow the call-tree convention of path_set.h, as
  // ground truth does; false keeps the linked "caused by arrival" tree.
  bool call_trees = true;
};

// How RPC mode pairs calls: a RETURN answers the latest unanswered CALL with the same
// (caller, callee, call id) before it on the one clock that saw both, the caller's when it
// was traced, else the callee's, so that clock offsets cannot reorder the two. Messages
// without a call id are not paired.
inline constexpr CallPairingOptions kLinkingCallPairing = {
    .nodes = true,
    .call_id = true,
    .require_call_id = true,
    .order = CallPairingOptions::Order::kLocalClock,
    .answer = CallPairingOptions::Answer::kLatestOpen,
};

// Counters in the result: messages, pairs (sender->receiver pairs), links, roots, try_both
// (decisions taken), budget_exhausted (trees that hit the budget), truncated (links left out of
// trees grown to their limit), clients (nodes named CLIENT), rpc (1 if calls were paired),
// unpaired_returns.
struct LinkingCounters {
  int64_t messages = 0;
  int64_t pairs = 0;
  int64_t links = 0;
  int64_t roots = 0;
  int64_t try_both = 0;
  int64_t budget_exhausted = 0;
  int64_t truncated = 0;
  int64_t clients = 0;
  int64_t rpc = 0;
  int64_t unpaired_returns = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const {
    return {{"messages", messages},
            {"pairs", pairs},
            {"links", links},
            {"roots", roots},
            {"try_both", try_both},
            {"budget_exhausted", budget_exhausted},
            {"truncated", truncated},
            {"clients", clients},
            {"rpc", rpc},
            {"unpaired_returns", unpaired_returns}};
  }
};
using LinkingInference = Inference<LinkingCounters>;

Result<LinkingInference> InferLinking(const Trace& trace, const LinkingOptions& options);

}  // namespace weft
