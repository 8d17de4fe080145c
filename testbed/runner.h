// Starts a whole topology on loopback: binds every server's port in this process (port 0
// gets a free one from the kernel, so no port is ever guessed), forks one process per
// server, runs the load client, and stops every server, by SIGTERM then SIGKILL, before
// returning, on success and on error alike.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "testbed/client.h"
#include "testbed/topology.h"

namespace weft::testbed {

struct RunOptions {
  TimeNs duration = 10 * kSecond;
  uint32_t concurrency = 32;
  double rate = 0;        // open-loop requests per second; 0: closed loop (see LoadOptions)
  uint64_t requests = 0;  // closed loop: stop after this many (LoadOptions::requests)
  uint32_t max_outstanding = 1024;
  std::string out_dir;  // truth logs (<node>.truth) and server stderr (<node>.log)
  std::string baggage;  // LoadOptions::baggage
  const std::atomic<bool>* stop = nullptr;
  // Failure injection for tests: SIGKILL the server named `kill_server` after `kill_after`.
  std::string kill_server;
  TimeNs kill_after = 0;
  // Runs on its own thread while the load runs, with every port bound (tests use it to
  // send malformed frames and resets to the servers).
  std::function<void(const Topology&)> during;
  // Run in this process once every server is started, before the load begins, and once the
  // load and the servers' last work are done, before they are stopped (tests install live
  // queries in the servers' agents, then collect their final results).
  std::function<void(const Topology&)> before_load;
  std::function<void(const Topology&)> after_load;
};

struct RunReport {
  LoadStats load;
  Topology topology;  // with the ports that were bound
  // Each server's process id: a capture of the run names processes by pid
  // (weft reconcile --nodes process), and every server is the same program.
  std::vector<std::pair<std::string, int>> server_pids;
};

// A socket bound to 127.0.0.1:port (0: a free port), listening unless `udp`; `bound` gets
// the port.
Result<int> BindLoopback(uint16_t port, bool udp, uint16_t* bound);

// Must be called while the process has one thread: it forks.
Result<RunReport> RunTestbed(Topology topology, const RunOptions& options);

}  // namespace weft::testbed
