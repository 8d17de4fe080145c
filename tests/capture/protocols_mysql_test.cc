// The MySQL/MariaDB processor (capture/protocols/mysql.cc): exact message ends and
// attributes for both directions, any split of the stream giving the same, failure on
// malformed input, and sessions recorded between MariaDB 10.11 and its clients.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
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

std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += char((v >> (8 * i)) & 0xff);
  return s;
}
// One packet: 3-byte length, sequence id, payload.
std::string Packet(uint8_t seq, const std::string& payload) {
  return Le(payload.size(), 3) + char(seq) + payload;
}
std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s += char(b);
  return s;
}
std::string Z(const std::string& s) { return s + '\0'; }

constexpr uint32_t kCaps = 0x00bfa284;  // libmariadb's: PROTOCOL_41, no DEPRECATE_EOF
std::string HandshakeResponse(uint32_t caps, const std::string& user) {
  return Le(caps, 4) + Le(1u << 24, 4) + char(0x21) + std::string(23, '\0') + Z(user) + char(20) +
         std::string(20, 'x') + Z("mysql_native_password");
}
std::string Greeting() {
  return char(0x0a) + Z("10.11.19-MariaDB") + Le(7, 4) + std::string(8, 's') + char(0) +
         Le(0xf7fe, 2) + char(0x21) + Le(2, 2) + Le(0x81ff, 2) + char(21) + std::string(6, '\0') +
         Le(0x1d, 4) + Z(std::string(12, 't')) + Z("mysql_native_password");
}
std::string Ok(uint16_t status = 2, uint8_t header = 0x00) {
  return char(header) + Bytes({0, 0}) + Le(status, 2) + Le(0, 2);
}
std::string Err(uint16_t code) { return char(0xff) + Le(code, 2) + "#42000" + "bad"; }
std::string Eof(uint16_t status = 2) { return char(0xfe) + Le(0, 2) + Le(status, 2); }
std::string ColumnDef(const std::string& name) {
  return Bytes({3}) + "def" + char(1) + "w" + char(1) + "t" + char(1) + "t" + char(name.size()) +
         name + char(name.size()) + name + char(0x0c) + Le(0x21, 2) + Le(80, 4) + char(0xfd) +
         Le(0, 2) + char(0) + Le(0, 2);
}
std::string Row(const std::string& a, const std::string& b) {
  return char(a.size()) + a + char(b.size()) + b;
}
// A result set of two columns and `rows` rows from seq `seq` on; EOF packets unless
// `deprecate_eof`; the terminator's status `status`.
std::string ResultSet(uint8_t* seq, int rows, bool deprecate_eof, uint16_t status = 2) {
  std::string s = Packet((*seq)++, Bytes({2, 1}));  // MariaDB's metadata-follows byte
  s += Packet((*seq)++, ColumnDef("id"));
  s += Packet((*seq)++, ColumnDef("name"));
  if (!deprecate_eof) s += Packet((*seq)++, Eof());
  for (int r = 0; r < rows; ++r) s += Packet((*seq)++, Row(std::to_string(r), "row"));
  s += Packet((*seq)++, deprecate_eof ? Ok(status, 0xfe) : Eof(status));
  return s;
}

TEST(MysqlProcessorTest, DescriptorRow) {
  const ProtocolDescriptor& d = Describe(kMysql);
  EXPECT_STREQ(d.name, "mysql");
  EXPECT_TRUE(d.replies_in_order);
  EXPECT_TRUE(d.server_greets);
  EXPECT_EQ(d.auto_port, 3306);
  EXPECT_FALSE(d.detected);
  Protocol p;
  EXPECT_TRUE(ParseProtocol("mysql", 5, &p));
  EXPECT_EQ(p, kMysql);
}

