// Speed and memory of the nesting algorithm (Project 5 Table 1 and §5.1.2).
//
// For each row: generate a multitier trace at a parallelism, then time InferNesting on it
// (choosing parents on one thread: NestingOptions::threads = 1) over --runs runs and report the
// median, messages per second, the peak heap the algorithm allocates beyond the loaded trace (bytes
// per message), the measured mean per-node parallelism, and the baseline in the same invocation:
// Project 5's CPU seconds for its row (1.7 GHz Pentium 4) scaled to this row's message count.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "gen/gen.h"
#include "heap_accounting.h"
#include "infer/nesting/nesting.h"

namespace weft {
namespace {

struct Row {
  const char* name;
  double parallelism;  // factor on multitier's loops
  uint64_t messages;
  // Project 5 Table 1: the row this one corresponds to.
  const char* paper_row;
  double paper_messages;
  double paper_seconds;
  double paper_parallelism;
};

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "nesting_bench: {}\n", s.message());
  std::exit(1);
}

int Run(int runs, double scale) {
  const Row rows[] = {
      {"2M, paper's parallelism", 0.28, 2'000'000, "Multi-tier (long)", 2'026'658, 23.97, 1.612},
      {"770k, low", 0.1, 770'000, "parallelism-low", 769'638, 7.54, 1.146},
      {"770k, medium", 1.6, 770'000, "parallelism-medium", 770'344, 11.15, 5.116},
      {"770k, high", 17.5, 770'000, "parallelism-high", 775'254, 233.61, 45.057},
  };
  fmt::print("nesting_bench: multitier traces, InferNesting on one thread, median of {} runs\n\n",
             runs);
  fmt::print("{:<26} {:>9} {:>7} {:>9} {:>10} {:>9} | {:>19} {:>8} {:>9} {:>8}\n", "row",
             "messages", "p", "seconds", "M msgs/s", "B/msg", "Project 5 row", "p", "scaled s",
             "speedup");
  for (const Row& row : rows) {
    Result<GenConfig> config = LoadGenConfig("multitier");
    if (!config.ok()) Die(config.status());
    config->parallelism = row.parallelism;
    config->messages = uint64_t(double(row.messages) * scale);
    Result<Trace> trace = MakeTrace(*config);
    if (!trace.ok()) Die(trace.status());
    const double n = double(trace->size());
    std::vector<double> seconds;
    int64_t peak_bytes = 0;
    double parallelism = 0;
    for (int r = 0; r < runs; ++r) {
      const int64_t before = bench::StartPeak();
      auto start = std::chrono::steady_clock::now();
      Result<NestingInference> set = InferNesting(*trace, NestingOptions{.threads = 1});
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!set.ok()) Die(set.status());
      peak_bytes = bench::PeakSince(before);
      parallelism =
          double(set->counters.candidate_parents) / double(set->counters.children_with_candidates);
    }
    std::sort(seconds.begin(), seconds.end());
    double median = seconds[seconds.size() / 2];
    double scaled = row.paper_seconds * n / row.paper_messages;
    fmt::print(
        "{:<26} {:>9} {:>7.3f} {:>9.3f} {:>10.2f} {:>9.1f} | {:>19} {:>8.3f} {:>9.2f} {:>7.0f}x\n",
        row.name, size_t(n), parallelism, median, n / median / 1e6, double(peak_bytes) / n,
        row.paper_row, row.paper_parallelism, scaled, scaled / median);
  }
  fmt::print(
      "\np: mean per-node parallelism (candidate parents per child, Table 1's definition)\n"
      "B/msg: peak heap allocated by InferNesting (output paths included, loaded trace not)\n"
      "scaled s: Project 5's CPU seconds for its row, scaled to this row's message count\n");
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  int runs = 3;
  double scale = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--scale")
      scale = std::atof(argv[i + 1]);
    else {
      fmt::print(stderr,
                 "usage: nesting_bench [--runs R] [--scale F]  (F scales every row's length)\n");
      return 2;
    }
  }
  return weft::Run(runs, scale);
}
