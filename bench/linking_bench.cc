// Speed and memory of message linking (WAP5 §6.5, Table 5).
//
// For each row: generate a two-timestamp trace, then time InferLinking on it (one thread)
// over --runs runs and report the median, messages per second, the peak heap the algorithm
// allocates beyond the loaded trace (bytes per message, the paths it returns included),
// and the baseline in the same invocation: WAP5's 730 CPU seconds for the 4,702,865
// messages of its CoDeeN trace, scaled to the row's message count. The budget rows show
// how run time grows with the try-both budget (WAP5: "heavily dependent").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "gen/gen.h"
#include "heap_accounting.h"
#include "infer/linking/linking.h"

namespace weft {
namespace {

constexpr double kPaperMessages = 4'702'865;  // WAP5 Table 5, CoDeeN
constexpr double kPaperSeconds = 730;
constexpr double kPaperMegabytes = 1354;

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "linking_bench: {}\n", s.message());
  std::exit(1);
}

Trace Generate(const std::string& scenario, uint64_t messages) {
  Result<GenConfig> config = LoadGenConfig(scenario);
  if (!config.ok()) Die(config.status());
  config->messages = messages;
  Result<Trace> trace = MakeTrace(*config);
  if (!trace.ok()) Die(trace.status());
  return std::move(trace).value();
}

int Run(int runs, uint64_t messages) {
  fmt::print(
      "linking_bench: InferLinking on one thread, median of {} runs; WAP5: {:.0f} CPU s and {:.0f} "
      "MB "
      "for {:.0f} messages\n\n",
      runs, kPaperSeconds, kPaperMegabytes, kPaperMessages);
  fmt::print("{:<14} {:>7} {:>9} {:>9} {:>10} {:>8} {:>10} {:>10} {:>10} | {:>9} {:>8}\n", "trace",
             "budget", "messages", "seconds", "M msgs/s", "B/msg", "instances", "try-both",
             "patterns", "WAP5 s", "speedup");
  struct Row {
    const char* scenario;
    uint32_t budget;
  };
  const LinkingOptions defaults;
  std::vector<Row> rows = {{"wide-area", defaults.try_both_budget},
                           {"multitier-wan", defaults.try_both_budget}};
  for (uint32_t b : {0u, 1u, 2u, 3u, 4u, 6u, 8u}) {
    if (b != defaults.try_both_budget) rows.push_back({"multitier-wan", b});
  }
  std::string loaded;
  Trace trace;
  for (const Row& row : rows) {
    if (loaded != row.scenario) {
      trace = Generate(row.scenario, messages);
      loaded = row.scenario;
    }
    const double n = double(trace.size());
    LinkingOptions options;
    options.try_both_budget = row.budget;
    std::vector<double> seconds;
    int64_t peak_bytes = 0;
    LinkingInference last;
    for (int r = 0; r < runs; ++r) {
      const int64_t before = bench::StartPeak();
      auto start = std::chrono::steady_clock::now();
      Result<LinkingInference> set = InferLinking(trace, options);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!set.ok()) Die(set.status());
      peak_bytes = bench::PeakSince(before);
      last = std::move(set).value();
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    const double scaled = kPaperSeconds * n / kPaperMessages;
    fmt::print(
        "{:<14} {:>7} {:>9} {:>9.3f} {:>10.2f} {:>8.1f} {:>10} {:>10} {:>10} | {:>9.1f} "
        "{:>7.0f}x\n",
        row.scenario, row.budget, size_t(n), median, n / median / 1e6, double(peak_bytes) / n,
        last.paths.instance_count(), last.counters.try_both, last.paths.patterns.size(), scaled,
        scaled / median);
  }
  fmt::print(
      "\nbudget: try-both decisions allowed per tree (default {})\n"
      "B/msg: peak heap allocated by InferLinking (output paths included, loaded trace not); WAP5: "
      "{:.0f}\n"
      "WAP5 s: WAP5's CPU seconds scaled to the row's messages (a 2006 CPU)\n",
      defaults.try_both_budget, kPaperMegabytes * 1e6 / kPaperMessages);
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  int runs = 3;
  uint64_t messages = 2'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--messages")
      messages = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      fmt::print(stderr, "usage: linking_bench [--runs R] [--messages N]\n");
      return 2;
    }
  }
  return weft::Run(runs, messages);
}
