#include "reconcile/reconcile.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include "synthetic_logs.h"

namespace weft::reconcile {
namespace {

using namespace weft::reconcile::testing;

const capture::Address kClient = Ipv4("10.0.0.1", 40000);
const capture::Address kServer = Ipv4("10.0.0.2", 80);

// One line per message, times relative to kEpoch ("-" when not observed, call id "-" when
// none).
std::vector<std::string> Lines(const Trace& trace) {
  std::vector<std::string> lines;
  const TraceColumns& c = trace.columns();
  auto time = [](TimeNs t) { return t == kNoTime ? std::string("-") : std::to_string(t - kEpoch); };
  for (size_t i = 0; i < trace.size(); ++i) {
    lines.push_back(fmt::format(
        "{} {} -> {} {} {}B send={} recv={} tid {}->{} {}->{}", MessageKindOp(c.kind[i]),
        trace.NodeName(c.sender[i]), trace.NodeName(c.receiver[i]),
        c.call_id[i].valid() ? trace.strings().Get(c.call_id[i]) : "-", c.bytes[i],
        time(c.send_time[i]), time(c.recv_time[i]), c.sender_thread[i].value(),
        c.receiver_thread[i].value(), trace.strings().Get(c.sender_endpoint[i]),
        trace.strings().Get(c.receiver_endpoint[i])));
  }
  return lines;
}

Trace MustReconcile(const std::vector<capture::EventLog>& logs, ReconcileSummary* summary,
                    NodeNaming naming = NodeNaming::kHost) {
  Result<Trace> trace = Reconcile(logs, ReconcileOptions{.nodes = naming}, summary);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(trace).value() : Trace();
}

// A 10-byte request written as 4 + 6 and read as 3 + 7; a 20-byte reply written once and
// read as 5 + 15: one CALL and one RETURN, received when the last byte was read.
TEST(Reconcile, SizesSplitDifferentlyOnTheTwoSides) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 105, 4)
          .Send(3, 101, 110, 115, 6)
          .Recv(3, 101, 116, 210, 5)
          .Recv(3, 101, 211, 220, 15)
          .Close(3, 300)
          .Build(),
      LogBuilder("b", "/srv/server", 200, 2)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 120, 3)
          .Recv(4, 201, 121, 130, 7)
          .Send(4, 202, 200, 205, 20)
          .Recv(4, 201, 206, 310, 0)  // end of stream: no message
          .Close(4, 311)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:client -> b:server c1.1 10B send=100 recv=130 tid "
                              "101->201 10.0.0.1:40000->10.0.0.2:80",
                              "RET_SENT b:server -> a:client c1.1 20B send=200 recv=220 tid "
                              "202->101 10.0.0.2:80->10.0.0.1:40000",
                          }));
  EXPECT_EQ(summary.events, 12u);  // 6 per log
  EXPECT_EQ(summary.connections, 2u);
  EXPECT_EQ(summary.matched, 1u);
  EXPECT_EQ(summary.half_traced, 0u);
  EXPECT_EQ(summary.messages, 2u);
  EXPECT_EQ(summary.bytes, 30u);
  EXPECT_EQ(summary.unmatched_bytes, 0u);
  EXPECT_TRUE(summary.losses.empty());
}

// Two requests written back to back before any reply are one fat message (WAP5 §4), and
// so are the two replies; the next exchange is the connection's second call.
TEST(Reconcile, PipelinedRequestsFormOneMessagePerDirectionTurn) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 10)
          .Send(3, 101, 102, 103, 12)
          .Recv(3, 101, 104, 240, 11)
          .Send(3, 101, 300, 301, 7)
          .Recv(3, 101, 302, 420, 3)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 150, 22)
          .Send(4, 201, 200, 201, 5)
          .Send(4, 201, 202, 203, 6)
          .Recv(4, 201, 204, 310, 7)
          .Send(4, 201, 400, 401, 3)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:client -> b:server c1.1 22B send=100 recv=150 tid "
                              "101->201 10.0.0.1:40000->10.0.0.2:80",
                              "RET_SENT b:server -> a:client c1.1 11B send=200 recv=240 tid "
                              "201->101 10.0.0.2:80->10.0.0.1:40000",
                              "CALL_SENT a:client -> b:server c1.2 7B send=300 recv=310 tid "
                              "101->201 10.0.0.1:40000->10.0.0.2:80",
                              "RET_SENT b:server -> a:client c1.2 3B send=400 recv=420 tid "
                              "201->101 10.0.0.2:80->10.0.0.1:40000",
                          }));
  EXPECT_EQ(summary.messages, 4u);
  EXPECT_EQ(summary.bytes, 43u);
}

// The same 4-tuple used by two connections one after the other (vPath §3.3): each end pairs
// with the end whose lifetime it overlaps, even when listed out of order.
TEST(Reconcile, ReusedPortPairsByLifetime) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 10)
          .Recv(3, 101, 102, 130, 1)
          .Close(3, 140)
          .Tcp(3, 1050, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 1100, 1101, 20)
          .Recv(3, 101, 1102, 1130, 2)
          .Close(3, 1140)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(5, 1060, w::kOpAccept, kServer, kClient)
          .Recv(5, 202, 1090, 1110, 20)
          .Send(5, 202, 1120, 1121, 2)
          .Close(5, 1150)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 110, 10)
          .Send(4, 201, 120, 121, 1)
          .Close(4, 150)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:client -> b:server c1.1 10B send=100 recv=110 tid "
                              "101->201 10.0.0.1:40000->10.0.0.2:80",
                              "RET_SENT b:server -> a:client c1.1 1B send=120 recv=130 tid "
                              "201->101 10.0.0.2:80->10.0.0.1:40000",
                              "CALL_SENT a:client -> b:server c2.1 20B send=1100 recv=1110 tid "
                              "101->202 10.0.0.1:40000->10.0.0.2:80",
                              "RET_SENT b:server -> a:client c2.1 2B send=1120 recv=1130 tid "
                              "202->101 10.0.0.2:80->10.0.0.1:40000",
                          }));
  EXPECT_EQ(summary.connections, 4u);
  EXPECT_EQ(summary.matched, 2u);
  EXPECT_EQ(summary.unmatched_bytes, 0u);
}

