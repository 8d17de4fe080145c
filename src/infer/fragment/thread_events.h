// fragment's input (fragment.h): every traced thread's inputs and outputs, the process
// links between threads, and the connects and accepts that opened calls' connections, in
// the order the forward scan of BorderPatrol §5.5 takes them.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "core/id.h"
#include "core/status.h"
#include "trace/trace.h"

namespace weft {

// One input or output of a traced thread, a process link (fork, exec, thread) from one, or the
// connect that opened the connection a call is the first message on, or the accept that
// took in the connection a call is the first message read on.
struct ThreadEvent {
  // At equal times: an accept, the first read of a call read in several (kFirstRead: one
  // read may end one message and begin the next, which is then the later input), a reply
  // read, then a hand-off, fork or connect it led to, then the call it caused. A hand-off
  // is two steps: the producer lets go (kHandOver), later the consumer takes over
  // (kTakeOver).
  enum class Step : uint8_t {
    kAccept,
    kFirstRead,
    kReceive,
    kHandOver,
    kTakeOver,
    kProcessLink,
    kConnect,
    kSend
  };

  ClockId clock;  // nodes joined by process links run on one host: one time order
  uint32_t node;
  ThreadId thread;
  TimeNs time;
  Step step;
  uint32_t message;  // for a process link, the link's index
  auto Key() const { return std::tie(clock, time, step, node, thread, message); }
};

// Every input and output of a traced thread, every process link from one, and the
// connect and accept that opened a call's connection, sorted per clock in time order: a
// RETURN's parent (its CALL's parent) is settled at the node that sent the CALL before the
// RETURN comes back to it. An error if no message names its threads.
Result<std::vector<ThreadEvent>> CollectThreadEvents(const Trace& trace);

}  // namespace weft
