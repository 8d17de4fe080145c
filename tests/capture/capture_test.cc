// weft capture on real processes (capture_probe.cc): exact event counts and bytes, the two
// ends of a connection named alike, fork and exec followed, damage and loss accounted for.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "capture/event_log.h"
#include "weft_cli.h"

namespace weft::capture {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-capture-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  // A failed test keeps its logs for a look.
  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "kept " << dir_.string() << "\n";
    } else {
      fs::remove_all(dir_);
    }
  }

  weft::testing::CommandRun Capture(const std::string& args) {
    return Weft("capture -o " + dir_.string() + " -- " + CAPTURE_PROBE + " " + args);
  }

  // Every log under the capture directory, whole (no damage, end record present).
  std::vector<EventLog> Logs(bool expect_whole = true) {
    std::vector<EventLog> logs;
    auto paths = FindEventLogs(dir_.string());
    EXPECT_TRUE(paths.ok());
    for (const std::string& path : *paths) {
      auto log = ReadEventLog(path);
      EXPECT_TRUE(log.ok()) << log.status().message();
      if (!log.ok()) continue;
      if (expect_whole) {
        EXPECT_TRUE(log->loss.has_end_record) << path;
        EXPECT_EQ(log->loss.dropped_events, 0u) << path;
        EXPECT_EQ(log->loss.truncated_bytes + log->loss.corrupt_bytes, 0u) << path;
      }
      logs.push_back(std::move(*log));
    }
    return logs;
  }

  fs::path dir_;
};

std::vector<const Event*> Calls(const EventLog& log, EventOp op, int fd = -2) {
  std::vector<const Event*> out;
  for (const Event& e : log.events) {
    if (e.op == op && (fd == -2 || e.fd == fd)) out.push_back(&e);
  }
  return out;
}

long Bytes(const std::vector<const Event*>& events) {
  long sum = 0;
  for (const Event* e : events) sum += e->result;
  return sum;
}

// The endpoint record a call named (the first one on `fd` made by `op`).
const Endpoint* Named(const EventLog& log, EventOp op, int fd) {
  for (const Event& e : log.events) {
    if (e.op == EventOp::kEndpoint && e.arg == int(op) && e.fd == fd)
      return &log.endpoints[e.endpoint];
  }
  return nullptr;
}

TEST_F(CaptureTest, TcpClientAndServerAgreeOnBytesAndEndpoints) {
  auto run = Capture("tcp 50");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("tcp 50 round trips, 3825 bytes, child 0\n"), std::string::npos);
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  // The child's header names the parent; the parent logged the fork with the child's pid.
  const EventLog& parent = logs[0].header.parent_pid == logs[1].header.pid ? logs[1] : logs[0];
  const EventLog& child = &parent == &logs[0] ? logs[1] : logs[0];
  EXPECT_EQ(child.header.parent_pid, parent.header.pid);
  ASSERT_EQ(Calls(parent, EventOp::kFork).size(), 1u);
  EXPECT_EQ(Calls(parent, EventOp::kFork)[0]->result, child.header.pid);

  ASSERT_EQ(Calls(child, EventOp::kConnect).size(), 1u);
  int client_fd = Calls(child, EventOp::kConnect)[0]->fd;
  ASSERT_EQ(Calls(parent, EventOp::kAccept).size(), 1u);
  int server_fd = Calls(parent, EventOp::kAccept)[0]->result;
  // 50 requests of 1..50 bytes one way, answers of twice that the other way, each side
  // seen call by call (the probe receives with MSG_WAITALL).
  EXPECT_EQ(Calls(child, EventOp::kSend, client_fd).size(), 50u);
  EXPECT_EQ(Bytes(Calls(child, EventOp::kSend, client_fd)), 1275);
  EXPECT_EQ(Calls(parent, EventOp::kRecv, server_fd).size(), 50u);
  EXPECT_EQ(Bytes(Calls(parent, EventOp::kRecv, server_fd)), 1275);
  EXPECT_EQ(Bytes(Calls(parent, EventOp::kSend, server_fd)), 2550);
  EXPECT_EQ(Bytes(Calls(child, EventOp::kRecv, client_fd)), 2550);
  // Both ends name the connection alike: the local name connect bound is the peer accept
  // saw (the program passed no buffer to accept), and the listener's port is the peer.
  const Endpoint* client = Named(child, EventOp::kConnect, client_fd);
  const Endpoint* server = Named(parent, EventOp::kAccept, server_fd);
  const Endpoint* listener =
      Named(parent, EventOp::kListen, Calls(parent, EventOp::kListen)[0]->fd);
  ASSERT_TRUE(client && server && listener);
  EXPECT_EQ(FormatAddress(client->local), FormatAddress(server->peer));
  EXPECT_EQ(FormatAddress(client->peer), FormatAddress(server->local));
  EXPECT_EQ(client->peer.port, listener->local.port);
  EXPECT_TRUE(listener->listening);
  EXPECT_EQ(client->kind, wire::kKindTcp);
  EXPECT_EQ(FormatAddress(client->local).rfind("127.0.0.1:", 0), 0u);
  // Exit times never precede entry times, and each thread's events are in time order.
  for (const EventLog* log : {&parent, &child}) {
    for (const Event& e : log->events) EXPECT_LE(e.entry_ns, e.exit_ns);
  }

  // A copy cut inside the end record, 20 bytes before its end, loses the end record (whose
  // first bytes are then the truncated ones)... and only it: every event is still read.
  std::string copy = (dir_ / "cut.wev").string();
  fs::copy_file(parent.path, copy);
  std::ifstream in(copy, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const char end_head[] = {wire::kEndRecord, wire::kOpNone, sizeof(wire::EndRecord), 0};
  size_t end_at = bytes.rfind(std::string(end_head, 4));
  ASSERT_NE(end_at, std::string::npos);
  fs::resize_file(copy, end_at + sizeof(wire::EndRecord) - 20);
  auto cut = ReadEventLog(copy);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->events.size(), parent.events.size());
  EXPECT_EQ(cut->loss.truncated_bytes, sizeof(wire::EndRecord) - 20);
  EXPECT_FALSE(cut->loss.has_end_record);
}

