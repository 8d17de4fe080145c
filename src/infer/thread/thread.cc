// vPath §3.3, on reconciled messages: every message has the thread that sent it and the
// thread that received it, and receive times are the exit times of the reads (the
// completion times §3.3 had to approximate; capture logs them). A one-way message (kind
// MSG: a pipe's bytes) that a thread sends while it works for a request is that request's,
// as a call would be (weft's addition: vPath knows only calls and replies; a program that
// relays a request through a pipe to a process it spawned, ncat --exec, otherwise has its
// tree cut there).
#include "infer/thread/thread.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <fmt/format.h>

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

// Where a thread began work: a request it read (`request`), or work another thread handed
// it (`from` let go of it at `from_time`).
struct Start {
  TimeNs time;
  MessageId request;
  ThreadKey from;
  TimeNs from_time;
  bool ambiguous = false;  // a link reconcile marked as a guess
};

void SortStarts(std::vector<Start>& starts) {
  std::stable_sort(starts.begin(), starts.end(),
                   [](const Start& a, const Start& b) { return a.time < b.time; });
}

// The thread's last start at or before `at`, or null.
const Start* LatestStart(const absl::flat_hash_map<ThreadKey, std::vector<Start>>& starts,
                         ThreadKey thread, TimeNs at) {
  auto it = starts.find(thread);
  if (it == starts.end()) return nullptr;
  auto next = std::upper_bound(it->second.begin(), it->second.end(), at,
                               [](TimeNs x, const Start& s) { return x < s.time; });
  return next == it->second.begin() ? nullptr : &*(next - 1);
}

bool HasThreads(const TraceColumns& c) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.sender_thread[i].valid() || c.receiver_thread[i].valid()) return true;
  }
  return false;
}

}  // namespace

std::string DescribeUnansweredCalls(int64_t calls) {
  return fmt::format(
      "{} calls read by a traced thread were never answered (one-way messages such as a "
      "broker's publishes, or calls still open when the trace ended): what their servers did "
      "for them is in no tree",
      calls);
}

