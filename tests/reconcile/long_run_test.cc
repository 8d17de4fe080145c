// Issue 7's acceptance run: every message of a 60-second testbed run at concurrency 32,
// captured and reconciled, matched one for one with the truth the servers logged (by
// endpoints and byte offsets, eval/align.h): the right sender and receiver, both
// timestamps, on connections reused for thousands of requests and pipelined (the
// pipelined topology: up to 8 calls in flight on one connection, HTTP and framed tiers;
// capture's protocol processors cut one message per request).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include "eval/align.h"
#include "testbed/truth.h"
#include "trace/io.h"
#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using weft::testing::Weft;

TEST(LongCapturedRun, EveryMessageOfSixtySecondsAtConcurrency32) {
  SKIP_UNDER_ASAN();
  fs::path base = fs::path(::testing::TempDir()) / ("weft-long-run-" + std::to_string(getpid()));
  fs::remove_all(base);
  std::string capture = (base / "capture").string(), truth_dir = (base / "truth").string(),
              run = (base / "run.weft").string();
  auto traced =
      Weft("capture -o " + capture + " -- " + WEFT_BINARY + " testbed run " + WEFT_TOPOLOGIES +
           "/pipelined.toml --duration 60s --concurrency 32 -o " + truth_dir);
  ASSERT_EQ(traced.rc, 0) << traced.output;
  auto reconciled = Weft("reconcile " + capture + " -o " + run + " --nodes process");
  ASSERT_EQ(reconciled.rc, 0) << reconciled.output;
  std::cerr << traced.output << reconciled.output;

  Result<Trace> truth = testbed::BuildTruthTrace(truth_dir);
  Result<Trace> trace = LoadTrace(run);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  AlignSummary aligned;
  Result<Trace> labelled = CopyTruth(*truth, *trace, &aligned);
  ASSERT_TRUE(labelled.ok()) << labelled.status().message();
  std::cerr << aligned.OneLine() << "\n";
  EXPECT_GT(aligned.requests, 20'000u);
  EXPECT_EQ(aligned.matched, aligned.truth_messages);  // every truth message, in place and size
  EXPECT_EQ(aligned.run_messages, aligned.truth_messages);  // and nothing else
  EXPECT_EQ(aligned.labelled, aligned.requests);

  // Both timestamps on every message, and the same kind and node pair as the truth says.
  const TraceColumns& c = trace->columns();
  size_t both = 0;
  std::set<std::string> endpoints;
  for (size_t i = 0; i < trace->size(); ++i) {
    both += c.send_time[i] != kNoTime && c.recv_time[i] != kNoTime;
    endpoints.insert(std::string(trace->strings().Get(c.sender_endpoint[i])));
  }
  EXPECT_EQ(both, trace->size());
  // Pooled connections carry many requests: far fewer endpoints than requests.
  EXPECT_LT(endpoints.size(), aligned.requests / 100);
  fs::remove_all(base);
}

}  // namespace
}  // namespace weft
