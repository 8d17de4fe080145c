#include "trace/trace.h"

#include <gtest/gtest.h>

#include "trace_testing.h"

namespace weft {
namespace {

MessageRecord At(TimeNs send, NodeId from, NodeId to, int64_t bytes) {
  MessageRecord m;
  m.send_time = send;
  m.sender = from;
  m.receiver = to;
  m.bytes = bytes;
  return m;
}

TEST(MessageKindOp, NamesEveryKind) {
  EXPECT_EQ(MessageKindOp(MessageKind::kCall), "CALL_SENT");
  EXPECT_EQ(MessageKindOp(MessageKind::kReturn), "RET_SENT");
  EXPECT_EQ(MessageKindOp(MessageKind::kMessage), "MSG_SENT");
}

TEST(TraceBuilder, SortsByTimeStablyAndRemapsParentsAndAttributes) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  NodeId c = b.Node("c");
  uint32_t r0 = b.Add(At(30, a, c, 0));
  uint32_t r1 = b.Add(At(10, a, c, 1));
  uint32_t r2 = b.Add(At(20, c, a, 2));
  uint32_t r3 = b.Add(At(10, c, a, 3));  // same time as r1, added later: stays after it
  EXPECT_EQ(r0, 0u);
  EXPECT_EQ(r3, 3u);
  b.SetParent(r0, r1);
  b.SetParent(r2, r3);
  StringId key = b.String("k");
  b.AddAttribute(r0, key, b.String("on30"));
  b.AddAttribute(r1, key, b.String("on10"));
  b.AddAttribute(r0, key, b.String("on30second"));
  auto t = std::move(b).Finish();
  ASSERT_TRUE(t.ok()) << t.status().message();
  // New order: r1 (10), r3 (10), r2 (20), r0 (30).
  EXPECT_EQ(t->columns().bytes, (std::vector<int64_t>{1, 3, 2, 0}));
  EXPECT_EQ(t->columns().send_time, (std::vector<TimeNs>{10, 10, 20, 30}));
  EXPECT_EQ(t->columns().sender, (std::vector<NodeId>{a, c, c, a}));
  EXPECT_EQ(t->columns().truth_parent,
            (std::vector<MessageId>{MessageId(), MessageId(), MessageId(1), MessageId(0)}));
  ASSERT_EQ(t->attributes().size(), 3u);
  EXPECT_EQ(t->attributes()[0].message, MessageId(0));
  EXPECT_EQ(t->strings().Get(t->attributes()[0].value), "on10");
  EXPECT_EQ(t->attributes()[1].message, MessageId(3));
  EXPECT_EQ(t->strings().Get(t->attributes()[1].value), "on30");
  EXPECT_EQ(t->attributes()[2].message, MessageId(3));
  EXPECT_EQ(t->strings().Get(t->attributes()[2].value), "on30second");
  EXPECT_EQ(t->StartTime(), 10);
  EXPECT_EQ(t->EndTime(), 30);
}

TEST(TraceBuilder, KeepsAnAlreadySortedTrace) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  b.Add(At(1, a, a, 5));
  b.Add(At(2, a, a, 6));
  b.SetParent(1, 0);
  auto t = std::move(b).Finish();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns().bytes, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(t->columns().truth_parent[1], MessageId(0));
}

TEST(TraceBuilder, RejectsMessageWithoutAnyTime) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  b.Add(At(1, a, a, 0));
  b.Add(At(kNoTime, a, a, 0));
  auto t = std::move(b).Finish();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "message 1 has neither send nor receive time");
}

TEST(TraceBuilder, RejectsParentRowThatDoesNotExist) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  MessageRecord m = At(1, a, a, 0);
  m.truth_parent = MessageId(5);
  b.Add(m);
  auto t = std::move(b).Finish();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "message 0 has parent row 5 that does not exist");
}

