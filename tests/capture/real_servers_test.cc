// weft capture + weft reconcile (+ weft's precise inference) on real servers from Debian:
// redis-server driven by redis-benchmark, PostgreSQL driven by pgbench,
// nginx as a reverse proxy in front of the testbed's HTTP tier, and mosquitto's publishes
// (which weft can only say it does not follow). Each test starts the
// servers under `weft capture` on free ports with their own configuration in a scratch
// directory, runs a real client under capture, stops everything, reconciles with
// `--nodes process` and checks, from the payload prefix, that every message went between
// the right two processes, with counts equal to what the client and server say they did.
// docs/reconcile.md ("Real servers") has the figures measured.
//
// Capture's protocol processors (on by default) make one message per request, pipelined
// or not, and the Check*Attributes functions require every message to carry its
// attributes (redis.command, sql, http.url, http.status) and check them against the bytes.
#include "capture/real_servers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <pwd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>

#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::PayloadPrefix;
using testing::ProgramOf;
using testing::Weft;

// Each check runs in plaintext and over TLS (docs/capture.md "TLS"): over TLS the
// messages must be the same, read from the TLS library's plaintext.
class RealServersTest : public testing::RealServersTest {
 protected:
  void RunRedisBenchmark(bool tls);
  void RunPgbench(bool tls);
};

// ---------------------------------------------------------------------------------------
// redis-server and redis-benchmark.

// The command a RESP array names ("*3\r\n$3\r\nSET\r\n..." -> "SET"), "" if not RESP.
std::string RespCommand(const std::string& prefix) {
  static const std::regex kFirst(R"(^\*\d+\r\n\$\d+\r\n([A-Za-z|]+)\r\n)");
  std::smatch m;
  if (!std::regex_search(prefix, m, kFirst)) return "";
  std::string command = m[1];
  for (char& ch : command) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return command;
}

// cmdstat_<name>:calls=N from INFO commandstats.
std::map<std::string, int> CommandStats(const std::string& info) {
  std::map<std::string, int> calls;
  static const std::regex kLine(R"(cmdstat_([a-z|]+):calls=(\d+))");
  for (std::sregex_iterator it(info.begin(), info.end(), kLine), end; it != end; ++it) {
    calls[(*it)[1]] = std::stoi((*it)[2]);
  }
  return calls;
}

void CheckRedisAttributes(const Trace& trace, const std::vector<MessageId>& calls) {
  int carried = 0;
  for (MessageId m : calls) {
    std::string command;
    if (!testing::AttributeOf(trace, m, "redis.command", &command)) continue;
    ++carried;
    EXPECT_EQ(command, RespCommand(PayloadPrefix(trace, m)));
    // redis-benchmark's SET and GET use the one key it substitutes a number into.
    std::string key;
    if ((command == "SET" || command == "GET") &&
        testing::AttributeOf(trace, m, "redis.key", &key)) {
      EXPECT_EQ(key, "key:__rand_int__");
    }
  }
  std::cerr << "redis.command on " << carried << " of " << calls.size() << " CALLs\n";
  EXPECT_EQ(carried, int(calls.size()));
}

TEST_F(RealServersTest, RedisBenchmarkMessagesMatchCommandStats) { RunRedisBenchmark(false); }

// redis-server with TLS only (--port 0), redis-benchmark --tls: the same messages.
TEST_F(RealServersTest, RedisBenchmarkOverTlsMessagesMatchCommandStats) { RunRedisBenchmark(true); }

