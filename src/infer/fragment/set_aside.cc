#include "infer/fragment/set_aside.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace weft {

SetAsideRequests::Content SetAsideRequests::ContentOf(MessageId m) const {
  Content content = fields_.Of(m);
  content[ForwardedFields::kRequestId] = content[ForwardedFields::kTraceparent] =
      content[ForwardedFields::kDnsId] = StringId();
  return content;
}

bool SetAsideRequests::Known(const Content& content) {
  return std::any_of(content.begin(), content.end(), [](StringId v) { return v.valid(); });
}

SetAsideRequests::SetAsideRequests(const Trace& trace, std::span<const MessageId> call_of,
                                   const std::vector<bool>& answered,
                                   const std::vector<bool>& acted_on)
    : trace_(trace),
      c_(trace.columns()),
      call_of_(call_of),
      answered_(answered),
      acted_on_(acted_on),
      fields_(trace),
      answer_sent_(trace.size(), kNoTime),
      return_read_(trace.size(), kNoTime) {
  for (size_t i = 0; i < trace.size(); ++i) {
    if (const MessageId call = call_of_[i]; call.valid()) {
      answer_sent_[call.value()] = c_.send_time[i];
      return_read_[call.value()] = c_.recv_time[i];
    }
  }
}

// A request its thread read and then read another input after, before acting on it: the
// program may have set it aside (pgbouncer's client waiting for a free server
// connection, haproxy's request queued for a later turn) and forward it in another
// request's turn. Or (`shared`) a request that one read brought with a later one, whose
// fragment the work of both falls in. Kept per node, oldest first, until it is acted on
// or answered.
void SetAsideRequests::Add(uint32_t node, MessageId request, bool shared) {
  const Content content = ContentOf(request);
  if (!Known(content)) return;
  std::vector<Waiting>& waiting = set_aside_[node];
  if (std::any_of(waiting.begin(), waiting.end(),
                  [&](const Waiting& w) { return w.request == request; }))
    return;  // set aside already (read with another, then followed by another input)
  if (waiting.size() == kMaxSetAside) waiting.erase(waiting.begin());
  waiting.push_back({request, shared, content});
}

// A call that a thread sends with the content of a request waiting at its node is that
// request forwarded. Among several with the same content (those waiting, and the one it
// would be placed in if that is not answered yet) the first read is taken, as a queue
// served first come would, or a loop working through what it read in order: a guess,
// counted. (Taking the one it would be placed in, the latest read, got squid without
// isolation 31-33% of its trees; first come, all of them.) But not a request answered
// before the call's reply came back: a request is answered after the calls made for it
// return (the nesting of Project 5 §5.1), so it cannot be the one forwarded. On a
// one-sender node ReorderByReplies may give the forward to another after the scan.
MessageId SetAsideRequests::Follow(uint32_t node, MessageId call, MessageId placed, bool one_sender,
                                   bool* followed) {
  auto it = set_aside_.find(node);
  if (it == set_aside_.end()) return placed;
  std::vector<Waiting>& waiting = it->second;
  std::erase_if(waiting, [&](const Waiting& w) { return Done(w.request); });
  if (waiting.empty()) {
    set_aside_.erase(it);
    return placed;
  }
  const Content content = ContentOf(call);
  if (!Known(content)) return placed;
  const TimeNs back = return_read_[call.value()];
  auto nests = [&](MessageId request) {
    const TimeNs answered = answer_sent_[request.value()];
    return back == kNoTime || answered == kNoTime || answered >= back;
  };
  auto same = [&](const Waiting& w) { return w.content == content; };
  auto could_be = [&](const Waiting& w) { return same(w) && nests(w.request); };
  auto first = std::find_if(waiting.begin(), waiting.end(), same);
  if (first == waiting.end()) return placed;
  auto match = std::find_if(first, waiting.end(), could_be);
  if (match == waiting.end()) match = first;  // each answered before the call returned
  const bool placed_same = placed.valid() && placed != match->request &&
                           !answered_[placed.value()] && nests(placed) &&
                           ContentOf(placed) == content;
  set_aside_guessed_ += placed_same || std::any_of(match + 1, waiting.end(), could_be);
  ++(match->shared ? shared_read_found_ : set_aside_found_);
  // (See ReorderByReplies.)
  (one_sender ? following_nodes_ : following_threads_).insert(node);
  const MessageId request = match->request;
  waiting.erase(match);
  *followed = true;
  return request;
}

