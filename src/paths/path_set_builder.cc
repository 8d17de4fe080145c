// Path instances → canonical trees → patterns (Project 5 §5.1.1.4, "creating and
// aggregating call paths"). Project 5 keeps a hash table of path patterns and updates the
// matching pattern's latencies with each new path; weft does the same with the canonical
// key as the hash key, and keeps a full histogram per element instead of a mean.
//
// Departure from the paper: Project 5 orders a node's children as the algorithm found
// them; weft sorts them (send time, label, subtree shape, message id) so that the same
// tree gives the same key and the same element order whichever algorithm produced it —
// eval compares keys across algorithms.
#include "paths/path_set_builder.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <system_error>
#include <thread>
#include <tuple>

namespace weft {

PathSetBuilder::PathSetBuilder(const Trace& trace, std::string algorithm) : trace_(trace) {
  set_.algorithm = std::move(algorithm);
  set_.trace_messages = trace.size();
  set_.trace_fingerprint = TraceFingerprint(trace);
  set_.nodes = trace.nodes();
  labels_.reserve(trace.nodes().size());
  for (size_t i = 0; i < trace.nodes().size(); ++i) {
    labels_.push_back(EscapeKeyName(trace.nodes().Get(NodeId(uint32_t(i)))));
  }
  used_.assign(trace.size(), false);
  seen_stamp_.assign(trace.size(), 0);
  // Most algorithms put most messages in some instance; reserving avoids regrowth copies.
  set_.messages.reserve(trace.size());
  set_.parent.reserve(trace.size());
}

void PathSetBuilder::RenameNodes(NodeTable names, std::vector<NodeId> alias) {
  set_.nodes = std::move(names);
  alias_ = std::move(alias);
  labels_.clear();
  for (size_t i = 0; i < set_.nodes.size(); ++i) {
    labels_.push_back(EscapeKeyName(set_.nodes.Get(NodeId(uint32_t(i)))));
  }
  label_ids_.clear();
  direct_labels_.clear();
  label_text_.clear();
  label_hash_.clear();
}

uint32_t PathSetBuilder::LabelId(MessageKind kind, NodeId sender, NodeId receiver) {
  // With few nodes a direct table of the trace's (kind, sender, receiver) spares a hash
  // lookup per message.
  uint32_t* direct = nullptr;
  const size_t n = trace_.nodes().size();
  if (n <= kDirectLabelNodes) {
    if (direct_labels_.empty()) direct_labels_.assign(kMessageKindCount * n * n, kNoLabel);
    direct = &direct_labels_[(size_t(kind) * n + sender.value()) * n + receiver.value()];
    if (*direct != kNoLabel) return *direct;
  }
  sender = Alias(sender);
  receiver = Alias(receiver);
  auto [it, inserted] = label_ids_.try_emplace(
      std::tuple(uint8_t(kind), sender.value(), receiver.value()), uint32_t(label_text_.size()));
  if (inserted) {
    label_text_.push_back(KeyLabel(kind, labels_[sender.value()], labels_[receiver.value()]));
    label_hash_.push_back(XXH3_64bits(label_text_.back().data(), label_text_.back().size()));
  }
  if (direct) *direct = it->second;
  return it->second;
}

Status PathSetBuilder::AddInstance(std::span<const MessageId> messages,
                                   std::span<const int32_t> parents, double probability) {
  const size_t instance = set_.instance_count();
  WEFT_ASSIGN_OR_RETURN(int32_t root, CheckInstance(instance, messages, parents, probability));
  WEFT_RETURN_IF_ERROR(OrderTopDown(instance, parents, root));
  SortChildren(messages);
  PreOrder(parents, root);
  WEFT_ASSIGN_OR_RETURN(uint32_t pattern, FindOrAddPattern(messages, root));
  // Commit: from here on nothing fails.
  RecordInstance(messages, pattern, probability);
  return Status::Ok();
}

Result<int32_t> PathSetBuilder::CheckInstance(size_t instance, std::span<const MessageId> messages,
                                              std::span<const int32_t> parents,
                                              double probability) {
  const size_t n = messages.size();
  if (n == 0) return Status::InvalidArgument("instance {} has no messages", instance);
  if (parents.size() != n) {
    return Status::InvalidArgument("instance {} has {} messages but {} parents", instance, n,
                                   parents.size());
  }
  if (!(probability > 0.0 && probability <= 1.0)) {
    return Status::InvalidArgument("instance {} has probability {} outside (0, 1]", instance,
                                   probability);
  }
  if (++stamp_ == 0) {  // wrapped: forget every old stamp
    std::fill(seen_stamp_.begin(), seen_stamp_.end(), 0);
    stamp_ = 1;
  }
  int32_t root = -1;
  for (size_t i = 0; i < n; ++i) {
    MessageId m = messages[i];
    if (!m.valid() || m.value() >= trace_.size()) {
      return Status::InvalidArgument("instance {}: message {} is beyond the trace's {} messages",
                                     instance, m.value(), trace_.size());
    }
    if (used_[m.value()] && !set_.shared_messages) {
      return Status::InvalidArgument("instance {}: message {} is already in another instance",
                                     instance, m.value());
    }
    if (seen_stamp_[m.value()] == stamp_) {
      return Status::InvalidArgument("instance {}: message {} appears twice", instance, m.value());
    }
    seen_stamp_[m.value()] = stamp_;
    int32_t p = parents[i];
    if (p < -1 || p >= int32_t(n) || p == int32_t(i)) {
      return Status::InvalidArgument("instance {}: message {} has parent index {} (of {})",
                                     instance, m.value(), p, n);
    }
    if (p == -1) {
      if (root != -1) {
        return Status::InvalidArgument("instance {} has two roots (messages {} and {})", instance,
                                       messages[size_t(root)].value(), m.value());
      }
      root = int32_t(i);
    }
  }
  if (root == -1)
    return Status::InvalidArgument("instance {} has no root (its parents form a cycle)", instance);
  return root;
}

Status PathSetBuilder::OrderTopDown(size_t instance, std::span<const int32_t> parents,
                                    int32_t root) {
  // Children lists (CSR), then a top-down order from the root; a message the walk does not
  // reach is on a cycle. Scratch vectors are members, reused across instances.
  const size_t n = parents.size();
  child_begin_.assign(n + 1, 0);
  child_list_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (parents[i] >= 0) ++child_begin_[size_t(parents[i]) + 1];
  }
  std::partial_sum(child_begin_.begin(), child_begin_.end(), child_begin_.begin());
  fill_.assign(child_begin_.begin(), child_begin_.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (parents[i] >= 0) child_list_[fill_[size_t(parents[i])]++] = uint32_t(i);
  }
  top_down_.assign(1, uint32_t(root));
  for (size_t k = 0; k < top_down_.size(); ++k) {
    uint32_t e = top_down_[k];
    for (uint32_t j = child_begin_[e]; j < child_begin_[e + 1]; ++j)
      top_down_.push_back(child_list_[j]);
  }
  if (top_down_.size() != n) {
    return Status::InvalidArgument(
        "instance {}: {} of its {} messages are on a cycle, not under the root", instance,
        n - top_down_.size(), n);
  }
  return Status::Ok();
}

