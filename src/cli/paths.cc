// weft paths: the path patterns of a paths file, ranked, with their end-to-end latency
// (Project 5 §5.4: patterns sorted by frequency, with latency distributions).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "paths/paths_file.h"
#include "paths/ranking.h"
#include "report/describe.h"
#include "report/requests.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct PathsFlags {
  std::string input, sort = "count";
  size_t top = 20, requests = 0;
  std::string trace;
  bool json = false, tree = false;
};

// --requests N: the N slowest requests, each as its own tree (report/requests.h).
Status PrintSlowestRequests(const PathSet& set, const PathsFlags& f) {
  if (f.trace.empty())
    return Status::InvalidArgument("--requests needs --trace, the trace the paths came from");
  WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.trace));
  Result<std::vector<RequestTiming>> slowest = SlowestRequests(set, trace, f.requests);
  if (!slowest.ok()) return slowest.status().WithContext(f.trace);
  fmt::print("the {} slowest of {} requests ({} paths over {}):\n", slowest->size(),
             set.instance_count(), set.algorithm, f.trace);
  for (const RequestTiming& r : *slowest) fmt::print("\n{}", FormatRequest(set, trace, r));
  return Status::Ok();
}

std::string_view ShortKind(MessageKind kind) {
  switch (kind) {
    case MessageKind::kCall:
      return "CALL";
    case MessageKind::kReturn:
      return "RET";
    case MessageKind::kMessage:
      return "MSG";
  }
  return "?";
}

// One line per element, indented by depth: kind, sender→receiver, delay after the parent.
std::string FormatTree(const PathSet& set, const PathPattern& p, std::string_view indent) {
  // Attributes (http.url=..., sql=...) after the delays, from the protocol processors.
  std::string out;
  std::vector<int> depth(p.elements.size(), 0);
  for (size_t k = 0; k < p.elements.size(); ++k) {
    const PatternElement& e = p.elements[k];
    if (e.parent >= 0) depth[k] = depth[size_t(e.parent)] + 1;
    std::string what = fmt::format("{:{}}{:<4} {}→{}", "", 2 * depth[k], ShortKind(e.kind),
                                   set.nodes.Get(e.sender), set.nodes.Get(e.receiver));
    std::string delay = e.delay.empty() ? std::string()
                                        : fmt::format("after parent: mean {}  p50 {}  p99 {}",
                                                      FormatDuration(TimeNs(e.delay.mean())),
                                                      FormatDuration(e.delay.Quantile(0.5)),
                                                      FormatDuration(e.delay.Quantile(0.99)));
    std::string attributes = DescribeAttributes(e, p.count);
    out += fmt::format("{}{:<40} {}{}{}\n", indent, what, delay, attributes.empty() ? "" : "  ",
                       attributes);
  }
  return out;
}

