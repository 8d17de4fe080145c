// Live queries end to end between processes (Pivot Tracing §5): three instrumented
// programs (this binary run as --peer: tests/pivot/agent_peer.h, firing Peer.Tick every
// millisecond with its agent started from WEFT_PIVOT_BUS) and a front end (LiveSession, in
// this process), over the embedded bus (this process hosts the hub) and over a
// nats-server this program starts on a free port.
//
//   latency   per interval, when the merged result of all three agents is available
//             (LiveSession::TakeComplete returns it, polled every 2 ms) and when the last
//             agent's partials arrived, after the interval's end; and the whole, from the
//             interval's start, in intervals: median / p99 / max, and the share of
//             intervals whose result was available within 1.5 intervals of their start,
//             at intervals of 1 s and 100 ms
//   outage    nats-server killed with SIGKILL mid-query and started again on its port,
//             --outages times, with the three programs firing as fast as they can: their
//             firing rate in the 2 s while the server is down over the 2 s before it
//             (and, for the noise, two windows of 2 s both with the server up), the
//             partials the agents could not send, and how soon results came back
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "pivot/agent_peer.h"
#include "pivot/bus.h"
#include "pivot/frontend.h"
#include "pivot/processes.h"
#include "pivot/protocol.h"

namespace weft::pivot {
namespace {

namespace fs = std::filesystem;
constexpr int kPeers = 3;
constexpr int64_t kMs = 1'000'000;
const char* const kQuery =
    "From t In Peer.Tick GroupBy t.peer Select t.peer, COUNT, MIN(t.seq), MAX(t.seq)";

[[noreturn]] void Die(const std::string& why) {
  fmt::print(stderr, "pivot_agents_bench: {}\n", why);
  std::exit(1);
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

std::string Summary(const std::vector<double>& v, const char* unit, int digits) {
  return fmt::format("median {:.{}f} {}, p99 {:.{}f}, max {:.{}f}", Percentile(v, 0.5), digits,
                     unit, Percentile(v, 0.99), digits, *std::max_element(v.begin(), v.end()),
                     digits);
}

// Three peers of this binary on `url`, firing every `period_us` (0: flat out).
class Peers {
 public:
  Peers(const fs::path& dir, const std::string& url, int64_t period_us) {
    for (int i = 0; i < kPeers; ++i) {
      std::string path = (dir / fmt::format("stats{}-{}", i, period_us)).string();
      stats_.push_back(MapAgentPeerStats(path));
      if (stats_.back() == nullptr) Die("cannot map " + path);
      stats_.back()->phase.store(AgentPeerStats::kFire);
      pids_.push_back(SpawnProcess(
          {"/proc/self/exe", "--peer", path, std::to_string(i), std::to_string(period_us)},
          {{"WEFT_PIVOT_BUS", url}}));
    }
  }
  ~Peers() {
    for (pid_t p : pids_) ReapProcess(p, SIGKILL);
  }
  // CPU time (ms) the peers' threads other than their firing threads (the agent's and
  // the bus's) have used so far.
  double AgentCpuMs() const { return CpuMs(false); }
  // CPU time (ms) the firing threads have used so far.
  double FiringCpuMs() const { return CpuMs(true); }

 private:
  // utime + stime of /proc/.../stat, in ms.
  static double StatCpuMs(const std::string& path) {
    std::ifstream in(path);
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream fields(stat.substr(paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    return (utime + stime) * 1000.0 / double(sysconf(_SC_CLK_TCK));
  }
  // The process's time counts its threads that have exited too.
  double CpuMs(bool firing) const {
    double ms = 0;
    for (pid_t pid : pids_) {
      const double main = StatCpuMs(fmt::format("/proc/{}/task/{}/stat", pid, pid));
      ms += firing ? main : StatCpuMs(fmt::format("/proc/{}/stat", pid)) - main;
    }
    return ms;
  }

 public:
  uint64_t firings() const {
    uint64_t n = 0;
    for (AgentPeerStats* s : stats_) n += s->firings.load();
    return n;
  }
  // Each peer's firings per second over the next `ms`.
  std::vector<double> Rates(int ms) const {
    std::vector<uint64_t> a;
    for (AgentPeerStats* s : stats_) a.push_back(s->firings.load());
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<double> out;
    for (size_t i = 0; i < stats_.size(); ++i) {
      out.push_back(double(stats_[i]->firings.load() - a[i]) / seconds);
    }
    return out;
  }

 private:
  std::vector<AgentPeerStats*> stats_;
  std::vector<pid_t> pids_;
};

// CPU time (ms) the whole machine has been busy, and this process.
std::pair<double, double> MachineAndSelfCpuMs() {
  const double tick_ms = 1000.0 / double(sysconf(_SC_CLK_TCK));
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, irq = 0, softirq = 0, idle = 0;
  stat >> cpu >> user >> nice >> system >> idle >> idle >> irq >> softirq;
  std::ifstream self("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return {(user + nice + system + irq + softirq) * tick_ms, (utime + stime) * tick_ms};
}

std::unique_ptr<LiveSession> Install(Bus& bus, int64_t interval_ns) {
  if (!WaitUntil([&] {
        Result<std::vector<AgentDescription>> a = ListAgents(bus, 200);
        return a.ok() && a->size() == kPeers;
      })) {
    Die("the three agents did not answer on " + bus.url());
  }
  auto session = LiveSession::Install(bus, kQuery, {.interval_ns = interval_ns});
  if (!session.ok()) Die(session.status().message());
  if ((*session)->agents() != kPeers) Die("not every agent answered the list");
  return std::move(*session);
}

// When each agent's partials for each interval arrived (wall clock), seen on the bus.
class Arrivals {
 public:
  Arrivals(Bus& bus, const std::string& id) : bus_(bus) {
    auto sub = bus.Subscribe(ResultsSubject(id), [this](auto, auto payload) {
      const int64_t now = WallNs();
      Result<PartialResults> p = DecodePartials(payload);
      if (!p.ok() || p->final) return;
      std::lock_guard lock(mu_);
      auto& a = by_interval_[p->interval_start_ns];
      a.agents.insert(p->pid);
      a.last = std::max(a.last, now);
    });
    if (!sub.ok()) Die(sub.status().message());
    sub_ = *sub;
  }
  ~Arrivals() {
    bus_.Unsubscribe(sub_);
    (void)bus_.Flush(1000);
  }
  // The time the last of all three agents' partials arrived; 0 if not all did.
  int64_t AllArrived(int64_t interval) {
    std::lock_guard lock(mu_);
    auto it = by_interval_.find(interval);
    return it == by_interval_.end() || it->second.agents.size() < kPeers ? 0 : it->second.last;
  }

 private:
  struct Interval {
    std::set<int64_t> agents;
    int64_t last = 0;
  };
  Bus& bus_;
  uint64_t sub_ = 0;
  std::mutex mu_;
  std::map<int64_t, Interval> by_interval_;
};

void MeasureLatency(Bus& bus, const std::string& transport, int64_t interval_ns, double seconds) {
  std::unique_ptr<LiveSession> session = Install(bus, interval_ns);
  Arrivals arrivals(bus, session->id());
  struct Taken {
    int64_t start, at;
    size_t rows;
  };
  std::vector<Taken> taken;
  const int64_t begin = WallNs();
  while (WallNs() - begin < int64_t(seconds * 1e9)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int64_t now = WallNs();
    for (const query::QueryResult& r : session->TakeComplete(now)) {
      if (r.rows.empty() || r.rows[0].interval_start < begin) continue;  // installed during it
      taken.push_back({r.rows[0].interval_start, now, r.rows.size()});
    }
  }
  (void)session->Finish(5000);
  // Judged after the run: on NATS the session's handler and ours may run on different
  // threads, so ours may not have stamped an interval's arrivals when it was taken.
  std::vector<double> available_ms, arrived_ms, from_start;
  size_t within = 0, incomplete = 0;
  for (const Taken& t : taken) {
    const int64_t end = t.start + interval_ns, last = arrivals.AllArrived(t.start);
    if (last == 0 || t.rows != kPeers) {
      ++incomplete;
      continue;
    }
    available_ms.push_back(double(t.at - end) / kMs);
    arrived_ms.push_back(double(last - end) / kMs);
    from_start.push_back(double(t.at - t.start) / double(interval_ns));
    within += t.at - t.start <= interval_ns * 3 / 2;
  }
  const size_t intervals = taken.size();
  if (available_ms.empty()) Die("no complete interval on " + transport);
  fmt::print("{:<5} interval {:>5} ms: {} intervals, {} without all three agents, {} late\n",
             transport, interval_ns / kMs, intervals, incomplete, session->late());
  fmt::print("    merged result available after the interval's end: {}\n",
             Summary(available_ms, "ms", 2));
  fmt::print("    last agent's partials arrived after the end:       {}\n",
             Summary(arrived_ms, "ms", 2));
  fmt::print("    available after the interval's start, in intervals: {}; within 1.5: {}/{}\n",
             Summary(from_start, "", 3), within, available_ms.size());
}

// With `control`, the programs and the front end use the embedded bus, and the
// nats-server killed and restarted serves nobody: what killing a server does to the
// machine, without an outage of the programs' bus.
void MeasureOutages(const fs::path& dir, const std::string& nats_server, int outages,
                    bool control) {
  const int port = PickFreeTcpPort();
  const std::string url = control ? "unix:" + (dir / "control.sock").string()
                                  : "nats://127.0.0.1:" + std::to_string(port);
  pid_t server = StartNatsServer(nats_server, port);
  if (server < 0) Die("nats-server did not start");
  auto bus = OpenBus(url, {.may_host = true});
  if (!bus.ok()) Die(bus.status().message());
  Peers peers(dir, url, 0);  // flat out: the rate is the programs' throughput
  std::unique_ptr<LiveSession> session = Install(**bus, 100 * kMs);
  std::vector<double> noise, during, after;
  std::vector<double> resumed_ms, per_cpu;
  auto total = [](const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x;
    return s;
  };
  for (int round = 0; round < outages; ++round) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double up1 = total(peers.Rates(2000));
    const auto [machine0, self0] = MachineAndSelfCpuMs();
    const double cpu0 = peers.AgentCpuMs(), firing0 = peers.FiringCpuMs();
    const double up2 = total(peers.Rates(2000));
    const double cpu1 = peers.AgentCpuMs(), firing1 = peers.FiringCpuMs();
    const auto [machine1, self1] = MachineAndSelfCpuMs();
    ReapProcess(server, SIGKILL);
    const double down = total(peers.Rates(2000));
    const double cpu2 = peers.AgentCpuMs(), firing2 = peers.FiringCpuMs();
    const auto [machine2, self2] = MachineAndSelfCpuMs();
    // Firings per ms of the firing threads' CPU: whether a firing costs more while down.
    per_cpu.push_back((down / (firing2 - firing1)) / (up2 / (firing1 - firing0)));
    server = StartNatsServer(nats_server, port);
    if (server < 0) Die("nats-server did not start again");
    const int64_t restarted = WallNs();
    (void)session->TakeComplete(restarted);
    int64_t back = 0;
    WaitUntil(
        [&] {
          for (const query::QueryResult& r : session->TakeComplete(WallNs())) {
            if (!r.rows.empty() && r.rows[0].interval_start >= restarted &&
                r.rows.size() == kPeers && back == 0) {
              back = WallNs();
            }
          }
          return back != 0;
        },
        20000);
    const double up3 = total(peers.Rates(2000));
    noise.push_back(up2 / up1);
    during.push_back(down / up2);
    after.push_back(up3 / up2);
    resumed_ms.push_back(back == 0 ? -1 : double(back - restarted) / kMs);
    fmt::print(
        "    round {}: firings/s of the three programs {:.0f} and {:.0f} up, {:.0f} down, "
        "{:.0f} after; their agents' and buses' threads used {:.0f} ms of CPU in the 2 s up, "
        "{:.0f} ms in the 2 s down; the firing threads {:.0f} ms up, {:.0f} ms down; "
        "the machine {:.0f} ms up, {:.0f} ms down, of which the front end {:.0f} and {:.0f}; "
        "first whole interval back {:.0f} ms after the restart\n",
        round + 1, up1, up2, down, up3, cpu1 - cpu0, cpu2 - cpu1, firing1 - firing0,
        firing2 - firing1, machine1 - machine0, machine2 - machine1, self1 - self0, self2 - self1,
        resumed_ms.back());
  }
  AgentDrops lost = session->lost();
  (void)session->Finish(5000);
  fmt::print(
      "{}, 3 programs firing flat out, interval 100 ms, {} outages of 2 s:\n"
      "    rate down / up: median {:.3f} (each: {:.3f}); up / up (noise): median {:.3f} (each: "
      "{:.3f});"
      " after / up: median {:.3f}\n"
      "    firings per CPU second of the firing threads, down / up: median {:.3f} (each: {:.3f})\n"
      "    agents counted {} partial results unsent, {} bus messages dropped; {} late\n",
      control ? "control: embedded bus, an unused nats-server killed" : "nats outage", outages,
      Percentile(during, 0.5), fmt::join(during, " "), Percentile(noise, 0.5),
      fmt::join(noise, " "), Percentile(after, 0.5), Percentile(per_cpu, 0.5),
      fmt::join(per_cpu, " "), lost.partials, lost.bus, session->late());
  session.reset();
  ReapProcess(server, SIGKILL);
}

}  // namespace
}  // namespace weft::pivot

int main(int argc, char** argv) {
  using namespace weft::pivot;
  if (argc >= 5 && std::string(argv[1]) == "--peer") {
    return RunAgentPeer(argv[2], std::strtoll(argv[3], nullptr, 10),
                        std::strtoll(argv[4], nullptr, 10), 0);
  }
  CLI::App app{"live queries end to end: three programs with agents, a front end, a bus"};
  double seconds = 10;
  int outages = 3;
  bool latency = true, control = true;
  std::string nats_server = NATS_SERVER;
  app.add_option("--seconds", seconds, "per transport and interval");
  app.add_option("--outages", outages, "nats-server kills");
  app.add_option("--nats-server", nats_server);
  app.add_option("--latency", latency, "measure the latency (else only the outages)");
  app.add_option("--control", control, "also kill a nats-server the programs do not use");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const fs::path dir =
      fs::temp_directory_path() / ("weft-pivot-agents-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  if (latency) {
    const std::string url = "unix:" + (dir / "bus.sock").string();
    auto bus = OpenBus(url, {.may_host = true});
    if (!bus.ok()) Die(bus.status().message());
    Peers peers(dir, url, 1000);
    MeasureLatency(**bus, "unix", 1000 * kMs, seconds);
    MeasureLatency(**bus, "unix", 100 * kMs, seconds);
  }
  if (!fs::exists(nats_server)) {
    fmt::print("nats: {} not found, skipped\n", nats_server);
  } else if (latency) {
    const int port = PickFreeTcpPort();
    pid_t server = StartNatsServer(nats_server, port);
    if (server < 0) Die("nats-server did not start");
    {
      const std::string url = "nats://127.0.0.1:" + std::to_string(port);
      auto bus = OpenBus(url);
      if (!bus.ok()) Die(bus.status().message());
      Peers peers(dir, url, 1000);
      MeasureLatency(**bus, "nats", 1000 * kMs, seconds);
      MeasureLatency(**bus, "nats", 100 * kMs, seconds);
    }
    ReapProcess(server, SIGKILL);
  }
  if (fs::exists(nats_server) && outages > 0) {
    MeasureOutages(dir, nats_server, outages, false);
    if (control) MeasureOutages(dir, nats_server, outages, true);
  }
  fs::remove_all(dir);
  return 0;
}
