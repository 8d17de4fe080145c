// Reconcile of HTTP/2 (capture's http2 processor): frames of two streams interleaved on
// one connection become one CALL and one RETURN per stream, with the bytes of their own
// frames, the send time of the write that moved their first frame's first byte and the
// receive time of the read that delivered their last frame's last byte; header blocks
// logged in pieces are decoded in order (the second block refers to the first's dynamic
// table entries). Synthetic logs, as in reconcile_protocols_test.cc.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <string>
#include <vector>

#include "capture/protocols/protocol.h"
#include "reconcile/reconcile.h"
#include "synthetic_logs.h"

namespace weft::reconcile {
namespace {

using namespace weft::reconcile::testing;
constexpr uint8_t kHttp2 = capture::protocols::kHttp2;

const capture::Address kClient = Ipv4("10.0.0.1", 40000);
const capture::Address kServer = Ipv4("10.0.0.2", 80);
using Fields = std::vector<std::pair<std::string, std::string>>;

std::string Deflate(nghttp2_hd_deflater* deflater, const Fields& fields) {
  std::vector<nghttp2_nv> nva;
  for (const auto& [name, value] : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                   reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                   value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  std::string out(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(out.data()), out.size(),
                                    nva.data(), nva.size());
  EXPECT_GT(n, 0);
  out.resize(size_t(n > 0 ? n : 0));
  return out;
}

// One direction's bytes as the sender wrote them, with what the processor logs.
struct Direction {
  std::string bytes;
  struct End {
    uint64_t offset;
    Fields attributes;
  };
  std::vector<End> ends;
  std::vector<std::pair<uint64_t, std::string>> blocks;  // (offset, header-block bytes)
  size_t http1 = 0;  // the first ends are HTTP/1.1's (before an upgrade to h2c)

  void Control(size_t length) {
    bytes += std::string(3, '\0');
    bytes[bytes.size() - 1] = char(length);
    bytes += std::string(6, '\0') + std::string(length, 'c');  // SETTINGS-like, stream 0
  }
  // A SETTINGS frame with SETTINGS_HEADER_TABLE_SIZE, reported as capture reports it.
  void TableSize(uint32_t size) {
    std::string payload = std::string("\0\x01", 2);
    for (int shift = 24; shift >= 0; shift -= 8) payload += char(size >> shift);
    bytes += std::string("\0\0\x06\x04\0\0\0\0\0", 9) + payload;
    ends.push_back({bytes.size(),
                    {{"http2.stream", "0"},
                     {"http2.frame", "SETTINGS"},
                     {"http2.length", "6"},
                     {"http2.header_table_size", std::to_string(size)}}});
  }
  // A PUSH_PROMISE on `stream` promising `promised`, its request's header block `block`.
  void Push(uint32_t stream, uint32_t promised, const std::string& block) {
    std::string id = std::string(3, '\0') + char(promised);
    Frame("PUSH_PROMISE", 5, 0x4, stream, id + block, false);
    blocks.push_back({bytes.size() - block.size(), block});
    ends.back().attributes.push_back({"http2.promised", std::to_string(promised)});
  }
  void Frame(const std::string& type, uint8_t code, uint8_t flags, uint32_t stream,
             const std::string& payload, bool block) {
    bytes += char(payload.size() >> 16);
    bytes += char(payload.size() >> 8);
    bytes += char(payload.size());
    bytes += char(code);
    bytes += char(flags);
    bytes += std::string(3, '\0') + char(stream);
    if (block) blocks.push_back({bytes.size(), payload});
    bytes += payload;
    std::string label = type;
    if ((flags & 1) != 0 && (code == 0 || code == 1)) label += " END_STREAM";
    if ((flags & 4) != 0 && (code == 1 || code == 5 || code == 9)) label += " END_HEADERS";
    ends.push_back({bytes.size(),
                    {{"http2.stream", std::to_string(stream)},
                     {"http2.frame", label},
                     {"http2.length", std::to_string(payload.size())}}});
  }
};

TEST(ReconcileHttp2, InterleavedStreamsBecomeOneCallAndReturnEach) {
  nghttp2_hd_deflater* requests = nullptr;
  nghttp2_hd_deflater* responses = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&requests, 4096), 0);
  ASSERT_EQ(nghttp2_hd_deflate_new(&responses, 4096), 0);
  Direction up, down;
  up.bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  up.Control(6);
  std::string a = Deflate(requests, {{":method", "POST"},
                                     {":path", "/pkg.Svc/Get"},
                                     {":scheme", "http"},
                                     {":authority", "h"},
                                     {"content-type", "application/grpc"}});
  std::string b = Deflate(
      requests, {{":method", "GET"}, {":path", "/two"}, {":scheme", "http"}, {":authority", "h"}});
  up.Frame("HEADERS", 1, 0x4, 1, a, true);
  up.Frame("HEADERS", 1, 0x5, 3, b, true);
  up.Frame("DATA", 0, 0x1, 1, "grpc-message", false);
  const uint64_t up_split = up.ends[0].offset - 3;  // the first block ends in the second write

