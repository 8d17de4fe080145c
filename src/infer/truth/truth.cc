// --algo truth (Project 5 §7.5.1): Project 5 gets exact paths by "cheating", running the
// nesting algorithm with a path-instance id on every message. weft reads the ground truth
// directly: path= groups messages into instances and parent= links them, so no inference
// is involved and the answer does not depend on the nesting algorithm being right.
#include "infer/truth/truth.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "infer/aggregate.h"
#include "paths/path_set_builder.h"
#include "trace/clock_offsets.h"

namespace weft {

Result<TruthInference> InferFromTruth(const Trace& trace, const TruthOptions& options) {
  const TraceColumns& c = trace.columns();
  if (!trace.HasTruth()) {
    return Status::InvalidArgument("the trace has no ground truth (no message has a path id)");
  }
  // Paths in order of their first message; members of each path in time order.
  absl::flat_hash_map<PathId, uint32_t> path_index;
  std::vector<PathId> path_ids;
  std::vector<uint32_t> path_of(trace.size(), UINT32_MAX);
  std::vector<uint32_t> path_size;
  int64_t without_truth = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    PathId id = c.truth_path[i];
    if (!id.valid()) {
      ++without_truth;
      continue;
    }
    auto [it, inserted] = path_index.try_emplace(id, uint32_t(path_ids.size()));
    if (inserted) {
      path_ids.push_back(id);
      path_size.push_back(0);
    }
    path_of[i] = it->second;
    ++path_size[it->second];
  }
  std::vector<uint32_t> begin(path_ids.size() + 1, 0);
  for (size_t p = 0; p < path_ids.size(); ++p) begin[p + 1] = begin[p] + path_size[p];
  std::vector<MessageId> members(begin.back());
  std::vector<uint32_t> index_in_path(trace.size(), 0);
  {
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < trace.size(); ++i) {
      if (path_of[i] == UINT32_MAX) continue;
      uint32_t p = path_of[i];
      index_in_path[i] = fill[p] - begin[p];
      members[fill[p]++] = MessageId(uint32_t(i));
    }
  }

  PathSetBuilder builder(trace, "truth");
  bool aggregated = false;
  if (options.clock_offsets) builder.SetClockOffsets(EstimateClockOffsets(trace).node);
  if (options.aggregate_clients) {
    NodeAggregation aggregation = AggregateClients(trace);
    aggregated = aggregation.clients > 0;
    if (aggregated) builder.RenameNodes(std::move(aggregation.names), std::move(aggregation.alias));
  }
  std::vector<int32_t> parents;
  for (size_t p = 0; p < path_ids.size(); ++p) {
    std::span<const MessageId> messages(members.data() + begin[p], begin[p + 1] - begin[p]);
    parents.assign(messages.size(), -1);
    const uint32_t id = path_ids[p].value();
    MessageId root;
    for (size_t k = 0; k < messages.size(); ++k) {
      MessageId m = messages[k];
      MessageId parent = c.truth_parent[m.value()];
      if (!parent.valid()) {
        if (root.valid()) {
          return Status::InvalidArgument("path {} has two roots (messages {} and {})", id,
                                         root.value(), m.value());
        }
        root = m;
        continue;
      }
      if (path_of[parent.value()] != p) {
        if (!c.truth_path[parent.value()].valid()) {
          return Status::InvalidArgument("path {}: message {} has parent {}, which has no path id",
                                         id, m.value(), parent.value());
        }
        return Status::InvalidArgument("path {}: message {} has parent {}, which is in path {}", id,
                                       m.value(), parent.value(),
                                       c.truth_path[parent.value()].value());
      }
      parents[k] = int32_t(index_in_path[parent.value()]);
    }
    if (!root.valid()) {
      return Status::InvalidArgument(
          "path {} has no root: its parents form a cycle (message {} is on it)", id,
          messages[0].value());
    }
    Status added = builder.AddInstance(messages, parents);
    if (!added.ok()) return added.WithContext(fmt::format("path {}", id));
  }
  TruthInference result{std::move(builder).Finish(), {}};
  result.paths.clients_aggregated = aggregated;
  result.counters.messages_without_truth = without_truth;
  return result;
}

}  // namespace weft
