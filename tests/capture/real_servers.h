// The fixture and helpers of tests/capture/real_servers_test.cc and the files beside it:
// starting real servers (redis-server, postgres, nginx, pgbouncer, the testbed's own) under
// `weft capture` as process groups of their own, stopping them for sure, and reading the
// reconciled trace by process and payload prefix.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "infer/choose.h"
#include "reconcile/reconcile.h"
#include "trace/io.h"
#include "trace/trace.h"
#include "weft_cli.h"

namespace weft::testing {

// N distinct free TCP ports on 127.0.0.1 for servers that take their port on the command
// line (redis, postgres, nginx, a testbed server with fixed ports). Each is bound to port 0
// and read back, and all N sockets stay open until every port is chosen: a socket closed
// first would free its port for the next bind(0), so two ports of one test could collide.
// A server started right after takes its port (loopback ports are not handed out again
// that soon). All zeros when a socket cannot be had.
template <size_t N>
std::array<uint16_t, N> FreePorts() {
  std::array<int, N> fds;
  fds.fill(-1);
  std::array<uint16_t, N> ports{};
  bool ok = true;
  for (size_t i = 0; i < N && ok; ++i) {
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok = fds[i] >= 0 && bind(fds[i], reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
         getsockname(fds[i], reinterpret_cast<sockaddr*>(&a), &len) == 0;
    ports[i] = ok ? ntohs(a.sin_port) : 0;
  }
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  if (!ok) ports.fill(0);
  return ports;
}

// Waits until something accepts on 127.0.0.1:port. The probe connects and closes without
// writing, so the traced server logs an accept and a close but no message.
inline bool WaitForPort(uint16_t port, std::chrono::seconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The same for a Unix stream socket at `path`.
inline bool WaitForUnixSocket(const std::string& path,
                              std::chrono::seconds timeout = std::chrono::seconds(20)) {
  sockaddr_un a{};
  if (path.size() >= sizeof a.sun_path) return false;
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, path.c_str(), path.size() + 1);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits until `path` (a server's log) contains `text`.
inline bool WaitForLog(const std::string& path, const std::string& text,
                       std::chrono::seconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadFile(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The processes a test started in the background. Each is the leader of its own process
// group, so that whatever it forked (a traced server, nginx's worker) can be killed with
// it. The destructor stops whatever a failed test left running, with its stop signal
// first (postgres's children leave the group with setsid; a fast shutdown ends them),
// then kills each group, so a failed test leaves nothing behind.
class Background {
 public:
  Background() = default;
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() {
    std::vector<std::pair<pid_t, int>> left = running_;
    for (const auto& [pid, signal] : left) Stop(pid, signal, std::chrono::seconds(10), false);
  }

  // Runs argv[0] (a path) with stdout and stderr to `log`, as `uid`/`gid` if given.
  // `stop_signal` is what the destructor stops it with if the test did not.
  pid_t Start(const std::vector<std::string>& argv, const std::string& log,
              int stop_signal = SIGTERM, uid_t uid = 0, gid_t gid = 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      if (uid != 0 && (setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid > 0) {
      setpgid(pid, pid);  // also here: the child may not have run yet when we signal it
      running_.push_back({pid, stop_signal});
    }
    return pid;
  }

  // Sends `signal` to `pid` alone (weft capture passes it on to the program it runs) and
  // waits for it; after `timeout` kills its whole group. Returns the wait status.
  // `must_stop`: failing to stop in time is a test failure (not so for the destructor's
  // clean-up after a failure). Whatever is left of the group is killed either way.
  int Stop(pid_t pid, int signal, std::chrono::seconds timeout = std::chrono::seconds(15),
           bool must_stop = true) {
    kill(pid, signal);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        if (must_stop) ADD_FAILURE() << "pid " << pid << " did not stop; killing its process group";
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(-pid, SIGKILL);  // anything of the group that outlived its leader
    std::erase_if(running_, [pid](const std::pair<pid_t, int>& p) { return p.first == pid; });
    return status;
  }

 private:
  std::vector<std::pair<pid_t, int>> running_;  // pid, stop signal
};

// "vm:redis-benchmark[123]" (--nodes process) -> "redis-benchmark".
inline std::string ProgramOf(std::string_view node) {
  size_t colon = node.find(':'), bracket = node.rfind('[');
  if (colon == std::string_view::npos || bracket == std::string_view::npos || bracket < colon)
    return "";
  return std::string(node.substr(colon + 1, bracket - colon - 1));
}

// A message's payload.prefix attribute as bytes ("" without one).
inline std::string PayloadPrefix(const Trace& trace, MessageId m) {
  for (const Attribute& a : trace.AttributesOf(m)) {
    if (trace.strings().Get(a.key) != reconcile::kPayloadAttribute) continue;
    std::string_view hex = trace.strings().Get(a.value);
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      bytes.push_back(char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    }
    return bytes;
  }
  return "";
}

// The value of attribute `key` on message m, or nullptr-like "" with found = false.
inline bool AttributeOf(const Trace& trace, MessageId m, std::string_view key, std::string* value) {
  for (const Attribute& a : trace.AttributesOf(m)) {
    if (trace.strings().Get(a.key) == key) {
      *value = std::string(trace.strings().Get(a.value));
      return true;
    }
  }
  return false;
}

// Runs --algo auto on `trace`, prints what it said, and checks that it chose fragment and
// that `expected` of fragment's trees are `exact` (given a tree's messages: whether they
// are one request's whole tree, as the test knows it).
inline void ExpectFragmentChosenAndExact(
    const Trace& trace, int expected,
    const std::function<bool(std::span<const MessageId>)>& exact) {
  Result<AutoInference> decided = ChooseAlgorithm(trace);
  ASSERT_TRUE(decided.ok()) << decided.status().message();
  const std::string says = decided->choice.Describe();
  std::cerr << "auto: " << says << "\n";
  ASSERT_EQ(decided->choice.algorithm, AutoAlgorithm::kFragment) << says;
  const PathSet& paths = decided->fragment->paths;
  int n = 0;
  for (size_t i = 0; i < paths.instance_count(); ++i) n += exact(paths.InstanceMessages(i));
  EXPECT_EQ(n, expected) << says;
}

// Messages counted by (kind, sender node, receiver node).
using PairCounts = std::map<std::tuple<MessageKind, std::string, std::string>, int>;
inline PairCounts CountByNodes(const Trace& trace) {
  PairCounts counts;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    ++counts[{c.kind[i], std::string(trace.NodeName(c.sender[i])),
              std::string(trace.NodeName(c.receiver[i]))}];
  }
  return counts;
}

inline std::string FormatCounts(const PairCounts& counts) {
  std::string s;
  for (const auto& [key, n] : counts) {
    const auto& [kind, from, to] = key;
    s += "  " + std::string(MessageKindOp(kind)) + " " + from + " -> " + to + ": " +
         std::to_string(n) + "\n";
  }
  return s;
}

// The TPC-B-like script pgbench runs per transaction (pgbench's "tpcb-like" builtin), one
// simple-protocol Query message per statement, each answered before the next is sent: how
// each statement's SQL begins.
inline const std::vector<std::string> kTpcbStatements = {"BEGIN;",
                                                         "UPDATE pgbench_accounts ",
                                                         "SELECT abalance ",
                                                         "UPDATE pgbench_tellers ",
                                                         "UPDATE pgbench_branches ",
                                                         "INSERT INTO pgbench_history ",
                                                         "END;"};

class RealServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNDER_ASAN();
    base_ = std::filesystem::path(::testing::TempDir()) /
            ("weft-real-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(base_);
    std::filesystem::create_directories(base_ / "capture");
    // Servers that drop root (postgres runs as its own user) write their logs here too.
    std::filesystem::permissions(base_, std::filesystem::perms::all);
    std::filesystem::permissions(base_ / "capture", std::filesystem::perms::all);
  }
  void TearDown() override {
    background_.reset();        // kills and reaps whatever a failed test left running
    if (base_.empty()) return;  // skipped in SetUp
    if (std::getenv("WEFT_TEST_KEEP") != nullptr) {  // for a post-mortem of a failed run
      std::cerr << "WEFT_TEST_KEEP: kept " << base_.string() << "\n";
      return;
    }
    std::filesystem::remove_all(base_);
  }

  std::string Path(const std::string& name) const { return (base_ / name).string(); }

  // `weft capture` of argv in the background, logs under capture/<sub>.
  pid_t StartCaptured(const std::string& sub, std::vector<std::string> argv,
                      int stop_signal = SIGTERM, uid_t uid = 0, gid_t gid = 0) {
    std::vector<std::string> full = {WEFT_BINARY,
                                     "capture",
                                     "-o",
                                     Path("capture/" + sub),
                                     "--payload-prefix",
                                     std::to_string(kPrefix)};
    full.push_back(isolate_ ? "--isolate" : "--no-isolate");
    full.push_back("--");
    full.insert(full.end(), argv.begin(), argv.end());
    return background_->Start(full, Path(sub + ".out"), stop_signal, uid, gid);
  }

  std::string Capture(const std::string& sub, const std::string& command) const {
    return "capture -o " + Path("capture/" + sub) + " --payload-prefix " + std::to_string(kPrefix) +
           (isolate_ ? " --isolate" : " --no-isolate") + " -- " + command;
  }

  Trace Reconcile() {
    auto run =
        Weft("reconcile " + Path("capture") + " -o " + Path("run.weft") + " --nodes process");
    EXPECT_EQ(run.rc, 0) << run.output;
    std::cerr << run.output;
    reconcile_output_ = run.output;
    Result<Trace> trace = LoadTrace(Path("run.weft"));
    EXPECT_TRUE(trace.ok()) << trace.status().message();
    return trace.ok() ? std::move(*trace) : Trace();
  }

  static bool Installed(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

  // A self-signed certificate and key for localhost in the test's directory (cert.pem,
  // key.pem), made now; false if openssl failed.
  bool MakeCertificate() {
    auto [rc, out] =
        Shell("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " +
              Path("key.pem") + " -out " + Path("cert.pem"));
    if (rc != 0) std::cerr << out;
    return rc == 0;
  }

  // PostgreSQL 15 under capture (capture/postgres), as the postgres user when the test
  // runs as root (initdb and postgres refuse root), on a free port of 127.0.0.1 with
  // ssl=on if `tls`, and pgbench's tables made at scale 1 by an untraced pgbench. Skips
  // the test if PostgreSQL is not installed; check IsSkipped() and HasFatalFailure().
  struct Postgres {
    pid_t pid = -1;
    uint16_t port = 0;
    uid_t uid = 0;  // the postgres user, when the test runs as root; else 0
    gid_t gid = 0;
  };
  static constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";
  void StartPostgres(bool tls, Postgres* pg) {
    const std::string bin = kPgBin;
    if (!Installed(bin + "/postgres") || !Installed(bin + "/pgbench") ||
        !Installed(bin + "/initdb")) {
      GTEST_SKIP() << "PostgreSQL 15 not installed in " << bin << " (scripts/install-deps)";
    }
    std::string as_user;
    if (getuid() == 0) {
      passwd* pw = getpwnam("postgres");
      if (pw == nullptr) GTEST_SKIP() << "running as root and there is no postgres user";
      pg->uid = pw->pw_uid;
      pg->gid = pw->pw_gid;
      as_user = "runuser -u postgres -- ";
    }
    const std::string data = Path("pgdata"), sockets = Path("pgsock");
    std::filesystem::create_directories(data);
    std::filesystem::create_directories(sockets);
    if (pg->uid != 0) {
      ASSERT_EQ(chown(data.c_str(), pg->uid, pg->gid), 0);
      ASSERT_EQ(chown(sockets.c_str(), pg->uid, pg->gid), 0);
    }
    auto [init_rc, init_out] =
        Shell(as_user + bin + "/initdb -D " + data + " -A trust -U postgres --no-sync");
    ASSERT_EQ(init_rc, 0) << init_out;
    pg->port = FreePorts<1>()[0];
    ASSERT_NE(pg->port, 0);
    std::vector<std::string> argv = {bin + "/postgres",
                                     "-D",
                                     data,
                                     "-p",
                                     std::to_string(pg->port),
                                     "-c",
                                     "listen_addresses=127.0.0.1",
                                     "-c",
                                     "unix_socket_directories=" + sockets,
                                     "-c",
                                     "fsync=off",
                                     "-c",
                                     "autovacuum=off"};
    if (tls) {
      if (!MakeCertificate()) GTEST_SKIP() << "openssl req could not make a certificate";
      // The server reads its key as its own user, and only from a file no one else can read.
      const std::string key = data + "/server.key", cert = data + "/server.crt";
      std::filesystem::copy_file(Path("key.pem"), key);
      std::filesystem::copy_file(Path("cert.pem"), cert);
      ASSERT_EQ(chmod(key.c_str(), 0600), 0);
      if (pg->uid != 0) {
        ASSERT_EQ(chown(key.c_str(), pg->uid, pg->gid), 0);
        ASSERT_EQ(chown(cert.c_str(), pg->uid, pg->gid), 0);
      }
      argv.insert(argv.end(),
                  {"-c", "ssl=on", "-c", "ssl_cert_file=" + cert, "-c", "ssl_key_file=" + key});
    }
    pg->pid = StartCaptured("postgres", argv, SIGINT, pg->uid, pg->gid);  // SIGINT: fast shutdown
    ASSERT_TRUE(WaitForLog(Path("postgres.out"), "ready to accept connections"))
        << ReadFile(Path("postgres.out"));
    // Plaintext: no SSL or GSSAPI negotiation first, the startup packet is the first message.
    // TLS: an SSLRequest first, answered 'S'; no GSSAPI either way.
    setenv("PGSSLMODE", tls ? "require" : "disable", 1);
    setenv("PGGSSENCMODE", "disable", 1);
    // The tables are made untraced: the server logs that session with an untraced peer.
    auto [setup_rc, setup_out] =
        Shell(bin + "/pgbench -h 127.0.0.1 -p " + std::to_string(pg->port) +
              " -U postgres -i -s 1 -q postgres");
    ASSERT_EQ(setup_rc, 0) << setup_out;
  }

  static constexpr int kPrefix = 512;
  // Capture with --isolate (weft capture's default) or --no-isolate, which these tests were
  // measured with.
  bool isolate_ = false;
  std::string reconcile_output_;  // what the last Reconcile() printed
  std::filesystem::path base_;
  std::unique_ptr<Background> background_ = std::make_unique<Background>();
};

}  // namespace weft::testing
