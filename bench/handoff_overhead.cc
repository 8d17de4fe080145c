// Cost of capture where requests move between threads: (1) a producer/consumer FIFO queue
// (std::mutex + std::condition_variable, what thread pools and the testbed's hand-off
// servers use) with a fixed number of items, untraced and under `weft capture`, and the
// nanoseconds capture adds per synchronisation call the program makes (lock, unlock, wait,
// signal, broadcast: each one a pthread call the preload library can interpose); (2) the
// testbed's hand-off model (testbed/topologies/one-model.toml.in with model "handoff"),
// requests per second untraced and traced. Runs are interleaved in one invocation, the
// figures are medians.
//
// Targets: the queue traced >= 0.80x untraced; the hand-off model >= 0.90x.
//
//   handoff_overhead --weft build/release/weft [--runs 5] [--items 2000000]
//                    [--capacity 64] [--producers 2] [--consumers 2]
//                    [--model-template testbed/topologies/one-model.toml.in]
//                    [--seconds 3] [--concurrency 8]
// Between the two, the CPU time capture adds to one synchronisation call in one thread,
// paired in one process (steady on a loaded machine, where the queue's ratio is not).
// The same binary is the traced program: `handoff_overhead queue ITEMS PRODUCERS
// CONSUMERS CAPACITY` and `handoff_overhead calls ITERATIONS` (what the driver runs
// under each tracer).
#include <dlfcn.h>
#include <fmt/format.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "capture/event_log.h"
#include "child_runs.h"

namespace {

using Clock = std::chrono::steady_clock;
using weft::bench::Median;
using weft::bench::RunChild;

// --- the traced program -----------------------------------------------------------------

// The calls one thread made into the pthread synchronisation API (std::mutex::lock is
// pthread_mutex_lock, condition_variable::wait pthread_cond_wait, notify_one
// pthread_cond_signal, notify_all pthread_cond_broadcast).
struct SyncCalls {
  long lock = 0, unlock = 0, wait = 0, signal = 0, broadcast = 0;
  long total() const { return lock + unlock + wait + signal + broadcast; }
};

// A bounded FIFO queue, as between the stages of a staged server or in front of a
// fixed pool of workers: a producer waits while it is full, a consumer while it is
// empty, and each signals one waiter of the other side after its critical section. The
// counts are kept by the caller's thread, so counting costs no synchronisation.
class Queue {
 public:
  explicit Queue(size_t capacity) : capacity_(capacity) {}
  void Push(long item, SyncCalls& calls) {
    std::unique_lock<std::mutex> hold(mutex_);
    ++calls.lock;
    while (items_.size() >= capacity_) {
      not_full_.wait(hold);
      ++calls.wait;
    }
    items_.push_back(item);
    hold.unlock();
    ++calls.unlock;
    not_empty_.notify_one();
    ++calls.signal;
  }
  // False once the queue is closed and empty.
  bool Pop(long* item, SyncCalls& calls) {
    std::unique_lock<std::mutex> hold(mutex_);
    ++calls.lock;
    while (items_.empty() && !closed_) {
      not_empty_.wait(hold);
      ++calls.wait;
    }
    bool got = !items_.empty();
    if (got) {
      *item = items_.front();
      items_.pop_front();
    }
    hold.unlock();
    ++calls.unlock;
    if (got) {
      not_full_.notify_one();
      ++calls.signal;
    }
    return got;
  }
  void Close(SyncCalls& calls) {
    {
      std::lock_guard<std::mutex> hold(mutex_);
      ++calls.lock;
      closed_ = true;
    }
    ++calls.unlock;
    not_empty_.notify_all();
    ++calls.broadcast;
  }

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<long> items_;
  bool closed_ = false;
};

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// `items` in all from `producers` threads to `consumers` threads through a queue of
// `capacity`. Prints "items N seconds S cpu CPU_SECONDS calls C lock L unlock U wait W
// signal G broadcast B" (CPU time of the whole process: what the calls cost, whichever
// thread and core ran them).
int QueueRun(long items, int producers, int consumers, size_t capacity) {
  Queue queue(capacity);
  std::vector<SyncCalls> calls(size_t(producers + consumers) + 1);
  std::atomic<long> sum{0}, consumed{0};
  auto start = Clock::now();
  double cpu_start = ProcessCpuSeconds();
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&, c] {
      long item = 0, own_sum = 0, own = 0;
      while (queue.Pop(&item, calls[size_t(producers + c)])) {
        own_sum += item;
        ++own;
      }
      sum += own_sum;
      consumed += own;
    });
  }
  std::vector<std::thread> producing;
  for (int p = 0; p < producers; ++p) {
    producing.emplace_back([&, p] {
      for (long i = p; i < items; i += producers) queue.Push(i, calls[size_t(p)]);
    });
  }
  for (std::thread& t : producing) t.join();
  queue.Close(calls.back());
  for (std::thread& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  double cpu = ProcessCpuSeconds() - cpu_start;
  if (consumed != items || sum != items * (items - 1) / 2) {
    std::fprintf(stderr, "queue: %ld of %ld items consumed\n", consumed.load(), items);
    return 1;
  }
  SyncCalls all;
  for (const SyncCalls& c : calls) {
    all.lock += c.lock;
    all.unlock += c.unlock;
    all.wait += c.wait;
    all.signal += c.signal;
    all.broadcast += c.broadcast;
  }
  std::printf(
      "items %ld seconds %.6f cpu %.6f calls %ld lock %ld unlock %ld wait %ld signal %ld "
      "broadcast %ld\n",
      items, elapsed, cpu, all.total(), all.lock, all.unlock, all.wait, all.signal, all.broadcast);
  return 0;
}

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// The cost of one synchronisation call alone, as capture_overhead's `loop` measures a
// socket call: one thread, `iterations` of pthread_mutex_lock, pthread_cond_signal (no
// waiter) and pthread_mutex_unlock, in blocks of 10,000 that alternate between the
// program's own calls (through a preload library's wrappers when one interposes them)
// and calls straight into the C library (its symbols looked up in libc.so.6 itself, which
// no preload can interpose). Alternating in one process cancels the load of a shared
// machine. Prints "sync_call CPU_NS ADDED_CPU_NS": thread CPU ns per call of the
// program's own calls, and the median difference per call between neighbouring blocks.
using MutexFn = int (*)(pthread_mutex_t*);
using CondFn = int (*)(pthread_cond_t*);

