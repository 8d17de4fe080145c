// Names the trace's nodes (reconcile.h NodeNaming): a traced process or thread by its
// host, program and ids, an untraced peer by its endpoint. Also keeps each node's clock:
// the boot (host) whose monotonic clock its times are on, for clock offset estimation.
// Internal to reconcile.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/event_log.h"
#include "reconcile/reconcile.h"
#include "trace/clock_offsets.h"
#include "trace/trace.h"

namespace weft::reconcile {

class NodeNamer {
 public:
  // `clock_of_log[i]` is the clock (boot number) of logs[i]. All three must outlive the
  // namer; nodes are interned in `builder`.
  NodeNamer(std::span<const capture::EventLog> logs, std::span<const ClockId> clock_of_log,
            NodeNaming naming, TraceBuilder& builder)
      : logs_(logs), clock_of_log_(clock_of_log), naming_(naming), builder_(builder) {}

  // Thread `tid` of the process that wrote logs[log_index] (the thread is ignored unless
  // naming by thread).
  NodeId Traced(uint32_t log_index, int32_t tid);
  // A peer that was not traced, named by its endpoint ("10.0.0.2:5432").
  NodeId Untraced(const std::string& endpoint) { return builder_.Node(endpoint); }

  // Per node of the builder, its clock, or an invalid one for an untraced peer.
  std::vector<ClockId> ClockOfNode();

 private:
  NodeId Name(uint32_t log_index, int32_t tid);
  // The program of logs[log_index] (capture::ProgramName), or, for a forked child that
  // rewrote its command line ("gunicorn: worker"), the program of the image it was
  // forked from, so that a master and its workers are one program.
  const std::string& Program(uint32_t log_index, int depth = 0);
  ClockId& ClockSlot(NodeId node);

  std::span<const capture::EventLog> logs_;
  std::span<const ClockId> clock_of_log_;
  NodeNaming naming_;
  TraceBuilder& builder_;
  std::unordered_map<uint64_t, NodeId> cache_;  // (log, tid) -> node
  std::vector<std::string> program_;            // per log, empty until asked
  std::vector<ClockId> clock_of_node_;
};

}  // namespace weft::reconcile