Result<ThreadInference> InferThread(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  if (!trace.empty() && !HasThreads(c)) {
    return Status::InvalidArgument(
        "no message names its threads: the thread algorithm needs a trace reconciled from a "
        "capture "
        "(weft capture, weft reconcile)");
  }
  const std::vector<MessageId> call_of = CallsAnswered(trace);

  // The replies each thread sent, in time order (messages are in time order already), and
  // per call the reply that answered it.
  absl::flat_hash_map<ThreadKey, std::vector<Reply>> replies;
  std::vector<MessageId> reply_to(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kReturn || !call_of[i].valid() || c.send_time[i] == kNoTime ||
        !c.sender_thread[i].valid()) {
      continue;
    }
    replies[{c.sender[i].value(), c.sender_thread[i]}].push_back({c.send_time[i], call_of[i]});
    reply_to[call_of[i].value()] = MessageId(uint32_t(i));
  }
  // Whether thread `t` still owes, at `at`, the reply to `request`, which it read itself:
  // it is serving that request then.
  auto owes = [&](ThreadKey t, MessageId request, TimeNs at) {
    const MessageId reply = reply_to[request.value()];
    return reply.valid() && c.sender[reply.value()].value() == t.first &&
           c.sender_thread[reply.value()] == t.second && c.send_time[reply.value()] > at;
  };

  // The requests each thread read itself, by arrival. A thread that reads a request while
  // it still owes the reply to one it read before works on two at once, which vPath's
  // assumption rules out (an event loop): counted, so a user (and --algo auto) can tell.
  absl::flat_hash_map<ThreadKey, std::vector<Start>> read_calls;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kCall && c.recv_time[i] != kNoTime &&
        c.receiver_thread[i].valid()) {
      read_calls[{c.receiver[i].value(), c.receiver_thread[i]}].push_back(
          {c.recv_time[i], MessageId(uint32_t(i)), {}, 0, false});
    }
  }
  for (auto& [thread, starts] : read_calls) SortStarts(starts);
  int64_t overlapping = 0;
  for (const auto& [thread, owed] : replies) {
    auto it = read_calls.find(thread);
    if (it == read_calls.end()) continue;
    const std::vector<Start>& read = it->second;
    for (const Reply& r : owed) {
      // From the request's first read, as request_at below counts it: a request read while
      // this one was still coming in overlaps it as much as one read after it.
      const TimeNs arrived = c.FirstReadTime(r.request.value());
      if (arrived == kNoTime || c.receiver_thread[r.request.value()] != thread.second) continue;
      // Another request read after this one began arriving and before its reply went out.
      auto later = std::upper_bound(read.begin(), read.end(), arrived,
                                    [](TimeNs x, const Start& s) { return x < s.time; });
      while (later != read.end() && later->time < r.sent && later->request == r.request) ++later;
      overlapping += later != read.end() && later->time < r.sent;
    }
  }

  // A thread that never replies but was started by another (a process link: a thread it
  // spawned, a process it forked) works for its creator's request: its calls belong where
  // the creator's would at the same time. vPath knows no such helpers; without this, calls
  // a handler fans out over threads it spawns (std::async) would each start a path.
  absl::flat_hash_map<ThreadKey, ThreadKey> creator;
  // Work a thread took over from another (HANDOFF links), by when it took it.
  absl::flat_hash_map<ThreadKey, std::vector<Start>> taken;
  for (const ProcessLink& l : trace.process_links()) {
    const ThreadKey to{l.to.value(), l.to_thread}, from{l.from.value(), l.from_thread};
    if (l.kind == ProcessLinkKind::kHandoff) {
      taken[to].push_back({l.TakenAt(), MessageId(), from, l.time, l.ambiguous});
    } else {
      creator.try_emplace(to, from);
    }
  }
  for (auto& [thread, starts] : taken) SortStarts(starts);
  // The request the thread `t` works for when it sends at `sent`. If the last thing it
  // started before was work handed to it, the request its producer worked for when it
  // handed it over, asked the same way of the producer (weft's addition: vPath's threads
  // take their requests from connections, never from each other). Otherwise the request
  // its next reply answers, if it began arriving before (vPath; weft counts from the read
  // of the request's first byte, where vPath had only its completion: a proxy that streams
  // a request on calls before its last byte is read); a thread that never replies but was
  // handed work and read requests itself (a dispatcher) works for the last request it
  // read; one that was started by another works for its creator, and so on up.
  int64_t through_handoffs = 0, through_ambiguous = 0, overruled_handoffs = 0;
  // vPath's rule: the request that thread `t`'s next reply after `sent` answers, if it began
  // arriving by then.
  auto next_reply_at = [&](ThreadKey t, TimeNs sent) {
    auto it = replies.find(t);
    if (it == replies.end()) return MessageId();
    const std::vector<Reply>& r = it->second;
    auto next = std::lower_bound(r.begin(), r.end(), sent,
                                 [](const Reply& a, TimeNs x) { return a.sent < x; });
    const TimeNs arrived = next == r.end() ? kNoTime : c.FirstReadTime(next->request.value());
    return next != r.end() && arrived != kNoTime && arrived <= sent ? next->request : MessageId();
  };
  struct Found {
    MessageId request;
    bool handed = false;   // through a hand-off
    bool guessed = false;  // through one reconcile marked as a guess
  };
  auto find_request = [&](ThreadKey t, TimeNs sent) {
    Found found;
    const size_t bound = creator.size() + taken.size() + 1;  // links could loop
    for (size_t hops = 0; hops <= bound; ++hops) {
      const Start* take = LatestStart(taken, t, sent);
      const Start* read = LatestStart(read_calls, t, sent);
      // A thread that read a request itself and still owes its reply is serving it: what it
      // took from another thread since is not work for another request (a pool's worker
      // takes work between requests) but a lock handed over, CPython's interpreter lock
      // among its threads, which capture records as a hand-off through its condition
      // variable (docs/precise.md, gunicorn).
      const bool serving = read != nullptr && owes(t, read->request, sent);
      if (take != nullptr && (read == nullptr || read->time < take->time) && !serving) {
        t = take->from;
        sent = take->from_time;
        found.handed = true;
        found.guessed = found.guessed || take->ambiguous;
        continue;
      }
      if (replies.contains(t)) {
        found.request = next_reply_at(t, sent);
      } else if (found.handed && read != nullptr) {
        found.request = read->request;
      } else if (auto up = creator.find(t); up != creator.end()) {
        t = up->second;
        continue;
      }
      break;
    }
    return found;
  };
  // A thread that answers requests itself, led through hand-offs to no request or to one
  // answered before its call went out, works for the request its own next reply answers
  // (if that began arriving before the call): an interpreter's lock passed between
  // threads is recorded as hand-offs too, and a chain of its passes can lead anywhere
  // (docs/precise.md, Puma).
  // The counts are of calls: `count` is false for a one-way message.
  auto request_at = [&](ThreadKey t, TimeNs sent, bool count) {
    const Found found = find_request(t, sent);
    if (found.handed && replies.contains(t)) {
      const MessageId reply = found.request.valid() ? reply_to[found.request.value()] : MessageId();
      const bool answered =
          !found.request.valid() || (reply.valid() && c.send_time[reply.value()] < sent);
      const MessageId own = answered ? next_reply_at(t, sent) : MessageId();
      if (own.valid()) {
        overruled_handoffs += count;
        return own;
      }
    }
    through_handoffs += count && found.handed;
    through_ambiguous += count && found.guessed;
    return found.request;
  };

  // Nodes that answer requests. A call one of their threads starts a path with came from a
  // thread that never replies and was started by none that does: a hand-off pool's or a
  // SEDA stage's worker, given the request through memory. Counted for --algo auto.
  absl::flat_hash_set<uint32_t> serving;
  for (const auto& [thread, owed] : replies) serving.insert(thread.first);

  std::vector<MessageId> parent(trace.size());
  int64_t roots = 0, unplaced_calls = 0, unanswered_returns = 0, server_roots = 0;
  std::vector<bool> answered(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn) {
      parent[i] = call_of[i];
      unanswered_returns += !call_of[i].valid();
      if (call_of[i].valid()) answered[call_of[i].value()] = true;
      continue;
    }
    if (c.send_time[i] == kNoTime || !c.sender_thread[i].valid()) {
      ++roots;  // sent by an untraced node: starts a path
      continue;
    }
    const ThreadKey sender{c.sender[i].value(), c.sender_thread[i]};
    parent[i] = request_at(sender, c.send_time[i], c.kind[i] == MessageKind::kCall);
    if (parent[i].valid()) continue;
    if (c.kind[i] == MessageKind::kMessage) {
      ++roots;  // a one-way message (a pipe's bytes) sent outside any request: its own path
      continue;
    }
    if (replies.contains(sender)) {
      ++unplaced_calls;  // the thread's next reply answers a later request
    } else {
      ++roots;  // a thread that never replies, nor any thread that started it: a client
      server_roots += serving.contains(c.sender[i].value());  // ... or a hand-off's worker
    }
  }

  int64_t never_answered = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    never_answered += c.kind[i] == MessageKind::kCall && c.receiver_thread[i].valid() &&
                      c.recv_time[i] != kNoTime && !answered[i];
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
                          .root_calls_from_servers = server_roots,
                          .calls_through_handoffs = through_handoffs,
                          .calls_through_ambiguous_handoffs = through_ambiguous,
                          .calls_handoffs_led_astray = overruled_handoffs,
                          .calls_never_answered = never_answered}};
}

}  // namespace weft
