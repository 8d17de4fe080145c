// The pcap import on hand-built captures: every link type, IPv6, reordering,
// retransmission, a gap, RST, UDP, protocol boundaries and damaged files, each checked
// message by message.
#include "import/pcap_import.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "import/pcap_writer.h"

namespace weft::import {
namespace {

using testing::Endpoint;
using testing::PcapWriter;
using testing::TcpConversation;
using testing::V4;
using testing::V6;

// A message as the tests compare it.
struct Seen {
  MessageKind kind;
  std::string sender, receiver, call_id;
  int64_t bytes;
  TimeNs time;
  bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << int(s.kind) << " " << s.sender << "->" << s.receiver << " " << s.call_id << " "
            << s.bytes << " @" << s.time;
}

std::vector<Seen> Messages(const Trace& trace) {
  std::vector<Seen> out;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    out.push_back({c.kind[i], std::string(trace.NodeName(c.sender[i])),
                   std::string(trace.NodeName(c.receiver[i])),
                   std::string(trace.strings().Get(c.call_id[i])), c.bytes[i], c.send_time[i]});
    EXPECT_EQ(c.recv_time[i], kNoTime);
  }
  return out;
}

std::string AttributeOf(const Trace& trace, size_t m, std::string_view key) {
  for (const Attribute& a : trace.AttributesOf(MessageId(uint32_t(m)))) {
    if (trace.strings().Get(a.key) == key) return std::string(trace.strings().Get(a.value));
  }
  return "";
}

Trace Import(const PcapWriter& w, PcapImportSummary* summary, PcapImportOptions options = {}) {
  Result<Trace> trace = ImportPcapBytes(w.bytes(), "test.pcap", options, summary);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return trace.ok() ? std::move(*trace) : Trace();
}

constexpr int64_t kUs = 1000;  // ns per µs

// Two exchanges and a close; no processor recognises the bytes.
void TwoExchanges(PcapWriter& w, Endpoint client, Endpoint server) {
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  t.Send(true, std::string(10, 'a'), 1010);
  t.Send(false, std::string(20, 'b'), 1020);
  t.Send(true, std::string(5, 'c'), 1030);
  t.Send(false, std::string(7, 'd'), 1040);
  t.Close(1050);
}

class LinkTypes : public ::testing::TestWithParam<std::pair<uint32_t, bool>> {};

TEST_P(LinkTypes, TwoExchangesBecomeTwoCallsAndTwoReturns) {
  PcapWriter w(GetParam().first, GetParam().second);
  TwoExchanges(w, V4(10, 0, 0, 1, 40000), V4(10, 0, 0, 2, 80));
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:80", "c1.1", 10, 1010 * kUs},
      {MessageKind::kReturn, "10.0.0.2:80", "10.0.0.1", "c1.1", 20, 1020 * kUs},
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:80", "c1.2", 5, 1030 * kUs},
      {MessageKind::kReturn, "10.0.0.2:80", "10.0.0.1", "c1.2", 7, 1040 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(summary.packets, 10u);
  EXPECT_EQ(summary.connections, 1u);
  EXPECT_EQ(summary.messages, 4u);
  EXPECT_EQ(summary.bytes, 42u);
  EXPECT_EQ(summary.gaps + summary.retransmissions + summary.without_handshake, 0u);
  EXPECT_TRUE(summary.problems.empty());
  // The first call carries the SYN's time as its connect time.
  EXPECT_EQ(trace.columns().connect_time[0], 1000 * kUs);
  EXPECT_EQ(std::string(trace.strings().Get(trace.columns().sender_endpoint[0])), "10.0.0.1:40000");
}

INSTANTIATE_TEST_SUITE_P(
    Import, LinkTypes,
    ::testing::Values(std::pair{testing::kEthernet, false}, std::pair{testing::kSll, false},
                      std::pair{testing::kSll2, false}, std::pair{testing::kNull, false},
                      std::pair{testing::kNull, true}, std::pair{testing::kLoop, false},
                      std::pair{testing::kRaw, false}));

TEST(PcapImport, Ipv6OnEveryLinkTypeThatCarriesIt) {
  for (uint32_t link : {testing::kEthernet, testing::kSll, testing::kSll2, testing::kNull,
                        testing::kLoop, testing::kRaw}) {
    PcapWriter w(link);
    TwoExchanges(w, V6(1, 40000), V6(2, 443));
    PcapImportSummary summary;
    Trace trace = Import(w, &summary);
    ASSERT_EQ(trace.size(), 4u) << link;
    EXPECT_EQ(trace.NodeName(trace.columns().sender[0]), "fd00::1");
    EXPECT_EQ(trace.NodeName(trace.columns().receiver[0]), "[fd00::2]:443");
    EXPECT_EQ(std::string(trace.strings().Get(trace.columns().receiver_endpoint[0])),
              "[fd00::2]:443");
    EXPECT_EQ(summary.bytes, 42u);
  }
}

TEST(PcapImport, NodesByIpNameEveryEndByItsAddress) {
  PcapWriter w(testing::kEthernet);
  TwoExchanges(w, V4(10, 0, 0, 1, 40000), V4(10, 0, 0, 2, 80));
  PcapImportSummary summary;
  Trace trace = Import(w, &summary, {.nodes = NodeNaming::kIp});
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace.NodeName(trace.columns().receiver[0]), "10.0.0.2");
}

TEST(PcapImport, ReorderedSegmentsAreOneMessageInSequenceOrder) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  uint32_t s = t.client_seq(), a = t.server_seq();
  // Bytes 0-99, 100-199, 200-299 of the request arrive as 0, 2, 1.
  w.Tcp(client, server, s, a, testing::kAck, std::string(100, 'x'), 1010);
  w.Tcp(client, server, s + 200, a, testing::kAck, std::string(100, 'z'), 1011);
  w.Tcp(client, server, s + 100, a, testing::kAck, std::string(100, 'y'), 1012);
  t.Advance(true, 300);
  t.Send(false, std::string(50, 'r'), 1020);
  t.Close(1030);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:80", "c1.1", 300, 1010 * kUs},
      {MessageKind::kReturn, "10.0.0.2:80", "10.0.0.1", "c1.1", 50, 1020 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(summary.gaps, 0u);
  EXPECT_EQ(summary.retransmissions, 0u);
}

TEST(PcapImport, RetransmissionsAndOverlapsAreCountedOnce) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  uint32_t s = t.client_seq(), a = t.server_seq();
  w.Tcp(client, server, s, a, testing::kAck, std::string(100, 'x'), 1010);
  w.Tcp(client, server, s, a, testing::kAck, std::string(100, 'x'), 1011);       // again
  w.Tcp(client, server, s + 50, a, testing::kAck, std::string(100, 'y'), 1012);  // overlaps
  t.Advance(true, 150);
  t.Send(false, std::string(10, 'r'), 1020);
  t.Close(1030);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace.columns().bytes[0], 150);
  EXPECT_EQ(summary.retransmissions, 2u);
  EXPECT_EQ(summary.gaps, 0u);
}

