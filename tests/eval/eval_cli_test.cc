// weft infer / paths / eval as a user runs them: exact outputs and one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "paths/path_set_builder.h"
#include "paths/paths_file.h"
#include "trace/text_format.h"
#include "weft_cli.h"

namespace weft {
namespace {

using weft::testing::CommandRun;
using weft::testing::kSanitized;
using weft::testing::Weft;

// The system ran A→B→C→D twice.
constexpr std::string_view kTwoChains = R"(1.0 MSG_SENT A B recv=1.1 path=1 msg=1
1.2 MSG_SENT B C recv=1.3 path=1 msg=2 parent=1
1.4 MSG_SENT C D recv=1.5 path=1 msg=3 parent=2
2.0 MSG_SENT A B recv=2.1 path=2 msg=4
2.2 MSG_SENT B C recv=2.3 path=2 msg=5 parent=4
2.4 MSG_SENT C D recv=2.6 path=2 msg=6 parent=5
)";

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_eval_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(Path("run.trace")) << kTwoChains;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(std::string_view name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(EvalCli, InferPathsAndEvalTruthAgainstItself) {
  CommandRun infer =
      Weft("infer " + Path("run.trace") + " --algo truth -o " + Path("truth.paths.json"));
  ASSERT_EQ(infer.rc, 0) << infer.output;
  EXPECT_EQ(infer.output, "truth: 2 path instances of 1 patterns over 6 of 6 messages\n");

  CommandRun paths = Weft("paths " + Path("truth.paths.json"));
  ASSERT_EQ(paths.rc, 0) << paths.output;
  EXPECT_EQ(paths.output,
            Path("truth.paths.json") +
                ": 2 instances of 1 patterns (truth paths over a trace of 6 messages), by count\n"
                "rank     count   expected   share      mean       p50       p99  shape\n"
                "   1         2        2.0 100.00%     550ms     500ms     598ms  A→B→C→D\n"
                "messages_without_truth: 0\n");

  CommandRun json =
      Weft("eval --truth " + Path("run.trace") + " " + Path("truth.paths.json") + " --json");
  ASSERT_EQ(json.rc, 0) << json.output;
  nlohmann::json report = nlohmann::json::parse(json.output);
  for (const char* kind : {"patterns", "instances", "messages"}) {
    EXPECT_EQ(report[kind]["false_positives"], 0) << kind;
    EXPECT_EQ(report[kind]["false_negatives"], 0) << kind;
  }
  EXPECT_EQ(report["messages"]["correct"], 6);
  EXPECT_EQ(report["latency"]["max_latency_error"], 0.0);

  // The trace named as the run too (--trace) carries its own truth: the same report.
  CommandRun both = Weft("eval --truth " + Path("run.trace") + " --trace " + Path("run.trace") +
                         " " + Path("truth.paths.json") + " --json");
  ASSERT_EQ(both.rc, 0) << both.output;
  EXPECT_EQ(nlohmann::json::parse(both.output), report);
}

// Done means: truth against truth gives zero error on every built-in scenario, whether the
// truth is taken from the trace or from the paths file.
TEST_F(EvalCli, TruthAgainstTruthOnEveryScenario) {
  const int kMessages = kSanitized ? 1000 : 3000;  // 12 scenarios, 48 runs of the weft binary
  CommandRun list = Weft("gen --list");
  ASSERT_EQ(list.rc, 0) << list.output;
  std::vector<std::string> scenarios;
  std::istringstream lines(list.output);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != ' ') scenarios.push_back(line.substr(0, line.find(' ')));
  }
  ASSERT_GE(scenarios.size(), 7u) << list.output;
  for (const std::string& scenario : scenarios) {
    SCOPED_TRACE(scenario);
    std::string trace = Path(scenario + ".weft"), paths = Path(scenario + ".paths.json");
    ASSERT_EQ(
        Weft("gen " + scenario + " --messages " + std::to_string(kMessages) + " -o " + trace).rc,
        0);
    ASSERT_EQ(Weft("infer " + trace + " --algo truth -o " + paths).rc, 0);
    for (const std::string& truth : {trace, paths}) {
      CommandRun run = Weft("eval --json --truth " + truth + " " + paths);
      ASSERT_EQ(run.rc, 0) << run.output;
      nlohmann::json report = nlohmann::json::parse(run.output);
      EXPECT_GE(report["messages"]["truth"].get<int>(), kMessages);
      EXPECT_EQ(report["messages"]["correct"], report["messages"]["truth"]);
      for (const char* kind : {"patterns", "instances", "messages"}) {
        EXPECT_EQ(report[kind]["false_positives"], 0) << kind;
        EXPECT_EQ(report[kind]["false_negatives"], 0) << kind;
      }
      for (const auto& point : report["top_n"])
        EXPECT_EQ(point["false_negatives"], nlohmann::json({0, 0, 0}));
      EXPECT_EQ(report["latency"]["max_latency_error"], 0.0);
      EXPECT_EQ(report["latency"]["max_delay_error"], 0.0);
    }
  }
}

