// maketrace (Project 5 §7.1.1): builds a trace by instantiating tracelets directly, not by
// simulating a system. Every message carries its ground truth: path= (one id per tracelet
// instance) and parent= (the convention of paths/path_set.h, computed per step when the
// config was parsed).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "gen/config.h"
#include "trace/trace.h"

namespace weft {

struct GenSummary {
  uint64_t messages = 0;
  uint64_t paths = 0;  // tracelet instances
  uint64_t loops = 0;  // parallel tracelet loops: sum of instances x parallelism
  TimeNs first = 0;    // time of the first message
  TimeNs last = 0;     // time of the last message
  // Time average of the number of path instances between their first and last message.
  double mean_in_flight = 0;
  // With a [network]: the clock offset of every traced node, the truth that clock offset
  // estimation is judged against.
  std::vector<std::pair<std::string, TimeNs>> clock_offsets;
};

// Generates the trace that `config` describes. Deterministic: the same config (seed
// included) gives the same trace. Without a [network] every message is sent and received
// at the same instant (no network delay), so send and receive clocks agree until `weft
// skew` shifts them; with one, messages take time, clocks differ, untraced nodes leave
// their timestamps out and messages carry endpoints.
Result<Trace> MakeTrace(const GenConfig& config, GenSummary* summary = nullptr);

// "200412 messages, 21503 paths over 500.6s; 42 loops, 10.3 paths in flight on average"
std::string FormatGenSummary(const GenSummary& summary);

}  // namespace weft