TEST_F(CaptureTest, PayloadPrefixKeepsTheFirstBytesOfEachCall) {
  auto run =
      Weft("capture -o " + dir_.string() + " --payload-prefix 6 -- " + CAPTURE_PROBE + " tcp 10");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  const EventLog& parent = logs[0].header.parent_pid == logs[1].header.pid ? logs[1] : logs[0];
  const EventLog& child = &parent == &logs[0] ? logs[1] : logs[0];
  EXPECT_EQ(child.header.payload_prefix, 6u);
  auto requests = Calls(child, EventOp::kSend, Calls(child, EventOp::kConnect)[0]->fd);
  auto answers = Calls(parent, EventOp::kSend, Calls(parent, EventOp::kAccept)[0]->result);
  ASSERT_EQ(requests.size(), 10u);
  ASSERT_EQ(answers.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    ASSERT_NE(requests[i]->payload, kNone);
    EXPECT_EQ(child.payloads[requests[i]->payload], std::string(std::min(i + 1, 6), 'q'));
    EXPECT_EQ(parent.payloads[answers[i]->payload], std::string(std::min(2 * (i + 1), 6), 'r'));
  }
  // Without the flag, nothing of the payload is kept.
  fs::remove_all(dir_);
  ASSERT_EQ(Capture("tcp 10").rc, 0);
  for (const EventLog& log : Logs()) EXPECT_TRUE(log.payloads.empty());
}

TEST_F(CaptureTest, ListenWithoutBindRecordsThePortTheKernelChose) {
  auto run = Capture("autobind");
  ASSERT_EQ(run.rc, 0) << run.output;
  int port = 0;
  ASSERT_EQ(std::sscanf(run.output.c_str(), "listening on port %d", &port), 1) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  const Endpoint* listener =
      Named(logs[0], EventOp::kListen, Calls(logs[0], EventOp::kListen)[0]->fd);
  ASSERT_NE(listener, nullptr);
  EXPECT_EQ(listener->local.port, port);
  EXPECT_TRUE(listener->listening);
}

