// What reconcile takes from the process tree a capture saw (fork, exec): the date of a
// forked child's inherited connection ends, and the trace's process links (trace.h).
// Internal to reconcile.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "capture/event_log.h"
#include "core/time.h"
#include "reconcile/connection_table.h"
#include "reconcile/reconcile.h"
#include "trace/trace.h"

namespace weft::reconcile {

// Dates each end a forked child inherited from its parent's fork call (processes.cc says why).
void DateInheritedEndsFromFork(std::span<const capture::EventLog> logs,
                               const BootOffsets& boot_offsets, std::vector<ConnectionEnd>& ends);

// Adds a process link per thread of each traced child (fork) or next image (exec), and one
// per thread created with pthread_create, and one per hand-off between threads of a process
// (handoffs.h), naming traced threads with `node_of`, and counts them in `summary`.
void AddProcessLinks(std::span<const capture::EventLog> logs, const BootOffsets& boot_offsets,
                     const std::function<NodeId(uint32_t log, int32_t tid)>& node_of,
                     TraceBuilder& builder, ReconcileSummary& summary);

}  // namespace weft::reconcile
