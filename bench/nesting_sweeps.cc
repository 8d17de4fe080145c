// Accuracy sweeps of the nesting algorithm in the manner of Project 5 Figures 18-22:
// the pathological cases, parallelism, delay deviation, message loss and clock skew.
// Each cell generates a trace with ground truth, infers with the paper's scoring
// ("paper": no return or sibling scoring, --paper-scoring) and with weft's default ("weft"), and
// evaluates against the truth. docs/nesting.md records the output.
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "eval/eval.h"
#include "gen/gen.h"
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

NestingOptions Paper() { return PaperNestingOptions(); }

const char* kScenarios[] = {"multitier", "children-parallel", "children-0-2", "children-d-cc",
                            "penalty-breaker"};

// multitier runs at the paper's per-node parallelism (docs/nesting.md); the pathological
// cases at their own defaults.
double BaseParallelism(const std::string& scenario) { return scenario == "multitier" ? 0.28 : 1.0; }

void Pathological(uint64_t messages) {
  fmt::print("\n## Figure 18 cases at default settings: false-positive path instances\n\n");
  fmt::print("| scenario | per-node parallelism | paper | weft |\n| --- | --- | --- | --- |\n");
  for (const char* s : kScenarios) {
    Trace t = Generate(s, BaseParallelism(s), 1, messages);
    Cell paper = Score(t, Paper()), weft = Score(t, {});
    fmt::print("| {} | {:.2f} | {:.1f}% | {:.1f}% |\n", s, paper.parallelism, 100 * paper.fp_rate,
               100 * weft.fp_rate);
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
        "paper / weft\n\n");
  } else {
    fmt::print(
        "\n## Figure 20: delay deviation (x every step's sd): false-positive path instances, paper "
        "/ weft\n\n");
  }
  const double factors[] = {0.25, 0.5, 1, 2, 4};
  fmt::print("| scenario |");
  for (double f : factors) fmt::print(" {}{} |", parallelism ? "x" : "sd x", f);
  fmt::print("\n| --- |");
  for (size_t i = 0; i < std::size(factors); ++i) fmt::print(" --- |");
  fmt::print("\n");
  for (const char* s : kScenarios) {
    fmt::print("| {} |", s);
    for (double f : factors) {
      Trace t = parallelism ? Generate(s, BaseParallelism(s) * f, 1, messages)
                            : Generate(s, BaseParallelism(s), f, messages);
      Cell paper = Score(t, Paper()), weft = Score(t, {});
      if (parallelism) fmt::print(" p={:.2f}:", paper.parallelism);
      fmt::print(" {:.1f}% / {:.1f}% |", 100 * paper.fp_rate, 100 * weft.fp_rate);
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
  fmt::print(
      "| capture rate (msgs/s) | messages dropped | instances damaged | FN paper | FN weft |\n");
  fmt::print("| --- | --- | --- | --- | --- |\n");
  for (double factor : {1e6, 2.0, 1.2, 1.0, 0.95, 0.9, 0.8, 0.6}) {
    double rate = factor * mean_rate;
    DropSummary summary;
    Trace lossy = Check(DropMessages(t, DropOptions{.rate = rate, .queue = 64}, &summary));
    Cell paper = Score(lossy, Paper()), weft = Score(lossy, {});
    auto fn = [&](const Cell& c) {
      return 100.0 * double(summary.paths_lost + c.false_negatives) / double(summary.paths);
    };
    fmt::print(
        "| {} | {:.2f}% | {:.2f}% | {:.1f}% | {:.1f}% |\n",
        factor >= 1e6 ? std::string("unlimited") : fmt::format("{:.0f} ({}x mean)", rate, factor),
        100.0 * double(summary.dropped) / double(summary.messages),
        100.0 * double(summary.paths_lost) / double(summary.paths), fn(paper), fn(weft));
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
      "Each cell: paper / weft scoring.\n\n");
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
      NestingOptions paper = Paper(), weft;
      paper.skew_window = weft.skew_window = window;
      paper.smoothing_bins = weft.smoothing_bins = smooth;
      return fmt::format("{:.1f}% / {:.1f}%", 100 * Score(trace, paper).fn_rate,
                         100 * Score(trace, weft).fn_rate);
    };
    fmt::print("| {} ms | {} | {} | {} | {} |\n", ms, cell(fast, 0, 0),
               cell(fast, 30 * kMillisecond, 0), cell(fast, 30 * kMillisecond, 4),
               cell(slow, 30 * kMillisecond, 4));
  }
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  uint64_t messages = 50'000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--messages")
      messages = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--only")
      only = argv[i + 1];
    else {
      fmt::print(
          stderr,
          "usage: nesting_sweeps [--messages N] [--only cases|parallelism|deviation|loss|skew]\n");
      return 2;
    }
  }
  fmt::print("# nesting_sweeps: {} messages per trace\n", messages);
  if (only.empty() || only == "cases") weft::Pathological(messages);
  if (only.empty() || only == "parallelism") weft::Sweep(messages, weft::Knob::kParallelism);
  if (only.empty() || only == "deviation") weft::Sweep(messages, weft::Knob::kDeviation);
  if (only.empty() || only == "loss") weft::SweepLoss(messages);
  if (only.empty() || only == "skew") {
    weft::SweepSkew(messages, true);
    weft::SweepSkew(messages, false);
  }
  return 0;
}
