// BorderPatrol §5.5 over reconciled messages: a receive is the read that completed the
// message (its exit time), a send the write that began it (its entry time); one thread's
// calls never overlap, so ordering them by these times is the thread's own order
// (thread_events.h). fragment.h says why an inherited request also ends when it is
// answered; set_aside.h follows requests a program set aside to their forwards.
#include "infer/fragment/fragment.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>

#include "infer/forest.h"
#include "infer/fragment/layer_four.h"
#include "infer/fragment/set_aside.h"
#include "infer/fragment/thread_events.h"
#include "infer/fragment/witness.h"

namespace weft {
namespace {

using Step = ThreadEvent::Step;

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
        answered_(trace.size(), false),
        acted_on_(trace.size(), false),
        set_aside_(trace, call_of, answered_, acted_on_) {
    // A server (a node that is called) sending a call outside every fragment had the work
    // handed to it through something capture cannot see, such as a dispatcher's queue:
    // BorderPatrol's independence assumption fails there. Counted for --algo auto.
    serves_.assign(trace.nodes().size(), false);
    for (size_t i = 0; i < trace.size(); ++i) {
      if (c_.kind[i] == MessageKind::kCall) serves_[c_.receiver[i].value()] = true;
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
    const absl::flat_hash_set<uint32_t> reordered = set_aside_.ReorderByReplies(parent_);
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
  const SetAsideRequests& set_aside() const { return set_aside_; }
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
        set_aside_.Add(e.node, last->second.second, true);
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
          set_aside_.Add(e.node, request, false);
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
  bool QueuedWork(uint32_t node) const {
    return one_sender_.contains(node) && set_aside_.AnyWaiting(node);
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
      placed = set_aside_.Follow(e.node, MessageId(e.message), placed, one_sender_.contains(e.node),
                                 &followed);
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
      const bool mended =
          (set_aside_.followed_at_one_sender(node) || !sends_onward_.contains(node)) &&
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
      const SetAsideRequests::Content content = set_aside_.ContentOf(MessageId(output));
      auto carries = [&](MessageId m) {
        return SetAsideRequests::Known(content) && set_aside_.ContentOf(m) == content;
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
  std::vector<bool> answered_, acted_on_;  // per request: its reply sent; an output placed in it
  SetAsideRequests set_aside_;             // reads answered_ and acted_on_
  absl::flat_hash_set<uint32_t> sends_onward_;  // nodes that sent a call or message onward
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
                            .set_aside_forwards_found = scan.set_aside().found(),
                            .shared_read_forwards_found = scan.set_aside().shared_read_found(),
                            .set_aside_forwards_guessed = scan.set_aside().guessed(),
                            .set_aside_forwards_reordered = scan.set_aside().reordered()}};
}

}  // namespace weft
