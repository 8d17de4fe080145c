// What Pivot Tracing's instrumentation costs the testbed (Pivot Tracing §6.3, Table 5):
// closed-loop throughput of one topology of short, CPU-bound requests, in these variants,
// interleaved round-robin over several rounds (each round starts at another variant), as
// medians and as ratios to the testbed built without its instrumentation:
//
//   uninstrumented   the testbed built with WEFT_NO_TRACEPOINTS: no tracepoints, no
//                    baggage, no agent (weft_testbed_uninstrumented)
//   no agent         tracepoints and baggage compiled in, no agent started (no bus)
//   agents           every server's agent started and connected to a front end (an
//                    embedded hub this program hosts), no query: Pivot's "enabled"
//   6.1 queries      the same with the case study's queries installed (docs/pivot.md):
//                    disk reads per replica; a First(Testbed.Request) -> DiskRead join
//                    across processes grouped by front server, type and replica; replies
//                    joined with the disk reads their calls caused
//   60 tuples        agents, no query, and every request carrying a baggage of 60 8-byte
//                    tuples from the client on, through every call and reply (Pivot's
//                    "Baggage - 60 Tuples", about 1 kB)
//
// Targets: agents >= 99.5% of uninstrumented, 6.1 queries >= 99%; 60 tuples reported.
//
//   pivot_testbed_overhead [--rounds 5] [--seconds 3] [--concurrency 8] [--topology FILE]
//                          [--variants uninstrumented,agents,...]
//
// Ratios are paired: each run over its own round's baseline run, the median over rounds.
// CPU per request is read over the load only (TreeCpuNs), and is the steadier of the two
// figures: a closed loop's throughput moves with whatever else the machine runs.
//
// Every run is a process of its own: this program runs itself (`--variant NAME`) for the
// instrumented variants and pivot_testbed_overhead_uninstrumented, the same source built
// against the uninstrumented testbed, for the baseline.
#include <dirent.h>
#include <fmt/format.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "callgrind_profile.h"
#include "child_runs.h"
#include "testbed/runner.h"
#include "testbed/topology.h"
#ifndef WEFT_NO_TRACEPOINTS
#include "pivot/baggage.h"
#include "pivot/frontend.h"
#endif

