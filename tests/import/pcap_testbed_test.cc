// A sniffer against the preload library on the same run: the three-tier testbed at 8
// clients runs under weft capture while tcpdump records the loopback interface; the
// imported pcap must hold exactly the messages the reconciled capture holds (count and
// bytes, per direction of each connection, connections matched by their address pair),
// the testbed's own truth must label every request of the pcap trace, and nesting on it
// is scored with weft eval.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "eval/align.h"
#include "testbed/truth.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Shell(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// tcpdump on lo, writing `pcap`, its stderr in `log`; stopped (SIGINT, then waited for)
// by Stop or the destructor.
class Tcpdump {
 public:
  // `filter`: a pcap filter expression, applied in the kernel.
  Tcpdump(const fs::path& pcap, const fs::path& log, const std::string& filter) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      dup2(fd, 1);
      // A 64 MiB kernel buffer and immediate delivery: nothing dropped, nothing left in
      // an unfinished ring block when it stops.
      execlp("tcpdump", "tcpdump", "-i", "lo", "--immediate-mode", "-B", "65536", "-Z", "root",
             "-w", pcap.c_str(), filter.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Tcpdump() { Stop(); }
  // Waits until tcpdump says it is listening; false if it exited or took over 20 s.
  bool WaitListening() {
    for (int i = 0; i < 200; ++i) {
      if (ReadFile(log_).find("listening on") != std::string::npos) return true;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // Stops it; its stderr (the packet counts).
  std::string Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGINT);
      int status;
      waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    return ReadFile(log_);
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
};

// Per direction of each connection (sender endpoint, receiver endpoint): the sizes of its
// messages in time order.
using Directions = std::map<std::pair<std::string, std::string>, std::vector<int64_t>>;
Directions MessagesByDirection(const Trace& trace) {
  Directions out;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.kind[i] == MessageKind::kMessage) continue;
    out[{std::string(trace.strings().Get(c.sender_endpoint[i])),
         std::string(trace.strings().Get(c.receiver_endpoint[i]))}]
        .push_back(c.bytes[i]);
  }
  return out;
}

class PcapTestbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / ("weft-pcap-" + std::to_string(getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "kept " << base_.string() << "\n";
    } else {
      fs::remove_all(base_);
    }
  }
  fs::path base_;
};

// A port the kernel had free a moment ago.
uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