// Only one end traced: the other is named by its endpoint and the messages keep the one
// timestamp that was observed. An untraced client is defined by the server's reads.
TEST(Reconcile, UntracedPeerIsNamedByEndpoint) {
  std::vector<capture::EventLog> client_only = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 10)
          .Recv(3, 101, 102, 130, 4)
          .Recv(3, 101, 131, 140, 6)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(client_only, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:client -> 10.0.0.2:80 c1.1 10B send=100 recv=- tid 101->0 "
                "10.0.0.1:40000->10.0.0.2:80",
                "RET_SENT 10.0.0.2:80 -> a:client c1.1 10B send=- recv=140 tid 0->101 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.connections, 1u);
  EXPECT_EQ(summary.matched, 0u);
  EXPECT_EQ(summary.half_traced, 1u);

  std::vector<capture::EventLog> server_only = {
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 110, 4)
          .Recv(4, 201, 111, 112, 6)
          .Send(4, 201, 120, 121, 3)
          .Build(),
  };
  EXPECT_EQ(Lines(MustReconcile(server_only, &summary)),
            (std::vector<std::string>{
                "CALL_SENT 10.0.0.1:40000 -> b:server c1.1 10B send=- recv=112 tid 0->201 "
                "10.0.0.1:40000->10.0.0.2:80",
                "RET_SENT b:server -> 10.0.0.1:40000 c1.1 3B send=120 recv=- tid 201->0 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.half_traced, 1u);
}

// A connection used through a dup of its descriptor after the original was closed; a dup2
// onto that descriptor later ends its name, so the I/O after it belongs to no connection.
TEST(Reconcile, DupdDescriptorKeepsTheConnection) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Dup(3, 7, 60)
          .Close(3, 70)
          .Send(7, 101, 100, 101, 10)
          .Recv(7, 101, 102, 130, 5)
          .Dup(9, 7, 200)  // 9 was never named: 7 now names nothing
          .Send(7, 101, 210, 211, 99)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 110, 10)
          .Send(4, 201, 120, 121, 5)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:client -> b:server c1.1 10B send=100 recv=110 tid 101->201 "
                "10.0.0.1:40000->10.0.0.2:80",
                "RET_SENT b:server -> a:client c1.1 5B send=120 recv=130 tid 201->101 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.unnamed_io, 1u);
  EXPECT_EQ(summary.matched, 1u);
}

// A forked server child inherits the accepted socket (endpoint record with op "none") and
// writes the reply: the bytes of both processes form one stream, and --nodes process
// names the child.
TEST(Reconcile, ForkedChildContinuesTheParentsConnection) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 10)
          .Recv(3, 101, 102, 130, 5)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 200, 90, 110, 10)
          .Close(4, 115)
          .Build(),
      LogBuilder("b", "/srv/server", 250)
          .ParentPid(200)
          .Tcp(4, 112, w::kOpNone, kServer, kClient)
          .Send(4, 250, 120, 121, 5)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary, NodeNaming::kProcess)),
            (std::vector<std::string>{
                "CALL_SENT a:client[100] -> b:server[200] c1.1 10B send=100 recv=110 tid 101->200 "
                "10.0.0.1:40000->10.0.0.2:80",
                "RET_SENT b:server[250] -> a:client[100] c1.1 5B send=120 recv=130 tid 250->101 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.matched, 1u);
  EXPECT_EQ(summary.connections, 2u);
}

// postgres's postmaster: accept, fork the backend, close its copy at once. The backend
// names the inherited socket only when it runs, after that close; it still continues the
// postmaster's connection, dated from the fork.
TEST(Reconcile, ChildNamingItsSocketAfterTheParentClosedItStillContinuesIt) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 10)
          .Recv(3, 101, 102, 130, 5)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Fork(250, 70, 80)
          .Close(4, 81)
          .Build(),
      LogBuilder("b", "/srv/server", 250)
          .ParentPid(200)
          .Tcp(4, 95, w::kOpNone, kServer, kClient)
          .Recv(4, 250, 96, 110, 10)
          .Send(4, 250, 120, 121, 5)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary, NodeNaming::kProcess)),
            (std::vector<std::string>{
                "CALL_SENT a:client[100] -> b:server[250] c1.1 10B send=100 recv=110 tid 101->250 "
                "10.0.0.1:40000->10.0.0.2:80",
                "RET_SENT b:server[250] -> a:client[100] c1.1 5B send=120 recv=130 tid 250->101 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.matched, 1u);
  EXPECT_EQ(summary.half_traced, 0u);
}

// A server accepts a second connection (its client connected at `connect`; the accept
// call, when logged, entered at `accept_entry`; the end named at `named`) while another
// thread forks (`fork_entry` to `fork_exit`). The kernel accepted before it copied the
// descriptor table, so the child names both sockets; it answers the first client, and the
// second connection stays the parent's: the child's copy folds into the parent's end.
void ExpectAcceptedDuringAForkStaysTheParents(TimeNs connect, TimeNs accept_entry, TimeNs named,
                                              TimeNs fork_entry, TimeNs fork_exit) {
  const capture::Address second_client = Ipv4("10.0.0.1", 40001);
  LogBuilder server("b", "/srv/server", 200);
  server.Tcp(4, 60, w::kOpAccept, kServer, kClient);
  if (accept_entry >= 0) server.Accept(3, 5, accept_entry, named);
  server.Fork(250, fork_entry, fork_exit)
      .Tcp(5, named, w::kOpAccept, kServer, second_client)
      .Recv(5, 202, 105, 110, 11)
      .Send(5, 202, 120, 121, 6);
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Tcp(4, connect, w::kOpConnect, second_client, kServer)
          .Send(3, 101, 65, 66, 10)
          .Send(4, 102, 100, 101, 11)
          .Recv(3, 101, 67, 131, 5)
          .Recv(4, 102, 102, 141, 6)
          .Build(),
      server.Build(),
      LogBuilder("b", "/srv/server", 250)
          .ParentPid(200)
          .Tcp(4, 95, w::kOpNone, kServer, kClient)
          .Tcp(5, 95, w::kOpNone, kServer, second_client)
          .Recv(4, 250, 96, 97, 10)
          .Send(4, 250, 125, 126, 5)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary, NodeNaming::kProcess)),
            (std::vector<std::string>{
                "CALL_SENT a:client[100] -> b:server[250] c1.1 10B send=65 recv=97 tid 101->250 "
                "10.0.0.1:40000->10.0.0.2:80",
                "CALL_SENT a:client[100] -> b:server[200] c2.1 11B send=100 recv=110 tid 102->202 "
                "10.0.0.1:40001->10.0.0.2:80",
                "RET_SENT b:server[200] -> a:client[100] c2.1 6B send=120 recv=141 tid 202->102 "
                "10.0.0.2:80->10.0.0.1:40001",
                "RET_SENT b:server[250] -> a:client[100] c1.1 5B send=125 recv=131 tid 250->101 "
                "10.0.0.2:80->10.0.0.1:40000",
            }));
  EXPECT_EQ(summary.matched, 2u);
  EXPECT_EQ(summary.half_traced, 0u);
}

// The accept returned (at 75) inside a slow fork (entered at 70, returned at 90): the
// child's copy is dated from the fork's return, after the parent's end was named.
TEST(Reconcile, SocketAcceptedDuringASlowForkStaysTheParents) {
  ExpectAcceptedDuringAForkStaysTheParents(74, -1, 75, 70, 90);
}

// The same race seen later: the accepting thread was inside accept (entered at 62) when
// another forked (70 to 80), and ran again only after the fork had returned, so the
// parent's end is named at 85, after the child's copy (dated 80). The parent's end counts
// from its accept call's entry (a loaded machine did this to the testbed's fork model: a
// client connection's every request was lost).
TEST(Reconcile, SocketAcceptedInACallThatOutlastedAForkStaysTheParents) {
  ExpectAcceptedDuringAForkStaysTheParents(61, 62, 85, 70, 80);
}

