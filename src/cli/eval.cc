// weft eval: inferred paths against the ground truth (Project 5 §7.5.1; docs/eval.md).
#include "eval/eval.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/command.h"
#include "cli/truth.h"
#include "core/file.h"
#include "eval/align.h"
#include "infer/truth/truth.h"
#include "paths/paths_file.h"
#include "testbed/truth.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct EvalFlags {
  std::string truth, inferred, order = "auto", run;
  int top = 30;
  bool json = false;
  uint64_t min_messages = 100;
};

// A paths file is JSON: its first non-blank byte is '{'. Anything else is a trace.
Result<bool> IsPathsFile(const std::string& path) {
  if (path.ends_with(".json")) return true;
  WEFT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  std::string_view text = file.view();
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

}  // namespace

// The truth from a paths file, or from a trace's ground truth, its clients named and its
// latencies measured as the inferred paths' are.
// With `run` (the trace the paths were inferred from, --trace), the truth trace or testbed
// truth directory at `path` is first copied onto the run (eval/align.h).
Result<PathSet> LoadTruth(const std::string& path, const PathSet& inferred,
                          const std::string& run) {
  Trace trace;
  // A trace that carries its own truth (generated, imported) named as both is its own
  // truth: nothing to copy onto it.
  std::error_code same_error;
  if (!run.empty() && !std::filesystem::equivalent(path, run, same_error)) {
    Result<Trace> truth =
        std::filesystem::is_directory(path) ? testbed::BuildTruthTrace(path) : LoadTrace(path);
    if (!truth.ok()) return truth.status().WithContext(path);
    WEFT_ASSIGN_OR_RETURN(Trace run_trace, LoadTrace(run));
    AlignSummary aligned;
    Result<Trace> labelled = CopyTruth(*truth, run_trace, &aligned);
    if (!labelled.ok()) return labelled.status().WithContext(fmt::format("{} onto {}", path, run));
    fmt::print(stderr, "truth from {} onto {}: {}\n", path, run, aligned.OneLine());
    trace = std::move(*labelled);
  } else {
    WEFT_ASSIGN_OR_RETURN(bool is_paths, IsPathsFile(path));
    if (is_paths) {
      WEFT_ASSIGN_OR_RETURN(PathsFile file, ReadPaths(path));
      return std::move(file.paths);
    }
    WEFT_ASSIGN_OR_RETURN(trace, LoadTrace(path));
  }
  Result<TruthInference> truth =
      InferFromTruth(trace, TruthOptions{.aggregate_clients = inferred.clients_aggregated,
                                         .clock_offsets = !inferred.clock_offsets.empty()});
  if (!truth.ok()) return truth.status().WithContext(path);
  return std::move(truth->paths);
}

namespace {

Status RunEval(const EvalFlags& f) {
  EvalOptions options;
  if (f.top < 1) return Status::InvalidArgument("--top must be at least 1, not {}", f.top);
  options.max_n = f.top;
  if (f.order != "auto") {
    WEFT_ASSIGN_OR_RETURN(PatternOrder order, ParsePatternOrder(f.order));
    options.inferred_order = order;
  }
  WEFT_ASSIGN_OR_RETURN(PathsFile file, ReadPaths(f.inferred));
  const PathSet& inferred = file.paths;
  WEFT_ASSIGN_OR_RETURN(PathSet truth, LoadTruth(f.truth, inferred, f.run));
  if (!file.graph.empty()) {
    // A causal graph (convolution): edges and delays against the truth's graph (§7.5.7).
    Result<GraphEvalReport> report = EvaluateGraph(truth, inferred, file.graph, f.min_messages);
    if (!report.ok())
      return report.status().WithContext(fmt::format("{} against {}", f.inferred, f.truth));
    fmt::print("{}", FormatGraphEvalReport(*report));
    return Status::Ok();
  }
  Result<EvalReport> report = Evaluate(truth, inferred, options);
  if (!report.ok())
    return report.status().WithContext(fmt::format("{} against {}", f.inferred, f.truth));
  fmt::print("{}", f.json ? FormatEvalReportJson(*report) : FormatEvalReport(*report));
  return Status::Ok();
}

}  // namespace

void AddEvalCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("eval", "Compare inferred paths with the ground truth");
  cmd->footer(
      "False positives and negatives counted by path patterns, by path instances and by\n"
      "messages; the top-N false-negative curve (Project 5 Figure 17) at 0, 2% and 6%\n"
      "tolerance; the latency error of correctly inferred patterns. --truth is a trace with\n"
      "ground truth (path= and parent=) or a paths file; docs/eval.md defines every number.\n"
      "With --trace (the trace the paths came from, e.g. a reconciled capture), --truth is a\n"
      "separate record of the same run, a trace or the testbed's truth directory, matched\n"
      "to the run message by message (endpoints and byte offsets).\n\n"
      "Examples:\n"
      "  weft gen multitier -o mt.weft\n"
      "  weft infer mt.weft --algo truth -o truth.paths.json\n"
      "  weft eval --truth mt.weft truth.paths.json\n"
      "  weft eval --truth truth.paths.json other.paths.json --top 10 --json\n"
      "  weft eval --truth testbed-truth/ --trace run.weft thread.paths.json\n");
  static EvalFlags flags;
  cmd->add_option("paths", flags.inferred, "Inferred paths file (.paths.json; - for stdin)")
      ->required();
  cmd->add_option(
         "--truth", flags.truth,
         "Trace with ground truth, a paths file, or (with --trace) a testbed truth directory")
      ->required();
  cmd->add_option(
      "--trace", flags.run,
      "The trace the paths were inferred from, when --truth is a separate record of the run");
  cmd->add_option("--top", flags.top, "Largest N of the top-N curve")->capture_default_str();
  cmd->add_option(
         "--order", flags.order,
         "Rank inferred patterns by count or expected (auto: expected when some instance has "
         "probability below 1)")
      ->capture_default_str();
  cmd->add_flag("--json", flags.json, "Print the report as JSON");
  cmd->add_option(
         "--min-messages", flags.min_messages,
         "Causal graphs (convolution): ignore edges with fewer messages on either side (§7.5.7)")
      ->capture_default_str();
  cmd->callback([&result] { result = RunEval(flags); });
}

}  // namespace weft::cli
