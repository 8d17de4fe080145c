// gRPC API records -> HANDOFF links (grpc_handoffs.h).
#include "reconcile/grpc_handoffs.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <map>
#include <utility>

namespace weft::reconcile {
namespace {

using capture::EventOp;

// The wire calls one process saw in one direction with one metadata hash, in time order,
// with whether an API call has claimed each. Calls whose metadata are alike share one list,
// which can hold every call of a busy process, so both searches stop at the second fit:
// a take claims only the earliest unclaimed call (the one fit of a prefix), so the claimed
// calls before `first_unclaimed` are never looked at again; a start looks only from its
// own time on.
struct AlikeCalls {
  std::vector<const GrpcWireCall*> calls;
  std::vector<bool> claimed;
  size_t first_unclaimed = 0;
};

// The one unclaimed call received at or before `time`, or null when none or several fit.
const GrpcWireCall* ReadBefore(AlikeCalls& c, TimeNs time, bool* ambiguous) {
  while (c.first_unclaimed < c.calls.size() && c.claimed[c.first_unclaimed]) ++c.first_unclaimed;
  size_t i = c.first_unclaimed;
  *ambiguous = false;
  if (i == c.calls.size() || c.calls[i]->time > time) return nullptr;
  for (size_t j = i + 1; j < c.calls.size() && c.calls[j]->time <= time; ++j) {
    if (!c.claimed[j]) {
      *ambiguous = true;
      return nullptr;
    }
  }
  c.claimed[i] = true;
  return c.calls[i];
}

// The one unclaimed call sent at or after `time`, or null when none or several fit.
const GrpcWireCall* SentAfter(AlikeCalls& c, TimeNs time, bool* ambiguous) {
  auto from = std::lower_bound(c.calls.begin(), c.calls.end(), time,
                               [](const GrpcWireCall* w, TimeNs t) { return w->time < t; });
  size_t found = c.calls.size();
  *ambiguous = false;
  for (size_t j = size_t(from - c.calls.begin()); j < c.calls.size(); ++j) {
    if (c.claimed[j]) continue;
    if (found != c.calls.size()) {
      *ambiguous = true;
      return nullptr;
    }
    found = j;
  }
  if (found == c.calls.size()) return nullptr;
  c.claimed[found] = true;
  return c.calls[found];
}

}  // namespace

void AddGrpcHandoffs(std::span<const capture::EventLog> logs, const BootOffsets& boot_offsets,
                     std::span<const GrpcWireCall> wire,
                     const std::function<NodeId(uint32_t log, int32_t tid)>& node_of,
                     TraceBuilder& builder, GrpcHandoffCounts& counts) {
  // Per (log, sent, hash): the wire calls.
  std::map<std::tuple<uint32_t, bool, uint64_t>, AlikeCalls> by_key;
  // Per (log, call id): the RETURN that process sent on the stream.
  std::map<std::pair<uint32_t, StringId>, const GrpcWireCall*> returns;
  for (const GrpcWireCall& w : wire) {
    if (w.kind == MessageKind::kReturn) {
      if (w.sent) returns[{w.log, w.call_id}] = &w;
      continue;
    }
    by_key[{w.log, w.sent, w.hash}].calls.push_back(&w);
  }
  for (auto& [key, c] : by_key) {
    std::stable_sort(
        c.calls.begin(), c.calls.end(),
        [](const GrpcWireCall* a, const GrpcWireCall* b) { return a->time < b->time; });
    c.claimed.assign(c.calls.size(), false);
  }
  auto link = [&](uint32_t log, int32_t from_tid, TimeNs from, int32_t to_tid, TimeNs to,
                  MessageId from_message, MessageId to_message) {
    builder.AddProcessLink(ProcessLink{.time = from,
                                       .from = node_of(log, from_tid),
                                       .from_thread = ThreadId(uint32_t(from_tid)),
                                       .to = node_of(log, to_tid),
                                       .to_thread = ThreadId(uint32_t(to_tid)),
                                       .kind = ProcessLinkKind::kHandoff,
                                       .to_time = std::max(to, from),
                                       .from_message = from_message,
                                       .to_message = to_message});
  };
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const TimeNs offset = boot_offsets.at(logs[i].header.boot_id);
    // The calls this process created, by address: the last op on an address says what the
    // call there is now (a freed call's address may be reused by a server call).
    absl::flat_hash_map<uint64_t, bool> client;
    absl::flat_hash_map<uint64_t, const GrpcWireCall*> taken;  // server call -> its CALL
    std::vector<const capture::Event*> events;
    for (const capture::Event& e : logs[i].events) {
      if (e.op == EventOp::kGrpcCreate || e.op == EventOp::kGrpcTake || e.op == EventOp::kGrpcStart)
        events.push_back(&e);
    }
    if (events.empty()) continue;
    std::stable_sort(
        events.begin(), events.end(),
        [](const capture::Event* a, const capture::Event* b) { return a->entry_ns < b->entry_ns; });
    for (const capture::Event* e : events) {
      const TimeNs entry = e->entry_ns + offset, exit = e->exit_ns + offset;
      bool ambiguous = false;
      if (e->op == EventOp::kGrpcCreate) {
        client[e->object] = true;
      } else if (e->op == EventOp::kGrpcTake) {
        client[e->object] = false;
        taken.erase(e->object);
        ++counts.takes;
        auto it = by_key.find({i, false, e->second});
        const GrpcWireCall* w =
            it == by_key.end() ? nullptr : ReadBefore(it->second, exit, &ambiguous);
        counts.takes_ambiguous += ambiguous;
        if (w == nullptr) continue;
        link(i, w->tid, w->time, e->tid, exit, MessageId(w->row), MessageId());
        taken[e->object] = w;
        ++counts.takes_linked;
      } else {
        auto created = client.find(e->object);
        if (created == client.end() || !created->second) {
          // A server call's reply: the RETURN on the stream of the CALL it took.
          auto server = taken.find(e->object);
          if (server == taken.end()) continue;
          auto answer = returns.find({i, server->second->call_id});
          taken.erase(server);
          if (answer == returns.end() || answer->second->time < entry) continue;
          link(i, e->tid, entry, answer->second->tid, answer->second->time, MessageId(),
               MessageId(answer->second->row));
          ++counts.answers_linked;
          continue;
        }
        created->second = false;  // its initial metadata go out once
        ++counts.starts;
        auto it = by_key.find({i, true, e->second});
        const GrpcWireCall* w =
            it == by_key.end() ? nullptr : SentAfter(it->second, entry, &ambiguous);
        counts.starts_ambiguous += ambiguous;
        if (w == nullptr) continue;
        link(i, e->tid, entry, w->tid, w->time, MessageId(), MessageId(w->row));
        ++counts.starts_linked;
      }
    }
  }
}

}  // namespace weft::reconcile