TEST(Reconcile, ThreadNamingAndLosses) {
  capture::EventLog killed = LogBuilder("a", "/usr/bin/client", 100)
                                 .Tcp(3, 50, w::kOpConnect, kClient, kServer)
                                 .Send(3, 107, 100, 101, 10)
                                 .Build();
  killed.loss.has_end_record = false;
  killed.loss.dropped_events = 3;
  std::vector<capture::EventLog> logs = {killed};
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary, NodeNaming::kThread)),
            (std::vector<std::string>{
                "CALL_SENT a:client[100/107] -> 10.0.0.2:80 c1.1 10B send=100 recv=- tid 107->0 "
                "10.0.0.1:40000->10.0.0.2:80",
            }));
  EXPECT_EQ(summary.losses,
            (std::vector<std::string>{"a/100.wev: no end record (killed or still running: its last "
                                      "buffers are missing); 3 events dropped by the writer"}));
}

// Two Unix stream connections between the same two processes on one path pair by inode:
// the accepted end names the connecting end's inode (docs/capture.md), whatever the order
// of the accepts.
TEST(Reconcile, UnixStreamConnectionsPairByInode) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Unix(3, 50, w::kOpConnect, "", "/run/db.sock", 401, 0)
          .Unix(4, 55, w::kOpConnect, "", "/run/db.sock", 402, 0)
          .Send(3, 101, 100, 101, 10)
          .Send(4, 102, 102, 103, 20)
          .Recv(3, 101, 104, 150, 1)
          .Recv(4, 102, 105, 160, 2)
          .Build(),
      LogBuilder("a", "/usr/sbin/db", 200)
          .Unix(5, 52, w::kOpAccept, "/run/db.sock", "", 501, 402)
          .Unix(6, 57, w::kOpAccept, "/run/db.sock", "", 502, 401)
          .Recv(5, 205, 90, 110, 20)
          .Recv(6, 206, 91, 111, 10)
          .Send(5, 205, 140, 141, 2)
          .Send(6, 206, 130, 131, 1)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:client -> a:db c1.1 10B send=100 recv=111 tid 101->206 "
                "unix:->unix:/run/db.sock",
                "CALL_SENT a:client -> a:db c2.1 20B send=102 recv=110 tid 102->205 "
                "unix:->unix:/run/db.sock",
                "RET_SENT a:db -> a:client c1.1 1B send=130 recv=150 tid 206->101 "
                "unix:/run/db.sock->unix:",
                "RET_SENT a:db -> a:client c2.1 2B send=140 recv=160 tid 205->102 "
                "unix:/run/db.sock->unix:",
            }));
  EXPECT_EQ(summary.matched, 2u);
  EXPECT_EQ(summary.half_traced, 0u);
}

// A socketpair has no client: each direction's messages are MSG_SENT.
TEST(Reconcile, SocketpairMessagesAreMsg) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/worker", 100)
          .Unix(7, 50, w::kOpSocketpair, "", "", 601, 602)
          .Unix(8, 50, w::kOpSocketpair, "", "", 602, 601)
          .Send(7, 101, 100, 101, 5)
          .Recv(8, 102, 99, 120, 5)
          .Send(8, 102, 130, 131, 2)
          .Recv(7, 101, 129, 140, 2)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary, NodeNaming::kThread)),
            (std::vector<std::string>{
                "MSG_SENT a:worker[100/101] -> a:worker[100/102] c1.1 5B send=100 recv=120 tid "
                "101->102 unix:->unix:",
                "MSG_SENT a:worker[100/102] -> a:worker[100/101] c1.1 2B send=130 recv=140 tid "
                "102->101 unix:->unix:",
            }));
  EXPECT_EQ(summary.matched, 1u);
}

// UDP: one message per datagram, paired by ports, size and payload hash (two identical
// queries pair in order); the bound socket serves, so queries are CALLs and answers
// RETURNs; a query to an untraced server keeps only its send.
TEST(Reconcile, DatagramsPairByPortsAndHash) {
  const capture::Address any_53 = Ipv4("0.0.0.0", 53), any_5000 = Ipv4("0.0.0.0", 5000);
  const capture::Address server = Ipv4("10.0.0.2", 53), client = Ipv4("10.0.0.1", 5000);
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/dig", 100)
          .Udp(3, 50, w::kOpSocket, Ipv4("0.0.0.0", 0))
          .Datagram(true, 3, 101, 100, 101, 30, 0xaaa, server)
          .Udp(3, 101, w::kOpSendto, any_5000)
          .Datagram(false, 3, 101, 102, 200, 60, 0xbbb, server)
          .Datagram(true, 3, 101, 300, 301, 30, 0xaaa, server)
          .Datagram(false, 3, 101, 302, 400, 60, 0xbbb, server)
          .Datagram(true, 3, 101, 500, 501, 30, 0xccc, Ipv4("10.0.0.9", 53))
          .Build(),
      LogBuilder("b", "/usr/sbin/dnsd", 200)
          .Udp(4, 10, w::kOpBind, any_53)
          .Datagram(false, 4, 201, 20, 150, 30, 0xaaa, client)
          .Datagram(true, 4, 201, 160, 161, 60, 0xbbb, client)
          .Datagram(false, 4, 201, 162, 350, 30, 0xaaa, client)
          .Datagram(true, 4, 201, 360, 361, 60, 0xbbb, client)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:dig -> b:dnsd u1.1 30B send=100 recv=150 tid 101->201 "
                "10.0.0.1:5000->10.0.0.2:53",
                "RET_SENT b:dnsd -> a:dig u1.1 60B send=160 recv=200 tid 201->101 "
                "10.0.0.2:53->10.0.0.1:5000",
                "CALL_SENT a:dig -> b:dnsd u1.2 30B send=300 recv=350 tid 101->201 "
                "10.0.0.1:5000->10.0.0.2:53",
                "RET_SENT b:dnsd -> a:dig u1.2 60B send=360 recv=400 tid 201->101 "
                "10.0.0.2:53->10.0.0.1:5000",
                "CALL_SENT a:dig -> 10.0.0.9:53 u2.1 30B send=500 recv=- tid 101->0 "
                "0.0.0.0:5000->10.0.0.9:53",
            }));
  EXPECT_EQ(summary.datagrams, 5u);
  EXPECT_EQ(summary.datagrams_matched, 4u);
  EXPECT_EQ(summary.skipped_io, 0u);
}