void PathSetBuilder::SortChildren(std::span<const MessageId> messages) {
  // Bottom-up: sort each message's children, then hash its subtree's shape (label and
  // the ordered children's hashes) for the next level's tie-break.
  const TraceColumns& c = trace_.columns();
  const size_t n = messages.size();
  label_.resize(n);
  shape_hash_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t m = messages[i].value();
    label_[i] = LabelId(c.kind[m], c.sender[m], c.receiver[m]);
  }
  for (size_t k = n; k-- > 0;) {
    uint32_t e = top_down_[k];
    auto first = child_list_.begin() + child_begin_[e],
         last = child_list_.begin() + child_begin_[e + 1];
    std::sort(first, last, [&](uint32_t a, uint32_t b) {
      TimeNs ta = trace_.SortTime(messages[a]), tb = trace_.SortTime(messages[b]);
      if (ta != tb) return ta < tb;
      if (label_[a] != label_[b]) return label_text_[label_[a]] < label_text_[label_[b]];
      if (shape_hash_[a] != shape_hash_[b]) return shape_hash_[a] < shape_hash_[b];
      return messages[a] < messages[b];
    });
    hash_input_.assign(1, label_hash_[label_[e]]);
    for (auto it = first; it != last; ++it) hash_input_.push_back(shape_hash_[*it]);
    shape_hash_[e] = XXH3_64bits(hash_input_.data(), hash_input_.size() * sizeof(uint64_t));
  }
}

void PathSetBuilder::PreOrder(std::span<const int32_t> parents, int32_t root) {
  // Pre-order with the sorted children: position_[i] is message i's element index.
  const size_t n = parents.size();
  order_.clear();
  position_.assign(n, -1);
  stack_.assign(1, uint32_t(root));
  while (!stack_.empty()) {
    uint32_t e = stack_.back();
    stack_.pop_back();
    position_[e] = int32_t(order_.size());
    order_.push_back(e);
    for (uint32_t j = child_begin_[e + 1]; j-- > child_begin_[e];) stack_.push_back(child_list_[j]);
  }
  ordered_parents_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    int32_t p = parents[order_[k]];
    ordered_parents_[k] = p < 0 ? -1 : position_[size_t(p)];
  }
}