  down.Control(0);
  std::string s3 = Deflate(responses, {{":status", "404"}});
  std::string s1 = Deflate(responses, {{":status", "200"}, {"content-type", "application/grpc"}});
  std::string t1 = Deflate(responses, {{"grpc-status", "5"}});
  down.Frame("HEADERS", 1, 0x5, 3, s3, true);
  down.Frame("HEADERS", 1, 0x4, 1, s1, true);
  down.Frame("DATA", 0, 0x0, 1, "reply", false);
  down.Control(8);  // a PING between
  down.Frame("HEADERS", 1, 0x5, 1, t1, true);
  nghttp2_hd_deflate_del(requests);
  nghttp2_hd_deflate_del(responses);

  // The client writes the requests in two sends (cut inside stream 1's header block) and
  // reads the responses in two reads (the second from stream 1's DATA frame on). The
  // server is traced without a processor.
  const int64_t up1 = int64_t(up_split), up2 = int64_t(up.bytes.size()) - up1;
  const uint64_t down_split = down.ends[1].offset;
  const int64_t down1 = int64_t(down_split), down2 = int64_t(down.bytes.size()) - down1;
  LogBuilder client("a", "/usr/bin/client", 100);
  client.Tcp(3, 50, w::kOpConnect, kClient, kServer).Send(3, 101, 100, 101, int32_t(up1));
  auto log_up = [&](TimeNs entry, TimeNs exit, uint64_t from, uint64_t to) {
    for (const auto& [offset, bytes] : up.blocks) {
      uint64_t lo = std::max(offset, from), hi = std::min(offset + bytes.size(), to);
      if (lo < hi)
        client.HeaderBlock(3, 101, entry, lo, true, true, bytes.substr(lo - offset, hi - lo));
    }
    for (const auto& e : up.ends) {
      if (e.offset > from && e.offset <= to)
        client.Boundary(3, 101, entry, exit, e.offset, true, true, e.attributes, kHttp2);
    }
  };
  log_up(100, 101, 0, up_split);
  client.Send(3, 101, 110, 111, int32_t(up2));
  log_up(110, 111, up_split, up.bytes.size());
  auto log_down = [&](TimeNs entry, TimeNs exit, uint64_t from, uint64_t to) {
    for (const auto& [offset, bytes] : down.blocks) {
      uint64_t lo = std::max(offset, from), hi = std::min(offset + bytes.size(), to);
      if (lo < hi)
        client.HeaderBlock(3, 101, entry, lo, false, false, bytes.substr(lo - offset, hi - lo));
    }
    for (const auto& e : down.ends) {
      if (e.offset > from && e.offset <= to)
        client.Boundary(3, 101, entry, exit, e.offset, false, false, e.attributes, kHttp2);
    }
  };
  client.Recv(3, 101, 200, 230, int32_t(down1));
  log_down(200, 230, 0, down_split);
  client.Recv(3, 101, 240, 260, int32_t(down2));
  log_down(240, 260, down_split, down.bytes.size());

  LogBuilder server("b", "/usr/bin/server", 200);
  server.Tcp(4, 60, w::kOpAccept, kServer, kClient)
      .Recv(4, 201, 105, 106, int32_t(up1))
      .Recv(4, 201, 112, 113, int32_t(up2))
      .Send(4, 201, 150, 151, int32_t(down1))
      .Send(4, 201, 180, 181, int32_t(down2));

