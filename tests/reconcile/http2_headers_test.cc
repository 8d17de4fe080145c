// HPACK decoding of logged HTTP/2 header blocks: the RFC's own examples, blocks libnghttp2's
// encoder made (dynamic table, Huffman, table size updates), and damaged input.
#include "reconcile/http2_headers.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <random>
#include <string>
#include <vector>

namespace weft::reconcile {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

using Fields = std::vector<HeaderField>;

// RFC 7541 Appendix C.3 (requests without Huffman coding) and C.4 (the same with it): three
// requests on one connection, the later ones naming fields the first put in the table.
TEST(Http2Headers, TheRfcExamplesDecode) {
  const Fields first = {
      {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
  Fields second = first;
  second.push_back({"cache-control", "no-cache"});
  const Fields third = {{":method", "GET"},
                        {":scheme", "https"},
                        {":path", "/index.html"},
                        {":authority", "www.example.com"},
                        {"custom-key", "custom-value"}};
  const std::vector<std::vector<std::string>> blocks = {
      {Hex("828684410f7777772e6578616d706c652e636f6d"), Hex("828684be58086e6f2d6361636865"),
       Hex("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565")},
      {Hex("828684418cf1e3c2e5f23a6ba0ab90f4ff"), Hex("828684be5886a8eb10649cbf"),
       Hex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf")}};
  for (const auto& run : blocks) {
    Http2HeaderDecoder d;
    Fields got;
    ASSERT_TRUE(d.Decode(run[0], &got).ok());
    EXPECT_EQ(got, first);
    ASSERT_TRUE(d.Decode(run[1], &got).ok());
    EXPECT_EQ(got, second);
    ASSERT_TRUE(d.Decode(run[2], &got).ok());
    EXPECT_EQ(got, third);
  }
}

// Encodes `fields` with libnghttp2's deflater (as a peer would), for the decoder to read.
std::string Deflate(nghttp2_hd_deflater* deflater, const Fields& fields) {
  std::vector<nghttp2_nv> nva;
  for (const HeaderField& f : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(f.name.data())),
                   reinterpret_cast<uint8_t*>(const_cast<char*>(f.value.data())), f.name.size(),
                   f.value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  std::string out(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(out.data()), out.size(),
                                    nva.data(), nva.size());
  EXPECT_GE(n, 0);
  out.resize(size_t(n < 0 ? 0 : n));
  return out;
}

// A gRPC-like conversation: a thousand requests whose paths and metadata repeat, so that
// most fields come from the dynamic table, with a table size change in the middle.
TEST(Http2Headers, AnEncodersBlocksDecodeInOrder) {
  nghttp2_hd_deflater* deflater = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&deflater, 4096), 0);
  Http2HeaderDecoder d;
  std::mt19937 rng(7);
  size_t total = 0, compressed = 0;
  for (int i = 0; i < 1000; ++i) {
    if (i == 500) {
      ASSERT_EQ(nghttp2_hd_deflate_change_table_size(deflater, 256), 0);
    }
    Fields fields = {{":method", "POST"},
                     {":scheme", "http"},
                     {":path", "/shop.Cart/" + std::string(rng() % 2 ? "Get" : "Add") + "Item"},
                     {":authority", "cart:7070"},
                     {"content-type", "application/grpc"},
                     {"te", "trailers"},
                     {"x-request-id", std::to_string(rng())}};
    std::string block = Deflate(deflater, fields);
    Fields got;
    ASSERT_TRUE(d.Decode(block, &got).ok()) << i;
    EXPECT_EQ(got, fields) << i;
    compressed += block.size();
    for (const HeaderField& f : fields) total += f.name.size() + f.value.size();
  }
  EXPECT_LT(compressed * 3, total);  // the table did its work: what was decoded came from it
  nghttp2_hd_deflate_del(deflater);
}

TEST(Http2Headers, DamagedBlocksBreakTheDecoderForGood) {
  Http2HeaderDecoder d;
  Fields got;
  // Index 70 is past the static table (61 entries) and the empty dynamic table.
  EXPECT_FALSE(d.Decode(Hex("c6"), &got).ok());
  EXPECT_TRUE(d.broken());
  // A good block after it is refused too: the table is no longer known.
  Status s = d.Decode(Hex("828684410f7777772e6578616d706c652e636f6d"), &got);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("earlier block"), std::string::npos) << s.message();
  EXPECT_TRUE(got.empty());
  // A block cut short (a literal whose value length runs past the end).
  Http2HeaderDecoder cut;
  EXPECT_FALSE(cut.Decode(Hex("410f7777772e6578"), &got).ok());
  // A table size update beyond the limit the receiver set.
  Http2HeaderDecoder small;
  ASSERT_TRUE(small.SetTableSizeLimit(100).ok());
  EXPECT_FALSE(small.Decode(Hex("3fe11f82"), &got).ok());  // size update to 4,096
}

TEST(Http2Headers, AnEmptyBlockHasNoFields) {
  Http2HeaderDecoder d;
  Fields got = {{"x", "y"}};
  ASSERT_TRUE(d.Decode("", &got).ok());
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace weft::reconcile
