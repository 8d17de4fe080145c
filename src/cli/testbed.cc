// weft testbed: run a real multi-tier application on loopback (testbed/, docs/testbed.md)
// and turn its truth logs into a trace with ground truth.
#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "cli/command.h"
#include "pivot/frontend.h"
#include "pivot/untraced.h"
#include "testbed/runner.h"
#include "testbed/truth.h"
#include "trace/io.h"

namespace weft::cli {
namespace {

std::atomic<bool> g_stop{false};
void StopTestbed(int) { g_stop = true; }

struct TestbedFlags {
  std::string topology, duration = "10s", out_dir, dir, output, check;
  uint32_t concurrency = 32;
  double rate = 0;
  uint32_t max_outstanding = 1024;
  uint16_t entry_port = 0;     // load: call this port instead of the entry servers' own
  bool request_id = false;     // load: HTTP requests carry X-Request-Id
  uint32_t await_queries = 0;  // run: the load waits for this many live queries
};

// --rate and --max-outstanding, shared by run and load.
Status CheckOpenLoop(const TestbedFlags& f) {
  if (!(f.rate >= 0)) return Status::InvalidArgument("--rate must not be negative");
  if (f.max_outstanding == 0) return Status::InvalidArgument("--max-outstanding must be positive");
  return Status::Ok();
}

// --await-queries N: live queries (docs/pivot.md) and a capture of the same run see the
// same requests. Before the load, waits until the agent of every server has at least N
// queries installed; after it, until every agent has none left (the front end uninstalled
// them and has their final results), so that no server is stopped with results
// unpublished. Each wait is bounded (a front end that never comes must not hang the run).
// The talk on the bus is weft's own: a capture of the run does not record it.
class LiveQueryWindow {
 public:
  LiveQueryWindow(uint32_t queries, const testbed::Topology& topo) : queries_(queries) {
    for (const testbed::Tier& tier : topo.tiers)
      for (const testbed::ServerSpec& s : tier.servers) servers_.insert(s.name);
  }

  void BeforeLoad() {
    pivot::ScopedUntraced untraced;
    Result<std::unique_ptr<pivot::Bus>> bus = pivot::OpenBus("", {});
    if (!bus.ok()) {
      fmt::print(stderr, "weft testbed run: --await-queries: {}\n", bus.status().message());
      return;
    }
    bus_ = std::move(*bus);
    fmt::print(stderr, "weft testbed run: waiting for {} live queries in {} servers on {}\n",
               queries_, servers_.size(), bus_->url());
    if (!Await([&](size_t n) { return n >= queries_; })) {
      fmt::print(stderr,
                 "weft testbed run: the servers' agents did not all have {} queries "
                 "after {} s; starting the load anyway\n",
                 queries_, kWaitSeconds);
    }
  }

  void AfterLoad() {
    if (bus_ == nullptr) return;
    pivot::ScopedUntraced untraced;
    fmt::print(stderr,
               "weft testbed run: load done; waiting for the live queries to be "
               "uninstalled\n");
    if (!Await([](size_t n) { return n == 0; }, /*until_alone=*/true)) {
      fmt::print(stderr,
                 "weft testbed run: live queries still installed after {} s; stopping "
                 "the servers\n",
                 kWaitSeconds);
    }
    bus_.reset();
  }

 private:
  static constexpr int kWaitSeconds = 60;

