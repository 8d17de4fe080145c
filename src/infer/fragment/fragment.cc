// BorderPatrol §5.5 over reconciled messages: a receive is the read that completed the
// message (its exit time), a send the write that began it (its entry time); one thread's
// calls never overlap, so ordering them by these times is the thread's own order. Nodes are
// scanned each in its own time order (clocks of different hosts are not compared), except
// that nodes joined by process links (a fork, an exec, a thread's creation) are scanned
// together: they run on one host, and a child's first fragment must see its parent's
// designation at the fork. fragment.h says why an inherited request also ends when it is
// answered.
#include "infer/fragment/fragment.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "infer/forest.h"
#include "infer/fragment/layer_four.h"
#include "infer/fragment/witness.h"

namespace weft {
namespace {

// At equal times: an accept, the first read of a call read in several (kFirstRead: one
// read may end one message and begin the next, which is then the later input), a reply
// read, then a hand-off, fork or connect it led to, then the call it caused. A hand-off is
// two steps: the producer lets go (kHandOver), later the consumer takes over (kTakeOver).
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

// One input or output of a traced thread, a process link (fork, exec, thread) from one, or the
// connect that opened the connection a call is the first message on, or the accept that
// took in the connection a call is the first message read on.
struct ThreadEvent {
  ClockId clock;  // nodes joined by process links run on one host: one time order
  uint32_t node;
  ThreadId thread;
  TimeNs time;
  Step step;
  uint32_t message;  // for a process link, the link's index
  auto Key() const { return std::tie(clock, time, step, node, thread, message); }
};

// Per node, the node all nodes joined to it by process links are ordered with (union-find
// over the links, whose two ends share a host's clock); a node without links is its own.
std::vector<ClockId> ClockOfNodes(const Trace& trace) {
  std::vector<uint32_t> root(trace.nodes().size());
  for (uint32_t n = 0; n < root.size(); ++n) root[n] = n;
  auto find = [&](uint32_t n) {
    while (root[n] != n) n = root[n] = root[root[n]];
    return n;
  };
  for (const ProcessLink& l : trace.process_links()) {
    uint32_t a = find(l.from.value()), b = find(l.to.value());
    root[std::max(a, b)] = std::min(a, b);
  }
  std::vector<ClockId> clock(root.size());
  for (uint32_t n = 0; n < root.size(); ++n) clock[n] = ClockId(find(n));
  return clock;
}

// A request's content, as a proxy forwards it: what ForwardedFields reads but the
// identifiers a proxy may add where the client sent none (witness.h weighs those apart),
// and the DNS id, which a forwarder replaces with one of its own (dnsmasq, unbound).
// Invalid throughout where the message carries none.
using Content = ForwardedFields::Values;
Content ContentOf(const ForwardedFields& fields, MessageId m) {
  Content content = fields.Of(m);
  content[ForwardedFields::kRequestId] = content[ForwardedFields::kTraceparent] =
      content[ForwardedFields::kDnsId] = StringId();
  return content;
}
bool Known(const Content& content) {
  return std::any_of(content.begin(), content.end(), [](StringId v) { return v.valid(); });
}

// Every input and output of a traced thread, every process link from one, and the
// connect and accept that opened a call's connection, sorted per clock in time order: a
// RETURN's parent (its CALL's parent) is settled at the node that sent the CALL before the
// RETURN comes back to it. An error if no message names its threads.
Result<std::vector<ThreadEvent>> CollectThreadEvents(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  const std::vector<ClockId> clock = ClockOfNodes(trace);
  bool threads = trace.empty();
  std::vector<ThreadEvent> events;
  events.reserve(2 * trace.size() + trace.process_links().size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const uint32_t m = uint32_t(i);
    const uint32_t sender = c.sender[i].value(), receiver = c.receiver[i].value();
    if (c.send_time[i] != kNoTime && c.sender_thread[i].valid()) {
      events.push_back({clock[sender], sender, c.sender_thread[i], c.send_time[i], Step::kSend, m});
      TimeNs connected = c.kind[i] == MessageKind::kCall ? c.connect_time[i] : kNoTime;
      if (connected != kNoTime && connected <= c.send_time[i]) {
        events.push_back({clock[sender], sender, c.sender_thread[i], connected, Step::kConnect, m});
      }
    }
    if (c.recv_time[i] != kNoTime && c.receiver_thread[i].valid()) {
      events.push_back(
          {clock[receiver], receiver, c.receiver_thread[i], c.recv_time[i], Step::kReceive, m});
      if (c.kind[i] == MessageKind::kCall && c.accept_time[i] != kNoTime) {
        events.push_back(
            {clock[receiver], receiver, c.receiver_thread[i], c.accept_time[i], Step::kAccept, m});
      }
      // A call read in several reads is an input from its first: a proxy that streams a
      // request on (tinyproxy sends the head, then reads and sends the body) calls before
      // the last. Its last read is an input again, for a loop that served another between.
      if (c.kind[i] == MessageKind::kCall && c.first_read_time[i] != kNoTime) {
        events.push_back({clock[receiver], receiver, c.receiver_thread[i], c.first_read_time[i],
                          Step::kFirstRead, m});
      }
    }
    threads = threads || c.sender_thread[i].valid() || c.receiver_thread[i].valid();
  }
  const std::span<const ProcessLink> links = trace.process_links();
  for (size_t k = 0; k < links.size(); ++k) {
    const ProcessLink& l = links[k];
    const uint32_t from = l.from.value(), to = l.to.value();
    if (l.kind != ProcessLinkKind::kHandoff) {
      events.push_back({clock[from], from, l.from_thread, l.time, Step::kProcessLink, uint32_t(k)});
      continue;
    }
    events.push_back({clock[from], from, l.from_thread, l.time, Step::kHandOver, uint32_t(k)});
    events.push_back({clock[to], to, l.to_thread, l.TakenAt(), Step::kTakeOver, uint32_t(k)});
  }
  if (!threads) {
    return Status::InvalidArgument(
        "no message names its threads: the fragment algorithm needs a trace reconciled from a "
        "capture "
        "(weft capture, weft reconcile)");
  }
  std::sort(events.begin(), events.end(),
            [](const ThreadEvent& a, const ThreadEvent& b) { return a.Key() < b.Key(); });
  return events;
}

// The forward scan of §5.5 (the rules are listed in fragment.h): sets the parent of every
// message a traced thread sent, from the request the thread was working for.
class FragmentScan {
 public:
  // `parent` (one per message) is filled in; `call_of` is CallsAnswered's.
  FragmentScan(const Trace& trace, std::span<const MessageId> call_of,
               std::vector<MessageId>& parent)
      : trace_(trace),
        c_(trace.columns()),
        call_of_(call_of),
        parent_(parent),
        fields_(trace),
        answered_(trace.size(), false),
        acted_on_(trace.size(), false),
        answer_sent_(trace.size(), kNoTime),
        return_read_(trace.size(), kNoTime) {
    // A server (a node that is called) sending a call outside every fragment had the work
    // handed to it through something capture cannot see, such as a dispatcher's queue:
    // BorderPatrol's independence assumption fails there. Counted for --algo auto.
    serves_.assign(trace.nodes().size(), false);
    for (size_t i = 0; i < trace.size(); ++i) {
      if (c_.kind[i] == MessageKind::kCall) serves_[c_.receiver[i].value()] = true;
      if (const MessageId call = call_of_[i]; call.valid()) {
        answer_sent_[call.value()] = c_.send_time[i];
        return_read_[call.value()] = c_.recv_time[i];
      }
    }
  }

