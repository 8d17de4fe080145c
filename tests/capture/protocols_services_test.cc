// The protocol processors for services (capture/protocols): PostgreSQL, Redis, DNS and
// the line-oriented processor. Exact message ends and attributes, any split of the stream
// giving the same, and failure on malformed input.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
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

std::string BigEndian32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s += char((v >> (8 * i)) & 0xff);
  return s;
}
std::string Z(const char* s) { return std::string(s) + '\0'; }

// --- PostgreSQL --------------------------------------------------------------------------

// A typed message: type, length counting itself, body.
std::string Pg(char type, const std::string& body) {
  return type + BigEndian32(uint32_t(body.size() + 4)) + body;
}
std::string PgUntyped(uint32_t code, const std::string& body) {
  return BigEndian32(uint32_t(body.size() + 8)) + BigEndian32(code) + body;
}
const std::string kSslRequest = PgUntyped(80877103, "");

TEST(PostgresProcessorTest, StartupSimpleAndExtendedQueryAndCopy) {
  std::string query = "SELECT * FROM questions WHERE id = $1";
  std::string parse = Pg('P', Z("") + Z(query.c_str()) + std::string("\0\1\0\0\0\x17", 6));
  std::string bind = Pg('B', Z("") + Z("") +
                                 std::string("\0\0\0\1\0\0\0\3"
                                             "521\0\0",
                                             13));
  std::vector<Piece> requests = {
      {kSslRequest, ""},
      {PgUntyped(196608, Z("user") + Z("alice") + Z("database") + Z("shop") + Z("")), ""},
      {Pg('p', Z("SCRAM-SHA-256") + BigEndian32(4) + "n,,x"), ""},
      {Pg('Q', Z("SELECT 1;")), "sql=SELECT 1;"},
      {parse + bind + Pg('D', "P" + Z("")) + Pg('E', Z("") + BigEndian32(0)) + Pg('S', ""),
       "sql=" + query},
      // A batch with two Parses logs the first; one without logs none.
      {Pg('P', Z("s1") + Z("BEGIN") + std::string(2, '\0')) +
           Pg('P', Z("s2") + Z("COMMIT") + std::string(2, '\0')) + Pg('H', "") + Pg('S', ""),
       "sql=BEGIN"},
      {Pg('B', Z("") + Z("s1") + std::string(6, '\0')) + Pg('E', Z("") + BigEndian32(0)) +
           Pg('S', ""),
       ""},
      {Pg('Q', Z("COPY t FROM STDIN")), "sql=COPY t FROM STDIN"},
      {Pg('d', "1\tone\n") + Pg('d', "2\ttwo\n") + Pg('c', ""), ""},
      {Pg('Q', Z(std::string(200, 'q').c_str())), "sql=" + std::string(kMaxValue, 'q')},
      {Pg('X', ""), ""},
  };
  std::string stream = Concat(requests);
  Stream run = Feed(kPostgres, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kPostgres, kRequest, stream);

  std::string ready_idle = Pg('Z', "I");
  std::vector<Piece> responses = {
      {"N", ""},  // SSL refused: the startup goes on in plain text
      {Pg('R', BigEndian32(10) + Z("SCRAM-SHA-256") + Z("")), ""},
      {Pg('R', BigEndian32(11) + "r=abc,s=def,i=4096"), ""},
      {Pg('R', BigEndian32(12) + "v=xyz") + Pg('R', BigEndian32(0)) +
           Pg('S', Z("server_version") + Z("15.4")) + Pg('K', BigEndian32(7) + BigEndian32(9)) +
           ready_idle,
       "pg.status=I"},
      {Pg('T', std::string(30, 'r')) + Pg('D', std::string(12, 'd')) + Pg('C', Z("SELECT 1")) +
           ready_idle,
       "pg.status=I"},
      {Pg('1', "") + Pg('2', "") + Pg('D', "x") + Pg('C', Z("SELECT 1")) + Pg('Z', "T"),
       "pg.status=T"},
      {Pg('G', std::string(3, '\0')), ""},  // COPY FROM STDIN: the server waits for data
      {Pg('C', Z("COPY 2")) + ready_idle, "pg.status=I"},
      {Pg('E', "SERROR\0C42P01\0\0") + Pg('Z', "E"), "pg.status=E"},
  };
  stream = Concat(responses);
  run = Feed(kPostgres, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(responses));
  ExpectSplitInvariant(kPostgres, kResponse, stream);
}