void RealServersTest::RunRedisBenchmark(bool tls) {
  if (!Installed("/usr/bin/redis-server") || !Installed("/usr/bin/redis-benchmark")) {
    GTEST_SKIP() << "redis-server / redis-tools not installed (scripts/install-deps)";
  }
  if (tls && !MakeCertificate()) GTEST_SKIP() << "openssl req could not make a certificate";
  // Over TLS with event isolation, weft capture's default (it leaves TLS sockets alone).
  isolate_ = tls;
  constexpr int kRequests = 2000, kClients = 4;
  uint16_t port = testing::FreePorts<1>()[0];
  ASSERT_NE(port, 0);
  std::vector<std::string> argv = {"/usr/bin/redis-server",
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   Path("")};
  // Clients name the CA (the certificate itself), the server asks none of them for one.
  std::string client_tls;
  if (tls) {
    argv[2] = "0";
    argv.insert(argv.end(), {"--tls-port", std::to_string(port), "--tls-cert-file",
                             Path("cert.pem"), "--tls-key-file", Path("key.pem"),
                             "--tls-ca-cert-file", Path("cert.pem"), "--tls-auth-clients", "no"});
    client_tls = " --tls --cacert " + Path("cert.pem");
  }
  pid_t server = StartCaptured("redis", argv);
  ASSERT_TRUE(testing::WaitForLog(Path("redis.out"), "Ready to accept connections"))
      << testing::ReadFile(Path("redis.out"));
  auto bench =
      Weft(Capture("bench", "/usr/bin/redis-benchmark -h 127.0.0.1 -p " + std::to_string(port) +
                                client_tls + " -n " + std::to_string(kRequests) + " -c " +
                                std::to_string(kClients) + " -P 1 -t set,get -q"));
  ASSERT_EQ(bench.rc, 0) << bench.output;
  // Asked untraced: the server logs this connection, its peer is not a traced process.
  auto [info_rc, info] = testing::Shell("redis-cli -h 127.0.0.1 -p " + std::to_string(port) +
                                        client_tls + " info commandstats");
  ASSERT_EQ(info_rc, 0) << info;
  int status = background_->Stop(server, SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::ReadFile(Path("redis.out"));
  std::map<std::string, int> stats = CommandStats(info);
  EXPECT_EQ(stats["set"], kRequests);
  EXPECT_EQ(stats["get"], kRequests);

  Trace trace = Reconcile();
  std::cerr << testing::FormatCounts(testing::CountByNodes(trace));
  const TraceColumns& c = trace.columns();
  std::set<std::string> benchmarks, servers;
  std::vector<MessageId> calls;
  std::map<std::string, int> by_command;
  std::map<std::string, int> returns;  // call id -> RETURNs from the server
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string from(trace.NodeName(c.sender[i])), to(trace.NodeName(c.receiver[i]));
    MessageId m{uint32_t(i)};
    if (c.kind[i] == MessageKind::kCall && ProgramOf(from) == "redis-benchmark") {
      benchmarks.insert(from);
      servers.insert(to);
      calls.push_back(m);
      std::string prefix = PayloadPrefix(trace, m);
      EXPECT_EQ(prefix.substr(0, 1), "*") << "not a RESP array: " << prefix.substr(0, 40);
      ++by_command[RespCommand(prefix)];
      EXPECT_NE(c.send_time[i], kNoTime);
      EXPECT_NE(c.recv_time[i], kNoTime);
    } else if (c.kind[i] == MessageKind::kReturn && ProgramOf(to) == "redis-benchmark") {
      EXPECT_EQ(PayloadPrefix(trace, m).substr(0, 1).find_first_of("+$*:-"), 0u);
      ++returns[std::string(trace.strings().Get(c.call_id[i]))];
      servers.insert(from);
    }
  }
  ASSERT_EQ(benchmarks.size(), 1u);
  ASSERT_EQ(servers.size(), 1u);
  // Debian's /usr/bin/redis-server is a link to redis-check-rdb (the binary picks its role
  // from argv[0]): the node goes by the name it was run as.
  EXPECT_EQ(ProgramOf(*servers.begin()), "redis-server");
  // Every SET and GET the server counted is one CALL from the benchmark, and it is
  // answered: one RETURN with the same call id.
  EXPECT_EQ(by_command["SET"], stats["set"]);
  EXPECT_EQ(by_command["GET"], stats["get"]);
  for (MessageId m : calls) {
    EXPECT_EQ(returns[std::string(trace.strings().Get(c.call_id[m.value()]))], 1);
  }
  // redis-benchmark first asks CONFIG GET save and CONFIG GET appendonly, written back to
  // back on one connection: the RESP processor makes them two messages.
  int config_messages = stats["config|get"];
  EXPECT_EQ(by_command["CONFIG"], config_messages);
  EXPECT_EQ(int(calls.size()), stats["set"] + stats["get"] + config_messages);
  EXPECT_EQ(int(returns.size()), int(calls.size()));
  CheckRedisAttributes(trace, calls);
}

// ---------------------------------------------------------------------------------------
// PostgreSQL and pgbench. postgres forks a backend per connection; with --nodes process
// each backend is a node of its own, and all of a connection's messages must be between
// pgbench and that one backend.