TEST(MysqlProcessorTest, RequestsHandshakeCommandsAndPreparedStatements) {
  std::string long_query = "SELECT '" + std::string(300, 'q') + "'";
  std::vector<Piece> requests = {
      {Packet(1, HandshakeResponse(kCaps, "alice")), "mysql.command=Handshake|mysql.user=alice"},
      // An auth switch answer: 20 bytes of scramble.
      {Packet(3, std::string(20, 'a')), "mysql.command=Auth"},
      {Packet(0, "\x03select 1"), "mysql.command=Query|sql=select 1"},
      {Packet(0, "\x02shop"), "mysql.command=InitDB|mysql.db=shop"},
      {Packet(0, "\x16INSERT INTO t VALUES (?, ?)"),
       "mysql.command=Prepare|sql=INSERT INTO t VALUES (?, ?)"},
      // Long data gets no reply: it begins the Execute's message.
      {Packet(0, "\x18" + Le(7, 4) + Le(1, 2) + "text") +
           Packet(0, "\x17" + Le(7, 4) + Bytes({0}) + Le(1, 4) + Bytes({0, 1, 3, 0, 0xfe, 0}) +
                         Le(42, 4)),
       "mysql.command=Execute|mysql.stmt=7"},
      {Packet(0, "\x1a" + Le(7, 4)), "mysql.command=ResetStmt|mysql.stmt=7"},
      // A close gets no reply either: it goes with the next command.
      {Packet(0, "\x19" + Le(7, 4)) + Packet(0, "\x0e"), "mysql.command=Ping"},
      {Packet(0, "\x03" + long_query), "mysql.command=Query|sql=" + long_query.substr(0, 120)},
      // LOAD DATA LOCAL INFILE: the query, then the file up to its empty packet.
      {Packet(0, "\x03load data local infile 'f' into table t"),
       "mysql.command=Query|sql=load data local infile 'f' into table t"},
      {Packet(2, "1\tone\n") + Packet(3, "2\ttwo\n") + Packet(4, ""), "mysql.command=InfileData"},
      // COM_CHANGE_USER, then the answer to an auth switch.
      {Packet(0, "\x11" + Z("bob") + char(0) + Z("") + Le(0x21, 2)), "mysql.command=ChangeUser"},
      {Packet(2, std::string(20, 'b')), "mysql.command=Auth"},
      {Packet(0, "\x01"), "mysql.command=Quit"},
  };
  std::string stream = Concat(requests);
  Stream run = Feed(kMysql, kRequest, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(requests));
  ExpectSplitInvariant(kMysql, kRequest, stream);
}

TEST(MysqlProcessorTest, ResponsesWithEofPackets) {
  uint8_t seq = 1;
  std::string rows = ResultSet(&seq, 3, false);
  seq = 1;
  std::string empty = ResultSet(&seq, 0, false);
  // CALL of a procedure with two SELECTs: each result says more results follow.
  seq = 1;
  std::string call = ResultSet(&seq, 1, false, 0x000a);
  call += ResultSet(&seq, 2, false, 0x000a);
  call += Packet(seq++, Ok());
  // The prepare reply: statement 5, 2 columns, 1 parameter; each group ends with an EOF.
  std::string prepare = Packet(1, char(0) + Le(5, 4) + Le(2, 2) + Le(1, 2) + char(0) + Le(0, 2)) +
                        Packet(2, ColumnDef("?")) + Packet(3, Eof()) + Packet(4, ColumnDef("id")) +
                        Packet(5, ColumnDef("name")) + Packet(6, Eof());
  // A binary result set (COM_STMT_EXECUTE): rows start with 0x00.
  std::string binary = Packet(1, Bytes({2, 1})) + Packet(2, ColumnDef("id")) +
                       Packet(3, ColumnDef("name")) + Packet(4, Eof()) +
                       Packet(5, Bytes({0, 0}) + Le(1, 4) + char(3) + "one") + Packet(6, Eof(0x22));
  // COM_FIELD_LIST: definitions up to an EOF, no count before them.
  std::string field_list =
      Packet(1, ColumnDef("id")) + Packet(2, ColumnDef("name")) + Packet(3, Eof());
  std::vector<Piece> responses = {
      {Packet(0, Greeting()), "mysql.server=10.11.19-MariaDB"},
      {Packet(2, "\xfe" + Z("client_ed25519") + std::string(32, 'k')), "mysql.status=auth switch"},
      // caching_sha2_password's fast auth: the OK follows without a request between.
      {Packet(4, Bytes({1, 3})) + Packet(5, Ok()), "mysql.status=ok"},
      {rows, "mysql.status=ok|mysql.rows=3"},
      {empty, "mysql.status=ok|mysql.rows=0"},
      {Packet(1, Ok(0x0003)), "mysql.status=ok"},
      {Packet(1, Err(1064)), "mysql.status=error 1064"},
      {call, "mysql.status=ok|mysql.rows=3"},
      {prepare, "mysql.status=ok|mysql.stmt=5"},
      // A statement with neither parameters nor columns: the 12 bytes alone.
      {Packet(1, char(0) + Le(6, 4) + Le(0, 2) + Le(0, 2) + char(0) + Le(0, 2)),
       "mysql.status=ok|mysql.stmt=6"},
      {binary, "mysql.status=ok|mysql.rows=1"},
      // LOAD DATA LOCAL INFILE: the request for the file, then the OK after it.
      {Packet(1,
              "\xfb"
              "f"),
       "mysql.status=local infile"},
      {Packet(5, Ok()), "mysql.status=ok"},
      // MariaDB's progress report (an ERR with code 0xFFFF) does not end the reply.
      {Packet(1, char(0xff) + Le(0xffff, 2) + Bytes({1, 1, 2}) + Le(500, 3) + char(5) + "stage") +
           Packet(2, Ok()),
       "mysql.status=ok"},
      {field_list, "mysql.status=ok"},
      {Packet(1, "Uptime: 100  Threads: 1  Questions: 12"), "mysql.status=ok"},
      // An error after some rows ends the reply.
      {Packet(1, Bytes({1})) + Packet(2, ColumnDef("id")) + Packet(3, Eof()) +
           Packet(4, Row("1", "x")) + Packet(5, Err(1317)),
       "mysql.status=error 1317|mysql.rows=1"},
      {Packet(1, Eof()), "mysql.status=ok"},  // COM_DEBUG
  };
  std::string stream = Concat(responses);
  Stream run = Feed(kMysql, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(responses));
  ExpectSplitInvariant(kMysql, kResponse, stream);
}

