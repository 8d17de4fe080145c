// PathSetBuilder: collects an algorithm's path instances, puts each in canonical order and
// finds its pattern at once, and aggregates the instances' delays and latencies into their
// patterns' histograms when the set is finished (paths/path_set.h defines both and the
// order).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/id.h"
#include "core/intern.h"
#include "core/status.h"
#include "paths/path_set.h"
#include "trace/trace.h"

namespace weft {

// Not thread-safe; `trace` must outlive the builder. Adding an instance allocates nothing
// once the scratch space has grown to the largest instance, except for a new pattern.
class PathSetBuilder {
 public:
  PathSetBuilder(const Trace& trace, std::string algorithm);

  // Adds one instance: `messages` with, for each, the index in `messages` of its parent
  // (-1 for the root), in any order. Exactly one root; no cycles; no message twice, in
  // the instance or in the whole set; probability in (0, 1]. The instance is put in
  // canonical pre-order and counted in its pattern at once; on error nothing changes.
  Status AddInstance(std::span<const MessageId> messages, std::span<const int32_t> parents,
                     double probability = 1.0);

  // For probabilistic algorithms (linking): one message may be in several instances,
  // the alternatives whose probabilities make up the expected counts. Each instance then
  // counts in its pattern's histograms kProbabilityUnits x its probability times.
  void AllowSharedMessages() { set_.shared_messages = true; }
  // Names patterns by `names` instead of the trace's nodes: trace node n becomes
  // names[alias[n]] (client aggregation, WAP5 §2.5.1). Call before the first instance.
  void RenameNodes(NodeTable names, std::vector<NodeId> alias);
  // Per trace node, its clock's offset (kNoTime: unknown); elements then record their
  // network latency with the offsets removed, where both ends have one, and end-to-end
  // latencies compare times on the reference clock.
  void SetClockOffsets(std::vector<TimeNs> node_offsets) { node_offset_ = std::move(node_offsets); }

  // The set: instances in the order added, patterns in order of first appearance.
  PathSet Finish() &&;

 private:
  // The steps of AddInstance, in order; each fills scratch members the next reads.
  // Checks sizes, ids, reuse and the single root; the root's index in `messages`.
  Result<int32_t> CheckInstance(size_t instance, std::span<const MessageId> messages,
                                std::span<const int32_t> parents, double probability);
  // Children lists (child_begin_, child_list_) and a top-down order (top_down_); an error
  // if some message is not under the root (a cycle).
  Status OrderTopDown(size_t instance, std::span<const int32_t> parents, int32_t root);
  // Bottom-up: sorts each message's children canonically and hashes its subtree's shape.
  void SortChildren(std::span<const MessageId> messages);
  // The canonical pre-order (order_) and each element's parent in it (ordered_parents_).
  void PreOrder(std::span<const int32_t> parents, int32_t root);
  // The index of the instance's pattern, added if its shape is new.
  Result<uint32_t> FindOrAddPattern(std::span<const MessageId> messages, int32_t root);
  // Appends the instance to the set and counts it in its pattern.
  void RecordInstance(std::span<const MessageId> messages, uint32_t pattern, double probability);
  // Finish: records every instance's delays and latency in its pattern's histograms,
  // pattern by pattern (RecordHistograms for one instance of the set).
  void RecordAllHistograms();
  void RecordHistograms(size_t instance);
  static constexpr size_t kParallelHistogramMessages = 200'000;
  // Records element k's delay after its parent (path_set.h).
  void RecordDelay(uint32_t m, uint32_t parent_message, PatternElement& element,
                   uint64_t weight) const;

  // The label ("C:WS1>AUTH") of a (kind, sender, receiver), interned.
  uint32_t LabelId(MessageKind kind, NodeId sender, NodeId receiver);
  void RecordNetwork(uint32_t m, PatternElement& element, uint64_t weight) const;
  // A time on `node`'s clock moved to the reference clock, where its offset is known.
  TimeNs OnReference(TimeNs t, NodeId node) const;
  NodeId Alias(NodeId n) const { return alias_.empty() ? n : alias_[n.value()]; }
  void CountAttributes(uint32_t pattern, uint32_t element, MessageId m);

  const Trace& trace_;
  PathSet set_;
  std::vector<std::string> labels_;  // per node: its name escaped for keys
  std::vector<bool> used_;           // per trace message: in some instance already
  std::vector<NodeId> alias_;        // per trace node: its node in set_.nodes
  std::vector<TimeNs> node_offset_;  // per trace node, or empty
  // (pattern, element, key, value) -> instances with that attribute there.
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, uint64_t>
      attribute_counts_;
  std::vector<uint32_t> seen_stamp_;  // per trace message: last AddInstance that saw it
  uint32_t stamp_ = 0;
  absl::flat_hash_map<std::tuple<uint8_t, uint32_t, uint32_t>, uint32_t> label_ids_;
  // The same by the trace's own (kind, sender, receiver), when it has few nodes.
  static constexpr size_t kDirectLabelNodes = 128;
  static constexpr uint32_t kNoLabel = ~uint32_t(0);
  std::vector<uint32_t> direct_labels_;
  std::vector<std::string> label_text_;  // per label id
  std::vector<uint64_t> label_hash_;     // per label id: XXH3 of its text
  // Root shape hash -> the newest pattern with it; older ones with the same hash follow
  // through next_same_hash_ (kNoPattern ends the chain).
  static constexpr uint32_t kNoPattern = ~uint32_t(0);
  absl::flat_hash_map<uint64_t, uint32_t> newest_pattern_by_hash_;
  std::vector<uint32_t> next_same_hash_;  // per pattern
  // Per pattern p, its elements' label ids and parents in order, from pattern_begin_[p]:
  // shapes are compared in these small arrays, not in the trace's columns and the patterns'
  // large elements.
  std::vector<uint32_t> pattern_begin_, pattern_labels_;
  std::vector<int32_t> pattern_parents_;
  // Scratch space of AddInstance, kept to avoid allocating per instance.
  std::vector<uint32_t> child_begin_, child_list_, fill_, top_down_, label_, order_, stack_;
  std::vector<uint64_t> shape_hash_, hash_input_;
  std::vector<int32_t> position_, ordered_parents_;
};

}  // namespace weft
