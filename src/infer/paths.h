// Path instances and path patterns: what every inference algorithm produces and what
// report, query and eval read (DESIGN.md "Data model").
//
// One causality convention for every algorithm and for ground truth: a message's parent is
// the message that caused it.
//   - RPC (CALL/RETURN), the call tree of Project 5 §5.1: a CALL's parent is the CALL into
//     its sender that it is nested in (none for a root call); a RETURN's parent is the CALL
//     it answers.
//   - Free-form messages (MSG): the message whose arrival made the sender send it.
// A path instance is a tree of messages with exactly one root, and a probability (1 for
// precise algorithms and ground truth).
//
// A path pattern is the canonical shape of instances: the tree labelled by (kind, sender
// name, receiver name), the children of a message ordered by send time (ties by label), as
// in Project 5's call paths. A pattern keeps, per element (a message position in the
// shape, in pre-order), the distribution of its delay after its parent: the sender's time
// from the parent's arrival (or send, without a receive time) to this send. For an RPC the
// delay of a CALL is Project 5's call delay and the delay of a RETURN is the visit latency.
// A message from an untraced node (no send time) back to the node that sent it its parent
// has as delay the round trip on that node's clock: the untraced node's time and both
// network hops, which cannot be told apart (WAP5 §6.1 draws it as a diamond).
//
// Canonical order (Project 5 §5.1.1.4, made deterministic): children by SortTime; ties by
// label "K:sender>receiver" (K = C, R or M); remaining ties (same time, same label) by a
// hash of the child's subtree shape, then by MessageId. Equal trees over the same trace
// therefore get equal message orders, and equal shapes get equal keys.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/histogram.h"
#include "core/id.h"
#include "core/intern.h"
#include "core/status.h"
#include "trace/clock_offsets.h"
#include "trace/trace.h"

namespace weft {

// A protocol attribute (http.url=/x, sql=..., redis.command=GET: capture/protocols) on
// an element's messages, and in how many of the pattern's instances it was.
struct AttributeCount {
  std::string key, value;
  uint64_t count = 0;
};
inline constexpr size_t kMaxElementAttributes = 5;  // kept per element, most frequent first

// One message position in a pattern's canonical tree.
struct PatternElement {
  MessageKind kind = MessageKind::kMessage;
  NodeId sender;           // in PathSet::nodes
  NodeId receiver;         // in PathSet::nodes
  int32_t parent = -1;     // index of the parent element, -1 for the root
  LatencyHistogram delay;  // delay after the parent (see above); empty for the root
  // One-way network latency (receive - send) with the clock offsets of the PathSet
  // removed; empty unless the builder was given offsets and both ends were timed.
  LatencyHistogram network;
  // The sender was not traced: `delay` is the round trip through it, measured by the
  // parent's sender (see above).
  bool round_trip = false;
  // The most frequent attributes of its messages (at most kMaxElementAttributes; ties by
  // key, then value). Payload bytes (payload.*) are left out.
  std::vector<AttributeCount> attributes;
};

struct PathPattern {
  std::string key;  // canonical text of the shape; equal keys mean equal shapes
  std::vector<PatternElement> elements;  // pre-order of the canonical tree
  uint64_t count = 0;                    // instances of this shape
  double expected_count = 0;             // sum of their probabilities
  double max_probability = 0;
  LatencyHistogram latency;  // end to end: last time seen in the instance - root send
                             // (root receive when its send was not seen)
};

// The causal graph of the convolution algorithm (Project 5 §5.2, Figure 9; DESIGN.md "Data
// model"): a forest with a vertex per node visit. Each non-root vertex holds the edge from
// its parent: how many messages went along it and the delays the parent node spent before
// sending them (one per correlation spike), most frequent first.
struct CausalDelay {
  TimeNs delay = 0;    // median sender delay of the messages of this spike
  uint64_t count = 0;  // messages with this delay
};

struct CausalVertex {
  NodeId node;                      // in PathSet::nodes
  int32_t parent = -1;              // index of the parent vertex, -1 for a root
  uint64_t messages = 0;            // messages on the edge from the parent (for a root: sent by it)
  std::vector<CausalDelay> delays;  // empty for a root
};

struct CausalGraph {
  TimeNs quantum = 0;  // the time quantum mu it was inferred at (0 for a derived graph)
  std::vector<CausalVertex> vertices;  // parents before children (depth-first order)
  bool empty() const { return vertices.empty(); }
};

// The estimated offset of node b's clock from node a's (WAP5 §5.2; trace/clock_offsets.h).
using ClockOffsetRow = ClockOffset;

inline constexpr double kProbabilityUnits = 1024;

// A set of path instances over one trace, and their patterns.
struct PathSet {
  std::string algorithm;           // "truth", "nesting", ...
  uint64_t trace_messages = 0;     // size of the trace the MessageIds refer to
  uint64_t trace_fingerprint = 0;  // TraceFingerprint() of that trace
  NodeTable nodes;                 // node names, the trace's table (patterns use its ids)
  // True if `nodes` names clients by role (CLIENT, WAP5 §2.5.1) rather than the trace's
  // own table: trace node ids then do not index `nodes`, and eval aggregates the truth
  // the same way before comparing.
  bool clients_aggregated = false;
  // True if instances are alternatives (linking's try-both trees): one message may then
  // be in several instances, each with its probability.
  bool shared_messages = false;