TEST(MysqlProcessorTest, ResponsesWithDeprecatedEof) {
  uint8_t seq = 1;
  std::string rows = ResultSet(&seq, 2, true);
  seq = 1;
  std::string none = ResultSet(&seq, 0, true);
  seq = 1;
  std::string multi = ResultSet(&seq, 1, true, 0x000a);
  multi += Packet(seq++, Ok(0x000a));  // an INSERT's OK, more results after it
  multi += Packet(seq++, Ok());
  // After a result set showed the mode, a prepare reply with parameters only ends at its
  // last definition.
  std::string prepare = Packet(1, char(0) + Le(9, 4) + Le(0, 2) + Le(2, 2) + char(0) + Le(0, 2)) +
                        Packet(2, ColumnDef("?")) + Packet(3, ColumnDef("?"));
  std::vector<Piece> responses = {
      {Packet(0, Greeting()), "mysql.server=10.11.19-MariaDB"},
      {Packet(2, Ok()), "mysql.status=ok"},
      {rows, "mysql.status=ok|mysql.rows=2"},
      {none, "mysql.status=ok|mysql.rows=0"},
      {multi, "mysql.status=ok|mysql.rows=1"},
      {prepare, "mysql.status=ok|mysql.stmt=9"},
      {Packet(1, Ok()), "mysql.status=ok"},
  };
  std::string stream = Concat(responses);
  Stream run = Feed(kMysql, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(responses));
  ExpectSplitInvariant(kMysql, kResponse, stream);
}

TEST(MysqlProcessorTest, PrepareBeforeAnyResultSetLearnsTheModeWhereItCan) {
  // Parameters and columns: the packet after the parameters shows there is no EOF.
  std::string both = Packet(1, char(0) + Le(1, 4) + Le(1, 2) + Le(1, 2) + char(0) + Le(0, 2)) +
                     Packet(2, ColumnDef("?")) + Packet(3, ColumnDef("id"));
  std::vector<Piece> responses = {
      {Packet(0, Greeting()), "mysql.server=10.11.19-MariaDB"},
      {Packet(2, Ok()), "mysql.status=ok"},
      {both, "mysql.status=ok|mysql.stmt=1"},
      {Packet(1, Ok()), "mysql.status=ok"},
  };
  std::string stream = Concat(responses);
  Stream run = Feed(kMysql, kResponse, stream);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, Ends(responses));
  ExpectSplitInvariant(kMysql, kResponse, stream);
}