TEST_F(CaptureTest, UdpDatagramsCarryHashesAndPeers) {
  auto run = Capture("udp 20");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  const EventLog& log = logs[0];
  auto sends = Calls(log, EventOp::kSendto);
  auto receives = Calls(log, EventOp::kRecvfrom);
  ASSERT_EQ(sends.size(), 20u);
  ASSERT_EQ(receives.size(), 20u);
  const Endpoint* receiver = Named(log, EventOp::kBind, receives[0]->fd);
  const Endpoint* sender = Named(log, EventOp::kSendto, sends[0]->fd);  // named by its first send
  ASSERT_TRUE(receiver && sender);
  EXPECT_EQ(sender->kind, wire::kKindUdp);
  for (int i = 0; i < 20; ++i) {
    std::string datagram = "datagram-" + std::to_string(i);
    uint64_t hash = XXH3_64bits(datagram.data(), datagram.size());
    EXPECT_TRUE(sends[i]->datagram);
    EXPECT_EQ(sends[i]->payload_hash, hash) << i;
    EXPECT_EQ(receives[i]->payload_hash, hash) << i;
    EXPECT_EQ(sends[i]->result, int(datagram.size()));
    EXPECT_EQ(FormatAddress(log.addresses[sends[i]->peer]), FormatAddress(receiver->local));
    // The source, asked for although the program passed no address to recvfrom.
    ASSERT_NE(receives[i]->peer, kNone);
    EXPECT_EQ(log.addresses[receives[i]->peer].port, sender->local.port);
  }
}

TEST_F(CaptureTest, UnixSocketPeerPidAndPathAndExitWithoutAtexit) {
  std::string path =
      (fs::path(::testing::TempDir()) / ("weft-probe-" + std::to_string(getpid()) + ".sock"))
          .string();
  auto run = Capture("unix " + path + " 3");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();  // the child ended with _exit and still has its end record
  ASSERT_EQ(logs.size(), 2u);
  const EventLog& parent = logs[0].header.parent_pid == logs[1].header.pid ? logs[1] : logs[0];
  const EventLog& child = &parent == &logs[0] ? logs[1] : logs[0];
  int client_fd = Calls(child, EventOp::kConnect)[0]->fd;
  int server_fd = Calls(parent, EventOp::kAccept)[0]->result;
  EXPECT_EQ(Bytes(Calls(child, EventOp::kSend, client_fd)), 12);
  EXPECT_EQ(Bytes(Calls(parent, EventOp::kRecv, server_fd)), 12);
  const Endpoint* client = Named(child, EventOp::kConnect, client_fd);
  const Endpoint* server = Named(parent, EventOp::kAccept, server_fd);
  ASSERT_TRUE(client && server);
  EXPECT_EQ(FormatAddress(client->peer), "unix:" + path);
  EXPECT_EQ(FormatAddress(server->local), "unix:" + path);
  EXPECT_EQ(server->peer_pid, child.header.pid);
  EXPECT_EQ(client->peer_pid, parent.header.pid);
  EXPECT_EQ(server->kind, wire::kKindUnixStream);
  // The accepted end names the connecting end's inode (sock_diag), so reconcile pairs the
  // two exactly; at connect the other end had no inode yet.
  EXPECT_NE(client->inode, 0u);
  EXPECT_NE(server->inode, 0u);
  EXPECT_EQ(server->peer_inode, client->inode);
  EXPECT_EQ(client->peer_inode, 0u);
  EXPECT_EQ(Bytes(Calls(parent, EventOp::kSend, server_fd)), 4);
}

// A datagram socketpair's end inherited through fork has no path on either side: its
// record at the child's start names the other end's inode (sock_diag), as the parent's
// socketpair records do, so reconcile can tell where the child's datagrams go.
TEST_F(CaptureTest, InheritedUnixDatagramSocketpairEndNamesItsPeersInode) {
  std::string path =
      (fs::path(::testing::TempDir()) / ("weft-probe-ud-" + std::to_string(getpid()))).string();
  auto run = Capture("unixdgram " + path + " 2");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  const EventLog& parent = logs[0].header.parent_pid == logs[1].header.pid ? logs[1] : logs[0];
  const EventLog& child = &parent == &logs[0] ? logs[1] : logs[0];
  auto pairs = Calls(parent, EventOp::kSocketpair);
  ASSERT_EQ(pairs.size(), 1u);
  const Endpoint* kept = Named(parent, EventOp::kSocketpair, pairs[0]->fd);     // parent's end
  const Endpoint* handed = Named(parent, EventOp::kSocketpair, pairs[0]->arg);  // child's end
  ASSERT_TRUE(kept && handed);
  EXPECT_EQ(kept->kind, wire::kKindUnixDatagram);
  EXPECT_EQ(handed->peer_inode, kept->inode);
  const Endpoint* inherited = Named(child, EventOp(wire::kOpNone), pairs[0]->arg);  // open at start
  ASSERT_TRUE(inherited);
  EXPECT_EQ(inherited->kind, wire::kKindUnixDatagram);
  EXPECT_EQ(inherited->inode, handed->inode);
  EXPECT_EQ(inherited->peer_inode, kept->inode);
}

