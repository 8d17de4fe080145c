// The testbed's load client. Closed loop: `concurrency` sessions each send a request to the
// entry tier, await its reply, think, and repeat until the duration ends or Stop() is
// called. Open loop (rate > 0): requests arrive as a Poisson process at `rate` per second,
// whether or not earlier ones were answered, and `concurrency` senders take them in
// arrival order. The client is a node ("client") with its own truth log.
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
  double rate = 0;  // requests per second of an open loop; 0: closed loop
  // Closed loop: the sessions together start this many requests (a pipelined batch may
  // overrun it), then stop; the duration still bounds the run. 0: no limit. With a limit,
  // each session draws its request types from the topology's seed, not the clock. A fixed amount of
  // work, for counting a request's instructions (bench/pivot_callgrind).
  uint64_t requests = 0;
  // Open loop: arrivals beyond this many requests waiting or in flight are dropped, so a
  // stalled system cannot make the client queue without bound.
  uint32_t max_outstanding = 1024;
  std::string truth_dir;  // empty: no truth log
  // HTTP: each request carries "X-Request-Id: <32 random hex digits>", as a client or an
  // edge proxy that tags requests would (a witness for paths through untraced proxies,
  // docs/precise.md). Drawn at random, not from the truth ids.
  bool request_id_header = false;
  // A serialized Pivot baggage (pivot/baggage.h) every request carries from the client;
  // empty: none. Only bench/pivot_testbed_overhead sets it, to measure a large baggage.
  std::string baggage;
  const std::atomic<bool>* stop = nullptr;  // ends the run early when set
};

struct LoadStats {
  uint64_t sent = 0;     // requests started
  uint64_t ok = 0;       // answered with a reply
  uint64_t errors = 0;   // answered with an error reply
  uint64_t failed = 0;   // no answer: connection refused, reset or timed out, or dropped
  uint64_t dropped = 0;  // open loop: never sent, over max_outstanding or too late
  TimeNs elapsed = 0;
  // Of requests answered ok; in open loop from the arrival (scheduled send) time, so time
  // spent waiting for a sender counts (no coordinated omission).
  LatencyHistogram latency;
  double Throughput() const { return elapsed > 0 ? double(ok) * kSecond / double(elapsed) : 0; }
  // Adds the counts and latencies of one session or sender (not `elapsed`).
  void Add(const LoadStats& other) {
    sent += other.sent;
    ok += other.ok;
    errors += other.errors;
    failed += other.failed;
    dropped += other.dropped;
    latency.Merge(other.latency);
  }
};

std::string FormatLoadStats(const LoadStats& stats);

Result<LoadStats> RunLoad(const Topology& topology, const LoadOptions& options);

}  // namespace weft::testbed