  ReconcileSummary summary;
  std::vector<capture::EventLog> logs = {client.Build(), server.Build()};
  Result<Trace> result = Reconcile(logs, ReconcileOptions{}, &summary);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const Trace& trace = *result;
  std::vector<std::string> lines;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string line = fmt::format("{} {} {}B send={} recv={}", MessageKindOp(c.kind[i]),
                                   trace.strings().Get(c.call_id[i]), c.bytes[i],
                                   c.send_time[i] - kEpoch, c.recv_time[i] - kEpoch);
    for (const Attribute& attr : trace.AttributesOf(MessageId(uint32_t(i)))) {
      line += fmt::format(" {}={}", trace.strings().Get(attr.key), trace.strings().Get(attr.value));
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  const int64_t a_bytes = 9 + int64_t(a.size()) + 9 + 12, b_bytes = 9 + int64_t(b.size());
  const int64_t s1_bytes = 9 + int64_t(s1.size()) + 9 + 5 + 9 + int64_t(t1.size());
  const int64_t s3_bytes = 9 + int64_t(s3.size());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       fmt::format("CALL_SENT c1.w1 {}B send=100 recv=113 protocol=http2 "
                                   "http2.stream=1 http.method=POST http.url=/pkg.Svc/Get "
                                   "grpc.method=/pkg.Svc/Get",
                                   a_bytes),
                       fmt::format("CALL_SENT c1.w3 {}B send=110 recv=113 protocol=http2 "
                                   "http2.stream=3 http.method=GET http.url=/two",
                                   b_bytes),
                       fmt::format("RET_SENT c1.w1 {}B send=150 recv=260 protocol=http2 "
                                   "http2.stream=1 http.status=200 grpc.status=5",
                                   s1_bytes),
                       fmt::format("RET_SENT c1.w3 {}B send=150 recv=230 protocol=http2 "
                                   "http2.stream=3 http.status=404",
                                   s3_bytes),
                   }));
  EXPECT_EQ(summary.protocol_messages, (std::map<std::string, uint64_t>{{"http2", 4}}));
}

