// The protocol processors (capture/protocols): exact message ends and attributes for
// realistic streams of every processor, the same for any split of the stream, failure on
// malformed input, bodies skipped in constant state, and detection.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "capture/protocols/protocol.h"
#include "capture/protocols_feed.h"

namespace weft::capture::protocols {
namespace {

using testing::Concat;
using testing::End;
using testing::Ends;
using testing::ExpectSplitInvariant;
using testing::Feed;
using testing::Format;
using testing::Piece;
using testing::Stream;

constexpr Direction kRequest = Direction::kRequest;
constexpr Direction kResponse = Direction::kResponse;

// --- names -------------------------------------------------------------------------------

TEST(ProtocolsTest, NamesRoundTrip) {
  for (int i = 0; i < kProtocolCount; ++i) {
    const char* name = ProtocolName(Protocol(i));
    Protocol back = kNone;
    ASSERT_TRUE(ParseProtocol(name, strlen(name), &back)) << name;
    EXPECT_EQ(back, Protocol(i));
  }
  EXPECT_STREQ(ProtocolName(kPostgres), "postgres");
  EXPECT_STREQ(ProtocolName(kOneShot), "oneshot");
  Protocol p = kHttp;
  EXPECT_FALSE(ParseProtocol("htt", 3, &p));
  EXPECT_FALSE(ParseProtocol("https", 5, &p));
  EXPECT_EQ(p, kHttp);
}

TEST(ProtocolsTest, ZeroLengthConsumesNothing) {
  Parser parser;
  Init(&parser, kHttp, kRequest);
  bool ended = true;
  EXPECT_EQ(Consume(&parser, nullptr, 0, &ended), 0u);
  EXPECT_FALSE(ended);
  EXPECT_EQ(parser.consumed, 0u);
}

// --- HTTP --------------------------------------------------------------------------------

const std::vector<Piece> kHttpRequests = {
    {"POST /upload?x=1 HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
     "5;name=\"v\"\r\nhello\r\n0\r\nX-Checksum: 1\r\n\r\n",
     "http.method=POST|http.url=/upload?x=1"},
    {"GET /question/521 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
     "http.method=GET|http.url=/question/521"},
    {"POST /b HTTP/1.1\r\ncontent-LENGTH:  3 \r\n\r\nabc", "http.method=POST|http.url=/b"},
    {"PUT /c HTTP/1.1\r\nTRANSFER-ENCODING: "
     "Chunked\r\n\r\nA\r\n0123456789\r\n3\r\nxyz\r\n0\r\n\r\n",
     "http.method=PUT|http.url=/c"},
    {"\r\nGET /lf HTTP/1.0\nHost: y\n X-Folded: continued\n\n", "http.method=GET|http.url=/lf"},
    {"DELETE /d HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "http.method=DELETE|http.url=/d"},
};

TEST(HttpProcessorTest, PipelinedRequestsWithChunkedBodies) {
  std::string stream = Concat(kHttpRequests);
  Stream run = Feed(kHttp, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(kHttpRequests));
  ExpectSplitInvariant(kHttp, kRequest, stream);
}

TEST(HttpProcessorTest, PartialRequestWaitsForTheRest) {
  std::string head = "GET /slow HTTP/1.1\r\nHost: x\r\n";
  Stream run = Feed(kHttp, kRequest, head);
  EXPECT_TRUE(run.ends.empty());
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.consumed, head.size());
}

TEST(HttpProcessorTest, LongUrlIsCut) {
  std::string url = "/" + std::string(300, 'u');
  Stream run = Feed(kHttp, kRequest, "GET " + url + " HTTP/1.1\r\n\r\n");
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0].attributes, "http.method=GET|http.url=" + url.substr(0, kMaxValue));
}