TEST_F(CaptureTest, ThreadsThatEndWriteTheirBuffers) {
  auto run = Capture("threads 8 3000");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  std::map<int32_t, std::pair<int, int>> per_thread;  // tid -> sends, receives
  for (const Event& e : logs[0].events) {
    if (e.op == EventOp::kSend) ++per_thread[e.tid].first;
    if (e.op == EventOp::kRecv) ++per_thread[e.tid].second;
  }
  ASSERT_EQ(per_thread.size(), 8u);
  for (const auto& [tid, counts] : per_thread) {
    EXPECT_NE(tid, logs[0].header.pid);
    EXPECT_EQ(counts.first, 6000) << tid;
    EXPECT_EQ(counts.second, 6000) << tid;
  }
  EXPECT_GT(logs[0].blocks, 8u * 6);  // 12000 records a thread fill several 64 KiB blocks
}

// Each thread's name as ps shows it: what it had at its first record, and each rename.
TEST_F(CaptureTest, ThreadNamesAreLoggedAsTheyWereGiven) {
  auto run = Capture("names");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  const EventLog& log = logs[0];
  EXPECT_EQ(weft::capture::ProcessName(log), "gateway");
  // The last name of every thread that did a round trip (sent something).
  std::map<int32_t, std::string> last;
  std::map<int32_t, int> renames;
  // In time order: a rename of another thread sits in the renaming thread's segment.
  std::vector<weft::capture::ThreadName> names = log.thread_names;
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
  for (const weft::capture::ThreadName& n : names) {
    last[n.tid] = n.name;
    renames[n.tid] += n.renamed;
  }
  std::multiset<std::string> senders;
  for (const Event& e : log.events) {
    if (e.op == EventOp::kSend && e.tid != log.header.pid) senders.insert(last[e.tid]);
  }
  // Two sends a round trip: worker-a one, worker-b two.
  EXPECT_EQ(senders, (std::multiset<std::string>{"worker-a", "worker-a", "worker-b", "worker-b",
                                                 "worker-b", "worker-b"}));
  EXPECT_EQ(last[log.header.pid], "gateway");
  EXPECT_EQ(renames[log.header.pid], 1);  // prctl, after the first round trip
  int total_renames = 0;
  for (const auto& [tid, n] : renames) total_renames += n;
  // A new thread logs its creation first (thread_calls.cc) under the name it inherited,
  // so worker-a's own naming is a rename too, as is worker-b's by the main thread.
  EXPECT_EQ(total_renames, 3);
}

TEST_F(CaptureTest, ThreadsOneAfterAnotherEachKeepTheirOwnRecords) {
  auto run = Capture("churn 50 10");
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  std::map<int32_t, int> sends;
  for (const Event& e : logs[0].events) sends[e.tid] += e.op == EventOp::kSend;
  sends.erase(logs[0].header.pid);
  ASSERT_EQ(sends.size(), 50u);
  for (const auto& [tid, n] : sends) EXPECT_EQ(n, 20) << tid;
}

// "name TID by CREATOR" lines of the pthreads scenario.
std::map<std::string, std::pair<int32_t, int32_t>> ThreadsReported(const std::string& output) {
  std::map<std::string, std::pair<int32_t, int32_t>> threads;
  std::istringstream in(output);
  std::string name;
  int32_t tid = 0, creator = 0;
  std::string by;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    if (words >> name >> tid >> by >> creator && by == "by") threads[name] = {tid, creator};
  }
  return threads;
}