// A client that binds a port of its own and connects to its server (unbound sends each
// query upstream from a random port it binds) is a client all the same: its queries are
// CALLs and the server's answers RETURNs, as for a client the kernel bound.
TEST(Reconcile, AUdpClientBoundToItsOwnPortAndConnectedCalls) {
  const capture::Address server = Ipv4("10.0.0.2", 53), client = Ipv4("10.0.0.1", 40000);
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/sbin/unbound", 100)
          .Udp(3, 50, w::kOpBind, Ipv4("0.0.0.0", 40000))
          .Udp(3, 51, w::kOpConnect, client, server)
          .Datagram(true, 3, 101, 100, 101, 30, 0xaaa, server)
          .Datagram(false, 3, 101, 102, 200, 60, 0xbbb, server)
          .Build(),
      LogBuilder("b", "/usr/sbin/dnsd", 200)
          .Udp(4, 10, w::kOpBind, Ipv4("0.0.0.0", 53))
          .Datagram(false, 4, 201, 20, 150, 30, 0xaaa, client)
          .Datagram(true, 4, 201, 160, 161, 60, 0xbbb, client)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:unbound -> b:dnsd u1.1 30B send=100 recv=150 tid 101->201 "
                "10.0.0.1:40000->10.0.0.2:53",
                "RET_SENT b:dnsd -> a:unbound u1.1 60B send=160 recv=200 tid 201->101 "
                "10.0.0.2:53->10.0.0.1:40000",
            }));
}

// Unix datagram sockets: one message per datagram, paired by path, size and payload hash.
// A client bound to its own path and connected to a server's gets its answer there (the
// server, bound and not connected, serves: CALL then RETURN, one call id); an unbound
// client (named after its first send, as capture logs it) sends two identical datagrams,
// paired in order; a send to an untraced abstract name keeps only its send.
TEST(Reconcile, UnixDatagramsPairByPathAndHash) {
  const std::string abstract("\0weft-untraced", 14);
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/ctl", 100)
          .UnixDatagram(3, 50, w::kOpBind, "/tmp/c.sock", "", 801)
          .UnixDatagram(3, 60, w::kOpConnect, "/tmp/c.sock", "/run/ctl", 801)
          .Datagram(true, 3, 101, 100, 101, 8, 0xa, capture::Address{})
          .Datagram(false, 3, 101, 102, 200, 16, 0xb, UnixPath("/run/ctl"))
          .Build(),
      LogBuilder("a", "/usr/sbin/ctld", 200)
          .UnixDatagram(5, 10, w::kOpBind, "/run/ctl", "", 800)
          .Datagram(false, 5, 201, 20, 150, 8, 0xa, UnixPath("/tmp/c.sock"))
          .Datagram(true, 5, 201, 160, 161, 16, 0xb, UnixPath("/tmp/c.sock"))
          .Datagram(false, 5, 201, 170, 260, 3, 0xc, UnixPath(""))
          .Datagram(false, 5, 201, 262, 300, 3, 0xc, UnixPath(""))
          .Build(),
      LogBuilder("a", "/usr/bin/logger", 300)
          .Datagram(true, 4, 301, 250, 251, 3, 0xc, UnixPath("/run/ctl"))
          .UnixDatagram(4, 251, w::kOpSendto, "", "", 802)
          .Datagram(true, 4, 301, 255, 256, 3, 0xc, UnixPath("/run/ctl"))
          .Datagram(true, 4, 301, 270, 271, 5, 0xd, UnixPath(abstract))
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(Lines(MustReconcile(logs, &summary)),
            (std::vector<std::string>{
                "CALL_SENT a:ctl -> a:ctld u1.1 8B send=100 recv=150 tid 101->201 "
                "unix:/tmp/c.sock->unix:/run/ctl",
                "RET_SENT a:ctld -> a:ctl u1.1 16B send=160 recv=200 tid 201->101 "
                "unix:/run/ctl->unix:/tmp/c.sock",
                "CALL_SENT a:logger -> a:ctld u2.1 3B send=250 recv=260 tid 301->201 "
                "unix:->unix:/run/ctl",
                "CALL_SENT a:logger -> a:ctld u2.2 3B send=255 recv=300 tid 301->201 "
                "unix:->unix:/run/ctl",
                "CALL_SENT a:logger -> unix:@weft-untraced u3.1 5B send=270 recv=- tid 301->0 "
                "unix:->unix:@weft-untraced",
            }));
  EXPECT_EQ(summary.unix_datagrams, 5u);
  EXPECT_EQ(summary.unix_datagrams_matched, 4u);
  EXPECT_EQ(summary.datagrams, 0u);
  EXPECT_EQ(summary.skipped_io, 0u);
  EXPECT_EQ(summary.unnamed_io, 0u);
}

// A datagram socketpair has no paths: a send goes to its peer's inode. Two socketpairs
// carry the same 5 bytes; each receive pairs with the send on its own pair, although the
// other pair's send came first. Neither end serves: MSG both ways. Ends of unknown inode
// (0: the kernel did not say) pair with nothing.
TEST(Reconcile, UnixDatagramSocketpairsPairByInode) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/worker", 100)
          .UnixDatagram(7, 50, w::kOpSocketpair, "", "", 601, 602)
          .UnixDatagram(8, 50, w::kOpSocketpair, "", "", 602, 601)
          .UnixDatagram(9, 51, w::kOpSocketpair, "", "", 603, 604)
          .UnixDatagram(10, 51, w::kOpSocketpair, "", "", 604, 603)
          .Datagram(true, 9, 103, 95, 96, 5, 0x1, capture::Address{})
          .Datagram(true, 7, 101, 100, 101, 5, 0x1, capture::Address{})
          .Datagram(false, 8, 102, 99, 120, 5, 0x1, UnixPath(""))
          .Datagram(false, 10, 104, 98, 125, 5, 0x1, capture::Address{})
          .Datagram(true, 8, 102, 130, 131, 2, 0x2, capture::Address{})
          .Datagram(false, 7, 101, 129, 140, 2, 0x2, capture::Address{})
          // Inherited ends whose inodes the kernel did not give: not paired with each other.
          .UnixDatagram(11, 0, w::kOpNone, "", "", 0, 0)
          .UnixDatagram(12, 0, w::kOpNone, "", "", 0, 0)
          .Datagram(true, 11, 105, 200, 201, 7, 0x3, capture::Address{})
          .Datagram(false, 12, 106, 199, 250, 7, 0x3, capture::Address{})
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(
      Lines(MustReconcile(logs, &summary, NodeNaming::kThread)),
      (std::vector<std::string>{
          "MSG_SENT a:worker[100/103] -> a:worker[100/104] - 5B send=95 recv=125 tid 103->104 "
          "unix:->unix:",
          "MSG_SENT a:worker[100/101] -> a:worker[100/102] - 5B send=100 recv=120 tid 101->102 "
          "unix:->unix:",
          "MSG_SENT a:worker[100/102] -> a:worker[100/101] - 2B send=130 recv=140 tid 102->101 "
          "unix:->unix:",
          "CALL_SENT a:worker[100/105] -> unix: u1.1 7B send=200 recv=- tid 105->0 unix:->unix:",
          "RET_SENT unix: -> a:worker[100/106] u1.1 7B send=- recv=250 tid 0->106 unix:->unix:",
      }));
  EXPECT_EQ(summary.unix_datagrams, 5u);
  EXPECT_EQ(summary.unix_datagrams_matched, 3u);
}