int OneThreadCalls(long iterations) {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  auto direct_lock = libc ? reinterpret_cast<MutexFn>(dlsym(libc, "pthread_mutex_lock")) : nullptr;
  auto direct_unlock =
      libc ? reinterpret_cast<MutexFn>(dlsym(libc, "pthread_mutex_unlock")) : nullptr;
  auto direct_signal =
      libc ? reinterpret_cast<CondFn>(dlsym(libc, "pthread_cond_signal")) : nullptr;
  if (direct_lock == nullptr || direct_unlock == nullptr || direct_signal == nullptr) return 2;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  constexpr long kBlock = 10'000;  // iterations per block: 3 calls each
  std::vector<double> added;
  double own_cpu = 0;
  long blocks = 0;
  for (long done = 0; done + 2 * kBlock <= iterations; done += 2 * kBlock, ++blocks) {
    double c0 = ThreadCpuNs();
    for (long i = 0; i < kBlock; ++i) {
      pthread_mutex_lock(&mutex);
      pthread_cond_signal(&cond);
      pthread_mutex_unlock(&mutex);
    }
    double c1 = ThreadCpuNs();
    for (long i = 0; i < kBlock; ++i) {
      direct_lock(&mutex);
      direct_signal(&cond);
      direct_unlock(&mutex);
    }
    double c2 = ThreadCpuNs();
    own_cpu += c1 - c0;
    added.push_back(((c1 - c0) - (c2 - c1)) / (3 * kBlock));
  }
  if (added.empty()) return 2;
  std::sort(added.begin(), added.end());
  std::printf("sync_call %.2f %.2f\n", own_cpu / double(blocks * 3 * kBlock),
              added[added.size() / 2]);
  return 0;
}