TEST(MysqlProcessorTest, LongPacketsContinue) {
  // A 16 MiB query: 0xFFFFFF bytes, then the rest in a packet of its own.
  std::string text(0xffffff + 100, 'x');
  std::string payload = "\x03" + text;
  std::string query =
      Le(0xffffff, 3) + char(0) + payload.substr(0, 0xffffff) + Packet(1, payload.substr(0xffffff));
  std::string stream = Packet(1, HandshakeResponse(kCaps, "u")) + query + Packet(0, "\x0e");
  Stream run = Feed(kMysql, kRequest, stream, {10, 1000, 0xffffff, 0xffffff + 7});
  EXPECT_FALSE(run.failed);
  size_t handshake = 4 + HandshakeResponse(kCaps, "u").size();
  ASSERT_EQ(run.ends.size(), 3u);
  EXPECT_EQ(run.ends[1].offset, handshake + query.size());
  EXPECT_EQ(run.ends[1].attributes, "mysql.command=Query|sql=" + text.substr(0, 120));
  EXPECT_EQ(run.ends[2], (End{stream.size(), "mysql.command=Ping"}));

  // A row of exactly 0xFFFFFF bytes is followed by an empty packet; a 0xFE row with a
  // 16 MiB string is not a terminator.
  std::string row = char(0xfe) + Le(0xffffff - 9, 8) + std::string(0xffffff - 9, 'r');
  std::string reply = Packet(1, Bytes({1})) + Packet(2, ColumnDef("id")) + Packet(3, Eof()) +
                      Le(0xffffff, 3) + char(4) + row + Packet(5, "") + Packet(6, Eof());
  std::string responses = Packet(0, Greeting()) + Packet(2, Ok()) + reply;
  Stream replies = Feed(kMysql, kResponse, responses, {100, 5000, 0xffffff});
  EXPECT_FALSE(replies.failed);
  ASSERT_EQ(replies.ends.size(), 3u);
  EXPECT_EQ(replies.ends[2], (End{responses.size(), "mysql.status=ok|mysql.rows=1"}));
}

TEST(MysqlProcessorTest, SslRequestThenTls) {
  std::string tls = Bytes({0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}) +
                    std::string(200, 'c');
  std::string requests =
      Packet(1, Le(kCaps | 0x800, 4) + Le(1u << 24, 4) + char(0x21) + std::string(23, '\0')) + tls;
  Stream run = Feed(kMysql, kRequest, requests);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends, (std::vector<End>{{36, "mysql.command=SSLRequest"}}));
  ExpectSplitInvariant(kMysql, kRequest, requests);

  std::string greeting = Packet(0, Greeting());
  std::string responses =
      greeting + Bytes({0x16, 0x03, 0x03, 0x00, 0x7a, 0x02}) + std::string(300, 's');
  Stream replies = Feed(kMysql, kResponse, responses);
  EXPECT_FALSE(replies.failed);
  EXPECT_EQ(replies.ends, (std::vector<End>{{greeting.size(), "mysql.server=10.11.19-MariaDB"}}));
  ExpectSplitInvariant(kMysql, kResponse, responses);
}

std::string ReadData(const std::string& name);

// CLIENT_COMPRESS: after authentication each packet has a 7-byte header and zlib data, or
// the plain packets when they are short. The request parser sees the client ask for it;
// the response parser sees a first reply that can only be compressed. Neither reports
// more ends, neither fails.
TEST(MysqlProcessorTest, CompressedProtocolStopsEnds) {
  std::string request = ReadData("mariadb_compressed.req");
  ASSERT_FALSE(request.empty());
  Stream requests = Feed(kMysql, kRequest, request);
  EXPECT_FALSE(requests.failed);
  ASSERT_EQ(requests.ends.size(), 1u);
  EXPECT_EQ(requests.ends[0].attributes, "mysql.command=Handshake|mysql.user=root");
  ExpectSplitInvariant(kMysql, kRequest, request);
  std::string response = ReadData("mariadb_compressed.resp");
  Stream responses = Feed(kMysql, kResponse, response);
  EXPECT_FALSE(responses.failed);
  EXPECT_EQ(responses.ends.size(), 2u);  // the greeting and the authentication's OK
  ExpectSplitInvariant(kMysql, kResponse, response);

  // Short packets go uncompressed: a zero uncompressed length, then the plain OK.
  std::string plain = Packet(1, Ok());
  std::string raw = Le(plain.size(), 3) + char(1) + Le(0, 3) + plain;  // 7-byte header
  Stream run = Feed(kMysql, kResponse, Packet(0, Greeting()) + Packet(2, Ok()) + raw + raw);
  EXPECT_FALSE(run.failed);
  EXPECT_EQ(run.ends.size(), 2u);
}