TEST_F(EvalCli, EvalOfAWrongInference) {
  // Project 5's example: one A→B→C→D found, then A→B and C→D separately.
  Result<Trace> trace = ParseTextTrace(kTwoChains, "run.trace");
  ASSERT_TRUE(trace.ok());
  PathSetBuilder builder(*trace, "hand");
  std::vector<MessageId> chain{MessageId(0), MessageId(1), MessageId(2)};
  ASSERT_TRUE(builder.AddInstance(chain, std::vector<int32_t>{-1, 0, 1}).ok());
  ASSERT_TRUE(
      builder.AddInstance(std::vector<MessageId>{MessageId(3)}, std::vector<int32_t>{-1}).ok());
  ASSERT_TRUE(
      builder.AddInstance(std::vector<MessageId>{MessageId(5)}, std::vector<int32_t>{-1}).ok());
  ASSERT_TRUE(WritePaths({std::move(builder).Finish()}, Path("hand.paths.json")).ok());

  CommandRun run =
      Weft("eval --truth " + Path("run.trace") + " " + Path("hand.paths.json") + " --top 2");
  ASSERT_EQ(run.rc, 0) << run.output;
  EXPECT_EQ(run.output,
            "hand paths against truth paths over a trace of 6 messages\n"
            "0 messages have no ground truth and are not counted (0 of them in inferred "
            "instances); 1 truth "
            "messages were left out of every inferred instance\n"
            "\n"
            "counted by           truth  inferred   correct false pos false neg  FP rate  FN rate\n"
            "path patterns            1         3         1         2         0   66.67%    0.00%\n"
            "path instances           2         3         1         2         1   66.67%   50.00%\n"
            "messages                 6         5         3         2         3   40.00%   50.00%\n"
            "\n"
            "requests (whole trees): 1 exact (50.00%), 0 wrong parents (0.00%), 1 orphaned "
            "(50.00%), 0 mis-stitched "
            "(0.00%) of 2\n"
            "parent links: 4 of 6 messages other than returns have their true parent (66.67%)\n"
            "\n"
            "top-N false negatives (Figure 17): truth ranked by count, inferred by count\n"
            "    N          FN    FN 2.00%    FN 6.00%      FN/N\n"
            "    1           1           0           0   100.00%\n"
            "    2           0           0           0     0.00%\n"
            "\n"
            "latency error of the 1 correctly inferred patterns (weighted by truth count)\n"
            "  end-to-end latency: mean 9.09%  max 9.09%\n"
            "  element delays:     mean 0.00%  max 0.00%\n");
}

TEST_F(EvalCli, OneLineErrorsAndNonZeroExit) {
  CommandRun unknown =
      Weft("infer " + Path("run.trace") + " --algo nesting2 -o " + Path("x.paths.json"));
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_EQ(unknown.output,
            "weft infer: unknown algorithm 'nesting2' (available: truth, nesting, convolution, "
            "linking, thread, fragment, auto, latest-open, earliest-open)\n");

  std::ofstream(Path("other.trace")) << "1.0 MSG_SENT A B path=1\n";
  ASSERT_EQ(
      Weft("infer " + Path("other.trace") + " --algo truth -o " + Path("other.paths.json")).rc, 0);
  CommandRun mismatch = Weft("eval --truth " + Path("run.trace") + " " + Path("other.paths.json"));
  EXPECT_EQ(mismatch.rc, 1);
  EXPECT_EQ(mismatch.output.rfind(
                "weft eval: " + Path("other.paths.json") + " against " + Path("run.trace") +
                    ": the truth and the inferred paths come from different traces (truth: 6 "
                    "messages",
                0),
            0u)
      << mismatch.output;
  EXPECT_EQ(std::count(mismatch.output.begin(), mismatch.output.end(), '\n'), 1);

  std::ofstream(Path("bad.paths.json")) << "{\"format\": \"weft.paths\", \"version\": 1,";
  CommandRun bad = Weft("paths " + Path("bad.paths.json"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(
      bad.output,
      "weft paths: " + Path("bad.paths.json") +
          ": byte 39: not valid JSON (syntax error while parsing object key - unexpected end of "
          "input; expected string literal)\n");

  std::ofstream(Path("no_truth.trace")) << "1.0 MSG_SENT A B\n";
  CommandRun no_truth =
      Weft("eval --truth " + Path("no_truth.trace") + " " + Path("other.paths.json"));
  EXPECT_EQ(no_truth.rc, 1);
  EXPECT_EQ(no_truth.output, "weft eval: " + Path("no_truth.trace") +
                                 ": the trace has no ground truth (no message has a path id)\n");

  CommandRun sort = Weft("paths " + Path("other.paths.json") + " --sort size");
  EXPECT_EQ(sort.rc, 1);
  EXPECT_EQ(sort.output,
            "weft paths: unknown order 'size' (available: count, latency, expected, probability, "
            "expected-sqrt)\n");

  CommandRun help = Weft("eval --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.output.find("weft eval --truth mt.weft truth.paths.json"), std::string::npos);
}

}  // namespace
}  // namespace weft