// The client's requests and the server's responses, each direction written in one call
// and read in one, reconciled: the messages as sorted lines (kind, call id, bytes,
// attributes).
std::vector<std::string> ReconcileLines(const Direction& up, const Direction& down) {
  LogBuilder client("a", "/usr/bin/client", 100);
  client.Tcp(3, 50, w::kOpConnect, kClient, kServer)
      .Send(3, 101, 100, 101, int32_t(up.bytes.size()));
  auto log = [&](const Direction& dir, bool send, TimeNs entry, TimeNs exit) {
    for (const auto& [offset, bytes] : dir.blocks)
      client.HeaderBlock(3, 101, entry, offset, send, send, bytes);
    for (size_t i = 0; i < dir.ends.size(); ++i) {
      client.Boundary(3, 101, entry, exit, dir.ends[i].offset, send, send, dir.ends[i].attributes,
                      i < dir.http1 ? uint8_t(capture::protocols::kHttp) : kHttp2);
    }
  };
  log(up, true, 100, 101);
  client.Recv(3, 101, 200, 230, int32_t(down.bytes.size()));
  log(down, false, 200, 230);
  LogBuilder server("b", "/usr/bin/server", 200);
  server.Tcp(4, 60, w::kOpAccept, kServer, kClient)
      .Recv(4, 201, 105, 106, int32_t(up.bytes.size()))
      .Send(4, 201, 150, 151, int32_t(down.bytes.size()));
  std::vector<capture::EventLog> logs = {client.Build(), server.Build()};
  ReconcileSummary summary;
  Result<Trace> result = Reconcile(logs, ReconcileOptions{}, &summary);
  EXPECT_TRUE(result.ok()) << result.status().message();
  std::vector<std::string> lines;
  if (!result.ok()) return lines;
  const Trace& trace = *result;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string line = fmt::format("{} {} {}B", MessageKindOp(c.kind[i]),
                                   trace.strings().Get(c.call_id[i]), c.bytes[i]);
    for (const Attribute& attr : trace.AttributesOf(MessageId(uint32_t(i)))) {
      line += fmt::format(" {}={}", trace.strings().Get(attr.key), trace.strings().Get(attr.value));
    }
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// A client whose encoder uses a 64 KiB HPACK table, as the server's SETTINGS allowed: the
// size update at the start of its first block is accepted, and both requests decode
// (with 4,096 assumed, the update is refused and neither request has a URL).
TEST(ReconcileHttp2, PeerHeaderTableSizeIsHonoured) {
  nghttp2_hd_deflater* requests = nullptr;
  nghttp2_hd_deflater* responses = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&requests, 65536), 0);
  ASSERT_EQ(nghttp2_hd_deflate_change_table_size(requests, 65536), 0);
  ASSERT_EQ(nghttp2_hd_deflate_new(&responses, 4096), 0);
  std::string big(6000, 'x');  // an entry only a table larger than 4,096 bytes keeps
  Direction up, down;
  up.bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  up.Control(0);
  std::string a = Deflate(requests, {{":method", "GET"}, {":path", "/a"}, {"x-big", big}});
  std::string b = Deflate(requests, {{":method", "GET"}, {":path", "/b"}, {"x-big", big}});
  ASSERT_LT(b.size(), 40u);  // the second block refers to the big entry in the table
  up.Frame("HEADERS", 1, 0x5, 1, a, true);
  up.Frame("HEADERS", 1, 0x5, 3, b, true);
  down.TableSize(65536);
  down.Frame("HEADERS", 1, 0x5, 1, Deflate(responses, {{":status", "200"}}), true);
  down.Frame("HEADERS", 1, 0x5, 3, Deflate(responses, {{":status", "204"}}), true);
  nghttp2_hd_deflate_del(requests);
  nghttp2_hd_deflate_del(responses);
  std::vector<std::string> lines = ReconcileLines(up, down);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("c1.w1"), std::string::npos);
  EXPECT_NE(lines[0].find("http.url=/a"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("http.url=/b"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("http.status=200"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("http.status=204"), std::string::npos) << lines[3];
}

// A reset stream costs nothing later: the server answers stream 1 and resets it after
// END_STREAM (to stop the upload), the client resets stream 3 after sending its request,
// the server refuses stream 5 with RST_STREAM alone; stream 7 after all of them is whole.
TEST(ReconcileHttp2, ResetStreamsLoseNothingLater) {
  nghttp2_hd_deflater* requests = nullptr;
  nghttp2_hd_deflater* responses = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&requests, 4096), 0);
  ASSERT_EQ(nghttp2_hd_deflate_new(&responses, 4096), 0);
  Direction up, down;
  up.bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  up.Control(0);
  const std::string rst = std::string("\0\0\0\x08", 4);  // CANCEL
  for (uint32_t stream : {1, 3, 5, 7}) {
    std::string path = "/s" + std::to_string(stream);
    up.Frame("HEADERS", 1, 0x4, stream, Deflate(requests, {{":method", "POST"}, {":path", path}}),
             true);
  }
  up.Frame("DATA", 0, 0x0, 1, "upload", false);
  up.Frame("DATA", 0, 0x1, 3, "body", false);
  up.Frame("RST_STREAM", 3, 0x0, 3, rst, false);  // the client gives up on stream 3
  up.Frame("DATA", 0, 0x1, 5, "body", false);
  up.Frame("DATA", 0, 0x1, 7, "body", false);
  down.Control(0);
  down.Frame("HEADERS", 1, 0x4, 1, Deflate(responses, {{":status", "413"}}), true);
  down.Frame("DATA", 0, 0x1, 1, "too big", false);
  down.Frame("RST_STREAM", 3, 0x0, 1, std::string("\0\0\0\0", 4), false);    // NO_ERROR
  down.Frame("RST_STREAM", 3, 0x0, 5, std::string("\0\0\0\x07", 4), false);  // REFUSED
  down.Frame("HEADERS", 1, 0x4, 7, Deflate(responses, {{":status", "200"}}), true);
  down.Frame("DATA", 0, 0x1, 7, "ok", false);
  nghttp2_hd_deflate_del(requests);
  nghttp2_hd_deflate_del(responses);
  std::vector<std::string> lines = ReconcileLines(up, down);
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  // One CALL per request stream, one RETURN for 1, 5 and 7 (3 was never answered).
  ASSERT_EQ(lines.size(), 7u) << all;
  EXPECT_NE(lines[0].find("CALL_SENT c1.w1 "), std::string::npos) << all;
  EXPECT_NE(lines[0].find("http.url=/s1"), std::string::npos) << all;
  EXPECT_NE(lines[1].find("CALL_SENT c1.w3 "), std::string::npos) << all;
  EXPECT_NE(lines[2].find("CALL_SENT c1.w5 "), std::string::npos) << all;
  EXPECT_NE(lines[3].find("CALL_SENT c1.w7 "), std::string::npos) << all;
  EXPECT_NE(lines[3].find("http.url=/s7"), std::string::npos) << all;
  EXPECT_NE(lines[4].find("RET_SENT c1.w1 "), std::string::npos) << all;
  EXPECT_NE(lines[4].find("http.status=413"), std::string::npos) << all;
  EXPECT_NE(lines[5].find("RET_SENT c1.w5 13B"), std::string::npos) << all;  // RST_STREAM alone
  EXPECT_NE(lines[6].find("RET_SENT c1.w7 "), std::string::npos) << all;
  EXPECT_NE(lines[6].find("http.status=200"), std::string::npos) << all;
}

