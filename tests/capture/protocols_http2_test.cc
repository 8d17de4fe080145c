// The HTTP/2 processor (capture/protocols/http2.cc): an end at the last byte of every
// stream frame with its stream, type, flags and length, nothing for control frames, the
// header-block bytes each call carried, the split-anywhere property, and failure on
// malformed input.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "capture/protocols/descriptor.h"
#include "capture/protocols/protocol.h"
#include "capture/protocols_feed.h"

namespace weft::capture::protocols {
namespace {

using testing::ExpectSplitInvariant;
using testing::Feed;
using testing::Stream;

constexpr Direction kRequest = Direction::kRequest;
constexpr Direction kResponse = Direction::kResponse;
const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string s;
  s += char(payload.size() >> 16);
  s += char(payload.size() >> 8);
  s += char(payload.size());
  s += char(type);
  s += char(flags);
  s += char(stream >> 24);
  s += char(stream >> 16);
  s += char(stream >> 8);
  s += char(stream);
  return s + payload;
}
std::string Settings() { return Frame(4, 0, 0, std::string(6, '\x01')); }

std::string Attrs(uint32_t stream, const std::string& frame, size_t length) {
  return "http2.stream=" + std::to_string(stream) + "|http2.frame=" + frame +
         "|http2.length=" + std::to_string(length);
}

TEST(Http2ProcessorTest, DescriptorAndDetection) {
  const ProtocolDescriptor& d = Describe(kHttp2);
  EXPECT_STREQ(d.name, "http2");
  EXPECT_FALSE(d.replies_in_order);
  EXPECT_STREQ(d.witness_key, "http2.stream");
  EXPECT_TRUE(d.detected);
  Protocol p = kNone;
  ASSERT_TRUE(ParseProtocol("http2", 5, &p));
  EXPECT_EQ(p, kHttp2);
  EXPECT_EQ(Detect(reinterpret_cast<const uint8_t*>(kPreface.data()), kPreface.size()), kHttp2);
  EXPECT_EQ(Detect(reinterpret_cast<const uint8_t*>("PRI "), 4), kHttp2);
  EXPECT_EQ(Detect(reinterpret_cast<const uint8_t*>("PRI"), 3), kNone);
  // A server's SETTINGS before the client's preface (gRPC's servers send it at once).
  auto response = [](const std::string& s) {
    return DetectResponse(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(response(Settings()), kHttp2);
  EXPECT_EQ(response(Frame(4, 0, 0, "")), kHttp2);
  EXPECT_EQ(response(Settings().substr(0, 8)), kNone);
  EXPECT_EQ(response(Frame(4, 1, 0, "")), kNone);                    // an ACK answers something
  EXPECT_EQ(response(Frame(4, 0, 0, std::string(5, '\0'))), kNone);  // not whole settings
  EXPECT_EQ(response(Frame(4, 0, 1, std::string(6, '\0'))), kNone);  // not stream 0
  EXPECT_EQ(response(Frame(1, 4, 1, "h")), kNone);
  EXPECT_EQ(response("J\0\0\0\x0a"
                     "10.11.19-MariaDB"),
            kNone);  // a MySQL greeting
}

// Two streams interleaved, control frames between, padding and priority fields.
TEST(Http2ProcessorTest, InterleavedRequests) {
  std::string stream = kPreface + Settings() + Frame(8, 0, 0, "\0\0\0\x10");  // WINDOW_UPDATE
  std::vector<std::pair<uint64_t, std::string>> expected;
  auto add = [&](const std::string& frame, uint32_t id, const std::string& label) {
    stream += frame;
    expected.push_back({stream.size(), Attrs(id, label, frame.size() - 9)});
  };
  add(Frame(1, 0x4, 1, "abc"), 1, "HEADERS END_HEADERS");
  add(Frame(1, 0x0 | 0x20, 3, std::string(5, 'p') + "de"), 3, "HEADERS");
  add(Frame(9, 0x4, 3, "fg"), 3, "CONTINUATION END_HEADERS");
  stream += Frame(6, 0, 0, std::string(8, 'i'));  // PING
  add(Frame(0, 0x1, 3, "body3"), 3, "DATA END_STREAM");
  add(Frame(0, 0x8, 1, std::string("\x02", 1) + "xyz" + "00"), 1, "DATA");
  add(Frame(0, 0x1, 1, ""), 1, "DATA END_STREAM");
  add(Frame(3, 0, 5, std::string(4, '\0')), 5, "RST_STREAM");
  stream += Frame(7, 0, 0, std::string(8, '\0'));  // GOAWAY
  Stream run = Feed(kHttp2, kRequest, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(run.ends[i].offset, expected[i].first) << i;
    EXPECT_EQ(run.ends[i].attributes, expected[i].second) << i;
  }
  ExpectSplitInvariant(kHttp2, kRequest, stream);
}

TEST(Http2ProcessorTest, ResponsesAndPushPromise) {
  std::string stream = Settings() + Frame(4, 1, 0, "");  // SETTINGS, SETTINGS ACK
  std::string push = Frame(5, 0x4, 1, std::string("\0\0\0\x02", 4) + "hp");
  std::string headers = Frame(1, 0x5, 1, "h1");
  stream += push + headers;
  Stream run = Feed(kHttp2, kResponse, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 2u);
  EXPECT_EQ(run.ends[0].attributes, Attrs(1, "PUSH_PROMISE END_HEADERS", 6) + "|http2.promised=2");
  EXPECT_EQ(run.ends[1].offset, stream.size());
  EXPECT_EQ(run.ends[1].attributes, Attrs(1, "HEADERS END_STREAM END_HEADERS", 2));
  ExpectSplitInvariant(kHttp2, kResponse, stream);
}

// A padded PUSH_PROMISE: the promised stream id after the pad length, the header block
// without the padding.
TEST(Http2ProcessorTest, PaddedPushPromise) {
  std::string stream =
      Settings() +
      Frame(5, 0x4 | 0x8, 3, std::string("\x02\0\0\x01\x2a", 5) + "blk" + std::string(2, '\0'));
  Stream run = Feed(kHttp2, kResponse, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0].attributes,
            Attrs(3, "PUSH_PROMISE END_HEADERS", 10) + "|http2.promised=298");
  ExpectSplitInvariant(kHttp2, kResponse, stream);
}

// A SETTINGS frame that sets SETTINGS_HEADER_TABLE_SIZE (id 1) is reported with the last
// value it sets; one without it, and an ACK, are not; a SETTINGS frame whose length is not
// a whole number of settings, or an ACK with a payload, breaks the protocol.
TEST(Http2ProcessorTest, SettingsHeaderTableSize) {
  auto setting = [](uint16_t id, uint32_t value) {
    std::string s;
    s += char(id >> 8);
    s += char(id);
    for (int shift = 24; shift >= 0; shift -= 8) s += char(value >> shift);
    return s;
  };
  std::string stream = kPreface + Frame(4, 0, 0, setting(3, 100) + setting(1, 65536)) +
                       Frame(4, 1, 0, "") + Frame(4, 0, 0, setting(4, 1 << 20)) +
                       Frame(4, 0, 0, setting(1, 0) + setting(1, 8192) + setting(5, 16384)) +
                       Frame(1, 0x5, 1, "h1");
  Stream run = Feed(kHttp2, kRequest, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 3u);
  EXPECT_EQ(run.ends[0].offset, kPreface.size() + 9 + 12);
  EXPECT_EQ(run.ends[0].attributes,
            "http2.stream=0|http2.frame=SETTINGS|http2.length=12|"
            "http2.header_table_size=65536");
  EXPECT_EQ(run.ends[1].attributes,
            "http2.stream=0|http2.frame=SETTINGS|http2.length=18|"
            "http2.header_table_size=8192");
  EXPECT_EQ(run.ends[2].attributes, Attrs(1, "HEADERS END_STREAM END_HEADERS", 2));
  ExpectSplitInvariant(kHttp2, kRequest, stream);

  EXPECT_TRUE(Feed(kHttp2, kRequest, kPreface + Frame(4, 0, 0, std::string(7, '\0'))).failed);
  EXPECT_TRUE(Feed(kHttp2, kRequest, kPreface + Settings() + Frame(4, 1, 0, setting(1, 0))).failed);
}

// Which bytes are header-block bytes, call by call, fed in every split.
std::string BlockBytes(const std::string& stream, size_t piece, Protocol protocol = kHttp2) {
  Parser parser;
  Init(&parser, protocol, kRequest);
  std::string block;
  for (size_t at = 0; at < stream.size();) {
    size_t left = std::min(piece, stream.size() - at);
    const auto* p = reinterpret_cast<const uint8_t*>(stream.data()) + at;
    while (left > 0) {
      bool ended = false;
      size_t n = Consume(&parser, p, left, &ended);
      size_t begin = 0, count = 0;
      if (HeaderBlockBytes(&parser, &begin, &count)) {
        EXPECT_LE(begin + count, n);
        block.append(reinterpret_cast<const char*>(p) + begin, count);
      }
      p += n;
      left -= n;
      at += n;
    }
  }
  return block;
}

// HTTP/2 by upgrade: the client's `Upgrade: h2c` request ends as HTTP/1.1, then the
// preface and the client's frames are HTTP/2's; the server's 101 ends as HTTP/1.1, then
// its SETTINGS and frames (stream 1 answers the upgrade request) are HTTP/2's. Header-block
// bytes after the switch are where they are, in every split.
const std::string kUpgradeRequest =
    "GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
    "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";

TEST(Http2ProcessorTest, UpgradeFromHttp11) {
  std::string requests =
      kUpgradeRequest + kPreface + Settings() + Frame(1, 0x5, 3, "h3") + Frame(4, 1, 0, "");
  Stream up = Feed(kHttp, kRequest, requests);
  EXPECT_FALSE(up.failed);
  ASSERT_EQ(up.ends.size(), 2u);
  EXPECT_EQ(up.ends[0], (testing::End{kUpgradeRequest.size(), "http.method=GET|http.url=/up"}));
  EXPECT_EQ(up.ends[1].offset, requests.size() - 9);
  EXPECT_EQ(up.ends[1].attributes, Attrs(3, "HEADERS END_STREAM END_HEADERS", 2));
  ExpectSplitInvariant(kHttp, kRequest, requests);
  for (size_t piece : {size_t(1), size_t(7), requests.size()})  // turned http2 within a call
    EXPECT_EQ(BlockBytes(requests, piece, kHttp), "h3") << piece;

  const std::string switching =
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
  std::string responses = switching + Settings() + Frame(1, 0x4, 1, "s1") + Frame(0, 1, 1, "ok");
  Stream down = Feed(kHttp, kResponse, responses);
  EXPECT_FALSE(down.failed);
  ASSERT_EQ(down.ends.size(), 3u);
  EXPECT_EQ(down.ends[0], (testing::End{switching.size(), "http.status=101"}));
  EXPECT_EQ(down.ends[1].attributes, Attrs(1, "HEADERS END_HEADERS", 2));
  EXPECT_EQ(down.ends[2].attributes, Attrs(1, "DATA END_STREAM", 2));
  ExpectSplitInvariant(kHttp, kResponse, responses);
}

// A server that declines the upgrade answers in HTTP/1.1 and the client goes on in it; a
// 101 to another protocol is a tunnel (no more ends), never HTTP/2.
TEST(Http2ProcessorTest, UpgradeDeclinedOrToAnotherProtocol) {
  std::string requests = kUpgradeRequest + "POST /next HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
  Stream up = Feed(kHttp, kRequest, requests);
  EXPECT_FALSE(up.failed);
  ASSERT_EQ(up.ends.size(), 2u);
  EXPECT_EQ(up.ends[1], (testing::End{requests.size(), "http.method=POST|http.url=/next"}));
  ExpectSplitInvariant(kHttp, kRequest, requests);

  std::string websocket = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
  Stream down = Feed(kHttp, kResponse, websocket + Settings() + Frame(1, 0x5, 1, "s1"));
  EXPECT_FALSE(down.failed);
  ASSERT_EQ(down.ends.size(), 1u);
  EXPECT_EQ(down.ends[0], (testing::End{websocket.size(), "http.status=101"}));
}

TEST(Http2ProcessorTest, HeaderBlockBytes) {
  std::string stream =
      kPreface + Settings() +
      Frame(1, 0x4 | 0x8 | 0x20, 1, std::string("\x03", 1) + "PPPPP" + "AB" + "pad") +
      Frame(0, 0, 1, "DATA") + Frame(1, 0x4, 3, "CD");
  for (size_t piece : {size_t(1), size_t(2), size_t(7), size_t(1000)}) {
    EXPECT_EQ(BlockBytes(stream, piece), "ABCD") << piece;
  }
  std::string continued =
      kPreface + Settings() + Frame(1, 0, 1, "AB") + Frame(9, 0, 1, "CD") + Frame(9, 0x4, 1, "EF");
  for (size_t piece : {size_t(1), size_t(3), size_t(1000)}) {
    EXPECT_EQ(BlockBytes(continued, piece), "ABCDEF") << piece;
  }
}

// A real connection (tests/data/protocols/README.md): h2load's 1,000 GETs to nginx, 16
// streams in flight. Each request is one HEADERS frame with END_STREAM on a new odd stream,
// in order; each response a HEADERS frame, then a 2-byte DATA frame, for each of them.
TEST(Http2ProcessorTest, RecordedNginxConnection) {
  auto read = [](const char* name) {
    std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  };
  std::string requests = read("nginx_h2load.req");
  Stream run = Feed(kHttp2, kRequest, requests);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 1000u);
  for (uint32_t k = 0; k < 1000; ++k) {
    std::string begins = "http2.stream=" + std::to_string(1 + 2 * k) +
                         "|http2.frame=HEADERS END_STREAM END_HEADERS|http2.length=";
    EXPECT_EQ(run.ends[k].attributes.substr(0, begins.size()), begins) << k;
  }
  EXPECT_EQ(run.ends.back().offset, requests.size() - 17);  // then GOAWAY
  ExpectSplitInvariant(kHttp2, kRequest, requests);

  std::string responses = read("nginx_h2load.resp");
  run = Feed(kHttp2, kResponse, responses);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 2000u);
  std::map<std::string, int> data_frames;  // each stream's DATA ends it, with 2 bytes ("ok")
  for (const auto& end : run.ends) {
    if (end.attributes.find("DATA") != std::string::npos) ++data_frames[end.attributes];
  }
  EXPECT_EQ(data_frames.size(), 1000u);
  for (uint32_t k = 0; k < 1000; ++k) {
    EXPECT_EQ(data_frames[Attrs(1 + 2 * k, "DATA END_STREAM", 2)], 1) << k;
  }
  ExpectSplitInvariant(kHttp2, kResponse, responses);
}