// The SQL of a simple Query message ('Q', 4-byte length, text, NUL), "" if not one.
std::string QueryText(const std::string& prefix) {
  if (prefix.size() < 6 || prefix[0] != 'Q') return "";
  return prefix.substr(5, prefix.find('\0', 5) - 5);
}

void CheckSqlAttributes(const Trace& trace, const std::vector<MessageId>& queries,
                        const std::vector<MessageId>& replies) {
  // A reply ends at ReadyForQuery, whose status is idle, in a transaction, or failed.
  for (MessageId m : replies) {
    std::string status;
    if (testing::AttributeOf(trace, m, "pg.status", &status)) {
      EXPECT_TRUE(status == "I" || status == "T" || status == "E") << status;
    }
  }
  int carried = 0;
  for (MessageId m : queries) {
    std::string sql;
    if (!testing::AttributeOf(trace, m, "sql", &sql)) continue;
    ++carried;
    std::string text = QueryText(PayloadPrefix(trace, m));
    EXPECT_EQ(sql.substr(0, 40), text.substr(0, 40));
  }
  std::cerr << "sql on " << carried << " of " << queries.size() << " queries\n";
  EXPECT_EQ(carried, int(queries.size()));
}

// Every query is a request of its own (pgbench waits for each answer before the next
// statement): the precise algorithms must give each one a tree of exactly its Query and
// the reply with its call id, and the path's root element must carry the query's SQL.
void CheckQueryTrees(const Trace& trace, const std::vector<MessageId>& queries) {
  const TraceColumns& c = trace.columns();
  std::set<uint32_t> query_set;
  for (MessageId m : queries) query_set.insert(m.value());
  for (bool fragment : {true, false}) {
    auto infer = [&]() -> Result<PathSet> {
      if (fragment) {
        WEFT_ASSIGN_OR_RETURN(FragmentInference inferred, InferFragment(trace));
        return std::move(inferred.paths);
      }
      WEFT_ASSIGN_OR_RETURN(ThreadInference inferred, InferThread(trace));
      return std::move(inferred.paths);
    };
    Result<PathSet> paths = infer();
    ASSERT_TRUE(paths.ok()) << paths.status().message();
    int exact = 0, with_sql = 0;
    for (size_t i = 0; i < paths->instance_count(); ++i) {
      std::span<const MessageId> messages = paths->InstanceMessages(i);
      if (!query_set.count(messages[0].value())) continue;
      uint32_t call = messages[0].value();
      exact += messages.size() == 2 && c.kind[messages[1].value()] == MessageKind::kReturn &&
               c.call_id[messages[1].value()] == c.call_id[call];
      const PathPattern& pattern = paths->patterns[paths->pattern[i]];
      with_sql +=
          std::any_of(pattern.elements[0].attributes.begin(), pattern.elements[0].attributes.end(),
                      [](const AttributeCount& a) { return a.key == "sql"; });
    }
    std::cerr << (fragment ? "fragment" : "thread") << ": " << exact << " of " << queries.size()
              << " query trees exact\n";
    EXPECT_EQ(exact, int(queries.size())) << (fragment ? "fragment" : "thread");
    EXPECT_EQ(with_sql, int(queries.size())) << "the root of every query's path carries its sql";
  }
}

TEST_F(RealServersTest, PgbenchQueriesReachTheirBackend) { RunPgbench(false); }

// ssl=on and sslmode=require: the SSLRequest and its 'S' answer are plaintext on the wire,
// everything after is read from the TLS library's calls, at offsets that go on after them.
TEST_F(RealServersTest, PgbenchOverTlsQueriesReachTheirBackend) { RunPgbench(true); }