TEST(MysqlProcessorTest, MalformedStreamsFail) {
  auto fails = [](Direction direction, const std::string& bytes) {
    Stream run = Feed(kMysql, direction, bytes);
    ExpectSplitInvariant(kMysql, direction, bytes);
    return run.failed;
  };
  std::string handshake = Packet(1, HandshakeResponse(kCaps, "u"));
  EXPECT_FALSE(fails(kRequest, handshake + Packet(0, "\x03select 1")));
  // A handshake response too short to hold a user name.
  EXPECT_TRUE(fails(kRequest, Packet(1, Le(kCaps, 4) + std::string(20, '\0'))));
  // HTTP, not a handshake response.
  EXPECT_TRUE(fails(kRequest, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  // An unknown command, an empty command packet.
  EXPECT_TRUE(fails(kRequest, handshake + Packet(0, "\x60oops")));
  EXPECT_TRUE(fails(kRequest, handshake + Packet(0, "")));
  // A continued packet out of sequence.
  EXPECT_TRUE(Feed(kMysql, kRequest,
                   handshake + Le(0xffffff, 3) + char(0) + "\x03" + std::string(0xfffffe, 'x') +
                       Packet(5, "y"))
                  .failed);
  // HTTP, not a greeting.
  EXPECT_TRUE(fails(kResponse, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  std::string start = Packet(0, Greeting()) + Packet(2, Ok());
  EXPECT_FALSE(fails(kResponse, start + Packet(1, Ok())));
  // An authentication packet of no known kind; an OK too short.
  EXPECT_TRUE(fails(kResponse, Packet(0, Greeting()) + Packet(2, "\x07xyz")));
  EXPECT_TRUE(fails(kResponse, start + Packet(1, Bytes({0, 0}))));
  // A result set's packets out of sequence; an empty packet.
  EXPECT_TRUE(fails(kResponse, start + Packet(1, Bytes({1})) + Packet(3, ColumnDef("id"))));
  EXPECT_TRUE(fails(kResponse, start + Packet(1, "")));
}

// --- sessions recorded from MariaDB 10.11 (tests/data/protocols/README.md) --------------

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Attributes(const Stream& run) {
  std::vector<std::string> all;
  for (const End& e : run.ends) all.push_back(e.attributes);
  return all;
}

TEST(MysqlProcessorTest, RecordedMariadbClientSession) {
  std::string request = ReadData("mariadb_session.req");
  ASSERT_FALSE(request.empty());
  Stream requests = Feed(kMysql, kRequest, request);
  EXPECT_FALSE(requests.failed);
  EXPECT_EQ(requests.ends.back().offset, request.size());
  std::vector<std::string> sent = {
      "mysql.command=Handshake|mysql.user=root",
      "mysql.command=Query|sql=select 1",
      "mysql.command=Query|sql=create database w",
      "mysql.command=Query|sql=SELECT DATABASE()",
      "mysql.command=InitDB|mysql.db=w",
      "mysql.command=Query|sql=create table t (id int primary key, name varchar(20))",
      "mysql.command=Query|sql=insert into t values (1, 'one'), (2, 'two')",
      "mysql.command=Query|sql=select * from t order by id",
      "mysql.command=Query|sql=select * from t where id = 99",
      "mysql.command=Query|sql=prepare s from 'select name from t where id = ?'",
      "mysql.command=Query|sql=set @a = 2",
      "mysql.command=Query|sql=execute s using @a",
      "mysql.command=Query|sql=deallocate prepare s",
      "mysql.command=Query|sql=selec oops",
      "mysql.command=Query|sql=load data local infile '/tmp/my19/rows.tsv' into table t",
      "mysql.command=InfileData",
      "mysql.command=Query|sql=create procedure two() begin select count(*) from t; select "
      "max(id) from t; end",
      "mysql.command=Query|sql=call two()",
      "mysql.command=Query|sql=update t set name = 'uno' where id = 1",
      "mysql.command=Quit",
  };
  EXPECT_EQ(Attributes(requests), sent);
  ExpectSplitInvariant(kMysql, kRequest, request);

  std::string response = ReadData("mariadb_session.resp");
  Stream responses = Feed(kMysql, kResponse, response);
  EXPECT_FALSE(responses.failed);
  EXPECT_EQ(responses.ends.back().offset, response.size());
  std::vector<std::string> answered = {
      "mysql.server=5.5.5-10.11.19-MariaDB-0+deb12u1",
      "mysql.status=ok",               // authentication
      "mysql.status=ok|mysql.rows=1",  // select 1
      "mysql.status=ok",               // create database
      "mysql.status=ok|mysql.rows=1",  // SELECT DATABASE()
      "mysql.status=ok",               // use
      "mysql.status=ok",               // create table
      "mysql.status=ok",               // insert
      "mysql.status=ok|mysql.rows=2",  // select *
      "mysql.status=ok|mysql.rows=0",  // select where 99
      "mysql.status=ok",               // prepare
      "mysql.status=ok",               // set
      "mysql.status=ok|mysql.rows=1",  // execute
      "mysql.status=ok",               // deallocate
      "mysql.status=error 1064",       // selec oops
      "mysql.status=local infile",     // load data
      "mysql.status=ok",               // after the file
      "mysql.status=ok",               // create procedure
      "mysql.status=ok|mysql.rows=2",  // call two(): two result sets and an OK
      "mysql.status=ok",               // update
  };
  EXPECT_EQ(Attributes(responses), answered);
  // The greeting answers nothing; every request but the last (Quit) has its reply.
  EXPECT_EQ(responses.ends.size() - 1, requests.ends.size() - 1);
  ExpectSplitInvariant(kMysql, kResponse, response);
}

TEST(MysqlProcessorTest, RecordedLibmariadbPreparedStatements) {
  std::string request = ReadData("mariadb_binary.req");
  ASSERT_FALSE(request.empty());
  Stream requests = Feed(kMysql, kRequest, request);
  EXPECT_FALSE(requests.failed);
  EXPECT_EQ(requests.ends.back().offset, request.size());
  std::vector<std::string> sent = {
      "mysql.command=Handshake|mysql.user=root",
      "mysql.command=Query|sql=CREATE DATABASE IF NOT EXISTS probe",
      "mysql.command=InitDB|mysql.db=probe",
      "mysql.command=Query|sql=CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(64))",
      "mysql.command=Prepare|sql=INSERT INTO t (id, name) VALUES (?, ?)",
  };
  for (int i = 0; i < 6; ++i) sent.push_back("mysql.command=Execute|mysql.stmt=5");
  // The close of the INSERT goes with the next prepare.
  sent.push_back("mysql.command=Prepare|sql=SELECT id, name FROM t WHERE id <= ? ORDER BY id");
  for (int i = 0; i < 2; ++i) {
    sent.push_back("mysql.command=Execute|mysql.stmt=6");
    sent.push_back("mysql.command=ResetStmt|mysql.stmt=6");
  }
  sent.push_back("mysql.command=Ping");
  sent.push_back("mysql.command=Query|sql=SELECT COUNT(*) FROM t");
  sent.push_back("mysql.command=Quit");
  EXPECT_EQ(Attributes(requests), sent);
  ExpectSplitInvariant(kMysql, kRequest, request);

  std::string response = ReadData("mariadb_binary.resp");
  Stream responses = Feed(kMysql, kResponse, response);
  EXPECT_FALSE(responses.failed);
  EXPECT_EQ(responses.ends.back().offset, response.size());
  std::vector<std::string> answered = {
      "mysql.server=5.5.5-10.11.19-MariaDB-0+deb12u1",
      "mysql.status=ok",  // authentication
      "mysql.status=ok",  // create database
      "mysql.status=ok",  // init db
      "mysql.status=ok",  // create table
      "mysql.status=ok|mysql.stmt=5",
  };
  for (int i = 0; i < 6; ++i) answered.push_back("mysql.status=ok");
  answered.push_back("mysql.status=ok|mysql.stmt=6");
  answered.push_back("mysql.status=ok|mysql.rows=1");
  answered.push_back("mysql.status=ok");
  answered.push_back("mysql.status=ok|mysql.rows=6");
  answered.push_back("mysql.status=ok");
  answered.push_back("mysql.status=ok");               // ping
  answered.push_back("mysql.status=ok|mysql.rows=1");  // count
  EXPECT_EQ(Attributes(responses), answered);
  EXPECT_EQ(responses.ends.size() - 1, requests.ends.size() - 1);
  ExpectSplitInvariant(kMysql, kResponse, response);
}

}  // namespace
}  // namespace weft::capture::protocols