  void Run(std::span<const ThreadEvent> events) {
    FindThreadsServingOneAtATime(events);
    for (const ThreadEvent& e : events) {
      TrackOwed(owing_, e);
      // (Asked before the connect or the wait counts as acting on the request read last.)
      const MessageId accepted =
          e.step == Step::kConnect ? TakeAccepted({e.node, e.thread}) : MessageId();
      const bool waits_for_its_own =
          e.step == Step::kTakeOver && unacted_.contains({e.node, e.thread});
      // Anything a thread does but read (a connect, a hand-off, a spawn, most sends) is
      // acting on the input it read last; Send says which sends are not, QueuedWork which
      // connects.
      if (e.step != Step::kReceive && e.step != Step::kFirstRead && e.step != Step::kSend &&
          e.step != Step::kAccept && !(e.step == Step::kConnect && QueuedWork(e.node)))
        unacted_.erase({e.node, e.thread});
      switch (e.step) {
        case Step::kProcessLink:
          Spawn(trace_.process_links()[e.message], {e.node, e.thread});
          break;
        case Step::kHandOver: {
          // A link that names the CALL it hands over hands that request; else the
          // producer's fragment.
          const MessageId from = trace_.process_links()[e.message].from_message;
          handed_[e.message] = from.valid() && c_.kind[from.value()] == MessageKind::kCall
                                   ? from
                                   : designation_[{e.node, e.thread}];
          break;
        }
        case Step::kTakeOver: {
          // A link that names what the consumer sent for the work gives that message its
          // request and leaves the consumer's fragment as it was. Either way the thread
          // works on the request it was handed, no more on what it accepted (a loop's
          // timer expiring for a request it read before). But a thread that read a request
          // and waits before it did anything for it waits for something that request needs
          // (V8's main thread joining its garbage collector's helpers, a worker waiting for
          // a pool's connection): it keeps the request.
          accepted_.erase({e.node, e.thread});
          const ProcessLink& l = trace_.process_links()[e.message];
          if (l.to_message.valid()) {
            sent_for_[l.to_message.value()] = handed_[e.message];
            handoffs_carrying_ += handed_[e.message].valid();
          } else if (!waits_for_its_own) {
            TakeOver(l, handed_[e.message]);
          }
          handed_.erase(e.message);
          break;
        }
        case Step::kAccept:
          accepted_[{e.node, e.thread}].push_back(MessageId(e.message));
          break;
        case Step::kConnect:
          if (const MessageId placed =
                  accepted.valid() ? accepted : designation_[{e.node, e.thread}];
              placed.valid()) {
            connected_for_[e.message] = placed;
            connected_requests_.insert(placed);
          }
          if (taken_over_.contains({e.node, e.thread})) connected_after_handoff_.insert(e.message);
          break;
        case Step::kFirstRead:
          reading_[{e.node, e.thread}].push_back(MessageId(e.message));
          Receive(e, false);
          break;
        case Step::kReceive:
          Receive(e, true);
          break;
        case Step::kSend:
          Send(e);
          break;
      }
    }
    const absl::flat_hash_set<uint32_t> reordered = ReorderByReplies();
    WeighContradictions(reordered);
    WeighPartialInputs();
  }