void RealServersTest::RunPgbench(bool tls) {
  constexpr int kClients = 2, kTransactions = 100;
  isolate_ = tls;  // as RunRedisBenchmark
  Postgres pg;
  StartPostgres(tls, &pg);
  if (IsSkipped() || HasFatalFailure()) return;
  const std::string bin = kPgBin;
  const std::string connect = " -h 127.0.0.1 -p " + std::to_string(pg.port) + " -U postgres ";
  auto bench = Weft(
      Capture("pgbench", bin + "/pgbench" + connect + "-n -c " + std::to_string(kClients) + " -t " +
                             std::to_string(kTransactions) + " --protocol=simple postgres"));
  ASSERT_EQ(bench.rc, 0) << bench.output;
  std::cerr << bench.output;
  ASSERT_NE(bench.output.find("number of transactions actually processed: " +
                              std::to_string(kClients * kTransactions) + "/"),
            std::string::npos);
  int status = background_->Stop(pg.pid, SIGINT);  // fast shutdown
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::ReadFile(Path("postgres.out"));

  Trace trace = Reconcile();
  std::cerr << testing::FormatCounts(testing::CountByNodes(trace));
  const TraceColumns& c = trace.columns();
  // Per connection (call id "c<connection>.<n>"): the postgres processes it talked to,
  // its CALLs by first byte, and the call ids answered.
  struct Connection {
    std::set<std::string> servers;
    std::map<char, int> calls;  // 'Q' query, 'X' terminate, '\0' startup packet, 's' SSLRequest
    std::set<std::string> answered;
    std::vector<std::string> call_ids;
  };
  std::map<std::string, Connection> connections;
  std::set<std::string> clients;
  std::vector<MessageId> queries, replies;
  std::map<std::string, int> statements;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string from(trace.NodeName(c.sender[i])), to(trace.NodeName(c.receiver[i]));
    bool call = c.kind[i] == MessageKind::kCall;
    if (ProgramOf(call ? from : to) != "pgbench") continue;
    clients.insert(call ? from : to);
    std::string server_node = call ? to : from;
    EXPECT_EQ(ProgramOf(server_node), "postgres");
    std::string id(trace.strings().Get(c.call_id[i]));
    Connection& conn = connections[id.substr(0, id.find('.'))];
    conn.servers.insert(server_node);
    MessageId m{uint32_t(i)};
    std::string prefix = PayloadPrefix(trace, m);
    EXPECT_NE(c.send_time[i], kNoTime);
    EXPECT_NE(c.recv_time[i], kNoTime);
    if (!call) {
      conn.answered.insert(id);
      replies.push_back(m);
      continue;
    }
    conn.call_ids.push_back(id);
    ASSERT_FALSE(prefix.empty());
    if (prefix[0] == 'Q') {
      queries.push_back(m);
      std::string sql = QueryText(prefix);
      for (const std::string& statement : testing::kTpcbStatements)
        statements[statement] += sql.starts_with(statement);
    } else if (prefix[0] != 'X' && prefix == std::string("\0\0\0\x08\x04\xd2\x16\x2f", 8)) {
      ++conn.calls['s'];  // SSLRequest: length 8, code 80877103
      continue;
    } else if (prefix[0] != 'X') {
      // StartupMessage: length, then protocol 3.0 (0x00030000), no type byte.
      ASSERT_GE(prefix.size(), 8u);
      EXPECT_EQ(prefix.substr(4, 4), std::string("\0\3\0\0", 4))
          << "neither Q, X nor a startup packet";
    }
    ++conn.calls[prefix[0] == 'Q' || prefix[0] == 'X' ? prefix[0] : '\0'];
  }
  ASSERT_EQ(clients.size(), 1u);
  // pgbench opens one connection to look at the tables (2 queries: the scale from
  // pgbench_branches, then its partitioning) and one per client for the transactions.
  ASSERT_EQ(connections.size(), size_t(kClients + 1));
  std::set<std::string> backends;
  int benchmark_connections = 0;
  for (const auto& [id, conn] : connections) {
    // One backend per connection, a different one each time.
    EXPECT_EQ(conn.servers.size(), 1u) << id << " went to " << conn.servers.size() << " processes";
    backends.insert(*conn.servers.begin());
    EXPECT_EQ(conn.calls.at('\0'), 1) << id;  // the startup packet
    EXPECT_EQ(conn.calls.count('s') ? conn.calls.at('s') : 0, tls ? 1 : 0) << id;
    EXPECT_EQ(conn.calls.at('X'), 1) << id;  // Terminate: the only CALL with no answer
    EXPECT_EQ(conn.answered.size(), conn.call_ids.size() - 1) << id;
    for (const std::string& call : conn.call_ids) {
      EXPECT_TRUE(conn.answered.count(call) || call == conn.call_ids.back())
          << call << " has no RETURN";
    }
    int q = conn.calls.count('Q') ? conn.calls.at('Q') : 0;
    if (q == 7 * kTransactions) {
      ++benchmark_connections;
    } else {
      EXPECT_EQ(q, 2) << id;
    }
  }
  EXPECT_EQ(backends.size(), connections.size());
  EXPECT_EQ(benchmark_connections, kClients);
  for (const std::string& statement : testing::kTpcbStatements) {
    EXPECT_EQ(statements[statement], kClients * kTransactions) << statement;
  }
  EXPECT_EQ(int(queries.size()), 7 * kClients * kTransactions + 2);
  CheckSqlAttributes(trace, queries, replies);
  CheckQueryTrees(trace, queries);
}