namespace weft::bench {
namespace {

// The case study's shape (testbed/topologies/replica-bias.toml) with no service times: two
// front servers, each request one call to storage (or two in parallel), three storage
// replicas, the first preferred, a disk read per storage request. A request is then only
// the servers' own work (framing, system calls, truth logs, threads), so the
// instrumentation's cost shows as much as it can.
constexpr std::string_view kTopology = R"toml(
name = "pivot-overhead"
seed = 1
[[tier]]
name = "front"
servers = 2
model = "worker-pool"
workers = 4
[[tier.request]]
name = "read"
weight = 3
reply_bytes = 1024
calls = [{ tier = "storage", request = "block", count = 1 }]
[[tier.request]]
name = "list"
reply_bytes = 256
calls = [{ tier = "storage", request = "meta", count = 2, parallel = true }]
[[tier]]
name = "storage"
servers = 3
model = "thread-per-connection"
balance = "prefer-first"
prefer_share = 0.6
[[tier.request]]
name = "block"
disk_bytes = 65536
reply_bytes = 1024
[[tier.request]]
name = "meta"
disk_bytes = 4096
reply_bytes = 256
)toml";

// The case study's queries as docs/pivot.md runs them on the testbed.
constexpr std::string_view kQueries[] = {
    "From d In Testbed.DiskRead GroupBy d.server Select d.server, COUNT, SUM(d.bytes)",
    "From d In Testbed.DiskRead Join r In First(Testbed.Request) On r -> d "
    "GroupBy r.server, r.type, d.server Select r.server, r.type, d.server, COUNT",
    "From r In Testbed.Reply Join d In Testbed.DiskRead On d -> r Where r.server == \"front0\" "
    "GroupBy r.type Select r.type, COUNT, AVERAGE(r.latency)",
};

struct Variant {
  std::string_view name;        // --variant
  std::string_view label;       // in the table
  std::string_view table5;      // Pivot Table 5's row: Read8k, Open, Create, Rename
  bool agents = false;          // WEFT_PIVOT_BUS set, a hub hosted here
  bool queries = false;         // kQueries installed
  int tuples = 0;               // a baggage of this many tuples on every request
  bool uninstrumented = false;  // run by the _uninstrumented build
};

constexpr Variant kVariants[] = {
    {"uninstrumented", "uninstrumented build", "0 (unmodified)", false, false, 0, true},
    {"no-agent", "tracepoints, no agent", "", false, false, 0, false},
    {"agents", "agents on a bus, no query", "0.3 / 0.3 / <0.1 / 0.2 (enabled)", true, false, 0,
     false},
    {"queries", "6.1 queries installed", "1.5 / 4.0 / 6.0 / 0.3", true, true, 0, false},
    {"tuples", "60 tuples in the baggage", "0.82 / 15.9 / 8.6 / 4.1", true, false, 60, false},
};

const Variant* FindVariant(std::string_view name) {
  for (const Variant& v : kVariants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

#ifndef WEFT_NO_TRACEPOINTS

size_t Servers(const testbed::Topology& topo) {
  size_t n = 0;
  for (const testbed::Tier& t : topo.tiers) n += t.servers.size();
  return n;
}

// A serialized baggage of `n` tuples of one 8-byte integer each, in one slot no query of
// this program uses.
std::string TuplesBaggage(int n) {
  pivot::Baggage b;
  for (int i = 0; i < n; ++i) {
    query::Value v = query::Value::Int(int64_t(0x1234'5678'9abc'def0) + i);
    b.Contents().Active(60, 1, 0).Append(&v, nullptr, 1, i);
  }
  return b.Serialize();
}

// Lists the agents until `n` answer, each with every query of `ids` installed (a liveness
// bound of 100 windows: agents connect to a hub started after them in the background).
Status AwaitAgents(pivot::Bus& bus, size_t n, const std::vector<std::string>& ids, int window_ms) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    WEFT_ASSIGN_OR_RETURN(auto agents, pivot::ListAgents(bus, window_ms));
    size_t ready = 0;
    for (const pivot::AgentDescription& a : agents) {
      size_t have = 0;
      for (const std::string& id : ids) {
        for (const pivot::InstalledQueryInfo& q : a.queries) have += q.id == id && q.woven;
      }
      ready += have == ids.size();
    }
    if (ready >= n) return Status::Ok();
  }
  return Status::Internal("fewer than {} agents answered with the queries installed", n);
}

#endif  // WEFT_NO_TRACEPOINTS

// CPU time, in ns, of this process and of every live process descended from it (the
// servers, and what they reaped), so that a run's CPU is read over its load alone: the
// setup (agents connecting, queries installed) and the teardown (waiting for the last
// results) are not requests' work. The servers' figures come from /proc in clock ticks
// (10 ms; a run's 6 processes use seconds of CPU, so well under 1%).
double TreeCpuNs() {
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double ns = 0;
  for (const timeval& t : {self.ru_utime, self.ru_stime}) {
    ns += double(t.tv_sec) * 1e9 + double(t.tv_usec) * 1e3;
  }
  // /proc/PID/stat: "pid (comm) state ppid ..." with utime, stime, cutime, cstime the
  // 14th to 17th fields; comm may hold spaces, so fields are counted after its ')'.
  std::map<long, long> parent;
  std::map<long, double> ticks;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return ns;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(in, line)) continue;
    size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields;  // from the 3rd (state) on
    size_t at = close + 2;
    while (at < line.size() && fields.size() < 15) {
      size_t space = line.find(' ', at);
      if (space == std::string::npos) space = line.size();
      fields.push_back(line.substr(at, space - at));
      at = space + 1;
    }
    if (fields.size() < 15) continue;
    parent[pid] = std::strtol(fields[1].c_str(), nullptr, 10);
    double t = 0;
    for (size_t f = 11; f <= 14; ++f) t += std::strtod(fields[f].c_str(), nullptr);
    ticks[pid] = t;
  }
  closedir(proc);
  const double ns_per_tick = 1e9 / double(sysconf(_SC_CLK_TCK));
  const long self_pid = getpid();
  for (const auto& [pid, t] : ticks) {
    for (long up = parent[pid], hops = 0; up > 1 && hops < 64; up = parent[up], ++hops) {
      if (up == self_pid) {
        ns += t * ns_per_tick;
        break;
      }
      if (!parent.count(up)) break;
    }
  }
  return ns;
}

// One run of `variant` (this process's build must be the one the variant needs): prints
// "throughput R ok N live_reads M" (M: disk reads the first query counted, -1 without).
int RunOne(const Variant& variant, const std::string& topology_file, double seconds,
           uint32_t concurrency, uint64_t requests, int window_ms) {
  Result<testbed::Topology> topo = topology_file.empty()
                                       ? testbed::ParseTopology(kTopology, "pivot-overhead")
                                       : testbed::LoadTopology(topology_file);
  if (!topo.ok()) {
    fmt::print(stderr, "{}\n", topo.status().message());
    return 2;
  }
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "weft-pivot-overhead-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror("mkdtemp");
    return 2;
  }
  const std::string dir = dir_template;
  testbed::RunOptions options;
  options.duration = TimeNs(seconds * double(kSecond));
  options.concurrency = concurrency;
  options.requests = requests;
  options.out_dir = dir;
  int64_t live_reads = -1;
  (void)window_ms;  // the uninstrumented build lists no agents
  Status setup;
  // The variant's own setup before the load and its teardown after, around the CPU
  // readings that bracket the load.
  std::function<void()> set_up = [] {};
  std::function<void()> tear_down = [] {};
  double cpu_start_ns = 0, cpu_end_ns = 0;
  options.before_load = [&](const testbed::Topology&) {
    set_up();
    cpu_start_ns = TreeCpuNs();
  };
  options.after_load = [&](const testbed::Topology&) {
    cpu_end_ns = TreeCpuNs();
    tear_down();
  };
#ifndef WEFT_NO_TRACEPOINTS
  const size_t servers = Servers(*topo);
  pivot::Bus* bus = nullptr;
  std::vector<std::unique_ptr<pivot::LiveSession>> sessions;
  const std::string url = "unix:" + dir + "/bus.sock";
  if (variant.agents) setenv("WEFT_PIVOT_BUS", url.c_str(), 1);
  if (variant.tuples > 0) options.baggage = TuplesBaggage(variant.tuples);
  set_up = [&] {
    if (!variant.agents) return;
    // Hosted here, after the servers were forked: RunTestbed forks with one thread.
    Result<pivot::Bus*> opened = pivot::OpenFrontEndBus(url);
    if (!opened.ok()) {
      setup = opened.status();
      return;
    }
    bus = *opened;
    setup = AwaitAgents(*bus, servers, {}, window_ms);
    if (!setup.ok() || !variant.queries) return;
    std::vector<std::string> ids;
    for (std::string_view q : kQueries) {
      Result<std::unique_ptr<pivot::LiveSession>> s =
          pivot::LiveSession::Install(*bus, std::string(q), {.list_window_ms = window_ms});
      if (!s.ok()) {
        setup = s.status();
        return;
      }
      ids.push_back((*s)->id());
      sessions.push_back(std::move(*s));
    }
    setup = AwaitAgents(*bus, servers, ids, window_ms);
  };
  tear_down = [&] {
    for (auto& s : sessions) (void)s->Finish(2000);
    if (sessions.empty()) return;
    live_reads = 0;
    for (const query::ResultRow& row : sessions[0]->Total().rows) {
      if (row.values.size() >= 2) live_reads += row.values[1].i;
    }
  };
#endif
  Result<testbed::RunReport> report = testbed::RunTestbed(*topo, options);
  std::filesystem::remove_all(dir);
  if (!report.ok() || !setup.ok()) {
    fmt::print(stderr, "{}: {}\n", variant.name,
               !report.ok() ? report.status().message() : setup.message());
    return 1;
  }
  const testbed::LoadStats& load = report->load;
  if (load.ok == 0 || load.errors + load.failed > 0) {
    fmt::print(stderr, "{}: {}\n", variant.name, testbed::FormatLoadStats(load));
    return 1;
  }
  // CPU time of the client, the front end and the servers over the load (and the servers'
  // drain after it), per request; and over the whole run, setup and teardown included,
  // reaped servers and all, for comparison.
  double whole_ns = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    for (const timeval& t : {u.ru_utime, u.ru_stime}) {
      whole_ns += double(t.tv_sec) * 1e9 + double(t.tv_usec) * 1e3;
    }
  }
  fmt::print("throughput {:.1f} ok {} live_reads {} cpu_us {:.2f} whole_cpu_us {:.2f}\n",
             load.Throughput(), load.ok, live_reads,
             (cpu_end_ns - cpu_start_ns) / 1e3 / double(load.ok), whole_ns / 1e3 / double(load.ok));
  return 0;
}