// X-Request-Id and traceparent, the witnesses a proxy passes on (BorderPatrol §3.1): any
// case, whitespace around the value dropped and inside it kept, the last of repeated
// fields, values cut to 64 bytes, only in requests, not carried into the next request.
const std::vector<Piece> kHttpRequestIds = {
    {"GET /a HTTP/1.1\r\nX-Request-Id: 7f3c9a2e-41b0-4d1e-9c55-0e8b2f6a1d34\r\n"
     "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n",
     "http.method=GET|http.url=/a|http.request_id=7f3c9a2e-41b0-4d1e-9c55-0e8b2f6a1d34|"
     "http.traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"POST /b HTTP/1.1\r\nx-request-ID:\t  first  \r\nX-REQUEST-ID:  two words \r\nContent-Length: "
     "2\r\n\r\nok",
     "http.method=POST|http.url=/b|http.request_id=two words"},
    {"GET /c HTTP/1.1\r\nX-Request-Ids: not-this\r\nX-Request-I: nor-this\r\n\r\n",
     "http.method=GET|http.url=/c"},
    {"GET /d HTTP/1.1\r\nX-Request-Id: " + std::string(100, 'r') + "\r\n\r\n",
     "http.method=GET|http.url=/d|http.request_id=" + std::string(64, 'r')},
};

TEST(HttpProcessorTest, RequestIdsAreLoggedAsWitnesses) {
  std::string stream = Concat(kHttpRequestIds);
  Stream run = Feed(kHttp, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(kHttpRequestIds));
  ExpectSplitInvariant(kHttp, kRequest, stream);
  // A response's X-Request-Id is not logged.
  run = Feed(kHttp, kResponse, "HTTP/1.1 200 OK\r\nX-Request-Id: abc\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0].attributes, "http.status=200");
}

const std::vector<Piece> kHttpResponses = {
    {"HTTP/1.1 100 Continue\r\n\r\n", "http.status=100"},
    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "http.status=200"},
    {"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", "http.status=204"},
    {"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", "http.status=304"},
    {"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwiki\r\n0\r\n\r\n",
     "http.status=404"},
    {"HTTP/1.1 200\nContent-Length: 2\n\nok", "http.status=200"},
};

TEST(HttpProcessorTest, ResponsesInformationalNoBodyAndChunked) {
  std::string stream = Concat(kHttpResponses);
  Stream run = Feed(kHttp, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(kHttpResponses));
  ExpectSplitInvariant(kHttp, kResponse, stream);
}

TEST(HttpProcessorTest, ResponseWithoutLengthEndsAtClose) {
  std::string stream =
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
      "HTTP/1.0 200 OK\r\nServer: old\r\n\r\n<html>...</html>"
      "HTTP/1.1 200 OK\r\n\r\n";
  Stream run = Feed(kHttp, kResponse, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0], (End{39, "http.status=200"}));
  // A response whose Transfer-Encoding is not chunked is delimited by close too.
  run = Feed(kHttp, kResponse, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc");
  EXPECT_TRUE(run.ends.empty());
  EXPECT_FALSE(run.failed);
}

// The documented limitation: a response to HEAD carries Content-Length without a body,
// and the response direction alone cannot tell; the next response's first bytes are
// taken as its body, and the rest of that response fails the parser.
TEST(HttpProcessorTest, HeadResponseIsTakenToHaveABody) {
  std::string head_reply = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  std::string next = "HTTP/1.1 204 No Content\r\n\r\n";
  Stream run = Feed(kHttp, kResponse, head_reply + next);
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.ends, (std::vector<End>{{head_reply.size() + 10, "http.status=200"}}));
}

TEST(HttpProcessorTest, SwitchingProtocolsEndsBoundaries) {
  std::string stream =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
      "\x81\x05hello HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  Stream run = Feed(kHttp, kResponse, stream);
  EXPECT_FALSE(run.failed);
  ASSERT_EQ(run.ends.size(), 1u);
  EXPECT_EQ(run.ends[0].attributes, "http.status=101");
}

TEST(HttpProcessorTest, MalformedInputFails) {
  const std::string good = "GET / HTTP/1.1\r\n\r\n";
  const char* requests[] = {
      "GET /x HTTP/1.1\r\nBad Header\r\n\r\n",         // no colon
      "GET /x HTTP/1.1\r\nName : v\r\n\r\n",           // space before colon
      "GET /x HTTP/2.0\r\n\r\n",                       // not HTTP/1.x
      "GET  /x HTTP/1.1\r\n\r\n",                      // empty target
      "GET /x\r\n\r\n",                                // HTTP/0.9
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  // TLS ClientHello
      "POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
      "POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
      "POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc",        // §6.3: must be chunked
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  // bad chunk size
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX0\r\n\r\n",  // no CRLF
  };
  for (const char* request : requests) {
    std::string stream = good + request + good;
    Stream run = Feed(kHttp, kRequest, stream);
    EXPECT_TRUE(run.failed) << request;
    EXPECT_EQ(run.consumed, stream.size());
    EXPECT_EQ(run.ends, (std::vector<End>{{good.size(), "http.method=GET|http.url=/"}})) << request;
    ExpectSplitInvariant(kHttp, kRequest, stream);
  }
  Stream run = Feed(kHttp, kResponse, "HTTP/1.1 2x0 OK\r\n\r\n");
  EXPECT_TRUE(run.failed);
  run = Feed(kHttp, kResponse, "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n");
  EXPECT_TRUE(run.failed);
}

