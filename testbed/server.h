// One testbed server: serves one tier's request types on a listening socket in one
// threading model, calling downstream tiers as the topology's call graph says, and logs
// ground truth. Runs until the process is killed (the runner sends SIGTERM).
#pragma once

#include <string>

#include "core/status.h"
#include "testbed/topology.h"

namespace weft::testbed {

// `listen_fd` is bound and listening; `topology` has every port resolved. Returns only on
// an error: at setup, or when the listening socket fails for good (accept(2) reports it
// unusable). Server threads may still run then: the caller exits the process at once.
Status RunServer(const Topology& topology, int tier, int index, int listen_fd,
                 const std::string& truth_dir);

}  // namespace weft::testbed
