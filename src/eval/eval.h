// Accuracy of inferred paths against the ground truth (Project 5 §7.5.1; docs/eval.md).
//
// Takes two PathSets over the same trace — the truth (usually InferFromTruth) and what an
// algorithm inferred — and gives false positives and false negatives counted three ways
// (path patterns, path instances, messages), the top-N false-negative curve of Project 5
// Figure 17 with tolerances for near ties, and the latency error of the patterns both
// share. Messages that are in no truth instance have no ground truth and are not counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "paths/causal_graph.h"
#include "paths/path_set.h"
#include "paths/ranking.h"

namespace weft {

struct EvalOptions {
  int max_n = 30;  // the top-N curve runs N = 1 .. max_n (fewer when there are fewer patterns)
  std::vector<double> tolerances = {0.0, 0.02, 0.06};
  // How inferred patterns are ranked for the top-N curve; unset: by expected count when
  // some inferred instance has probability below 1 (a probabilistic algorithm), else by
  // count. Truth patterns are always ranked by count.
  std::optional<PatternOrder> inferred_order;
  int max_listed = 10;  // missed top-N truth patterns listed by shape in the report
};

// One way of counting. For patterns and instances `truth` and `inferred` are the sizes
// of the two sets; for messages, truth messages and the inferred messages that have
// ground truth. correct <= both; false_positives = inferred - correct and
// false_negatives = truth - correct.
struct ErrorCounts {
  uint64_t truth = 0;
  uint64_t inferred = 0;
  uint64_t correct = 0;
  uint64_t false_positives = 0;
  uint64_t false_negatives = 0;
  double FalsePositiveRate() const {
    return inferred ? double(false_positives) / double(inferred) : 0.0;
  }
  double FalseNegativeRate() const { return truth ? double(false_negatives) / double(truth) : 0.0; }
};

// One point of the top-N curve: false_negatives[t] under tolerances[t].
struct TopNPoint {
  int n = 0;
  std::vector<uint64_t> false_negatives;
};

// A truth pattern in the top N that the inferred top N missed (for the report).
struct MissedPattern {
  int truth_rank = 0;  // 1-based
  std::string key;
  std::string shape;  // CompactShape
  uint64_t truth_count = 0;
  int inferred_rank = 0;      // 1-based; 0 if the algorithm never inferred it
  double inferred_score = 0;  // its inferred count (or expected count)
};

// Latency error of one pattern both sets have (relative errors: |inferred - truth| / |truth|).
struct PatternLatencyError {
  std::string key;
  uint64_t truth_count = 0;
  std::optional<double> latency_error;  // of the mean end-to-end latency; unset if undefined
  double max_delay_error = 0;           // over its elements with a defined error
};

// Per request (truth instance): is its whole tree inferred exactly, with the same
// messages and parents, or broken apart, or joined with another request's messages? The
// inferred instance of a message is the most probable one holding it.
struct RequestOutcomes {
  uint64_t requests = 0;       // truth instances
  uint64_t exact = 0;          // one inferred instance, the same messages and parents
  uint64_t wrong_parents = 0;  // one inferred instance, the same messages, a parent differs
  uint64_t orphaned = 0;       // spread over several inferred instances, or partly in none,
                               // but never with another request's messages
  uint64_t mis_stitched = 0;   // some of its messages share an instance with another request's
  double Share(uint64_t n) const { return requests ? double(n) / double(requests) : 0.0; }
};

// Per message that is not a RETURN (a RETURN's parent is its CALL, which any algorithm
// that pairs them gets right): is its inferred parent the true one? The inferred parent
// is the one in the most probable instance holding the message; a root is right when it
// is inferred as a root, and a message in no inferred instance is wrong. On a trace of
// calls and returns this is the share of calls whose inferred parent call is the true one.
struct ParentLinks {
  uint64_t messages = 0;  // truth messages that are not RETURNs
  uint64_t correct = 0;
  double Share() const { return messages ? double(correct) / double(messages) : 0.0; }
};

struct EvalReport {
  std::string truth_algorithm;
  std::string inferred_algorithm;
  uint64_t trace_messages = 0;
  uint64_t messages_without_truth = 0;     // in no truth instance: not counted anywhere
  uint64_t inferred_without_truth = 0;     // of those, how many the algorithm put in instances
  uint64_t truth_messages_unassigned = 0;  // truth messages in no inferred instance (in FN)

