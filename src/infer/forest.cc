#include "infer/forest.h"

namespace weft {

std::vector<MessageId> CallsAnswered(const Trace& trace) {
  std::vector<MessageId> call_of = PairCalls(trace, kPreciseCallPairing).partner;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kReturn) call_of[i] = MessageId();
  }
  return call_of;
}

Result<ForestCounts> AddForest(const Trace& trace, std::span<const MessageId> parent,
                               PathSetBuilder& builder) {
  const size_t n = trace.size();
  // Children lists by counting sort, in time order.
  std::vector<uint32_t> child_begin(n + 1, 0), children(n);
  for (size_t i = 0; i < n; ++i) {
    if (parent[i].valid()) ++child_begin[parent[i].value() + 1];
  }
  for (size_t i = 0; i < n; ++i) child_begin[i + 1] += child_begin[i];
  {
    std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      if (parent[i].valid()) children[fill[parent[i].value()]++] = uint32_t(i);
    }
  }
  std::vector<MessageId> members;
  std::vector<int32_t> parents;
  std::vector<std::pair<uint32_t, int32_t>> stack;  // (message, index of its parent)
  uint64_t placed = 0, instances = 0;
  for (size_t root = 0; root < n; ++root) {
    if (parent[root].valid()) continue;
    members.clear();
    parents.clear();
    stack.assign(1, {uint32_t(root), -1});
    while (!stack.empty()) {  // depth first
      auto [m, p] = stack.back();
      stack.pop_back();
      int32_t index = int32_t(members.size());
      members.push_back(MessageId(m));
      parents.push_back(p);
      for (uint32_t k = child_begin[m]; k < child_begin[m + 1]; ++k)
        stack.push_back({children[k], index});
    }
    Status added = builder.AddInstance(members, parents);
    if (!added.ok())
      return added.WithContext(fmt::format("the instance rooted at message {}", root));
    placed += members.size();
    ++instances;
  }
  return ForestCounts{.instances = int64_t(instances),
                      .messages_in_instances = int64_t(placed),
                      .messages_in_cycles = int64_t(n - placed)};
}

}  // namespace weft
