// Reconcile speed (target: at least 2 million events per second; WAP5 §4 reconciled 4.7
// million messages in 982 s). Captures real testbed runs once (TCP: three-tier; UDP: the
// DNS-like tier), then times, per run, the two steps of `weft reconcile` on one thread:
// reading the logs (the baseline: a plain load of the same data) and Reconcile itself.
// Medians of --runs runs.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "reconcile/reconcile.h"

namespace {

namespace fs = std::filesystem;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// One topology: captured once, reconciled `runs` times.
int Measure(const std::string& weft, const std::string& topology, double seconds, int concurrency,
            int runs) {
  fs::path dir = fs::temp_directory_path() / fmt::format("weft-reconcile-bench-{}", getpid());
  fs::remove_all(dir);
  std::string command = fmt::format(
      "'{}' capture -o '{}' -- '{}' testbed run '{}' --duration {}s --concurrency {} "
      "-o '{}' >/dev/null 2>&1",
      weft, (dir / "capture").string(), weft, topology, seconds, concurrency,
      (dir / "truth").string());
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "reconcile_bench: the captured run failed: %s\n", command.c_str());
    fs::remove_all(dir);
    return 1;
  }
  std::vector<double> read_s, reconcile_s;
  uint64_t events = 0, messages = 0;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    auto logs = weft::reconcile::ReadCaptureDirectory((dir / "capture").string(), nullptr);
    read_s.push_back(Seconds(start));
    if (!logs.ok()) {
      std::fprintf(stderr, "reconcile_bench: %s\n", logs.status().message().c_str());
      return 1;
    }
    weft::reconcile::ReconcileSummary summary;
    start = std::chrono::steady_clock::now();
    auto trace = weft::reconcile::Reconcile(*logs, {}, &summary);
    reconcile_s.push_back(Seconds(start));
    if (!trace.ok()) {
      std::fprintf(stderr, "reconcile_bench: %s\n", trace.status().message().c_str());
      return 1;
    }
    events = summary.events;
    messages = summary.messages;
  }
  fs::remove_all(dir);
  const double read = Median(read_s), reconcile = Median(reconcile_s);
  fmt::print("{:<18} {:>10} {:>9} {:>9.3f} {:>11.2f} {:>11.3f} {:>11.2f} {:>7.2f}\n",
             fs::path(topology).stem().string(), events, messages, read, events / read / 1e6,
             reconcile, events / reconcile / 1e6, reconcile / read);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string weft, topologies;
  double seconds = 10;
  int runs = 5, concurrency = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--weft")
      weft = argv[i + 1];
    else if (flag == "--topologies")
      topologies = argv[i + 1];
    else if (flag == "--seconds")
      seconds = std::atof(argv[i + 1]);
    else if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--concurrency")
      concurrency = std::atoi(argv[i + 1]);
  }
  if (weft.empty() || topologies.empty() || runs < 1 || concurrency < 1 || !(seconds > 0)) {
    std::fprintf(
        stderr,
        "usage: reconcile_bench --weft PATH/weft --topologies testbed/topologies [--seconds 10] "
        "[--runs 5] [--concurrency 32]\n");
    return 2;
  }
  fmt::print(
      "testbed runs of {} s at concurrency {} under weft capture; medians of {} runs, one thread\n",
      seconds, concurrency, runs);
  fmt::print("{:<18} {:>10} {:>9} {:>9} {:>11} {:>11} {:>11} {:>7}\n", "topology", "events",
             "messages", "read s", "M events/s", "reconcile s", "M events/s", "ratio");
  int rc = 0;
  for (const char* name : {"three-tier.toml", "dns.toml"}) {
    rc |= Measure(weft, topologies + "/" + name, seconds, concurrency, runs);
  }
  return rc;
}