TEST(HttpProcessorTest, EndlessHeadFails) {
  Parser parser;
  Init(&parser, kHttp, kRequest);
  std::string start = "GET / HTTP/1.1\r\n";
  std::string header = "X-Filler: " + std::string(1000, 'f') + "\r\n";
  Feed(&parser, start);
  for (int i = 0; i < 2000 && !parser.failed; ++i) Feed(&parser, header);
  EXPECT_TRUE(parser.failed);  // past 1 MiB of head
}

// CopyParser's copy goes on as the original does, cut anywhere: mid-head, mid-body, after
// an end (its attributes still there), for HTTP/1.1 and HTTP/2.
TEST(ParserTest, CopyGoesOnAsTheOriginal) {
  const std::string http =
      "GET /a HTTP/1.1\r\nX-Request-Id: r1\r\nContent-Length: 3\r\n\r\nabc"
      "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n";
  std::string h2 = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  h2 += std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);               // SETTINGS
  h2 += std::string("\x00\x00\x03\x01\x05\x00\x00\x00\x01\x82\x84\x87", 12);  // HEADERS
  h2 += std::string("\x00\x00\x02\x00\x01\x00\x00\x00\x03ok", 11);            // DATA
  for (auto [protocol, stream] : {std::pair{kHttp, http}, std::pair{kHttp2, h2}}) {
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
      Parser original;
      Init(&original, protocol, kRequest);
      Feed(&original, stream.substr(0, cut));
      Parser copy;
      memset(static_cast<void*>(&copy), 0xa5, sizeof copy);  // what was there must not matter
      CopyParser(&copy, &original);
      Stream a = Feed(&original, stream.substr(cut));
      Stream b = Feed(&copy, stream.substr(cut));
      if (cut == 0) {  // the streams are whole messages the processor reads to the end
        EXPECT_EQ(a.ends.size(), 2u) << protocol;
        EXPECT_FALSE(a.failed) << protocol;
      }
      EXPECT_EQ(a.ends, b.ends) << protocol << " cut at " << cut;
      EXPECT_EQ(a.failed, b.failed) << protocol << " cut at " << cut;
      EXPECT_EQ(original.consumed, copy.consumed);
      EXPECT_EQ(original.messages, copy.messages);
      ASSERT_EQ(original.attributes.count, copy.attributes.count);
      for (int i = 0; i < original.attributes.count; ++i) {
        const Attribute& x = original.attributes.items[i];
        const Attribute& y = copy.attributes.items[i];
        EXPECT_STREQ(x.key, y.key);
        EXPECT_EQ(std::string(x.value, x.length), std::string(y.value, y.length));
      }
    }
  }
}

// The head limit is exact where the parser takes a run of bytes at once: a line no one
// looks at, the rest of a field name, a reason phrase. A head of 1 MiB ends; one byte more
// fails, whether it comes whole or in 4 KiB pieces.
TEST(HttpProcessorTest, HeadLimitIsExactOnLongLines) {
  constexpr size_t kLimit = 1 << 20;
  auto sized = [](const std::string& before, const std::string& after, size_t total) {
    return before + std::string(total - before.size() - after.size(), 'f') + after;
  };
  struct Case {
    Direction direction;
    std::string before, after;
  };
  const Case cases[] = {
      {kRequest, "GET / HTTP/1.1\r\nX-Filler: ", "\r\n\r\n"},
      {kRequest, "GET / HTTP/1.1\r\nX-", ": v\r\n\r\n"},
      {kResponse, "HTTP/1.1 204 ", "\r\n\r\n"},
  };
  for (const Case& c : cases) {
    for (size_t piece : {size_t(0), size_t(4096)}) {
      for (size_t extra : {0, 1}) {
        std::string head = sized(c.before, c.after, kLimit + extra);
        Parser parser;
        Init(&parser, kHttp, c.direction);
        size_t ends = 0;
        for (size_t at = 0; at < head.size() && !parser.failed;) {
          size_t n = piece == 0 ? head.size() - at : std::min(piece, head.size() - at);
          bool ended = false;
          at += Consume(&parser, reinterpret_cast<const uint8_t*>(head.data()) + at, n, &ended);
          ends += ended;
        }
        EXPECT_EQ(parser.failed, extra == 1) << c.before << " piece " << piece;
        EXPECT_EQ(ends, extra == 1 ? 0u : 1u) << c.before << " piece " << piece;
      }
    }
  }
}

