// weft infer: a trace in, path instances and patterns out (.paths.json, docs/paths.md).
// Each algorithm is one entry in kAlgorithms; --algo lists exactly those.
#include <fmt/format.h>

#include <optional>

#include "cli/command.h"
#include "infer/baseline/baseline.h"
#include "infer/choose.h"
#include "infer/convolution/convolution.h"
#include "infer/fragment/fragment.h"
#include "infer/linking/linking.h"
#include "infer/nesting/nesting.h"
#include "infer/thread/thread.h"
#include "infer/truth/truth.h"
#include "paths/paths_file.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

struct InferFlags {
  std::string input, output, algo;
  std::string skew_window = "0";
  NestingOptions nesting;
  bool no_call_ids = false;
  bool paper_scoring = false;
  bool no_lookahead = false;
  bool fixed_generic_penalty = false;
  // Given only when set, so that --paper-scoring can default them to Project 5's values.
  std::optional<double> overlap_penalty, same_child_penalty, generic_child_penalty;
  ConvolutionOptions convolution;
  std::string quantum = "10ms", tolerance = "0", max_delay = "0", max_memory = "4GiB";
  bool no_short_path_suppression = false;
  LinkingOptions linking;
  std::string window = "2s";
  bool no_client_aggregation = false;
  bool linked_trees = false;
  bool no_rpc = false;
};

Result<PathsFile> RunTruth(const Trace& trace, const InferFlags&) {
  WEFT_ASSIGN_OR_RETURN(TruthInference truth, InferFromTruth(trace));
  return ToPathsFile(std::move(truth));
}

Result<NestingOptions> NestingFlags(const InferFlags& f) {
  NestingOptions options = f.nesting;
  if (f.paper_scoring) {
    const NestingOptions paper = PaperNestingOptions();
    options.overlap_penalty = paper.overlap_penalty;
    options.same_child_penalty = paper.same_child_penalty;
    options.generic_child_penalty = paper.generic_child_penalty;
    options.scale_generic_penalty = paper.scale_generic_penalty;
    options.score_returns = paper.score_returns;
    options.sibling_passes = paper.sibling_passes;
    options.lookahead = paper.lookahead;
  }
  if (f.overlap_penalty) options.overlap_penalty = *f.overlap_penalty;
  if (f.same_child_penalty) options.same_child_penalty = *f.same_child_penalty;
  if (f.generic_child_penalty) options.generic_child_penalty = *f.generic_child_penalty;
  if (f.no_lookahead) options.lookahead = false;
  if (f.fixed_generic_penalty) options.scale_generic_penalty = false;
  WEFT_ASSIGN_OR_RETURN(options.skew_window, ParseDuration(f.skew_window));
  options.use_call_ids = !f.no_call_ids;
  return options;
}

PathsFile ReportNesting(NestingInference nesting) {
  const NestingCounters& c = nesting.counters;
  fmt::print(stderr,
             "nesting: {} call pairs; {} unmatched calls, {} unmatched returns, {} other messages "
             "ignored; mean per-node parallelism {:.3f}\n",
             c.call_pairs, c.unmatched_calls, c.unmatched_returns, c.ignored_messages,
             c.children_with_candidates
                 ? double(c.candidate_parents) / double(c.children_with_candidates)
                 : 0.0);
  if (c.call_pairs == 0) {
    fmt::print(
        stderr,
        "nesting: no call pairs: the nesting algorithm needs CALL_SENT and RET_SENT messages "
        "whose call ids match\n");
  }
  return ToPathsFile(std::move(nesting));
}

Result<PathsFile> RunNesting(const Trace& trace, const InferFlags& f) {
  WEFT_ASSIGN_OR_RETURN(NestingOptions options, NestingFlags(f));
  WEFT_ASSIGN_OR_RETURN(NestingInference nesting, InferNesting(trace, options));
  return ReportNesting(std::move(nesting));
}