// After 'S' capture feeds the processor the TLS library's plaintext (docs/capture.md
// "TLS"): the startup and the queries go on at offsets after the SSLRequest and the 'S'.
TEST(PostgresProcessorTest, SslRequestAcceptedThenPlaintextFromTheTlsLibrary) {
  std::string startup = PgUntyped(196608, Z("user") + Z("postgres") + Z(""));
  std::vector<Piece> requests = {{kSslRequest, ""},
                                 {startup, ""},
                                 {Pg('Q', Z("SELECT 1")), "sql=SELECT 1"},
                                 {Pg('X', ""), ""}};
  std::string stream = Concat(requests);
  Stream run = Feed(kPostgres, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kPostgres, kRequest, stream);
  std::vector<Piece> responses = {
      {"S", ""},
      {Pg('R', BigEndian32(0)) + Pg('S', Z("server_version") + Z("15.4")) + Pg('Z', "I"),
       "pg.status=I"},
      {Pg('C', Z("SELECT 1")) + Pg('Z', "I"), "pg.status=I"}};
  stream = Concat(responses);
  run = Feed(kPostgres, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(responses));
  ExpectSplitInvariant(kPostgres, kResponse, stream);
  // Ciphertext (what a statically linked TLS library would leave on the socket; capture
  // stops such a stream before the processor sees it) is not PostgreSQL: no more ends.
  std::string tls("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  run = Feed(kPostgres, kRequest, kSslRequest + tls);
  EXPECT_EQ(run.ends, (std::vector<End>{{8, ""}}));
  EXPECT_TRUE(run.failed);
  run = Feed(kPostgres, kResponse, "S" + tls + Pg('Z', "I"));
  EXPECT_EQ(run.ends, (std::vector<End>{{1, ""}}));
  EXPECT_TRUE(run.failed);
  // GSSAPI encryption is not read: after 'G' nothing more ends, without failing.
  run = Feed(kPostgres, kResponse, "G" + tls + Pg('Z', "I"));
  EXPECT_EQ(run.ends, (std::vector<End>{{1, ""}}));
  EXPECT_FALSE(run.failed);
  // A cancel request is a message of its own.
  run = Feed(kPostgres, kRequest, PgUntyped(80877102, BigEndian32(1234) + BigEndian32(5678)));
  EXPECT_EQ(run.ends, (std::vector<End>{{16, ""}}));
  EXPECT_FALSE(run.failed);
}

TEST(PostgresProcessorTest, MalformedMessagesFail) {
  std::string startup = PgUntyped(196608, Z("user") + Z("u") + Z(""));
  const std::string bad_requests[] = {
      PgUntyped(12345, ""),                      // no such code
      PgUntyped(80877103, "xxxx"),               // SSLRequest of 12 bytes
      BigEndian32(20000) + BigEndian32(196608),  // startup over 10000 bytes
      startup + "Z" + BigEndian32(4),            // a backend type from the client
      startup + "Q" + BigEndian32(3),            // length below 4
      startup + "Q" + BigEndian32(0x80000000u),  // negative length
  };
  for (const std::string& bad : bad_requests) {
    Stream run = Feed(kPostgres, kRequest, bad + Pg('Q', Z("SELECT 1")));
    EXPECT_TRUE(run.failed);
    EXPECT_LE(run.ends.size(), 1u);
  }
  Stream run = Feed(kPostgres, kResponse, Pg('Q', Z("x")));  // a frontend type from the server
  EXPECT_TRUE(run.failed);
  EXPECT_TRUE(run.ends.empty());
}

// Real sessions recorded between psql or pgbench and PostgreSQL 15 (tests/data/protocols).
std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(PostgresProcessorTest, RecordedPsqlSessions) {
  std::string request = ReadData("psql_session.req");
  Stream run = Feed(kPostgres, kRequest, request);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, (std::vector<End>{{8, ""},
                                        {71, ""},
                                        {85, "sql=select 1"},
                                        {135, "sql=create table if not exists t(id int, v text)"},
                                        {177, "sql=insert into t values (1,'a'),(2,'b')"},
                                        {211, "sql=select * from t where id = 1"},
                                        {216, ""}}));
  ExpectSplitInvariant(kPostgres, kRequest, request);
  std::string response = ReadData("psql_session.resp");
  run = Feed(kPostgres, kResponse, response);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, (std::vector<End>{{1, ""},
                                        {415, "pg.status=I"},
                                        {481, "pg.status=I"},
                                        {505, "pg.status=I"},
                                        {527, "pg.status=I"},
                                        {612, "pg.status=I"}}));
  ExpectSplitInvariant(kPostgres, kResponse, response);

  // COPY FROM STDIN: the query, then the data up to CopyDone; the server's CopyInResponse
  // ends the response in between.
  run = Feed(kPostgres, kRequest, ReadData("psql_copy.req"));
  EXPECT_EQ(run.ends, (std::vector<End>{
                          {8, ""}, {71, ""}, {94, "sql=copy t from stdin"}, {112, ""}, {117, ""}}));
  run = Feed(kPostgres, kResponse, ReadData("psql_copy.resp"));
  EXPECT_EQ(run.ends,
            (std::vector<End>{{1, ""}, {415, "pg.status=I"}, {427, ""}, {445, "pg.status=I"}}));
}

