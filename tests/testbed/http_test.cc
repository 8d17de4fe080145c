// The testbed's HTTP/1.1 parser and encoder: exact messages in, exact fields and sizes
// out; malformed input gives an error saying what is wrong, and leaves the buffer as it was.
#include "testbed/http.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::testbed {
namespace {

struct Taken {
  bool ok = false;     // parsed without error
  bool whole = false;  // a whole message was taken
  Frame frame;
  size_t bytes = 0;
  std::string error;
};

Taken Take(std::string& buf) {
  Taken t;
  Result<bool> r = TakeHttp(buf, &t.frame, &t.bytes);
  t.ok = r.ok();
  if (r.ok()) {
    t.whole = *r;
  } else {
    t.error = r.status().message();
  }
  return t;
}

Frame Reply() {
  Frame f;
  f.type = FrameType::kReply;
  f.request_type = 2;
  f.request_id = 0xab;
  f.call_id = 0xcd;
  f.parent_call = 0xef;
  return f;
}

TEST(Http, EncodesContentLengthAndChunkedBodies) {
  Frame f = Reply();
  EXPECT_EQ(EncodeHttp(f, 3),
            "HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 2 ab cd ef\r\nContent-Length: 3\r\n\r\n...");
  f.close = true;
  EXPECT_EQ(EncodeHttp(f, 3, true),
            "HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 2 ab cd ef\r\nConnection: close\r\n"
            "Transfer-Encoding: chunked\r\n\r\n3\r\n...\r\n0\r\n\r\n");
  f = Reply();
  f.type = FrameType::kRequest;
  EXPECT_EQ(EncodeHttp(f, 0),
            "POST /r2 HTTP/1.1\r\nHost: weft-testbed\r\nX-Weft-Ids: 1 2 ab cd ef\r\n"
            "Content-Length: 0\r\n\r\n");
  // 2500 bytes: chunks of 1024, 1024 and 452 (0x1c4).
  std::string big = EncodeHttp(Reply(), 2500, true);
  EXPECT_NE(big.find("\r\n\r\n400\r\n"), std::string::npos);
  EXPECT_NE(big.find("\r\n1c4\r\n"), std::string::npos);
  EXPECT_EQ(big.substr(big.size() - 7), "\r\n0\r\n\r\n");
}

// The load client's X-Request-Id (weft testbed load --request-id) goes after the start
// line; the message still parses to the same frame.
TEST(Http, AddedHeaderFollowsTheStartLine) {
  Frame f = Reply();
  f.type = FrameType::kRequest;
  std::string wire = EncodeHttp(f, 2);
  AddHttpHeader(&wire, "X-Request-Id", "0123abcd");
  EXPECT_EQ(wire,
            "POST /r2 HTTP/1.1\r\nX-Request-Id: 0123abcd\r\nHost: weft-testbed\r\nX-Weft-Ids: 1 2 "
            "ab cd ef\r\n"
            "Content-Length: 2\r\n\r\n..");
  Frame back;
  size_t bytes = 0;
  size_t size = wire.size();
  Result<bool> taken = TakeHttp(wire, &back, &bytes);
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_TRUE(*taken);
  EXPECT_EQ(bytes, size);
  EXPECT_EQ(back.call_id, f.call_id);
}

TEST(Http, HeaderNamesAreCaseInsensitiveAndValuesTrimmed) {
  std::string buf =
      "HTTP/1.1 200 OK\r\nx-WEFT-ids:\t2 2 ab cd ef  \r\nCONTENT-length:   3\r\n"
      "connection: Keep-Alive, CLOSE\r\n\r\n...rest";
  Taken t = Take(buf);
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_TRUE(t.whole);
  EXPECT_EQ(t.frame.type, FrameType::kReply);
  EXPECT_EQ(t.frame.request_type, 2);
  EXPECT_EQ(t.frame.request_id, 0xabu);
  EXPECT_EQ(t.frame.call_id, 0xcdu);
  EXPECT_EQ(t.frame.parent_call, 0xefu);
  EXPECT_TRUE(t.frame.close);
  EXPECT_EQ(t.bytes, 102u);  // lines of 17, 28, 21 and 31 bytes, CRLF, 3 bytes of body
  EXPECT_EQ(buf, "rest");
}

TEST(Http, ChunkedBodiesWithExtensionsAndTrailersByteByByte) {
  const std::string wire =
      "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: Chunked\r\n"
      "X-Weft-Ids: 3 0 1 2 3\r\n\r\n"
      "5;name=value\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n";
  std::string buf;
  for (size_t i = 0; i < wire.size(); ++i) {
    buf.push_back(wire[i]);
    Taken t = Take(buf);
    ASSERT_TRUE(t.ok) << "after " << i + 1 << " bytes: " << t.error;
    if (i + 1 < wire.size()) {
      ASSERT_FALSE(t.whole) << "after " << i + 1 << " bytes";
      continue;
    }
    ASSERT_TRUE(t.whole);
    EXPECT_EQ(t.bytes, wire.size());
    EXPECT_EQ(t.frame.type, FrameType::kError);
    EXPECT_EQ(t.frame.call_id, 2u);
    EXPECT_FALSE(t.frame.close);
    EXPECT_TRUE(buf.empty());
  }
  // What the encoder sends, back to back: two messages, taken one at a time.
  buf = EncodeHttp(Reply(), 2500, true) + EncodeHttp(Reply(), 10, true);
  Taken first = Take(buf);
  ASSERT_TRUE(first.ok && first.whole) << first.error;
  Taken second = Take(buf);
  ASSERT_TRUE(second.ok && second.whole) << second.error;
  EXPECT_TRUE(buf.empty());
}

TEST(Http, RequestWithoutLengthHasNoBody) {
  std::string buf = "POST /r0 HTTP/1.1\r\nX-Weft-Ids: 1 0 5 6 7\r\n\r\nPOST";
  Taken t = Take(buf);
  ASSERT_TRUE(t.ok && t.whole) << t.error;
  EXPECT_EQ(t.frame.type, FrameType::kRequest);
  EXPECT_EQ(buf, "POST");
}

TEST(Http, MalformedMessagesAreErrorsThatSayWhy) {
  const std::string ids = "X-Weft-Ids: 2 0 1 2 3\r\n";
  const std::pair<std::string, std::string> cases[] = {
      {"GET / HTTP/1.0\r\n\r\n", "not an HTTP/1.1 request or response: 'GET / HTTP/1.0'"},
      {"HTTP/1.1 20 OK\r\n\r\n", "not an HTTP/1.1 request or response: 'HTTP/1.1 20 OK'"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed HTTP header line 'no colon here'"},
      {"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", "malformed HTTP header line ' folded: x'"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", "HTTP message without X-Weft-Ids"},
      {"HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 0 1 0 3\r\nContent-Length: 0\r\n\r\n",
       "malformed X-Weft-Ids '2 0 1 0 3'"},
      {"HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 0 1 2 3 4\r\nContent-Length: 0\r\n\r\n",
       "malformed X-Weft-Ids '2 0 1 2 3 4'"},
      {"HTTP/1.1 200 OK\r\nX-Weft-Ids: 4294967297 0 1 2 3\r\nContent-Length: 0\r\n\r\n",
       "malformed X-Weft-Ids '4294967297 0 1 2 3'"},
      {"HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 0 0x1 2 3\r\nContent-Length: 0\r\n\r\n",
       "malformed X-Weft-Ids '2 0 0x1 2 3'"},
      {"HTTP/1.1 200 OK\r\nX-Weft-Ids: 2 0 1  2 3\r\nContent-Length: 0\r\n\r\n",
       "malformed X-Weft-Ids '2 0 1  2 3'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Content-Length: 12abc\r\n\r\n", "bad Content-Length '12abc'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Content-Length: -1\r\n\r\n", "bad Content-Length '-1'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Content-Length: 99999999999\r\n\r\n",
       "bad Content-Length '99999999999'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n",
       "differing Content-Length headers"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
       "both Content-Length and Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: gzip\r\n\r\n",
       "unsupported Transfer-Encoding 'gzip'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "\r\n",
       "HTTP response without Content-Length or chunked coding"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
       "malformed chunk size 'zz'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n123456789\r\n",
       "malformed chunk size '123456789'"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n2\r\nabcd",
       "chunk data not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n100001\r\n",
       "chunked body longer than 1048576 bytes"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n",
       "malformed trailer line 'bad trailer'"},
      {"HTTP/1.1 200 OK\r\n" + std::string(kMaxHttpHead, 'x'),
       "HTTP header longer than 16384 bytes"},
      // The same limit when the head arrives whole.
      {"HTTP/1.1 200 OK\r\nX-Pad: " + std::string(kMaxHttpHead, 'x') + "\r\n\r\n",
       "HTTP header longer than 16384 bytes"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: " +
           std::string(kMaxHttpHead, 'y') + "\r\n\r\n",
       "HTTP trailers longer than 16384 bytes"},
      {"HTTP/1.1 200 OK\r\n" + ids + "Transfer-Encoding: chunked\r\n\r\n" + std::string(1100, '1'),
       "chunk size line longer than 1024 bytes"},
  };
  for (const auto& [input, error] : cases) {
    std::string buf = input;
    Taken t = Take(buf);
    EXPECT_FALSE(t.ok) << input;
    EXPECT_EQ(t.error, error) << input;
    EXPECT_EQ(buf, input);
  }
}

}  // namespace
}  // namespace weft::testbed