// pthread_create is wrapped (thread_calls.cc): every thread the program made logs one
// thread record naming its creator, threads that end by pthread_exit or cancellation end
// as they would untraced, and a creation that fails logs nothing and keeps errno.
TEST_F(CaptureTest, ThreadCreationIsLoggedByEachNewThreadWithItsCreator) {
  auto run = Capture("pthreads");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("pthreads ok, failed creation 11\n"), std::string::npos)
      << run.output;  // EAGAIN
  std::map<std::string, std::pair<int32_t, int32_t>> reported = ThreadsReported(run.output);
  ASSERT_EQ(reported.size(), 5u) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  const EventLog& log = logs[0];
  std::map<int32_t, std::vector<const Event*>> created;  // new thread -> its thread records
  for (const Event* e : Calls(log, EventOp::kThread)) created[e->tid].push_back(e);
  ASSERT_EQ(created.size(), 5u);
  for (const auto& [name, tids] : reported) {
    auto [tid, creator] = tids;
    ASSERT_EQ(created[tid].size(), 1u) << name;
    const Event& e = *created[tid][0];
    EXPECT_EQ(e.result, creator) << name;
    EXPECT_EQ(e.fd, -1) << name;
    EXPECT_LE(e.entry_ns, e.exit_ns) << name;
    EXPECT_NE(FormatEvent(log, e).find(" thread fd -1 = " + std::to_string(creator)),
              std::string::npos)
        << FormatEvent(log, e);
    // The record is the thread's first: nothing it did comes before its start.
    for (const Event& other : log.events) {
      if (other.tid == tid && &other != &e) {
        EXPECT_GE(other.entry_ns, e.exit_ns) << name;
      }
    }
  }
  EXPECT_EQ(reported["nested"].second, reported["parent"].first);
  EXPECT_EQ(reported["returns"].second, log.header.pid);
  // The thread that returned made its round trips as its own tid.
  int sends = 0;
  for (const Event* e : Calls(log, EventOp::kSend)) sends += e->tid == reported["returns"].first;
  EXPECT_EQ(sends, 4);
}

// A thread marked with weft_capture_set_untraced (weft's own: the live-query agent and its
// bus) logs nothing, nor does the thread it creates, nor anyone's use of a descriptor it
// made; unmarked again, it is traced as before.
TEST_F(CaptureTest, ThreadsMarkedUntracedAreNotLogged) {
  auto run = Capture("untraced");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("untraced ok, marks 0 1\n"), std::string::npos) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  // The main thread's round trip (2 sends) and the marked thread's 4 after it unmarked
  // itself (8), on the two socketpairs they made; the marked thread's record (it was
  // created by a traced thread), none for the thread it created while marked.
  EXPECT_EQ(Calls(logs[0], EventOp::kSend).size(), 10u);
  EXPECT_EQ(Calls(logs[0], EventOp::kSocketpair).size(), 2u);
  EXPECT_EQ(Calls(logs[0], EventOp::kThread).size(), 1u);
}

TEST_F(CaptureTest, ProgramThatDupsOverTheLogDescriptorIsUnharmed) {
  auto run = Capture("dup2 100");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("dup2 1096 copies, 100 sends\n"), std::string::npos) << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(Calls(logs[0], EventOp::kDup).size(), 1096u);
  EXPECT_EQ(Calls(logs[0], EventOp::kClose).size(), 1096u);
  EXPECT_EQ(Calls(logs[0], EventOp::kSend).size(), 100u);
  EXPECT_EQ(Calls(logs[0], EventOp::kRecv).size(), 100u);
}

TEST_F(CaptureTest, NonBlockingPartialWritesAndEagainAreLoggedAsReturned) {
  auto run = Capture("nonblock");
  ASSERT_EQ(run.rc, 0) << run.output;
  int write_calls = 0, read_calls = 0;
  long written = 0, partial = 0, got = 0;
  ASSERT_EQ(std::sscanf(run.output.c_str(),
                        "nonblock %d writes %ld bytes %ld partial, %d reads %ld bytes",
                        &write_calls, &written, &partial, &read_calls, &got),
            5)
      << run.output;
  EXPECT_EQ(got, written);
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  auto writes = Calls(logs[0], EventOp::kWrite);
  auto reads = Calls(logs[0], EventOp::kRead);
  ASSERT_EQ(int(writes.size()), write_calls);
  ASSERT_EQ(int(reads.size()), read_calls);
  EXPECT_EQ(writes.back()->result, -EAGAIN);
  EXPECT_EQ(reads.back()->result, -EAGAIN);
  writes.pop_back();
  reads.pop_back();
  EXPECT_EQ(Bytes(writes), written);
  EXPECT_EQ(Bytes(reads), got);
  long logged_partial = 0;
  for (const Event* e : writes) logged_partial += e->result < 100'000;
  EXPECT_EQ(logged_partial, partial);
}

