// Cost of the live Pivot Tracing bus (src/pivot/bus.h) on each transport: local (in one
// process), unix (the embedded hub, in a process of its own) and nats (a nats-server this
// program starts on a free port).
//
//   publish ns     what one Publish call costs the publishing thread: a burst of 4000
//                  messages of 100 bytes (within the queue's bound), per message
//   handed msg/s   what one publisher sustains: --messages messages of 100 bytes in chunks
//                  of 1000, each chunk flushed to the transport before the next
//   delivered/s    the same messages arriving at a subscriber on another connection
//   latency        three publisher processes (threads for local) each publish one result
//                  every 100 ms for --seconds, as agents do (Pivot Tracing §5 reports every
//                  interval); from Publish to the front end's handler, on CLOCK_MONOTONIC,
//                  median / p99 / max, and the share within the 150 ms budget: 1.5
//                  intervals, by which a result must reach the front end to be shown in the
//                  interval after the one it belongs to
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/bus_peer.h"
#include "pivot/processes.h"

namespace weft::pivot {
namespace {

namespace fs = std::filesystem;
constexpr double kBudgetMs = 1.5 * kPeerIntervalMs;
volatile std::sig_atomic_t stop_child = 0;

[[noreturn]] void Die(const std::string& why) {
  fmt::print(stderr, "pivot_bus_bench: {}\n", why);
  std::exit(1);
}

std::unique_ptr<Bus> Open(const std::string& url) {
  auto bus = OpenBus(url);
  if (!bus.ok()) Die(bus.status().message());
  return std::move(*bus);
}

struct Row {
  std::string transport;
  double publish_ns = 0, handed_per_s = 0, delivered_per_s = 0;
  std::vector<double> latencies_ms;
  uint64_t dropped = 0;
};

void MeasureThroughput(const std::string& url, size_t messages, Row* row) {
  auto publisher = Open(url);
  std::unique_ptr<Bus> own_subscriber = url == "local" ? nullptr : Open(url);
  Bus* subscriber = own_subscriber ? own_subscriber.get() : publisher.get();
  std::atomic<size_t> received{0};
  auto id = subscriber->Subscribe("bench.>", [&](auto, auto) { ++received; });
  if (!id.ok()) Die(id.status().message());
  std::atomic<bool> probed{false};
  auto probe = subscriber->Subscribe("probe", [&](auto, auto) { probed = true; });
  if (!WaitUntil(
          [&] {
            publisher->Publish("probe", "");
            return probed.load();
          },
          10000)) {
    Die(url + ": the subscriber never connected");
  }
  std::string payload(100, 'x');
  // The publishing thread's cost per call.
  constexpr int kBurst = 4000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBurst; ++i) publisher->Publish("bench.burst", payload);
  row->publish_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      kBurst;
  if (!publisher->Flush(30000).ok() || !WaitUntil([&] { return received >= kBurst; }, 30000)) {
    Die(url + ": the burst did not arrive");
  }
  received = 0;
  // Sustained: chunks of 1000, each flushed.
  start = std::chrono::steady_clock::now();
  for (size_t sent = 0; sent < messages;) {
    for (int i = 0; i < 1000 && sent < messages; ++i, ++sent)
      publisher->Publish("bench.x", payload);
    Status s = publisher->Flush(30000);
    if (!s.ok()) Die(s.message());
  }
  double handed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WaitUntil([&] { return received >= messages; }, 30000);
  double delivered_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row->handed_per_s = messages / handed_s;
  row->delivered_per_s = received / delivered_s;
  row->dropped = publisher->counters().dropped;
  if (received < messages) {
    fmt::print(stderr, "{}: {} of {} delivered\n", url, received.load(), messages);
  }
}

void MeasureLatency(const std::string& url, const std::string& self, double seconds, Row* row) {
  auto front = Open(url);
  std::mutex mu;
  std::vector<double> latencies;
  auto id = front->Subscribe("weft.pivot.results.>", [&](std::string_view, std::string_view p) {
    int64_t now = MonotonicNs();
    uint64_t seq;
    int64_t sent;
    if (!ParsePeerMessage(p, &seq, &sent)) return;
    std::lock_guard lock(mu);
    latencies.push_back((now - sent) / 1e6);
  });
  if (!id.ok()) Die(id.status().message());
  std::atomic<bool> probed{false};
  auto probe = front->Subscribe("probe", [&](auto, auto) { probed = true; });
  if (!WaitUntil(
          [&] {
            front->Publish("probe", "");
            return probed.load();
          },
          10000)) {
    Die(url + ": the front end never connected");
  }
  std::vector<pid_t> children;
  std::vector<std::thread> threads;
  std::vector<PeerStats> stats(3);
  static volatile std::sig_atomic_t stop_threads;
  stop_threads = 0;
  for (int i = 0; i < 3; ++i) {
    if (url == "local") {
      threads.emplace_back([&, i] {
        PublishEveryInterval(front.get(), "weft.pivot.results." + std::to_string(i), &stats[i],
                             &stop_threads);
      });
    } else {
      children.push_back(SpawnProcess({self, "--child", url}, {}, true));
    }
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop_threads = 1;
  for (std::thread& t : threads) t.join();
  for (pid_t pid : children) ReapProcess(pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the last ones in flight
  std::lock_guard lock(mu);
  row->latencies_ms = latencies;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

int RunChild(const std::string& url) {
  signal(SIGTERM, [](int) { stop_child = 1; });
  auto bus = Open(url);
  PeerStats stats;
  PublishEveryInterval(bus.get(), "weft.pivot.results." + std::to_string(getpid()), &stats,
                       &stop_child);
  bus->Flush(1000).ok();
  return 0;
}

int RunHub(const std::string& path) {
  signal(SIGTERM, [](int) { stop_child = 1; });
  auto bus = OpenBus("unix:" + path, {.may_host = true});
  if (!bus.ok()) Die(bus.status().message());
  while (!stop_child) pause();
  return 0;
}

}  // namespace
}  // namespace weft::pivot

int main(int argc, char** argv) {
  using namespace weft::pivot;
  CLI::App app{"Throughput and latency of the Pivot Tracing bus on each transport"};
  size_t messages = 200000;
  double seconds = 10;
  std::string nats_server = "/usr/sbin/nats-server", child_url, hub_path;
  app.add_option("--messages", messages, "messages for the sustained rate");
  app.add_option("--seconds", seconds, "seconds of 3 publishers at 1 message per 100 ms");
  app.add_option("--nats-server", nats_server, "the nats-server binary");
  app.add_option("--child", child_url, "(internal) run as a publisher process");
  app.add_option("--hub", hub_path, "(internal) run as the embedded hub");
  CLI11_PARSE(app, argc, argv);
  if (!child_url.empty()) return RunChild(child_url);
  if (!hub_path.empty()) return RunHub(hub_path);

  std::string self = fs::read_symlink("/proc/self/exe").string();
  fs::path dir = fs::temp_directory_path() / ("weft-pivot-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string sock = (dir / "bus.sock").string();
  pid_t hub = SpawnProcess({self, "--hub", sock}, {}, true);
  int port = PickFreeTcpPort();
  pid_t nats = StartNatsServer(nats_server, port);
  if (nats < 0 || !WaitUntil([&] { return CanConnectUnixPath(sock); }, 10000)) {
    ReapProcess(hub, SIGTERM);
    if (nats > 0) ReapProcess(nats, SIGTERM);
    Die("the hub or nats-server did not start");
  }

  std::vector<Row> rows;
  for (const std::string& url :
       {std::string("local"), "unix:" + sock, "nats://127.0.0.1:" + std::to_string(port)}) {
    Row row;
    row.transport = url.substr(0, url.find(':'));
    MeasureThroughput(url, messages, &row);
    MeasureLatency(url, self, seconds, &row);
    rows.push_back(std::move(row));
  }
  ReapProcess(hub, SIGTERM);
  ReapProcess(nats, SIGTERM);
  fs::remove_all(dir);

  fmt::print(
      "{} messages of 100 bytes for the rates; 3 publishers x 1 per {} ms for {} s for "
      "the latency (budget {} ms = 1.5 intervals)\n",
      messages, kPeerIntervalMs, seconds, kBudgetMs);
  fmt::print("{:<9} {:>11} {:>13} {:>13} {:>8} {:>10} {:>10} {:>10} {:>12}\n", "transport",
             "publish ns", "handed msg/s", "delivered/s", "results", "median ms", "p99 ms",
             "max ms", "within 150ms");
  for (const Row& r : rows) {
    size_t within = std::count_if(r.latencies_ms.begin(), r.latencies_ms.end(),
                                  [](double ms) { return ms <= kBudgetMs; });
    double max = r.latencies_ms.empty()
                     ? 0
                     : *std::max_element(r.latencies_ms.begin(), r.latencies_ms.end());
    fmt::print(
        "{:<9} {:>11.0f} {:>13.0f} {:>13.0f} {:>8} {:>10.3f} {:>10.3f} {:>10.3f} {:>11.1f}%\n",
        r.transport, r.publish_ns, r.handed_per_s, r.delivered_per_s, r.latencies_ms.size(),
        Percentile(r.latencies_ms, 0.5), Percentile(r.latencies_ms, 0.99), max,
        r.latencies_ms.empty() ? 0.0 : 100.0 * within / r.latencies_ms.size());
  }
  return 0;
}