Result<uint64_t> ParseBytes(const std::string& text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    return Status::InvalidArgument("'{}' is not a size (e.g. 512MiB, 4GiB)", text);
  }
  std::string unit = text.substr(end);
  double scale = unit.empty() || unit == "B" ? 1
                 : unit == "KiB"             ? 1024.0
                 : unit == "MiB"             ? 1048576.0
                 : unit == "GiB"             ? 1073741824.0
                                             : -1;
  if (scale < 0 || !(value > 0))
    return Status::InvalidArgument("'{}' is not a size (e.g. 512MiB, 4GiB)", text);
  return uint64_t(value * scale);
}

Result<PathsFile> RunConvolution(const Trace& trace, const InferFlags& f) {
  ConvolutionOptions options = f.convolution;
  WEFT_ASSIGN_OR_RETURN(options.quantum, ParseDuration(f.quantum));
  WEFT_ASSIGN_OR_RETURN(options.tolerance, ParseDuration(f.tolerance));
  WEFT_ASSIGN_OR_RETURN(options.max_delay, ParseDuration(f.max_delay));
  WEFT_ASSIGN_OR_RETURN(options.max_signal_bytes, ParseBytes(f.max_memory));
  options.suppress_short_paths = !f.no_short_path_suppression;
  WEFT_ASSIGN_OR_RETURN(ConvolutionInference convolution, InferConvolution(trace, options));
  const ConvolutionCounters& c = convolution.counters;
  fmt::print(
      stderr,
      "convolution: {} roots, {} edges from {} correlations of size {}; {} messages explained\n",
      c.roots, c.edges, c.correlations, c.fft_size, c.messages_explained);
  return PathsFile{std::move(convolution.paths), c.List(), std::move(convolution.graph)};
}

Result<LinkingOptions> LinkingFlags(const InferFlags& f) {
  LinkingOptions options = f.linking;
  WEFT_ASSIGN_OR_RETURN(options.window, ParseDuration(f.window));
  options.aggregate_clients = !f.no_client_aggregation;
  options.call_trees = !f.linked_trees;
  options.use_calls = !f.no_rpc;
  return options;
}

PathsFile ReportLinking(LinkingInference linking) {
  const LinkingCounters& c = linking.counters;
  fmt::print(
      stderr,
      "linking: {} links between {} messages over {} node pairs; {} roots, {} try-both decisions, "
      "{} trees hit the budget; {} clients aggregated{}\n",
      c.links, c.messages, c.pairs, c.roots, c.try_both, c.budget_exhausted, c.clients,
      c.rpc ? "; calls paired with their returns (RPC mode)" : "");
  return ToPathsFile(std::move(linking));
}

Result<PathsFile> RunLinking(const Trace& trace, const InferFlags& f) {
  WEFT_ASSIGN_OR_RETURN(LinkingOptions options, LinkingFlags(f));
  WEFT_ASSIGN_OR_RETURN(LinkingInference linking, InferLinking(trace, options));
  return ReportLinking(std::move(linking));
}

PathsFile ReportThread(ThreadInference thread) {
  const ThreadCounters& c = thread.counters;
  fmt::print(
      stderr,
      "thread: {} requests; {} calls sent outside any request the thread replied to, {} returns "
      "without their call\n",
      c.instances, c.calls_outside_requests, c.returns_without_call);
  if (c.calls_handoffs_led_astray > 0) {
    fmt::print(stderr,
               "thread: {} calls whose hand-offs led to no request or to one already answered (an "
               "interpreter lock's passes look like hand-offs) went with the request their "
               "thread answered next\n",
               c.calls_handoffs_led_astray);
  }
  if (c.calls_never_answered > 0)
    fmt::print(stderr, "thread: {}\n", DescribeUnansweredCalls(c.calls_never_answered));
  if (c.root_calls_from_servers > 0) {
    fmt::print(stderr,
               "thread: warning: {} calls came from a server's thread that never replies: work "
               "handed over through something capture did not see; their requests are "
               "orphaned (--algo auto weighs this)\n",
               c.root_calls_from_servers);
  }
  if (c.calls_through_ambiguous_handoffs > 0) {
    fmt::print(stderr,
               "thread: warning: {} calls were placed through hand-offs that could have gone "
               "elsewhere (a wake-up or timer shared by several requests); their requests may "
               "be wrong (--algo auto weighs this)\n",
               c.calls_through_ambiguous_handoffs);
  }
  return ToPathsFile(std::move(thread));
}