#ifndef WEFT_NO_TRACEPOINTS

struct Run {
  double throughput = 0;
  uint64_t ok = 0;
  int64_t live_reads = -1;
  double cpu_us = 0;  // per request answered
};

// Runs `variant` in a process of its own and reads its line (throughput 0: it failed).
Run RunChildVariant(const Variant& variant, const std::string& self,
                    const std::string& uninstrumented, const std::string& topology, double seconds,
                    uint32_t concurrency) {
  std::vector<std::string> command = {variant.uninstrumented ? uninstrumented : self,
                                      "--variant",
                                      std::string(variant.name),
                                      "--seconds",
                                      fmt::format("{}", seconds),
                                      "--concurrency",
                                      fmt::format("{}", concurrency)};
  if (!topology.empty()) command.insert(command.end(), {"--topology", topology});
  std::string out = RunChild(command, /*with_stderr=*/true);
  Run run;
  if (std::sscanf(out.c_str(), "throughput %lf ok %lu live_reads %ld cpu_us %lf", &run.throughput,
                  &run.ok, &run.live_reads, &run.cpu_us) != 4) {
    fmt::print(stderr, "{} failed: {}", variant.name, out);
    run = Run{};
  }
  return run;
}

std::string Percent(double x) { return fmt::format("{:.1f}%", 100 * x); }

