// Reconcile with protocol boundaries (capture --protocols): messages cut at the offsets
// the processors logged, paired in order, carrying the processors' attributes. Synthetic
// logs, as in reconcile_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reconcile/reconcile.h"
#include "synthetic_logs.h"

namespace weft::reconcile {
namespace {

using namespace weft::reconcile::testing;

const capture::Address kClient = Ipv4("10.0.0.1", 40000);
const capture::Address kServer = Ipv4("10.0.0.2", 80);
constexpr uint8_t kTestbed = 2;  // the protocol number the logs give the testbed's frames

// One line per message: kind, call id, bytes, both times, threads, and its attributes
// other than the payload prefix.
std::vector<std::string> Lines(const Trace& trace) {
  std::vector<std::string> lines;
  const TraceColumns& c = trace.columns();
  auto time = [](TimeNs t) { return t == kNoTime ? std::string("-") : std::to_string(t - kEpoch); };
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string line =
        fmt::format("{} {} -> {} {} {}B send={} recv={} tid {}->{}", MessageKindOp(c.kind[i]),
                    trace.NodeName(c.sender[i]), trace.NodeName(c.receiver[i]),
                    trace.strings().Get(c.call_id[i]), c.bytes[i], time(c.send_time[i]),
                    time(c.recv_time[i]), c.sender_thread[i].value(), c.receiver_thread[i].value());
    for (const Attribute& a : trace.AttributesOf(MessageId(uint32_t(i)))) {
      if (trace.strings().Get(a.key) == kPayloadAttribute) continue;
      line += fmt::format(" {}={}", trace.strings().Get(a.key), trace.strings().Get(a.value));
    }
    lines.push_back(line);
  }
  return lines;
}

Trace MustReconcile(const std::vector<capture::EventLog>& logs, ReconcileSummary* summary) {
  Result<Trace> trace = Reconcile(logs, ReconcileOptions{}, summary);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(trace).value() : Trace();
}

using Attrs = std::vector<std::pair<std::string, std::string>>;

// The client writes two pipelined requests (12 + 18 bytes) in one write; the server reads
// them as 10 + 20 bytes, so the first request's end falls in the middle of the second
// read. The two replies (5 + 6 bytes) are written one by one and read in one read. With
// boundaries on both sides, each request and reply is one message: request k pairs with
// reply k, and each carries its processor's attributes.
capture::EventLog PipelinedClient(bool with_boundaries) {
  LogBuilder b("a", "/usr/bin/client", 100);
  b.Tcp(3, 50, w::kOpConnect, kClient, kServer).Send(3, 101, 100, 101, 30);
  if (with_boundaries) {
    b.Boundary(3, 101, 100, 101, 12, true, true, Attrs{{"http.method", "GET"}, {"http.url", "/a"}});
    b.Boundary(3, 101, 100, 101, 30, true, true, Attrs{{"http.method", "PUT"}, {"http.url", "/b"}});
  }
  b.Recv(3, 101, 102, 240, 11);
  if (with_boundaries) {
    b.Boundary(3, 101, 102, 240, 5, false, false, Attrs{{"http.status", "200"}});
    b.Boundary(3, 101, 102, 240, 11, false, false, Attrs{{"http.status", "404"}});
  }
  return b.Build();
}

capture::EventLog PipelinedServer(bool with_boundaries) {
  LogBuilder b("b", "/srv/server", 200);
  b.Tcp(4, 60, w::kOpAccept, kServer, kClient).Recv(4, 201, 90, 110, 10).Recv(4, 201, 111, 120, 20);
  if (with_boundaries) {
    b.Boundary(4, 201, 111, 120, 12, false, true,
               Attrs{{"http.method", "GET"}, {"http.url", "/a"}});
    b.Boundary(4, 201, 111, 120, 30, false, true,
               Attrs{{"http.method", "PUT"}, {"http.url", "/b"}});
  }
  b.Send(4, 202, 200, 201, 5);
  if (with_boundaries) b.Boundary(4, 202, 200, 201, 5, true, false, Attrs{{"http.status", "200"}});
  b.Send(4, 203, 210, 211, 6);
  if (with_boundaries) b.Boundary(4, 203, 210, 211, 11, true, false, Attrs{{"http.status", "404"}});
  return b.Build();
}

TEST(ReconcileProtocols, PipelinedRequestsAreOneMessageEach) {
  std::vector<capture::EventLog> logs = {PipelinedClient(true), PipelinedServer(true)};
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:client -> b:server c1.1 12B send=100 recv=120 tid "
                              "101->201 protocol=http http.method=GET http.url=/a",
                              "CALL_SENT a:client -> b:server c1.2 18B send=100 recv=120 tid "
                              "101->201 protocol=http http.method=PUT http.url=/b",
                              "RET_SENT b:server -> a:client c1.1 5B send=200 recv=240 tid "
                              "202->101 protocol=http http.status=200",
                              "RET_SENT b:server -> a:client c1.2 6B send=210 recv=240 tid "
                              "203->101 protocol=http http.status=404",
                          }));
  EXPECT_EQ(summary.messages, 4u);
  EXPECT_EQ(summary.bytes, 41u);
  EXPECT_EQ(summary.protocol_messages, (std::map<std::string, uint64_t>{{"http", 4}}));
  EXPECT_NE(summary.OneLine().find(", 4 messages ended at protocol boundaries (http 4)"),
            std::string::npos);
}

