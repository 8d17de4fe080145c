// BorderPatrol §5.5 over reconciled messages: a receive is the read that completed the
// message (its exit time), a send the write that began it (its entry time); one thread's
// calls never overlap, so ordering them by these times is the thread's own order.
#include "infer/fragment/fragment.h"

#include <algorithm>
#include <tuple>

#include <absl/container/flat_hash_map.h>

#include "infer/forest.h"

namespace weft {
namespace {

// One input or output of a traced thread, or the connect that opened the connection a
// call is the first message on.
enum class Step : uint8_t { kReceive = 0, kConnect = 1, kSend = 2 };
struct ThreadEvent {
  uint32_t node;
  uint32_t thread;
  TimeNs time;
  Step step;  // at equal times: a reply read, then the connect and call it caused
  uint32_t message;
  auto Key() const { return std::tie(node, time, step, thread, message); }
};

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

Result<PathSet> InferFragment(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  bool threads = trace.empty();
  std::vector<ThreadEvent> events;
  events.reserve(2 * trace.size());
  const StringId connected_key = trace.strings().Find(kConnectedAttribute);
  for (size_t i = 0; i < trace.size(); ++i) {
    const uint32_t m = uint32_t(i);
    if (c.send_time[i] != kNoTime && c.sender_thread[i] != 0) {
      events.push_back({c.sender[i].value(), c.sender_thread[i], c.send_time[i], Step::kSend, m});
      TimeNs connected = c.kind[i] == MessageKind::kCall ? ConnectTime(trace, MessageId(m), connected_key) : kNoTime;
      if (connected != kNoTime && connected <= c.send_time[i]) {
        events.push_back({c.sender[i].value(), c.sender_thread[i], connected, Step::kConnect, m});
      }
    }
    if (c.recv_time[i] != kNoTime && c.receiver_thread[i] != 0) {
      events.push_back({c.receiver[i].value(), c.receiver_thread[i], c.recv_time[i], Step::kReceive, m});
    }
    threads = threads || c.sender_thread[i] != 0 || c.receiver_thread[i] != 0;
  }
  if (!threads) {
    return Status::InvalidArgument(
        "no message names its threads: the fragment algorithm needs a trace reconciled from a capture "
        "(weft capture, weft reconcile)");
  }
  // Per node in time order: a RETURN's parent (its CALL's parent) is settled at the node
  // that sent the CALL before the RETURN comes back to it.
  std::sort(events.begin(), events.end(), [](const ThreadEvent& a, const ThreadEvent& b) { return a.Key() < b.Key(); });

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
  int64_t outputs_without_request = 0, server_calls_outside = 0;
  for (const ThreadEvent& e : events) {
    const MessageKind kind = c.kind[e.message];
    MessageId& current = designation[{e.node, e.thread}];
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
      continue;
    }
    if (kind == MessageKind::kReturn) {
      parent[e.message] = call_of[e.message];
    } else {
      auto connected = connected_for.find(e.message);
      parent[e.message] = connected != connected_for.end() ? connected->second : current;  // rule 2
      outputs_without_request += !parent[e.message].valid();
      server_calls_outside += !parent[e.message].valid() && kind == MessageKind::kCall && serves[e.node];
    }
  }
  // RETURNs whose sender was not traced still answer their CALL.
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kReturn && !parent[i].valid()) parent[i] = call_of[i];
  }

  PathSetBuilder builder(trace, "fragment");
  WEFT_ASSIGN_OR_RETURN(uint64_t in_cycles, AddForest(trace, parent, builder));
  builder.AddCounter("outputs_starting_requests", outputs_without_request);
  builder.AddCounter("server_calls_outside_fragments", server_calls_outside);
  builder.AddCounter("messages_in_cycles", int64_t(in_cycles));
  return std::move(builder).Finish();
}

}  // namespace weft