// Medians of `rounds` runs of each of `chosen` (indices into kVariants), interleaved
// round-robin, each round starting at the next; ratios against chosen[0], the baseline.
int Drive(const std::string& uninstrumented, const std::string& topology, double seconds,
          uint32_t concurrency, int rounds, const std::vector<size_t>& chosen) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const size_t count = chosen.size();
  std::vector<std::vector<double>> throughput(count), cpu(count);
  // Each run over the same round's baseline run: machine-wide drift (other work on the
  // machine, its caches, its clock) moves both alike and cancels.
  std::vector<std::vector<double>> ratio(count), cpu_ratio(count);
  std::vector<int64_t> live_reads(count, -1);
  std::vector<uint64_t> answered(count, 0);
  for (int round = 0; round < rounds; ++round) {
    std::vector<Run> mine(count);
    for (size_t k = 0; k < count; ++k) {
      size_t v = (k + size_t(round)) % count;
      Run run = RunChildVariant(kVariants[chosen[v]], self, uninstrumented, topology, seconds,
                                concurrency);
      if (run.throughput <= 0) return 1;
      mine[v] = run;
      throughput[v].push_back(run.throughput);
      cpu[v].push_back(run.cpu_us);
      answered[v] = run.ok;
      live_reads[v] = run.live_reads;
    }
    for (size_t v = 0; v < count; ++v) {
      ratio[v].push_back(mine[v].throughput / mine[0].throughput);
      cpu_ratio[v].push_back(mine[v].cpu_us / mine[0].cpu_us);
    }
  }
  fmt::print(
      "testbed throughput, closed loop, {} sessions, {} s per run, {} rounds interleaved "
      "round-robin; medians\n",
      concurrency, seconds, rounds);
  fmt::print("{:<26} {:>7} {:>13} {:>7} {:>15} {:>10} {:>7} {:>15}  {}\n", "variant", "req/s",
             "min..max", "ratio", "rounds' ratios", "CPU us/req", "ratio", "rounds' ratios",
             "Pivot Table 5, % latency");
  auto range = [](const std::vector<double>& v) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return fmt::format("{}..{}", Percent(*lo), Percent(*hi));
  };
  for (size_t v = 0; v < count; ++v) {
    auto [lo, hi] = std::minmax_element(throughput[v].begin(), throughput[v].end());
    fmt::print("{:<26} {:>7.0f} {:>13} {:>7} {:>15} {:>10.1f} {:>7} {:>15}  {}\n",
               kVariants[chosen[v]].label, Median(throughput[v]),
               fmt::format("{:.0f}..{:.0f}", *lo, *hi), Percent(Median(ratio[v])), range(ratio[v]),
               Median(cpu[v]), Percent(Median(cpu_ratio[v])), range(cpu_ratio[v]),
               kVariants[chosen[v]].table5);
  }
  fmt::print(
      "ratio: the median over rounds of each run's figure over its round's {} run, and the\n"
      "rounds' ratios lowest..highest (the noise); CPU us/req: user + system time of the client\n"
      "and every server over the load, per request answered (setup and teardown left out).\n"
      "Pivot Table 5: HDFS latency overheads (Read8k / Open / Create / Rename), not\n"
      "throughput. Targets: agents, no query >= 99.5%; 6.1 queries >= 99%.\n",
      kVariants[chosen[0]].name);
  for (size_t v = 0; v < count; ++v) {
    if (live_reads[v] >= 0) {
      fmt::print("{}: the last run answered {} requests; the first query counted {} disk reads\n",
                 kVariants[chosen[v]].label, answered[v], live_reads[v]);
    }
  }
  fmt::print("60 tuples: {} bytes of serialized baggage per request\n", TuplesBaggage(60).size());
  return 0;
}

