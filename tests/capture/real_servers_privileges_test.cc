// Servers that drop root, under weft capture: Apache (mpm_event, mod_proxy_http) with its
// workers as www-data and nginx with its worker as nobody, each a reverse proxy in front
// of the testbed (real_servers_nginx.h's topology). Every message is reconciled, every
// request's tree is exact for fragment, and the capture is private: every log 0600 and
// every directory weft capture made 0700, whatever the umask (docs/capture.md
// "Permissions"). The fixture and helpers are in real_servers.h.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "capture/real_servers.h"
#include "capture/real_servers_nginx.h"
#include "infer/fragment/fragment.h"
#include "paths/path_set.h"
#include "reconcile/reconcile.h"
#include "testbed/truth.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::ExactTrees;
using testing::Fill;
using testing::IdsOf;
using testing::PayloadPrefix;
using testing::ProgramOf;
using testing::RealServersTest;
using testing::TestbedIds;
using testing::Weft;

// Apache as the reverse proxy: one child process (so one process is "apache2" for every
// request) of 16 worker threads, started as root and switching to www-data (mod_unixd's
// User and Group); client connections kept alive for as many requests as the load sends.
// mod_proxy keeps its backend connections alive by default.
constexpr const char* kApacheConf = R"conf(ServerRoot @P@
DefaultRuntimeDir @P@
PidFile @P@/httpd.pid
ErrorLog @P@/error.log
LogLevel notice
ServerName localhost
User www-data
Group www-data
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so
Listen 127.0.0.1:@PORT@
StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16
MinSpareThreads 1
MaxSpareThreads 16
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 60
ProxyPass / http://127.0.0.1:@WEB@/
)conf";

struct Front {
  std::string program;  // the binary's name, as --nodes process names its processes
  std::string binary;
  std::string user;  // the user its workers run as
};

// The uid of each process of process group `group` whose name is `comm`.
std::map<pid_t, uid_t> UidsOf(pid_t group, const std::string& comm) {
  std::map<pid_t, uid_t> uids;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = testing::ReadFile(entry.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    char state;
    pid_t parent, pgrp;
    fields >> state >> parent >> pgrp;
    if (pgrp != group || stat.find("(" + comm + ")") == std::string::npos) continue;
    std::istringstream status(testing::ReadFile(entry.path() / "status"));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0)
        uids[pid_t(std::stoi(name))] = uid_t(std::stoul(line.substr(4)));
    }
  }
  return uids;
}

// "vm:nginx[123]" -> 123.
pid_t PidOf(const std::string& node) {
  size_t bracket = node.rfind('[');
  return bracket == std::string::npos ? 0 : pid_t(std::stoi(node.substr(bracket + 1)));
}

// A message between the server's own processes or threads (kind MSG): nginx's master
// and worker over their socketpair, Apache's parent and child, or its worker waking its
// listener through a pipe.
bool Internal(const Trace& trace, const Front& front, size_t i) {
  const TraceColumns& c = trace.columns();
  return c.kind[i] == MessageKind::kMessage &&
         ProgramOf(trace.NodeName(c.sender[i])) == front.program &&
         ProgramOf(trace.NodeName(c.receiver[i])) == front.program;
}

class DroppedPrivilegesTest : public RealServersTest {
 protected:
  void SetUp() override {
    RealServersTest::SetUp();
    if (IsSkipped()) return;
    if (getuid() != 0)
      GTEST_SKIP() << "needs root: these tests start programs as root that then drop it";
  }
  void Run(const Front& front);
  // The capture's modes: every directory under capture/ (each weft capture's -o and its
  // host folder) 0700, every log 0600.
  void CheckPrivate();
};

TEST_F(DroppedPrivilegesTest, ApacheWorkersAsWwwData) {
  if (!Installed("/usr/sbin/apache2")) {
    GTEST_SKIP() << "apache2 not installed (scripts/install-deps)";
  }
  Run({"apache2", "/usr/sbin/apache2", "www-data"});
}

