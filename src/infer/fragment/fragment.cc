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

#include <algorithm>
#include <tuple>

#include "infer/forest.h"
#include "infer/fragment/witness.h"

namespace weft {
namespace {

// At equal times: a reply read, then a fork or connect it led to, then the call it caused.
enum class Step : uint8_t { kReceive, kProcessLink, kConnect, kSend };

// One input or output of a traced thread, a process link (fork, exec, thread) from one, or the
// connect that opened the connection a call is the first message on.
struct ThreadEvent {
  uint32_t clock;  // nodes joined by process links run on one host: one time order
  uint32_t node;
  uint32_t thread;
  TimeNs time;
  Step step;
  uint32_t message;  // for a process link, the link's index
  auto Key() const { return std::tie(clock, time, step, node, thread, message); }
};

// Per node, the node all nodes joined to it by process links are ordered with (union-find
// over the links, whose two ends share a host's clock); a node without links is its own.
std::vector<uint32_t> ClockOfNodes(const Trace& trace) {
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
  for (uint32_t n = 0; n < root.size(); ++n) root[n] = find(n);
  return root;
}

// The connect time of `message` (its net.connected attribute), or kNoTime.
TimeNs ConnectTime(const Trace& trace, MessageId message, StringId key) {
  if (!key.valid()) return kNoTime;
  for (const Attribute& a : trace.AttributesOf(message)) {
    if (a.key != key) continue;
    std::string_view text = trace.strings().Get(a.value);
    TimeNs t = 0;
    for (char ch : text) {
      if (ch < '0' || ch > '9') return kNoTime;
      t = t * 10 + (ch - '0');
    }
    return text.empty() ? kNoTime : t;
  }
  return kNoTime;
}

}  // namespace

Result<FragmentInference> InferFragment(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  const std::vector<uint32_t> clock = ClockOfNodes(trace);
  bool threads = trace.empty();
  std::vector<ThreadEvent> events;
  events.reserve(2 * trace.size() + trace.process_links().size());
  const StringId connected_key = trace.strings().Find(kConnectedAttribute);
  for (size_t i = 0; i < trace.size(); ++i) {
    const uint32_t m = uint32_t(i);
    const uint32_t sender = c.sender[i].value(), receiver = c.receiver[i].value();
    if (c.send_time[i] != kNoTime && c.sender_thread[i] != 0) {
      events.push_back({clock[sender], sender, c.sender_thread[i], c.send_time[i], Step::kSend, m});
      TimeNs connected = c.kind[i] == MessageKind::kCall
                             ? ConnectTime(trace, MessageId(m), connected_key)
                             : kNoTime;
      if (connected != kNoTime && connected <= c.send_time[i]) {
        events.push_back({clock[sender], sender, c.sender_thread[i], connected, Step::kConnect, m});
      }
    }
    if (c.recv_time[i] != kNoTime && c.receiver_thread[i] != 0) {
      events.push_back(
          {clock[receiver], receiver, c.receiver_thread[i], c.recv_time[i], Step::kReceive, m});
    }
    threads = threads || c.sender_thread[i] != 0 || c.receiver_thread[i] != 0;
  }
  const std::span<const ProcessLink> links = trace.process_links();
  for (size_t k = 0; k < links.size(); ++k) {
    const uint32_t from = links[k].from.value();
    events.push_back(
        {clock[from], from, links[k].from_thread, links[k].time, Step::kProcessLink, uint32_t(k)});
  }
  if (!threads) {
    return Status::InvalidArgument(
        "no message names its threads: the fragment algorithm needs a trace reconciled from a "
        "capture "
        "(weft capture, weft reconcile)");
  }
  // Per node in time order: a RETURN's parent (its CALL's parent) is settled at the node
  // that sent the CALL before the RETURN comes back to it.
  std::sort(events.begin(), events.end(),
            [](const ThreadEvent& a, const ThreadEvent& b) { return a.Key() < b.Key(); });

  const std::vector<MessageId> call_of = CallsAnswered(trace);
  std::vector<MessageId> parent(trace.size());
  // Per (node, thread): the message its current fragment works for (invalid: none).
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, MessageId> designation;
  // A call that is the first message on a connection: the request whose fragment
  // connected (BorderPatrol §3: "output ... includes any interaction with an outside
  // module, such as connection creation"). A non-blocking connect's call is written when
  // the connection becomes writable, a fragment of its own (§6, Figure 8) that may come
  // after the next input; it still belongs to the request that connected.
  absl::flat_hash_map<uint32_t, MessageId> connected_for;
  // A server (a node that is called) sending a call outside every fragment had the work
  // handed to it through something capture cannot see, such as a dispatcher's queue:
  // BorderPatrol's independence assumption fails there. Counted for --algo auto.
  std::vector<bool> serves(trace.nodes().size(), false);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kCall) serves[c.receiver[i].value()] = true;
  }
  // Per (node, thread) that holds its designation only by a process link: that request.
  // Per request handed on by links: the threads it went to (some may have moved on since).
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, MessageId> inherited;
  absl::flat_hash_map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> heirs;
  int64_t outputs_without_request = 0, server_calls_outside = 0, requests_spawned = 0,
          ended_by_answer = 0;
  for (const ThreadEvent& e : events) {
    if (e.step == Step::kProcessLink) {
      // §5.5: a spawned process's (thread's) initial fragment works for the request its
      // parent's thread was in at the fork, exec or thread creation.
      const ProcessLink& l = links[e.message];
      const MessageId request = designation[{e.node, e.thread}];
      const std::pair<uint32_t, uint32_t> to{l.to.value(), l.to_thread};
      designation[to] = request;
      if (request.valid()) {
        inherited[to] = request;
        heirs[request.value()].push_back(to);
      } else {
        inherited.erase(to);
      }
      requests_spawned += request.valid();
      continue;
    }
    const MessageKind kind = c.kind[e.message];
    const std::pair<uint32_t, uint32_t> self{e.node, e.thread};
    MessageId& current = designation[self];
    if (e.step == Step::kConnect) {
      if (current.valid()) connected_for[e.message] = current;
      continue;
    }
    if (e.step == Step::kReceive) {
      if (kind == MessageKind::kReturn) {
        // Rule 1 for a reply: the request that made the call goes on. A root call's reply
        // ends its request at the node that made it.
        MessageId call = call_of[e.message];
        current = call.valid() ? parent[call.value()] : MessageId();
      } else {
        current = MessageId(e.message);  // rule 1: a new input starts a fragment
      }
      // The thread's own input ends its inheritance, unless it is the reply to a call made
      // for the inherited request, which goes on as before the call.
      auto held = inherited.find(self);
      if (held != inherited.end() && (kind != MessageKind::kReturn || held->second != current)) {
        inherited.erase(held);
      }
      continue;
    }
    if (kind == MessageKind::kReturn) {
      parent[e.message] = call_of[e.message];
      // The request is answered: threads that got it by a link and hold it still let go.
      auto it = call_of[e.message].valid() ? heirs.find(call_of[e.message].value()) : heirs.end();
      if (it != heirs.end()) {
        for (const std::pair<uint32_t, uint32_t>& heir : it->second) {
          auto held = inherited.find(heir);
          if (held == inherited.end() || held->second != call_of[e.message]) continue;
          inherited.erase(held);
          designation.find(heir)->second = MessageId();  // present: set at the link
          ++ended_by_answer;
        }
        heirs.erase(it);
      }
    } else {
      auto connected = connected_for.find(e.message);
      parent[e.message] = connected != connected_for.end() ? connected->second : current;  // rule 2
      outputs_without_request += !parent[e.message].valid();
      server_calls_outside +=
          !parent[e.message].valid() && kind == MessageKind::kCall && serves[e.node];
    }
  }
  // RETURNs whose sender was not traced still answer their CALL.
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn && !parent[i].valid()) parent[i] = call_of[i];
  }
  // A CALL from an untraced module continues the CALL into it that carried the same
  // witness (witness.h, BorderPatrol §3.1); it would otherwise start a path of its own.
  const WitnessLinks witnesses = LinkWitnesses(trace, call_of);
  for (size_t i = 0; i < trace.size(); ++i) {
    if (witnesses.continues[i].valid() && !parent[i].valid()) parent[i] = witnesses.continues[i];
  }

  PathSetBuilder builder(trace, "fragment");
  WEFT_ASSIGN_OR_RETURN(ForestCounts forest, AddForest(trace, parent, builder));
  return FragmentInference{std::move(builder).Finish(),
                           {.instances = forest.instances,
                            .messages_in_instances = forest.messages_in_instances,
                            .outputs_starting_requests = outputs_without_request,
                            .server_calls_outside_fragments = server_calls_outside,
                            .messages_in_cycles = forest.messages_in_cycles,
                            .witness_links = witnesses.linked,
                            .witness_links_ambiguous = witnesses.ambiguous,
                            .witnesses_unmatched = witnesses.unlinked,
                            .process_links_carrying_requests = requests_spawned,
                            .inherited_requests_ended_by_answer = ended_by_answer}};
}

}  // namespace weft
