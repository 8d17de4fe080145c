// Accuracy sweeps of the nesting algorithm in the manner of Project 5 Figures 18-22:
// the pathological cases, parallelism, delay deviation, message loss and clock skew.
// Each cell generates a trace with ground truth, infers with the paper's scoring
// ("paper": no return or sibling scoring, --paper-scoring) and with weft's default ("weft"), and
// evaluates against the truth. docs/nesting.md records the output.
//
// `--versus before21` puts nesting's defaults before issue 21 in the first column instead of
// the paper's scoring, marks every cell where the weft column is worse with "(worse)", and
// ends with a count. Nesting flags after the others (--overlap-penalty X,
// --generic-child-penalty Z, --sibling-passes K, --no-lookahead, --fixed-generic-penalty) change
// the weft column.
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "eval/eval.h"
#include "gen/gen.h"
#include "infer/baseline/baseline.h"
#include "infer/nesting/nesting.h"
#include "infer/truth/truth.h"

namespace weft {
namespace {

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "nesting_sweeps: {}\n", s.message());
  std::exit(1);
}

template <typename T>
T Check(Result<T> r) {
  if (!r.ok()) Die(r.status());
  return std::move(r).value();
}

Trace Generate(const std::string& scenario, double parallelism, double deviation,
               uint64_t messages) {
  GenConfig config = Check(LoadGenConfig(scenario));
  config.parallelism *= parallelism;
  config.deviation *= deviation;
  config.messages = messages;
  return Check(MakeTrace(config));
}

struct Cell {
  double parallelism = 0;  // measured mean per-node parallelism
  double fp_rate = 0;      // false-positive path instances / inferred instances
  double fn_rate = 0;      // false-negative path instances / truth instances
  uint64_t truth_instances = 0;
  uint64_t false_negatives = 0;
};

Cell Score(const Trace& trace, const NestingOptions& options) {
  NestingInference inferred = Check(InferNesting(trace, options));
  PathSet truth = Check(InferFromTruth(trace)).paths;
  EvalReport r = Check(Evaluate(truth, inferred.paths));
  Cell c;
  int64_t children = inferred.counters.children_with_candidates;
  c.parallelism = children ? double(inferred.counters.candidate_parents) / double(children) : 0;
  c.fp_rate = r.instances.FalsePositiveRate();
  c.fn_rate = r.instances.FalseNegativeRate();
  c.truth_instances = r.instances.truth;
  c.false_negatives = r.instances.false_negatives;
  return c;
}

// What the first column of every cell runs (the paper's scoring, or with --versus before21 the
// defaults before issue 21) and what the second runs (weft's defaults, or the flags given).
NestingOptions first_options = PaperNestingOptions();
NestingOptions weft_options;
std::string only_scenario;                // --scenario: one row of each table
bool flag_worse = false;                  // --versus: mark and count the cells where weft got worse
int worse_cells = 0, compared_cells = 0;  // of Figures 18-22
int worse_micro = 0, compared_micro = 0;  // of the microservice table

NestingOptions Paper() { return first_options; }
NestingOptions Weft() { return weft_options; }

NestingOptions BeforeIssue21() {
  NestingOptions o;
  o.overlap_penalty = 2.0;
  o.generic_child_penalty = 0.0;
  o.sibling_passes = 1;
  o.lookahead = false;
  return o;
}

// "a% / b%" for the two columns' error rates, marked when the second is worse (higher) than
// the first.
std::string Pair(double first, double weft) {
  std::string cell = fmt::format("{:.1f}% / {:.1f}%", 100 * first, 100 * weft);
  if (!flag_worse) return cell;
  ++compared_cells;
  if (weft <= first) return cell;
  ++worse_cells;
  return cell + " (worse)";
}