TEST_F(CaptureTest, InterruptedCallIsLoggedWithEintrAndItsWholeDuration) {
  auto run = Capture("eintr");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find(fmt::format("recv -1 errno {}\n", EINTR)), std::string::npos)
      << run.output;
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  auto receives = Calls(logs[0], EventOp::kRecv);
  ASSERT_EQ(receives.size(), 1u);
  EXPECT_EQ(receives[0]->result, -EINTR);
  EXPECT_GE(receives[0]->exit_ns - receives[0]->entry_ns, 19'000'000);  // blocked ~20 ms
}

TEST_F(CaptureTest, ExecWithAnEmptyEnvironmentIsStillTraced) {
  auto run = Capture("exec");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("exec-target ok\n"), std::string::npos);
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  const EventLog& before = logs[0].header.exec_index == 0 ? logs[0] : logs[1];
  const EventLog& after = &before == &logs[0] ? logs[1] : logs[0];
  EXPECT_EQ(before.header.pid, after.header.pid);
  EXPECT_EQ(after.header.exec_index, 1u);
  EXPECT_EQ(after.path,
            (fs::path(before.path).parent_path() / (std::to_string(before.header.pid) + ".1.wev"))
                .string());
  EXPECT_TRUE(before.loss.ended_by_exec);
  EXPECT_EQ(Calls(before, EventOp::kExec).size(), 1u);
  EXPECT_EQ(after.header.arguments, (std::vector<std::string>{"capture_probe", "exec-target"}));
  EXPECT_EQ(Calls(after, EventOp::kSend).size(), 6u);
  EXPECT_EQ(Calls(after, EventOp::kRecv).size(), 6u);
}

TEST_F(CaptureTest, PosixSpawnWithAnEmptyEnvironmentIsStillTraced) {
  auto run = Capture("spawn");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("exec-target ok\n"), std::string::npos);
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 2u);
  const EventLog& parent = logs[0].header.parent_pid == logs[1].header.pid ? logs[1] : logs[0];
  const EventLog& child = &parent == &logs[0] ? logs[1] : logs[0];
  EXPECT_EQ(child.header.parent_pid, parent.header.pid);
  ASSERT_EQ(Calls(parent, EventOp::kFork).size(), 1u);
  EXPECT_EQ(Calls(parent, EventOp::kFork)[0]->result, child.header.pid);
  EXPECT_EQ(Calls(parent, EventOp::kFork)[0]->arg, 1);  // a spawn
  EXPECT_EQ(child.header.arguments, (std::vector<std::string>{"capture_probe", "exec-target"}));
  EXPECT_EQ(Calls(child, EventOp::kSend).size(), 6u);
}