// Without boundaries the same exchange is one fat message per direction, as before.
TEST(ReconcileProtocols, WithoutBoundariesMessagesEndAtDirectionTurns) {
  std::vector<capture::EventLog> logs = {PipelinedClient(false), PipelinedServer(false)};
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace),
            (std::vector<std::string>{
                "CALL_SENT a:client -> b:server c1.1 30B send=100 recv=120 tid 101->201",
                "RET_SENT b:server -> a:client c1.1 11B send=200 recv=240 tid 202->101",
            }));
  EXPECT_TRUE(summary.protocol_messages.empty());
  EXPECT_EQ(summary.OneLine().find("protocol"), std::string::npos);
}

// Boundaries logged only by the receiver (the sender ran without processors) cut the
// sender's stream just the same: both count the same offsets.
TEST(ReconcileProtocols, ReceiverBoundariesSplitWhenTheSenderHasNone) {
  std::vector<capture::EventLog> logs = {PipelinedClient(false), PipelinedServer(true)};
  Trace trace = MustReconcile(logs, nullptr);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:client -> b:server c1.1 12B send=100 recv=120 tid "
                              "101->201 protocol=http http.method=GET http.url=/a",
                              "CALL_SENT a:client -> b:server c1.2 18B send=100 recv=120 tid "
                              "101->201 protocol=http http.method=PUT http.url=/b",
                              "RET_SENT b:server -> a:client c1.1 5B send=200 recv=240 tid "
                              "202->101 protocol=http http.status=200",
                              "RET_SENT b:server -> a:client c1.2 6B send=210 recv=240 tid "
                              "203->101 protocol=http http.status=404",
                          }));
}

// Only the server was traced: the untraced client's requests are defined by the server's
// reads and boundaries; each is received by the read holding its last byte.
TEST(ReconcileProtocols, BoundariesOfAnUntracedPeersMessages) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 110, 10)
          .Boundary(4, 201, 90, 110, 4, false, true, Attrs{{"http.url", "/x"}})
          .Recv(4, 201, 111, 120, 20)
          .Boundary(4, 201, 111, 120, 12, false, true, Attrs{{"http.url", "/y"}})
          .Boundary(4, 201, 111, 120, 30, false, true, Attrs{{"http.url", "/z"}})
          .Send(4, 202, 200, 201, 9)
          .Build(),
  };
  Trace trace = MustReconcile(logs, nullptr);
  EXPECT_EQ(Lines(trace),
            (std::vector<std::string>{
                "CALL_SENT 10.0.0.1:40000 -> b:server c1.1 4B send=- recv=110 tid 0->201 "
                "protocol=http http.url=/x",
                "CALL_SENT 10.0.0.1:40000 -> b:server c1.2 8B send=- recv=120 tid 0->201 "
                "protocol=http http.url=/y",
                "CALL_SENT 10.0.0.1:40000 -> b:server c1.3 18B send=- recv=120 tid 0->201 "
                "protocol=http http.url=/z",
                "RET_SENT b:server -> 10.0.0.1:40000 c1.1 9B send=200 recv=- tid 202->0",
            }));
}

