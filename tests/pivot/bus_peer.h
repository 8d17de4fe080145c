// What the bus tests and pivot_bus_bench share about a publishing peer process: the
// message it sends, its rate, and the counters it leaves in shared memory.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "pivot/bus.h"

namespace weft::pivot {

inline constexpr int kPeerIntervalMs = 100;

// Lives in a file both processes map MAP_SHARED.
struct PeerStats {
  std::atomic<uint64_t> iterations{0};  // loop iterations of the publisher
  std::atomic<uint64_t> published{0};   // its BusCounters
  std::atomic<uint64_t> dropped{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Publishes "SEQ SEND_NS" (CLOCK_MONOTONIC, the same clock in every process) on `subject`
// every kPeerIntervalMs until `stop`, as an agent would report a result. A stalled loop
// does not catch up afterwards: it keeps its rate, as a program's requests would.
inline void PublishEveryInterval(Bus* bus, std::string_view subject, PeerStats* stats,
                                 const volatile std::sig_atomic_t* stop) {
  auto next = std::chrono::steady_clock::now();
  for (uint64_t seq = 0; !*stop; ++seq) {
    bus->Publish(subject, std::to_string(seq) + " " + std::to_string(MonotonicNs()));
    BusCounters c = bus->counters();
    stats->published.store(c.published);
    stats->dropped.store(c.dropped);
    stats->iterations.store(seq + 1);
    next = std::max(next + std::chrono::milliseconds(kPeerIntervalMs),
                    std::chrono::steady_clock::now());
    std::this_thread::sleep_until(next);
  }
}

// Splits a peer's payload; false if it is not one.
inline bool ParsePeerMessage(std::string_view payload, uint64_t* seq, int64_t* send_ns) {
  size_t space = payload.find(' ');
  if (space == std::string_view::npos) return false;
  try {
    *seq = std::stoull(std::string(payload.substr(0, space)));
    *send_ns = std::stoll(std::string(payload.substr(space + 1)));
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace weft::pivot