// Runs the probe under weft capture until it prints its first line, then sends `signal`
// to the probe (found by its log's name). Returns that line and weft capture's status.
std::pair<std::string, int> RunUntilReadyThenSignal(const fs::path& dir, const std::string& args,
                                                    int signal) {
  std::string command = std::string(WEFT_BINARY) + " capture -o " + dir.string() + " -- " +
                        CAPTURE_PROBE + " " + args;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  char line[256] = {};
  if (fgets(line, sizeof line, pipe) == nullptr) line[0] = '\0';
  auto paths = FindEventLogs(dir.string());
  if (paths.ok() && paths->size() == 1) {
    kill(std::stoi(fs::path((*paths)[0]).stem().string()), signal);
  }
  int status = pclose(pipe);
  return {line, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST_F(CaptureTest, KilledProgramLeavesEveryCommittedRecord) {
  auto [line, rc] = RunUntilReadyThenSignal(dir_, "kill 100 20", SIGKILL);
  EXPECT_EQ(line, "ready\n");
  EXPECT_EQ(rc, 128 + SIGKILL);  // weft capture exits as the program did
  std::vector<EventLog> logs = Logs(false);
  ASSERT_EQ(logs.size(), 1u);
  // Every send: records are in the file's shared mapping as soon as they are committed.
  EXPECT_EQ(Calls(logs[0], EventOp::kSend).size(), 121u);
  EXPECT_FALSE(logs[0].loss.has_end_record);
  EXPECT_EQ(logs[0].loss.truncated_bytes, 0u);
  EXPECT_EQ(logs[0].loss.corrupt_bytes, 0u);
}

TEST_F(CaptureTest, SigtermAtItsDefaultActionStillWritesTheLog) {
  for (std::string how : {"", " set-default"}) {
    fs::remove_all(dir_);
    auto [line, rc] = RunUntilReadyThenSignal(dir_, "sigterm 100" + how, SIGTERM);
    // The program sees SIG_DFL and dies of SIGTERM as it would untraced...
    EXPECT_EQ(line, "ready, SIGTERM default\n") << how;
    EXPECT_EQ(rc, 128 + SIGTERM) << how;
    // ...and its 100 buffered sends reached the log first, with the end record.
    std::vector<EventLog> logs = Logs();
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(Calls(logs[0], EventOp::kSend).size(), 100u) << how;
  }
}

// SIGTERM sent to weft capture itself reaches the program (and the program's log is whole).
TEST_F(CaptureTest, SigtermToWeftCaptureIsForwardedToTheProgram) {
  std::string command = std::string(WEFT_BINARY) + " capture -o " + dir_.string() + " -- " +
                        CAPTURE_PROBE + " sigterm 10";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[256] = {};
  ASSERT_NE(fgets(line, sizeof line, pipe), nullptr);
  auto paths = FindEventLogs(dir_.string());
  ASSERT_TRUE(paths.ok() && paths->size() == 1u);
  std::string probe = fs::path((*paths)[0]).stem().string();
  std::ifstream stat("/proc/" + probe + "/stat");
  std::string pid, name, state;
  pid_t weft = 0;
  stat >> pid >> name >> state >> weft;  // the probe's parent: weft capture
  ASSERT_GT(weft, 0);
  ASSERT_EQ(kill(weft, SIGTERM), 0);
  int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  std::vector<EventLog> logs = Logs();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(Calls(logs[0], EventOp::kSend).size(), 10u);
}

TEST_F(CaptureTest, SignalHandlerRecordsAreLoggedOrCountedNeverCorrupt) {
  auto run = Capture("signals 20000");
  ASSERT_EQ(run.rc, 0) << run.output;
  int handler_sends = 0;
  ASSERT_EQ(std::sscanf(run.output.c_str(), "signals 20000 round trips, %d handler sends",
                        &handler_sends),
            1)
      << run.output;
  auto paths = FindEventLogs(dir_.string());
  ASSERT_TRUE(paths.ok() && paths->size() == 1u);
  auto log = ReadEventLog((*paths)[0]);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->loss.truncated_bytes + log->loss.corrupt_bytes, 0u);
  ASSERT_TRUE(log->loss.has_end_record);
  std::map<int, long> sends_by_fd;
  for (const Event* e : Calls(*log, EventOp::kSend)) ++sends_by_fd[e->fd];
  auto pairs = Calls(*log, EventOp::kSocketpair);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(sends_by_fd[pairs[0]->fd], 20000);  // the main loop's: never dropped
  // The handler's: logged, or dropped (it interrupted a record on the same thread) and
  // counted.
  EXPECT_GT(handler_sends, 0);
  EXPECT_EQ(sends_by_fd[pairs[1]->fd] + long(log->loss.dropped_events), handler_sends);
}

TEST_F(CaptureTest, UnwritableDirectoryLeavesTheProgramAlone) {
  std::string probe = std::string(CAPTURE_PROBE) + " tcp 20";
  FILE* plain = popen(probe.c_str(), "r");
  char expected[256] = {};
  ASSERT_NE(fgets(expected, sizeof expected, plain), nullptr);
  EXPECT_EQ(WEXITSTATUS(pclose(plain)), 0);
  // /proc/self refuses new files even to root.
  std::string preloaded =
      std::string("LD_PRELOAD=") + PRELOAD_LIBRARY + " WEFT_CAPTURE_DIR=/proc/self " + probe;
  FILE* traced = popen(preloaded.c_str(), "r");
  char got[256] = {};
  ASSERT_NE(fgets(got, sizeof got, traced), nullptr);
  EXPECT_EQ(WEXITSTATUS(pclose(traced)), 0);
  EXPECT_STREQ(got, expected);
  auto run = Weft("capture -o /proc/self/weft -- " + probe);
  EXPECT_EQ(run.rc, 0);
  EXPECT_NE(run.output.find(expected), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("running the program untraced"), std::string::npos);
}

TEST_F(CaptureTest, LogThatHitsAFileSizeLimitIsCutNotTheProgram) {
  auto run = Capture("fsize 20000");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_NE(run.output.find("fsize 20000 round trips\n"), std::string::npos);
  auto paths = FindEventLogs(dir_.string());
  ASSERT_TRUE(paths.ok() && paths->size() == 1u);
  auto log = ReadEventLog((*paths)[0]);
  ASSERT_TRUE(log.ok());
  // Chunks of 4, 8, 16 and 32 KiB (wire::ChunkSize) fill the first 60 KiB; the next one, of
  // 64 KiB, would pass the 100 KiB limit, so it is never started (the file does not grow,
  // no page of it is ever written, no SIGXFSZ): its records and the end record are
  // dropped, and the program runs on.
  EXPECT_EQ(fs::file_size((*paths)[0]), 60u * 1024);
  EXPECT_FALSE(log->loss.has_end_record);
  EXPECT_EQ(log->blocks, 4u);
  EXPECT_GT(log->events.size(), 1800u);  // 32-byte calls and a few endpoint records
  EXPECT_LE(log->events.size(), 60u * 1024 / 32);
  EXPECT_EQ(log->loss.truncated_bytes + log->loss.corrupt_bytes, 0u);
}

// Bytes each process moved on each TCP connection, by direction: "local->peer" of the
// descriptor (named by its connect or accept endpoint record; dup copies, close ends).
std::map<std::string, std::pair<long, long>> BytesByConnection(const std::vector<EventLog>& logs) {
  std::map<std::string, std::pair<long, long>> sent_received;
  for (const EventLog& log : logs) {
    std::map<int, std::string> names;
    for (const Event& e : log.events) {
      if (e.op == EventOp::kEndpoint) {
        const Endpoint& ep = log.endpoints[e.endpoint];
        if (ep.kind == wire::kKindTcp && ep.peer.family != wire::kFamilyNone) {
          names[e.fd] = FormatAddress(ep.local) + "->" + FormatAddress(ep.peer);
        }
      } else if (e.op == EventOp::kClose) {
        names.erase(e.fd);
      } else if (e.op == EventOp::kDup && e.result >= 0 && names.count(e.fd)) {
        names[e.result] = names[e.fd];
      } else if (names.count(e.fd) && e.result > 0) {
        if (IsSendOp(e.op)) sent_received[names[e.fd]].first += e.result;
        if (IsRecvOp(e.op)) sent_received[names[e.fd]].second += e.result;
      }
    }
  }
  return sent_received;
}

// A real multi-tier application, every threading model of the testbed (threads, handoff,
// staged, event loop, worker pool): on every connection both ends were traced, and each
// byte one end sent is a byte the other end received.
TEST_F(CaptureTest, TestbedConnectionsBalanceEndToEnd) {
  SKIP_UNDER_ASAN();  // the traced program here is weft itself, built with the sanitizers
  std::string truth = dir_.string() + "-truth";
  auto run = Weft("capture -o " + dir_.string() + " -- " + WEFT_BINARY + " testbed run " +
                  WEFT_TOPOLOGIES + "/every-model.toml --duration 1s --concurrency 4 -o " + truth);
  fs::remove_all(truth);
  ASSERT_EQ(run.rc, 0) << run.output;
  std::vector<EventLog> logs = Logs();  // servers stopped by SIGTERM: all whole, none dropped
  ASSERT_EQ(logs.size(), 6u);           // the client and five servers
  auto bytes = BytesByConnection(logs);
  int connections = 0;
  for (const auto& [name, sent_received] : bytes) {
    size_t arrow = name.find("->");
    std::string reverse = name.substr(arrow + 2) + "->" + name.substr(0, arrow);
    ASSERT_TRUE(bytes.count(reverse)) << name << " has no other end";
    EXPECT_EQ(sent_received.first, bytes.at(reverse).second) << name;
    EXPECT_GT(sent_received.first + sent_received.second, 0) << name;
    ++connections;
  }
  EXPECT_GE(connections, 2 * (4 + 4));  // at least the client's sessions and one pool a tier
}

TEST_F(CaptureTest, StaticProgramIsRefused) {
  auto run = Weft("capture -o " + dir_.string() + " -- " + CAPTURE_STATIC_PROBE);
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.output, std::string("weft capture: ") + CAPTURE_STATIC_PROBE +
                            " is statically linked (no PT_INTERP): LD_PRELOAD cannot trace it; "
                            "capture needs a dynamically linked program\n");
}

}  // namespace
}  // namespace weft::capture