// ---------------------------------------------------------------------------------------
// mosquitto (an MQTT broker) with two subscribers and ten publishers. weft has no MQTT
// processor: each subscriber's connection is cut where the direction turns, so the
// broker's forwards to it merge into one RETURN, and no publish reaches a subscriber in
// any tree (docs/precise.md, "Not yet"). What this checks is that weft says so: the
// publishes are calls the broker read and never answered, and thread and auto count them.

TEST_F(RealServersTest, MosquittoPublishesAreSaidToBeUnanswered) {
  if (!Installed("/usr/sbin/mosquitto") || !Installed("/usr/bin/mosquitto_pub") ||
      !Installed("/usr/bin/mosquitto_sub"))
    GTEST_SKIP() << "mosquitto / mosquitto-clients not installed (scripts/install-deps)";
  constexpr int kPublishes = 10;
  const std::string port = std::to_string(testing::FreePorts<1>()[0]);
  std::ofstream(Path("mosquitto.conf"))
      << "listener " << port << " 127.0.0.1\nallow_anonymous true\npersistence false\n"
      << "log_dest stderr\nlog_type all\n";
  pid_t broker = StartCaptured("broker", {"/usr/sbin/mosquitto", "-c", Path("mosquitto.conf")});
  ASSERT_TRUE(testing::WaitForLog(Path("broker.out"), "running"))
      << testing::ReadFile(Path("broker.out"));
  // One subscriber takes every publish, the other the odd ones; each leaves after its last.
  auto subscribe = [&](const std::string& name, const std::string& topic, int messages) {
    return StartCaptured(name, {"/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", port, "-t",
                                topic, "-C", std::to_string(messages)});
  };
  pid_t all = subscribe("all", "t/#", kPublishes);
  pid_t odd = subscribe("odd", "t/odd", kPublishes / 2);
  auto subscriptions = [&] {
    std::string log = testing::ReadFile(Path("broker.out"));
    int n = 0;
    for (size_t at = log.find("Received SUBSCRIBE"); at != std::string::npos;
         at = log.find("Received SUBSCRIBE", at + 1))
      ++n;
    return n;
  };
  for (int i = 0; i < 400 && subscriptions() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(subscriptions(), 2) << testing::ReadFile(Path("broker.out"));
  for (int i = 1; i <= kPublishes; ++i) {
    auto pub =
        Weft(Capture("pub", "/usr/bin/mosquitto_pub -h 127.0.0.1 -p " + port + " -t t/" +
                                (i % 2 == 1 ? "odd" : "even") + " -m m" + std::to_string(i)));
    ASSERT_EQ(pub.rc, 0) << pub.output;
  }
  EXPECT_TRUE(testing::WaitForLog(Path("all.out"), "m" + std::to_string(kPublishes)))
      << testing::ReadFile(Path("all.out"));
  EXPECT_TRUE(testing::WaitForLog(Path("odd.out"), "m" + std::to_string(kPublishes - 1)))
      << testing::ReadFile(Path("odd.out"));
  for (pid_t sub : {all, odd}) background_->Stop(sub, SIGTERM);
  background_->Stop(broker, SIGTERM);

  Trace trace = Reconcile();
  Result<ThreadInference> thread = InferThread(trace);
  ASSERT_TRUE(thread.ok()) << thread.status().message();
  // The publishes, and the subscribers' DISCONNECTs (they leave after their last message).
  EXPECT_GE(thread->counters.calls_never_answered, kPublishes);
  EXPECT_LE(thread->counters.calls_never_answered, kPublishes + 2);
  auto infer = Weft("infer " + Path("run.weft") + " --algo auto -o " + Path("paths.json"));
  ASSERT_EQ(infer.rc, 0) << infer.output;
  EXPECT_NE(infer.output.find(fmt::format("; but {} calls read by a traced thread were never "
                                          "answered (one-way messages such as a broker's",
                                          thread->counters.calls_never_answered)),
            std::string::npos)
      << infer.output;
}

// ---------------------------------------------------------------------------------------
// nginx terminating TLS (OpenSSL, SSL_do_handshake / SSL_read / SSL_write in its event
// loop), a GnuTLS client in front (tls_probe gnutls-to): every request is one CALL with the
// http.url read from plaintext at both ends, answered by one RETURN with http.status.

#ifdef TLS_PROBE
constexpr const char* kNginxTlsConf = R"conf(worker_processes 1;
pid @P@/nginx.pid;
error_log @P@/error.log notice;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path @P@/body;
  proxy_temp_path @P@/proxy;
  fastcgi_temp_path @P@/fastcgi;
  uwsgi_temp_path @P@/uwsgi;
  scgi_temp_path @P@/scgi;
  server {
    listen 127.0.0.1:@PORT@ ssl;
    ssl_certificate @P@/cert.pem;
    ssl_certificate_key @P@/key.pem;
    location / { return 200 "tls ok\n"; }
  }
}
)conf";

