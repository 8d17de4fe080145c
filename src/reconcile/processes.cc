// Process lineage in reconcile (processes.h): forks date inherited ends, and forks, execs
// and thread creations become the trace's process links.
#include "reconcile/processes.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace weft::reconcile {

// A child's inherited descriptors exist from its fork on, but its log names them only once
// the child runs. A parent that closes its copy right after forking (postgres's postmaster
// closes each accepted socket as soon as the backend is forked) has often closed it by
// then, and the child's end would no longer fold into the parent's. So an end inherited by
// a forked child (first image of its pid) is dated from the parent's fork call: the latest
// fork of that pid on the same boot before the child named it. From the fork's return, not
// its entry: the kernel copies the descriptor table somewhere inside the call, so a socket
// another thread accepted during a slow fork is in the child too; dated from the entry,
// the child's copy would come before the parent's own end and take the connection from it.
void DateInheritedEndsFromFork(std::span<const capture::EventLog> logs,
                               const BootOffsets& boot_offsets, std::vector<ConnectionEnd>& ends) {
  std::map<std::pair<std::array<uint8_t, 16>, int32_t>, std::vector<TimeNs>>
      forks;  // (boot, child)
  for (const capture::EventLog& log : logs) {
    TimeNs offset = boot_offsets.at(log.header.boot_id);
    for (const capture::Event& e : log.events) {
      if (e.op == capture::EventOp::kFork && e.result > 0) {
        forks[{log.header.boot_id, e.result}].push_back(e.exit_ns + offset);
      }
    }
  }
  if (forks.empty()) return;
  for (ConnectionEnd& end : ends) {
    const capture::EventLogHeader& header = logs[end.log].header;
    if (end.opener != Opener::kUnknown || header.exec_index != 0) continue;
    auto it = forks.find({header.boot_id, header.pid});
    if (it == forks.end()) continue;
    TimeNs forked = kNoTime;
    for (TimeNs t : it->second) {
      if (t <= end.open_ns && (forked == kNoTime || t > forked)) forked = t;
    }
    if (forked != kNoTime) end.open_ns = forked;
  }
}

// Fork, exec and pthread_create as process links (trace.h; BorderPatrol §5.5: a spawned
// module's initial fragment works for the request its parent was in at the fork; weft
// treats a spawned thread alike). A fork logged with the child's pid links the forking
// thread to every thread of the child's first image; an exec that ended an image links the
// exec'ing thread to every thread of the pid's next image; threads an image created
// itself are linked only to their creators.
// Either image is the log of that pid on the same boot opened first at or after the call
// (a child opens its log at once), whose parent is the forking process (fork) or the
// exec'ing image's parent (exec): a log of a later process that reused the pid has
// another parent, as a rule. But a parent that exits at once leaves its child to init
// before the child has opened its log (ncat's handler of a client that only connected),
// so a log with another parent is taken too if it was opened within kImageStart of the
// call, which a process reusing the pid after the child ended cannot be, and, for an
// exec, has the exec index after the exec'ing image's (the log's name). A child or image
// that was not traced gets no link. Links are added after every message, so nodes
// that only links name come after the messages' nodes, and those keep their ids.
constexpr TimeNs kImageStart = 10'000'000'000;  // 10 s

