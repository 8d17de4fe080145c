// Issue 8: malformed HTTP, a client that sends half a request and waits, a 1 GiB request
// body and a connection closed mid-message never hang or crash a program traced with
// protocol processors, and what it reads stays exactly what it reads untraced
// (http_probe.cc prints the size and hash of everything its server read).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "trace/io.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using weft::testing::CommandRun;
using weft::testing::Weft;

CommandRun Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class HttpRobustness : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    SKIP_UNDER_ASAN();
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-http-" + std::to_string(getpid()) + "-" + GetParam());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(HttpRobustness, ReadsTheSameBytesTracedAndFinishes) {
  const std::string scenario = GetParam();
  // `timeout`: a hang fails the test instead of stopping the suite.
  CommandRun untraced = Shell("timeout 120 " + std::string(HTTP_PROBE) + " " + scenario);
  ASSERT_EQ(untraced.rc, 0) << untraced.output;
  // And with event isolation (capture --isolate): reads cut at request ends and held
  // bytes served later must give the program the very same bytes (size and hash).
  for (const std::string isolate : {" --no-isolate", " --isolate"}) {
    SCOPED_TRACE("capture" + isolate);
    fs::remove_all(dir_);
    CommandRun traced = Weft("capture -o " + dir_.string() + " --protocols auto" + isolate +
                             " -- timeout 120 " + HTTP_PROBE + " " + scenario);
    ASSERT_EQ(traced.rc, 0) << traced.output;
    EXPECT_NE(traced.output.find(untraced.output), std::string::npos)
        << "untraced: " << untraced.output << "traced: " << traced.output;

    std::string run = (dir_ / "run.weft").string();
    CommandRun reconciled = Weft("reconcile " + dir_.string() + " -o " + run);
    ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
    Result<Trace> trace = LoadTrace(run);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    // The client's bytes arrive whole at the server, however the processor cut them.
    int64_t bytes = 0;
    size_t requests = 0;
    const TraceColumns& c = trace->columns();
    for (size_t i = 0; i < trace->size(); ++i) {
      if (c.kind[i] != MessageKind::kCall) continue;
      bytes += c.bytes[i];
      ++requests;
    }
    uint64_t untraced_bytes = std::stoull(untraced.output.substr(scenario.size() + 1));
    EXPECT_EQ(uint64_t(bytes), untraced_bytes);
    if (scenario == "pipelined") {
      EXPECT_EQ(requests, 50u);  // one message per request
    } else if (scenario == "big") {
      EXPECT_EQ(requests, 1u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, HttpRobustness,
                         ::testing::Values("malformed", "half", "big", "cut", "pipelined"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

}  // namespace
}  // namespace weft