  int64_t outputs_without_request() const { return outputs_without_request_; }
  // (Those the order of the replies gave a request, ReorderByReplies, are not.)
  int64_t server_calls_outside() const {
    return std::count_if(server_calls_outside_.begin(), server_calls_outside_.end(),
                         [&](uint32_t m) { return !parent_[m].valid(); });
  }
  int64_t requests_spawned() const { return requests_spawned_; }
  int64_t ended_by_answer() const { return ended_by_answer_; }
  int64_t handoffs_carrying() const { return handoffs_carrying_; }
  int64_t outputs_through_ambiguous() const { return outputs_through_ambiguous_; }
  int64_t handoffs_contradicted() const { return handoffs_contradicted_; }
  int64_t contradictions_mended() const { return contradictions_mended_; }
  int64_t inputs_sharing_a_read() const { return inputs_sharing_a_read_; }
  int64_t outputs_beside_partial_inputs() const { return outputs_beside_partial_inputs_; }
  int64_t set_aside_forwards_found() const { return set_aside_found_; }
  int64_t shared_read_forwards_found() const { return shared_read_found_; }
  int64_t set_aside_forwards_guessed() const { return set_aside_guessed_; }
  int64_t set_aside_forwards_reordered() const { return set_aside_reordered_; }
  // Counted only on threads that sent something: a dispatcher, which reads requests and
  // hands them on through what capture may not see, acts where the trace does not show it
  // (server_calls_outside_fragments counts that).
  int64_t inputs_before_acting() const {
    int64_t n = 0;
    for (const auto& [thread, count] : before_acting_) n += senders_.contains(thread) ? count : 0;
    return n;
  }

 private:
  using Thread = std::pair<uint32_t, ThreadId>;  // (node, thread)

  // Per thread, the request it read and has not answered yet: `e` read or answered one.
  // True if `e` read a request while the thread owed the reply to another.
  bool TrackOwed(absl::flat_hash_map<Thread, MessageId>& owing, const ThreadEvent& e) const {
    const Thread self{e.node, e.thread};
    if (e.step == Step::kReceive && c_.kind[e.message] == MessageKind::kCall) {
      MessageId& owed = owing[self];
      const bool overlapped = owed.valid();
      owed = MessageId(e.message);
      return overlapped;
    }
    if (e.step == Step::kSend && c_.kind[e.message] == MessageKind::kReturn) {
      if (auto it = owing.find(self); it != owing.end() && it->second == call_of_[e.message])
        it->second = MessageId();
    }
    return false;
  }

  // The threads that never read a request while they owed the reply to one they had read
  // before (each answering it themselves): a thread per request or per connection. And the
  // nodes where one thread sends everything.
  void FindThreadsServingOneAtATime(std::span<const ThreadEvent> events) {
    absl::flat_hash_map<Thread, MessageId> owing;
    absl::flat_hash_set<Thread> overlapping;
    absl::flat_hash_map<uint32_t, ThreadId> sender;
    absl::flat_hash_set<uint32_t> several;
    for (const ThreadEvent& e : events) {
      if (TrackOwed(owing, e)) overlapping.insert({e.node, e.thread});
      // (A helper thread's wake-up of the loop through a pipe to itself, as Python's
      // executor threads write to asyncio's, is no message of the node's.)
      if (e.step == Step::kSend && c_.receiver[e.message] != c_.sender[e.message] &&
          sender.try_emplace(e.node, e.thread).first->second != e.thread)
        several.insert(e.node);
    }
    for (const auto& [node, thread] : sender) {
      if (!several.contains(node)) one_sender_.insert(node);
    }
    for (const auto& [thread, owed] : owing) {
      if (!overlapping.contains(thread)) one_at_a_time_.insert(thread);
    }
  }

  // §5.5: a spawned process's (thread's) initial fragment works for the request its
  // parent's thread was in at the fork, exec or thread creation.
  void Spawn(const ProcessLink& l, Thread from) {
    Inherit({l.to.value(), l.to_thread}, designation_[from]);
    requests_spawned_ += designation_[from].valid();
  }