// A pushed response (PUSH_PROMISE on stream 1 promising stream 2) is a MSG with the
// promised request's URL and the stream that promised it, never a RETURN; the client's
// RST_STREAM of the pushed stream is no request; stream 1's own reply pairs as before.
TEST(ReconcileHttp2, PushedResponsesAreReportedNotPaired) {
  nghttp2_hd_deflater* requests = nullptr;
  nghttp2_hd_deflater* responses = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&requests, 4096), 0);
  ASSERT_EQ(nghttp2_hd_deflate_new(&responses, 4096), 0);
  Direction up, down;
  up.bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  up.Control(0);
  up.Frame("HEADERS", 1, 0x5, 1, Deflate(requests, {{":method", "GET"}, {":path", "/index"}}),
           true);
  up.Frame("RST_STREAM", 3, 0x0, 2, std::string("\0\0\0\x08", 4), false);
  down.Control(0);
  down.Push(1, 2, Deflate(responses, {{":method", "GET"}, {":path", "/style.css"}}));
  down.Frame("HEADERS", 1, 0x4, 1, Deflate(responses, {{":status", "200"}}), true);
  down.Frame("HEADERS", 1, 0x4, 2, Deflate(responses, {{":status", "200"}, {"x-pushed", "1"}}),
             true);
  down.Frame("DATA", 0, 0x1, 2, "css", false);
  down.Frame("DATA", 0, 0x1, 1, "html", false);
  nghttp2_hd_deflate_del(requests);
  nghttp2_hd_deflate_del(responses);
  std::vector<std::string> lines = ReconcileLines(up, down);
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  ASSERT_EQ(lines.size(), 3u) << all;
  EXPECT_NE(lines[0].find("CALL_SENT c1.w1 "), std::string::npos) << all;
  EXPECT_NE(lines[1].find("MSG_SENT c1.w2 "), std::string::npos) << all;
  EXPECT_NE(lines[1].find("http.status=200 http2.pushed_by=1 http.method=GET http.url=/style.css"),
            std::string::npos)
      << all;
  EXPECT_NE(lines[2].find("RET_SENT c1.w1 "), std::string::npos) << all;
}

// An upgrade to h2c: the HTTP/1.1 request that asked for it is stream 1's CALL (c1.w1),
// answered by stream 1's HTTP/2 response (the RETURN c1.w1); the 101 is a MSG that answers
// nothing; stream 3 after the switch pairs as usual.
TEST(ReconcileHttp2, UpgradedRequestIsStreamOne) {
  nghttp2_hd_deflater* requests = nullptr;
  nghttp2_hd_deflater* responses = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&requests, 4096), 0);
  ASSERT_EQ(nghttp2_hd_deflate_new(&responses, 4096), 0);
  const std::string upgrade =
      "GET /up HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n";
  const std::string switching = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n";
  Direction up, down;
  up.bytes = upgrade;
  up.ends.push_back({upgrade.size(), {{"http.method", "GET"}, {"http.url", "/up"}}});
  up.bytes += "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  up.Control(0);
  up.Frame("HEADERS", 1, 0x5, 3, Deflate(requests, {{":method", "GET"}, {":path", "/three"}}),
           true);
  down.bytes = switching;
  down.ends.push_back({switching.size(), {{"http.status", "101"}}});
  down.Control(0);
  down.Frame("HEADERS", 1, 0x4, 1, Deflate(responses, {{":status", "200"}}), true);
  down.Frame("HEADERS", 1, 0x5, 3, Deflate(responses, {{":status", "404"}}), true);
  down.Frame("DATA", 0, 0x1, 1, "upgraded", false);
  nghttp2_hd_deflate_del(requests);
  nghttp2_hd_deflate_del(responses);
  // The HTTP/1.1 ends are logged as the http processor logs them.
  for (Direction* dir : {&up, &down}) dir->http1 = 1;
  std::vector<std::string> lines = ReconcileLines(up, down);
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  ASSERT_EQ(lines.size(), 5u) << all;
  EXPECT_EQ(lines[0], fmt::format("CALL_SENT c1.w1 {}B protocol=http http.method=GET http.url=/up "
                                  "http2.stream=1",
                                  upgrade.size()))
      << all;
  EXPECT_NE(lines[1].find("CALL_SENT c1.w3 "), std::string::npos) << all;
  EXPECT_NE(lines[1].find("http.url=/three"), std::string::npos) << all;
  EXPECT_EQ(lines[2],
            fmt::format("MSG_SENT c1.h1 {}B protocol=http http.status=101", switching.size()))
      << all;
  EXPECT_NE(lines[3].find("RET_SENT c1.w1 "), std::string::npos) << all;
  EXPECT_NE(lines[3].find("http.status=200"), std::string::npos) << all;
  EXPECT_NE(lines[4].find("RET_SENT c1.w3 "), std::string::npos) << all;
}

}  // namespace
}  // namespace weft::reconcile
