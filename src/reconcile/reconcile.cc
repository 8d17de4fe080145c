// Event logs -> message trace (reconcile.h): the steps in order. vPath §3 (ATC'09):
// per-connection send/recv streams, normalised into messages at direction turns (§3.2)
// and paired across the two ends of a connection by 4-tuple and lifetime (§3.3); WAP5 §4
// (WWW'06) calls the result "fat messages". Each step lives in its own file:
//   connection_table.h  descriptor -> endpoint, per log: the connection ends and datagrams
//   processes.h         ends inherited across fork, and fork/exec/thread links
//   end_pairing.h       the two ends of each connection, client and server
//   stream_emitter.h    stream connections and pipes -> messages
//   datagram_matcher.h  the two sides of each datagram
//   datagram_emitter.h  datagrams -> messages
//   node_namer.h        node names and clocks
#include "reconcile/reconcile.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "reconcile/connection_table.h"
#include "reconcile/datagram_emitter.h"
#include "reconcile/datagram_matcher.h"
#include "reconcile/end_pairing.h"
#include "reconcile/grpc_handoffs.h"
#include "reconcile/node_namer.h"
#include "reconcile/processes.h"
#include "reconcile/stream_emitter.h"
#include "trace/clock_offsets.h"

namespace weft::reconcile {
namespace {

// What every log holds, gathered in one pass over the logs.
struct Collected {
  // One epoch mapping per boot: the first log's reference is used for every log of that
  // boot, since they share CLOCK_MONOTONIC exactly.
  BootOffsets boot_offsets;
  std::vector<ClockId> clock_of_log;       // per log, its boot's number
  std::vector<std::string> host_of_clock;  // per boot number (in order of first log), its host
  std::vector<ConnectionEnd> ends;
  std::vector<DatagramSocket> udp_sockets;
  std::vector<Datagram> datagrams;
};

Collected CollectLogs(std::span<const capture::EventLog> logs, ReconcileSummary& s) {
  Collected c;
  std::map<std::array<uint8_t, 16>, uint32_t> boot_number;
  c.clock_of_log.resize(logs.size());
  ConnectionTableCounts counts;
  for (uint32_t i = 0; i < logs.size(); ++i) {
    const capture::EventLog& log = logs[i];
    auto [it, inserted] = c.boot_offsets.try_emplace(
        log.header.boot_id, log.header.clock_realtime_ns - log.header.clock_monotonic_ns);
    auto [number, first] =
        boot_number.try_emplace(log.header.boot_id, uint32_t(c.host_of_clock.size()));
    if (first) c.host_of_clock.push_back(log.header.host);
    c.clock_of_log[i] = ClockId(number->second);
    CollectConnectionEnds(log, i, it->second, c.ends, c.udp_sockets, c.datagrams, counts);
    std::string loss = DescribeLoss(log);
    if (!loss.empty()) s.losses.push_back(std::move(loss));
    s.isolated_reads += log.loss.isolated_reads;
    s.held_reads += log.loss.held_reads;
    s.held_bytes += log.loss.held_bytes;
    s.split_waits += log.loss.split_waits;
    s.tls_streams += log.loss.tls_streams;
    s.tls_opaque_streams += log.loss.tls_opaque_streams;
  }
  DateInheritedEndsFromFork(logs, c.boot_offsets, c.ends);
  MergeInheritedEnds(logs, c.ends);
  s.events = counts.events;
  s.skipped_io = counts.skipped_io;
  s.unnamed_io = counts.unnamed_io;
  s.retried_connects = counts.retried_connects;
  return c;
}

// Pipes, then connections numbered in order of their first end's opening (stable call ids).
Status EmitStreams(const std::vector<ConnectionEnd>& ends, StreamEmitter& emitter,
                   ReconcileSummary& s) {
  WEFT_ASSIGN_OR_RETURN(std::vector<ConnectionPair> pairs, PairEnds(ends));
  auto open_time = [](const ConnectionPair& p) {
    TimeNs c = p.client != nullptr ? p.client->open_ns : INT64_MAX;
    TimeNs v = p.server != nullptr ? p.server->open_ns : INT64_MAX;
    return std::min(c, v);
  };
  std::stable_sort(pairs.begin(), pairs.end(),
                   [&](const ConnectionPair& a, const ConnectionPair& b) {
                     return open_time(a) < open_time(b);
                   });
  uint32_t pipes = 0;
  for (const ConnectionEnd& end : ends) {
    if (!end.pipe || end.merged_away || end.io.empty()) continue;
    ++s.pipes;
    emitter.EmitPipe(end, ++pipes);
  }
  uint32_t number = 0;
  for (const ConnectionPair& pair : pairs) {
    bool both = pair.client != nullptr && pair.server != nullptr;
    s.connections += both ? 2 : 1;
    ++(both ? s.matched : s.half_traced);
    emitter.Emit(pair, ++number);
  }
  return Status::Ok();
}

// Datagrams in time order of their first observed side, for stable call ids (at equal
// times, in the order the logs were read).
void EmitDatagrams(const Collected& c, DatagramEmitter& emitter) {
  std::vector<DatagramMessage> messages = MatchDatagrams(c.udp_sockets, c.datagrams);
  std::vector<std::tuple<TimeNs, const Datagram*, uint32_t>> order;  // sorted without
  order.reserve(messages.size());                                    // chasing pointers
  for (uint32_t i = 0; i < messages.size(); ++i) {
    const Datagram* d = messages[i].send != nullptr ? messages[i].send : messages[i].recv;
    order.emplace_back(d->send ? d->entry_ns : d->exit_ns, d, i);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [time, first, i] : order) emitter.Emit(messages[i]);
}

// Hosts: their times are on their own clocks, mapped to the epoch by their realtime
// clocks; how far those disagree is estimated from the messages between them (WAP5 §5.2),
// reported, and left in the data: times are never shifted.
void EstimateHostOffsets(const Trace& trace, std::span<const ClockId> clock_of_node,
                         std::span<const std::string> host_of_clock, ReconcileSummary& s) {
  if (host_of_clock.size() <= 1) return;
  s.host_offsets = EstimateClockOffsets(trace, clock_of_node, host_of_clock).pairs;
}

}  // namespace

Result<NodeNaming> ParseNodeNaming(std::string_view name) {
  if (name == "host") return NodeNaming::kHost;
  if (name == "process") return NodeNaming::kProcess;
  if (name == "thread") return NodeNaming::kThread;
  if (name == "name") return NodeNaming::kName;
  return Status::InvalidArgument("node naming '{}': expected host, process, thread or name", name);
}

Result<Trace> Reconcile(std::span<const capture::EventLog> logs, const ReconcileOptions& options,
                        ReconcileSummary* summary) {
  ReconcileSummary local_summary;
  ReconcileSummary& s = summary != nullptr ? *summary : local_summary;
  s = ReconcileSummary{};
  Collected c = CollectLogs(logs, s);
  TraceBuilder builder;
  NodeNamer namer(logs, c.clock_of_log, options.nodes, builder);
  StreamEmitter stream_emitter(logs, namer, builder, s);
  WEFT_RETURN_IF_ERROR(EmitStreams(c.ends, stream_emitter, s));
  DatagramEmitter datagram_emitter(logs, c.udp_sockets, namer, builder, s);
  EmitDatagrams(c, datagram_emitter);
  AddProcessLinks(
      logs, c.boot_offsets, [&](uint32_t log, int32_t tid) { return namer.Traced(log, tid); },
      builder, s);
  AddGrpcHandoffs(
      logs, c.boot_offsets, stream_emitter.grpc_wire_calls(),
      [&](uint32_t log, int32_t tid) { return namer.Traced(log, tid); }, builder, s.grpc);
  std::vector<ClockId> clock_of_node = namer.ClockOfNode();
  WEFT_ASSIGN_OR_RETURN(Trace trace, std::move(builder).Finish());
  EstimateHostOffsets(trace, clock_of_node, c.host_of_clock, s);
  return trace;
}

}  // namespace weft::reconcile
