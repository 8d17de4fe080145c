// Speed and memory of the convolution algorithm (Project 5 Table 1, §5.2.5 and
// Figure 23).
//
// Part 1, the paper's row: a 200,000-message, 500-second multitier trace at mu = 10 ms,
// which took Project 5 6,684 CPU seconds (667 MHz Alpha). Median of --runs runs.
// Part 2, run time against S = duration / mu from 10^4 to 10^7 on the same trace: the
// search is bounded to depth 2 from CLIENT so that every S runs the same number e of
// correlations, and the time should grow as e S log S. Baselines in the same run: one
// plain FFTW real-to-complex transform of the same size (the floor of a correlation),
// and the paper's Figure 23 scaled from its Table 1 point (6,684 s at S = 5 x 10^4) by
// S log S. Memory is the process's peak resident set (it only grows, and S rises).
#include <fftw3.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gen/gen.h"
#include "infer/convolution/convolution.h"

namespace weft {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

// Seconds for one forward real-to-complex FFT of n points (median of a few).
double PlainFft(uint64_t n) {
  double* in = static_cast<double*>(fftw_malloc(sizeof(double) * n));
  fftw_complex* out = static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * (n / 2 + 1)));
  fftw_plan plan = fftw_plan_dft_r2c_1d(int(n), in, out, FFTW_ESTIMATE);
  for (uint64_t i = 0; i < n; ++i) in[i] = (i % 7 == 0) ? 1.0 : 0.0;
  std::vector<double> times;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fftw_execute(plan);
    times.push_back(Seconds(std::chrono::steady_clock::now() - t0));
  }
  fftw_destroy_plan(plan);
  fftw_free(in);
  fftw_free(out);
  std::sort(times.begin(), times.end());
  return times[1];
}

constexpr double kPaperSeconds = 6684;  // Table 1, multitier "normal", mu = 10 ms
constexpr double kPaperS = 500.0 / 0.01;

double PaperScaled(double s) {
  return kPaperSeconds * (s * std::log2(s)) / (kPaperS * std::log2(kPaperS));
}

int Main(int argc, char** argv) {
  int runs = 3;
  uint64_t messages = 200'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    if (flag == "--messages") messages = std::strtoull(argv[i + 1], nullptr, 10);
  }
  Result<GenConfig> config = LoadGenConfig("multitier");
  if (!config.ok()) return 1;
  config->messages = messages;
  Result<Trace> trace = MakeTrace(*config);
  if (!trace.ok()) return 1;
  TimeNs duration = trace->EndTime() - trace->StartTime();
  fmt::print("trace: multitier, {} messages over {}\n\n", trace->size(), FormatDuration(duration));

  fmt::print("Part 1: Project 5 Table 1 row (200,000 messages, 500 s, mu = 10 ms)\n");
  fmt::print("{:<14} {:>9} {:>7} {:>6} {:>9} {:>9} {:>10} {:>12}\n", "roots", "seconds", "edges",
             "corr", "fft size", "peak MiB", "paper s", "speed-up");
  for (bool automatic : {true, false}) {
    ConvolutionOptions options;
    if (!automatic) options.roots = {"CLIENT"};
    std::vector<double> times;
    ConvolutionCounters set;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      Result<ConvolutionInference> result = InferConvolution(*trace, options);
      times.push_back(Seconds(std::chrono::steady_clock::now() - t0));
      if (!result.ok()) {
        fmt::print("error: {}\n", result.status().message());
        return 1;
      }
      set = result->counters;
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    fmt::print("{:<14} {:>9.3f} {:>7} {:>6} {:>9} {:>9.1f} {:>10.0f} {:>11.0f}x\n",
               automatic ? "automatic" : "CLIENT", median, set.edges, set.correlations,
               set.fft_size, PeakRssMiB(), kPaperSeconds, kPaperSeconds / median);
  }

  fmt::print("\nPart 2: run time against S = duration / mu (Figure 23), depth 2 from CLIENT\n");
  fmt::print("{:>10} {:>9} {:>10} {:>6} {:>9} {:>12} {:>12} {:>10} {:>9} {:>12} {:>12}\n", "S",
             "mu", "fft size", "corr", "seconds", "s/corr", "plain FFT s", "corr/FFT", "peak MiB",
             "paper s", "s/corr/SlogS");
  fmt::print(
      "(threads: FFTW threads per transform of >= 2^18 points; 0 = one per hardware thread, here "
      "{})\n",
      std::thread::hardware_concurrency());
  double first_ratio = 0;
  for (auto [s, threads] : {std::pair{1e4, 0}, {1e5, 0}, {1e6, 0}, {1e6, 1}, {1e7, 0}, {1e7, 1}}) {
    ConvolutionOptions options;
    options.fft_threads = threads;
    options.quantum = std::max<TimeNs>(1, TimeNs(double(duration) / s));
    options.roots = {"CLIENT"};
    options.max_depth = 2;
    options.max_signal_bytes = uint64_t(8) << 30;
    auto t0 = std::chrono::steady_clock::now();
    Result<ConvolutionInference> set = InferConvolution(*trace, options);
    double seconds = Seconds(std::chrono::steady_clock::now() - t0);
    if (!set.ok()) {
      fmt::print("{:>10.0e}  error: {}\n", s, set.status().message());
      continue;
    }
    uint64_t fft = uint64_t(set->counters.fft_size);
    double plain = PlainFft(fft);
    double per = seconds / double(std::max<int64_t>(1, set->counters.correlations));
    double ratio = per / (s * std::log2(s));
    if (first_ratio == 0) first_ratio = ratio;
    // The last column: seconds per correlation / (S log2 S), relative to the first row;
    // constant for pure S log S growth (it falls at small S, where the matching's
    // O(messages) term of §5.2.5 dominates).
    fmt::print(
        "{:>10.0e} {:>9} {:>10} {:>6} {:>9.3f} {:>12.5f} {:>12.5f} {:>10.1f} {:>9.1f} {:>12.0f} "
        "{:>12.3f}  threads {}\n",
        s, FormatDuration(options.quantum), fft, set->counters.correlations, seconds, per, plain,
        per / plain, PeakRssMiB(), PaperScaled(s), ratio / first_ratio, threads);
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::Main(argc, argv); }
