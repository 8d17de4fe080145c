// memcached 1.6 under `weft capture --protocols memcached=PORT`, driven by libmemcached's
// memcslap over the text and the binary protocol: storage and retrieval commands, noreply
// sets, and a binary multi-get of quiet getkq requests closed by a noop. After
// reconciling, every command memcslap sent is a CALL carrying its memcached.command and
// key (checked against the bytes), each answered command has exactly one RETURN with its
// call id, and the counts per command equal the server's own stats counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "capture/real_servers.h"
#include "weft_cli.h"

namespace weft {
namespace {

using testing::PayloadPrefix;
using testing::ProgramOf;
using testing::RealServersTest;
using testing::Weft;

// The server's "stats" answer, asked on a connection of the test's own (untraced).
std::map<std::string, long> Stats(uint16_t port) {
  std::map<std::string, long> stats;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      write(fd, "stats\r\n", 7) != 7) {
    close(fd);
    return stats;
  }
  std::string reply;
  char buffer[4096];
  while (reply.find("END\r\n") == std::string::npos) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    reply.append(buffer, size_t(n));
  }
  close(fd);
  static const std::regex kStat(R"(STAT (\w+) (\d+)\r\n)");
  for (std::sregex_iterator it(reply.begin(), reply.end(), kStat), end; it != end; ++it) {
    stats[(*it)[1]] = std::stol((*it)[2]);
  }
  return stats;
}

// The key a request's first bytes carry: a text line's second word (the command's first
// key for the commands memcslap sends), or a binary packet's key; "" if the prefix does
// not reach it.
std::string KeyOf(const std::string& prefix) {
  if (!prefix.empty() && uint8_t(prefix[0]) == 0x80) {
    if (prefix.size() < 24) return "";
    size_t key = (size_t(uint8_t(prefix[2])) << 8) | uint8_t(prefix[3]);
    size_t extras = uint8_t(prefix[4]);
    if (prefix.size() < 24 + extras + key) return "";
    return prefix.substr(24 + extras, key);
  }
  size_t space = prefix.find(' ');
  if (space == std::string::npos) return "";
  size_t end = prefix.find_first_of(" \r\n", space + 1);
  if (end == std::string::npos) return "";
  return prefix.substr(space + 1, end - space - 1);
}