PathsFile ReportFragment(FragmentInference fragment) {
  const FragmentCounters& c = fragment.counters;
  fmt::print(stderr, "fragment: {} requests; {} messages sent outside any fragment started them\n",
             c.instances, c.outputs_starting_requests);
  if (c.outputs_through_ambiguous_handoffs + c.handoffs_contradicted_by_replies > 0) {
    fmt::print(stderr,
               "fragment: warning: {} calls and messages were placed through hand-offs that "
               "could have gone elsewhere (a wake-up or timer shared by several requests), and "
               "{} replies answered a request other than the one handed to their thread; those "
               "requests may be wrong (--algo auto weighs this)\n",
               c.outputs_through_ambiguous_handoffs, c.handoffs_contradicted_by_replies);
  }
  if (c.outputs_beside_partial_inputs > 0) {
    fmt::print(stderr,
               "fragment: warning: {} calls and messages went to another request while their "
               "thread was part way through reading a call; they may belong to that call, "
               "streamed on before its last byte (--algo auto weighs this)\n",
               c.outputs_beside_partial_inputs);
  }
  const SetAsideNotes set_aside = DescribeSetAside(c);
  if (!set_aside.found.empty()) fmt::print(stderr, "fragment: {}\n", set_aside.found);
  for (const std::string& warning : {set_aside.sharing_a_read, set_aside.before_acting}) {
    if (!warning.empty()) fmt::print(stderr, "fragment: warning: {}\n", warning);
  }
  return ToPathsFile(std::move(fragment));
}

Result<PathsFile> RunThread(const Trace& trace, const InferFlags&) {
  WEFT_ASSIGN_OR_RETURN(ThreadInference thread, InferThread(trace));
  return ReportThread(std::move(thread));
}

Result<PathsFile> RunFragment(const Trace& trace, const InferFlags&) {
  WEFT_ASSIGN_OR_RETURN(FragmentInference fragment, InferFragment(trace));
  return ReportFragment(std::move(fragment));
}

Result<PathsFile> RunBaseline(const Trace& trace, BaselineRule rule) {
  WEFT_ASSIGN_OR_RETURN(BaselineInference baseline, InferBaseline(trace, rule));
  const BaselineCounters& c = baseline.counters;
  fmt::print(stderr,
             "{}: {} call pairs; {} root calls; {} other messages (MSG or unmatched returns) "
             "left as roots\n",
             BaselineName(rule), c.call_pairs, c.roots, c.other_messages);
  return ToPathsFile(std::move(baseline));
}

Result<PathsFile> RunLatestOpen(const Trace& trace, const InferFlags&) {
  return RunBaseline(trace, BaselineRule::kLatestOpen);
}

Result<PathsFile> RunEarliestOpen(const Trace& trace, const InferFlags&) {
  return RunBaseline(trace, BaselineRule::kEarliestOpen);
}

// --algo auto (infer/choose.h): prints the choice and its reasons and reports the chosen
// algorithm's run, made while deciding.
Result<PathsFile> RunAuto(const Trace& trace, const InferFlags& f) {
  WEFT_ASSIGN_OR_RETURN(LinkingOptions linking, LinkingFlags(f));
  WEFT_ASSIGN_OR_RETURN(NestingOptions nesting, NestingFlags(f));
  WEFT_ASSIGN_OR_RETURN(AutoInference decided, ChooseAlgorithm(trace, linking, nesting));
  fmt::print(stderr, "auto: {}\n", decided.choice.Describe());
  switch (decided.choice.algorithm) {
    case AutoAlgorithm::kThread:
      return ReportThread(std::move(*decided.thread));
    case AutoAlgorithm::kFragment:
      return ReportFragment(std::move(*decided.fragment));
    case AutoAlgorithm::kLinking:
      return ReportLinking(std::move(*decided.linking));
    case AutoAlgorithm::kNesting:
      return ReportNesting(std::move(*decided.nesting));
  }
  return Status::Internal("auto chose no algorithm");
}

struct Algorithm {
  std::string_view name;
  Result<PathsFile> (*infer)(const Trace& trace, const InferFlags& flags);
};