// --- the driver -------------------------------------------------------------------------

std::string Each(const std::vector<double>& v, const char* format) {
  std::string s;
  for (double x : v) s += fmt::format(fmt::runtime(format), x) + " ";
  return s;
}

// Events and dropped events in the logs under `dir`.
std::pair<uint64_t, uint64_t> LogEvents(const std::string& dir) {
  uint64_t events = 0, dropped = 0;
  auto logs = weft::capture::FindEventLogs(dir);
  if (!logs.ok()) return {0, 0};
  for (const std::string& path : *logs) {
    auto log = weft::capture::ReadEventLog(path);
    if (!log.ok()) continue;
    events += log->events.size();
    dropped += log->loss.dropped_events;
  }
  return {events, dropped};
}

struct Options {
  std::string weft, model_template;
  int runs = 5, producers = 2, consumers = 2, concurrency = 8;
  long items = 2'000'000, capacity = 64;
  double seconds = 3;
};

void QueueBench(const std::string& self, const Options& o, const std::string& dir) {
  fmt::print(
      "queue: std::mutex + std::condition_variable FIFO of capacity {}, {} producers + {} "
      "consumers, {} items, {} runs each (interleaved: untraced, traced, untraced, ...), "
      "median\n",
      o.capacity, o.producers, o.consumers, o.items, o.runs);
  struct Run {
    double seconds = 0, cpu_seconds = 0, calls = 0;
  };
  std::vector<std::array<Run, 2>> pairs;  // the runs where both ran
  std::string counts[2];
  uint64_t events = 0, dropped = 0;
  for (int r = 0; r < o.runs; ++r) {
    std::array<Run, 2> pair;
    bool ok = true;
    for (int traced = 0; traced < 2 && ok; ++traced) {
      std::filesystem::remove_all(dir);
      std::vector<std::string> command;
      if (traced) command = {o.weft, "capture", "-o", dir, "--"};
      command.insert(command.end(),
                     {self, "queue", std::to_string(o.items), std::to_string(o.producers),
                      std::to_string(o.consumers), std::to_string(o.capacity)});
      std::string out = RunChild(command, /*with_stderr=*/true);
      size_t at = out.find("items ");
      long n = 0, c = 0;
      Run& run = pair[size_t(traced)];
      ok = at != std::string::npos &&
           std::sscanf(out.c_str() + at, "items %ld seconds %lf cpu %lf calls %ld", &n,
                       &run.seconds, &run.cpu_seconds, &c) == 4 &&
           run.seconds > 0;
      if (!ok) {
        fmt::print(stderr, "queue run failed: {}\n", out);
        break;
      }
      run.calls = double(c);
      std::string line = out.substr(at, out.find('\n', at) - at);
      counts[traced] = line.substr(line.find("lock"));
      if (traced) std::tie(events, dropped) = LogEvents(dir);
    }
    if (ok) pairs.push_back(pair);
  }
  if (pairs.empty()) return;
  // Per run: throughput, and wall-clock and CPU ns per synchronisation call (the calls a
  // run makes differ a little: how often a thread finds the queue empty or full and waits
  // depends on scheduling). Traced against untraced both as medians over all runs and as
  // the median over the pairs run back to back (which share the machine's load of the
  // moment: on a shared machine this is the steadier figure).
  std::vector<double> rate[2], wall_ns[2], cpu_ns[2], paired_ratio, paired_wall, paired_cpu;
  for (const auto& pair : pairs) {
    for (int t = 0; t < 2; ++t) {
      rate[t].push_back(double(o.items) / pair[size_t(t)].seconds);
      wall_ns[t].push_back(pair[size_t(t)].seconds * 1e9 / pair[size_t(t)].calls);
      cpu_ns[t].push_back(pair[size_t(t)].cpu_seconds * 1e9 / pair[size_t(t)].calls);
    }
    paired_ratio.push_back(rate[1].back() / rate[0].back());
    paired_wall.push_back(wall_ns[1].back() - wall_ns[0].back());
    paired_cpu.push_back(cpu_ns[1].back() - cpu_ns[0].back());
  }
  const char* names[2] = {"untraced", "weft capture"};
  fmt::print("{:<14} {:>12} {:>12} {:>14} {:>13} {:>12}   {}\n", "tracer", "items/s", "vs untraced",
             "sync calls/run", "wall ns/call", "cpu ns/call", "each run (items/s)");
  for (int t = 0; t < 2; ++t) {
    std::vector<double> calls;
    for (const auto& pair : pairs) calls.push_back(pair[size_t(t)].calls);
    fmt::print("{:<14} {:>12.0f} {:>11.1f}% {:>14.0f} {:>13.1f} {:>12.1f}   {}\n", names[t],
               Median(rate[t]), 100 * Median(rate[t]) / Median(rate[0]), Median(calls),
               Median(wall_ns[t]), Median(cpu_ns[t]), Each(rate[t], "{:.0f}"));
  }
  fmt::print("last calls counted: untraced {}; traced {}\n", counts[0], counts[1]);
  fmt::print(
      "weft capture keeps {:.3f}x of untraced throughput (medians; {:.3f}x paired) (target "
      ">= 0.80x); added per synchronisation call: {:.1f} ns of CPU, {:.1f} ns wall-clock "
      "(paired medians; {} threads on {} cores)\n",
      Median(rate[1]) / Median(rate[0]), Median(paired_ratio), Median(paired_cpu),
      Median(paired_wall), o.producers + o.consumers, std::thread::hardware_concurrency());
  fmt::print("traced log: {} events, {} dropped (last run)\n", events, dropped);
}