// A pipe between a parent and the child that inherited its read end: writes made before
// the reader drained the pipe are one message; an unread pipe of a third process gives
// one message per write to an untraced reader.
TEST(Reconcile, PipeMessagesEndWhenTheReaderDrainsIt) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/bin/sh", 100)
          .Pipe(3, 40, w::kOpPipe, 77)
          .Pipe(4, 40, w::kOpPipe, 77)
          .Close(3, 45)
          .Send(4, 100, 100, 101, 5)
          .Send(4, 100, 102, 103, 7)  // one message: not drained between
          .Send(4, 100, 200, 201, 3)
          .Build(),
      LogBuilder("a", "/usr/bin/sort", 150)
          .ParentPid(100)
          .Pipe(3, 42, w::kOpNone, 77)
          .Recv(3, 150, 90, 110, 4)
          .Recv(3, 150, 111, 130, 8)
          .Recv(3, 150, 131, 210, 3)
          .Build(),
      LogBuilder("a", "/usr/bin/tee", 300)
          .Pipe(1, 10, w::kOpNone, 88)
          .Send(1, 300, 400, 401, 9)
          .Send(1, 300, 402, 403, 2)
          .Build(),
  };
  ReconcileSummary summary;
  EXPECT_EQ(
      Lines(MustReconcile(logs, &summary, NodeNaming::kProcess)),
      (std::vector<std::string>{
          "MSG_SENT a:sh[100] -> a:sort[150] p1.1 12B send=100 recv=130 tid 100->150 "
          "pipe:77->pipe:77",
          "MSG_SENT a:sh[100] -> a:sort[150] p1.2 3B send=200 recv=210 tid 100->150 "
          "pipe:77->pipe:77",
          "MSG_SENT a:tee[300] -> pipe:88 p2.1 9B send=400 recv=- tid 300->0 pipe:88->pipe:88",
          "MSG_SENT a:tee[300] -> pipe:88 p2.2 2B send=402 recv=- tid 300->0 pipe:88->pipe:88",
      }));
  EXPECT_EQ(summary.pipes, 2u);
  EXPECT_EQ(summary.messages, 4u);
  EXPECT_EQ(summary.skipped_io, 0u);
}

// The payload.prefix attributes of a trace, "message hex" each.
std::vector<std::string> PayloadsOf(const Trace& trace) {
  std::vector<std::string> values;
  for (const Attribute& a : trace.attributes()) {
    EXPECT_EQ(trace.strings().Get(a.key), kPayloadAttribute);
    values.push_back(fmt::format("{} {}", a.message.value(), trace.strings().Get(a.value)));
  }
  return values;
}

// A message's first bytes become its payload.prefix attribute, gathered from the calls
// that moved them (the sender's sends; with an untraced sender, as here, the receiver's
// reads), up to the prefix length the log asked for. Logs without that length (none of
// weft capture's) keep the first call's prefix alone.
TEST(Reconcile, PayloadPrefixBecomesAnAttribute) {
  for (uint32_t asked : {0u, 6u, 16u}) {
    SCOPED_TRACE(asked);
    std::vector<capture::EventLog> logs = {
        LogBuilder("b", "/srv/server", 200)
            .Tcp(4, 60, w::kOpAccept, kServer, kClient)
            .Recv(4, 201, 90, 110, 4)
            .Payload("GET ")
            .Recv(4, 201, 111, 112, 6)
            .Payload("/x\r\n")
            .Send(4, 201, 120, 121, 3)
            .Payload(std::string("ok\0", 3))
            .Build(),
    };
    logs[0].header.payload_prefix = asked;
    Trace trace = MustReconcile(logs, nullptr);
    EXPECT_EQ(PayloadsOf(trace), (std::vector<std::string>{asked == 0   ? "0 47455420"
                                                           : asked == 6 ? "0 474554202f78"
                                                                        : "0 474554202f780d0a",
                                                           "1 6f6b00"}));
  }
}

// A sender that writes a message in pieces (tinyproxy writes a request's head line by line):
// the message's prefix goes on through its next sends while each logged all it moved, and
// stops at the first that logged less (a gap would follow). The receiver, which read the
// message in two calls, gives it the first of them as its first read time.
TEST(Reconcile, PayloadPrefixGoesOnThroughTheSendsOfOneMessage) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/proxy", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 4)
          .Payload("GET ")
          .Send(3, 101, 102, 103, 4)
          .Payload("/x\r\n")
          .Send(3, 101, 104, 105, 10)
          .Payload("ab")  // logged 2 of its 10 bytes
          .Send(3, 101, 106, 107, 3)
          .Payload("cde")
          .Recv(3, 101, 150, 160, 2)
          .Payload("ok")
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 100, 104, 8)
          .Recv(4, 201, 105, 110, 13)
          .Send(4, 201, 140, 141, 2)
          .Build(),
  };
  for (capture::EventLog& log : logs) log.header.payload_prefix = 64;
  Trace trace = MustReconcile(logs, nullptr);
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(PayloadsOf(trace), (std::vector<std::string>{"0 474554202f780d0a6162"}));
  EXPECT_EQ(trace.columns().recv_time[0] - trace.columns().first_read_time[0], 6);
  EXPECT_EQ(trace.columns().first_read_time[1], kNoTime);  // one read carried it all
}

// A pipe's messages carry their first bytes too, gathered from the writes that made each
// (ncat --exec relays a request through a pipe: its ids are in those bytes); with the
// writer untraced, each read's own.
TEST(Reconcile, PipeMessagesCarryTheirPayloadPrefix) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/ncat", 100)
          .Pipe(4, 40, w::kOpPipe, 77)
          .Send(4, 100, 100, 101, 4)
          .Payload("GET ")
          .Send(4, 100, 102, 103, 4)  // one message: not drained between
          .Payload("/x\r\n")
          .Send(4, 100, 200, 201, 2)
          .Payload("ok")
          .Build(),
      LogBuilder("a", "/usr/bin/ncat", 150)
          .ParentPid(100)
          .Pipe(3, 42, w::kOpNone, 77)
          .Recv(3, 150, 104, 130, 8)
          .Recv(3, 150, 202, 210, 2)
          .Build(),
      LogBuilder("a", "/usr/bin/sort", 300)
          .Pipe(0, 10, w::kOpNone, 88)
          .Recv(0, 300, 400, 401, 3)
          .Payload("abc")
          .Build(),
  };
  for (capture::EventLog& log : logs) log.header.payload_prefix = 64;
  Trace trace = MustReconcile(logs, nullptr, NodeNaming::kProcess);
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(PayloadsOf(trace),
            (std::vector<std::string>{"0 474554202f780d0a", "1 6f6b", "2 616263"}));
}

TEST(Reconcile, ParseNodeNaming) {
  EXPECT_EQ(ParseNodeNaming("thread").value(), NodeNaming::kThread);
  EXPECT_EQ(ParseNodeNaming("name").value(), NodeNaming::kName);
  EXPECT_EQ(ParseNodeNaming("pod").status().message(),
            "node naming 'pod': expected host, process, thread or name");
}

}  // namespace
}  // namespace weft::reconcile