Result<uint32_t> PathSetBuilder::FindOrAddPattern(std::span<const MessageId> messages,
                                                  int32_t root) {
  // Found by the root's shape hash and confirmed element by element, so the key text is
  // built only for a new shape. A label id stands for (kind, sender, receiver) exactly.
  const TraceColumns& c = trace_.columns();
  const size_t n = messages.size();
  auto same_shape = [&](uint32_t p) {
    const uint32_t begin = pattern_begin_[p];
    const uint32_t end =
        p + 1 < pattern_begin_.size() ? pattern_begin_[p + 1] : uint32_t(pattern_labels_.size());
    if (end - begin != n) return false;
    for (size_t k = 0; k < n; ++k) {
      if (pattern_labels_[begin + k] != label_[order_[k]] ||
          pattern_parents_[begin + k] != ordered_parents_[k])
        return false;
    }
    return true;
  };
  const uint64_t hash = shape_hash_[size_t(root)];
  auto newest = newest_pattern_by_hash_.find(hash);
  const uint32_t chain = newest == newest_pattern_by_hash_.end() ? kNoPattern : newest->second;
  for (uint32_t p = chain; p != kNoPattern; p = next_same_hash_[p]) {
    if (same_shape(p)) return p;
  }
  std::vector<std::string> ordered_labels(n);
  for (size_t k = 0; k < n; ++k) ordered_labels[k] = label_text_[label_[order_[k]]];
  WEFT_ASSIGN_OR_RETURN(std::string key, PatternKey(ordered_labels, ordered_parents_));
  const uint32_t pattern_index = uint32_t(set_.patterns.size());
  newest_pattern_by_hash_[hash] = pattern_index;
  next_same_hash_.push_back(chain);
  pattern_begin_.push_back(uint32_t(pattern_labels_.size()));
  for (size_t k = 0; k < n; ++k) pattern_labels_.push_back(label_[order_[k]]);
  pattern_parents_.insert(pattern_parents_.end(), ordered_parents_.begin(), ordered_parents_.end());
  PathPattern pattern;
  pattern.key = std::move(key);
  pattern.elements.resize(n);
  for (size_t k = 0; k < n; ++k) {
    uint32_t m = messages[order_[k]].value();
    pattern.elements[k].kind = c.kind[m];
    pattern.elements[k].sender = Alias(c.sender[m]);
    pattern.elements[k].receiver = Alias(c.receiver[m]);
    pattern.elements[k].parent = ordered_parents_[k];
  }
  set_.patterns.push_back(std::move(pattern));
  return pattern_index;
}

void PathSetBuilder::RecordInstance(std::span<const MessageId> messages, uint32_t pattern_index,
                                    double probability) {
  const size_t n = messages.size();
  PathPattern& pattern = set_.patterns[pattern_index];
  pattern.count += 1;
  pattern.expected_count += probability;
  pattern.max_probability = std::max(pattern.max_probability, probability);
  for (size_t k = 0; k < n; ++k) {
    uint32_t m = messages[order_[k]].value();
    used_[m] = true;
    if (!trace_.attributes().empty()) CountAttributes(pattern_index, uint32_t(k), MessageId(m));
    set_.messages.push_back(MessageId(m));
    set_.parent.push_back(ordered_parents_[k]);
  }
  set_.instance_begin.push_back(uint32_t(set_.messages.size()));
  set_.probability.push_back(probability);
  set_.pattern.push_back(pattern_index);
}

void PathSetBuilder::RecordHistograms(size_t instance) {
  const TraceColumns& c = trace_.columns();
  const std::span<const MessageId> messages = set_.InstanceMessages(instance);
  const std::span<const int32_t> parents = set_.InstanceParents(instance);
  const double probability = set_.probability[instance];
  PathPattern& pattern = set_.patterns[set_.pattern[instance]];
  // Alternatives (linking) weigh in the histograms by their probability, as WAP5 §5.2
  // weighs node delays, in units of 1/kProbabilityUnits.
  const uint64_t weight =
      set_.shared_messages
          ? std::max<uint64_t>(1, uint64_t(std::llround(probability * kProbabilityUnits)))
          : 1;
  TimeNs last_seen = kNoTime;
  for (size_t k = 0; k < messages.size(); ++k) {
    const uint32_t m = messages[k].value();
    last_seen = std::max({last_seen, OnReference(c.send_time[m], c.sender[m]),
                          OnReference(c.recv_time[m], c.receiver[m])});
    if (k > 0) RecordDelay(m, messages[size_t(parents[k])].value(), pattern.elements[k], weight);
    RecordNetwork(m, pattern.elements[k], weight);
  }
  const uint32_t r = messages[0].value();  // the root comes first in canonical order
  const TimeNs start = c.send_time[r] != kNoTime ? OnReference(c.send_time[r], c.sender[r])
                                                 : OnReference(c.recv_time[r], c.receiver[r]);
  if (last_seen != kNoTime) pattern.latency.Record(last_seen - start, weight);
}