// The per-call cost in one thread, paired in-process (OneThreadCalls), untraced and traced.
void CallBench(const std::string& self, const Options& o, const std::string& dir) {
  const long iterations = 2'000'000;
  fmt::print(
      "\nper call: one thread, {} x (pthread_mutex_lock, pthread_cond_signal with no waiter, "
      "pthread_mutex_unlock), in blocks of 10,000, the program's own calls alternated with "
      "blocks straight into libc, thread CPU time, {} runs each, median\n",
      iterations, o.runs);
  std::vector<double> cpu[2], added[2];
  for (int r = 0; r < o.runs; ++r) {
    for (int traced = 0; traced < 2; ++traced) {
      std::filesystem::remove_all(dir);
      std::vector<std::string> command;
      if (traced) command = {o.weft, "capture", "-o", dir, "--"};
      command.insert(command.end(), {self, "calls", std::to_string(iterations)});
      std::string out = RunChild(command, /*with_stderr=*/true);
      size_t at = out.find("sync_call ");
      double c = 0, a = 0;
      if (at != std::string::npos &&
          std::sscanf(out.c_str() + at, "sync_call %lf %lf", &c, &a) == 2) {
        cpu[traced].push_back(c);
        added[traced].push_back(a);
      } else {
        fmt::print(stderr, "calls run failed: {}\n", out);
      }
    }
  }
  const char* names[2] = {"untraced", "weft capture"};
  fmt::print("{:<14} {:>14} {:>26}\n", "tracer", "cpu ns/call", "added ns per call (paired)");
  for (int t = 0; t < 2; ++t) {
    fmt::print("{:<14} {:>14.1f} {:>26.1f}\n", names[t], Median(cpu[t]), Median(added[t]));
  }
  fmt::print(
      "weft adds {:.1f} ns of CPU per synchronisation call (untraced, the method's own "
      "error: {:.1f} ns)\n",
      Median(added[1]), Median(added[0]));
}