// nginx's worker is one event loop: with --isolate each epoll_wait reports one input, so
// fragment gets every tree (real_servers_nginx_test.cc).
TEST_F(DroppedPrivilegesTest, NginxWorkerAsNobody) {
  if (!Installed("/usr/sbin/nginx")) GTEST_SKIP() << "nginx not installed (scripts/install-deps)";
  isolate_ = true;
  Run({"nginx", "/usr/sbin/nginx", "nobody"});
}

// Without servers or root: whatever the umask, weft capture makes its directories 0700
// and every process's log is 0600 (here a shell, its forked child and the child's exec),
// and a parent directory that was already there keeps its mode.
TEST(CapturePermissions, LogsAre0600AndDirectories0700WhateverTheUmask) {
  SKIP_UNDER_ASAN();
  fs::path base = fs::path(::testing::TempDir()) / ("weft-modes-" + std::to_string(getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  fs::permissions(base, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  for (const char* mask : {"0", "0277", "0022"}) {
    fs::path out = base / (std::string("umask-") + mask) / "capture";
    auto [rc, output] =
        testing::Shell("umask " + std::string(mask) + "; " + WEFT_BINARY + " capture -o " +
                       out.string() + " -- /bin/sh -c '/bin/true; exit 0'");
    ASSERT_EQ(rc, 0) << output;
    int logs = 0;
    for (fs::path dir : {out.parent_path(), out}) {
      EXPECT_EQ(fs::status(dir).permissions(), fs::perms::owner_all) << dir << " umask " << mask;
    }
    for (const fs::directory_entry& host : fs::directory_iterator(out)) {
      EXPECT_EQ(fs::status(host.path()).permissions(), fs::perms::owner_all) << host.path();
      for (const fs::directory_entry& log : fs::directory_iterator(host.path())) {
        EXPECT_EQ(fs::status(log.path()).permissions(),
                  fs::perms::owner_read | fs::perms::owner_write)
            << log.path() << " umask " << mask;
        ++logs;
      }
    }
    // The shell, its forked child, and the child's next image (/bin/true).
    EXPECT_EQ(logs, 3) << output;
  }
  EXPECT_EQ(fs::status(base).permissions(),
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  fs::remove_all(base);
}

// A program that drops root and then execs: the new image cannot create its log in the
// capture directory (0700, root's), runs untraced, and reconcile says so.
TEST_F(DroppedPrivilegesTest, ExecAfterDroppingRootIsCountedLost) {
  if (!Installed("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) not installed";
  auto run = Weft(Capture("drop",
                          "/usr/bin/setpriv --reuid=nobody --regid=nogroup "
                          "--clear-groups /bin/sh -c 'exit 3'"));
  EXPECT_EQ(run.rc, 3) << run.output;  // the program ran, untraced after the exec
  auto reconciled = Weft("reconcile " + Path("capture") + " -o " + Path("run.weft"));
  EXPECT_EQ(reconciled.rc, 0) << reconciled.output;
  EXPECT_NE(reconciled.output.find("its exec started an image that left no log"), std::string::npos)
      << reconciled.output;
  EXPECT_NE(reconciled.output.find("1 logs with losses"), std::string::npos) << reconciled.output;
}

// A program that drops root and then forks: the child cannot create its log either, and
// reconcile counts it on the parent's line.
TEST_F(DroppedPrivilegesTest, ForkAfterDroppingRootIsCountedLost) {
  if (!Installed("/usr/bin/perl")) GTEST_SKIP() << "perl not installed";
  auto run = Weft(Capture("drop",
                          "/usr/bin/perl -e '$( = $) = 65534; $< = $> = 65534; "
                          "if (fork() == 0) { exit 0 } wait; exit 3'"));
  EXPECT_EQ(run.rc, 3) << run.output;
  auto reconciled = Weft("reconcile " + Path("capture") + " -o " + Path("run.weft"));
  EXPECT_EQ(reconciled.rc, 0) << reconciled.output;
  EXPECT_NE(reconciled.output.find("1 of its children left no log"), std::string::npos)
      << reconciled.output;
  EXPECT_NE(reconciled.output.find("1 logs with losses"), std::string::npos) << reconciled.output;
}

// The same drop, then a fork whose child execs, captured with --owner nobody: the capture
// directory is nobody's, so the child and its new image create their logs, and nothing is
// lost. A user that does not exist, or that cannot reach the directory, is refused before
// the program runs.
TEST_F(DroppedPrivilegesTest, ForkAndExecAfterDroppingRootAreTracedWithOwner) {
  if (!Installed("/usr/bin/perl")) GTEST_SKIP() << "perl not installed";
  const std::string program =
      "/usr/bin/perl -e '$( = $) = 65534; $< = $> = 65534; "
      "if (fork() == 0) { exec \"/bin/sh\", \"-c\", \"exit 0\" } wait; exit 3'";
  auto run = Weft("capture -o " + Path("capture/drop") + " --owner nobody -- " + program);
  EXPECT_EQ(run.rc, 3) << run.output;
  auto reconciled = Weft("reconcile " + Path("capture") + " -o " + Path("run.weft"));
  EXPECT_EQ(reconciled.rc, 0) << reconciled.output;
  EXPECT_EQ(reconciled.output.find("left no log"), std::string::npos) << reconciled.output;
  EXPECT_NE(reconciled.output.find(" 0 logs with losses"), std::string::npos) << reconciled.output;
  EXPECT_NE(reconciled.output.find("1 forks and 1 execs linked"), std::string::npos)
      << reconciled.output;
  int logs = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(Path("capture/drop")))
    logs += e.path().extension() == ".wev";
  EXPECT_EQ(logs, 3);  // perl, its child, the child's sh

  auto unknown = Weft("capture -o " + Path("capture/unknown") + " --owner no-such-user -- true");
  EXPECT_NE(unknown.rc, 0);
  EXPECT_NE(unknown.output.find("--owner: no user 'no-such-user'"), std::string::npos)
      << unknown.output;
  fs::create_directories(Path("closed"));
  fs::permissions(Path("closed"), fs::perms::owner_all);
  auto closed = Weft("capture -o " + Path("closed/capture") + " --owner nobody -- true");
  EXPECT_NE(closed.rc, 0);
  EXPECT_NE(closed.output.find("nobody cannot reach"), std::string::npos) << closed.output;
}

void DroppedPrivilegesTest::CheckPrivate() {
  int directories = 0, logs = 0;
  for (const fs::directory_entry& sub : fs::directory_iterator(Path("capture"))) {
    for (auto it = fs::recursive_directory_iterator(sub.path());; ++it) {
      fs::path path = it == fs::recursive_directory_iterator() ? sub.path() : it->path();
      struct stat st;
      ASSERT_EQ(lstat(path.c_str(), &st), 0) << path;
      if (S_ISDIR(st.st_mode)) {
        EXPECT_EQ(st.st_mode & 07777, 0700u) << path;
        ++directories;
      } else if (path.extension() == ".wev") {
        EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
        EXPECT_EQ(st.st_uid, 0u) << path << ": created by the process while it was root";
        ++logs;
      }
      if (it == fs::recursive_directory_iterator()) break;
    }
  }
  std::cerr << directories << " directories 0700, " << logs << " logs 0600\n";
  EXPECT_EQ(directories, 8);  // capture/{db0,web0,front,client} and each one's host folder
  EXPECT_GE(logs, 5);         // db0, web0, the front's parent and worker, the client
}

void DroppedPrivilegesTest::Run(const Front& front) {
  passwd* user = getpwnam(front.user.c_str());
  ASSERT_NE(user, nullptr) << front.user;
  auto [web, db, port] = testing::FreePorts<3>();
  ASSERT_TRUE(web != 0 && db != 0 && port != 0);
  std::string topology = Path("topology.toml"), truth_dir = Path("truth"), prefix = Path("front");
  fs::create_directories(truth_dir);
  fs::create_directories(prefix);
  std::ofstream(topology) << Fill(testing::kProxiedTopology,
                                  {{"@WEB@", std::to_string(web)}, {"@DB@", std::to_string(db)}});
  std::map<std::string, std::string> values = {
      {"@P@", prefix}, {"@WEB@", std::to_string(web)}, {"@PORT@", std::to_string(port)}};
  std::string conf = prefix + "/server.conf";
  std::vector<std::string> argv;
  if (front.program == "nginx") {
    std::ofstream(conf) << Fill(testing::kNginxConf, values);
    argv = testing::NginxArgv(front.binary, conf, prefix);
  } else {
    std::ofstream(conf) << Fill(kApacheConf, values);
    argv = {front.binary, "-d", prefix, "-f", conf, "-DFOREGROUND"};
  }
  pid_t db0 = StartCaptured("db0", {WEFT_TESTBED_SERVER, topology, "db0", truth_dir});
  pid_t web0 = StartCaptured("web0", {WEFT_TESTBED_SERVER, topology, "web0", truth_dir});
  // The umask neither widens nor narrows the capture's modes: none for the server, one
  // that would leave the client's logs and directories read-only.
  mode_t umask_before = umask(0);
  pid_t server = StartCaptured("front", argv);
  umask(umask_before);
  ASSERT_TRUE(testing::WaitForPort(db) && testing::WaitForPort(web) && testing::WaitForPort(port))
      << testing::ReadFile(prefix + "/error.log");
  umask(0277);
  auto load = Weft(Capture("client", std::string(WEFT_BINARY) + " testbed load " + topology +
                                         " --entry-port " + std::to_string(port) +
                                         " --duration 1s --concurrency 4 -o " + truth_dir));
  umask(umask_before);
  ASSERT_EQ(load.rc, 0) << load.output;
  std::cerr << load.output;
  // The server's processes as they ran: which of them dropped root.
  std::map<pid_t, uid_t> uids = UidsOf(server, front.program);
  for (pid_t pid : {server, web0, db0}) {
    int status = background_->Stop(pid, SIGTERM);
    EXPECT_TRUE(WIFEXITED(status)) << "pid " << pid << " status " << status;
  }
  std::string error_log = testing::ReadFile(prefix + "/error.log");
  EXPECT_EQ(error_log.find("error]"), std::string::npos) << error_log;
  CheckPrivate();

  Result<Trace> truth = testbed::BuildTruthTrace(truth_dir);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  reconcile::ReadProblems problems;
  auto logs = reconcile::ReadCaptureDirectory(Path("capture"), &problems);
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  EXPECT_TRUE(problems.losses.empty() && problems.unreadable.empty());
  reconcile::ReconcileSummary summary;
  Result<Trace> reconciled =
      reconcile::Reconcile(*logs, {.nodes = reconcile::NodeNaming::kProcess}, &summary);
  ASSERT_TRUE(reconciled.ok()) << reconciled.status().message();
  const Trace& trace = *reconciled;
  std::cerr << summary.OneLine() << "\n";
  // Every log complete (the workers' too, after the switch), every byte sent read by its
  // traced peer.
  for (const std::string& loss : summary.losses) ADD_FAILURE() << "lost: " << loss;
  EXPECT_EQ(summary.unmatched_bytes, 0u);
  EXPECT_EQ(summary.unnamed_io, 0u);

  // Roles: the load client is the only traced "weft"; the front's worker is the process it
  // calls; web0 is what the worker calls, db0 what web0 calls.
  const TraceColumns& c = trace.columns();
  auto node = [&](size_t i, bool sender) {
    return std::string(trace.NodeName(sender ? c.sender[i] : c.receiver[i]));
  };
  std::map<std::string, std::string> role =
      testing::ProxyRoles(trace, {{"weft", "client"}}, "front");
  ASSERT_EQ(role.size(), 4u) << "client, the front's worker, web0, db0";
  std::string client;
  for (const auto& [process, r] : role) {
    if (r == "client") client = process;
    if (r != "front") continue;
    EXPECT_EQ(ProgramOf(process), front.program);
    // The process that served every request ran as the server's user.
    auto it = uids.find(PidOf(process));
    ASSERT_NE(it, uids.end()) << process << " was not seen running";
    EXPECT_EQ(it->second, user->pw_uid) << process << " did not run as " << front.user;
  }

  // Every message between these four carries the testbed's ids, is timed at both ends, and
  // is the truth's, one for one by call id.
  testing::CallsByPair truth_calls = testing::TruthCalls(*truth), trace_calls;
  size_t requests = truth_calls[{MessageKind::kCall, "client>web0"}].size();
  ASSERT_GT(requests, 200u);
  std::vector<MessageId> http_requests;
  int untimed = 0, other = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    auto from = role.find(node(i, true)), to = role.find(node(i, false));
    if (Internal(trace, front, i) || from == role.end() || to == role.end()) {
      other += !Internal(trace, front, i);
      continue;
    }
    MessageId m{uint32_t(i)};
    TestbedIds ids = IdsOf(PayloadPrefix(trace, m));
    EXPECT_NE(ids.request, 0u) << "message " << i << " carries no testbed ids";
    trace_calls[{c.kind[i], from->second + ">" + to->second}].insert(ids.call);
    untimed += c.send_time[i] == kNoTime || c.recv_time[i] == kNoTime;
    if (c.kind[i] == MessageKind::kCall && from->second == "client") http_requests.push_back(m);
  }
  EXPECT_EQ(other, 0);
  EXPECT_EQ(untimed, 0);
  testing::ExpectCallsAsInTruth(trace_calls, truth_calls, "front");

  // Every request's tree, exact for fragment.
  std::map<uint64_t, int> db_calls;
  for (MessageId m : http_requests) db_calls[IdsOf(PayloadPrefix(trace, m)).request] += 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kCall && role.count(node(i, true)) &&
        role[node(i, true)] == "web0") {
      ++db_calls[IdsOf(PayloadPrefix(trace, MessageId{uint32_t(i)})).request];
    }
  }
  ASSERT_EQ(db_calls.size(), requests);
  Result<FragmentInference> fragment = InferFragment(trace);
  ASSERT_TRUE(fragment.ok()) << fragment.status().message();
  // Apache's worker wakes its listener through a pipe when it gives a kept-alive
  // connection back; fragment puts that message in the tree of the request just answered.
  // It is the server's own, not part of the request's tree: the trees are scored without
  // such messages.
  PathSet paths;          // only what ExactTrees reads: each instance's messages
  int with_internal = 0;  // request trees that held one
  for (size_t i = 0; i < fragment->paths.instance_count(); ++i) {
    size_t before = paths.messages.size();
    for (MessageId m : fragment->paths.InstanceMessages(i)) {
      if (!Internal(trace, front, m.value())) paths.messages.push_back(m);
    }
    size_t kept = paths.messages.size() - before;
    if (kept == 0) continue;  // a path of the server's own messages alone
    with_internal += kept != fragment->paths.InstanceMessages(i).size();
    paths.instance_begin.push_back(uint32_t(paths.messages.size()));
    paths.probability.push_back(fragment->paths.probability[i]);
  }
  int exact = ExactTrees(trace, paths, client, db_calls, 4, 5);
  std::cerr << requests << " requests; fragment exact " << exact << " (" << with_internal
            << " trees held a message between the server's own processes or threads)\n";
  EXPECT_EQ(exact, int(requests));
}

}  // namespace
}  // namespace weft
