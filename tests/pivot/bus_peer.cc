// A process at the other end of the bus, for bus_processes_test and pivot_bus_bench:
//
//   pivot_bus_peer publish URL STATS_FILE [MAX_QUEUED_MESSAGES MAX_QUEUED_BYTES]
//       publishes "SEQ SEND_NS" (CLOCK_MONOTONIC) on weft.pivot.results.PID every 100 ms
//       until SIGTERM, as an agent would; keeps its loop and bus counters in STATS_FILE
//       (PeerStats, shared memory) so that the parent can read them while it runs
//   pivot_bus_peer hub PATH
//       hosts the embedded bus at PATH until SIGTERM or SIGKILL
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pivot/bus.h"
#include "pivot/bus_peer.h"

namespace {

volatile std::sig_atomic_t stop = 0;
void OnTerm(int) { stop = 1; }

int Fail(const std::string& why) {
  std::fprintf(stderr, "pivot_bus_peer: %s\n", why.c_str());
  return 1;
}

int Publish(int argc, char** argv) {
  using namespace weft::pivot;
  OpenBusOptions options;
  if (argc >= 6) {
    options.max_queued_messages = std::strtoull(argv[4], nullptr, 10);
    options.max_queued_bytes = std::strtoull(argv[5], nullptr, 10);
  }
  int fd = open(argv[3], O_RDWR | O_CLOEXEC);
  if (fd < 0) return Fail(std::string("cannot open ") + argv[3]);
  void* map = mmap(nullptr, sizeof(PeerStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return Fail("cannot map the stats file");
  auto* stats = static_cast<PeerStats*>(map);
  auto bus = OpenBus(argv[2], options);
  if (!bus.ok()) return Fail(bus.status().message());
  std::string subject = "weft.pivot.results." + std::to_string(getpid());
  PublishEveryInterval(bus->get(), subject, stats, &stop);
  return 0;
}

int Hub(char** argv) {
  auto bus = weft::pivot::OpenBus(std::string("unix:") + argv[2], {.may_host = true});
  if (!bus.ok()) return Fail(bus.status().message());
  while (!stop) pause();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGTERM, OnTerm);
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "publish" && argc >= 4) return Publish(argc, argv);
  if (mode == "hub" && argc == 3) return Hub(argv);
  return Fail("usage: pivot_bus_peer publish URL STATS_FILE [MSGS BYTES] | hub PATH");
}