  // A consumer takes over the request its producer worked for when it handed the work
  // over: held like an inherited one, until the consumer's own next input or the
  // request's answer. A reply it then sends to another request says the pairing was wrong
  // (a queue that is not FIFO): counted.
  void TakeOver(const ProcessLink& l, MessageId request) {
    const Thread to{l.to.value(), l.to_thread};
    // A thread on a request it read itself keeps it through a hand-off that carries none
    // (its producer worked for no request), and, where it serves one request at a time,
    // through any hand-off that does not name the request while it owes that request's
    // reply: what reaches such a thread then is a lock passed between threads that each
    // serve their own request (CPython's interpreter lock, through a condition variable:
    // uWSGI's and gunicorn's threads), not work. An event loop's thread, which reads
    // requests while it owes replies, takes what it is handed (a pool thread's
    // completion), and so does any thread a link names the request to (gRPC's).
    const bool own = designation_[to].valid() && !inherited_.contains(to);
    const bool lock_passed =
        one_at_a_time_.contains(to) && owing_[to].valid() && !l.from_message.valid();
    if (own && (!request.valid() || lock_passed)) return;
    Inherit(to, request);
    if (request.valid()) {
      taken_over_.insert(to);
      ++handoffs_carrying_;
    } else {
      taken_over_.erase(to);
    }
    if (request.valid() && l.ambiguous) {
      guessed_.insert(to);
    } else {
      guessed_.erase(to);
    }
  }

  void Inherit(Thread to, MessageId request) {
    designation_[to] = request;
    if (request.valid()) {
      inherited_[to] = request;
      heirs_[request.value()].push_back(to);
    } else {
      inherited_.erase(to);
    }
  }

  // `whole`: the read that completed the message, else a call's first read (kFirstRead),
  // which is no read of its own to count in inputs_sharing_a_read.
  void Receive(const ThreadEvent& e, bool whole) {
    const MessageKind kind = c_.kind[e.message];
    const Thread self{e.node, e.thread};
    accepted_.erase(self);  // a connect after an input is the input's work
    if (kind == MessageKind::kCall && whole) {
      if (auto partial = reading_.find(self); partial != reading_.end()) {
        std::erase(partial->second, MessageId(e.message));
        if (partial->second.empty()) reading_.erase(partial);
      }
      auto [last, fresh] = last_call_read_.try_emplace(self, e.time, MessageId(e.message));
      if (!fresh && last->second.first == e.time) {
        // The read brought another request before this one: it waits beside this one for
        // its forward (an HTTP/2 read brings the HEADERS of several streams).
        ++inputs_sharing_a_read_;
        SetAside(e.node, last->second.second, true);
      }
      last->second = {e.time, MessageId(e.message)};
    }
    if (whole) {
      // A call the thread read, then another input in a later read, with nothing done
      // between: a loop that takes several inputs before it acts on the first gives the
      // first's work to the last (BorderPatrol §3.2; one read that brought both is
      // inputs_sharing_a_read).
      auto unacted = unacted_.find(self);
      if (unacted != unacted_.end()) {
        const auto [read, request] = unacted->second;
        if (read < e.time) {
          ++before_acting_[self];
          SetAside(e.node, request, false);
        }
        unacted_.erase(unacted);
      }
      if (kind == MessageKind::kCall)
        unacted_.emplace(self, std::pair(e.time, MessageId(e.message)));
    }
    MessageId& current = designation_[self];
    if (kind == MessageKind::kReturn) {
      // Rule 1 for a reply: the request that made the call goes on. A root call's reply
      // ends its request at the node that made it.
      MessageId call = call_of_[e.message];
      current = call.valid() ? parent_[call.value()] : MessageId();
    } else {
      current = MessageId(e.message);  // rule 1: a new input starts a fragment
    }
    // The thread's own input ends its inheritance, unless it is the reply to a call made
    // for the inherited request, which goes on as before the call.
    auto held = inherited_.find(self);
    if (held != inherited_.end() && (kind != MessageKind::kReturn || held->second != current)) {
      inherited_.erase(held);
      taken_over_.erase(self);
    }
    guessed_.erase(self);
  }

  // The accepted connection a connect by `self` is for: a layer-4 proxy connects onward for
  // each client it takes up (accepts, or tries to read and finds nothing yet), before the
  // client's request comes (pen as it accepts; haproxy in tcp mode after trying the
  // client, on the thread that accepted it or on one it was handed to), so the connection
  // belongs to that client's request, not to the one the thread read last: the client taken
  // up last, since the thread's last input (Receive ends the wait). Not while the thread
  // has a request it read and has not acted on: the connect may be that request's (a loop's
  // task connecting after the loop accepted). Invalid: none waits.
  MessageId TakeAccepted(const Thread& self) {
    auto it = accepted_.find(self);
    if (it == accepted_.end() || unacted_.contains(self)) return MessageId();
    // (A request it read that nothing was placed in, nor connected for, waits too, though
    // the thread sent since: another request's call on a connection opened for it.)
    if (const MessageId current = designation_[self];
        current.valid() && c_.kind[current.value()] == MessageKind::kCall &&
        !acted_on_[current.value()] && !answered_[current.value()] &&
        !connected_requests_.contains(current))
      return MessageId();
    const MessageId latest = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) accepted_.erase(it);
    return latest;
  }

