// weft capture + weft reconcile on MariaDB (Debian's mariadb-server 10.11): mariadbd in a
// scratch data directory on a free port, driven by the `mariadb` client with a script of
// queries (PREPARE/EXECUTE in SQL, a syntax error) and by mysql_probe (libmariadb's binary
// protocol: prepared statements with bound parameters, long data, reset and close). Every
// command a client sent must be one CALL with its attributes, answered by one RETURN with
// the same call id, and the counts must equal what the clients say they sent and what the
// server counted (SHOW GLOBAL STATUS, Com_*); the precise algorithms must give every
// answered command a tree of its CALL and RETURN alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture/real_servers.h"
#include "infer/fragment/fragment.h"
#include "infer/thread/thread.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::PayloadPrefix;
using testing::ProgramOf;
using testing::RealServersTest;
using testing::Weft;

constexpr const char* kMariadbd = "/usr/sbin/mariadbd";
constexpr const char* kInstallDb = "/usr/bin/mariadb-install-db";
constexpr const char* kClient = "/usr/bin/mariadb";

// The script the mariadb client runs, one statement a line.
const std::vector<std::string> kScript = {
    "create database shop",
    "use shop",
    "create table items (id int primary key, name varchar(40), price int)",
    "insert into items values (1, 'apple', 3), (2, 'pear', 4), (3, 'plum', 5)",
    "select * from items order by id",
    "select count(*) from items where price > 3",
    "update items set price = price + 1 where id = 2",
    "prepare byid from 'select name from items where id = ?'",
    "set @i = 3",
    "execute byid using @i",
    "deallocate prepare byid",
    "delete from items where id = 1",
    "select * from items where id = 1",
    "selec syntax_error",
    "select sum(price) from items",
};

// Name -> value of SHOW GLOBAL STATUS's "name<TAB>value" lines.
std::map<std::string, int> StatusCounters(const std::string& text) {
  std::map<std::string, int> counters;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    try {
      counters[line.substr(0, tab)] = std::stoi(line.substr(tab + 1));
    } catch (...) {
    }
  }
  return counters;
}

// "Name count" lines of mysql_probe's output.
std::map<std::string, int> ProbeCounts(const std::string& text) {
  std::map<std::string, int> counts;
  std::istringstream in(text);
  std::string name;
  int n;
  while (in >> name >> n) counts[name] = n;
  return counts;
}

std::string Attr(const Trace& trace, MessageId m, std::string_view key) {
  std::string value;
  testing::AttributeOf(trace, m, key, &value);
  return value;
}

// One run: the server and both clients captured with or without event isolation.
class MariadbTest : public RealServersTest {
 protected:
  void Run(bool isolate);
};

// Each command waits for its reply, and mariadbd asks nobody else: the precise algorithms
// must give every answered command a tree of exactly its CALL and the RETURN with its call
// id, the greeting (a RETURN that answers no CALL) notwithstanding.
void CheckCommandTrees(const Trace& trace, const std::map<std::string, MessageId>& calls,
                       int answered) {
  const TraceColumns& c = trace.columns();
  std::set<uint32_t> call_set;
  for (const auto& [id, m] : calls) call_set.insert(m.value());
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
    int exact = 0;
    for (size_t i = 0; i < paths->instance_count(); ++i) {
      std::span<const MessageId> messages = paths->InstanceMessages(i);
      uint32_t call = messages[0].value();
      if (!call_set.count(call)) continue;
      exact += messages.size() == 2 && c.kind[messages[1].value()] == MessageKind::kReturn &&
               c.call_id[messages[1].value()] == c.call_id[call];
    }
    std::cerr << (fragment ? "fragment" : "thread") << ": " << exact << " of " << answered
              << " command trees exact\n";
    EXPECT_EQ(exact, answered) << (fragment ? "fragment" : "thread");
  }
}

TEST_F(MariadbTest, QueriesAndPreparedStatementsMatchServerCounters) { Run(false); }

// The same with event isolation (weft capture's default): reads are cut at the ends the
// processor finds, which must change nothing.
TEST_F(MariadbTest, QueriesAndPreparedStatementsMatchServerCountersIsolated) { Run(true); }