// A message whose first byte is in the middle of a send starts at that send: its send
// time is the send's entry. The bytes after the last boundary (a processor that gave up,
// or a message cut short) fall back to direction turns.
TEST(ReconcileProtocols, AfterTheLastBoundaryDirectionTurnsCut) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 8)
          .Send(3, 101, 102, 103, 8)
          .Boundary(3, 101, 102, 103, 10, true, true, Attrs{{"http.url", "/1"}})
          .Recv(3, 101, 104, 150, 3)
          .Send(3, 101, 160, 161, 5)
          .Recv(3, 101, 162, 190, 2)
          .Send(3, 101, 200, 201, 4)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 99, 130, 16)
          .Send(4, 201, 131, 132, 3)
          .Recv(4, 201, 163, 170, 5)
          .Send(4, 201, 171, 172, 2)
          .Recv(4, 201, 202, 210, 4)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(Lines(trace),
            (std::vector<std::string>{
                "CALL_SENT a:client -> b:server c1.1 10B send=100 recv=130 tid 101->201 "
                "protocol=http http.url=/1",
                "CALL_SENT a:client -> b:server c1.2 6B send=102 recv=130 tid 101->201",
                "RET_SENT b:server -> a:client c1.1 3B send=131 recv=150 tid 201->101",
                "CALL_SENT a:client -> b:server c1.3 5B send=160 recv=170 tid 101->201",
                "RET_SENT b:server -> a:client c1.2 2B send=171 recv=190 tid 201->101",
                "CALL_SENT a:client -> b:server c1.4 4B send=200 recv=210 tid 101->201",
            }));
  EXPECT_EQ(summary.protocol_messages, (std::map<std::string, uint64_t>{{"http", 1}}));
}

// The testbed's frames may be answered out of order (an event loop replies to pipelined
// calls as each finishes), so replies are not paired with requests by position: call ids
// stay those of the direction-turn runs, shared by every message of a run.
TEST(ReconcileProtocols, OutOfOrderProtocolKeepsCallIdsOfRuns) {
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/client", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 40)
          .Boundary(3, 101, 100, 101, 31, true, true, Attrs{{"testbed.request", "0"}}, kTestbed)
          .Boundary(3, 101, 100, 101, 40, true, true, Attrs{{"testbed.request", "1"}}, kTestbed)
          .Recv(3, 101, 102, 240, 70)
          .Send(3, 101, 300, 301, 31)
          .Boundary(3, 101, 300, 301, 71, true, true, Attrs{{"testbed.request", "0"}}, kTestbed)
          .Build(),
      LogBuilder("b", "/srv/server", 200)
          .Tcp(4, 60, w::kOpAccept, kServer, kClient)
          .Recv(4, 201, 90, 150, 40)
          .Send(4, 201, 200, 201, 35)
          .Boundary(4, 201, 200, 201, 35, true, false, {}, kTestbed)
          .Send(4, 201, 202, 203, 35)
          .Boundary(4, 201, 202, 203, 70, true, false, {}, kTestbed)
          .Recv(4, 201, 302, 310, 31)
          .Build(),
  };
  ReconcileSummary summary;
  Trace trace = MustReconcile(logs, &summary);
  EXPECT_EQ(
      Lines(trace),
      (std::vector<std::string>{
          "CALL_SENT a:client -> b:server c1.1 31B send=100 recv=150 tid 101->201 protocol=testbed "
          "testbed.request=0",
          "CALL_SENT a:client -> b:server c1.1 9B send=100 recv=150 tid 101->201 protocol=testbed "
          "testbed.request=1",
          "RET_SENT b:server -> a:client c1.1 35B send=200 recv=240 tid 201->101 protocol=testbed",
          "RET_SENT b:server -> a:client c1.1 35B send=202 recv=240 tid 201->101 protocol=testbed",
          "CALL_SENT a:client -> b:server c1.2 31B send=300 recv=310 tid 101->201 protocol=testbed "
          "testbed.request=0",
      }));
  EXPECT_EQ(summary.protocol_messages, (std::map<std::string, uint64_t>{{"testbed", 5}}));
}

