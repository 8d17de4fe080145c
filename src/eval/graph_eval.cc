// Causal graphs against the truth's graph (Project 5 §7.5.7; eval.h EvaluateGraph).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "eval/eval.h"

namespace weft {
namespace {

struct TruthEdge {
  uint64_t messages = 0;
  LatencyHistogram delay;
};

// The truth's graph: each pattern element's node path, merged over patterns.
std::map<std::string, TruthEdge> TruthEdges(const PathSet& truth) {
  std::map<std::string, TruthEdge> edges;
  for (const PathPattern& p : truth.patterns) {
    std::vector<std::string> keys(p.elements.size());
    for (size_t k = 0; k < p.elements.size(); ++k) {
      const PatternElement& e = p.elements[k];
      std::string_view receiver = truth.nodes.Get(e.receiver);
      keys[k] = e.parent < 0 ? fmt::format("{}>{}", truth.nodes.Get(e.sender), receiver)
                             : fmt::format("{}>{}", keys[size_t(e.parent)], receiver);
      TruthEdge& edge = edges[keys[k]];
      edge.messages += p.count;
      if (e.parent >= 0) edge.delay.Merge(e.delay);
    }
  }
  return edges;
}

}  // namespace

Result<GraphEvalReport> EvaluateGraph(const PathSet& truth, const PathSet& inferred,
                                      const CausalGraph& graph, uint64_t min_messages) {
  if (truth.trace_messages != inferred.trace_messages ||
      truth.trace_fingerprint != inferred.trace_fingerprint) {
    return Status::InvalidArgument(
        "the truth ({} messages) and the causal graph ({} messages) are of different traces",
        truth.trace_messages, inferred.trace_messages);
  }
  std::map<std::string, TruthEdge> truth_edges = TruthEdges(truth);
  std::map<std::string, const CausalVertex*> inferred_edges;
  for (uint32_t v = 0; v < graph.vertices.size(); ++v) {
    const CausalVertex& vertex = graph.vertices[v];
    if (vertex.parent < 0) continue;
    const CausalVertex*& slot = inferred_edges[CausalVertexKey(graph, inferred.nodes, v)];
    if (!slot || slot->messages < vertex.messages) slot = &vertex;  // keys are unique after merging
  }
  GraphEvalReport r;
  r.min_messages = min_messages;
  for (const auto& [key, edge] : truth_edges) {
    if (edge.messages < min_messages) continue;
    ++r.truth_edges;
    auto it = inferred_edges.find(key);
    if (it == inferred_edges.end()) {
      r.false_negatives.push_back(key);
      continue;
    }
    GraphEdgeMatch m{key, edge.messages, it->second->messages, edge.delay.Quantile(0.5),
                     it->second->delays.empty() ? 0 : it->second->delays.front().delay};
    // A root edge has no delay on either side.
    if (!edge.delay.empty() && !it->second->delays.empty()) {
      r.max_delay_error = std::max(r.max_delay_error, std::abs(m.inferred_delay - m.truth_delay));
    }
    r.matched.push_back(std::move(m));
  }
  for (const auto& [key, vertex] : inferred_edges) {
    if (vertex->messages < min_messages) continue;
    ++r.inferred_edges;
    if (!truth_edges.contains(key)) r.false_positives.push_back(key);
  }
  return r;
}

std::string FormatGraphEvalReport(const GraphEvalReport& r) {
  std::string out = fmt::format(
      "causal graph vs truth (edges with >= {} messages): {} truth edges, {} inferred; "
      "false negatives {} ({:.1f}%), false positives {} ({:.1f}%); max delay error {}\n",
      r.min_messages, r.truth_edges, r.inferred_edges, r.false_negatives.size(),
      100 * r.FalseNegativeRate(), r.false_positives.size(), 100 * r.FalsePositiveRate(),
      FormatDuration(r.max_delay_error));
  for (const GraphEdgeMatch& m : r.matched) {
    out += fmt::format("  found   {}  truth {} msgs, delay {}; inferred {} msgs, delay {}\n", m.key,
                       m.truth_messages, FormatDuration(m.truth_delay), m.inferred_messages,
                       FormatDuration(m.inferred_delay));
  }
  for (const std::string& k : r.false_negatives) out += fmt::format("  missed  {}\n", k);
  for (const std::string& k : r.false_positives) out += fmt::format("  false   {}\n", k);
  return out;
}

}  // namespace weft