// Where forwards were followed to requests by content (Follow), the order of the
// replies gives each forward its request after the scan, per node where one thread
// sends all of its messages, else per thread (a transaction stays on the thread that
// read it: Traffic Server's event threads, haproxy's): a request's answer goes with the
// oldest forward with its content whose reply began to arrive before the answer was
// sent, that was sent after the request began to be read and has gone with no answer
// yet. A loop answers a request when the reply its task waited for is read, in the order
// the replies come (every answer of aiohttp, Tornado and uvicorn on asyncio), but
// forwards when the task gets a pool's connection or a resolved address, in no order the
// trace shows (uvicorn with httpx forwarded 37% first come, Tornado 93-98%). Still a
// guess where several replies wait (set_aside_guessed_ counted the forwards' first-come
// choices); forwards whose request changed are counted. Returns the forwards it gave.
absl::flat_hash_set<uint32_t> SetAsideRequests::ReorderByReplies(std::vector<MessageId>& parent) {
  if (following_nodes_.empty() && following_threads_.empty()) return {};
  struct ReplyEvent {
    TimeNs time;
    bool answer;    // the node answered `call`; else a reply to `call` began to arrive
    uint32_t call;  // a request the node read, or a forward it sent
    bool operator<(const ReplyEvent& o) const {
      return std::tie(time, answer, call) < std::tie(o.time, o.answer, o.call);
    }
  };
  // Whose replies and answers are matched: (node, no thread) or (node, thread).
  auto key = [&](uint32_t node, ThreadId thread) -> std::optional<Thread> {
    if (following_nodes_.contains(node)) return Thread{node, ThreadId()};
    if (following_threads_.contains(node) && thread.valid()) return Thread{node, thread};
    return std::nullopt;
  };
  absl::flat_hash_map<Thread, std::vector<ReplyEvent>> timelines;
  for (size_t i = 0; i < trace_.size(); ++i) {
    const MessageId call = call_of_[i];
    if (!call.valid()) continue;
    const auto to = c_.recv_time[i] != kNoTime ? key(c_.receiver[i].value(), c_.receiver_thread[i])
                                               : std::nullopt;
    const auto from =
        c_.send_time[i] != kNoTime ? key(c_.sender[i].value(), c_.sender_thread[i]) : std::nullopt;
    if (!(to || from) || !Known(ContentOf(call))) continue;
    if (to) {
      const TimeNs first = c_.first_read_time[i];
      timelines[*to].push_back({first != kNoTime ? first : c_.recv_time[i], false, call.value()});
    }
    if (from) timelines[*from].push_back({c_.send_time[i], true, call.value()});
  }
  std::vector<std::pair<uint32_t, MessageId>> given;  // (forward, request)
  for (auto& [whose, events] : timelines) {
    std::sort(events.begin(), events.end());
    std::vector<uint32_t> replied;  // forwards whose reply came, oldest first
    for (const ReplyEvent& e : events) {
      if (!e.answer) {
        if (replied.size() == kMaxSetAside) replied.erase(replied.begin());
        replied.push_back(e.call);
        continue;
      }
      const Content content = ContentOf(MessageId(e.call));
      // (From its first read: a proxy streams a request's head on before its body is in.)
      const TimeNs first = c_.first_read_time[e.call];
      const TimeNs read = first != kNoTime ? first : c_.recv_time[e.call];
      auto forward = std::find_if(replied.begin(), replied.end(), [&](uint32_t f) {
        return c_.send_time[f] >= read && ContentOf(MessageId(f)) == content;
      });
      if (forward == replied.end()) continue;
      given.emplace_back(*forward, MessageId(e.call));
      replied.erase(forward);
    }
  }
  absl::flat_hash_set<uint32_t> forwards;
  for (const auto& [forward, request] : given) {
    set_aside_reordered_ += parent[forward] != request;
    parent[forward] = request;
    forwards.insert(forward);
  }
  return forwards;
}

bool SetAsideRequests::AnyWaiting(uint32_t node) const {
  auto it = set_aside_.find(node);
  return it != set_aside_.end() && std::any_of(it->second.begin(), it->second.end(),
                                               [&](const Waiting& w) { return !Done(w.request); });
}

}  // namespace weft