// As capture runs it (frame_numbers_only): the same ends with no attributes' text, each
// frame's numbers giving back the attributes a parser without the switch sets.
TEST(Http2ProcessorTest, FrameNumbersOnly) {
  std::string stream = Settings() + Frame(5, 0x4, 1, std::string("\0\0\0\x02", 4) + "hp") +
                       Frame(1, 0x4, 1, "h1") + Frame(0, 0x1, 1, "body");
  Stream text = Feed(kHttp2, kResponse, stream);
  Parser parser;
  Init(&parser, kHttp2, kResponse);
  parser.frame_numbers_only = true;
  std::vector<std::string> rebuilt;
  size_t at = 0;
  while (at < stream.size()) {
    bool ended = false;
    at += Consume(&parser, reinterpret_cast<const uint8_t*>(stream.data()) + at, stream.size() - at,
                  &ended);
    if (!ended) continue;
    EXPECT_EQ(parser.attributes.count, 0);
    Http2Frame frame;
    ASSERT_TRUE(EndedHttp2Frame(&parser, &frame));
    Attributes a;
    SetHttp2FrameAttributes(frame, &a);
    rebuilt.push_back(testing::Format(a));
  }
  EXPECT_FALSE(parser.failed);
  ASSERT_EQ(rebuilt.size(), text.ends.size());
  ASSERT_EQ(rebuilt.size(), 3u);
  for (size_t k = 0; k < rebuilt.size(); ++k) EXPECT_EQ(rebuilt[k], text.ends[k].attributes);
}