TEST_F(RealServersTest, NginxOverTlsWithGnutlsClientCarriesUrls) {
  if (!Installed("/usr/sbin/nginx")) GTEST_SKIP() << "nginx not installed (scripts/install-deps)";
  constexpr int kRequests = 20;
  std::string prefix = Path("nginx");
  fs::create_directories(prefix);
  std::filesystem::permissions(prefix, std::filesystem::perms::all);
  ASSERT_TRUE(MakeCertificate());
  fs::copy_file(Path("cert.pem"), prefix + "/cert.pem");
  fs::copy_file(Path("key.pem"), prefix + "/key.pem");
  uint16_t port = testing::FreePorts<1>()[0];
  ASSERT_NE(port, 0);
  std::string conf = kNginxTlsConf;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"@P@", prefix}, {"@PORT@", std::to_string(port)}}) {
    for (size_t at; (at = conf.find(from)) != std::string::npos;) conf.replace(at, from.size(), to);
  }
  {
    std::ofstream out(prefix + "/nginx.conf");
    out << conf;
  }
  pid_t nginx =
      StartCaptured("nginx", {"/usr/sbin/nginx", "-c", prefix + "/nginx.conf", "-p", prefix, "-e",
                              prefix + "/error.log", "-g", "daemon off; master_process on;"});
  ASSERT_TRUE(testing::WaitForPort(port)) << testing::ReadFile(prefix + "/error.log");
  auto client = Weft(Capture("client", std::string(TLS_PROBE) + " gnutls-to " +
                                           std::to_string(port) + " " + std::to_string(kRequests)));
  ASSERT_EQ(client.rc, 0) << client.output;
  int status = background_->Stop(nginx, SIGQUIT);  // graceful: the worker finishes first
  EXPECT_TRUE(WIFEXITED(status)) << testing::ReadFile(prefix + "/error.log");

  Trace trace = Reconcile();
  std::cerr << testing::FormatCounts(testing::CountByNodes(trace));
  const TraceColumns& c = trace.columns();
  std::vector<std::string> urls;
  std::map<std::string, int> returns;  // call id -> RETURNs with status 200
  int calls = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string from(trace.NodeName(c.sender[i])), to(trace.NodeName(c.receiver[i]));
    MessageId m{uint32_t(i)};
    if (c.kind[i] == MessageKind::kCall && ProgramOf(from) == "tls_probe") {
      ++calls;
      EXPECT_EQ(ProgramOf(to), "nginx");
      std::string url;
      EXPECT_TRUE(testing::AttributeOf(trace, m, "http.url", &url));
      urls.push_back(url);
      EXPECT_TRUE(PayloadPrefix(trace, m).starts_with("GET /tls/")) << PayloadPrefix(trace, m);
    } else if (c.kind[i] == MessageKind::kReturn && ProgramOf(to) == "tls_probe") {
      std::string code;
      EXPECT_TRUE(testing::AttributeOf(trace, m, "http.status", &code));
      returns[std::string(trace.strings().Get(c.call_id[i]))] += code == "200";
    }
  }
  EXPECT_EQ(calls, kRequests);
  std::vector<std::string> expected;
  for (int i = 0; i < kRequests; ++i) expected.push_back(fmt::format("/tls/{:03}", i));
  std::sort(urls.begin(), urls.end());
  EXPECT_EQ(urls, expected);
  EXPECT_EQ(int(returns.size()), kRequests);
  for (const auto& [id, n] : returns) EXPECT_EQ(n, 1) << id;
}
#endif  // TLS_PROBE

}  // namespace
}  // namespace weft