void AddProcessLinks(std::span<const capture::EventLog> logs, const BootOffsets& boot_offsets,
                     const std::function<NodeId(uint32_t log, int32_t tid)>& node_of,
                     TraceBuilder& builder, ReconcileSummary& summary) {
  std::map<std::pair<std::array<uint8_t, 16>, int32_t>, std::vector<uint32_t>>
      logs_of_pid;  // (boot, pid)
  for (uint32_t i = 0; i < logs.size(); ++i)
    logs_of_pid[{logs[i].header.boot_id, logs[i].header.pid}].push_back(i);
  auto next_image = [&](const capture::EventLogHeader& from, int32_t pid, int32_t parent,
                        TimeNs after, bool exec) {
    int64_t best = -1;
    auto it = logs_of_pid.find({from.boot_id, pid});
    if (it == logs_of_pid.end()) return best;
    for (uint32_t j : it->second) {
      const capture::EventLogHeader& h = logs[j].header;
      if (h.clock_monotonic_ns < after) continue;
      if (h.parent_pid != parent && ((exec && h.exec_index != from.exec_index + 1) ||
                                     h.clock_monotonic_ns - after >= kImageStart))
        continue;
      if (best < 0 || h.clock_monotonic_ns < logs[size_t(best)].header.clock_monotonic_ns)
        best = int64_t(j);
    }
    return best;
  };
  // Threads the new image created itself (a thread record) are linked to their creator
  // below, not to the fork or exec.
  auto link_threads = [&](uint32_t from_log, const capture::Event& e, uint32_t to_log,
                          ProcessLinkKind kind) {
    std::vector<int32_t> threads, created;
    for (const capture::Event& t : logs[to_log].events) {
      if (t.tid > 0) threads.push_back(t.tid);
      if (t.op == capture::EventOp::kThread && t.result > 0) created.push_back(t.tid);
    }
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    std::sort(created.begin(), created.end());
    std::erase_if(threads, [&](int32_t tid) {
      return std::binary_search(created.begin(), created.end(), tid);
    });
    const TimeNs time = e.entry_ns + boot_offsets.at(logs[from_log].header.boot_id);
    for (int32_t tid : threads) {
      builder.AddProcessLink(ProcessLink{time, node_of(from_log, e.tid), ThreadId(uint32_t(e.tid)),
                                         node_of(to_log, tid), ThreadId(uint32_t(tid)), kind});
    }
    ++(kind == ProcessLinkKind::kFork ? summary.forks_linked : summary.execs_linked);
  };
  // A child or image that left no log ran untraced: whatever it did is missing from the
  // trace, and the user is told rather than left to wonder (docs/capture.md
  // "Permissions"). One line per log, added to what else that log lost, if anything.
  auto add_loss = [&summary](const capture::EventLog& log, const std::string& lost) {
    std::string prefix = log.path + ": ";
    auto line = std::find_if(summary.losses.begin(), summary.losses.end(),
                             [&](const std::string& l) { return l.starts_with(prefix); });
    if (line != summary.losses.end()) {
      *line += "; " + lost;
    } else {
      summary.losses.push_back(prefix + lost);
    }
  };
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const capture::EventLog& log = logs[i];
    const capture::Event* exec = nullptr;  // the last exec record: the one that succeeded
    int untraced_children = 0;
    for (const capture::Event& e : log.events) {
      if (e.op == capture::EventOp::kExec && e.result == 0) exec = &e;
      if (e.op != capture::EventOp::kFork || e.result <= 0 || e.tid <= 0) continue;
      int64_t child = next_image(log.header, e.result, log.header.pid, e.entry_ns, false);
      if (child >= 0) {
        link_threads(i, e, uint32_t(child), ProcessLinkKind::kFork);
      } else {
        ++untraced_children;
      }
    }
    if (untraced_children > 0) {
      add_loss(log, fmt::format("{} of its children left no log (not allowed to create one in "
                                "the capture directory after the parent dropped privileges: "
                                "capture with --owner USER; or a statically linked program it "
                                "spawned): their calls are missing",
                                untraced_children));
    }
    if (!log.loss.ended_by_exec || exec == nullptr || exec->tid <= 0) continue;
    int64_t image =
        next_image(log.header, log.header.pid, log.header.parent_pid, exec->entry_ns, true);
    if (image >= 0) {
      link_threads(i, *exec, uint32_t(image), ProcessLinkKind::kExec);
    } else {
      add_loss(log,
               "its exec started an image that left no log (statically linked, set-user-ID, or "
               "not allowed to create its log in the capture directory after dropping "
               "privileges: capture with --owner USER): that image's calls are missing");
    }
  }
  // A thread created with pthread_create logged its own start (the creator's call entry,
  // the creator's tid): one link from the creating thread to it, in the same log.
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const TimeNs offset = boot_offsets.at(logs[i].header.boot_id);
    for (const capture::Event& e : logs[i].events) {
      if (e.op != capture::EventOp::kThread || e.result <= 0 || e.tid <= 0) continue;
      builder.AddProcessLink(ProcessLink{e.entry_ns + offset, node_of(i, e.result),
                                         ThreadId(uint32_t(e.result)), node_of(i, e.tid),
                                         ThreadId(uint32_t(e.tid)), ProcessLinkKind::kThread});
      ++summary.threads_linked;
    }
  }
  // Work handed from thread to thread inside one process (handoffs.h).
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const TimeNs offset = boot_offsets.at(logs[i].header.boot_id);
    for (const Handoff& h : FindHandoffs(logs[i], summary.handoffs)) {
      if (h.from_tid <= 0 || h.to_tid <= 0) continue;
      builder.AddProcessLink(ProcessLink{.time = h.from_time + offset,
                                         .from = node_of(i, h.from_tid),
                                         .from_thread = ThreadId(uint32_t(h.from_tid)),
                                         .to = node_of(i, h.to_tid),
                                         .to_thread = ThreadId(uint32_t(h.to_tid)),
                                         .kind = ProcessLinkKind::kHandoff,
                                         .to_time = std::max(h.to_time, h.from_time) + offset,
                                         .ambiguous = h.ambiguous});
    }
  }
}

}  // namespace weft::reconcile
