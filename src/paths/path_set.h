// Path instances and path patterns: what every inference algorithm produces and what
// report, query and eval read (docs/architecture.md, "The data model").
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

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
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

inline constexpr double kProbabilityUnits = 1024;

// A set of path instances over one trace, and their patterns. What an algorithm counted
// on the way and convolution's causal graph are not part of it: see paths/inference.h.
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

  // Clock offsets between node pairs, for algorithms that use both timestamps (linking).
  std::vector<ClockOffset> clock_offsets;

  size_t instance_count() const { return probability.size(); }
  std::span<const MessageId> InstanceMessages(size_t i) const {
    return {messages.data() + instance_begin[i], instance_begin[i + 1] - instance_begin[i]};
  }
  std::span<const int32_t> InstanceParents(size_t i) const {
    return {parent.data() + instance_begin[i], instance_begin[i + 1] - instance_begin[i]};
  }
};

// A cheap hash of a trace's identity (size, times, nodes), so that a paths file is never
// evaluated against a different trace than the one it was inferred from.
uint64_t TraceFingerprint(const Trace& trace);

// The key text of one element's label: "C:client>WS1" (names escaped: '%', '(', ')',
// '>', space and control bytes as %XX).
std::string ElementLabel(const PathSet& set, const PatternElement& element);

// The key of a canonical tree given its elements in pre-order: label, then the children's
// keys in parentheses separated by spaces: "C:client>WS1(C:WS1>AUTH(R:AUTH>WS1) R:WS1>client)".
// An error if `parents` is not a pre-order tree (parent[0] = -1, each parent an ancestor
// of or equal to the element before).
Result<std::string> PatternKey(std::span<const std::string> labels,
                               std::span<const int32_t> parents);

// A node name escaped for a key ('%', '(', ')', '>', space and control bytes as %XX), and
// the label of a (kind, escaped sender, escaped receiver): "C:client>WS1" (K = C, R or M).
std::string EscapeKeyName(std::string_view name);
std::string KeyLabel(MessageKind kind, std::string_view escaped_sender,
                     std::string_view escaped_receiver);

}  // namespace weft