TEST(PcapImport, AGapIsCountedAndMarkedNotGuessedOver) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  uint32_t s = t.client_seq(), a = t.server_seq();
  w.Tcp(client, server, s, a, testing::kAck, std::string(100, 'x'), 1010);
  // Bytes 100-199 were never captured; 200-299 were, and the server acknowledged all 300.
  w.Tcp(client, server, s + 200, a, testing::kAck, std::string(100, 'z'), 1012);
  w.Tcp(server, client, a, s + 300, testing::kAck, "", 1013);
  t.Advance(true, 300);
  t.Send(false, std::string(10, 'r'), 1020);
  t.Close(1030);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:80", "c1.1", 100, 1010 * kUs},
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:80", "c1.1", 100, 1012 * kUs},
      {MessageKind::kReturn, "10.0.0.2:80", "10.0.0.1", "c1.1", 10, 1020 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(summary.gaps, 1u);
  EXPECT_EQ(summary.gap_bytes, 100u);
  EXPECT_EQ(AttributeOf(trace, 1, kGapAttribute), "100");
  EXPECT_EQ(AttributeOf(trace, 0, kGapAttribute), "");
}

TEST(PcapImport, MissingTailBeforeFinIsAGap) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  t.Send(true, std::string(40, 'q'), 1010);
  t.Advance(false, 30);  // the reply's 30 bytes were not captured
  t.Close(1030);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(summary.gaps, 1u);
  EXPECT_EQ(summary.gap_bytes, 30u);
}

TEST(PcapImport, ResetEndsTheConnectionAndAReusedPortOpensANewOne) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  {
    TcpConversation t(&w, client, server);
    t.Handshake(1000);
    t.Send(true, std::string(10, 'a'), 1010);
    t.Send(false, std::string(20, 'b'), 1020);
    w.Tcp(server, client, t.server_seq(), t.client_seq(), testing::kRst, "", 1030);
    // A straggler after the reset is not a new connection.
    w.Tcp(client, server, t.client_seq(), t.server_seq(), testing::kAck, std::string(3, 'z'), 1031);
  }
  TwoExchanges(w, client, server);  // the same ports again, from t = 1000 µs on
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  EXPECT_EQ(summary.connections, 2u);
  EXPECT_EQ(summary.messages, 6u);
  EXPECT_EQ(summary.bytes, 30u + 42u);
  EXPECT_EQ(summary.without_handshake, 0u);
  std::vector<std::string> ids;
  for (size_t i = 0; i < trace.size(); ++i)
    ids.emplace_back(trace.strings().Get(trace.columns().call_id[i]));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "c2.1"), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), "c1.1"), 2);
}