  // Instance i holds messages[instance_begin[i] .. instance_begin[i+1]) in canonical
  // pre-order, element k of the instance matching element k of its pattern; parent[j] is
  // an index within the instance (-1 for the root).
  std::vector<uint32_t> instance_begin{0};
  std::vector<MessageId> messages;
  std::vector<int32_t> parent;
  std::vector<double> probability;  // per instance
  std::vector<uint32_t> pattern;    // per instance: index into patterns
  std::vector<PathPattern> patterns;

  // The convolution algorithm's causal graph; empty for every other algorithm. Stored
  // beside (not instead of) instances and patterns: convolution gives none of those.
  CausalGraph graph;

  // Clock offsets between node pairs, for algorithms that use both timestamps (linking).
  std::vector<ClockOffsetRow> clock_offsets;

  // What the algorithm counted on the way (dropped messages, unmatched returns, ...).
  std::vector<std::pair<std::string, int64_t>> counters;

  size_t instance_count() const { return probability.size(); }
  std::span<const MessageId> InstanceMessages(size_t i) const {
    return {messages.data() + instance_begin[i], instance_begin[i + 1] - instance_begin[i]};
  }
  std::span<const int32_t> InstanceParents(size_t i) const {
    return {parent.data() + instance_begin[i], instance_begin[i + 1] - instance_begin[i]};
  }
  int64_t Counter(std::string_view name) const;  // 0 if absent
};

// A cheap hash of a trace's identity (size, times, nodes), so that a paths file is never
// evaluated against a different trace than the one it was inferred from.
uint64_t TraceFingerprint(const Trace& trace);

// Collects instances from an algorithm and aggregates them into patterns.
class PathSetBuilder {
 public:
  PathSetBuilder(const Trace& trace, std::string algorithm);

  // Adds one instance: `messages` with, for each, the index in `messages` of its parent
  // (-1 for the root), in any order. Exactly one root; no cycles; no message twice, in
  // the instance or in the whole set; probability in (0, 1]. The instance is put in
  // canonical pre-order and aggregated into its pattern at once; on error nothing changes.
  Status AddInstance(std::span<const MessageId> messages, std::span<const int32_t> parents,
                     double probability = 1.0);
  void AddCounter(std::string name, int64_t value);

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
  const Trace& trace_;
  PathSet set_;
  // The label ("C:WS1>AUTH") of a (kind, sender, receiver), interned.
  uint32_t LabelId(MessageKind kind, NodeId sender, NodeId receiver);
  void RecordNetwork(uint32_t m, PatternElement& element, uint64_t weight);
  // A time on `node`'s clock moved to the reference clock, where its offset is known.
  TimeNs OnReference(TimeNs t, NodeId node) const;

