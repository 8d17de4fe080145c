// Helpers shared by the trace tests: a small trace that uses every column, and equality
// checks that report the first difference.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "trace/trace.h"

namespace weft::testing {

// Resolves an optional string id to its text, or "<none>".
inline std::string StringOf(const Trace& t, StringId id) {
  return id.valid() ? std::string(t.strings().Get(id)) : std::string("<none>");
}

// Same messages, compared by value (names and strings as text, not as ids), same
// attributes in the same order. Id numbering of the tables may differ.
inline void ExpectSameMessages(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.size(), b.size());
  const TraceColumns& x = a.columns();
  const TraceColumns& y = b.columns();
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    EXPECT_EQ(x.send_time[i], y.send_time[i]);
    EXPECT_EQ(x.recv_time[i], y.recv_time[i]);
    EXPECT_EQ(a.NodeName(x.sender[i]), b.NodeName(y.sender[i]));
    EXPECT_EQ(a.NodeName(x.receiver[i]), b.NodeName(y.receiver[i]));
    EXPECT_EQ(x.kind[i], y.kind[i]);
    EXPECT_EQ(StringOf(a, x.call_id[i]), StringOf(b, y.call_id[i]));
    EXPECT_EQ(x.bytes[i], y.bytes[i]);
    EXPECT_EQ(x.sender_thread[i], y.sender_thread[i]);
    EXPECT_EQ(x.receiver_thread[i], y.receiver_thread[i]);
    EXPECT_EQ(StringOf(a, x.sender_endpoint[i]), StringOf(b, y.sender_endpoint[i]));
    EXPECT_EQ(StringOf(a, x.receiver_endpoint[i]), StringOf(b, y.receiver_endpoint[i]));
    EXPECT_EQ(x.truth_path[i], y.truth_path[i]);
    EXPECT_EQ(x.truth_parent[i], y.truth_parent[i]);
    EXPECT_EQ(x.connect_time[i], y.connect_time[i]);
    EXPECT_EQ(x.accept_time[i], y.accept_time[i]);
    EXPECT_EQ(x.first_read_time[i], y.first_read_time[i]);
  }
  ASSERT_EQ(a.attributes().size(), b.attributes().size());
  for (size_t i = 0; i < a.attributes().size(); ++i) {
    SCOPED_TRACE("attribute " + std::to_string(i));
    const Attribute& p = a.attributes()[i];
    const Attribute& q = b.attributes()[i];
    EXPECT_EQ(p.message, q.message);
    EXPECT_EQ(a.strings().Get(p.key), b.strings().Get(q.key));
    EXPECT_EQ(a.strings().Get(p.value), b.strings().Get(q.value));
  }
}

// Identical traces: same messages, and the name tables hold the same strings under the
// same ids (what a binary round trip must give).
inline void ExpectIdenticalTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.nodes().size(), b.nodes().size());
  for (uint32_t i = 0; i < a.nodes().size(); ++i) {
    EXPECT_EQ(a.nodes().Get(NodeId(i)), b.nodes().Get(NodeId(i))) << "node " << i;
  }
  ASSERT_EQ(a.strings().size(), b.strings().size());
  for (uint32_t i = 0; i < a.strings().size(); ++i) {
    EXPECT_EQ(a.strings().Get(StringId(i)), b.strings().Get(StringId(i))) << "string " << i;
  }
  EXPECT_TRUE(a.columns().sender == b.columns().sender);
  EXPECT_TRUE(a.columns().call_id == b.columns().call_id);
  for (size_t i = 0; i < a.attributes().size() && i < b.attributes().size(); ++i) {
    EXPECT_EQ(a.attributes()[i].key, b.attributes()[i].key);
    EXPECT_EQ(a.attributes()[i].value, b.attributes()[i].value);
  }
  ExpectSameMessages(a, b);
}

// Five messages between three nodes that use every column: an RPC with call id, a reply,
// a message seen only at the receiver, ground truth with a parent, endpoints, threads,
// bytes, attributes (one with characters that need escaping in text).
inline Trace SampleTrace() {
  TraceBuilder b;
  NodeId web = b.Node("web");
  NodeId db = b.Node("db 1");  // a space: escaped in text
  NodeId client = b.Node("client");
  MessageRecord call;
  call.send_time = 1047680084482205000;
  call.recv_time = 1047680084482305000;
  call.sender = web;
  call.receiver = db;
  call.kind = MessageKind::kCall;
  call.call_id = b.String("id37");
  call.bytes = 120;
  call.sender_thread = ThreadId(7);
  call.receiver_thread = ThreadId(9);
  call.sender_endpoint = b.String("10.0.0.1:40000");
  call.receiver_endpoint = b.String("10.0.0.2:5432");
  call.truth_path = PathId(3);
  MessageRecord ret = call;
  ret.send_time = 1047680084483575000;
  ret.recv_time = 1047680084483600001;
  ret.sender = db;
  ret.receiver = web;
  ret.kind = MessageKind::kReturn;
  ret.bytes = 4096;
  std::swap(ret.sender_thread, ret.receiver_thread);
  std::swap(ret.sender_endpoint, ret.receiver_endpoint);
  MessageRecord request;  // caused the call; its sender was not traced
  request.recv_time = 1047680084482000000;
  request.sender = client;
  request.receiver = web;
  request.truth_path = PathId(3);
  MessageRecord other;  // no optional field at all
  other.send_time = 1047680085000000000;
  other.sender = client;
  other.receiver = db;
  uint32_t call_row = b.Add(call);
  uint32_t ret_row = b.Add(ret);
  uint32_t request_row = b.Add(request);
  b.Add(other);
  b.SetParent(call_row, request_row);
  b.SetParent(ret_row, call_row);
  b.AddAttribute(request_row, b.String("http.url"), b.String("/a b?x=1%"));
  b.AddAttribute(call_row, b.String("sql"), b.String("SELECT 1"));
  b.AddAttribute(call_row, b.String("db.name"), b.String("main"));
  auto t = std::move(b).Finish();
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

}  // namespace weft::testing