  ErrorCounts patterns;
  ErrorCounts instances;
  ErrorCounts messages;
  RequestOutcomes requests;
  ParentLinks parent_links;

  std::vector<double> tolerances;
  PatternOrder inferred_order = PatternOrder::kCount;
  std::vector<TopNPoint> top_n;
  std::vector<MissedPattern> missed;  // at N = the last point, tolerance 0, best truth rank first

  // Latency error over the patterns both sets have, weighted by truth count. Element
  // delay errors count each element of each pattern with its pattern's truth count.
  // A relative error is undefined when the truth value is 0 and the inferred one is not
  // (both 0 is an error of 0); undefined ones are counted, not averaged.
  uint64_t latency_patterns = 0;
  double mean_latency_error = 0;
  double max_latency_error = 0;
  double mean_delay_error = 0;
  double max_delay_error = 0;
  uint64_t undefined_errors = 0;
  std::vector<PatternLatencyError> latency;  // per shared pattern, by truth count
};

// Accuracy of a causal graph (the convolution algorithm, Project 5 §7.5.7) against the
// truth's graph, derived from the truth path instances: every message of a truth
// instance is an edge whose key is the node path from the instance's root sender to its
// receiver ("EXT1>GW1>RELAY1"); its delay is the sender's delay after the parent's
// arrival (PatternElement::delay). Inferred edges are keyed the same way
// (CausalVertexKey). Edges under `min_messages` are ignored on each side, as §7.5.7
// ignores paths reported with fewer than 100 messages: a false negative is a truth edge
// with >= min_messages that the graph lacks; a false positive an inferred edge with >=
// min_messages that the truth never has.
struct GraphEdgeMatch {
  std::string key;
  uint64_t truth_messages = 0;
  uint64_t inferred_messages = 0;
  TimeNs truth_delay = 0;     // median
  TimeNs inferred_delay = 0;  // the most frequent delay of the edge
};

struct GraphEvalReport {
  uint64_t min_messages = 0;
  uint64_t truth_edges = 0;     // with >= min_messages
  uint64_t inferred_edges = 0;  // with >= min_messages
  std::vector<std::string> false_negatives;
  std::vector<std::string> false_positives;
  std::vector<GraphEdgeMatch> matched;  // frequent truth edges the graph has, by key
  TimeNs max_delay_error = 0;           // over `matched`
  double FalsePositiveRate() const {
    return inferred_edges ? double(false_positives.size()) / double(inferred_edges) : 0.0;
  }
  double FalseNegativeRate() const {
    return truth_edges ? double(false_negatives.size()) / double(truth_edges) : 0.0;
  }
};

// `graph` was inferred over the trace and nodes of `inferred` (a convolution result, or
// a paths file holding one). An error if the two sets do not refer to the same trace.
Result<GraphEvalReport> EvaluateGraph(const PathSet& truth, const PathSet& inferred,
                                      const CausalGraph& graph, uint64_t min_messages = 100);
std::string FormatGraphEvalReport(const GraphEvalReport& report);

// An error if the two sets do not refer to the same trace (size and fingerprint).
Result<EvalReport> Evaluate(const PathSet& truth, const PathSet& inferred,
                            const EvalOptions& options = {});

std::string FormatEvalReport(const EvalReport& report);      // a readable table
std::string FormatEvalReportJson(const EvalReport& report);  // one JSON object, docs/eval.md

}  // namespace weft