  // Whether `node`'s one sending thread has requests set aside that it has not acted on
  // yet: a loop working through a queue of its own, whose connect may be for any of them
  // (asyncio's task opening a pool connection for the oldest), not the one read last.
  bool QueuedWork(uint32_t node) {
    if (!one_sender_.contains(node)) return false;
    auto it = set_aside_.find(node);
    return it != set_aside_.end() &&
           std::any_of(it->second.begin(), it->second.end(),
                       [&](const Waiting& w) { return !Done(w.request); });
  }

  // A request set aside waits no more once an output was placed in it or it was answered.
  bool Done(MessageId request) const {
    return answered_[request.value()] || acted_on_[request.value()];
  }

  void Send(const ThreadEvent& e) {
    // Acting on the input read last, unless the output is the forward of a request set
    // aside before it by a node's only thread: a loop that queues its work (Python's
    // asyncio) forwards requests it read before and gets to the one it read last a few
    // turns later, after other inputs; that one is then set aside too (Receive), and its
    // forward followed by content, first come. Where several threads send, first come
    // is no order the program keeps (Traffic Server's two loops without isolation lost a
    // tenth of their trees to it), and any output is acting.
    const bool followed = SendFor(e);
    const Thread self{e.node, e.thread};
    if (one_sender_.contains(e.node) && (followed || AnswersAnother(self, e.message))) return;
    unacted_.erase(self);
  }

  // Whether `reply`, sent by `self`, answers a request other than the one it read last and
  // has not acted on: a loop's answer to an earlier request, not acting on the last.
  bool AnswersAnother(const Thread& self, uint32_t reply) const {
    if (c_.kind[reply] != MessageKind::kReturn) return false;
    auto unacted = unacted_.find(self);
    return unacted != unacted_.end() && call_of_[reply] != unacted->second.second;
  }

  // Places the output `e` sent; true if it is a call followed to a request set aside.
  bool SendFor(const ThreadEvent& e) {
    senders_.insert({e.node, e.thread});
    const MessageKind kind = c_.kind[e.message];
    if (kind != MessageKind::kReturn && !WakeUp(e.message)) sends_onward_.insert(e.node);
    if (kind == MessageKind::kReturn) {
      parent_[e.message] = call_of_[e.message];
      if (call_of_[e.message].valid()) answered_[call_of_[e.message].value()] = true;
      const Thread self{e.node, e.thread};
      // A reply a link named as sent for its request is explained, whatever the thread
      // was handed through a queue.
      const bool named = sent_for_.erase(e.message) > 0;
      if (!named && taken_over_.contains(self)) {
        auto held = inherited_.find(self);
        contradicted_at_[e.node] += held != inherited_.end() && call_of_[e.message].valid() &&
                                    held->second != call_of_[e.message];
      }
      EndInheritance(call_of_[e.message]);
      return false;
    }
    if (auto sent_for = sent_for_.find(e.message); sent_for != sent_for_.end()) {
      parent_[e.message] = sent_for->second;
      outputs_without_request_ += !sent_for->second.valid();
      sent_for_.erase(sent_for);
      return false;
    }
    const MessageId current = designation_[{e.node, e.thread}];
    if ((taken_over_.contains({e.node, e.thread}) ||
         connected_after_handoff_.contains(e.message)) &&
        c_.receiver[e.message] != c_.sender[e.message])  // a wake-up carries no request
      through_handoff_.push_back(e.message);
    auto connected = connected_for_.find(e.message);
    MessageId placed = connected != connected_for_.end() ? connected->second : current;  // rule 2
    bool followed = false;
    if (kind == MessageKind::kCall)
      placed = FollowSetAside(e.node, MessageId(e.message), placed, &followed);
    // A one-way message that hands nothing on (a wake-up through the node's own pipe, or
    // one no traced process read), sent once the request it would go to was answered, is
    // no work of that request: a signal handler's byte at exit (dnsmasq, gevent's worker).
    if (WakeUp(e.message) && Answered(placed)) placed = MessageId();
    parent_[e.message] = placed;
    if (placed.valid()) acted_on_[placed.value()] = true;
    outputs_without_request_ += !placed.valid();
    // The thread had begun reading a call it has not finished, and this output goes to
    // another request (or none): whether it belongs to the call being read, streamed on
    // before its last byte, or to the request the thread serves besides, times cannot tell
    // (WeighPartialInputs). (A call placed by its connect is not in doubt.)
    if (auto partial = reading_.find({e.node, e.thread});
        partial != reading_.end() && connected == connected_for_.end()) {
      for (MessageId m : partial->second) beside_partial_.emplace_back(e.message, m);
    }
    outputs_through_ambiguous_ += parent_[e.message].valid() && connected == connected_for_.end() &&
                                  guessed_.contains({e.node, e.thread});
    if (!parent_[e.message].valid() && kind == MessageKind::kCall && serves_[e.node])
      server_calls_outside_.push_back(e.message);
    return followed;
  }

