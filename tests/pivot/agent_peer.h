// An instrumented program for the agent tests and bench/pivot_agents_bench: it starts its
// agent with StartAgentFromEnvironment (WEFT_PIVOT_BUS) and fires a tracepoint in a loop at
// a known rate, counting its firings in memory it shares with the parent, which steers it
// through the same memory:
//
//   RunAgentPeer(STATS_FILE, PEER, PERIOD_US, FORK_EVERY)
//       waits until stats->phase is kFire, then fires Peer.Tick(peer, seq) every
//       PERIOD_US microseconds (0: as fast as it can, for throughput) until the phase is
//       kStop; every FORK_EVERY-th firing (0: never) it forks a child that fires
//       Peer.Child(peer, seq) kChildFirings times and leaves with _exit, as a fork model's
//       child serving one request does, and waits for it. Then it sets stats->stopped and
//       sleeps until SIGTERM.
//
// A firing's seq counts from 0 with no gaps, so a query's COUNT, MIN(seq) and MAX(seq)
// say exactly which firings it saw.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "weft/tracepoint.h"

namespace weft::pivot {

inline constexpr int kChildFirings = 3;

// Lives in a file both processes map MAP_SHARED.
struct AgentPeerStats {
  enum Phase : int { kWait = 0, kFire = 1, kStop = 2 };
  std::atomic<int> phase{kWait};      // set by the parent
  std::atomic<int> stopped{0};        // set by the peer once it fires no more
  std::atomic<uint64_t> firings{0};   // Peer.Tick firings so far
  std::atomic<uint64_t> children{0};  // forked children reaped
  std::atomic<uint64_t> child_firings{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Maps the stats file (created and sized if need be); nullptr on failure.
inline AgentPeerStats* MapAgentPeerStats(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, sizeof(AgentPeerStats)) != 0) {
    close(fd);
    return nullptr;
  }
  void* map = mmap(nullptr, sizeof(AgentPeerStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return map == MAP_FAILED ? nullptr : static_cast<AgentPeerStats*>(map);
}

inline int RunAgentPeer(const std::string& stats_path, int64_t peer, int64_t period_us,
                        uint64_t fork_every) {
  static WEFT_TRACEPOINT(kTick, "Peer.Tick", "peer", "seq");
  static WEFT_TRACEPOINT(kChild, "Peer.Child", "peer", "seq");
  AgentPeerStats* stats = MapAgentPeerStats(stats_path);
  if (stats == nullptr) {
    std::fprintf(stderr, "agent peer: cannot map %s\n", stats_path.c_str());
    return 1;
  }
  if (!StartAgentFromEnvironment("peer" + std::to_string(peer))) return 1;
  while (stats->phase.load() == AgentPeerStats::kWait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto next = std::chrono::steady_clock::now();
  for (uint64_t seq = 0; stats->phase.load(std::memory_order_relaxed) == AgentPeerStats::kFire;
       ++seq) {
    kTick.Fire(peer, int64_t(seq));
    stats->firings.store(seq + 1, std::memory_order_relaxed);
    if (fork_every > 0 && seq % fork_every == fork_every - 1) {
      uint64_t first = stats->child_firings.load();
      pid_t child = fork();
      if (child == 0) {
        for (int i = 0; i < kChildFirings; ++i) kChild.Fire(peer, int64_t(first + i));
        _exit(0);
      }
      if (child > 0) {
        waitpid(child, nullptr, 0);
        stats->children.fetch_add(1);
        stats->child_firings.fetch_add(kChildFirings);
      }
    }
    if (period_us > 0) {
      // A stalled loop does not catch up afterwards: it keeps its rate.
      next =
          std::max(next + std::chrono::microseconds(period_us), std::chrono::steady_clock::now());
      std::this_thread::sleep_until(next);
    }
  }
  stats->stopped.store(1);
  while (true) pause();  // until SIGTERM, with the agent still up to send final partials
}

}  // namespace weft::pivot