constexpr Algorithm kAlgorithms[] = {
    {"truth", RunTruth},     {"nesting", RunNesting},        {"convolution", RunConvolution},
    {"linking", RunLinking}, {"thread", RunThread},          {"fragment", RunFragment},
    {"auto", RunAuto},       {"latest-open", RunLatestOpen}, {"earliest-open", RunEarliestOpen},
};

std::string AlgorithmNames() {
  std::string names;
  for (const Algorithm& a : kAlgorithms)
    names += names.empty() ? std::string(a.name) : fmt::format(", {}", a.name);
  return names;
}

Status RunInfer(const InferFlags& f) {
  const Algorithm* algorithm = nullptr;
  for (const Algorithm& a : kAlgorithms) {
    if (a.name == f.algo) algorithm = &a;
  }
  if (!algorithm)
    return Status::InvalidArgument("unknown algorithm '{}' (available: {})", f.algo,
                                   AlgorithmNames());
  WEFT_ASSIGN_OR_RETURN(Trace trace, LoadTrace(f.input));
  Result<PathsFile> file = algorithm->infer(trace, f);
  if (!file.ok()) return file.status().WithContext(f.input);
  WEFT_RETURN_IF_ERROR(WritePaths(*file, f.output));
  const PathSet& set = file->paths;
  fmt::print(stderr, "{}: {} path instances of {} patterns over {} of {} messages\n", f.algo,
             set.instance_count(), set.patterns.size(), set.messages.size(), trace.size());
  return Status::Ok();
}

}  // namespace

void AddInferCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("infer", "Infer causal paths from a trace and write a paths file");
  cmd->footer(fmt::format(
      "Algorithms: {}. The paths file (.paths.json) holds every path instance and the\n"
      "aggregated path patterns; docs/paths.md describes it.\n\n"
      "Examples:\n"
      "  weft infer mt.weft --algo truth -o truth.paths.json\n"
      "  weft infer mt.weft --algo nesting -o nesting.paths.json\n"
      "  weft infer skewed.weft --algo nesting --skew-window 30ms --smooth 2 -o n.paths.json\n"
      "  weft infer email.weft --algo convolution --quantum 1s --tolerance 500ms -o c.paths.json\n"
      "  weft infer run.weft --algo thread -o thread.paths.json     (a reconciled capture)\n"
      "  weft infer run.weft --algo auto -o run.paths.json   (the most precise one that fits)\n"
      "  weft infer shop.weft --algo latest-open -o floor.paths.json   (a baseline)\n"
      "  weft paths nesting.paths.json --top 10\n",
      AlgorithmNames()));
  static InferFlags flags;
  cmd->add_option("trace", flags.input, "Trace to read (text or .weft; - for stdin)")->required();
  cmd->add_option("--algo", flags.algo, fmt::format("Inference algorithm: {}", AlgorithmNames()))
      ->required();
  cmd->add_option("-o,--output", flags.output, "Paths file to write (- for stdout)")->required();
  auto* nesting = "nesting (Project 5 §5.1; docs/nesting.md)";
  cmd->add_option("--skew-window", flags.skew_window,
                  "nesting: loosen nesting comparisons by this much for skewed clocks (e.g. 30ms)")
      ->capture_default_str()
      ->group(nesting);
  cmd->add_option("--overlap-penalty", flags.overlap_penalty,
                  "nesting: x, penalty exponent for children overlapping in time (default 4; 2 "
                  "with --paper-scoring)")
      ->group(nesting);
  cmd->add_option("--same-child-penalty", flags.same_child_penalty,
                  "nesting: y, penalty exponent for children calling the same node (default 0)")
      ->group(nesting);
  cmd->add_option("--generic-child-penalty", flags.generic_child_penalty,
                  "nesting: z, penalty exponent for any child already assigned (default 1; 0 "
                  "with --paper-scoring)")
      ->group(nesting);
  cmd->add_flag("--fixed-generic-penalty", flags.fixed_generic_penalty,
                "nesting: apply z at every node as given, instead of scaling it down where a "
                "visit makes few calls (1.5 or fewer: none)")
      ->group(nesting);
  cmd->add_option("--smooth", flags.nesting.smoothing_bins,
                  "nesting: Gaussian smoothing of the scoreboard, sigma in bins (0: off)")
      ->capture_default_str()
      ->group(nesting);
  cmd->add_flag("--no-call-ids", flags.no_call_ids,
                "nesting: ignore call ids; match each return with the earliest open call")
      ->group(nesting);
  cmd->add_option("--sibling-passes", flags.nesting.sibling_passes,
                  "nesting: choose again this many times, scoring how each child follows its "
                  "siblings (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 8))
      ->group(nesting);
  cmd->add_flag("--no-lookahead", flags.no_lookahead,
                "nesting: choose each child's parent greedily, without weighing the choice it "
                "leaves the node's next call")
      ->group(nesting);
  cmd->add_option("--threads", flags.nesting.threads,
                  "nesting: threads that choose parents (0: one per hardware thread); the paths "
                  "are the same for any number")
      ->capture_default_str()
      ->check(CLI::Range(0, 256))
      ->group(nesting);
  cmd->add_flag("--paper-scoring", flags.paper_scoring,
                "nesting: score parents by call delays only, exactly as Project 5 does (no return "
                "or sibling scoring, no lookahead, x = 2, z = 0)")
      ->group(nesting);
  auto* convolution = "convolution (Project 5 §5.2; docs/convolution.md)";
  cmd->add_option("--quantum", flags.quantum,
                  "convolution: mu, the signal sample width (e.g. 10ms)")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--spike-sigmas", flags.convolution.spike_sigmas,
                  "convolution: N, a spike is this many standard deviations above the mean")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--separation-sigmas", flags.convolution.separation_sigmas,
                  "convolution: S, spikes are separated by a dip below this many (S < N)")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--tolerance", flags.tolerance,
                  "convolution: v, match delays within +/- v more (§5.2.2)")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--max-delay", flags.max_delay,
                  "convolution: longest delay searched (0: half the trace)")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--min-messages", flags.convolution.min_messages,
                  "convolution: fewest messages for an edge or one of its delays")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--max-depth", flags.convolution.max_depth,
                  "convolution: longest path from a root")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option("--root", flags.convolution.roots,
                  "convolution: a root node (repeat for more; default: chosen automatically)")
      ->group(convolution);
  cmd->add_option("--max-memory", flags.max_memory, "convolution: memory limit for the FFT signals")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_option(
         "--fft-threads", flags.convolution.fft_threads,
         "convolution: FFTW threads per FFT of >= 2^18 points (0: one per hardware thread)")
      ->capture_default_str()
      ->group(convolution);
  cmd->add_flag("--no-short-path-suppression", flags.no_short_path_suppression,
                "convolution: keep direct edges that a longer path already explains")
      ->group(convolution);
  auto* linking = "linking (WAP5 §5.1; docs/linking.md)";
  cmd->add_option("--window", flags.window,
                  "linking: x, the longest delay a message can have caused another after")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option("--spontaneous", flags.linking.spontaneous_delay,
                  "linking: y, being spontaneous weighs as a cause y mean delays earlier")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option(
         "--learn", flags.linking.learning_iterations,
         "linking: iterations of the learned delay model (0: WAP5's exponential model only)")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option("--try-both", flags.linking.try_both_budget,
                  "linking: try-both decisions allowed per tree")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option("--try-both-low", flags.linking.try_both_low, "linking: links from here ...")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option("--try-both-high", flags.linking.try_both_high,
                  "linking: ... to here are ambiguous")
      ->capture_default_str()
      ->group(linking);
  cmd->add_option("--min-link", flags.linking.min_link, "linking: drop links less likely than this")
      ->capture_default_str()
      ->group(linking);
  cmd->add_flag("--no-client-aggregation", flags.no_client_aggregation,
                "linking: keep every client's own name (WAP5 §2.5.1 aggregates them as CLIENT)")
      ->group(linking);
  cmd->add_flag("--no-rpc", flags.no_rpc,
                "linking: ignore CALL/RETURN kinds and call ids, exactly as WAP5 does")
      ->group(linking);
  cmd->add_flag("--linked-trees", flags.linked_trees,
                "linking: keep trees of \"caused by arrival\" even for calls and returns")
      ->group(linking);
  cmd->callback([&result] { result = RunInfer(flags); });
}

}  // namespace weft::cli