// --callgrind: the variants' user-space instructions per request, counted by callgrind in
// every process of a run (bench/callgrind_profile.h). Deterministic where timings are not,
// so it resolves the fraction of a percent the targets name; but it counts no kernel work
// (most of a testbed request's CPU) and no waiting, so it is not throughput.
//
// Each run serves a fixed number of requests. Its threads are counted by role: the
// testbed's own (the client's sessions, the servers' main, worker and connection threads)
// serve the requests; the agents' and buses' threads run per interval and per message,
// and take a number of polls that moves with timing, so they are reported apart, per run;
// the bench's own main thread (it installs the queries and awaits the agents) is not
// counted.
// Two runs of N and 2N requests are differenced, which cancels what a run costs once
// (starting the processes, the threads, the connections). With one session (the default
// here) the client draws the same request types in every run, so each variant serves the
// same requests; with more, which session serves which request moves with scheduling.
struct InstructionRun {
  uint64_t ok = 0;
  double requests_ir = 0;                               // the testbed's threads
  double control_ir = 0;                                // the agents' and buses' threads
  std::unordered_map<std::string, double> by_function;  // self Ir, the testbed's threads
};

bool IsPivotThread(const ThreadProfile& t) {
  return t.body.find("_Invoker<std::tuple<weft::pivot::") != std::string::npos;
}

