// The single-threaded event-loop server (SPED, BorderPatrol's case): one thread, non-blocking
// sockets and epoll, many requests in flight at once, service times as timers.
#pragma once

#include "core/status.h"
#include "testbed/topology.h"
#include "testbed/wire.h"

namespace weft::testbed {

// Serves until the process is killed; `log` must live as long. Returns only on an error:
// at setup, or when epoll or the listening socket fails for good.
Status RunEventLoop(const Topology& topology, int tier, int index, int listen_fd, TruthLog& log);

}  // namespace weft::testbed
