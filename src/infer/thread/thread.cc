// vPath §3.3, on reconciled messages: every message has the thread that sent it and the
// thread that received it, and receive times are the exit times of the reads (the
// completion times §3.3 had to approximate; capture logs them).
#include "infer/thread/thread.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <tuple>

#include "infer/forest.h"

namespace weft {
namespace {

// A thread of a node: (node, thread id). Thread ids are unique per host, and a node is at
// most one host, so the pair names one thread.
using ThreadKey = std::pair<uint32_t, ThreadId>;  // (node, thread)

struct Reply {
  TimeNs sent;
  MessageId request;  // the CALL it answers
};

bool HasThreads(const TraceColumns& c) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.sender_thread[i].valid() || c.receiver_thread[i].valid()) return true;
  }
  return false;
}

}  // namespace

Result<ThreadInference> InferThread(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  if (!trace.empty() && !HasThreads(c)) {
    return Status::InvalidArgument(
        "no message names its threads: the thread algorithm needs a trace reconciled from a "
        "capture "
        "(weft capture, weft reconcile)");
  }
  const std::vector<MessageId> call_of = CallsAnswered(trace);

  // The replies each thread sent, in time order (messages are in time order already).
  absl::flat_hash_map<ThreadKey, std::vector<Reply>> replies;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kReturn || !call_of[i].valid() || c.send_time[i] == kNoTime ||
        !c.sender_thread[i].valid()) {
      continue;
    }
    replies[{c.sender[i].value(), c.sender_thread[i]}].push_back({c.send_time[i], call_of[i]});
  }

  // The requests each thread read itself, by arrival. A thread that reads a request while
  // it still owes the reply to one it read before works on two at once, which vPath's
  // assumption rules out (an event loop): counted, so a user (and --algo auto) can tell.
  absl::flat_hash_map<ThreadKey, std::vector<TimeNs>> read_requests;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kCall && c.recv_time[i] != kNoTime &&
        c.receiver_thread[i].valid()) {
      read_requests[{c.receiver[i].value(), c.receiver_thread[i]}].push_back(c.recv_time[i]);
    }
  }
  for (auto& [thread, times] : read_requests) std::sort(times.begin(), times.end());
  int64_t overlapping = 0;
  for (const auto& [thread, owed] : replies) {
    auto it = read_requests.find(thread);
    if (it == read_requests.end()) continue;
    for (const Reply& r : owed) {
      const TimeNs arrived = c.recv_time[r.request.value()];
      if (arrived == kNoTime || c.receiver_thread[r.request.value()] != thread.second) continue;
      auto first = std::upper_bound(it->second.begin(), it->second.end(), arrived);
      overlapping += std::lower_bound(first, it->second.end(), r.sent) != first;
    }
  }

  // A thread that never replies but was started by another (a process link: a thread it
  // spawned, a process it forked) works for its creator's request: its calls belong where
  // the creator's would at the same time. vPath knows no such helpers; without this, calls
  // a handler fans out over threads it spawns (std::async) would each start a path.
  absl::flat_hash_map<ThreadKey, ThreadKey> creator;
  for (const ProcessLink& l : trace.process_links()) {
    creator.try_emplace(ThreadKey{l.to.value(), l.to_thread},
                        ThreadKey{l.from.value(), l.from_thread});
  }
  // The request the thread `t` (or, if it never replies, its creator, and so on up) works
  // for when it sends at `sent`: the request its next reply answers, if that arrived before.
  auto request_at = [&](ThreadKey t, TimeNs sent) {
    for (size_t hops = 0; hops <= creator.size(); ++hops) {  // bounded: links could loop
      auto it = replies.find(t);
      if (it != replies.end()) {
        const std::vector<Reply>& r = it->second;
        auto next = std::lower_bound(r.begin(), r.end(), sent,
                                     [](const Reply& a, TimeNs x) { return a.sent < x; });
        const TimeNs arrived = next == r.end() ? kNoTime : c.recv_time[next->request.value()];
        return next != r.end() && arrived != kNoTime && arrived <= sent ? next->request
                                                                        : MessageId();
      }
      auto up = creator.find(t);
      if (up == creator.end()) break;
      t = up->second;
    }
    return MessageId();
  };

  // Nodes that answer requests. A call one of their threads starts a path with came from a
  // thread that never replies and was started by none that does: a hand-off pool's or a
  // SEDA stage's worker, given the request through memory. Counted for --algo auto.
  absl::flat_hash_set<uint32_t> serving;
  for (const auto& [thread, owed] : replies) serving.insert(thread.first);

  std::vector<MessageId> parent(trace.size());
  int64_t roots = 0, unplaced_calls = 0, unanswered_returns = 0, server_roots = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn) {
      parent[i] = call_of[i];
      unanswered_returns += !call_of[i].valid();
      continue;
    }
    if (c.kind[i] != MessageKind::kCall || c.send_time[i] == kNoTime ||
        !c.sender_thread[i].valid()) {
      ++roots;  // sent by an untraced node, or not a call: starts a path
      continue;
    }
    const ThreadKey sender{c.sender[i].value(), c.sender_thread[i]};
    parent[i] = request_at(sender, c.send_time[i]);
    if (parent[i].valid()) continue;
    if (replies.contains(sender)) {
      ++unplaced_calls;  // the thread's next reply answers a later request
    } else {
      ++roots;  // a thread that never replies, nor any thread that started it: a client
      server_roots += serving.contains(c.sender[i].value());  // ... or a hand-off's worker
    }
  }

  PathSetBuilder builder(trace, "thread");
  WEFT_ASSIGN_OR_RETURN(ForestCounts forest, AddForest(trace, parent, builder));
  return ThreadInference{std::move(builder).Finish(),
                         {.instances = forest.instances,
                          .messages_in_instances = forest.messages_in_instances,
                          .root_calls = roots,
                          .calls_outside_requests = unplaced_calls,
                          .returns_without_call = unanswered_returns,
                          .overlapping_requests = overlapping,
                          .messages_in_cycles = forest.messages_in_cycles,
                          .root_calls_from_servers = server_roots}};
}

}  // namespace weft