TEST(TraceBuilder, RejectsAttributeOfMissingRow) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  b.Add(At(2, a, a, 0));
  b.Add(At(1, a, a, 0));
  b.AddAttribute(7, b.String("k"), b.String("v"));
  auto t = std::move(b).Finish();
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "attribute of row 7, which does not exist");
}

TEST(Trace, SortTimeFallsBackToReceiveTime) {
  TraceBuilder b;
  NodeId a = b.Node("a");
  MessageRecord seen_at_receiver;
  seen_at_receiver.recv_time = 15;
  seen_at_receiver.sender = a;
  seen_at_receiver.receiver = a;
  b.Add(At(20, a, a, 0));
  b.Add(seen_at_receiver);
  b.Add(At(10, a, a, 0));
  auto t = std::move(b).Finish();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->SortTime(MessageId(0)), 10);
  EXPECT_EQ(t->SortTime(MessageId(1)), 15);
  EXPECT_EQ(t->columns().send_time[1], kNoTime);
  EXPECT_EQ(t->SortTime(MessageId(2)), 20);
  EXPECT_EQ(t->StartTime(), 10);
  EXPECT_EQ(t->EndTime(), 20);
}

TEST(Trace, EmptyTrace) {
  auto t = TraceBuilder().Finish();
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->empty());
  EXPECT_EQ(t->StartTime(), 0);
  EXPECT_EQ(t->EndTime(), 0);
  EXPECT_FALSE(t->HasTruth());
  EXPECT_TRUE(t->AttributesOf(MessageId(0)).empty());
}

TEST(Trace, AttributesOfAndRow) {
  Trace t = testing::SampleTrace();
  ASSERT_EQ(t.size(), 4u);
  auto of0 = t.AttributesOf(MessageId(0));
  ASSERT_EQ(of0.size(), 1u);
  EXPECT_EQ(t.strings().Get(of0[0].key), "http.url");
  EXPECT_EQ(t.strings().Get(of0[0].value), "/a b?x=1%");
  auto of1 = t.AttributesOf(MessageId(1));
  ASSERT_EQ(of1.size(), 2u);
  EXPECT_EQ(t.strings().Get(of1[0].key), "sql");
  EXPECT_EQ(t.strings().Get(of1[1].key), "db.name");
  EXPECT_TRUE(t.AttributesOf(MessageId(2)).empty());
  EXPECT_TRUE(t.AttributesOf(MessageId(3)).empty());

  MessageRecord r = t.Row(MessageId(1));
  EXPECT_EQ(r.send_time, 1047680084482205000);
  EXPECT_EQ(r.recv_time, 1047680084482305000);
  EXPECT_EQ(t.NodeName(r.sender), "web");
  EXPECT_EQ(t.NodeName(r.receiver), "db 1");
  EXPECT_EQ(r.kind, MessageKind::kCall);
  EXPECT_EQ(t.strings().Get(r.call_id), "id37");
  EXPECT_EQ(r.bytes, 120);
  EXPECT_EQ(r.sender_thread, ThreadId(7));
  EXPECT_EQ(r.receiver_thread, ThreadId(9));
  EXPECT_EQ(t.strings().Get(r.sender_endpoint), "10.0.0.1:40000");
  EXPECT_EQ(t.strings().Get(r.receiver_endpoint), "10.0.0.2:5432");
  EXPECT_EQ(r.truth_path, PathId(3));
  EXPECT_EQ(r.truth_parent, MessageId(0));
  EXPECT_TRUE(t.HasTruth());
  EXPECT_GT(t.MemoryBytes(), 4u * 61);
}

// Parts of a consistent three-message trace that each FromParts test breaks in one way.
struct Parts {
  NodeTable nodes;
  StringTable strings;
  TraceColumns columns;
  std::vector<Attribute> attributes;