namespace weft::reconcile {
namespace {

using weft::reconcile::testing::LogBuilder;

// Two hosts (two boot ids) whose realtime clocks disagree by 3 s: each keeps its own
// clock in the trace, and the summary says how far apart they are, from the smallest
// one-way delays both ways (WAP5 §5.2): 100 us each way here, so the estimate is exact.
TEST(Reconcile, EstimatesHowFarTheHostsClocksAreApart) {
  const TimeNs second = 1'000'000'000;
  capture::EventLog client = LogBuilder("a", "/usr/bin/client", 100, 1)
                                 .Tcp(3, 50, w::kOpConnect, kClient, kServer)
                                 .Send(3, 101, 1000, 1010, 10)
                                 .Recv(3, 101, 1020, 300'100, 20)
                                 .Send(3, 101, 400'000, 400'010, 10)
                                 .Recv(3, 101, 400'020, 700'100, 20)
                                 .Build();
  // Host b's realtime clock reads 3 s ahead: its times map to the epoch 3 s later.
  capture::EventLog server = LogBuilder("b", "/srv/server", 200, 2)
                                 .Tcp(4, 60, w::kOpAccept, kServer, kClient)
                                 .Recv(4, 201, 900, 1100, 10)
                                 .Send(4, 201, 300'000, 300'010, 20)
                                 .Recv(4, 201, 300'020, 400'100, 10)
                                 .Send(4, 201, 700'000, 700'010, 20)
                                 .Build();
  server.header.clock_realtime_ns += 3 * second;
  ReconcileSummary summary;
  Trace trace = MustReconcile({client, server}, &summary);
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.columns().recv_time[0] - trace.columns().send_time[0],
            3 * second + 100);  // not shifted
  ASSERT_EQ(summary.host_offsets.size(), 1u);
  EXPECT_EQ(summary.host_offsets[0].a, "a");
  EXPECT_EQ(summary.host_offsets[0].b, "b");
  EXPECT_EQ(summary.host_offsets[0].offset, 3 * second);
  EXPECT_EQ(summary.host_offsets[0].messages, 4u);
  EXPECT_EQ(summary.HostClocks(), "host clocks: b is 3s ahead of a (4 messages)");
}

}  // namespace
}  // namespace weft::reconcile

namespace weft::reconcile {
namespace {

using weft::reconcile::testing::LogBuilder;

std::vector<std::string> LinkLines(const Trace& trace) {
  std::vector<std::string> lines;
  for (const ProcessLink& l : trace.process_links()) {
    lines.push_back(fmt::format("{} {} {}/{} -> {}/{}", ProcessLinkKindName(l.kind),
                                l.time - kEpoch, trace.NodeName(l.from), l.from_thread.value(),
                                trace.NodeName(l.to), l.to_thread.value()));
  }
  return lines;
}

// A server forks a child that execs a helper (a CGI). The fork links the forking thread to
// the child's thread, the exec links the child's thread to both threads of the helper. A
// fork whose child was not traced, and a later process that reused the child's pid (another
// parent), get no link.
TEST(Reconcile, ForkAndExecBecomeProcessLinks) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/srv/server", 200).Fork(250, 70, 80).Fork(260, 300, 310).Build(),
      LogBuilder("b", "/srv/server", 250).ParentPid(200).OpenedAt(75).Exec(250, 90).Build(),
      LogBuilder("b", "/usr/lib/cgi/helper", 250)
          .ParentPid(200)
          .OpenedAt(95)
          .Tcp(3, 96, w::kOpConnect, kClient, kServer)
          .Send(3, 251, 100, 101, 10)
          .Build(),
      LogBuilder("b", "/usr/bin/other", 250)
          .ParentPid(1)
          .OpenedAt(500)
          .Send(3, 250, 501, 502, 1)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary, NodeNaming::kProcess);
  EXPECT_EQ(LinkLines(trace), (std::vector<std::string>{
                                  "FORK 70 b:server[200]/200 -> b:server[250]/250",
                                  "EXEC 90 b:server[250]/250 -> b:helper[250]/250",
                                  "EXEC 90 b:server[250]/250 -> b:helper[250]/251",
                              }));
  EXPECT_EQ(summary.forks_linked, 1u);
  EXPECT_EQ(summary.execs_linked, 1u);
  EXPECT_NE(summary.OneLine().find(", 1 forks and 1 execs linked to the processes they started"),
            std::string::npos);
  // The message keeps its place: links add no message.
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT b:helper[250] -> 10.0.0.2:80 c1.1 10B send=100 recv=- tid "
                              "251->0 10.0.0.1:40000->10.0.0.2:80",
                          }));
}

// ncat --exec: each client's handler forks a child that execs a relay. A handler whose
// client only connected exits at once, and leaves its child to init before the child
// (pid 260) or the exec'd image (pid 250's) has opened its log: they name init as their
// parent. Opened soon after the fork or the exec (the exec'd one with the next exec
// index), they are still linked; a process that took the pid over later (10 s after the
// exec, beyond kImageStart) is not, nor an image of another parent without the next
// exec index.
TEST(Reconcile, ForkAndExecOfAParentThatExitedAtOnceBecomeProcessLinks) {
  const TimeNs second = 1'000'000'000;
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/usr/bin/ncat", 200).Fork(250, 70, 80).Fork(260, 100, 110).Build(),
      LogBuilder("b", "/usr/bin/ncat", 250).ParentPid(200).OpenedAt(75).Exec(250, 90).Build(),
      LogBuilder("b", "/usr/bin/relay", 250)
          .ParentPid(1)
          .ExecIndex(1)
          .OpenedAt(95)
          .Send(3, 250, 96, 97, 1)
          .Build(),
      LogBuilder("b", "/usr/bin/ncat", 260)
          .ParentPid(1)
          .OpenedAt(105)
          .Send(3, 260, 106, 107, 1)
          .Build(),
      LogBuilder("b", "/usr/bin/other", 260)
          .ParentPid(1)
          .OpenedAt(100 + 10 * second)
          .Send(3, 260, 10 * second + 200, 10 * second + 201, 1)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary, NodeNaming::kProcess);
  EXPECT_EQ(LinkLines(trace), (std::vector<std::string>{
                                  "FORK 70 b:ncat[200]/200 -> b:ncat[250]/250",
                                  "EXEC 90 b:ncat[250]/250 -> b:relay[250]/250",
                                  "FORK 100 b:ncat[200]/200 -> b:ncat[260]/260",
                              }));
  EXPECT_TRUE(summary.losses.empty()) << summary.losses[0];
  // The child of pid 260 left no log: the later process is not taken for it. Nor is the
  // relay the exec'd image without the next exec index.
  logs.erase(logs.begin() + 3);
  logs[2].header.exec_index = 0;
  ReconcileSummary without;
  trace = MustReconcile(logs, &without, NodeNaming::kProcess);
  EXPECT_EQ(LinkLines(trace), (std::vector<std::string>{
                                  "FORK 70 b:ncat[200]/200 -> b:ncat[250]/250",
                              }));
  EXPECT_EQ(without.losses.size(), 2u);
}