// The bench's own main thread: the only main thread that never ran a server.
bool IsHarnessThread(const ThreadProfile& t) {
  return t.body.empty() && !t.Calls("weft::testbed::RunServer(");
}

// One run under callgrind; false if it failed or lost a process's profile (a server is
// killed 1 s after SIGTERM, and a loaded machine may not let valgrind write it by then):
// `processes` (the client and every server) must each have left complete files.
bool CountInstructionsOnce(const Variant& variant, const std::string& binary,
                           const std::string& valgrind, const std::string& topology,
                           uint32_t concurrency, uint64_t requests, size_t processes,
                           InstructionRun* out) {
  std::string dir =
      (std::filesystem::temp_directory_path() / "weft-pivot-callgrind-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return false;
  std::vector<std::string> command = {valgrind,
                                      "-q",
                                      "--tool=callgrind",
                                      "--separate-threads=yes",
                                      "--callgrind-out-file=" + dir + "/cg.%p",
                                      binary,
                                      "--variant",
                                      std::string(variant.name),
                                      "--requests",
                                      fmt::format("{}", requests),
                                      "--seconds",
                                      "600",
                                      "--concurrency",
                                      fmt::format("{}", concurrency),
                                      "--window-ms",
                                      "3000"};
  if (!topology.empty()) command.insert(command.end(), {"--topology", topology});
  const std::string output = RunChild(command, /*with_stderr=*/true);
  const size_t at = output.find("throughput ");
  double throughput = 0;
  InstructionRun run;
  if (at == std::string::npos ||
      std::sscanf(output.c_str() + at, "throughput %lf ok %lu", &throughput, &run.ok) != 2) {
    fmt::print(stderr, "{} under callgrind failed: {}", variant.name, output);
    std::filesystem::remove_all(dir);
    return false;
  }
  const std::vector<ThreadProfile> threads = ReadCallgrindDir(dir);
  std::vector<long> pids;
  for (const ThreadProfile& t : threads) {
    if (std::find(pids.begin(), pids.end(), t.pid) == pids.end()) pids.push_back(t.pid);
  }
  if (pids.size() != processes ||
      std::any_of(threads.begin(), threads.end(), [](const auto& t) { return !t.complete; })) {
    fmt::print(stderr, "{} under callgrind: profiles of {} processes of {}, or cut short\n",
               variant.name, pids.size(), processes);
    std::filesystem::remove_all(dir);
    return false;
  }
  for (const ThreadProfile& t : threads) {
    if (IsPivotThread(t)) {
      run.control_ir += double(t.total);
    } else if (!IsHarnessThread(t)) {
      run.requests_ir += double(t.total);
      for (const auto& [name, ir] : t.self) run.by_function[name] += double(ir);
    }
  }
  std::filesystem::remove_all(dir);
  *out = std::move(run);
  return true;
}

// CountInstructionsOnce, tried up to three times.
bool CountInstructions(const Variant& variant, const std::string& binary,
                       const std::string& valgrind, const std::string& topology,
                       uint32_t concurrency, uint64_t requests, size_t processes,
                       InstructionRun* out) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (CountInstructionsOnce(variant, binary, valgrind, topology, concurrency, requests, processes,
                              out)) {
      return true;
    }
  }
  return false;
}