TEST(PostgresProcessorTest, RecordedPgbenchPreparedStatements) {
  std::string request = ReadData("pgbench_prepared.req");
  Stream requests = Feed(kPostgres, kRequest, request);
  EXPECT_FALSE(requests.failed);
  ASSERT_EQ(requests.ends.size(), 80u);
  EXPECT_EQ(requests.ends[2], (End{97, "sql=BEGIN;"}));
  EXPECT_EQ(requests.ends[3], (End{137, ""}));  // a prepared statement bound again: no Parse
  int with_sql = 0;
  for (const End& e : requests.ends) with_sql += e.attributes.starts_with("sql=");
  EXPECT_EQ(with_sql, 7);  // each of pgbench's statements parsed once
  ExpectSplitInvariant(kPostgres, kRequest, request, 0);

  std::string response = ReadData("pgbench_prepared.resp");
  Stream responses = Feed(kPostgres, kResponse, response);
  EXPECT_FALSE(responses.failed);
  ASSERT_EQ(responses.ends.size(), 79u);  // every request but Terminate is answered
  int idle = 0, in_transaction = 0;
  for (const End& e : responses.ends) {
    idle += e.attributes == "pg.status=I";
    in_transaction += e.attributes == "pg.status=T";
  }
  EXPECT_EQ(idle, 12);
  EXPECT_EQ(in_transaction, 66);
  ExpectSplitInvariant(kPostgres, kResponse, response, 0);
}

// --- Redis -------------------------------------------------------------------------------

TEST(RedisProcessorTest, PipelinedCommands) {
  std::vector<Piece> requests = {
      {"*3\r\n$3\r\nSET\r\n$5\r\nmykey\r\n$5\r\nhello\r\n", "redis.command=SET|redis.key=mykey"},
      {"*2\r\n$3\r\nget\r\n$5\r\nmykey\r\n", "redis.command=GET|redis.key=mykey"},
      {"*1\r\n$4\r\nPING\r\n", "redis.command=PING"},
      {"*2\r\n$4\r\nhget\r\n$0\r\n\r\n", "redis.command=HGET|redis.key="},
      {"ping\r\n", "redis.command=PING"},
      {"  set  k2 v\r\n", "redis.command=SET|redis.key=k2"},
      {"\r\n", ""},
      {"*0\r\n", ""},
      {"*2\r\n$6\r\nEXISTS\r\n$200\r\n" + std::string(200, 'k') + "\r\n",
       "redis.command=EXISTS|redis.key=" + std::string(kMaxValue, 'k')},
      {"*3\r\n$5\r\nLPUSH\r\n$1\r\nq\r\n$100000\r\n" + std::string(100000, 'v') + "\r\n",
       "redis.command=LPUSH|redis.key=q"},
  };
  std::string stream = Concat(requests);
  Stream run = Feed(kRedis, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kRedis, kRequest, stream, 2000);
}