// An exec whose new image left no log, and forked children that left none (a program
// that dropped root can no longer create files in the capture directory; a statically
// linked or set-user-ID image is not traced at all): no link, and each loss is told on
// the line of the log that lost it.
TEST(Reconcile, ExecWithoutANewImageIsALoss) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/srv/server", 200).Fork(250, 70, 80).Fork(260, 300, 310).Build(),
      LogBuilder("b", "/srv/server", 250).ParentPid(200).OpenedAt(75).Exec(250, 90).Build(),
  };
  logs[1].loss.dropped_events = 2;  // its own loss: the exec's goes on the same line
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary, NodeNaming::kProcess);
  EXPECT_EQ(LinkLines(trace), (std::vector<std::string>{
                                  "FORK 70 b:server[200]/200 -> b:server[250]/250",
                              }));
  EXPECT_EQ(summary.execs_linked, 0u);
  EXPECT_EQ(summary.forks_linked, 1u);
  EXPECT_EQ(summary.losses,
            (std::vector<std::string>{
                "b/250.wev: 2 events dropped by the writer; its exec started an image that "
                "left no log (statically linked, set-user-ID, or not allowed to create its log "
                "in the capture directory after dropping privileges: capture with --owner "
                "USER): that image's calls are missing",
                "b/200.wev: 1 of its children left no log (not allowed to create one in the "
                "capture directory after the parent dropped privileges: capture with --owner "
                "USER; or a statically linked program it spawned): their calls are missing",
            }));
}

// A connect that fails (refused: the connection never moves a byte) and is closed, then a
// connect to another backend on the same thread with no I/O between: the retry is dated
// from the first attempt (connect_time), so fragment gives its call to the input whose turn
// started the attempt (a proxy failing over). With an input between, it is not a retry, nor
// with an accept between (hitch connects onward for each client it accepts: one that closed
// at once, a port probe, left a connect unused).
TEST(Reconcile, AConnectRetryingAFailedOneIsDatedFromTheFirstAttempt) {
  enum Between { kNothing, kAccept, kInput };
  auto connect_time = [](Between between, uint64_t* retried) {
    LogBuilder proxy("a", "/usr/sbin/proxy", 100);
    proxy.Tcp(5, 10, w::kOpConnect, Ipv4("10.0.0.1", 40000), Ipv4("10.0.0.2", 81)).Close(5, 12);
    if (between != kNothing) {
      proxy.Accept(3, 7, 12, 12)
          .Tcp(7, 12, w::kOpAccept, Ipv4("10.0.0.1", 80), Ipv4("10.0.0.9", 5000));
    }
    if (between == kInput) proxy.Recv(7, 100, 12, 12, 10);
    proxy.Tcp(5, 13, w::kOpConnect, Ipv4("10.0.0.1", 40001), Ipv4("10.0.0.2", 80))
        .Send(5, 100, 20, 21, 10);
    ReconcileSummary summary;
    Trace trace = MustReconcile({proxy.Build()}, &summary);
    *retried = summary.retried_connects;
    const TraceColumns& c = trace.columns();
    for (size_t i = 0; i < trace.size(); ++i) {
      // (The input between is a call from an untraced client: its send time is kNoTime.)
      if (c.kind[i] == MessageKind::kCall && c.send_time[i] == kEpoch + 20)
        return c.connect_time[i] == kNoTime ? TimeNs(-1) : c.connect_time[i] - kEpoch;
    }
    return TimeNs(-1);
  };
  uint64_t retried = 0;
  EXPECT_EQ(connect_time(kNothing, &retried), 10);
  EXPECT_EQ(retried, 1u);
  EXPECT_EQ(connect_time(kAccept, &retried), 13);
  EXPECT_EQ(retried, 0u);
  EXPECT_EQ(connect_time(kInput, &retried), 13);
  EXPECT_EQ(retried, 0u);
}

// A connection accepted by one thread and read by another (haproxy's threads hand accepted
// clients to each other): the reading thread took it up at its first read that found
// nothing, which its call's accept_time gives (a layer-4 proxy connects for the client then,
// infer/fragment). The accepting thread's own such read dates it likewise; with none, the
// accept does, and a call another thread read without one has no accept time.
TEST(Reconcile, AnAcceptedConnectionIsTakenUpByItsFirstReadThatFindsNothing) {
  auto accept_time = [](int32_t reader, bool found_nothing) {
    LogBuilder proxy("a", "/usr/sbin/proxy", 100);
    proxy.Tcp(7, 10, w::kOpAccept, Ipv4("10.0.0.1", 80), Ipv4("10.0.0.9", 5000));
    if (found_nothing) proxy.Recv(7, reader, 14, 15, -EAGAIN).Recv(7, reader, 20, 21, -EAGAIN);
    proxy.Recv(7, reader, 29, 30, 10);
    ReconcileSummary summary;
    Trace trace = MustReconcile({proxy.Build()}, &summary);
    const TraceColumns& c = trace.columns();
    EXPECT_EQ(trace.size(), 1u);
    EXPECT_EQ(c.recv_time[0], kEpoch + 30);
    return c.accept_time[0] == kNoTime ? TimeNs(-1) : c.accept_time[0] - kEpoch;
  };
  EXPECT_EQ(accept_time(100, false), 10);
  EXPECT_EQ(accept_time(100, true), 15);
  EXPECT_EQ(accept_time(101, true), 15);
  EXPECT_EQ(accept_time(101, false), -1);
}

// Over TLS the thread takes a client up when it finishes the handshake, its last ciphertext
// before the first plaintext byte: hitch connects onward for the client then.
TEST(Reconcile, AnAcceptedTlsConnectionIsTakenUpByItsHandshake) {
  LogBuilder proxy("a", "/usr/sbin/hitch", 100);
  proxy.Tcp(7, 10, w::kOpAccept, Ipv4("10.0.0.1", 443), Ipv4("10.0.0.9", 5000))
      .Transport(7, 100, 14, 15, 517)
      .Transport(7, 100, 18, 19, 250)
      .Recv(7, 100, 29, 30, 10)
      .Transport(7, 100, 31, 32, 100);
  Trace trace = MustReconcile({proxy.Build()}, nullptr);
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(trace.columns().accept_time[0], kEpoch + 19);
}

// A Go program's log (the preload library's image record): reconcile names the process whose
// I/O capture could not see, and does not call its missing end record a kill (Go exits
// without the C library's exit).
TEST(Reconcile, AGoProgramIsToldAsALoss) {
  std::vector<capture::EventLog> logs = {LogBuilder("b", "/usr/bin/caddy", 300).Build()};
  logs[0].loss.go_runtime = true;
  logs[0].loss.has_end_record = false;
  ReconcileSummary summary;
  MustReconcile(logs, &summary, NodeNaming::kProcess);
  EXPECT_EQ(summary.losses,
            (std::vector<std::string>{
                "b/300.wev: caddy (pid 300) is a Go program: Go makes its system calls itself, "
                "not through the C library, so none of its I/O was seen; its connections show "
                "only at the traced ends, and requests through it are cut there",
            }));
}