// The same for shares where higher is better.
std::string AccuracyPair(double first, double weft) {
  std::string cell = fmt::format("{:.1f}% / {:.1f}%", 100 * first, 100 * weft);
  if (!flag_worse) return cell;
  ++compared_micro;
  if (weft >= first) return cell;
  ++worse_micro;
  return cell + " (worse)";
}

const char* FirstName() { return flag_worse ? "before issue 21" : "paper"; }

bool Skip(const std::string& scenario) {
  return !only_scenario.empty() && scenario != only_scenario;
}

const char* kScenarios[] = {"multitier", "children-parallel", "children-0-2", "children-d-cc",
                            "penalty-breaker"};

// multitier runs at the paper's per-node parallelism (docs/nesting.md); the pathological
// cases at their own defaults.
double BaseParallelism(const std::string& scenario) { return scenario == "multitier" ? 0.28 : 1.0; }

void Pathological(uint64_t messages) {
  fmt::print("\n## Figure 18 cases at default settings: false-positive path instances\n\n");
  fmt::print("| scenario | per-node parallelism | {} / weft |\n| --- | --- | --- |\n", FirstName());
  for (const char* s : kScenarios) {
    if (Skip(s)) continue;
    Trace t = Generate(s, BaseParallelism(s), 1, messages);
    Cell paper = Score(t, Paper()), weft = Score(t, Weft());
    fmt::print("| {} | {:.2f} | {} |\n", s, paper.parallelism, Pair(paper.fp_rate, weft.fp_rate));
  }
}

// One table of a sweep: a row per scenario, a column per factor on one generator knob
// (Figure 19 scales the loops, Figure 20 every step's standard deviation).
enum class Knob { kParallelism, kDeviation };

void Sweep(uint64_t messages, Knob knob) {
  const bool parallelism = knob == Knob::kParallelism;
  if (parallelism) {
    fmt::print(
        "\n## Figure 19: parallelism (x the scenario's loops): false-positive path instances, "
        "{} / weft\n\n",
        FirstName());
  } else {
    fmt::print(
        "\n## Figure 20: delay deviation (x every step's sd): false-positive path instances, {} "
        "/ weft\n\n",
        FirstName());
  }
  const double factors[] = {0.25, 0.5, 1, 2, 4};
  fmt::print("| scenario |");
  for (double f : factors) fmt::print(" {}{} |", parallelism ? "x" : "sd x", f);
  fmt::print("\n| --- |");
  for (size_t i = 0; i < std::size(factors); ++i) fmt::print(" --- |");
  fmt::print("\n");
  for (const char* s : kScenarios) {
    if (Skip(s)) continue;
    fmt::print("| {} |", s);
    for (double f : factors) {
      Trace t = parallelism ? Generate(s, BaseParallelism(s) * f, 1, messages)
                            : Generate(s, BaseParallelism(s), f, messages);
      Cell paper = Score(t, Paper()), weft = Score(t, Weft());
      if (parallelism) fmt::print(" p={:.2f}:", paper.parallelism);
      fmt::print(" {} |", Pair(paper.fp_rate, weft.fp_rate));
    }
    fmt::print("\n");
  }
}

void SweepLoss(uint64_t messages) {
  fmt::print(
      "\n## Figure 21: message loss (sniffer queue of 64, capture rate varied), multitier\n\n");
  fmt::print(
      "False-negative path instances counted against the instances of the loss-free trace: those\n"
      "that lost a message, plus the intact ones the algorithm got wrong.\n\n");
  Trace t = Generate("multitier", BaseParallelism("multitier"), 1, messages);
  const double mean_rate = double(t.size()) / (double(t.EndTime() - t.StartTime()) / 1e9);
  fmt::print("The trace's mean message rate is {:.0f} messages/s.\n\n", mean_rate);
  fmt::print("| capture rate (msgs/s) | messages dropped | instances damaged | FN {} / weft |\n",
             FirstName());
  fmt::print("| --- | --- | --- | --- |\n");
  for (double factor : {1e6, 2.0, 1.2, 1.0, 0.95, 0.9, 0.8, 0.6}) {
    double rate = factor * mean_rate;
    DropSummary summary;
    Trace lossy = Check(DropMessages(t, DropOptions{.rate = rate, .queue = 64}, &summary));
    Cell paper = Score(lossy, Paper()), weft = Score(lossy, Weft());
    auto fn = [&](const Cell& c) {
      return double(summary.paths_lost + c.false_negatives) / double(summary.paths);
    };
    fmt::print(
        "| {} | {:.2f}% | {:.2f}% | {} |\n",
        factor >= 1e6 ? std::string("unlimited") : fmt::format("{:.0f} ({}x mean)", rate, factor),
        100.0 * double(summary.dropped) / double(summary.messages),
        100.0 * double(summary.paths_lost) / double(summary.paths), Pair(fn(paper), fn(weft)));
  }
}