TEST(RedisProcessorTest, NestedResp2AndResp3Replies) {
  std::vector<Piece> replies = {
      {"+OK\r\n", ""},
      {"$5\r\nhello\r\n", ""},
      {"$-1\r\n", ""},
      {":42\r\n", ""},
      {"-ERR unknown command\r\n", ""},
      {"*3\r\n$1\r\na\r\n*-1\r\n*2\r\n:1\r\n*0\r\n", ""},
      {"%2\r\n+first\r\n:1\r\n+second\r\n*2\r\n~1\r\n#t\r\n_\r\n", ""},
      {"|1\r\n+ttl\r\n:3600\r\n$2\r\nok\r\n", ""},  // an attribute, then its value
      {"*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", ""},
      {">3\r\n+message\r\n+chan\r\n$2\r\nhi\r\n", ""},
      {"=15\r\ntxt:Some string\r\n", ""},
      {",3.14\r\n", ""},
      {"(3492890328409238509324850943850943825024385\r\n", ""},
      {"!21\r\nSYNTAX invalid syntax\r\n", ""},
      {"$0\r\n\r\n", ""},
  };
  std::string stream = Concat(replies);
  Stream run = Feed(kRedis, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(replies));
  ExpectSplitInvariant(kRedis, kResponse, stream);
}

TEST(RedisProcessorTest, DepthLimitAndMalformedInput) {
  std::string deep;
  for (int i = 0; i < 16; ++i) deep += "*1\r\n";
  Stream run = Feed(kRedis, kResponse, deep + ":1\r\n");
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends.size(), 1u);
  run = Feed(kRedis, kResponse, "*1\r\n" + deep + ":1\r\n");  // 17 levels
  EXPECT_TRUE(run.failed);
  EXPECT_TRUE(run.ends.empty());

  // Streamed strings ($?) are not followed; simple lines are not looked into.
  for (std::string bad : {"?x\r\n", "$3\r\nabcd\r\n", "$x\r\n", "$?\r\n;4\r\nabcd\r\n;0\r\n",
                          "$-2\r\n", "*1\r\n$1\r\nab", "%-1\r\n", "$1\n\n\r\r"}) {
    run = Feed(kRedis, kResponse, "+OK\r\n" + bad + "+OK\r\n");
    EXPECT_TRUE(run.failed) << bad;
    EXPECT_EQ(run.ends, (std::vector<End>{{5, ""}})) << bad;
  }
  for (std::string bad :
       {"*2\r\n:1\r\n", "*1\r\n$3\r\nabcd\r\n", "*x\r\n", "*1\r\n$-1\r\n", "*99999999999\r\n"}) {
    run = Feed(kRedis, kRequest, "*1\r\n$4\r\nPING\r\n" + bad + "*1\r\n$4\r\nPING\r\n");
    EXPECT_TRUE(run.failed) << bad;
    EXPECT_EQ(run.ends.size(), 1u) << bad;
  }
  run = Feed(kRedis, kRequest, std::string(70000, 'a'));  // inline line over 64 KiB
  EXPECT_TRUE(run.failed);
}

// --- DNS ---------------------------------------------------------------------------------

std::string DnsQuery(uint16_t id, const std::string& qname_wire, std::string rest = "") {
  std::string m;
  m += char(id >> 8);
  m += char(id & 0xff);
  m += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);  // RD, 1 question
  m += qname_wire;
  m += std::string("\x00\x01\x00\x01", 4);  // A, IN
  return m + rest;
}
const std::string kWwwExample = std::string(
    "\x03www\x07"
    "example\x03"
    "com\x00",
    17);

std::string DatagramAttributes(Direction direction, const std::string& datagram) {
  Parser parser;
  Init(&parser, kDns, direction);
  ConsumeDatagram(&parser, reinterpret_cast<const uint8_t*>(datagram.data()), datagram.size());
  EXPECT_EQ(parser.messages, 1u);
  EXPECT_EQ(parser.consumed, datagram.size());
  return Format(parser.attributes);
}