void MariadbTest::Run(bool isolate) {
  std::string isolation = isolate ? "--isolate" : "--no-isolate";
  if (!Installed(kMariadbd) || !Installed(kInstallDb) || !Installed(kClient)) {
    GTEST_SKIP() << "mariadb-server / mariadb-client not installed (scripts/install-deps)";
  }
  std::string data = Path("data");
  // A temporary directory of its own: two bootstraps at once (ctest -j2 runs both cases)
  // collide on their temporary tables in a shared /tmp.
  std::string tmp = Path("tmp");
  std::filesystem::create_directories(tmp);
  auto [init_rc, init_out] = testing::Shell(
      std::string(kInstallDb) + " --no-defaults --datadir=" + data + " --tmpdir=" + tmp +
      " --user=root --auth-root-authentication-method=normal --skip-test-db");
  ASSERT_EQ(init_rc, 0) << init_out;
  uint16_t port = testing::FreePorts<1>()[0];
  ASSERT_NE(port, 0);
  std::string protocols = "mysql=" + std::to_string(port);
  std::vector<std::string> server_argv = {WEFT_BINARY,
                                          "capture",
                                          "-o",
                                          Path("capture/mariadbd"),
                                          "--payload-prefix",
                                          std::to_string(kPrefix),
                                          isolation,
                                          "--protocols",
                                          protocols,
                                          "--",
                                          kMariadbd,
                                          "--no-defaults",
                                          "--datadir=" + data,
                                          "--tmpdir=" + tmp,
                                          "--socket=" + Path("mysqld.sock"),
                                          "--port=" + std::to_string(port),
                                          "--bind-address=127.0.0.1",
                                          "--user=root",
                                          "--pid-file=" + Path("mysqld.pid"),
                                          "--skip-name-resolve",
                                          "--innodb-buffer-pool-size=32M"};
  pid_t server = background_->Start(server_argv, Path("mariadbd.out"));
  ASSERT_TRUE(testing::WaitForLog(Path("mariadbd.out"), "ready for connections"))
      << testing::ReadFile(Path("mariadbd.out"));

  std::string script;
  for (const std::string& s : kScript) script += s + ";\n";
  {
    std::ofstream out(Path("script.sql"));
    out << script;
  }
  std::string connect = " -h 127.0.0.1 -P " + std::to_string(port) + " -u root ";
  auto capture = [&](const std::string& sub, const std::string& command) {
    return "capture -o " + Path("capture/" + sub) + " --payload-prefix " + std::to_string(kPrefix) +
           " " + isolation + " --protocols " + protocols + " -- " + command;
  };
  // --force: go on after the syntax error.
  auto client = Weft(capture("client", std::string(kClient) + " --no-defaults" + connect +
                                           "--force < " + Path("script.sql")));
  EXPECT_NE(client.output.find("ERROR 1064"), std::string::npos) << client.output;
  std::map<std::string, int> probe_counts;
#ifdef MYSQL_PROBE
  constexpr int kRows = 12;
  auto probe =
      Weft(capture("probe", std::string(MYSQL_PROBE) + " 127.0.0.1 " + std::to_string(port) +
                                " root probe " + std::to_string(kRows)));
  ASSERT_EQ(probe.rc, 0) << probe.output;
  probe_counts = ProbeCounts(probe.output);
  EXPECT_EQ(probe_counts["Execute"], kRows + 2) << probe.output;
#else
  std::cerr << "mysql_probe not built (libmariadb-dev missing): the binary protocol is not run\n";
#endif
  // Asked untraced: the server logs this connection, its peer is not a traced process.
  auto [status_rc, status_text] = testing::Shell(std::string(kClient) + " --no-defaults" + connect +
                                                 "-N -e \"show global status\"");
  ASSERT_EQ(status_rc, 0) << status_text;
  std::map<std::string, int> com = StatusCounters(status_text);
  int status = background_->Stop(server, SIGTERM, std::chrono::seconds(60));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::ReadFile(Path("mariadbd.out"));

  Trace trace = Reconcile();
  std::cerr << testing::FormatCounts(testing::CountByNodes(trace));
  const TraceColumns& c = trace.columns();
  // Per client program: its CALLs by command, the Query CALLs' sql in order.
  std::map<std::string, std::map<std::string, int>> commands;
  std::vector<std::string> client_sql;
  std::map<std::string, MessageId> call_of;   // call id -> CALL
  std::map<std::string, int> returns;         // call id -> RETURNs
  std::map<std::string, std::string> answer;  // call id -> the RETURN's mysql.status
  std::map<std::string, std::string> rows;    // call id -> the RETURN's mysql.rows
  int greetings = 0, closes = 0, long_data = 0;
  std::set<std::string> servers;
  for (size_t i = 0; i < trace.size(); ++i) {
    MessageId m{uint32_t(i)};
    std::string from(trace.NodeName(c.sender[i])), to(trace.NodeName(c.receiver[i]));
    bool call = c.kind[i] == MessageKind::kCall;
    std::string program = ProgramOf(call ? from : to);
    if (program != "mariadb" && program != "mysql_probe") continue;
    servers.insert(call ? to : from);
    EXPECT_EQ(Attr(trace, m, "protocol"), "mysql");
    EXPECT_NE(c.send_time[i], kNoTime);
    EXPECT_NE(c.recv_time[i], kNoTime);
    std::string id(trace.strings().Get(c.call_id[i]));
    if (!call) {
      if (!Attr(trace, m, "mysql.server").empty()) {
        ++greetings;
        EXPECT_EQ(id.substr(id.find('.')), ".0") << "a greeting answers no request";
        continue;
      }
      ++returns[id];
      answer[id] = Attr(trace, m, "mysql.status");
      rows[id] = Attr(trace, m, "mysql.rows");
      continue;
    }
    std::string command = Attr(trace, m, "mysql.command");
    ++commands[program][command];
    call_of[id] = m;
    // The payload prefix: the message's first packet, header and payload.
    std::string prefix = PayloadPrefix(trace, m);
    ASSERT_GE(prefix.size(), 5u) << command;
    if (command == "Query") {
      std::string sql = Attr(trace, m, "sql");
      size_t length = prefix[0] & 0xff;
      EXPECT_EQ(sql, prefix.substr(5, length - 1).substr(0, 120));
      if (program == "mariadb") client_sql.push_back(sql);
    }
    // Close and long data get no reply: they begin the next command's message.
    closes += prefix[4] == 0x19;
    long_data += prefix[4] == 0x18;
  }
  ASSERT_EQ(servers.size(), 1u);
  EXPECT_EQ(ProgramOf(*servers.begin()), "mariadbd");

  // The mariadb client: a Query per script statement but `use`, which it sends as
  // SELECT DATABASE() and COM_INIT_DB; then COM_QUIT.
  std::vector<std::string> expected_sql;
  for (const std::string& s : kScript) {
    expected_sql.push_back(s == "use shop" ? "SELECT DATABASE()" : s);
  }
  EXPECT_EQ(client_sql, expected_sql);
  EXPECT_EQ(commands["mariadb"]["InitDB"], 1);
  EXPECT_EQ(commands["mariadb"]["Handshake"], 1);
  EXPECT_EQ(commands["mariadb"]["Quit"], 1);

  // Against the server's counters: SQL PREPARE/EXECUTE/DEALLOCATE count as statement
  // commands too.
  auto all = [&](const std::string& command) {
    return commands["mariadb"][command] + commands["mysql_probe"][command];
  };
  EXPECT_EQ(com["Com_stmt_prepare"], all("Prepare") + com["Com_prepare_sql"]);
  EXPECT_EQ(com["Com_stmt_execute"], all("Execute") + com["Com_execute_sql"]);
  EXPECT_EQ(com["Com_stmt_close"], closes + com["Com_dealloc_sql"]);
  EXPECT_EQ(com["Com_stmt_reset"], all("ResetStmt"));
  EXPECT_EQ(com["Com_stmt_send_long_data"], long_data);
  EXPECT_EQ(com["Com_change_db"], all("InitDB"));
  EXPECT_EQ(com["Com_admin_commands"], all("Ping"));
  EXPECT_EQ(com["Com_prepare_sql"], 1);
  EXPECT_EQ(com["Com_execute_sql"], 1);
  // And against what the probe says it sent.
  for (const char* name : {"Query", "InitDB", "Prepare", "Execute", "ResetStmt", "Ping", "Quit"}) {
    EXPECT_EQ(commands["mysql_probe"][name], probe_counts[name]) << name;
  }
  EXPECT_EQ(closes, probe_counts["CloseStmt"]);
  EXPECT_EQ(long_data, probe_counts["LongData"]);
  EXPECT_EQ(greetings, probe_counts.empty() ? 1 : 2);

  // Every CALL but COM_QUIT has exactly one RETURN with its call id; only the syntax
  // error is an error.
  int answered = 0, errors = 0;
  for (const auto& [id, m] : call_of) {
    std::string command = Attr(trace, m, "mysql.command");
    if (command == "Quit") {
      EXPECT_EQ(returns[id], 0);
      continue;
    }
    EXPECT_EQ(returns[id], 1) << command << " " << Attr(trace, m, "sql");
    answered += returns[id] == 1;
    if (answer[id] != "ok") {
      EXPECT_EQ(Attr(trace, m, "sql"), "selec syntax_error");
      EXPECT_EQ(answer[id], "error 1064");
      ++errors;
    }
    std::string sql = Attr(trace, m, "sql");
    if (sql == "select * from items order by id") {
      EXPECT_EQ(rows[id], "3");
    } else if (sql == "select * from items where id = 1") {
      EXPECT_EQ(rows[id], "0");
    }
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(answered, int(call_of.size()) - all("Quit"));
  CheckCommandTrees(trace, call_of, answered);
  std::cerr << "mysql: " << call_of.size() << " CALLs, " << answered << " answered, "
            << commands["mariadb"]["Query"] + commands["mysql_probe"]["Query"] << " queries, "
            << all("Execute") << " executes, " << greetings
            << " greetings; server: Com_stmt_prepare " << com["Com_stmt_prepare"]
            << ", Com_stmt_execute " << com["Com_stmt_execute"] << ", Com_stmt_close "
            << com["Com_stmt_close"] << ", Com_stmt_reset " << com["Com_stmt_reset"]
            << ", Com_stmt_send_long_data " << com["Com_stmt_send_long_data"] << ", Com_change_db "
            << com["Com_change_db"] << "\n";
}

}  // namespace
}  // namespace weft