  std::vector<std::string> labels_;  // per node: its name escaped for keys
  std::vector<bool> used_;           // per trace message: in some instance already
  std::vector<NodeId> alias_;        // per trace node: its node in set_.nodes
  std::vector<TimeNs> node_offset_;  // per trace node, or empty
  NodeId Alias(NodeId n) const { return alias_.empty() ? n : alias_[n.value()]; }
  // (pattern, element, key, value) -> instances with that attribute there.
  absl::flat_hash_map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, uint64_t>
      attribute_counts_;
  void CountAttributes(uint32_t pattern, uint32_t element, MessageId m);
  std::vector<uint32_t> seen_stamp_;  // per trace message: last AddInstance that saw it
  uint32_t stamp_ = 0;
  absl::flat_hash_map<std::tuple<uint8_t, uint32_t, uint32_t>, uint32_t> label_ids_;
  std::vector<std::string> label_text_;                 // per label id
  std::vector<uint64_t> label_hash_;                    // per label id: XXH3 of its text
  std::multimap<uint64_t, uint32_t> patterns_by_hash_;  // root shape hash -> pattern index
  // Scratch space of AddInstance, kept to avoid allocating per instance.
  std::vector<uint32_t> child_begin_, child_list_, fill_, top_down_, label_, order_, stack_;
  std::vector<uint64_t> shape_hash_, hash_input_;
  std::vector<int32_t> position_, ordered_parents_;
};

// How patterns are ranked. The last two are WAP5 §6.6's composite metrics.
enum class PatternOrder {
  kCount,         // "count": most instances first
  kLatency,       // "latency": largest total latency (count x mean end-to-end latency) first
  kExpected,      // "expected": largest expected count first
  kProbability,   // "probability": expected / count, the mean instance probability
  kExpectedSqrt,  // "expected-sqrt": expected / sqrt(count)
};
Result<PatternOrder> ParsePatternOrder(std::string_view name);
std::string_view PatternOrderName(PatternOrder order);
double PatternScore(const PathPattern& pattern, PatternOrder order);  // larger ranks first

// Pattern indices best first; ties broken by key so the ranking is deterministic.
std::vector<uint32_t> RankPatterns(const PathSet& set, PatternOrder order);

// An element's attributes for a table or a graph: for each key, its most frequent value,
// with its share of the pattern's `instances` when not all of them had it:
// "http.method=GET http.url=/home (75%)". Values are cut to `max_value` bytes; "" if none.
std::string DescribeAttributes(const PatternElement& element, uint64_t instances,
                               size_t max_value = 48);

// The key text of one element's label: "C:client>WS1" (names escaped: '%', '(', ')',
// '>', space and control bytes as %XX).
std::string ElementLabel(const PathSet& set, const PatternElement& element);

// The key of a canonical tree given its elements in pre-order: label, then the children's
// keys in parentheses separated by spaces: "C:client>WS1(C:WS1>AUTH(R:AUTH>WS1) R:WS1>client)".
// An error if `parents` is not a pre-order tree (parent[0] = -1, each parent an ancestor
// of or equal to the element before).
Result<std::string> PatternKey(std::span<const std::string> labels,
                               std::span<const int32_t> parents);

// The shape for a one-line table: "client→WS1[→AUTH] →AP2→DB". RETURNs are left out (in
// a call tree they are implied by their CALL); every child but the last is put in [...].
std::string CompactShape(const PathSet& set, const PathPattern& pattern);

// A causal-graph vertex's path from its root: node names joined by '>' ("CLIENT>WS2>AUTH").
// Two graphs are compared vertex by vertex on these keys (eval).
std::string CausalVertexKey(const PathSet& set, uint32_t vertex);

// The causal graph as a table, one line per vertex, indented by depth:
// "    AUTH  <- WS2  1234 msgs  delays 50.1ms (1100), 12.0ms (134)".
std::string FormatCausalGraph(const PathSet& set);

// The paths file (.paths.json; docs/paths.md). WritePaths writes FormatPaths's text;
// ReadPaths reads a file ("-" is stdin) through ParsePaths, which checks everything (shape,
// every index, the key against the elements) and names `source` and the field in its
// one-line errors. Round trips are exact, histograms included.
std::string FormatPaths(const PathSet& set);
Status WritePaths(const PathSet& set, const std::string& path);
Result<PathSet> ParsePaths(std::string_view text, std::string_view source);
Result<PathSet> ReadPaths(const std::string& path);

}  // namespace weft