TEST(Http2ProcessorTest, Malformed) {
  auto fails = [](Direction d, const std::string& s) { return Feed(kHttp2, d, s).failed; };
  EXPECT_TRUE(fails(kRequest, "PRI * HTTP/1.1\r\n"));
  EXPECT_TRUE(fails(kRequest, "GET / HTTP/1.1\r\n\r\n"));
  EXPECT_TRUE(fails(kResponse, "HTTP/1.1 200 OK\r\n\r\n"));
  EXPECT_TRUE(fails(kResponse, Frame(1, 0x4, 1, "x")));               // not SETTINGS first
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(9, 0x4, 1, "x")));  // stray CONTINUATION
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(1, 0, 1, "x") + Frame(0, 0, 1, "d")));
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(1, 0, 1, "x") + Frame(9, 4, 3, "d")));
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(0, 0, 0, "d")));    // stream frame on 0
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(3, 0, 1, "abc")));  // RST_STREAM not 4
  EXPECT_TRUE(fails(kResponse, Settings() + Frame(1, 0x8, 1, std::string("\x05", 1) + "ab")));
  EXPECT_FALSE(fails(kResponse, Settings() + Frame(0xee, 0, 0, "unknown type")));
  // A large DATA frame is counted, not kept.
  std::string big = Settings() + Frame(0, 1, 1, std::string((1 << 24) - 1, 'b'));
  Stream run = Feed(kHttp2, kResponse, big, {100, 70000, 5000000});
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0].offset, big.size());
}

}  // namespace
}  // namespace weft::capture::protocols