// A 1 GB body is counted, not buffered: fed in 1 MiB pieces it takes no time.
TEST(HttpProcessorTest, GigabyteBodyInMegabytePieces) {
  auto started = std::chrono::steady_clock::now();
  Parser parser;
  Init(&parser, kHttp, kRequest);
  std::string head = "PUT /big HTTP/1.1\r\nContent-Length: 1073741824\r\n\r\n";
  Stream run = Feed(&parser, head);
  EXPECT_TRUE(run.ends.empty());
  std::string piece(1 << 20, 'b');
  const auto* bytes = reinterpret_cast<const uint8_t*>(piece.data());
  int ends = 0;
  for (int i = 0; i < 1024; ++i) {
    bool ended = false;
    ASSERT_EQ(Consume(&parser, bytes, piece.size(), &ended), piece.size());
    ends += ended;
    if (i < 1023) {
      ASSERT_FALSE(ended) << i;
    }
  }
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(parser.consumed, head.size() + (uint64_t(1) << 30));
  EXPECT_EQ(Format(parser.attributes), "http.method=PUT|http.url=/big");
  // The next request follows right after.
  Stream next = Feed(&parser, "GET /next HTTP/1.1\r\n\r\n");
  ASSERT_EQ(next.ends.size(), 1u);
  EXPECT_EQ(next.ends[0].attributes, "http.method=GET|http.url=/next");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
}

// --- testbed frames ----------------------------------------------------------------------

// A frame as testbed/wire.h encodes it: length, type, request type, three ids, padding.
std::string Frame(uint8_t type, uint16_t request_type, uint32_t payload = 27) {
  std::string s;
  for (int i = 3; i >= 0; --i) s += char((payload >> (8 * i)) & 0xff);
  s += char(type);
  s += char(request_type >> 8);
  s += char(request_type & 0xff);
  for (int i = 0; i < 24; ++i) s += char(i * 7);
  s.resize(4 + payload, '.');
  return s;
}

TEST(TestbedProcessorTest, FramesInBothDirections) {
  std::vector<Piece> requests = {{Frame(1, 3, 100), "testbed.request=3"},
                                 {Frame(1, 258), "testbed.request=258"},
                                 {Frame(1, 0, 5000), "testbed.request=0"}};
  std::string stream = Concat(requests);
  EXPECT_EQ(Feed(kTestbed, kRequest, stream).ends, Ends(requests));
  ExpectSplitInvariant(kTestbed, kRequest, stream);

  std::vector<Piece> replies = {{Frame(2, 3, 64), ""}, {Frame(3, 1), ""}, {Frame(2, 9), ""}};
  stream = Concat(replies);
  EXPECT_EQ(Feed(kTestbed, kResponse, stream).ends, Ends(replies));
  ExpectSplitInvariant(kTestbed, kResponse, stream);
}

TEST(TestbedProcessorTest, MalformedFramesFail) {
  std::string good = Frame(1, 1);
  for (std::string bad : {Frame(4, 1), Frame(0, 1), Frame(1, 1, 26), Frame(1, 1, 0)}) {
    Stream run = Feed(kTestbed, kRequest, good + bad + good);
    EXPECT_TRUE(run.failed);
    EXPECT_EQ(run.ends, (std::vector<End>{{good.size(), "testbed.request=1"}}));
  }
  std::string huge("\x00\x10\x00\x01\x01", 5);  // kMaxPayload + 1
  Stream run = Feed(kTestbed, kRequest, huge);
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.consumed, 5u);
}