TEST(DnsProcessorTest, DatagramIdAndName) {
  EXPECT_EQ(DatagramAttributes(kRequest, DnsQuery(0x1234, kWwwExample)),
            "dns.id=4660|dns.name=www.example.com");
  // A response: the answer's name is a compression pointer to the question's.
  std::string answer =
      std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x0e\x10\x00\x04\x7f\x00\x00\x01", 16);
  std::string response = DnsQuery(65535, kWwwExample, answer);
  response[2] = char(0x81);
  response[7] = 1;  // one answer
  EXPECT_EQ(DatagramAttributes(kResponse, response), "dns.id=65535|dns.name=www.example.com");
  EXPECT_EQ(DatagramAttributes(kRequest, DnsQuery(7, std::string(1, '\0'))), "dns.id=7|dns.name=.");
  std::string long_label = "\x3f" + std::string(63, 'a');
  EXPECT_EQ(
      DatagramAttributes(kRequest, DnsQuery(8, long_label + long_label + std::string(1, '\0'))),
      "dns.id=8|dns.name=" +
          (std::string(63, 'a') + "." + std::string(63, 'a')).substr(0, kMaxValue));
}

TEST(DnsProcessorTest, CompressionLoopsAndTruncationLogNoName) {
  // A pointer to itself, a label and a pointer back to it, a pointer forward, a reserved
  // label type, a name cut short: the id is logged, the name is not, and it is quick.
  for (std::string qname :
       {std::string("\xc0\x0c", 2), std::string("\x03www\xc0\x0c", 6), std::string("\xc0\x20", 2),
        std::string("\x43"
                    "abc",
                    4),
        std::string("\x03www\x07"
                    "exa",
                    8)}) {
    std::string m = DnsQuery(99, qname);
    if (qname.size() == 8) m.resize(12 + 8);  // cut inside the label
    EXPECT_EQ(DatagramAttributes(kRequest, m), "dns.id=99");
  }
  EXPECT_EQ(DatagramAttributes(kRequest, std::string("\x12\x34\x01", 3)), "");
  std::string no_question = DnsQuery(5, kWwwExample);
  no_question[5] = 0;
  EXPECT_EQ(DatagramAttributes(kRequest, no_question), "dns.id=5");
}

std::string Tcp(const std::string& message) {
  return std::string{char(message.size() >> 8), char(message.size() & 0xff)} + message;
}

TEST(DnsProcessorTest, TcpStreamOfLengthPrefixedMessages) {
  std::string padding(400, 'p');  // past what the processor keeps of a message
  std::vector<Piece> messages = {
      {Tcp(DnsQuery(1, kWwwExample)), "dns.id=1|dns.name=www.example.com"},
      {Tcp(DnsQuery(2,
                    std::string("\x01"
                                "a\x00",
                                3),
                    padding)),
       "dns.id=2|dns.name=a"},
      {Tcp(DnsQuery(3, std::string("\xc0\x0c", 2))), "dns.id=3"},
  };
  std::string stream = Concat(messages);
  Stream run = Feed(kDns, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(messages));
  ExpectSplitInvariant(kDns, kRequest, stream);

  run = Feed(kDns, kResponse, Tcp(DnsQuery(1, kWwwExample)) + Tcp("short"));
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.ends.size(), 1u);
}

// --- line-oriented -----------------------------------------------------------------------

TEST(LineProcessorTest, EachNewlineEndsAMessage) {
  std::string long_line(300, 'x');
  std::vector<Piece> lines = {
      {"get key1\r\n", "line=get key1"},
      {"set k 0 0 5\r\n", "line=set k 0 0 5"},
      {"value\n", "line=value"},
      {"\n", "line="},
      {"\r\n", "line="},
      {long_line + "\r\n", "line=" + long_line.substr(0, kMaxValue)},
      {std::string(kMaxValue, 'y') + "\r\n", "line=" + std::string(kMaxValue, 'y')},
      {std::string(kMaxValue - 1, 'z') + "\r\n", "line=" + std::string(kMaxValue - 1, 'z')},
      {"bare\rcr\n", "line=bare\rcr"},
  };
  std::string stream = Concat(lines);
  Stream run = Feed(kLine, kRequest, stream + "partial");
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(lines));
  ExpectSplitInvariant(kLine, kResponse, stream + "partial");
}

}  // namespace
}  // namespace weft::capture::protocols