TEST_F(PcapTestbedTest, PcapHasTheMessagesOfTheCaptureAndNestingIsScored) {
  SKIP_UNDER_ASAN();
  if (geteuid() != 0) GTEST_SKIP() << "tcpdump needs root to capture on lo";
  if (Shell("command -v tcpdump >/dev/null") != 0) GTEST_SKIP() << "tcpdump is not installed";
  const fs::path pcap = base_ / "testbed.pcap", truth = base_ / "truth",
                 capture = base_ / "capture", topology = base_ / "three-tier.toml";
  // Other programs' traffic on lo (tests running beside this one) would crowd tcpdump out:
  // the servers get ports picked here, and the kernel passes tcpdump only theirs. Packets
  // dropped by the kernel would be gaps, and a port taken meanwhile fails the run: one
  // retry of the whole run, then fail.
  bool clean = false;
  for (int attempt = 0; attempt < 2 && !clean; ++attempt) {
    fs::remove_all(truth);
    fs::remove_all(capture);
    // A server's port is its [[tier.server]] table's: one appended to each tier's section.
    std::string text = ReadFile(std::string(WEFT_TOPOLOGIES) + "/three-tier.toml"), toml, filter;
    const std::string tier_header = "\n[[tier]]\n";
    std::vector<std::string> sections;
    for (size_t at = 0, next; at != std::string::npos; at = next) {
      next = text.find(tier_header, at + 1);
      sections.push_back(text.substr(at, next == std::string::npos ? next : next - at));
    }
    ASSERT_EQ(sections.size(), 4u);  // the header, web, app, db
    toml = sections[0];
    for (size_t i = 1; i < sections.size(); ++i) {
      uint16_t port = FreePort();
      ASSERT_NE(port, 0);
      toml += sections[i] + "\n[[tier.server]]\nport = " + std::to_string(port) + "\n";
      filter += (filter.empty() ? "" : " or ") + ("tcp port " + std::to_string(port));
    }
    std::ofstream(topology) << toml;
    Tcpdump tcpdump(pcap, base_ / "tcpdump.log", filter);
    if (!tcpdump.WaitListening()) {
      GTEST_SKIP() << "tcpdump cannot capture on lo: " << tcpdump.Stop();
    }
    auto traced = Weft("capture -o " + capture.string() + " -- " + WEFT_BINARY + " testbed run " +
                       topology.string() + " --duration 2s --concurrency 8 -o " + truth.string());
    std::string counts = tcpdump.Stop();
    clean = traced.rc == 0 && counts.find("\n0 packets dropped by kernel") != std::string::npos;
    if (!clean) std::cerr << "trying again: " << traced.output << counts;
  }
  ASSERT_TRUE(clean) << "tcpdump dropped packets, or the testbed failed, twice";

  const std::string pcap_trace = (base_ / "pcap.weft").string(),
                    capture_trace = (base_ / "capture.weft").string();
  auto imported = Weft("import pcap " + pcap.string() + " -o " + pcap_trace);
  ASSERT_EQ(imported.rc, 0) << imported.output;
  std::cerr << imported.output;
  auto reconciled = Weft("reconcile " + capture.string() + " -o " + capture_trace);
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;

  Result<Trace> from_pcap = LoadTrace(pcap_trace), from_capture = LoadTrace(capture_trace);
  ASSERT_TRUE(from_pcap.ok() && from_capture.ok());
  Directions sniffed = MessagesByDirection(*from_pcap), traced = MessagesByDirection(*from_capture);
  EXPECT_GE(traced.size(), 2u * 9u);  // 8 clients' connections and the pools' at least
  EXPECT_EQ(sniffed.size(), traced.size());
  size_t messages = 0;
  for (const auto& [direction, sizes] : traced) {
    auto it = sniffed.find(direction);
    ASSERT_NE(it, sniffed.end()) << direction.first << " -> " << direction.second;
    EXPECT_EQ(it->second, sizes) << direction.first << " -> " << direction.second;
    messages += sizes.size();
  }
  EXPECT_GT(messages, 10000u);
  EXPECT_EQ(from_pcap->size(), from_capture->size());

  // The servers' truth, matched message by message, labels every request of the pcap trace.
  Result<Trace> truth_trace = testbed::BuildTruthTrace(truth.string());
  ASSERT_TRUE(truth_trace.ok()) << truth_trace.status().message();
  AlignSummary aligned;
  Result<Trace> labelled = CopyTruth(*truth_trace, *from_pcap, &aligned);
  ASSERT_TRUE(labelled.ok()) << labelled.status().message();
  EXPECT_EQ(aligned.matched, aligned.truth_messages);
  EXPECT_EQ(aligned.labelled, aligned.requests);
  EXPECT_GT(aligned.requests, 1000u);

  // Nesting on what the sniffer saw, scored with weft eval against the testbed's truth.
  for (const char* nodes : {"ip-port", "ip"}) {
    const std::string trace = (base_ / (std::string(nodes) + ".weft")).string(),
                      paths = (base_ / (std::string(nodes) + ".paths.json")).string();
    ASSERT_EQ(Weft("import pcap " + pcap.string() + " -o " + trace + " --nodes " + nodes).rc, 0);
    auto inferred = Weft("infer " + trace + " --algo nesting -o " + paths);
    ASSERT_EQ(inferred.rc, 0) << inferred.output;
    auto scored = Weft("eval --truth " + truth.string() + " --trace " + trace + " " + paths);
    ASSERT_EQ(scored.rc, 0) << scored.output;
    size_t at = scored.output.find("requests (whole trees)");
    ASSERT_NE(at, std::string::npos) << scored.output;
    std::cerr << "nesting, --nodes " << nodes << ": "
              << scored.output.substr(at, scored.output.find('\n', at) - at) << "\n";
  }
}

}  // namespace
}  // namespace weft