TEST(TestbedProcessorTest, DatagramIsOneFrame) {
  Parser parser;
  Init(&parser, kTestbed, kRequest);
  std::string frame = Frame(1, 7);
  ConsumeDatagram(&parser, reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
  EXPECT_EQ(Format(parser.attributes), "testbed.request=7");
  EXPECT_EQ(parser.messages, 1u);
  EXPECT_EQ(parser.consumed, frame.size());
  ConsumeDatagram(&parser, reinterpret_cast<const uint8_t*>(frame.data()), 10);  // cut short
  EXPECT_EQ(parser.attributes.count, 0);
  EXPECT_EQ(parser.messages, 2u);
}

// --- detection ---------------------------------------------------------------------------

Protocol DetectString(std::string_view s) {
  return Detect(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

TEST(ProtocolDetectTest, FirstBytesOfEachProtocol) {
  EXPECT_EQ(DetectString("GET / HTTP/1.1\r\n"), kHttp);
  EXPECT_EQ(DetectString("OPTIONS "), kHttp);
  EXPECT_EQ(DetectString("PATCH /x"), kHttp);
  EXPECT_EQ(DetectString("*3\r\n$3\r\nSET\r\n"), kRedis);
  EXPECT_EQ(DetectString(Frame(1, 2)), kTestbed);
  EXPECT_EQ(DetectString(Frame(2, 2).substr(0, 5)), kTestbed);
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x08\x04\xd2\x16\x2f", 8)), kPostgres);  // SSL
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x08\x04\xd2\x16\x30", 8)), kPostgres);  // GSS
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x10\x04\xd2\x16\x2e", 8)), kPostgres);  // cancel
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x29\x00\x03\x00\x00user", 12)), kPostgres);
}

TEST(ProtocolDetectTest, TooFewOrAmbiguousBytes) {
  EXPECT_EQ(DetectString(""), kNone);
  EXPECT_EQ(DetectString("GET"), kNone);  // the space is needed
  EXPECT_EQ(DetectString("GETX / HTTP/1.1"), kNone);
  EXPECT_EQ(DetectString("PRI * HTTP/2.0\r\n"), kHttp2);  // the HTTP/2 preface
  EXPECT_EQ(DetectString("get / HTTP/1.1"), kNone);
  EXPECT_EQ(DetectString("*"), kNone);
  EXPECT_EQ(DetectString("*x"), kNone);
  EXPECT_EQ(DetectString("PING\r\n"), kNone);  // inline Redis or a line protocol
  EXPECT_EQ(DetectString(Frame(1, 2).substr(0, 4)), kNone);
  EXPECT_EQ(DetectString(Frame(4, 2)), kNone);
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x1a\x01", 5)), kNone);  // 26 < header
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x08\x04\xd2\x16", 7)), kNone);
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x09\x04\xd2\x16\x2f", 8)), kNone);
  EXPECT_EQ(DetectString(std::string("\x00\x00\x27\x11\x00\x03\x00\x00", 8)), kNone);  // 10001
  EXPECT_EQ(DetectString(std::string("\x00\x00\x00\x29\x00\x02\x00\x00", 8)), kNone);  // v2
}

// --- generic processors --------------------------------------------------------------------

TEST(OneShotProcessorTest, NeverEnds) {
  for (Protocol p : {kOneShot, kNone}) {
    std::string stream = "GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n";
    Stream run = Feed(p, kRequest, stream, {3, 20});
    EXPECT_TRUE(run.ends.empty());
    EXPECT_FALSE(run.failed);
    Parser parser;
    Init(&parser, p, kRequest);
    ConsumeDatagram(&parser, reinterpret_cast<const uint8_t*>(stream.data()), stream.size());
    EXPECT_EQ(parser.attributes.count, 0);
    EXPECT_EQ(parser.messages, 1u);
  }
}

// Init starts over: a parser that failed is usable again.
TEST(ProtocolsTest, InitResetsAFailedParser) {
  Parser parser;
  Init(&parser, kHttp, kRequest);
  Feed(&parser, "NOT HTTP\r\n\r\n");
  EXPECT_TRUE(parser.failed);
  Init(&parser, kHttp, kRequest);
  Stream run = Feed(&parser, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, (std::vector<End>{{18, "http.method=GET|http.url=/"}}));
}

}  // namespace
}  // namespace weft::capture::protocols
