// weft report: views of a paths file. --dot writes one Graphviz file per pattern in the
// style of Project 5 Figure 8, or for a causal graph (convolution) one file in the style
// of Figure 9; --timeline the patterns as WAP5's timelines (text, or SVG files);
// --node-delays each node's delay distribution (WAP5 Figure 11); --html one page with all
// of it, waterfalls of single requests and the accuracy against a truth (report/html.h).
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cli/command.h"
#include "cli/truth.h"
#include "core/file.h"
#include "eval/eval.h"
#include "paths/paths_file.h"
#include "paths/ranking.h"
#include "report/dot.h"
#include "report/html.h"
#include "report/timeline.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct ReportOptions {
  std::string paths;
  std::string dot;
  std::string timeline;
  bool node_delays = false;
  size_t top = 10;
  std::string sort = "count";
  uint64_t min_messages = 0;
  std::string html;
  std::string trace;  // --trace: the trace the paths came from
  std::string truth;  // --truth: as weft eval takes it
  size_t waterfalls = 200;
};

Status MakeDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status::IoError("{}: {}", dir, std::strerror(errno));
  return Status::Ok();
}

// Text on stdout for "-", else one SVG per pattern in the directory.
Status WriteTimelines(const PathSet& set, const std::vector<uint32_t>& ranked,
                      const std::string& where) {
  if (set.patterns.empty())
    return Status::InvalidArgument("the paths file has no patterns to draw");
  if (where == "-") {
    std::string all;
    for (size_t rank = 0; rank < ranked.size(); ++rank) {
      all += fmt::format("{}{}. {}", rank ? "\n" : "", rank + 1, TimelineText(set, ranked[rank]));
    }
    return WriteFile("-", all);
  }
  WEFT_RETURN_IF_ERROR(MakeDirectory(where));
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    WEFT_RETURN_IF_ERROR(WriteFile(fmt::format("{}/timeline-{:03}.svg", where, rank + 1),
                                   TimelineSvg(set, ranked[rank])));
  }
  fmt::print(stderr, "wrote {} timelines to {}/timeline-NNN.svg\n", ranked.size(), where);
  return Status::Ok();
}

// The accuracy section of the HTML report: `weft eval`'s table and its headline figures.
Status AddAccuracy(const ReportOptions& o, const PathsFile& paths_file, HtmlReportOptions& html) {
  const PathSet& inferred = paths_file.paths;
  if (o.trace.empty() && std::filesystem::is_directory(o.truth)) {
    return Status::InvalidArgument(
        "{} is a directory: a testbed truth directory needs --trace, the trace the paths came "
        "from",
        o.truth);
  }
  WEFT_ASSIGN_OR_RETURN(PathSet truth, LoadTruth(o.truth, inferred, o.trace));
  html.accuracy_source = o.truth;
  if (!paths_file.graph.empty()) {
    Result<GraphEvalReport> report = EvaluateGraph(truth, inferred, paths_file.graph, 100);
    if (!report.ok())
      return report.status().WithContext(fmt::format("{} against {}", o.paths, o.truth));
    html.accuracy_text = FormatGraphEvalReport(*report);
    return Status::Ok();
  }
  Result<EvalReport> report = Evaluate(truth, inferred, EvalOptions{});
  if (!report.ok())
    return report.status().WithContext(fmt::format("{} against {}", o.paths, o.truth));
  html.accuracy_text = FormatEvalReport(*report);
  const RequestOutcomes& r = report->requests;
  auto percent = [](double x) { return fmt::format("{:.2f}%", 100 * x); };
  html.accuracy_figures = {
      {fmt::format("of {} requests inferred exactly", r.requests), percent(r.Share(r.exact))},
      {"requests mis-stitched", percent(r.Share(r.mis_stitched))},
      {"pattern false negatives", percent(report->patterns.FalseNegativeRate())},
      {"message false positives", percent(report->messages.FalsePositiveRate())},
  };
  return Status::Ok();
}

Status WriteHtml(const ReportOptions& o, const PathsFile& paths_file,
                 const std::vector<uint32_t>& ranked) {
  HtmlReportOptions html{.title = std::filesystem::path(o.paths).filename().string(),
                         .ranked = ranked,
                         .max_waterfalls = o.waterfalls};
  Trace trace;
  if (!o.trace.empty()) {
    WEFT_ASSIGN_OR_RETURN(trace, LoadTrace(o.trace));
    html.trace = &trace;
  }
  if (!paths_file.graph.empty()) {
    html.notice =
        "These paths are a causal graph (the convolution algorithm), not path instances: "
        "weft report --dot draws it; the accuracy below scores its edges.";
  }
  if (!o.truth.empty()) WEFT_RETURN_IF_ERROR(AddAccuracy(o, paths_file, html));
  Result<std::string> page = HtmlReport(paths_file.paths, html);
  if (!page.ok()) return page.status().WithContext(fmt::format("{} with {}", o.paths, o.trace));
  WEFT_RETURN_IF_ERROR(WriteFile(o.html, *page));
  fmt::print(stderr, "wrote {} ({} KiB, {} patterns{})\n", o.html, (page->size() + 1023) / 1024,
             ranked.size(), o.trace.empty() ? ", no waterfalls without --trace" : "");
  return Status::Ok();
}

