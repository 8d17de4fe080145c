// The single-threaded event-loop server (SPED, BorderPatrol's case): one thread, non-blocking
// sockets and epoll, many requests in flight at once, service times as timers.
#pragma once

#include "testbed/topology.h"
#include "testbed/wire.h"

namespace weft::testbed {

[[noreturn]] void RunEventLoop(const Topology& topology, int tier, int index, int listen_fd,
                               TruthLog& log);

}  // namespace weft::testbed