  // A one-way message a node sends itself (through a pipe or socket pair: a loop's
  // wake-up), or one no traced process read.
  bool WakeUp(uint32_t m) const {
    return c_.kind[m] == MessageKind::kMessage &&
           (c_.receiver[m] == c_.sender[m] || c_.recv_time[m] == kNoTime);
  }

  // Whether the request that `m` works for was answered: `m` itself, or, where `m` is a
  // wake-up, the message that wake-up was placed in.
  bool Answered(MessageId m) const {
    while (m.valid() && WakeUp(m.value())) m = parent_[m.value()];
    return m.valid() && answered_[m.value()];
  }

  // A request its thread read and then read another input after, before acting on it: the
  // program may have set it aside (pgbouncer's client waiting for a free server
  // connection, haproxy's request queued for a later turn) and forward it in another
  // request's turn. Or (`shared`) a request that one read brought with a later one, whose
  // fragment the work of both falls in. Kept per node, oldest first, until it is acted on
  // or answered.
  void SetAside(uint32_t node, MessageId request, bool shared) {
    const Content content = ContentOf(fields_, request);
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
  MessageId FollowSetAside(uint32_t node, MessageId call, MessageId placed, bool* followed) {
    auto it = set_aside_.find(node);
    if (it == set_aside_.end()) return placed;
    std::vector<Waiting>& waiting = it->second;
    std::erase_if(waiting, [&](const Waiting& w) { return Done(w.request); });
    if (waiting.empty()) {
      set_aside_.erase(it);
      return placed;
    }
    const Content content = ContentOf(fields_, call);
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
                             ContentOf(fields_, placed) == content;
    set_aside_guessed_ += placed_same || std::any_of(match + 1, waiting.end(), could_be);
    ++(match->shared ? shared_read_found_ : set_aside_found_);
    // (See ReorderByReplies.)
    (one_sender_.contains(node) ? following_nodes_ : following_threads_).insert(node);
    const MessageId request = match->request;
    waiting.erase(match);
    *followed = true;
    return request;
  }

  // Where forwards were followed to requests by content (FollowSetAside), the order of the
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
  absl::flat_hash_set<uint32_t> ReorderByReplies() {
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
      const auto to = c_.recv_time[i] != kNoTime
                          ? key(c_.receiver[i].value(), c_.receiver_thread[i])
                          : std::nullopt;
      const auto from = c_.send_time[i] != kNoTime ? key(c_.sender[i].value(), c_.sender_thread[i])
                                                   : std::nullopt;
      if (!(to || from) || !Known(ContentOf(fields_, call))) continue;
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
        const Content content = ContentOf(fields_, MessageId(e.call));
        // (From its first read: a proxy streams a request's head on before its body is in.)
        const TimeNs first = c_.first_read_time[e.call];
        const TimeNs read = first != kNoTime ? first : c_.recv_time[e.call];
        auto forward = std::find_if(replied.begin(), replied.end(), [&](uint32_t f) {
          return c_.send_time[f] >= read && ContentOf(fields_, MessageId(f)) == content;
        });
        if (forward == replied.end()) continue;
        given.emplace_back(*forward, MessageId(e.call));
        replied.erase(forward);
      }
    }
    absl::flat_hash_set<uint32_t> forwards;
    for (const auto& [forward, request] : given) {
      set_aside_reordered_ += parent_[forward] != request;
      parent_[forward] = request;
      forwards.insert(forward);
    }
    return forwards;
  }

  // Replies that answered another request than the one handed to their thread say the
  // hand-off was no work passed on (an interpreter lock's passes between a loop and its
  // pool threads, which capture's --sync logs) and that what the thread sent after it may
  // be in the wrong tree. Not where the hand-offs placed nothing that stands (those
  // replies are counted apart): at a node where one thread sends everything and every
  // output a hand-off placed was a forward the order of the replies gave
  // (ReorderByReplies) or went to no request (SendFor), or at a node that sends nothing
  // but replies, which go with their calls whatever their threads held (a server with a
  // thread per request, passing Python's interpreter lock).
  void WeighContradictions(const absl::flat_hash_set<uint32_t>& reordered) {
    absl::flat_hash_set<uint32_t> misled;  // nodes with an output a hand-off placed
    for (uint32_t m : through_handoff_) {
      if (!reordered.contains(m) && parent_[m].valid()) misled.insert(c_.sender[m].value());
    }
    for (const auto& [node, n] : contradicted_at_) {
      const bool mended = (following_nodes_.contains(node) || !sends_onward_.contains(node)) &&
                          !misled.contains(node);
      (mended ? contradictions_mended_ : handoffs_contradicted_) += n;
    }
  }

