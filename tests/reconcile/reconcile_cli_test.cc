// weft reconcile on small real program trees under weft capture: a pipe between two
// processes, a process killed with SIGKILL (its log has no end record and reconcile says
// so), Unix datagram sockets (capture_probe's, and util-linux logger's), and the
// command's errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "reconcile/damaged_directory.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft::reconcile {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

class ReconcileCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-reconcile-cli-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST_F(ReconcileCliTest, KilledShellIsReportedAndItsPipeStillReconciled) {
  SKIP_UNDER_ASAN();
  std::string capture = (dir_ / "cap").string(), trace_file = (dir_ / "run.weft").string();
  auto run = Weft("capture -o " + capture +
                  " -- sh -c 'dd if=/dev/zero bs=1000 count=5 status=none | wc -c; kill -9 $$'");
  ASSERT_EQ(run.rc, 137) << run.output;  // the shell's own SIGKILL, passed on
  auto reconciled = Weft("reconcile " + capture + " -o " + trace_file + " --nodes process");
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
  EXPECT_EQ(CountLines(reconciled.output, "1 logs with losses"), 1) << reconciled.output;
  EXPECT_EQ(
      CountLines(reconciled.output, "no end record (killed: every record written before is here)"),
      1)
      << reconciled.output;
  EXPECT_EQ(CountLines(reconciled.output, ", 1 pipes,"), 1) << reconciled.output;
  Result<Trace> trace = LoadTrace(trace_file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // However dd's writes and wc's reads interleaved, all 5000 bytes went from dd to wc.
  int64_t bytes = 0;
  const TraceColumns& c = trace->columns();
  for (size_t i = 0; i < trace->size(); ++i) {
    EXPECT_NE(trace->NodeName(c.sender[i]).find(":dd["), std::string_view::npos);
    EXPECT_NE(trace->NodeName(c.receiver[i]).find(":wc["), std::string_view::npos);
    EXPECT_EQ(c.kind[i], MessageKind::kMessage);
    bytes += c.bytes[i];
  }
  EXPECT_EQ(bytes, 5000);
  EXPECT_GE(trace->size(), 1u);
}

// Several capture directories (one per host, usually) make one trace.
TEST_F(ReconcileCliTest, SeveralDirectoriesMerge) {
  SKIP_UNDER_ASAN();
  std::string one = (dir_ / "one").string(), two = (dir_ / "two").string(),
              trace_file = (dir_ / "run.weft").string();
  ASSERT_EQ(
      Weft("capture -o " + one + " -- sh -c 'dd if=/dev/zero bs=1000 count=3 status=none | wc -c'")
          .rc,
      0);
  ASSERT_EQ(
      Weft("capture -o " + two + " -- sh -c 'dd if=/dev/zero bs=1000 count=4 status=none | wc -c'")
          .rc,
      0);
  auto reconciled = Weft("reconcile " + one + " " + two + " -o " + trace_file + " --nodes process");
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
  Result<Trace> trace = LoadTrace(trace_file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  int64_t bytes = 0;
  for (int64_t b : trace->columns().bytes) bytes += b;
  EXPECT_EQ(bytes, 7000);  // both pipes
  EXPECT_EQ(CountLines(reconciled.output, ", 2 pipes,"), 1) << reconciled.output;
}

// capture_probe unixdgram (see capture_probe.cc): every datagram is one message seen at
// both ends, between the right processes and endpoints, with the right kind and bytes;
// requests and their answers share call ids. With logger, each `logger -u PATH` run is one
// CALL from logger to the traced listener, with the bytes the listener says it got.
TEST_F(ReconcileCliTest, UnixDatagramSocketsReconcile) {
  SKIP_UNDER_ASAN();
  constexpr int kN = 25;
  const std::string logger = "/usr/bin/logger";
  bool with_logger = access(logger.c_str(), X_OK) == 0;
  std::string capture = (dir_ / "cap").string(), trace_file = (dir_ / "run.weft").string();
  std::string path =
      (fs::path(::testing::TempDir()) / ("weft-ud-" + std::to_string(getpid()))).string();
  auto run = Weft("capture -o " + capture + " -- " + CAPTURE_PROBE + " unixdgram " + path + " " +
                  std::to_string(kN) + (with_logger ? " " + logger : ""));
  ASSERT_EQ(run.rc, 0) << run.output;
  long logger_bytes = -1;
  size_t at = run.output.find("logger bytes ");
  ASSERT_NE(at, std::string::npos) << run.output;
  logger_bytes = std::stol(run.output.substr(at + 13));
  auto reconciled = Weft("reconcile " + capture + " -o " + trace_file + " --nodes process");
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
  int datagrams = 5 * kN + (with_logger ? kN : 0);  // req, answer, note, pair, back; logger
  std::string counts =
      fmt::format(", {} Unix datagrams ({} seen at both ends),", datagrams, datagrams);
  EXPECT_EQ(CountLines(reconciled.output, counts), 1) << reconciled.output;
  EXPECT_EQ(CountLines(reconciled.output,
                       ", 0 I/O events on other sockets skipped, 0 I/O events on unnamed"),
            1)
      << reconciled.output;
  Result<Trace> trace = LoadTrace(trace_file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // (kind, sender program, sender endpoint, receiver endpoint) -> messages, bytes
  std::map<std::tuple<MessageKind, std::string, std::string, std::string>, std::pair<int, int64_t>>
      groups;
  std::map<std::string, int> call_ids;  // of the request/answer exchange
  const TraceColumns& c = trace->columns();
  std::string server = "unix:" + path, client = "unix:" + path + ".c";
  for (size_t i = 0; i < trace->size(); ++i) {
    std::string sender(trace->NodeName(c.sender[i])), receiver(trace->NodeName(c.receiver[i]));
    EXPECT_NE(c.send_time[i], kNoTime) << i;
    EXPECT_NE(c.recv_time[i], kNoTime) << i;
    EXPECT_NE(sender, receiver) << i;  // parent and child, or logger and the server
    EXPECT_NE(receiver.find(":capture_probe["), std::string::npos) << receiver;
    std::string program =
        sender.substr(sender.find(':') + 1, sender.find('[') - sender.find(':') - 1);
    auto& group =
        groups[{c.kind[i], program, std::string(trace->strings().Get(c.sender_endpoint[i])),
                std::string(trace->strings().Get(c.receiver_endpoint[i]))}];
    ++group.first;
    group.second += c.bytes[i];
    if (program == "capture_probe" && c.kind[i] != MessageKind::kMessage &&
        trace->strings().Get(c.sender_endpoint[i]) != "unix:") {
      ++call_ids[std::string(trace->strings().Get(c.call_id[i]))];
    }
  }
  // Bytes of "<prefix><i>" for i < kN.
  auto bytes = [](size_t prefix) {
    int64_t sum = 0;
    for (int i = 0; i < kN; ++i) sum += int64_t(prefix + std::to_string(i).size());
    return sum;
  };
  using Group = std::tuple<MessageKind, std::string, std::string, std::string>;
  std::map<Group, std::pair<int, int64_t>> expected = {
      {{MessageKind::kCall, "capture_probe", client, server}, {kN, bytes(4)}},    // req-
      {{MessageKind::kReturn, "capture_probe", server, client}, {kN, bytes(7)}},  // answer-
      {{MessageKind::kCall, "capture_probe", "unix:", server}, {kN, bytes(5)}},   // note-
      {{MessageKind::kMessage, "capture_probe", "unix:", "unix:"},
       {2 * kN, bytes(5) * 2}},  // pair-, back-
  };
  if (with_logger) expected[{MessageKind::kCall, "logger", "unix:", server}] = {kN, logger_bytes};
  EXPECT_EQ(groups, expected);
  // Each request and its answer share a call id, one per exchange.
  EXPECT_EQ(call_ids.size(), size_t(kN));
  for (const auto& [id, n] : call_ids) EXPECT_EQ(n, 2) << id;
}

TEST_F(ReconcileCliTest, Errors) {
  auto missing = Weft("reconcile /nonexistent-weft-dir -o " + (dir_ / "x.weft").string());
  EXPECT_EQ(missing.rc, 1);
  EXPECT_EQ(missing.output, "weft reconcile: /nonexistent-weft-dir: not a directory\n");
  fs::create_directories(dir_);
  auto empty = Weft("reconcile " + dir_.string() + " -o " + (dir_ / "x.weft").string());
  EXPECT_EQ(empty.rc, 1);
  EXPECT_EQ(empty.output,
            "weft reconcile: " + dir_.string() + ": no event logs (*.wev) under it\n");
  auto naming = Weft("reconcile " + dir_.string() + " -o x.weft --nodes pod");
  EXPECT_EQ(naming.rc, 1);
  EXPECT_EQ(naming.output,
            "weft reconcile: node naming 'pod': expected host, process, thread or name\n");
}

// A stray file and a log with a damaged header: each is named on its own line, counted in
// the summary, and the other logs are reconciled (exit 0, both messages in the trace).
TEST_F(ReconcileCliTest, UnreadableLogsAreSkippedAndNamed) {
  testing::DamagedDirectory bad = testing::WriteDamagedDirectory(dir_ / "cap");
  std::string trace_file = (dir_ / "run.weft").string();
  auto run = Weft("reconcile " + (dir_ / "cap").string() + " -o " + trace_file);
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_EQ(CountLines(run.output,
                       "skipped: " + bad.stray + ": not a weft event log (bad magic at byte 0)\n"),
            1)
      << run.output;
  EXPECT_EQ(CountLines(run.output, "skipped: " + bad.damaged + ": header checksum mismatch"), 1)
      << run.output;
  EXPECT_EQ(CountLines(run.output, "2 logs: "), 1) << run.output;
  EXPECT_EQ(CountLines(run.output, ", 2 messages, 28 bytes,"), 1) << run.output;
  EXPECT_EQ(CountLines(run.output, ", 0 logs with losses, 2 unreadable logs skipped"), 1)
      << run.output;
  Result<Trace> trace = LoadTrace(trace_file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->size(), 2u);
  EXPECT_EQ(trace->columns().bytes[0], 11);
  EXPECT_EQ(trace->columns().bytes[1], 17);
}

}  // namespace
}  // namespace weft::reconcile

namespace weft::reconcile {
namespace {

// A shell pipeline forks a child per command and each child execs its program: reconcile
// links the shell to each child (FORK) and each child to the program it became (EXEC,
// same pid, another node under --nodes process), and writes them as text lines.
TEST_F(ReconcileCliTest, ForksAndExecsOfAShellPipelineAreLinked) {
  SKIP_UNDER_ASAN();
  std::string capture = (dir_ / "cap").string(), trace_file = (dir_ / "run.weft").string(),
              text_file = (dir_ / "run.trace").string();
  ASSERT_EQ(Weft("capture -o " + capture +
                 " -- sh -c 'dd if=/dev/zero bs=1000 count=2 status=none | wc -c'")
                .rc,
            0);
  auto reconciled = Weft("reconcile " + capture + " -o " + trace_file + " --nodes process");
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
  EXPECT_EQ(
      CountLines(reconciled.output, "2 forks and 2 execs linked to the processes they started"), 1)
      << reconciled.output;
  Result<Trace> trace = LoadTrace(trace_file);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // "host:program[pid]" as (program, pid).
  auto program = [](std::string_view n) {
    return std::string(n.substr(n.find(':') + 1, n.find('[') - n.find(':') - 1));
  };
  auto pid = [](std::string_view n) { return std::string(n.substr(n.find('['))); };
  int forks = 0;
  std::vector<std::string> programs;
  for (const ProcessLink& l : trace->process_links()) {
    std::string_view from = trace->NodeName(l.from), to = trace->NodeName(l.to);
    if (l.kind == ProcessLinkKind::kFork) {
      ++forks;
      EXPECT_EQ(program(from), program(to));  // the shell's child before its exec
      EXPECT_NE(pid(from), pid(to));
    } else {
      // The same pid after the exec: "host:sh[123]" became "host:dd[123]".
      EXPECT_EQ(pid(from), pid(to));
      EXPECT_EQ(l.from_thread, l.to_thread);
      programs.push_back(program(to));
    }
  }
  std::sort(programs.begin(), programs.end());
  EXPECT_EQ(forks, 2);
  EXPECT_EQ(programs, (std::vector<std::string>{"dd", "wc"}));
  ASSERT_EQ(Weft("convert " + trace_file + " -o " + text_file).rc, 0);
  Result<Trace> text = LoadTrace(text_file);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->process_links().size(), trace->process_links().size());
}

}  // namespace
}  // namespace weft::reconcile
