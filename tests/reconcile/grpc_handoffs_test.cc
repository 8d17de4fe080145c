// AddGrpcHandoffs (reconcile/grpc_handoffs.h) on a hand-written log: each server call taken
// and each client call started is tied to the one stream with its metadata, and calls whose
// metadata are alike are counted, never guessed.
#include "reconcile/grpc_handoffs.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace weft::reconcile {
namespace {

using capture::Event;
using capture::EventOp;

Event ApiCall(EventOp op, int32_t tid, TimeNs entry, TimeNs exit, uint64_t call, uint64_t hash) {
  Event e{.op = op};
  e.tid = tid;
  e.entry_ns = entry;
  e.exit_ns = exit;
  e.object = call;
  e.second = hash;
  return e;
}

TEST(GrpcHandoffs, TiesEachCallToTheStreamWithItsMetadata) {
  TraceBuilder builder;
  const NodeId a = builder.Node("A"), c = builder.Node("C"), b = builder.Node("B");
  // Rows 0-3: two requests A read (poller thread 5), one write of thread 9 carrying A's two
  // calls to B; rows 4-5: two requests whose metadata are alike.
  auto add = [&](NodeId from, NodeId to, TimeNs send, TimeNs recv, const char* call) {
    MessageRecord r;
    r.kind = MessageKind::kCall;
    r.sender = from;
    r.receiver = to;
    r.send_time = send;
    r.recv_time = recv;
    r.call_id = builder.String(call);
    return builder.Add(r);
  };
  std::vector<GrpcWireCall> wire = {
      {.log = 0, .sent = false, .hash = 11, .tid = 5, .time = 20, .row = add(c, a, 10, 20, "c1")},
      {.log = 0, .sent = false, .hash = 12, .tid = 5, .time = 21, .row = add(c, a, 11, 21, "c2")},
      {.log = 0, .sent = true, .hash = 21, .tid = 9, .time = 40, .row = add(a, b, 40, 45, "b1")},
      {.log = 0, .sent = true, .hash = 22, .tid = 9, .time = 40, .row = add(a, b, 40, 46, "b2")},
      {.log = 0, .sent = false, .hash = 13, .tid = 5, .time = 47, .row = add(c, a, 41, 47, "c3")},
      {.log = 0, .sent = false, .hash = 13, .tid = 5, .time = 48, .row = add(c, a, 42, 48, "c4")},
  };
  capture::EventLog log;
  log.events = {
      ApiCall(EventOp::kGrpcTake, 1, 24, 25, 0x10, 11),
      ApiCall(EventOp::kGrpcTake, 2, 25, 26, 0x20, 12),
      ApiCall(EventOp::kGrpcCreate, 1, 28, 29, 0x30, 0),
      ApiCall(EventOp::kGrpcStart, 1, 30, 31, 0x30, 21),
      ApiCall(EventOp::kGrpcCreate, 2, 29, 30, 0x40, 0),
      ApiCall(EventOp::kGrpcStart, 2, 31, 32, 0x40, 22),
      ApiCall(EventOp::kGrpcStart, 1, 60, 61, 0x10, 0),  // the reply's metadata: no client call
      ApiCall(EventOp::kGrpcTake, 3, 50, 51, 0x50, 13),  // c3 or c4?
  };
  BootOffsets offsets = {{log.header.boot_id, 0}};
  GrpcHandoffCounts counts;
  std::vector<capture::EventLog> logs = {log};
  AddGrpcHandoffs(
      logs, offsets, wire, [&](uint32_t, int32_t) { return a; }, builder, counts);
  EXPECT_EQ(counts.takes, 3u);
  EXPECT_EQ(counts.takes_linked, 2u);
  EXPECT_EQ(counts.takes_ambiguous, 1u);
  EXPECT_EQ(counts.starts, 2u);
  EXPECT_EQ(counts.starts_linked, 2u);
  EXPECT_EQ(counts.starts_ambiguous, 0u);

  Result<Trace> trace = std::move(builder).Finish();
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const TraceColumns& col = trace->columns();
  using Row = std::tuple<uint32_t, TimeNs, uint32_t, TimeNs, std::string, std::string>;
  std::vector<Row> links;
  auto call_of = [&](MessageId m) {
    return m.valid() ? std::string(trace->strings().Get(col.call_id[m.value()])) : "-";
  };
  for (const ProcessLink& l : trace->process_links()) {
    EXPECT_EQ(l.kind, ProcessLinkKind::kHandoff);
    links.emplace_back(l.from_thread.value(), l.time, l.to_thread.value(), l.TakenAt(),
                       call_of(l.from_message), call_of(l.to_message));
  }
  // The reader at its read to the taker at its take; the starter at its start to the writer
  // at its write.
  EXPECT_EQ(links, (std::vector<Row>{{5, 20, 1, 25, "c1", "-"},
                                     {5, 21, 2, 26, "c2", "-"},
                                     {1, 30, 9, 40, "-", "b1"},
                                     {2, 31, 9, 40, "-", "b2"}}));
}

// A busy process whose calls carry no metadata of their own: every call has the same hash.
// Calls taken one by one, each read just before its take, are each the one fit and are
// tied in order; calls read in a burst before any take are each counted as ambiguous.
// 200,000 of each: the searches stop at the second fit, where scanning every candidate
// made this quadratic.
TEST(GrpcHandoffs, AlikeCallsAreTiedInOrderOrCountedAtScale) {
  constexpr uint32_t kCalls = 200'000;
  TraceBuilder builder;
  const NodeId a = builder.Node("A"), c = builder.Node("C");
  std::vector<GrpcWireCall> wire;
  capture::EventLog log;
  for (uint32_t i = 0; i < kCalls; ++i) {
    MessageRecord r;
    r.kind = MessageKind::kCall;
    r.sender = c;
    r.receiver = a;
    r.send_time = 10 * TimeNs(i);
    r.recv_time = 10 * TimeNs(i) + 1;
    r.call_id = builder.String("c" + std::to_string(i));
    wire.push_back(
        {.log = 0, .sent = false, .hash = 7, .tid = 5, .time = r.recv_time, .row = builder.Add(r)});
    log.events.push_back(ApiCall(EventOp::kGrpcTake, 1, r.recv_time + 1, r.recv_time + 2, i, 7));
  }
  const TimeNs burst = 10 * TimeNs(kCalls) + 100;  // all read, then all taken
  for (uint32_t i = 0; i < kCalls; ++i) {
    wire.push_back({.log = 0, .sent = false, .hash = 8, .tid = 5, .time = burst});
    log.events.push_back(ApiCall(EventOp::kGrpcTake, 1, burst + 1 + i, burst + 2 + i, i, 8));
  }
  BootOffsets offsets = {{log.header.boot_id, 0}};
  GrpcHandoffCounts counts;
  std::vector<capture::EventLog> logs = {log};
  AddGrpcHandoffs(
      logs, offsets, wire, [&](uint32_t, int32_t) { return a; }, builder, counts);
  EXPECT_EQ(counts.takes, 2 * kCalls);
  EXPECT_EQ(counts.takes_linked, kCalls);
  EXPECT_EQ(counts.takes_ambiguous, kCalls);  // none claimed, so every take has them all
}

}  // namespace
}  // namespace weft::reconcile
