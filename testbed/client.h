// The testbed's closed-loop load client: `concurrency` sessions each send a request to the
// entry tier, await its reply, think, and repeat until the duration ends or Stop() is
// called. The client is a node ("client") with its own truth log.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/histogram.h"
#include "core/status.h"
#include "testbed/topology.h"

namespace weft::testbed {

struct LoadOptions {
  TimeNs duration = 10 * kSecond;
  uint32_t concurrency = 1;
  std::string truth_dir;  // empty: no truth log
  const std::atomic<bool>* stop = nullptr;  // ends the run early when set
};

struct LoadStats {
  uint64_t sent = 0;       // requests started
  uint64_t ok = 0;         // answered with a reply
  uint64_t errors = 0;     // answered with an error reply
  uint64_t failed = 0;     // no answer: connection refused, reset or timed out
  TimeNs elapsed = 0;
  LatencyHistogram latency;  // of requests answered ok
  double Throughput() const { return elapsed > 0 ? double(ok) * kSecond / double(elapsed) : 0; }
};

std::string FormatLoadStats(const LoadStats& stats);

Result<LoadStats> RunLoad(const Topology& topology, const LoadOptions& options);

}  // namespace weft::testbed
