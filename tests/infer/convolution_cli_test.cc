// weft infer --algo convolution, weft paths, weft eval and weft report --dot as a user runs
// them on the email scenario (docs/convolution.md): exact lines and one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "weft_cli.h"

namespace {

using weft::testing::CommandRun;
using weft::testing::Weft;

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(ConvolutionCli, EmailGraphEvalAndDot) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("weft_convolution_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string trace = (dir / "email.weft").string(), paths = (dir / "conv.paths.json").string();
  ASSERT_EQ(Weft("gen email -o " + trace).rc, 0);
  CommandRun infer =
      Weft("infer " + trace + " --algo convolution --quantum 1s --tolerance 500ms -o " + paths);
  ASSERT_EQ(infer.rc, 0) << infer.output;
  EXPECT_NE(infer.output.find("convolution: 8 roots,"), std::string::npos) << infer.output;

  CommandRun table = Weft("paths " + paths);
  ASSERT_EQ(table.rc, 0) << table.output;
  EXPECT_NE(table.output.find("    RELAY1  <- GW1  821 msgs  delays 981ms (726), 11.9s (95)\n"),
            std::string::npos)
      << table.output;

  CommandRun eval = Weft("eval --truth " + trace + " " + paths);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_EQ(FirstLine(eval.output),
            "causal graph vs truth (edges with >= 100 messages): 9 truth edges, 9 inferred; false "
            "negatives 0 "
            "(0.0%), false positives 0 (0.0%); max delay error 140ms");

  CommandRun dot = Weft("report " + paths + " --dot - --min-messages 100");
  ASSERT_EQ(dot.rc, 0) << dot.output;
  EXPECT_EQ(FirstLine(dot.output), "digraph causal_graph {");
  EXPECT_NE(dot.output.find("[label=\"821: 981ms, 11.9s\"]"), std::string::npos) << dot.output;
  EXPECT_EQ(dot.output.find("RELAY4"), std::string::npos) << "rare edges are left out";

  CommandRun tiny = Weft("infer " + trace + " --algo convolution --quantum 1ns -o " + paths);
  EXPECT_EQ(tiny.rc, 1);
  EXPECT_EQ(tiny.output,
            "weft infer: " + trace +
                ": a signal of 172626985686735 quanta (1ns over 47h57m) needs 8560755973.5 MiB for "
                "its FFTs, more "
                "than the limit of 4096.0 MiB; use a larger quantum or a shorter trace\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