Status RunReport(const ReportOptions& o) {
  WEFT_ASSIGN_OR_RETURN(PathsFile paths_file, ReadPaths(o.paths));
  const PathSet& set = paths_file.paths;
  WEFT_ASSIGN_OR_RETURN(PatternOrder order, ParsePatternOrder(o.sort));
  std::vector<uint32_t> ranked = RankPatterns(set, order);
  if (ranked.size() > o.top) ranked.resize(o.top);
  if (!o.html.empty()) return WriteHtml(o, paths_file, ranked);
  if (o.node_delays) return WriteFile("-", NodeDelayHistograms(set));
  if (!o.timeline.empty()) return WriteTimelines(set, ranked, o.timeline);
  if (o.dot.empty()) {
    return Status::InvalidArgument(
        "say what to write: --html FILE, --dot DIR, --timeline DIR, --timeline - or --node-delays");
  }
  if (!paths_file.graph.empty()) {
    // A causal graph (convolution): one drawing, Project 5 Figure 9.
    std::string dot = CausalGraphToDot(paths_file.graph, set.nodes, o.min_messages);
    if (o.dot == "-") return WriteFile("-", dot);
    WEFT_RETURN_IF_ERROR(MakeDirectory(o.dot));
    WEFT_RETURN_IF_ERROR(WriteFile(o.dot + "/causal-graph.dot", dot));
    fmt::print(stderr,
               "wrote the causal graph to {}/causal-graph.dot (render: dot -Tsvg -O "
               "{}/causal-graph.dot)\n",
               o.dot, o.dot);
    return Status::Ok();
  }
  if (o.dot == "-") {
    std::string all;
    for (uint32_t p : ranked) all += PatternToDot(set, p);
    return WriteFile("-", all);
  }
  WEFT_RETURN_IF_ERROR(MakeDirectory(o.dot));
  for (size_t rank = 0; rank < ranked.size(); ++rank) {
    std::string file = fmt::format("{}/pattern-{:03}.dot", o.dot, rank + 1);
    WEFT_RETURN_IF_ERROR(WriteFile(file, PatternToDot(set, ranked[rank])));
  }
  fmt::print(stderr, "wrote {} patterns to {}/pattern-NNN.dot (render: dot -Tsvg -O {}/*.dot)\n",
             ranked.size(), o.dot, o.dot);
  return Status::Ok();
}

}  // namespace

void AddReportCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand(
      "report", "Draw path patterns: an HTML page, Graphviz dot, timelines, node delay histograms");
  cmd->footer(
      "Examples:\n  weft report mt.paths.json --dot figs --top 5   # figs/pattern-001.dot ...\n"
      "  weft report mt.paths.json --dot - --top 1 | dot -Tsvg > top.svg\n"
      "  weft report wa.paths.json --timeline - --top 3 --sort expected   # WAP5 §6.1 as text\n"
      "  weft report wa.paths.json --timeline figs --top 3                # figs/timeline-001.svg "
      "...\n"
      "  weft report wa.paths.json --node-delays                          # WAP5 Figure 11\n"
      "  weft report run.paths.json --html report.html --trace run.weft --top 30\n"
      "  weft report run.paths.json --html report.html --trace run.weft --truth truth/\n"
      "--html writes one self-contained page (no network needed): the patterns, their call\n"
      "trees and histograms, waterfalls of requests (with --trace), node delays, and the\n"
      "accuracy as weft eval prints it (with --truth, which takes what eval's --truth takes).\n");
  static ReportOptions o;
  cmd->add_option("paths", o.paths, "Paths file (.paths.json)")->required();
  cmd->add_option("--dot", o.dot, "Directory for one .dot file per pattern, or - for stdout");
  cmd->add_option("--timeline", o.timeline,
                  "Directory for one timeline .svg per pattern, or - for text (WAP5 §6.1)");
  cmd->add_option("--html", o.html, "Write one self-contained HTML page of it all to this file");
  cmd->add_option("--trace", o.trace,
                  "With --html: the trace the paths came from, for waterfalls of requests");
  cmd->add_option("--truth", o.truth,
                  "With --html: a truth to score the paths against, as weft eval --truth takes "
                  "it (a testbed truth directory needs --trace)");
  cmd->add_option("--waterfalls", o.waterfalls,
                  "With --html: at most this many requests embedded for waterfalls")
      ->capture_default_str();
  cmd->add_flag("--node-delays", o.node_delays,
                "Each node's delay distribution over all patterns (WAP5 Figure 11)");
  cmd->add_option("--top", o.top, "How many patterns, best first")->capture_default_str();
  cmd->add_option("--sort", o.sort,
                  "Rank by count, latency (count x mean), expected, probability or expected-sqrt "
                  "(WAP5 §6.6)")
      ->capture_default_str();
  cmd->add_option("--min-messages", o.min_messages,
                  "Causal graphs (convolution): leave out edges with fewer messages")
      ->capture_default_str();
  cmd->callback([&result] { result = RunReport(o); });
}

}  // namespace weft::cli