  // Lists the agents until every server's answers with a query count `ready` accepts.
  // `until_alone`: or until no agent answers twice in a row (the front end that hosted the
  // bus is gone, and with it anyone to publish results to).
  template <typename Ready>
  bool Await(Ready ready, bool until_alone = false) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitSeconds);
    int silent = 0;
    while (std::chrono::steady_clock::now() < end) {
      Result<std::vector<pivot::AgentDescription>> agents = pivot::ListAgents(*bus_, 200);
      std::set<std::string> done;
      if (agents.ok()) {
        for (const pivot::AgentDescription& a : *agents) {
          if (servers_.contains(a.host) && ready(a.queries.size())) done.insert(a.host);
        }
      }
      if (done.size() == servers_.size()) return true;
      silent = agents.ok() && !agents->empty() ? 0 : silent + 1;
      if (until_alone && silent >= 2) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  const uint32_t queries_;
  std::set<std::string> servers_;
  std::unique_ptr<pivot::Bus> bus_;
};

Status RunRun(const TestbedFlags& f) {
  WEFT_ASSIGN_OR_RETURN(testbed::Topology topo, testbed::LoadTopology(f.topology));
  testbed::RunOptions options;
  Result<TimeNs> d = ParseDuration(f.duration);
  if (!d.ok() || *d <= 0) return Status::InvalidArgument("--duration must be a positive duration");
  options.duration = *d;
  if (f.concurrency == 0) return Status::InvalidArgument("--concurrency must be positive");
  options.concurrency = f.concurrency;
  WEFT_RETURN_IF_ERROR(CheckOpenLoop(f));
  options.rate = f.rate;
  options.max_outstanding = f.max_outstanding;
  options.out_dir = f.out_dir;
  if (options.out_dir.empty()) {
    char tmpl[] = "/tmp/weft-testbed-XXXXXX";
    if (!mkdtemp(tmpl)) return Status::IoError("cannot make a directory under /tmp");
    options.out_dir = tmpl;
  }
  options.stop = &g_stop;
  std::unique_ptr<LiveQueryWindow> window;
  if (f.await_queries > 0) {
    window = std::make_unique<LiveQueryWindow>(f.await_queries, topo);
    options.before_load = [&](const testbed::Topology&) { window->BeforeLoad(); };
    options.after_load = [&](const testbed::Topology&) { window->AfterLoad(); };
  }
  struct sigaction sa {};
  sa.sa_handler = StopTestbed;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  WEFT_ASSIGN_OR_RETURN(testbed::RunReport report, testbed::RunTestbed(topo, options));
  fmt::print("{}\n", testbed::FormatLoadStats(report.load));
  std::string servers;
  for (const auto& [name, pid] : report.server_pids)
    servers += fmt::format("{}{} = pid {}", servers.empty() ? "" : ", ", name, pid);
  fmt::print("servers: {}\n", servers);
  fmt::print("truth logs in {} (weft testbed truth {} -o truth.weft)\n", options.out_dir,
             options.out_dir);
  return Status::Ok();
}

// The load client alone, against servers started by hand (weft-testbed-server).
Status RunLoadOnly(const TestbedFlags& f) {
  WEFT_ASSIGN_OR_RETURN(testbed::Topology topo, testbed::LoadTopology(f.topology));
  for (testbed::ServerSpec& s : topo.tiers[0].servers) {
    // A proxy in front of the entry tier (nginx in tests/capture/real_servers_test.cc):
    // the client calls it, and its truth log still names the entry server it meant.
    if (f.entry_port != 0) s.port = f.entry_port;
    if (s.port == 0) return Status::InvalidArgument("{} has no fixed port in the topology", s.name);
  }
  Result<TimeNs> d = ParseDuration(f.duration);
  if (!d.ok() || *d <= 0) return Status::InvalidArgument("--duration must be a positive duration");
  if (f.concurrency == 0) return Status::InvalidArgument("--concurrency must be positive");
  testbed::LoadOptions options;
  options.duration = *d;
  options.concurrency = f.concurrency;
  WEFT_RETURN_IF_ERROR(CheckOpenLoop(f));
  options.rate = f.rate;
  options.max_outstanding = f.max_outstanding;
  options.truth_dir = f.out_dir;
  options.request_id_header = f.request_id;
  options.stop = &g_stop;
  struct sigaction sa {};
  sa.sa_handler = StopTestbed;
  sigaction(SIGINT, &sa, nullptr);
  WEFT_ASSIGN_OR_RETURN(testbed::LoadStats stats, testbed::RunLoad(topo, options));
  fmt::print("{}\n", testbed::FormatLoadStats(stats));
  return Status::Ok();
}

Status RunTruth(const TestbedFlags& f) {
  if (f.output.empty()) return Status::InvalidArgument("give the output trace with -o FILE");
  WEFT_ASSIGN_OR_RETURN(Trace trace, testbed::BuildTruthTrace(f.dir));
  if (!f.check.empty()) {
    WEFT_ASSIGN_OR_RETURN(testbed::Topology topo, testbed::LoadTopology(f.check));
    WEFT_ASSIGN_OR_RETURN(testbed::TruthCheck c, testbed::CheckTruth(trace, topo, false));
    fmt::print(stderr, "{} requests: {} answered, {} error replies, {} match the call graph\n",
               c.requests, c.answered, c.errors, c.shaped);
    // How connections were shared: a tracer must be right with reuse and pipelining too.
    for (const testbed::ConnectionUse& u : testbed::CallsInFlight(trace)) {
      fmt::print(stderr, "{} -> {}: {} connections, up to {} calls in flight on one\n", u.caller,
                 u.callee, u.connections, u.max_in_flight);
    }
  }
  WEFT_RETURN_IF_ERROR(SaveTrace(trace, f.output));
  fmt::print(stderr, "{} messages\n", trace.size());
  return Status::Ok();
}

}  // namespace

void AddTestbedCommand(CLI::App& app, Status& result) {
  auto* cmd = app.add_subcommand("testbed", "Run a real multi-tier application on loopback");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  weft testbed run testbed/topologies/three-tier.toml --duration 10s --concurrency 32 "
      "-o run/\n"
      "  weft testbed truth run/ -o truth.weft --check testbed/topologies/three-tier.toml\n"
      "  weft infer truth.weft --algo truth -o truth.paths.json\n"
      "  weft-testbed-server fixed.toml db0 run/ & ...; weft testbed load fixed.toml -o run/\n");
  static TestbedFlags f;
  auto* run = cmd->add_subcommand("run", "Start a topology and its load client, then stop all");
  run->add_option("topology", f.topology, "Topology TOML file")->required();
  run->add_option("--duration", f.duration, "How long the client sends load (default 10s)");
  run->add_option("--concurrency", f.concurrency,
                  "Closed-loop client sessions, or open-loop senders (default 32)");
  run->add_option("--rate", f.rate,
                  "Open loop: Poisson arrivals per second (default 0: closed loop)");
  run->add_option("--max-outstanding", f.max_outstanding,
                  "Open loop: drop arrivals beyond this many waiting or in flight (default 1024)");
  run->add_option("-o,--output", f.out_dir,
                  "Directory for truth logs (default: a new one in /tmp)");
  run->add_option("--await-queries", f.await_queries,
                  "Start the load once every server has N live queries installed (weft pivot "
                  "install), and stop the servers once they are uninstalled: live results and "
                  "a capture of the run then cover the same requests");
  run->callback([&result] { result = RunRun(f); });
  auto* load = cmd->add_subcommand("load", "Only the load client, against running servers");
  load->add_option("topology", f.topology, "Topology TOML file with fixed ports")->required();
  load->add_option("--duration", f.duration, "How long to send load (default 10s)");
  load->add_option("--concurrency", f.concurrency,
                   "Closed-loop client sessions, or open-loop senders (default 32)");
  load->add_option("--rate", f.rate,
                   "Open loop: Poisson arrivals per second (default 0: closed loop)");
  load->add_option("--max-outstanding", f.max_outstanding,
                   "Open loop: drop arrivals beyond this many waiting or in flight (default 1024)");
  load->add_option("-o,--output", f.out_dir,
                   "Directory for the client's truth log (default: none)");
  load->add_option("--entry-port", f.entry_port,
                   "Send every request to 127.0.0.1:PORT (a proxy in front of the entry tier)");
  load->add_flag(
      "--request-id", f.request_id,
      "HTTP: each request carries X-Request-Id with 32 random hex digits (a witness through "
      "untraced proxies)");
  load->callback([&result] { result = RunLoadOnly(f); });
  auto* truth =
      cmd->add_subcommand("truth", "Turn a run's truth logs into a trace with ground truth");
  truth->add_option("dir", f.dir, "The run's output directory")->required();
  truth->add_option("-o,--output", f.output, "Trace to write (.weft binary, else text)");
  truth->add_option("--check", f.check, "Topology to check every tree's shape against");
  truth->callback([&result] { result = RunTruth(f); });
}

}  // namespace weft::cli