  // An output sent while its thread was part way through reading a call, and placed in
  // another request, is in doubt (counted once) unless it carries the content of the
  // request it went to and not that of the call (a proxy passes on what it read), or that
  // call had an output of its own besides, sent after it was read to the end (it was not
  // streamed on before its last byte) or carrying the same content (a proxy forwards a
  // request once: Traffic Server streams a POST's head on before its body is in, and
  // forwards another client's request meanwhile).
  void WeighPartialInputs() {
    absl::flat_hash_map<uint32_t, std::vector<uint32_t>> outputs;  // of the calls being read
    for (const auto& [output, call] : beside_partial_) outputs.try_emplace(call.value());
    for (size_t i = 0; i < trace_.size(); ++i) {
      const MessageId to = parent_[i];
      if (!to.valid() || c_.kind[i] == MessageKind::kReturn || c_.send_time[i] == kNoTime) continue;
      if (auto it = outputs.find(to.value()); it != outputs.end())
        it->second.push_back(uint32_t(i));
    }
    auto in_doubt = [&](uint32_t output, MessageId call) {
      if (parent_[output] == call) return false;
      const Content content = ContentOf(fields_, MessageId(output));
      auto carries = [&](MessageId m) {
        return Known(content) && ContentOf(fields_, m) == content;
      };
      if (parent_[output].valid() && carries(parent_[output]) && !carries(call)) return false;
      const std::vector<uint32_t>& own = outputs.at(call.value());
      return std::none_of(own.begin(), own.end(), [&](uint32_t o) {
        return c_.send_time[o] >= c_.recv_time[call.value()] || carries(MessageId(o));
      });
    };
    uint32_t counted = UINT32_MAX;
    for (const auto& [output, call] : beside_partial_) {
      if (output == counted || !in_doubt(output, call)) continue;
      ++outputs_beside_partial_inputs_;
      counted = output;
    }
  }

  // The request `call` is answered: threads that got it by a link and hold it still let go.
  void EndInheritance(MessageId call) {
    auto it = call.valid() ? heirs_.find(call.value()) : heirs_.end();
    if (it == heirs_.end()) return;
    for (const Thread& heir : it->second) {
      auto held = inherited_.find(heir);
      if (held == inherited_.end() || held->second != call) continue;
      inherited_.erase(held);
      designation_.find(heir)->second = MessageId();  // present: set at the link
      ++ended_by_answer_;
    }
    heirs_.erase(it);
  }

  const Trace& trace_;
  const TraceColumns& c_;
  std::span<const MessageId> call_of_;
  std::vector<MessageId>& parent_;
  std::vector<bool> serves_;  // per node: some CALL goes to it
  // Per thread: the message its current fragment works for (invalid: none).
  absl::flat_hash_map<Thread, MessageId> designation_;
  // A call that is the first message on a connection: the request whose fragment
  // connected (BorderPatrol §3: "output ... includes any interaction with an outside
  // module, such as connection creation"). A non-blocking connect's call is written when
  // the connection becomes writable, a fragment of its own (§6, Figure 8) that may come
  // after the next input; it still belongs to the request that connected.
  absl::flat_hash_map<uint32_t, MessageId> connected_for_;
  // Per thread: the first calls of the connections it took up since its last input (or
  // take-over of handed work), in the order taken up (TakeAccepted).
  absl::flat_hash_map<Thread, std::vector<MessageId>> accepted_;
  absl::flat_hash_set<MessageId> connected_requests_;  // requests a connect was given to
  // Per thread that holds its designation only by a process link: that request.
  // Per request handed on by links: the threads it went to (some may have moved on since).
  absl::flat_hash_map<Thread, MessageId> inherited_;
  absl::flat_hash_map<uint32_t, std::vector<Thread>> heirs_;
  // Per hand-off link handed over and not yet taken: the request handed.
  absl::flat_hash_map<uint32_t, MessageId> handed_;
  // Per message a hand-off link named as sent for the work it handed: that request.
  absl::flat_hash_map<uint32_t, MessageId> sent_for_;
  // Threads whose inherited request came through a hand-off; of them, through one that
  // reconcile marked ambiguous, until their next input or take-over.
  absl::flat_hash_set<Thread> taken_over_, guessed_;
  int64_t handoffs_carrying_ = 0, outputs_through_ambiguous_ = 0, handoffs_contradicted_ = 0,
          contradictions_mended_ = 0;
  // Per node: replies that contradicted the hand-off their thread took over
  // (WeighContradictions). Outputs sent by a thread on a request it took over, or on a
  // connection it opened so, and those connections' first calls.
  absl::flat_hash_map<uint32_t, int64_t> contradicted_at_;
  std::vector<uint32_t> through_handoff_;
  absl::flat_hash_set<uint32_t> connected_after_handoff_;
  // Per thread: the calls it has begun reading (a first read) and not yet read to the end.
  absl::flat_hash_map<Thread, std::vector<MessageId>> reading_;
  std::vector<std::pair<uint32_t, MessageId>> beside_partial_;  // (output, call being read)
  int64_t outputs_beside_partial_inputs_ = 0;
  // Per thread: when the last CALL it read arrived (a read completing two has one time), and
  // that CALL.
  absl::flat_hash_map<Thread, std::pair<TimeNs, MessageId>> last_call_read_;
  int64_t inputs_sharing_a_read_ = 0;
  // Per thread: when it read a CALL it has not yet acted on (sent, connected or handed
  // anything since), and that CALL.
  absl::flat_hash_map<Thread, std::pair<TimeNs, MessageId>> unacted_;
  absl::flat_hash_map<Thread, int64_t> before_acting_;
  absl::flat_hash_set<Thread> senders_;
  // Per node: the requests set aside (SetAside), oldest first; a bound keeps a node that
  // never forwards them from growing the list.
  struct Waiting {
    MessageId request;
    bool shared;  // set aside by a later request of the same read
    Content content;
  };
  static constexpr size_t kMaxSetAside = 256;
  ForwardedFields fields_;
  absl::flat_hash_map<uint32_t, std::vector<Waiting>> set_aside_;
  std::vector<bool> answered_, acted_on_;  // per request: its reply sent; an output placed in it
  // Per call: when its reply was sent, and when the reply to it was read (kNoTime: never).
  std::vector<TimeNs> answer_sent_, return_read_;
  // One-sender nodes where a forward was followed to a request by content.
  absl::flat_hash_set<uint32_t> following_nodes_;
  absl::flat_hash_set<uint32_t> sends_onward_;       // nodes that sent a call or message onward
  absl::flat_hash_set<uint32_t> following_threads_;  // the same where several threads send
  int64_t set_aside_found_ = 0, shared_read_found_ = 0, set_aside_guessed_ = 0,
          set_aside_reordered_ = 0;
  // FindThreadsServingOneAtATime's threads, and per thread the request it read and has not
  // answered yet.
  absl::flat_hash_set<Thread> one_at_a_time_;
  absl::flat_hash_set<uint32_t> one_sender_;  // nodes where one thread sends to other nodes
  absl::flat_hash_map<Thread, MessageId> owing_;
  std::vector<uint32_t> server_calls_outside_;  // calls a server sent outside every fragment
  int64_t outputs_without_request_ = 0, requests_spawned_ = 0, ended_by_answer_ = 0;
};