TEST(PcapImport, WithoutAHandshakeTheClientIsGuessedAndCounted) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 51000), server = V4(10, 0, 0, 2, 5000);
  // The capture began mid-connection, with the server's reply: the higher port (51000) is
  // taken for the client, so the reply is still a RETURN, of a request never captured
  // (c1.0 pairs with no CALL).
  w.Tcp(server, client, 7000, 9000, testing::kAck, std::string(30, 'r'), 1000);
  w.Tcp(client, server, 9000, 7030, testing::kAck, std::string(12, 'q'), 1010);
  // Here only the SYN-ACK was captured: it says who serves, whatever the ports.
  Endpoint low_client = V4(10, 0, 0, 3, 1000), high_server = V4(10, 0, 0, 4, 60000);
  w.Tcp(high_server, low_client, 500, 101, testing::kSyn | testing::kAck, "", 1100);
  w.Tcp(low_client, high_server, 101, 501, testing::kAck, std::string(8, 'q'), 1110);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kReturn, "10.0.0.2:5000", "10.0.0.1", "c1.0", 30, 1000 * kUs},
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:5000", "c1.1", 12, 1010 * kUs},
      {MessageKind::kCall, "10.0.0.3", "10.0.0.4:60000", "c2.1", 8, 1110 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(summary.without_handshake, 2u);
  EXPECT_NE(summary.OneLine().find("2 connections without a captured handshake (client guessed)"),
            std::string::npos);
}

TEST(PcapImport, UdpDatagramsAreMessagesFromWhoeverSpokeFirst) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 50000), server = V4(10, 0, 0, 3, 9999);
  w.Udp(client, server, std::string(33, 'u'), 1000);
  w.Udp(server, client, std::string(44, 'v'), 1001);
  w.Udp(client, server, std::string(5, 'w'), 1002);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kCall, "10.0.0.1", "10.0.0.3:9999", "u1.1", 33, 1000 * kUs},
      {MessageKind::kReturn, "10.0.0.3:9999", "10.0.0.1", "u1.1", 44, 1001 * kUs},
      {MessageKind::kCall, "10.0.0.1", "10.0.0.3:9999", "u1.2", 5, 1002 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(summary.udp_flows, 1u);
  EXPECT_EQ(summary.connections, 0u);
}

TEST(PcapImport, PipelinedHttpRequestsAreCutWhereTheProcessorSays) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 8080);
  TcpConversation t(&w, client, server);
  t.Handshake(1000);
  const std::string request = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string second = "GET /bb HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  t.Send(true, request + second, 1010);  // two requests in one segment
  t.Send(false, reply + reply, 1020);
  t.Close(1030);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  std::vector<Seen> want = {
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:8080", "c1.1", int64_t(request.size()),
       1010 * kUs},
      {MessageKind::kCall, "10.0.0.1", "10.0.0.2:8080", "c1.2", int64_t(second.size()), 1010 * kUs},
      {MessageKind::kReturn, "10.0.0.2:8080", "10.0.0.1", "c1.1", int64_t(reply.size()),
       1020 * kUs},
      {MessageKind::kReturn, "10.0.0.2:8080", "10.0.0.1", "c1.2", int64_t(reply.size()),
       1020 * kUs},
  };
  EXPECT_EQ(Messages(trace), want);
  EXPECT_EQ(AttributeOf(trace, 1, "protocol"), "http");
  EXPECT_EQ(AttributeOf(trace, 1, "http.url"), "/bb");
  EXPECT_EQ(summary.protocol_messages["http"], 4u);
  // With processors off, the same bytes are one message per direction turn.
  PcapImportSummary plain;
  Trace runs = Import(w, &plain, {.protocols = "none"});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs.columns().bytes[0], int64_t(request.size() + second.size()));
}

TEST(PcapImport, ATruncatedFileKeepsWhatCameBeforeAndNamesThePacket) {
  PcapWriter w(testing::kEthernet);
  TwoExchanges(w, V4(10, 0, 0, 1, 40000), V4(10, 0, 0, 2, 80));
  std::string bytes = w.bytes();
  bytes.resize(bytes.size() - 10);  // the 10th packet (the last ACK) is cut short
  PcapImportSummary summary;
  Result<Trace> trace = ImportPcapBytes(bytes, "cut.pcap", {}, &summary);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->size(), 4u);
  ASSERT_EQ(summary.problems.size(), 1u);
  EXPECT_NE(summary.problems[0].find("cut.pcap: packet 10: truncated"), std::string::npos)
      << summary.problems[0];
}

