// The --protocols reader (capture/protocols/spec.h) and the protocol descriptor table
// (capture/protocols/descriptor.h): what each item means, where each mistake is, and a
// table that agrees with the processors and with Detect.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "capture/protocols/descriptor.h"
#include "capture/protocols/protocol.h"
#include "capture/protocols/spec.h"

namespace weft::capture::protocols {
namespace {

struct Read {
  std::string text;
  SpecItemKind kind;
  Protocol protocol;
  uint16_t port;
  std::string value;
  SpecError error;
};

std::vector<Read> ReadAll(const std::string& spec) {
  std::vector<Read> out;
  SpecReader reader(spec.data(), spec.size());
  SpecItem item;
  SpecError error;
  while (reader.Next(&item, &error)) {
    out.push_back({std::string(item.text, item.length), item.kind, item.protocol, item.port,
                   item.value != nullptr ? std::string(item.value, item.value_length) : "", error});
  }
  return out;
}

TEST(ProtocolSpecTest, EveryKindOfItem) {
  std::vector<Read> items =
      ReadAll("auto,none,http=8080,redis=/run/redis.sock,postgres=@pg,testbed=auto,line=nc");
  ASSERT_EQ(items.size(), 7u);
  for (const Read& r : items) EXPECT_EQ(r.error, SpecError::kOk) << r.text;
  EXPECT_EQ(items[0].kind, SpecItemKind::kAuto);
  EXPECT_EQ(items[1].kind, SpecItemKind::kNone);
  EXPECT_EQ(items[2].kind, SpecItemKind::kPort);
  EXPECT_EQ(items[2].protocol, kHttp);
  EXPECT_EQ(items[2].port, 8080);
  EXPECT_EQ(items[3].kind, SpecItemKind::kPath);
  EXPECT_EQ(items[3].protocol, kRedis);
  EXPECT_EQ(items[3].value, "/run/redis.sock");
  EXPECT_EQ(items[4].kind, SpecItemKind::kPath);
  EXPECT_EQ(items[4].value, "@pg");
  EXPECT_EQ(items[5].kind, SpecItemKind::kDetect);
  EXPECT_EQ(items[5].protocol, kTestbed);
  EXPECT_EQ(items[6].kind, SpecItemKind::kProgram);
  EXPECT_EQ(items[6].protocol, kLine);
  EXPECT_EQ(items[6].value, "nc");
}

TEST(ProtocolSpecTest, MistakesAreLocatedAndReadingGoesOn) {
  std::vector<Read> items =
      ReadAll("http,gopher=80,none=80,dns=0,dns=65536,dns=12a,redis=,=80,,http=65535");
  ASSERT_EQ(items.size(), 10u);
  EXPECT_EQ(items[0].error, SpecError::kNoValue);
  EXPECT_EQ(items[1].error, SpecError::kUnknownProtocol);
  EXPECT_EQ(items[1].text, "gopher=80");
  EXPECT_EQ(items[2].error, SpecError::kUnknownProtocol);  // "none" selects nothing
  EXPECT_EQ(items[3].error, SpecError::kBadPort);
  EXPECT_EQ(items[4].error, SpecError::kBadPort);
  EXPECT_EQ(items[5].error, SpecError::kBadPort);  // a digit starts a port, not a program
  EXPECT_EQ(items[6].error, SpecError::kNoValue);
  EXPECT_EQ(items[7].error, SpecError::kUnknownProtocol);
  EXPECT_EQ(items[8].error, SpecError::kNoValue);  // an empty item
  EXPECT_EQ(items[9].error, SpecError::kOk);
  EXPECT_EQ(items[9].port, 65535);
  EXPECT_STREQ(SpecErrorText(SpecError::kBadPort), "port out of range");
}

TEST(ProtocolSpecTest, EmptySpecHasNoItemsAndTrailingCommaAnEmptyOne) {
  EXPECT_TRUE(ReadAll("").empty());
  std::vector<Read> items = ReadAll("auto,");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].text, "");
  EXPECT_EQ(items[1].error, SpecError::kNoValue);
}

TEST(ProtocolSpecTest, PathsUpToTheSocketAddressSize) {
  std::string longest = "/" + std::string(kMaxSpecPath - 1, 'p');
  EXPECT_EQ(ReadAll("redis=" + longest)[0].error, SpecError::kOk);
  EXPECT_EQ(ReadAll("redis=" + longest + "p")[0].error, SpecError::kPathTooLong);
}

TEST(ProtocolDescriptorTest, OneRowPerProtocolInOrder) {
  for (int i = 0; i < kProtocolCount; ++i) {
    const ProtocolDescriptor& d = Describe(Protocol(i));
    EXPECT_EQ(d.protocol, Protocol(i));
    EXPECT_STREQ(d.name, ProtocolName(Protocol(i)));
  }
  EXPECT_STREQ(Describe(Protocol(200)).name, "unknown");
  EXPECT_FALSE(Describe(Protocol(200)).replies_in_order);
  EXPECT_STREQ(Describe(kDns).witness_key, "dns.id");
  EXPECT_EQ(Describe(kPostgres).auto_port, 5432);
  EXPECT_TRUE(Describe(kHttp).replies_in_order);
  EXPECT_FALSE(Describe(kTestbed).replies_in_order);
}

// Detect returns only protocols whose row says it may, and each of those it can return.
TEST(ProtocolDescriptorTest, DetectPicksOnlyDetectedProtocols) {
  const std::pair<std::string, Protocol> starts[] = {
      {"GET / HTTP/1.1\r\n", kHttp},
      {"*1\r\n$4\r\nPING\r\n", kRedis},
      {std::string("\0\0\0\x08\x04\xd2\x16\x2f", 8), kPostgres},  // SSLRequest
      {std::string("\0\0\0\x20\x01", 5) + std::string(32, 'x'), kTestbed},
      {std::string("\x80\x0a\0\0\0\0\0\0\0\0\0\0", 12), kMemcached},  // binary noop
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", kHttp2},
      {"hello\n", kNone},
      {"", kNone}};
  int detected = 0;
  for (const auto& [bytes, expected] : starts) {
    Protocol p = Detect(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    EXPECT_EQ(p, expected) << ProtocolName(expected);
    if (p != kNone) {
      EXPECT_TRUE(Describe(p).detected) << ProtocolName(p);
      ++detected;
    }
  }
  EXPECT_EQ(detected, 6);
  int rows = 0;
  for (const ProtocolDescriptor& d : kProtocolTable) rows += d.detected;
  EXPECT_EQ(rows, 6);  // http, testbed, postgres, redis, memcached, http2
}

}  // namespace
}  // namespace weft::capture::protocols