// The last part of a demangled name worth reading: its arguments and the object in
// brackets dropped, at most `width` characters.
std::string ShortName(const std::string& name, size_t width = 90) {
  std::string s = name.substr(0, name.find(" ["));
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

int DriveCallgrind(const std::string& uninstrumented, const std::string& valgrind,
                   const std::string& topology, uint32_t concurrency, uint64_t requests, int rounds,
                   const std::vector<size_t>& chosen) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  Result<testbed::Topology> topo = topology.empty()
                                       ? testbed::ParseTopology(kTopology, "pivot-overhead")
                                       : testbed::LoadTopology(topology);
  if (!topo.ok()) {
    fmt::print(stderr, "{}\n", topo.status().message());
    return 2;
  }
  const size_t processes = Servers(*topo) + 1;
  const size_t count = chosen.size();
  std::vector<std::vector<double>> per_request(count), control(count), ratio(count);
  std::vector<std::unordered_map<std::string, double>> functions(count);  // summed over rounds
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> mine(count);
    for (size_t v = 0; v < count; ++v) {
      const Variant& variant = kVariants[chosen[v]];
      const std::string& binary = variant.uninstrumented ? uninstrumented : self;
      InstructionRun small, large;
      if (!CountInstructions(variant, binary, valgrind, topology, concurrency, requests, processes,
                             &small) ||
          !CountInstructions(variant, binary, valgrind, topology, concurrency, 2 * requests,
                             processes, &large)) {
        return 1;
      }
      if (large.ok <= small.ok) {
        fmt::print(stderr, "{}: {} then {} requests answered\n", variant.name, small.ok, large.ok);
        return 1;
      }
      const double served = double(large.ok - small.ok);
      mine[v] = (large.requests_ir - small.requests_ir) / served;
      per_request[v].push_back(mine[v]);
      control[v].push_back(large.control_ir);
      for (const auto& [name, ir] : large.by_function) {
        functions[v][name] += (ir - small.by_function[name]) / served;
      }
      for (const auto& [name, ir] : small.by_function) {
        if (!large.by_function.count(name)) functions[v][name] -= ir / served;
      }
    }
    for (size_t v = 0; v < count; ++v) ratio[v].push_back(mine[v] / mine[0]);
  }
  fmt::print(
      "user-space instructions per request (callgrind Ir), closed loop, {} sessions; runs of {} "
      "and {} requests, differenced; medians of {} rounds\n",
      concurrency, requests, 2 * requests, rounds);
  fmt::print("{:<26} {:>9} {:>15} {:>8} {:>17} {:>22}\n", "variant", "Ir/req", "min..max", "ratio",
             "rounds' ratios", "agents+bus Ir per run");
  for (size_t v = 0; v < count; ++v) {
    auto [lo, hi] = std::minmax_element(ratio[v].begin(), ratio[v].end());
    auto [least, most] = std::minmax_element(per_request[v].begin(), per_request[v].end());
    fmt::print("{:<26} {:>9.0f} {:>15} {:>8} {:>17} {:>22.0f}\n", kVariants[chosen[v]].label,
               Median(per_request[v]), fmt::format("{:.0f}..{:.0f}", *least, *most),
               fmt::format("{:.2f}%", 100 * Median(ratio[v])),
               fmt::format("{:.2f}%..{:.2f}%", 100 * *lo, 100 * *hi), Median(control[v]));
  }
  fmt::print(
      "Ir/req: instructions of the client's sessions and the servers' request threads, per "
      "request answered; no kernel\nwork and no waiting are counted, so the ratio is of "
      "instructions, not throughput. agents+bus: the agents' and\nbuses' threads over the "
      "larger run (per interval and per message, not per request; setup included).\n");
  // Where each variant's extra instructions are: against agents with no query where both
  // run agents, else against the baseline.
  size_t agents = count;
  for (size_t v = 0; v < count; ++v) {
    if (kVariants[chosen[v]].name == "agents") agents = v;
  }
  for (size_t v = 1; v < count; ++v) {
    const size_t base = kVariants[chosen[v]].agents && agents < count && agents != v ? agents : 0;
    if (base == v) continue;
    std::vector<std::pair<double, std::string>> moved;
    std::unordered_map<std::string, double> diff;
    for (const auto& [name, ir] : functions[v]) diff[name] += ir / rounds;
    for (const auto& [name, ir] : functions[base]) diff[name] -= ir / rounds;
    for (const auto& [name, ir] : diff) moved.push_back({ir, name});
    std::sort(moved.begin(), moved.end(),
              [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
    fmt::print("\n{}: {:+.0f} Ir/req against {}; by function (self Ir/req):\n",
               kVariants[chosen[v]].label, Median(per_request[v]) - Median(per_request[base]),
               kVariants[chosen[base]].label);
    for (size_t i = 0; i < std::min<size_t>(15, moved.size()); ++i) {
      fmt::print("  {:+8.0f}  {}\n", moved[i].first, ShortName(moved[i].second));
    }
  }
  return 0;
}

#endif  // WEFT_NO_TRACEPOINTS

int Main(int argc, char** argv) {
  CLI::App app{"The testbed's throughput with and without its Pivot Tracing instrumentation"};
  std::string variant, topology, uninstrumented;
  double seconds = 3;
  uint32_t concurrency = 8;
  uint64_t requests = 0;
  int window_ms = 300;
  int rounds = 5;
  std::vector<std::string> variants;
  bool callgrind = false;
  std::string valgrind = "valgrind";
  app.add_option("--variant", variant, "run one variant and print its throughput");
  app.add_flag("--callgrind", callgrind,
               "count each variant's instructions per request under callgrind instead of "
               "timing it (--requests: the smaller run's, default 2000; --concurrency: "
               "default 1)");
  app.add_option("--valgrind", valgrind, "the valgrind program for --callgrind");
  app.add_option("--window-ms", window_ms,
                 "with --variant: how long each listing of the agents waits for their answers");
  app.add_option("--variants", variants,
                 "the variants to compare, the first the baseline (default: all, the "
                 "uninstrumented build first)")
      ->delimiter(',');
  app.add_option("--topology", topology, "a topology file instead of the built-in one");
  app.add_option("--seconds", seconds, "load per run");
  app.add_option("--concurrency", concurrency, "closed-loop sessions");
  app.add_option("--rounds", rounds, "runs of each variant");
  app.add_option("--requests", requests,
                 "with --variant: stop after this many requests (--seconds still bounds the run)");
  app.add_option("--uninstrumented", uninstrumented,
                 "the uninstrumented build (default: this program's path + _uninstrumented)");
  CLI11_PARSE(app, argc, argv);
  if (!variant.empty()) {
    const Variant* v = FindVariant(variant);
#ifdef WEFT_NO_TRACEPOINTS
    const bool runnable = v != nullptr && v->uninstrumented;
#else
    const bool runnable = v != nullptr && !v->uninstrumented;
#endif
    if (!runnable) {
      fmt::print(stderr, "this build cannot run variant '{}'\n", variant);
      return 2;
    }
    return RunOne(*v, topology, seconds, concurrency, requests, window_ms);
  }
#ifdef WEFT_NO_TRACEPOINTS
  fmt::print(stderr, "run pivot_testbed_overhead; this build only runs --variant uninstrumented\n");
  return 2;
#else
  if (uninstrumented.empty()) {
    uninstrumented = std::filesystem::read_symlink("/proc/self/exe").string() + "_uninstrumented";
  }
  std::vector<size_t> chosen;
  for (const std::string& name : variants) {
    const Variant* v = FindVariant(name);
    if (v == nullptr) {
      fmt::print(stderr, "no variant '{}'\n", name);
      return 2;
    }
    chosen.push_back(size_t(v - kVariants));
  }
  if (chosen.empty()) {
    for (size_t v = 0; v < std::size(kVariants); ++v) chosen.push_back(v);
  }
  if (rounds < 1) {
    fmt::print(stderr, "--rounds must be at least 1\n");
    return 2;
  }
  if (callgrind) {
    // One session unless asked for more: then every run serves the same requests in the
    // same order (the client's seeded draws), and the counts repeat to a few in 10,000.
    if (app.count("--concurrency") == 0) concurrency = 1;
    return DriveCallgrind(uninstrumented, valgrind, topology, concurrency,
                          requests > 0 ? requests : 2000, rounds, chosen);
  }
  return Drive(uninstrumented, topology, seconds, concurrency, rounds, chosen);
#endif
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::Main(argc, argv); }