void ModelBench(const Options& o, const std::string& dir) {
  std::ifstream in(o.model_template);
  std::stringstream text;
  text << in.rdbuf();
  std::string topology_text = text.str();
  if (topology_text.empty()) {
    fmt::print(stderr, "{}: cannot read it\n", o.model_template);
    return;
  }
  for (size_t at; (at = topology_text.find("@MODEL@")) != std::string::npos;)
    topology_text.replace(at, 7, "handoff");
  std::string topology = dir + "-handoff.toml";
  std::ofstream(topology) << topology_text;
  fmt::print(
      "\ntestbed hand-off model: weft testbed run one-model.toml.in (model handoff) "
      "--duration {:.0f}s --concurrency {}, {} runs each (interleaved), median\n",
      o.seconds, o.concurrency, o.runs);
  std::vector<double> rate[2], paired;  // paired: traced / untraced of runs back to back
  for (int r = 0; r < o.runs; ++r) {
    for (int traced = 0; traced < 2; ++traced) {
      std::filesystem::remove_all(dir);
      std::string truth = dir + "-truth";
      std::filesystem::remove_all(truth);
      std::vector<std::string> command;
      if (traced) command = {o.weft, "capture", "-o", dir, "--"};
      command.insert(command.end(), {o.weft, "testbed", "run", topology, "--duration",
                                     fmt::format("{}s", o.seconds), "--concurrency",
                                     std::to_string(o.concurrency), "-o", truth});
      std::string out = RunChild(command, /*with_stderr=*/true);
      size_t at = out.find(" req/s");
      size_t from = out.rfind(' ', at == std::string::npos ? 0 : at - 1);
      if (at != std::string::npos && from != std::string::npos) {
        rate[traced].push_back(std::atof(out.substr(from + 1, at - from - 1).c_str()));
        if (traced && rate[0].size() == rate[1].size())
          paired.push_back(rate[1].back() / rate[0].back());
      } else {
        fmt::print(stderr, "testbed run failed: {}\n", out);
      }
      std::filesystem::remove_all(truth);
    }
  }
  const char* names[2] = {"untraced", "weft capture"};
  fmt::print("{:<14} {:>12} {:>12}   {}\n", "tracer", "requests/s", "vs untraced",
             "each run (requests/s)");
  for (int t = 0; t < 2; ++t) {
    fmt::print("{:<14} {:>12.0f} {:>11.1f}%   {}\n", names[t], Median(rate[t]),
               100 * Median(rate[t]) / Median(rate[0]), Each(rate[t], "{:.0f}"));
  }
  fmt::print(
      "weft capture keeps {:.3f}x of untraced throughput (medians; {:.3f}x paired) (target "
      ">= 0.90x)\n",
      Median(rate[1]) / Median(rate[0]), Median(paired));
  std::filesystem::remove(topology);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "calls" && argc == 3) return OneThreadCalls(std::atol(argv[2]));
  if (mode == "queue" && argc == 6) {
    return QueueRun(std::atol(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                    size_t(std::atol(argv[5])));
  }
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--weft")
      o.weft = value;
    else if (flag == "--runs")
      o.runs = std::atoi(value.c_str());
    else if (flag == "--items")
      o.items = std::atol(value.c_str());
    else if (flag == "--capacity")
      o.capacity = std::atol(value.c_str());
    else if (flag == "--producers")
      o.producers = std::atoi(value.c_str());
    else if (flag == "--consumers")
      o.consumers = std::atoi(value.c_str());
    else if (flag == "--model-template")
      o.model_template = value;
    else if (flag == "--seconds")
      o.seconds = std::atof(value.c_str());
    else if (flag == "--concurrency")
      o.concurrency = std::atoi(value.c_str());
  }
  if (o.weft.empty() || o.runs < 1 || o.items < 1 || o.capacity < 1 || o.producers < 1 ||
      o.consumers < 1 || o.concurrency < 1 || !(o.seconds > 0)) {
    std::fprintf(
        stderr,
        "usage: handoff_overhead --weft PATH/weft [--runs 5] [--items 2000000] "
        "[--capacity 64] [--producers 2] [--consumers 2] [--model-template one-model.toml.in] "
        "[--seconds 3] [--concurrency 8]\n");
    return 2;
  }
  std::string self = std::filesystem::canonical("/proc/self/exe").string();
  std::string dir =
      (std::filesystem::temp_directory_path() / ("weft-handoff-bench-" + std::to_string(getpid())))
          .string();
  QueueBench(self, o, dir);
  CallBench(self, o, dir);
  if (!o.model_template.empty()) ModelBench(o, dir);
  std::filesystem::remove_all(dir);
  return 0;
}