int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const std::string& bytes) {
  return write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size());
}
std::string ReadExactly(int fd, size_t n) {
  std::string s(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, s.data() + got, n - got);
    if (r <= 0) break;
    got += size_t(r);
  }
  s.resize(got);
  return s;
}
// "127.0.0.1:PORT" of the socket's own end, as reconcile names an untraced peer.
std::string LocalEndpoint(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// A text session of the test's own (untraced; the traced server's boundaries cut it):
// noreply and quiet meta commands, which get no reply, written back to back with the
// command after them, whose reply closes the run they share; meta commands with an
// O(token) flag, which their replies echo. Each step: what is sent and
// the reply it waits for ("" for none).
const std::vector<std::pair<std::string, std::string>> kTextSession = {
    {"set a 0 0 2 noreply\r\nhi\r\n", ""},
    {"set b 0 0 3\r\nbee\r\n", "STORED\r\n"},
    {"get a b zz\r\n", "VALUE a 0 2\r\nhi\r\nVALUE b 0 3\r\nbee\r\nEND\r\n"},
    {"incr n 1\r\n", "NOT_FOUND\r\n"},
    {"delete b noreply\r\n", ""},
    {"ms m 2 T0 O7\r\nmm\r\n", "HD O7\r\n"},
    {"mg m v O8\r\n", "VA 2 O8\r\nmm\r\n"},
    {"mg nokey v q O9\r\n", ""},
    {"mn\r\n", "MN\r\n"},
    {"touch a 100\r\n", "TOUCHED\r\n"},
    {"verbosity 0\r\n", "OK\r\n"},
    {"quit\r\n", ""},
};

// A binary packet: magic, opcode, key length, extras length, data type, vbucket, body
// length, opaque, CAS, then extras and key.
std::string BinaryRequest(uint8_t opcode, const std::string& key, const std::string& extras,
                          const std::string& value, uint32_t opaque) {
  uint32_t body = uint32_t(extras.size() + key.size() + value.size());
  std::string s = {
      char(0x80), char(opcode), char(key.size() >> 8), char(key.size()), char(extras.size()), 0, 0,
      0};
  for (uint32_t v : {body, opaque})
    for (int i = 3; i >= 0; --i) s += char((v >> (8 * i)) & 0xff);
  s += std::string(8, '\0');
  return s + extras + key + value;
}
// Reads reply packets until one with `opaque` (for stat: the last, without a key).
bool ReadBinaryReply(int fd, uint32_t opaque) {
  while (true) {
    std::string header = ReadExactly(fd, 24);
    if (header.size() != 24) return false;
    auto byte = [&](int i) { return uint32_t(uint8_t(header[size_t(i)])); };
    uint32_t body = (byte(8) << 24) | (byte(9) << 16) | (byte(10) << 8) | byte(11);
    uint32_t got = (byte(12) << 24) | (byte(13) << 16) | (byte(14) << 8) | byte(15);
    if (ReadExactly(fd, body).size() != body) return false;
    bool more = byte(1) == 0x10 && ((byte(2) << 8) | byte(3)) > 0;
    if (got == opaque && !more) return true;
  }
}

// Binary quiet commands, answered only when they fail (getq, getkq: only on a hit).
bool Quiet(const std::string& command) {
  return command == "getq" || command == "getkq" || command == "setq" || command == "addq" ||
         command == "replaceq" || command == "deleteq";
}

class RealServersMemcachedTest : public RealServersTest {
 protected:
  // The memcslap runs and the test's own sessions, captured with isolate_ as set, and
  // every check on their trace.
  void MemcslapAndSessions();
  std::string Isolation() const { return isolate_ ? "--isolate" : "--no-isolate"; }
};

void RealServersMemcachedTest::MemcslapAndSessions() {
  if (!Installed("/usr/bin/memcached") || !Installed("/usr/bin/memcslap")) {
    GTEST_SKIP() << "memcached / libmemcached-tools not installed (scripts/install-deps)";
  }
  uint16_t port = testing::FreePorts<1>()[0];
  ASSERT_NE(port, 0);
  std::string protocols = "--protocols memcached=" + std::to_string(port);
  std::vector<std::string> argv = {WEFT_BINARY,
                                   "capture",
                                   "-o",
                                   Path("capture/memcached"),
                                   "--payload-prefix",
                                   std::to_string(kPrefix),
                                   Isolation(),
                                   "--protocols",
                                   "memcached=" + std::to_string(port),
                                   "--",
                                   "/usr/bin/memcached",
                                   "-p",
                                   std::to_string(port),
                                   "-l",
                                   "127.0.0.1",
                                   "-U",
                                   "0",
                                   "-t",
                                   "2"};
  if (getuid() == 0) {
    argv.push_back("-u");
    argv.push_back("root");
  }
  pid_t server = background_->Start(argv, Path("memcached.out"));
  ASSERT_TRUE(testing::WaitForPort(port)) << testing::ReadFile(Path("memcached.out"));

  // Each run under capture: text set and get on two connections, and the binary
  // protocol's set, get and multi-get. (memcslap's --noreply changes nothing on the wire
  // in libmemcached 1.1.4: the test's own session sends noreply commands.)
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"text-set", "-t set -e 200 -c 2"},
      {"text-get", "-t get -e 200 -c 2"},
      {"binary-set", "--binary -t set -e 200 -c 2"},
      {"binary-get", "--binary -t get -e 200 -c 2"},
      {"binary-mget", "--binary -t mget -e 50 -c 1"},
  };
  for (const auto& [name, options] : runs) {
    auto run = Weft("capture -o " + Path("capture/" + name) + " --payload-prefix " +
                    std::to_string(kPrefix) + " " + Isolation() + " " + protocols +
                    " -- /usr/bin/memcslap -s 127.0.0.1:" + std::to_string(port) + " " + options);
    ASSERT_EQ(run.rc, 0) << name << ": " << run.output;
  }
  // The test's own sessions, text then binary; the client's end of each is untraced.
  int text = Connect(port);
  ASSERT_GE(text, 0);
  std::string text_client = LocalEndpoint(text);
  for (const auto& [request, reply] : kTextSession) {
    ASSERT_TRUE(WriteAll(text, request));
    EXPECT_EQ(ReadExactly(text, reply.size()), reply) << request;
  }
  close(text);
  int bin = Connect(port);
  ASSERT_GE(bin, 0);
  std::string binary_client = LocalEndpoint(bin);
  // setq (no reply on success), a getkq hit and a getkq miss (no reply), closed by a noop;
  // a get miss; stat (many packets, one message); a deleteq that fails, so is answered;
  // quit. Opaques 11..18.
  ASSERT_TRUE(WriteAll(bin, BinaryRequest(0x11, "q1", std::string(8, '\0'), "v1", 11) +
                                BinaryRequest(0x0d, "q1", "", "", 12) +
                                BinaryRequest(0x0d, "missing", "", "", 13) +
                                BinaryRequest(0x0a, "", "", "", 14)));
  EXPECT_TRUE(ReadBinaryReply(bin, 14));
  for (auto [opcode, key, opaque] :
       {std::tuple<uint8_t, const char*, uint32_t>{0x00, "missing", 15},
        {0x10, "", 16},
        {0x14, "nokey", 17},
        {0x07, "", 18}}) {
    ASSERT_TRUE(WriteAll(bin, BinaryRequest(opcode, key, "", "", opaque)));
    EXPECT_TRUE(ReadBinaryReply(bin, opaque)) << int(opcode);
  }
  close(bin);
  std::map<std::string, long> stats = Stats(port);
  int status = background_->Stop(server, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::ReadFile(Path("memcached.out"));
  ASSERT_GT(stats["cmd_set"], 0) << "no stats from the server";

  Trace trace = Reconcile();
  std::cerr << testing::FormatCounts(testing::CountByNodes(trace));
  const TraceColumns& c = trace.columns();
  auto attribute = [&](size_t i, const char* key) {
    std::string value;
    testing::AttributeOf(trace, MessageId{uint32_t(i)}, key, &value);
    return value;
  };
  auto call_id = [&](size_t i) { return std::string(trace.strings().Get(c.call_id[i])); };
  std::map<std::string, int> all_commands;    // every CALL to the server, any client's
  long keys_fetched = 0;                      // keys of text get commands
  std::map<std::string, int> by_command;      // CALLs from memcslap
  std::map<std::string, int> calls, returns;  // memcslap's, per call id
  std::set<std::string> answered;             // call ids of memcslap CALLs that expect a reply
  std::vector<size_t> text_calls, text_returns, binary_calls, binary_returns;
  int keys_checked = 0, binary = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string from(trace.NodeName(c.sender[i])), to(trace.NodeName(c.receiver[i]));
    MessageId m{uint32_t(i)};
    std::string prefix = PayloadPrefix(trace, m);
    if (c.kind[i] == MessageKind::kCall) {
      EXPECT_EQ(ProgramOf(to), "memcached");
      EXPECT_EQ(attribute(i, "protocol"), "memcached") << call_id(i);
      std::string command = attribute(i, "memcached.command");
      EXPECT_FALSE(command.empty()) << call_id(i);
      ++all_commands[command];
      if (command == "get" && !prefix.empty() && uint8_t(prefix[0]) == 0x80) {
        ++keys_fetched;
      } else if (command == "get") {
        std::string line = prefix.substr(0, prefix.find('\r'));
        keys_fetched += std::count(line.begin(), line.end(), ' ');
      }
      if (from == text_client) text_calls.push_back(i);
      if (from == binary_client) binary_calls.push_back(i);
      if (ProgramOf(from) != "memcslap") continue;
      ++by_command[command];
      ++calls[call_id(i)];
      binary += !prefix.empty() && uint8_t(prefix[0]) == 0x80;
      std::string expected = KeyOf(prefix);
      if (command != "quit" && command != "noop") {
        std::string key = attribute(i, "memcached.key");
        EXPECT_FALSE(key.empty()) << call_id(i);
        if (!expected.empty()) {
          EXPECT_EQ(key, expected.substr(0, 120)) << call_id(i);
          ++keys_checked;
        }
      }
      if (attribute(i, "memcached.reply").empty() && !Quiet(command)) answered.insert(call_id(i));
      EXPECT_NE(c.send_time[i], kNoTime);
      EXPECT_NE(c.recv_time[i], kNoTime);
    } else if (c.kind[i] == MessageKind::kReturn) {
      EXPECT_FALSE(attribute(i, "memcached.status").empty()) << call_id(i);
      if (to == text_client) text_returns.push_back(i);
      if (to == binary_client) binary_returns.push_back(i);
      if (ProgramOf(to) == "memcslap") ++returns[call_id(i)];
    }
  }
  std::cerr << "memcslap CALLs:";
  for (const auto& [command, n] : by_command) std::cerr << " " << command << "=" << n;
  std::cerr << "; " << binary << " binary, " << keys_checked
            << " keys checked against the bytes\nstats: cmd_set=" << stats["cmd_set"]
            << " cmd_get=" << stats["cmd_get"] << " get_hits=" << stats["get_hits"] << "\n";

  // The server's counters: every store is one CALL, every key fetched one CALL or one key
  // of a text get's.
  EXPECT_EQ(all_commands["set"] + all_commands["setq"] + all_commands["ms"], stats["cmd_set"]);
  EXPECT_EQ(keys_fetched + all_commands["getk"] + all_commands["getq"] + all_commands["getkq"] +
                all_commands["mg"],
            stats["cmd_get"]);
  EXPECT_GT(by_command["getkq"], 0);
  EXPECT_GT(by_command["noop"], 0);
  EXPECT_GT(binary, 0);
  EXPECT_GT(keys_checked, 0);
  // memcslap: every answered command has exactly one RETURN with its call id: by the
  // binary opaque (libmemcached numbers its requests), by the direction-turn run for text
  // (memcslap waits for each reply). A getkq is answered only on a hit, and its reply then
  // has the getkq's own call id.
  for (const std::string& id : answered) {
    EXPECT_EQ(calls[id], 1) << id;
    EXPECT_EQ(returns[id], 1) << id;
  }
  int quiet_answers = 0;
  for (const auto& [id, n] : returns) {
    EXPECT_EQ(n, 1) << id;
    EXPECT_EQ(calls.count(id), 1u) << "a RETURN without its CALL: " << id;
    quiet_answers += !answered.count(id);
  }
  // memcslap's multi-get asks for keys it has just stored: its getkq hit.
  EXPECT_GT(quiet_answers, 0);
  EXPECT_LE(quiet_answers, by_command["getkq"]);

  // The text session: each command a CALL with its attributes; an unanswered one without
  // a token (noreply, quit) shares its call id, the run's, with the command written after
  // it, whose reply is the run's one RETURN.
  auto by_receive = [&](size_t a, size_t b) { return c.recv_time[a] < c.recv_time[b]; };
  std::sort(text_calls.begin(), text_calls.end(), by_receive);
  std::sort(text_returns.begin(), text_returns.end(), by_receive);
  const std::vector<std::tuple<std::string, std::string, std::string>> kTextCalls = {
      {"set", "a", "none"},    {"set", "b", ""},   {"get", "a", ""},      {"incr", "n", ""},
      {"delete", "b", "none"}, {"ms", "m", ""},    {"mg", "m", ""},       {"mg", "nokey", "quiet"},
      {"mn", "", ""},          {"touch", "a", ""}, {"verbosity", "", ""}, {"quit", "", "none"}};
  ASSERT_EQ(text_calls.size(), kTextCalls.size());
  std::map<std::string, std::vector<size_t>> text_runs;  // call id -> answered CALLs
  for (size_t k = 0; k < kTextCalls.size(); ++k) {
    size_t i = text_calls[k];
    const auto& [command, key, reply] = kTextCalls[k];
    EXPECT_EQ(attribute(i, "memcached.command"), command) << k;
    EXPECT_EQ(attribute(i, "memcached.key"), key) << k;
    EXPECT_EQ(attribute(i, "memcached.reply"), reply) << k;
    if (reply.empty()) text_runs[call_id(i)].push_back(k);
  }
  const std::vector<std::pair<std::string, size_t>> kTextReturns = {
      {"STORED", 1}, {"VALUE", 2}, {"NOT_FOUND", 3}, {"HD", 5},
      {"VA", 6},     {"MN", 8},    {"TOUCHED", 9},   {"OK", 10}};
  ASSERT_EQ(text_returns.size(), kTextReturns.size());
  for (size_t k = 0; k < kTextReturns.size(); ++k) {
    size_t i = text_returns[k];
    EXPECT_EQ(attribute(i, "memcached.status"), kTextReturns[k].first) << k;
    EXPECT_EQ(text_runs[call_id(i)], std::vector<size_t>{kTextReturns[k].second}) << call_id(i);
  }
  EXPECT_EQ(call_id(text_calls[0]), call_id(text_calls[1]));  // set noreply, then set
  // The meta commands with O(token) have their reply's call id by the token; the quiet
  // miss has none.
  for (auto [k, token] : {std::pair<size_t, const char*>{5, "7"}, {6, "8"}, {7, "9"}}) {
    EXPECT_EQ(attribute(text_calls[k], "memcached.opaque"), token) << k;
    EXPECT_TRUE(call_id(text_calls[k]).ends_with(std::string(".w") + token))
        << call_id(text_calls[k]);
  }
  EXPECT_EQ(attribute(text_returns[3], "memcached.opaque"), "7");
  EXPECT_EQ(attribute(text_returns[4], "memcached.opaque"), "8");
  for (size_t i : text_returns) EXPECT_NE(call_id(i), call_id(text_calls[7]));

  // The binary session: each reply has its request's call id, by the opaque.
  std::sort(binary_calls.begin(), binary_calls.end(), by_receive);
  const std::vector<std::string> kBinaryCalls = {"setq", "getkq", "getkq",   "noop",
                                                 "get",  "stat",  "deleteq", "quit"};
  ASSERT_EQ(binary_calls.size(), kBinaryCalls.size());
  std::map<std::string, std::string> binary_by_id;  // call id -> command
  for (size_t k = 0; k < kBinaryCalls.size(); ++k) {
    size_t i = binary_calls[k];
    EXPECT_EQ(attribute(i, "memcached.command"), kBinaryCalls[k]) << k;
    EXPECT_EQ(attribute(i, "memcached.opaque"), std::to_string(11 + k)) << k;
    binary_by_id[call_id(i)] = kBinaryCalls[k];
  }
  EXPECT_EQ(binary_by_id.size(), kBinaryCalls.size()) << "each request has a call id of its own";
  std::multiset<std::string> answered_binary;
  for (size_t i : binary_returns) {
    EXPECT_TRUE(binary_by_id.count(call_id(i))) << call_id(i);
    EXPECT_EQ(attribute(i, "memcached.command"), binary_by_id[call_id(i)]) << call_id(i);
    EXPECT_EQ(call_id(i).substr(call_id(i).find(".w")), ".w" + attribute(i, "memcached.opaque"));
    answered_binary.insert(attribute(i, "memcached.opaque"));
  }
  EXPECT_EQ(answered_binary, (std::multiset<std::string>{"12", "14", "15", "16", "17", "18"}));
}

