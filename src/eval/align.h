// Ground truth for a captured run: the testbed's servers log their own truth (a separate
// trace, testbed/truth.h) while weft captures and reconciles what they did; this copies
// the truth's path ids and parents onto the reconciled trace, so that `weft infer --algo
// truth` and `weft eval` read the run like any trace with ground truth.
//
// Messages are matched by what both traces record independently: the sender's and the
// receiver's endpoint, the kind, and where the message starts and how long it is in the
// bytes that direction of the connection carried (counted over the whole run, so a port
// reused by a later connection goes on counting). A request is labelled only if every one
// of its messages has its counterpart; the others are left without truth and counted (a
// reconciled message holding two truth messages, e.g. pipelined requests captured without
// a protocol processor, makes both requests unlabelled).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "trace/trace.h"

namespace weft {

struct AlignSummary {
  uint64_t truth_messages = 0;
  uint64_t run_messages = 0;
  uint64_t matched = 0;   // truth messages with a run message of the same place and size
  uint64_t requests = 0;  // truth paths
  uint64_t labelled = 0;  // of them, every message matched: labelled in the run
  std::string OneLine() const;
};

// `run` with the ground truth of `truth`; its own truth, if any, is replaced. An error if
// `truth` has none, or if no message could be matched (not the same run).
Result<Trace> CopyTruth(const Trace& truth, const Trace& run, AlignSummary* summary);

}  // namespace weft