// A copy of `trace` with its receive times forgotten: one timestamp per message, on the
// sender's clock, as in Project 5's traces.
Trace SendTimesOnly(const Trace& trace) {
  TraceColumns columns = trace.columns();
  std::fill(columns.recv_time.begin(), columns.recv_time.end(), kNoTime);
  std::vector<Attribute> attributes(trace.attributes().begin(), trace.attributes().end());
  return Check(
      Trace::FromParts(trace.nodes(), trace.strings(), std::move(columns), std::move(attributes)));
}

void SweepSkew(uint64_t messages, bool one_timestamp) {
  fmt::print(
      "\n## Figure 22: clock skew at WS2 (its clock fast by the offset; rev: slow), multitier, "
      "{}\n\n",
      one_timestamp ? "one timestamp per message (as in Project 5)"
                    : "send and receive timestamps");
  fmt::print(
      "False-negative path instances. comp: skew window 30 ms; smooth: Gaussian of 4 bins.\n"
      "Each cell: {} / weft scoring.\n\n",
      FirstName());
  fmt::print(
      "| WS2 offset | no comp | comp | comp+smooth | rev, comp+smooth |\n| --- | --- | --- | --- | "
      "--- |\n");
  Trace t = Generate("multitier", BaseParallelism("multitier"), 1, messages);
  for (int ms : {0, 10, 20, 30, 40, 50, 60}) {
    auto skewed = [&](int sign) {
      SkewOptions o;
      o.offsets = {{"WS2", sign * ms * kMillisecond}};
      Trace shifted = Check(SkewTrace(t, o));
      return one_timestamp ? SendTimesOnly(shifted) : shifted;
    };
    Trace fast = skewed(1), slow = skewed(-1);
    auto cell = [&](const Trace& trace, TimeNs window, double smooth) {
      NestingOptions paper = Paper(), weft = Weft();
      paper.skew_window = weft.skew_window = window;
      paper.smoothing_bins = weft.smoothing_bins = smooth;
      return Pair(Score(trace, paper).fn_rate, Score(trace, weft).fn_rate);
    };
    fmt::print("| {} ms | {} | {} | {} | {} |\n", ms, cell(fast, 0, 0),
               cell(fast, 30 * kMillisecond, 0), cell(fast, 30 * kMillisecond, 4),
               cell(slow, 30 * kMillisecond, 4));
  }
}