// A thread made with pthread_create logged its start with its creator: one THREAD link from
// the creator to it, at the creator's call, with thread and with process node naming. A
// thread of a forked child that the child created itself is linked to its creator, not to
// the fork; a thread record whose creation failed (result not a tid) links nothing.
TEST(Reconcile, ThreadRecordsBecomeThreadLinks) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/srv/server", 200)
          .Fork(250, 70, 80)
          .Thread(201, 200, 100, 120)
          .Thread(202, 201, 130, 140)
          .Thread(203, 0, 150, 160)
          .Send(3, 202, 200, 201, 10)
          .Build(),
      LogBuilder("b", "/srv/server", 250)
          .ParentPid(200)
          .OpenedAt(75)
          .Send(3, 250, 300, 301, 1)
          .Thread(251, 250, 310, 320)
          .Send(3, 251, 330, 331, 1)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary, NodeNaming::kProcess);
  EXPECT_EQ(LinkLines(trace), (std::vector<std::string>{
                                  "FORK 70 b:server[200]/200 -> b:server[250]/250",
                                  "THREAD 100 b:server[200]/200 -> b:server[200]/201",
                                  "THREAD 130 b:server[200]/201 -> b:server[200]/202",
                                  "THREAD 310 b:server[250]/250 -> b:server[250]/251",
                              }));
  EXPECT_EQ(summary.forks_linked, 1u);
  EXPECT_EQ(summary.threads_linked, 3u);
  EXPECT_NE(summary.OneLine().find(
                ", 1 forks and 0 execs linked to the processes they started, 3 threads "
                "linked to the threads that created them"),
            std::string::npos)
      << summary.OneLine();
  Trace per_thread = MustReconcile(logs, nullptr, NodeNaming::kThread);
  ASSERT_EQ(per_thread.process_links().size(), 4u);
  const ProcessLink& nested = per_thread.process_links()[2];
  EXPECT_EQ(nested.kind, ProcessLinkKind::kThread);
  EXPECT_NE(nested.from, nested.to);
  EXPECT_EQ(per_thread.NodeName(nested.from), "b:server[200/201]");
  EXPECT_EQ(per_thread.NodeName(nested.to), "b:server[200/202]");
}

// A node is named by the command its process was run as when that is a plain command
// (Debian's python3, a link to python3.11), else by its executable (a command line the
// program rewrote); a forked worker that rewrote its command line goes by its master's
// program, and an image that replaced it by exec by its own.
TEST(Reconcile, NodesAreNamedByTheCommandRunAndWorkersByTheirMasters) {
  auto client = [](int32_t pid, int32_t fd, uint16_t port) {
    return LogBuilder("a", "/usr/bin/curl", pid)
        .Arguments({"curl", "http://b/"})
        .Tcp(fd, 50, w::kOpConnect, Ipv4("10.0.0.1", port), kServer)
        .Send(fd, pid, 100, 101, 10)
        .Recv(fd, pid, 102, 200, 20)
        .Build();
  };
  auto worker = [](int32_t pid, uint32_t exec_index, std::string executable,
                   std::vector<std::string> arguments, int32_t fd, uint16_t client_port) {
    return LogBuilder("b", std::move(executable), pid)
        .ParentPid(200)
        .ExecIndex(exec_index)
        .OpenedAt(20)
        .Arguments(std::move(arguments))
        .Tcp(fd, 60, w::kOpAccept, kServer, Ipv4("10.0.0.1", client_port))
        .Recv(fd, pid, 99, 120, 10)
        .Send(fd, pid, 150, 151, 20)
        .Build();
  };
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/usr/bin/python3.11", 200)
          .OpenedAt(10)
          .Arguments({"/usr/bin/python3", "/usr/bin/gunicorn", "app:app"})
          .Build(),
      worker(201, 0, "/usr/bin/python3.11", {"gunicorn: worker [app:app]"}, 4, 40001),
      worker(202, 1, "/usr/libexec/helper", {"helper: busy"}, 5, 40002),
      client(100, 3, 40001),
      client(101, 3, 40002),
  };
  Trace trace = MustReconcile(logs, nullptr);
  std::set<std::string> pairs;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i)
    pairs.insert(
        fmt::format("{} -> {}", trace.NodeName(c.sender[i]), trace.NodeName(c.receiver[i])));
  EXPECT_EQ(pairs, (std::set<std::string>{"a:curl -> b:python3", "b:python3 -> a:curl",
                                          "a:curl -> b:helper", "b:helper -> a:curl"}));
}

// A server that forks a child per request, each answering on the connection it inherited
// (a CGI). Capture counts offsets per process, so the second child logs its reply's end at
// byte 7 of the replies, as the first did; reconcile moves it past the first child's 7
// bytes, and each reply is one message with its own status.
TEST(Reconcile, SecondForkedChildsBoundariesFollowTheFirstChildsBytes) {
  using Attrs = std::vector<std::pair<std::string, std::string>>;
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 200, 100, 101, 10)
          .Boundary(4, 200, 100, 101, 10, false, true, Attrs{{"http.url", "/1"}})
          .Fork(250, 102, 103)
          .Recv(4, 200, 200, 201, 10)
          .Boundary(4, 200, 200, 201, 20, false, true, Attrs{{"http.url", "/2"}})
          .Fork(260, 202, 203)
          .Build(),
      LogBuilder("b", "/srv/server", 250)
          .ParentPid(200)
          .OpenedAt(104)
          .Tcp(4, 104, w::kOpNone, kServer, kClient)
          .Send(4, 250, 110, 111, 7)
          .Boundary(4, 250, 110, 111, 7, true, false, Attrs{{"http.status", "200"}})
          .Build(),
      LogBuilder("b", "/srv/server", 260)
          .ParentPid(200)
          .OpenedAt(204)
          .Tcp(4, 204, w::kOpNone, kServer, kClient)
          .Send(4, 260, 210, 211, 7)
          .Boundary(4, 260, 210, 211, 7, true, false, Attrs{{"http.status", "404"}})
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary, NodeNaming::kProcess);
  std::vector<std::string> lines = Lines(trace);
  for (size_t i = 0; i < trace.size(); ++i) {
    for (const Attribute& a : trace.AttributesOf(MessageId(uint32_t(i)))) {
      if (trace.strings().Get(a.key) != "protocol") {
        lines[i] += fmt::format(" {}={}", trace.strings().Get(a.key), trace.strings().Get(a.value));
      }
    }
  }
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "CALL_SENT 10.0.0.1:40000 -> b:server[200] c1.1 10B send=- recv=101 tid "
                       "0->200 10.0.0.1:40000->10.0.0.2:80 http.url=/1",
                       "RET_SENT b:server[250] -> 10.0.0.1:40000 c1.1 7B send=110 recv=- tid "
                       "250->0 10.0.0.2:80->10.0.0.1:40000 http.status=200",
                       "CALL_SENT 10.0.0.1:40000 -> b:server[200] c1.2 10B send=- recv=201 tid "
                       "0->200 10.0.0.1:40000->10.0.0.2:80 http.url=/2",
                       "RET_SENT b:server[260] -> 10.0.0.1:40000 c1.2 7B send=210 recv=- tid "
                       "260->0 10.0.0.2:80->10.0.0.1:40000 http.status=404",
                   }));
  EXPECT_EQ(summary.protocol_messages["http"], 4u);
}

}  // namespace
}  // namespace weft::reconcile
