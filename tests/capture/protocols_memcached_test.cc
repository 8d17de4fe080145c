// The memcached processor (capture/protocols/memcached.cc): text and binary requests and
// replies with exact ends and attributes, any split of the stream giving the same,
// failure on malformed input, and sessions recorded between memccapable and memcached
// 1.6.18 (tests/data/protocols).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "capture/protocols/descriptor.h"
#include "capture/protocols/protocol.h"
#include "capture/protocols_feed.h"

namespace weft::capture::protocols {
namespace {

using testing::Concat;
using testing::End;
using testing::Ends;
using testing::ExpectSplitInvariant;
using testing::Feed;
using testing::Piece;
using testing::Stream;

constexpr Direction kRequest = Direction::kRequest;
constexpr Direction kResponse = Direction::kResponse;

// --- text ----------------------------------------------------------------------------

std::string Command(const std::string& name, const std::string& key = "",
                    const std::string& reply = "") {
  std::string s = "memcached.command=" + name;
  if (!key.empty()) s += "|memcached.key=" + key;
  if (!reply.empty()) s += "|memcached.reply=" + reply;
  return s;
}

TEST(MemcachedProcessorTest, TextRequests) {
  std::vector<Piece> requests = {
      {"set foo 0 0 5\r\nhello\r\n", Command("set", "foo")},
      {"set bar 1 2 3 noreply\r\nabc\r\n", Command("set", "bar", "none")},
      // A data block holding a command line is data.
      {"add k 0 0 9\r\nget x\r\n\r\n\r\n", Command("add", "k")},
      {"append k 0 0 0\r\n\r\n", Command("append", "k")},
      {"cas foo 0 0 2 17\r\nhi\r\n", Command("cas", "foo")},
      {"get a b c\r\n", Command("get", "a")},
      {"gets a\r\n", Command("gets", "a")},
      {"gat 60 k1 k2\r\n", Command("gat", "k1")},
      {"incr n 5\r\n", Command("incr", "n")},
      {"decr n 5 noreply\r\n", Command("decr", "n", "none")},
      {"touch n 10\r\n", Command("touch", "n")},
      {"delete foo noreply\r\n", Command("delete", "foo", "none")},
      {"stats\r\n", Command("stats")},
      {"stats slabs\r\n", Command("stats")},
      {"version\r\n", Command("version")},
      {"verbosity 1\n", Command("verbosity")},  // a bare LF ends a line too
      {"flush_all noreply\r\n", Command("flush_all", "", "none")},
      {"ms mk 2 T60 q\r\nhi\r\n", Command("ms", "mk", "quiet")},
      {"ms mk 2 T60\r\nhi\r\n", Command("ms", "mk")},
      // A meta command's O(token) comes back in its reply: logged as the opaque.
      {"mg mk v k O77\r\n", Command("mg", "mk") + "|memcached.opaque=77"},
      {"ms mk 2 T60 q Oab:c\r\nhi\r\n", Command("ms", "mk", "quiet") + "|memcached.opaque=ab:c"},
      {"md mk O" + std::string(40, 'o') + "\r\n",
       Command("md", "mk") + "|memcached.opaque=" + std::string(32, 'o')},
      {"mg mk qv\r\n", Command("mg", "mk", "quiet")},
      {"md mk q\r\n", Command("md", "mk", "quiet")},
      {"ma mk N0\r\n", Command("ma", "mk")},
      {"me mk\r\n", Command("me", "mk")},
      {"mn\r\n", Command("mn")},
      // memcached refuses a <bytes> it cannot read and reads no data block.
      {"set big 0 0 -1\r\n", Command("set", "big")},
      {"set big 0 0 4294967296\r\n", Command("set", "big")},
      {"set short 0 0\r\n", Command("set", "short")},
      // Commands are case-sensitive: this is an unknown command, answered ERROR.
      {"GET x\r\n", Command("get")},
      {"\r\n", ""},
      {"get " + std::string(200, 'k') + "\r\n", Command("get", std::string(kMaxValue, 'k'))},
      {"quit\r\n", Command("quit", "", "none")},
  };
  std::string stream = Concat(requests);
  Stream run = Feed(kMemcached, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kMemcached, kRequest, stream);
}

std::string Status(const std::string& status, const std::string& key = "") {
  return "memcached.status=" + status + (key.empty() ? "" : "|memcached.key=" + key);
}

TEST(MemcachedProcessorTest, TextReplies) {
  std::vector<Piece> replies = {
      {"STORED\r\n", Status("STORED")},
      {"VALUE a 0 5\r\nhello\r\nVALUE b 0 2 99\r\nhi\r\nEND\r\n", Status("VALUE", "a")},
      // Data that looks like the end of the reply is counted, not read.
      {"VALUE k 0 7\r\nEND\r\nXY\r\nEND\r\n", Status("VALUE", "k")},
      {"VALUE e 0 0\r\n\r\nEND\r\n", Status("VALUE", "e")},
      {"END\r\n", Status("END")},
      {"STAT pid 1\r\nSTAT uptime 2\r\nEND\r\n", Status("STAT")},
      {"ITEM k [5 b; 0 s]\r\nEND\r\n", Status("ITEM")},
      {"42\r\n", Status("42")},
      {"VERSION 1.6.18\r\n", Status("VERSION")},
      {"SERVER_ERROR out of memory\r\n", Status("SERVER_ERROR")},
      {"CLIENT_ERROR bad data chunk\r\n", Status("CLIENT_ERROR")},
      // An error cuts a listing short and ends the reply.
      {"VALUE k 0 3\r\nabc\r\nSERVER_ERROR out of memory writing get response\r\n",
       Status("VALUE", "k")},
      {"VA 2 f0 t-1\r\nhi\r\n", Status("VA")},
      {"VA 2 O58 kmk\r\nhi\r\n", Status("VA") + "|memcached.opaque=58"},
      {"EN O55\r\n", Status("EN") + "|memcached.opaque=55"},
      {"HD k O1\r\n", Status("HD") + "|memcached.opaque=1"},
      {"VA 0\r\n\r\n", Status("VA")},
      {"HD\r\n", Status("HD")},
      {"EN\r\n", Status("EN")},
      {"NS\r\n", Status("NS")},
      {"MN\r\n", Status("MN")},
      {"ME mk exp=-1 la=1 cas=2 fetch=no cls=1 size=63\r\n", Status("ME")},
      {"OK\r\n", Status("OK")},
  };
  std::string stream = Concat(replies);
  Stream run = Feed(kMemcached, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(replies));
  ExpectSplitInvariant(kMemcached, kResponse, stream);
}

// --- binary --------------------------------------------------------------------------

// A binary packet (protocol_binary.h): magic, opcode, key length, extras length, raw data
// type, vbucket (request) or status (response), body length, opaque, CAS; then the body.
std::string Packet(uint8_t magic, uint8_t opcode, const std::string& key,
                   const std::string& extras = "", const std::string& value = "",
                   uint32_t opaque = 0, uint16_t status = 0) {
  uint32_t body = uint32_t(extras.size() + key.size() + value.size());
  std::string s;
  s += char(magic);
  s += char(opcode);
  s += char(key.size() >> 8);
  s += char(key.size() & 0xff);
  s += char(extras.size());
  s += '\0';
  s += char(status >> 8);
  s += char(status & 0xff);
  for (int i = 3; i >= 0; --i) s += char((body >> (8 * i)) & 0xff);
  for (int i = 3; i >= 0; --i) s += char((opaque >> (8 * i)) & 0xff);
  s += std::string(8, '\x01');
  return s + extras + key + value;
}
std::string Request(uint8_t opcode, const std::string& key, const std::string& extras = "",
                    const std::string& value = "", uint32_t opaque = 0) {
  return Packet(0x80, opcode, key, extras, value, opaque);
}
std::string Reply(uint8_t opcode, uint16_t status, const std::string& key = "",
                  const std::string& extras = "", const std::string& value = "",
                  uint32_t opaque = 0) {
  return Packet(0x81, opcode, key, extras, value, opaque, status);
}

TEST(MemcachedProcessorTest, BinaryRequests) {
  std::string set_extras(8, '\0');
  std::vector<Piece> requests = {
      {Request(0x00, "foo", "", "", 1), Command("get", "foo") + "|memcached.opaque=1"},
      {Request(0x11, "k", set_extras, "value", 2), Command("setq", "k") + "|memcached.opaque=2"},
      {Request(0x0d, "k2", "", "", 0xdeadbeef),
       Command("getkq", "k2") + "|memcached.opaque=3735928559"},
      // An opaque of 0 is not logged.
      {Request(0x0a, ""), Command("noop")},
      {Request(0x10, ""), Command("stat")},
      {Request(0x05, "n", std::string(20, '\0')), Command("incr", "n")},
      {Request(0x42, "x"), "memcached.command=0x42|memcached.key=x"},
      {Request(0x01, std::string(300, 'k'), set_extras, std::string(5000, 'v'), 9),
       Command("set", std::string(kMaxValue, 'k')) + "|memcached.opaque=9"},
      {Request(0x07, ""), Command("quit")},
  };
  std::string stream = Concat(requests);
  Stream run = Feed(kMemcached, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kMemcached, kRequest, stream, 2048);
}

TEST(MemcachedProcessorTest, BinaryReplies) {
  std::vector<Piece> replies = {
      {Reply(0x00, 0, "", std::string(4, '\0'), "hello", 1),
       "memcached.command=get|memcached.opaque=1|memcached.status=0"},
      {Reply(0x0c, 0, "k", std::string(4, '\0'), "v", 2),
       "memcached.command=getk|memcached.key=k|memcached.opaque=2|memcached.status=0"},
      {Reply(0x00, 1, "", "", "Not found", 3),
       "memcached.command=get|memcached.opaque=3|memcached.status=1"},
      // A stat reply is its packets up to the one without a key.
      {Reply(0x10, 0, "pid", "", "123", 5) + Reply(0x10, 0, "uptime", "", "7", 5) +
           Reply(0x10, 0, "", "", "", 5),
       "memcached.command=stat|memcached.opaque=5|memcached.status=0"},
      // A failed stat is one packet.
      {Reply(0x10, 0x81, "", "", "Unknown command", 6),
       "memcached.command=stat|memcached.opaque=6|memcached.status=129"},
      {Reply(0x0a, 0), "memcached.command=noop|memcached.status=0"},
  };
  std::string stream = Concat(replies);
  Stream run = Feed(kMemcached, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(replies));
  ExpectSplitInvariant(kMemcached, kResponse, stream);
}

// Over UDP each datagram starts with memcached's frame header (request id, sequence
// number, datagram count, reserved); a reply's later datagrams give no attributes.
TEST(MemcachedProcessorTest, UdpDatagramsAfterTheFrameHeader) {
  auto datagram = [](Direction direction, const std::string& bytes) {
    Parser parser;
    Init(&parser, kMemcached, direction);
    ConsumeDatagram(&parser, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    EXPECT_EQ(parser.messages, 1u);
    return testing::Format(parser.attributes);
  };
  std::string first(std::string("\x12\x34\0\0\0\x01\0\0", 8));
  EXPECT_EQ(datagram(kRequest, first + "get k\r\n"), Command("get", "k"));
  EXPECT_EQ(datagram(kResponse, first + "VALUE k 0 2\r\nhi\r\nEND\r\n"), Status("VALUE", "k"));
  EXPECT_EQ(datagram(kResponse, std::string("\x12\x34\0\x01\0\x02\0\0", 8) + "END\r\n"), "");
  EXPECT_EQ(datagram(kRequest, "get"), "");
}

// --- failure -------------------------------------------------------------------------

TEST(MemcachedProcessorTest, MalformedStreamsFail) {
  struct Case {
    Direction direction;
    std::string bytes;
    size_t ends;  // messages that end before the failure
  };
  const std::vector<Case> cases = {
      {kRequest, "set k 0 0 2\r\nabc\r\n", 0},  // the data block is longer than <bytes>
      {kRequest, "get a\r\nset k 0 0 2\r\nab\n", 1},
      {kResponse, "VALUE k 0 x\r\n", 0},  // a VALUE without a length
      {kResponse, "VALUE k 0\r\n", 0},
      {kResponse, "END\r\nVA\r\n", 1},
      {kResponse, "VALUE k 0 1\r\nab\r\nEND\r\n", 0},
      {kRequest, std::string(1 << 20, 'a') + "\r\n", 0},   // a line over 1 MiB
      {kRequest, Request(0x00, "k") + Reply(0x00, 0), 1},  // a reply magic in requests
      {kResponse, Request(0x00, "k"), 0},
      {kRequest, Request(0x00, "k") + "get k\r\nget k\r\nget k\r\nget k\r\n",
       1},  // a connection speaks one protocol
      {kRequest, Request(0x00, "key").replace(11, 1, "\x02"), 0},  // key beyond the body
  };
  for (const Case& c : cases) {
    Stream run = Feed(kMemcached, c.direction, c.bytes);
    EXPECT_TRUE(run.failed) << c.bytes.substr(0, 40);
    EXPECT_EQ(run.ends.size(), c.ends) << c.bytes.substr(0, 40);
    // The 1 MiB line is fed whole only: random pieces of it take long and prove nothing new.
    if (c.bytes.size() < 4096) ExpectSplitInvariant(kMemcached, c.direction, c.bytes);
  }
}

// --- detection and the descriptor ----------------------------------------------------

TEST(MemcachedProcessorTest, DetectsBinaryRequestsOnly) {
  auto detect = [](const std::string& s) {
    return Detect(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(detect(Request(0x00, "foo", "", "", 1)), kMemcached);
  EXPECT_EQ(detect(Request(0x0a, "")), kMemcached);
  EXPECT_EQ(detect(Request(0x00, "foo").substr(0, 12)), kMemcached);
  EXPECT_EQ(detect(Request(0x00, "foo").substr(0, 11)), kNone);  // the body length is needed
  EXPECT_EQ(detect(Reply(0x00, 0)), kNone);
  EXPECT_EQ(detect(Request(0x60, "k")), kNone);  // no such opcode
  std::string typed = Request(0x00, "k");
  typed[5] = 1;  // a data type other than raw bytes
  EXPECT_EQ(detect(typed), kNone);
  EXPECT_EQ(detect(Request(0x00, "key").replace(11, 1, "\x02")), kNone);
  // Text commands are left to configuration: "get k" is a Redis inline command too.
  EXPECT_EQ(detect("get k\r\n"), kNone);
  EXPECT_EQ(detect("set k 0 0 1\r\nv\r\n"), kNone);

  const ProtocolDescriptor& row = Describe(kMemcached);
  EXPECT_STREQ(row.name, "memcached");
  EXPECT_FALSE(row.replies_in_order);
  EXPECT_STREQ(row.witness_key, "memcached.opaque");
  EXPECT_EQ(row.auto_port, 11211);
  EXPECT_TRUE(row.detected);
}

// --- recorded sessions ---------------------------------------------------------------

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool Has(const End& end, const std::string& attribute) {
  return ("|" + end.attributes + "|").find("|" + attribute + "|") != std::string::npos;
}
std::string Value(const End& end, const std::string& key) {
  std::string all = "|" + end.attributes + "|";
  size_t at = all.find("|" + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return all.substr(at, all.find('|', at) - at);
}

// memccapable -a (libmemcached-tools 1.1.4) against memcached 1.6.18: every text command
// memcached has, with and without noreply, each waiting for its reply. Every request the
// processor does not mark unanswered has exactly one reply.
TEST(MemcachedProcessorTest, RecordedMemccapableTextSession) {
  std::string request = ReadData("memccapable_ascii.req");
  Stream requests = Feed(kMemcached, kRequest, request);
  EXPECT_FALSE(requests.failed);
  ASSERT_EQ(requests.ends.size(), 253u);
  EXPECT_EQ(requests.ends.back().offset, request.size());
  std::map<std::string, int> commands;
  int answered = 0;
  for (const End& end : requests.ends) {
    ++commands[Value(end, "memcached.command")];
    if (!Has(end, "memcached.reply=none")) ++answered;
  }
  EXPECT_EQ(commands["version"], 123);
  EXPECT_EQ(commands["set"], 25);
  EXPECT_EQ(commands["get"], 22);
  EXPECT_EQ(commands["incr"], 20);
  EXPECT_EQ(answered, 217);  // "stats noreply" and "version noreply" are answered
  EXPECT_EQ(requests.ends[12].attributes, Command("set", "test_ascii_set"));
  ExpectSplitInvariant(kMemcached, kRequest, request, 0);

  std::string response = ReadData("memccapable_ascii.resp");
  Stream replies = Feed(kMemcached, kResponse, response);
  EXPECT_FALSE(replies.failed);
  EXPECT_EQ(replies.ends.back().offset, response.size());
  EXPECT_EQ(int(replies.ends.size()), answered);
  ExpectSplitInvariant(kMemcached, kResponse, response, 0);
}

// memccapable -b: the binary commands, quiet ones included (answered only on failure).
// memccapable sends every packet with the opaque 0xdeadbeef (read big-endian), so the
// opaque pairs nothing here; the counts are the stream's own: 251 requests, 293 packets
// back of which 93 are the statistics of one stat reply.
TEST(MemcachedProcessorTest, RecordedMemccapableBinarySession) {
  std::string request = ReadData("memccapable_binary.req");
  Stream requests = Feed(kMemcached, kRequest, request);
  EXPECT_FALSE(requests.failed);
  EXPECT_EQ(requests.ends.size(), 251u);
  EXPECT_EQ(requests.ends.back().offset, request.size());
  std::map<std::string, int> commands;
  for (const End& end : requests.ends) {
    ++commands[Value(end, "memcached.command")];
    EXPECT_EQ(Value(end, "memcached.opaque"), "4022250974");
  }
  EXPECT_EQ(commands["noop"], 94);
  EXPECT_EQ(commands["set"], 29);
  EXPECT_EQ(commands["setq"], 12);
  EXPECT_EQ(commands["stat"], 1);
  ExpectSplitInvariant(kMemcached, kRequest, request, 0);

  std::string response = ReadData("memccapable_binary.resp");
  Stream replies = Feed(kMemcached, kResponse, response);
  EXPECT_FALSE(replies.failed);
  EXPECT_EQ(replies.ends.size(), 293u - 92u);
  EXPECT_EQ(replies.ends.back().offset, response.size());
  ExpectSplitInvariant(kMemcached, kResponse, response, 0);
}

// memcslap --binary -t mget (libmemcached 1.1.4): three getkq, a noop that closes the
// batch, and quit, each with its own opaque; each answered, with the same opaque.
TEST(MemcachedProcessorTest, RecordedMemcslapBinaryMget) {
  Stream requests = Feed(kMemcached, kRequest, ReadData("memcslap_binary_mget.req"));
  Stream replies = Feed(kMemcached, kResponse, ReadData("memcslap_binary_mget.resp"));
  EXPECT_FALSE(requests.failed);
  EXPECT_FALSE(replies.failed);
  ASSERT_EQ(requests.ends.size(), 5u);
  ASSERT_EQ(replies.ends.size(), 5u);
  const char* commands[] = {"getkq", "getkq", "getkq", "noop", "quit"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(Value(requests.ends[i], "memcached.command"), commands[i]);
    EXPECT_EQ(Value(replies.ends[i], "memcached.command"), commands[i]);
    EXPECT_EQ(Value(requests.ends[i], "memcached.opaque"), std::to_string((i + 1) << 16));
    EXPECT_EQ(Value(replies.ends[i], "memcached.opaque"), std::to_string((i + 1) << 16));
    if (i < 3) {
      EXPECT_FALSE(Value(requests.ends[i], "memcached.key").empty());
      EXPECT_EQ(Value(requests.ends[i], "memcached.key"), Value(replies.ends[i], "memcached.key"));
    }
  }
}

}  // namespace
}  // namespace weft::capture::protocols