// DNS over TCP may answer pipelined queries in any order (RFC 7766 §6.2.1.1): the query
// id the processor logs in both directions is the witness that pairs them.
TEST(ReconcileProtocols, WitnessPairsOutOfOrderReplies) {
  constexpr uint8_t kDns = 5;
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/resolver", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Send(3, 101, 100, 101, 60)
          .Boundary(3, 101, 100, 101, 30, true, true, Attrs{{"dns.id", "1"}}, kDns)
          .Boundary(3, 101, 100, 101, 60, true, true, Attrs{{"dns.id", "2"}}, kDns)
          .Recv(3, 101, 102, 240, 90)
          .Boundary(3, 101, 102, 240, 50, false, false, Attrs{{"dns.id", "2"}}, kDns)
          .Boundary(3, 101, 102, 240, 90, false, false, Attrs{{"dns.id", "1"}}, kDns)
          .Build(),
  };
  Trace trace = MustReconcile(logs, nullptr);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "CALL_SENT a:resolver -> 10.0.0.2:80 c1.w1 30B send=100 recv=- tid "
                              "101->0 protocol=dns dns.id=1",
                              "CALL_SENT a:resolver -> 10.0.0.2:80 c1.w2 30B send=100 recv=- tid "
                              "101->0 protocol=dns dns.id=2",
                              "RET_SENT 10.0.0.2:80 -> a:resolver c1.w2 50B send=- recv=240 tid "
                              "0->101 protocol=dns dns.id=2",
                              "RET_SENT 10.0.0.2:80 -> a:resolver c1.w1 40B send=- recv=240 tid "
                              "0->101 protocol=dns dns.id=1",
                          }));
}

// MySQL's server speaks first: its greeting answers no request, so the connection's
// replies are numbered from 0 and the k-th reply still shares its call id with the k-th
// request (descriptor.h server_greets).
TEST(ReconcileProtocols, ServerGreetingAnswersNoRequest) {
  constexpr uint8_t kMysql = 8;
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/mariadb", 100)
          .Tcp(3, 50, w::kOpConnect, kClient, kServer)
          .Recv(3, 101, 90, 95, 20)
          .Boundary(3, 101, 90, 95, 20, false, false, Attrs{{"mysql.server", "10.11"}}, kMysql)
          .Send(3, 101, 100, 101, 30)
          .Boundary(3, 101, 100, 101, 30, true, true, Attrs{{"mysql.command", "Handshake"}}, kMysql)
          .Recv(3, 101, 102, 110, 11)
          .Boundary(3, 101, 102, 110, 31, false, false, Attrs{{"mysql.status", "ok"}}, kMysql)
          .Send(3, 101, 120, 121, 13)
          .Boundary(3, 101, 120, 121, 43, true, true, Attrs{{"mysql.command", "Query"}}, kMysql)
          .Recv(3, 101, 122, 130, 11)
          .Boundary(3, 101, 122, 130, 42, false, false, Attrs{{"mysql.status", "ok"}}, kMysql)
          .Build(),
  };
  Trace trace = MustReconcile(logs, nullptr);
  EXPECT_EQ(Lines(trace), (std::vector<std::string>{
                              "RET_SENT 10.0.0.2:80 -> a:mariadb c1.0 20B send=- recv=95 tid "
                              "0->101 protocol=mysql mysql.server=10.11",
                              "CALL_SENT a:mariadb -> 10.0.0.2:80 c1.1 30B send=100 recv=- tid "
                              "101->0 protocol=mysql mysql.command=Handshake",
                              "RET_SENT 10.0.0.2:80 -> a:mariadb c1.1 11B send=- recv=110 tid "
                              "0->101 protocol=mysql mysql.status=ok",
                              "CALL_SENT a:mariadb -> 10.0.0.2:80 c1.2 13B send=120 recv=- tid "
                              "101->0 protocol=mysql mysql.command=Query",
                              "RET_SENT 10.0.0.2:80 -> a:mariadb c1.2 11B send=- recv=130 tid "
                              "0->101 protocol=mysql mysql.status=ok",
                          }));
}