TEST(PcapImport, ABadHeaderIsSkippedNamedAndTheRestKept) {
  PcapWriter w(testing::kEthernet);
  Endpoint client = V4(10, 0, 0, 1, 40000), server = V4(10, 0, 0, 2, 80);
  std::string frame =
      w.LinkHeader(false) + PcapWriter::IpPacket(client, server, 6, std::string(20, '\0'));
  frame[14] = 0x43;  // IPv4 header length 3 words
  w.Record(frame, 999);
  TwoExchanges(w, client, server);
  PcapImportSummary summary;
  Trace trace = Import(w, &summary);
  EXPECT_EQ(trace.size(), 4u);
  EXPECT_EQ(summary.malformed, 1u);
  ASSERT_EQ(summary.problems.size(), 1u);
  EXPECT_EQ(summary.problems[0],
            "test.pcap: packet 1: bad header: IPv4 header length below 5 words (skipped)");
}

// The same packets as a pcapng file (a section header, an interface description, an
// enhanced packet block per packet): read through libpcap, with the same messages.
std::string AsPcapng(const std::string& pcap) {
  auto u32 = [](std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  auto block = [&](uint32_t type, const std::string& body) {
    std::string b;
    u32(b, type);
    u32(b, uint32_t(12 + body.size()));
    b += body;
    u32(b, uint32_t(12 + body.size()));
    return b;
  };
  std::string shb, idb, out;
  u32(shb, 0x1a2b3c4d);
  u32(shb, 1);  // version 1.0
  u32(shb, 0xffffffff);
  u32(shb, 0xffffffff);  // section length unknown
  uint32_t link;
  std::memcpy(&link, pcap.data() + 20, 4);
  u32(idb, link);  // link type (16 bits) and reserved
  u32(idb, 262144);
  out = block(0x0a0d0d0a, shb) + block(1, idb);
  for (size_t at = 24; at + 16 <= pcap.size();) {
    uint32_t seconds, micros, captured;
    std::memcpy(&seconds, pcap.data() + at, 4);
    std::memcpy(&micros, pcap.data() + at + 4, 4);
    std::memcpy(&captured, pcap.data() + at + 8, 4);
    uint64_t ts = uint64_t(seconds) * 1000000 + micros;
    std::string epb;
    u32(epb, 0);
    u32(epb, uint32_t(ts >> 32));
    u32(epb, uint32_t(ts));
    u32(epb, captured);
    u32(epb, captured);
    epb.append(pcap, at + 16, captured);
    epb.append((4 - captured % 4) % 4, '\0');
    out += block(6, epb);
    at += 16 + captured;
  }
  return out;
}

TEST(PcapImport, PcapngGivesTheSameMessages) {
  PcapWriter w(testing::kEthernet);
  TwoExchanges(w, V4(10, 0, 0, 1, 40000), V4(10, 0, 0, 2, 80));
  PcapImportSummary classic, next;
  Trace from_pcap = Import(w, &classic);
  Result<Trace> from_pcapng = ImportPcapBytes(AsPcapng(w.bytes()), "t.pcapng", {}, &next);
  ASSERT_TRUE(from_pcapng.ok()) << from_pcapng.status().message();
  EXPECT_EQ(Messages(*from_pcapng), Messages(from_pcap));
  EXPECT_EQ(next.packets, 10u);
  EXPECT_TRUE(next.problems.empty());
}

TEST(PcapImport, UnsupportedLinkTypeAndNonCaptureFilesAreErrors) {
  PcapWriter wifi(105);  // IEEE 802.11
  Result<Trace> trace = ImportPcapBytes(wifi.bytes(), "wifi.pcap", {}, nullptr);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("wifi.pcap: link type 105 (IEEE802_11) is not supported"),
            std::string::npos)
      << trace.status().message();
  Result<Trace> text = ImportPcapBytes("hello, this is not a capture", "x.txt", {}, nullptr);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message().rfind("x.txt: ", 0), 0u) << text.status().message();
  EXPECT_FALSE(ImportPcapBytes("", "empty.pcap", {}, nullptr).ok());
}

TEST(PcapImport, ProtocolSpecsThatNameNoPortAreRefused) {
  PcapWriter w(testing::kEthernet);
  Result<Trace> trace =
      ImportPcapBytes(w.bytes(), "t.pcap", {.protocols = "redis=/run/r.sock"}, nullptr);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("no Unix paths"), std::string::npos);
}

}  // namespace
}  // namespace weft::import