  Parts() {
    nodes.Intern("a");
    nodes.Intern("b");
    strings.Intern("k");
    strings.Intern("v");
    columns.Resize(3);
    columns.send_time = {1, 2, 3};
    columns.sender = {NodeId(0), NodeId(1), NodeId(0)};
    columns.receiver = {NodeId(1), NodeId(0), NodeId(1)};
    columns.truth_parent[2] = MessageId(0);
    attributes = {{MessageId(0), StringId(0), StringId(1)},
                  {MessageId(2), StringId(1), StringId(0)}};
  }
  Status Make() {
    return Trace::FromParts(std::move(nodes), std::move(strings), std::move(columns),
                            std::move(attributes))
        .status();
  }
};

TEST(TraceFromParts, AcceptsConsistentParts) {
  Parts p;
  EXPECT_TRUE(p.Make().ok());
}

TEST(TraceFromParts, RejectsEachInconsistency) {
  struct Case {
    const char* name;
    void (*breaker)(Parts&);
    const char* message;
  };
  const Case cases[] = {
      {"column length", [](Parts& p) { p.columns.bytes.push_back(1); },
       "columns have different lengths (3 and 4)"},
      {"no time", [](Parts& p) { p.columns.send_time[1] = kNoTime; },
       "message 1 has neither send nor receive time"},
      {"time order", [](Parts& p) { p.columns.send_time[2] = 0; },
       "message 2 is out of time order"},
      {"recv time order",
       [](Parts& p) {
         p.columns.send_time[1] = kNoTime;
         p.columns.recv_time[1] = 0;
       },
       "message 1 is out of time order"},
      {"sender", [](Parts& p) { p.columns.sender[1] = NodeId(2); },
       "message 1 names a node that does not exist"},
      {"receiver", [](Parts& p) { p.columns.receiver[0] = NodeId(); },
       "message 0 names a node that does not exist"},
      {"kind", [](Parts& p) { p.columns.kind[2] = MessageKind(3); },
       "message 2 has unknown kind 3"},
      {"call id", [](Parts& p) { p.columns.call_id[0] = StringId(2); },
       "message 0 names a string that does not exist"},
      {"endpoint", [](Parts& p) { p.columns.receiver_endpoint[1] = StringId(9); },
       "message 1 names a string that does not exist"},
      {"parent", [](Parts& p) { p.columns.truth_parent[1] = MessageId(3); },
       "message 1 has parent 3 beyond the last message"},
      {"self parent", [](Parts& p) { p.columns.truth_parent[1] = MessageId(1); },
       "message 1 is its own parent"},
      {"attribute message", [](Parts& p) { p.attributes[1].message = MessageId(3); },
       "attribute 1 refers to a missing message or string"},
      {"attribute key", [](Parts& p) { p.attributes[0].key = StringId(); },
       "attribute 0 refers to a missing message or string"},
      {"attribute value", [](Parts& p) { p.attributes[1].value = StringId(2); },
       "attribute 1 refers to a missing message or string"},
      {"attribute order", [](Parts& p) { std::swap(p.attributes[0], p.attributes[1]); },
       "attribute 1 is out of message order"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Parts p;
    c.breaker(p);
    Status s = p.Make();
    EXPECT_EQ(s.code(), StatusCode::kCorruption);
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(TraceColumns, ResizeFillsUnknownValues) {
  TraceColumns c;
  c.Resize(2);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.send_time[1], kNoTime);
  EXPECT_EQ(c.recv_time[1], kNoTime);
  EXPECT_FALSE(c.sender[1].valid());
  EXPECT_EQ(c.kind[1], MessageKind::kMessage);
  EXPECT_FALSE(c.call_id[1].valid());
  EXPECT_EQ(c.bytes[1], -1);
  EXPECT_EQ(c.sender_thread[1], ThreadId());
  EXPECT_FALSE(c.truth_path[1].valid());
  EXPECT_FALSE(c.truth_parent[1].valid());
  EXPECT_EQ(c.connect_time[1], kNoTime);
}

}  // namespace
}  // namespace weft