// docs/microservices.md's table: each microservice scenario's 60 s trace at 1, 2, 4 and 8
// requests in flight; whole trees exact and parent links right for the two columns, and
// weft's margin over the better of the two baselines (latest-open, earliest-open).
void Microservices() {
  fmt::print(
      "\n## Microservices (60 s traces): whole trees exact, parent links right; {} / weft\n\n",
      FirstName());
  fmt::print(
      "| scenario | in flight | whole trees | parent links | better baseline | weft's margin |\n"
      "| --- | --- | --- | --- | --- | --- |\n");
  for (const char* s : {"shop", "booking", "social"}) {
    if (Skip(s)) continue;
    for (double in_flight : {1, 2, 4, 8}) {
      GenConfig config = Check(LoadGenConfig(s));
      config.parallelism = in_flight;
      Trace t = Check(MakeTrace(config));
      PathSet truth = Check(InferFromTruth(t)).paths;
      auto score = [&](const PathSet& inferred) {
        EvalReport r = Check(Evaluate(truth, inferred, EvalOptions{.max_n = 1}));
        return std::pair(r.requests.Share(r.requests.exact), r.parent_links.Share());
      };
      auto first = score(Check(InferNesting(t, Paper())).paths);
      auto weft = score(Check(InferNesting(t, Weft())).paths);
      auto latest = score(Check(InferBaseline(t, BaselineRule::kLatestOpen)).paths);
      auto earliest = score(Check(InferBaseline(t, BaselineRule::kEarliestOpen)).paths);
      auto floor = std::pair(std::max(latest.first, earliest.first),
                             std::max(latest.second, earliest.second));
      fmt::print("| {} | {} | {} | {} | {:.1f}% / {:.1f}% | {:+.1f} / {:+.1f} |\n", s, in_flight,
                 AccuracyPair(first.first, weft.first), AccuracyPair(first.second, weft.second),
                 100 * floor.first, 100 * floor.second, 100 * (weft.first - floor.first),
                 100 * (weft.second - floor.second));
    }
  }
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  using weft::weft_options;
  uint64_t messages = 50'000;
  std::string only;
  auto usage = [] {
    fmt::print(
        stderr,
        "usage: nesting_sweeps [--messages N] [--only cases|parallelism|deviation|loss|skew|\n"
        "  microservices]\n"
        "  [--scenario NAME] [--versus before21] [--overlap-penalty X]\n"
        "  [--generic-child-penalty Z] [--sibling-passes K] [--no-lookahead]\n"
        "  [--fixed-generic-penalty]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--no-lookahead") {
      weft_options.lookahead = false;
      continue;
    }
    if (flag == "--fixed-generic-penalty") {
      weft_options.scale_generic_penalty = false;
      continue;
    }
    if (i + 1 >= argc) return usage();
    std::string value = argv[++i];
    if (flag == "--messages")
      messages = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--only")
      only = value;
    else if (flag == "--scenario")
      weft::only_scenario = value;
    else if (flag == "--versus" && value == "before21") {
      weft::first_options = weft::BeforeIssue21();
      weft::flag_worse = true;
    } else if (flag == "--overlap-penalty")
      weft_options.overlap_penalty = std::strtod(value.c_str(), nullptr);
    else if (flag == "--generic-child-penalty")
      weft_options.generic_child_penalty = std::strtod(value.c_str(), nullptr);
    else if (flag == "--sibling-passes")
      weft_options.sibling_passes = std::atoi(value.c_str());
    else
      return usage();
  }
  fmt::print("# nesting_sweeps: {} messages per trace\n", messages);
  const bool multitier = weft::only_scenario.empty() || weft::only_scenario == "multitier";
  if (only.empty() || only == "cases") weft::Pathological(messages);
  if (only.empty() || only == "parallelism") weft::Sweep(messages, weft::Knob::kParallelism);
  if (only.empty() || only == "deviation") weft::Sweep(messages, weft::Knob::kDeviation);
  if (multitier && (only.empty() || only == "loss")) weft::SweepLoss(messages);
  if (multitier && (only.empty() || only == "skew")) {
    weft::SweepSkew(messages, true);
    weft::SweepSkew(messages, false);
  }
  if (only.empty() || only == "microservices") weft::Microservices();
  if (weft::flag_worse) {
    fmt::print("\nworse than before issue 21: {} of {} cells of Figures 18-22", weft::worse_cells,
               weft::compared_cells);
    if (weft::compared_micro) {
      fmt::print(", {} of {} microservice cells", weft::worse_micro, weft::compared_micro);
    }
    fmt::print("\n");
  }
  return 0;
}
