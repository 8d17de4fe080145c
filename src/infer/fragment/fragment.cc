// BorderPatrol §5.5 over reconciled messages: a receive is the read that completed the
// message (its exit time), a send the write that began it (its entry time); one thread's
// calls never overlap, so ordering them by these times is the thread's own order.
#include "infer/fragment/fragment.h"

#include <algorithm>
#include <tuple>

#include <absl/container/flat_hash_map.h>

#include "infer/forest.h"
#include "infer/fragment/witness.h"

namespace weft {
namespace {

// One input or output of a traced thread.
struct ThreadEvent {
  uint32_t node;
  uint32_t thread;
  TimeNs time;
  bool send;  // receives sort first at equal times: a reply read, then the call it caused
  uint32_t message;
  auto Key() const { return std::tie(node, time, send, thread, message); }
};

}  // namespace

Result<PathSet> InferFragment(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  bool threads = trace.empty();
  std::vector<ThreadEvent> events;
  events.reserve(2 * trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const uint32_t m = uint32_t(i);
    if (c.send_time[i] != kNoTime && c.sender_thread[i] != 0) {
      events.push_back({c.sender[i].value(), c.sender_thread[i], c.send_time[i], true, m});
    }
    if (c.recv_time[i] != kNoTime && c.receiver_thread[i] != 0) {
      events.push_back({c.receiver[i].value(), c.receiver_thread[i], c.recv_time[i], false, m});
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
    if (!e.send) {
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
      parent[e.message] = current;  // rule 2
      outputs_without_request += !current.valid();
      server_calls_outside += !current.valid() && kind == MessageKind::kCall && serves[e.node];
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
  WEFT_ASSIGN_OR_RETURN(uint64_t in_cycles, AddForest(trace, parent, builder));
  builder.AddCounter("outputs_starting_requests", outputs_without_request);
  builder.AddCounter("server_calls_outside_fragments", server_calls_outside);
  builder.AddCounter("messages_in_cycles", int64_t(in_cycles));
  builder.AddCounter("witness_links", witnesses.linked);
  builder.AddCounter("witness_links_ambiguous", witnesses.ambiguous);
  builder.AddCounter("witnesses_unmatched", witnesses.unlinked);
  return std::move(builder).Finish();
}

}  // namespace weft