TEST_F(RealServersMemcachedTest, MemcslapCommandsMatchMemcachedStats) { MemcslapAndSessions(); }

// The same with event isolation (weft capture's default): reads cut at message ends.
TEST_F(RealServersMemcachedTest, MemcslapCommandsMatchMemcachedStatsIsolated) {
  isolate_ = true;
  MemcslapAndSessions();
}

// `--protocols auto` on a port that is not memcached's: detection picks the binary
// protocol from a connection's first request header and leaves the text protocol alone
// (its command lines look like any line protocol's).
TEST_F(RealServersMemcachedTest, BinaryDetectedTextNot) {
  if (!Installed("/usr/bin/memcached") || !Installed("/usr/bin/memcslap")) {
    GTEST_SKIP() << "memcached / libmemcached-tools not installed (scripts/install-deps)";
  }
  uint16_t port = testing::FreePorts<1>()[0];
  ASSERT_NE(port, 0);
  std::vector<std::string> argv = {WEFT_BINARY,
                                   "capture",
                                   "-o",
                                   Path("capture/memcached"),
                                   "--payload-prefix",
                                   std::to_string(kPrefix),
                                   "--no-isolate",
                                   "--protocols",
                                   "auto",
                                   "--",
                                   "/usr/bin/memcached",
                                   "-p",
                                   std::to_string(port),
                                   "-l",
                                   "127.0.0.1",
                                   "-U",
                                   "0",
                                   "-t",
                                   "2"};
  if (getuid() == 0) {
    argv.push_back("-u");
    argv.push_back("root");
  }
  pid_t server = background_->Start(argv, Path("memcached.out"));
  ASSERT_TRUE(testing::WaitForPort(port)) << testing::ReadFile(Path("memcached.out"));
  for (const auto& [name, options] : std::vector<std::pair<std::string, std::string>>{
           {"binary", "--binary -t set -e 100 -c 1"}, {"text", "-t set -e 100 -c 1"}}) {
    auto run = Weft(
        "capture -o " + Path("capture/" + name) + " --payload-prefix " + std::to_string(kPrefix) +
        " --no-isolate --protocols auto -- /usr/bin/memcslap -s 127.0.0.1:" + std::to_string(port) +
        " " + options);
    ASSERT_EQ(run.rc, 0) << name << ": " << run.output;
  }
  background_->Stop(server, SIGTERM);

  Trace trace = Reconcile();
  const TraceColumns& c = trace.columns();
  int binary = 0, text = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] != MessageKind::kCall || ProgramOf(trace.NodeName(c.sender[i])) != "memcslap")
      continue;
    MessageId m{uint32_t(i)};
    std::string prefix = PayloadPrefix(trace, m), protocol, command;
    bool tagged = testing::AttributeOf(trace, m, "protocol", &protocol);
    if (!prefix.empty() && uint8_t(prefix[0]) == 0x80) {
      ++binary;
      EXPECT_EQ(protocol, "memcached");
      EXPECT_TRUE(testing::AttributeOf(trace, m, "memcached.command", &command));
    } else {
      ++text;
      EXPECT_FALSE(tagged) << protocol;
    }
  }
  // Binary: 100 sets and quit, one CALL each. Text: without a processor a message is a
  // direction-turn run, and memcslap waits for each reply.
  EXPECT_EQ(binary, 101);
  EXPECT_EQ(text, 101);
}

}  // namespace
}  // namespace weft
