// The sniffer loss model of Project 5 §7.5.5: a capture queue of finite length served at a
// peak capture rate; what overflows the queue is lost, so losses come in bursts.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "trace/trace.h"

namespace weft {

struct DropOptions {
  double rate = 0;      // peak capture rate, messages per second (> 0)
  uint32_t queue = 64;  // messages the queue holds, the one being captured included (>= 1)
};

struct DropSummary {
  uint64_t messages = 0;  // in the input
  uint64_t dropped = 0;
  uint64_t paths = 0;       // ground-truth path instances in the input
  uint64_t paths_lost = 0;  // of those, instances that lost at least one message
};

// Messages arrive at their timestamps (send time, else receive time) in trace order. The
// sniffer captures one message every 1/rate seconds (rounded to a nanosecond), first in
// first out; a message that arrives while `queue` messages are waiting or being captured
// is dropped. A path instance that lost any message no longer has a true complete path:
// path= and parent= are cleared on all its surviving messages.
Result<Trace> DropMessages(const Trace& trace, const DropOptions& options,
                           DropSummary* summary = nullptr);

// "dropped 12 of 2000 messages (0.60%); 9 of 220 path instances lost a message"
std::string FormatDropSummary(const DropSummary& summary);

}  // namespace weft
