// --algo truth: path instances read straight from a trace's ground truth (the path= and
// parent= of each message), so that eval can be checked on itself and every algorithm has
// an exact answer to be compared with (Project 5 §7.5.1).
#pragma once

#include "core/status.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

// Groups messages by ground-truth path id and links them by ground-truth parent. Messages
// without a path id are counted ("messages_without_truth"), not assigned. An error if the
// trace has no ground truth at all, or a path is not a tree. The options make the truth
// comparable with what linking gives.
struct TruthOptions {
  bool aggregate_clients = false;  // name nodes as AggregateClients (infer/aggregate.h) does
  bool clock_offsets = false;      // measure latencies with estimated clock offsets removed
};
// messages_without_truth: messages with no path id, left out of every instance.
struct TruthCounters {
  int64_t messages_without_truth = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const { return {{"messages_without_truth", messages_without_truth}}; }
};
using TruthInference = Inference<TruthCounters>;
Result<TruthInference> InferFromTruth(const Trace& trace, const TruthOptions& options = {});

}  // namespace weft