// A DNS query and its answer over UDP: the DNS processor's record after each datagram's
// call gives the message its attributes, from the sender's log when it has one. The
// resolver's socket was never bound: as capture logs it, its first datagram comes before
// the endpoint record that names it (the kernel bound the socket at that send).
TEST(ReconcileProtocols, DatagramsCarryTheDnsProcessorsAttributes) {
  constexpr uint8_t kDns = 5;
  const capture::Address server = Ipv4("10.0.0.2", 53), client = Ipv4("10.0.0.1", 5000);
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/dig", 100)
          .Datagram(true, 3, 101, 100, 101, 30, 0xaaa, server)
          .Boundary(3, 101, 100, 101, 0, true, true,
                    Attrs{{"dns.id", "7"}, {"dns.name", "example.com"}}, kDns)
          .Udp(3, 101, w::kOpSendto, client)
          .Datagram(false, 3, 101, 102, 200, 60, 0xbbb, server)
          .Build(),
      LogBuilder("b", "/usr/sbin/dnsd", 200)
          .Udp(4, 10, w::kOpBind, server)
          .Datagram(false, 4, 201, 20, 150, 30, 0xaaa, client)
          .Boundary(4, 201, 20, 150, 0, false, true, Attrs{{"dns.id", "7"}}, kDns)
          .Datagram(true, 4, 201, 160, 161, 60, 0xbbb, client)
          .Boundary(4, 201, 160, 161, 0, true, false,
                    Attrs{{"dns.id", "7"}, {"dns.name", "example.com"}}, kDns)
          .Build(),
  };
  ReconcileSummary summary;
  std::vector<std::string> lines = Lines(MustReconcile(logs, &summary));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(" protocol=dns dns.id=7 dns.name=example.com"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find(" protocol=dns dns.id=7 dns.name=example.com"), std::string::npos)
      << lines[1];
  EXPECT_EQ(summary.protocol_messages, (std::map<std::string, uint64_t>{{"dns", 2}}));
  EXPECT_EQ(summary.datagrams_matched, 2u);
  EXPECT_EQ(summary.unnamed_io, 0u);
}

// Two queries from one UDP socket to an untraced resolver, answered in reverse order: the
// dns.id pairs each answer with its query (by position the two would be crossed), so the
// answer resumes the request that asked (tests/infer/precise_witness_test.cc).
TEST(ReconcileProtocols, DnsIdPairsDatagramsAnsweredOutOfOrder) {
  constexpr uint8_t kDns = 5;
  const capture::Address resolver = Ipv4("10.0.0.53", 53), client = Ipv4("10.0.0.1", 5000);
  Attrs one = {{"dns.id", "1"}, {"dns.name", "a.example"}},
        two = {{"dns.id", "2"}, {"dns.name", "b.example"}};
  std::vector<capture::EventLog> logs = {
      LogBuilder("a", "/usr/bin/loop", 100)
          .Datagram(true, 3, 101, 100, 101, 30, 0xa1, resolver)
          .Boundary(3, 101, 100, 101, 0, true, true, one, kDns)
          .Udp(3, 101, w::kOpSendto, client)
          .Datagram(true, 3, 101, 110, 111, 30, 0xa2, resolver)
          .Boundary(3, 101, 110, 111, 0, true, true, two, kDns)
          .Datagram(false, 3, 101, 120, 200, 60, 0xb2, resolver)
          .Boundary(3, 101, 120, 200, 0, false, false, two, kDns)
          .Datagram(false, 3, 101, 210, 300, 60, 0xb1, resolver)
          .Boundary(3, 101, 210, 300, 0, false, false, one, kDns)
          .Build(),
  };
  EXPECT_EQ(Lines(MustReconcile(logs, nullptr)),
            (std::vector<std::string>{
                "CALL_SENT a:loop -> 10.0.0.53:53 u1.w1 30B send=100 recv=- tid 101->0 "
                "protocol=dns dns.id=1 dns.name=a.example",
                "CALL_SENT a:loop -> 10.0.0.53:53 u1.w2 30B send=110 recv=- tid 101->0 "
                "protocol=dns dns.id=2 dns.name=b.example",
                "RET_SENT 10.0.0.53:53 -> a:loop u1.w2 60B send=- recv=200 tid 0->101 protocol=dns "
                "dns.id=2 dns.name=b.example",
                "RET_SENT 10.0.0.53:53 -> a:loop u1.w1 60B send=- recv=300 tid 0->101 protocol=dns "
                "dns.id=1 dns.name=a.example",
            }));
}

}  // namespace
}  // namespace weft::reconcile