Status RunPaths(const PathsFlags& f) {
  WEFT_ASSIGN_OR_RETURN(PatternOrder order, ParsePatternOrder(f.sort));
  WEFT_ASSIGN_OR_RETURN(PathsFile file, ReadPaths(f.input));
  const PathSet& set = file.paths;
  const CausalGraph& graph = file.graph;
  if (f.requests > 0) return PrintSlowestRequests(set, f);
  std::vector<uint32_t> rank = RankPatterns(set, order);
  const size_t shown = f.top == 0 ? rank.size() : std::min(f.top, rank.size());
  const double instances = double(set.instance_count());
  if (f.json && !graph.empty()) {
    // A causal graph (convolution): one object per vertex, parents first.
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (uint32_t v = 0; v < graph.vertices.size(); ++v) {
      const CausalVertex& vertex = graph.vertices[v];
      nlohmann::ordered_json delays = nlohmann::ordered_json::array();
      for (const CausalDelay& d : vertex.delays)
        delays.push_back({{"delay_ns", d.delay}, {"count", d.count}});
      out.push_back({{"vertex", v},
                     {"key", CausalVertexKey(graph, set.nodes, v)},
                     {"node", set.nodes.Get(vertex.node)},
                     {"parent", vertex.parent},
                     {"messages", vertex.messages},
                     {"delays", std::move(delays)}});
    }
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return Status::Ok();
  }
  if (f.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t r = 0; r < shown; ++r) {
      const PathPattern& p = set.patterns[rank[r]];
      out.push_back({{"rank", r + 1},
                     {"key", p.key},
                     {"shape", CompactShape(set, p)},
                     {"count", p.count},
                     {"expected_count", p.expected_count},
                     {"share", instances > 0 ? double(p.count) / instances : 0.0},
                     {"latency_mean_ns", p.latency.mean()},
                     {"latency_p50_ns", p.latency.Quantile(0.5)},
                     {"latency_p99_ns", p.latency.Quantile(0.99)}});
    }
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return Status::Ok();
  }
  if (!graph.empty() && !f.json) {
    // The convolution algorithm gives a causal graph, not instances (docs/convolution.md).
    fmt::print("{}: {} paths over a trace of {} messages\n{}", f.input, set.algorithm,
               set.trace_messages, FormatCausalGraph(graph, set.nodes));
    for (const auto& [name, value] : file.counters) fmt::print("{}: {}\n", name, value);
    return Status::Ok();
  }
  fmt::print("{}: {} instances of {} patterns ({} paths over a trace of {} messages), by {}\n",
             f.input, set.instance_count(), set.patterns.size(), set.algorithm, set.trace_messages,
             f.sort);
  fmt::print("{:>4} {:>9} {:>10} {:>7} {:>9} {:>9} {:>9}  {}\n", "rank", "count", "expected",
             "share", "mean", "p50", "p99", "shape");
  for (size_t r = 0; r < shown; ++r) {
    const PathPattern& p = set.patterns[rank[r]];
    fmt::print("{:>4} {:>9} {:>10.1f} {:>6.2f}% {:>9} {:>9} {:>9}  {}\n", r + 1, p.count,
               p.expected_count, instances > 0 ? 100.0 * double(p.count) / instances : 0.0,
               FormatDuration(TimeNs(p.latency.mean())), FormatDuration(p.latency.Quantile(0.5)),
               FormatDuration(p.latency.Quantile(0.99)), CompactShape(set, p));
    if (f.tree) fmt::print("{}", FormatTree(set, p, "       "));
  }
  if (shown < rank.size())
    fmt::print("({} more patterns; --top 0 shows all)\n", rank.size() - shown);
  for (const auto& [name, value] : file.counters) fmt::print("{}: {}\n", name, value);
  if (!set.clock_offsets.empty()) {
    // WAP5 §5.2: per node pair, how far b's clock is ahead of a's (negative: behind).
    fmt::print("clock offsets (b's clock minus a's, from the smallest delays both ways):\n");
    for (const ClockOffset& o : set.clock_offsets) {
      fmt::print("  {:<20} {:<20} {:>12}  ({} messages)\n", o.a, o.b,
                 (o.offset >= 0 ? "+" : "") + FormatDuration(o.offset), o.messages);
    }
  }
  return Status::Ok();
}

}  // namespace

void AddPathsCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("paths", "List the path patterns of a paths file, ranked");
  cmd->footer(
      "Columns: instances of the pattern, expected count (sum of probabilities), share of all\n"
      "instances, end-to-end latency (mean, median, 99th percentile) and the shape: the nodes\n"
      "visited, a side call in [...]. --tree adds each message with its delay after its parent.\n\n"
      "Examples:\n"
      "  weft paths mt.paths.json --top 10\n"
      "  weft paths mt.paths.json --sort latency --tree\n"
      "  weft paths mt.paths.json --json | jq '.[0]'\n"
      "  weft paths thread.paths.json --requests 3 --trace run.weft   # the 3 slowest requests\n");
  static PathsFlags flags;
  cmd->add_option("paths", flags.input, "Paths file to read (.paths.json; - for stdin)")
      ->required();
  cmd->add_option("--top", flags.top, "Show the first N patterns (0: all)")->capture_default_str();
  cmd->add_option("--sort", flags.sort,
                  "Rank by count, latency (count x mean latency), expected, probability (expected "
                  "/ count) or expected-sqrt (expected / sqrt(count), WAP5 §6.6)")
      ->capture_default_str();
  cmd->add_flag("--json", flags.json, "Print the ranked patterns as JSON");
  cmd->add_flag("--tree", flags.tree, "Print each pattern's tree with per-message delays");
  cmd->add_option("--requests", flags.requests,
                  "Instead of patterns, show the N slowest requests (path instances) one by one; "
                  "needs --trace");
  cmd->add_option("--trace", flags.trace,
                  "The trace the paths were inferred from (for --requests)");
  cmd->callback([&result] { result = RunPaths(flags); });
}

}  // namespace weft::cli