// After the scan: RETURNs whose sender was not traced still answer their CALL, and a CALL
// from an untraced module continues the CALL into it that carried the same witness
// (witness.h, BorderPatrol §3.1); it would otherwise start a path of its own.
WitnessLinks LinkUntracedSenders(const Trace& trace, const std::vector<MessageId>& call_of,
                                 std::vector<MessageId>& parent) {
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn && !parent[i].valid()) parent[i] = call_of[i];
  }
  WitnessLinks witnesses = LinkWitnesses(trace, call_of);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (witnesses.continues[i].valid() && !parent[i].valid()) parent[i] = witnesses.continues[i];
  }
  return witnesses;
}

}  // namespace

Result<FragmentInference> InferFragment(const Trace& trace) {
  WEFT_ASSIGN_OR_RETURN(const std::vector<ThreadEvent> events, CollectThreadEvents(trace));
  const std::vector<MessageId> call_of = CallsAnswered(trace);
  std::vector<MessageId> parent(trace.size());
  FragmentScan scan(trace, call_of, parent);
  scan.Run(events);
  PairLayerFourConnections(trace, call_of, parent);
  const WitnessLinks witnesses = LinkUntracedSenders(trace, call_of, parent);

  PathSetBuilder builder(trace, "fragment");
  WEFT_ASSIGN_OR_RETURN(ForestCounts forest, AddForest(trace, parent, builder));
  return FragmentInference{std::move(builder).Finish(),
                           {.instances = forest.instances,
                            .messages_in_instances = forest.messages_in_instances,
                            .outputs_starting_requests = scan.outputs_without_request(),
                            .server_calls_outside_fragments = scan.server_calls_outside(),
                            .messages_in_cycles = forest.messages_in_cycles,
                            .witness_links = witnesses.linked,
                            .witness_links_ambiguous = witnesses.ambiguous,
                            .witnesses_unmatched = witnesses.unlinked,
                            .process_links_carrying_requests = scan.requests_spawned(),
                            .inherited_requests_ended_by_answer = scan.ended_by_answer(),
                            .handoffs_carrying_requests = scan.handoffs_carrying(),
                            .outputs_through_ambiguous_handoffs = scan.outputs_through_ambiguous(),
                            .handoffs_contradicted_by_replies = scan.handoffs_contradicted(),
                            .contradicted_handoffs_mended_by_replies = scan.contradictions_mended(),
                            .inputs_sharing_a_read = scan.inputs_sharing_a_read(),
                            .outputs_beside_partial_inputs = scan.outputs_beside_partial_inputs(),
                            .inputs_before_acting = scan.inputs_before_acting(),
                            .set_aside_forwards_found = scan.set_aside_forwards_found(),
                            .shared_read_forwards_found = scan.shared_read_forwards_found(),
                            .set_aside_forwards_guessed = scan.set_aside_forwards_guessed(),
                            .set_aside_forwards_reordered = scan.set_aside_forwards_reordered()}};
}

}  // namespace weft