void PathSetBuilder::RecordAllHistograms() {
  // The instances of each pattern, in the order they were added (a stable counting sort):
  // each histogram then gets its values in the same order as if they were recorded one
  // instance at a time, and one pattern's histograms stay in the cache while it is filled.
  const size_t patterns = set_.patterns.size(), instances = set_.instance_count();
  std::vector<uint32_t> first(patterns + 1, 0), of_pattern(instances);
  for (uint32_t p : set_.pattern) ++first[p + 1];
  std::partial_sum(first.begin(), first.end(), first.begin());
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  for (uint32_t i = 0; i < instances; ++i) of_pattern[fill[set_.pattern[i]]++] = i;
  auto record = [&](size_t begin, size_t end) {  // patterns [begin, end)
    for (size_t i = first[begin]; i < first[end]; ++i) RecordHistograms(of_pattern[i]);
  };
  // Patterns are independent, so a large set is split in two at about half its messages;
  // the histograms are the same however it is split.
  if (set_.messages.size() < kParallelHistogramMessages || patterns < 2) {
    record(0, patterns);
    return;
  }
  size_t split = 0;
  for (uint64_t messages = 0; split < patterns && 2 * messages < set_.messages.size(); ++split)
    messages += uint64_t(set_.patterns[split].count) * set_.patterns[split].elements.size();
  std::thread second;
  try {
    second = std::thread([&] { record(split, patterns); });
  } catch (const std::system_error&) {  // no thread to be had: all on this one
    record(0, patterns);
    return;
  }
  record(0, split);
  second.join();
}

void PathSetBuilder::RecordDelay(uint32_t m, uint32_t pm, PatternElement& element,
                                 uint64_t weight) const {
  // Delay after the parent (path_set.h): from the parent's arrival at this sender, or from
  // its send when the arrival was not seen or was elsewhere.
  const TraceColumns& c = trace_.columns();
  TimeNs from = (c.recv_time[pm] != kNoTime && c.receiver[pm] == c.sender[m]) ? c.recv_time[pm]
                                                                              : c.send_time[pm];
  if (c.send_time[m] != kNoTime && from != kNoTime) {
    element.delay.Record(c.send_time[m] - from, weight);
  } else if (c.send_time[m] == kNoTime && c.sender[pm] == c.receiver[m] &&
             c.send_time[pm] != kNoTime) {
    // From an untraced node back to the one that sent it the parent: the round trip on
    // that node's clock (WAP5's diamond: the untraced node's time and both hops).
    element.delay.Record(c.recv_time[m] - c.send_time[pm], weight);
    element.round_trip = true;
  }
}

TimeNs PathSetBuilder::OnReference(TimeNs t, NodeId node) const {
  if (t == kNoTime || node_offset_.empty() || node_offset_[node.value()] == kNoTime) return t;
  return t - node_offset_[node.value()];
}

void PathSetBuilder::RecordNetwork(uint32_t m, PatternElement& element, uint64_t weight) const {
  if (node_offset_.empty()) return;
  const TraceColumns& c = trace_.columns();
  const TimeNs from = node_offset_[c.sender[m].value()], to = node_offset_[c.receiver[m].value()];
  if (c.send_time[m] == kNoTime || c.recv_time[m] == kNoTime || from == kNoTime || to == kNoTime)
    return;
  element.network.Record((c.recv_time[m] - to) - (c.send_time[m] - from), weight);
}

void PathSetBuilder::CountAttributes(uint32_t pattern, uint32_t element, MessageId m) {
  for (const Attribute& a : trace_.AttributesOf(m)) {
    if (trace_.strings().Get(a.key).starts_with("payload.")) continue;  // bytes, not meaning
    ++attribute_counts_[{pattern, element, a.key.value(), a.value.value()}];
  }
}

PathSet PathSetBuilder::Finish() && {
  RecordAllHistograms();
  for (const auto& [where, count] : attribute_counts_) {
    const auto& [pattern, element, key, value] = where;
    set_.patterns[pattern].elements[element].attributes.push_back(
        {std::string(trace_.strings().Get(StringId(key))),
         std::string(trace_.strings().Get(StringId(value))), count});
  }
  for (PathPattern& pattern : set_.patterns) {
    for (PatternElement& element : pattern.elements) {
      auto& a = element.attributes;
      auto order = [](const AttributeCount& x, const AttributeCount& y) {
        if (x.count != y.count) return x.count > y.count;
        return std::tie(x.key, x.value) < std::tie(y.key, y.value);
      };
      size_t kept = std::min(a.size(), kMaxElementAttributes);
      std::partial_sort(a.begin(), a.begin() + ptrdiff_t(kept), a.end(), order);
      a.resize(kept);
    }
  }
  return std::move(set_);
}

}  // namespace weft
