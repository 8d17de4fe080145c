// The latest-open and earliest-open baselines (baseline.h).
#include "infer/baseline/baseline.h"

#include <algorithm>
#include <vector>

#include "infer/call_pairs.h"
#include "infer/forest.h"
#include "infer/nesting/nesting.h"
#include "paths/path_set_builder.h"

namespace weft {

std::string_view BaselineName(BaselineRule rule) {
  return rule == BaselineRule::kLatestOpen ? "latest-open" : "earliest-open";
}

Result<BaselineInference> InferBaseline(const Trace& trace, BaselineRule rule) {
  const TraceColumns& c = trace.columns();
  const CallPairs pairs = PairCalls(trace, NestingCallPairing(NestingOptions{}));
  std::vector<MessageId> parent(trace.size());
  // Per node, the calls into it still open, in the order they were opened. A call leaves
  // when its return is met; erasing from the middle is rare (returns mostly close the
  // latest call) and the lists are as short as a node's parallelism.
  std::vector<std::vector<uint32_t>> open(trace.nodes().size());
  BaselineCounters counters;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const MessageKind kind = c.kind[i];
    const MessageId partner = pairs.partner[i];
    if (kind == MessageKind::kCall) {
      ++counters.calls;
      const std::vector<uint32_t>& at_sender = open[c.sender[i].value()];
      if (at_sender.empty()) {
        ++counters.roots;
      } else {
        parent[i] =
            MessageId(rule == BaselineRule::kLatestOpen ? at_sender.back() : at_sender.front());
      }
      // A call whose return came first (skew) is never open.
      if (!partner.valid() || partner.value() > i) open[c.receiver[i].value()].push_back(i);
      continue;
    }
    if (kind == MessageKind::kReturn) ++counters.returns;
    if (kind != MessageKind::kReturn || !partner.valid()) {
      ++counters.other_messages;
      continue;
    }
    ++counters.call_pairs;
    parent[i] = partner;
    std::vector<uint32_t>& at_callee = open[c.sender[i].value()];
    auto it = std::find(at_callee.rbegin(), at_callee.rend(), partner.value());
    if (it != at_callee.rend()) at_callee.erase(std::next(it).base());
  }
  PathSetBuilder builder(trace, std::string(BaselineName(rule)));
  WEFT_RETURN_IF_ERROR(AddForest(trace, parent, builder).status());
  return BaselineInference{std::move(builder).Finish(), counters};
}

}  // namespace weft
