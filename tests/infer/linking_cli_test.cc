// weft infer --algo linking, weft paths, weft eval and weft report --timeline and
// --node-delays as a user runs them on the wide-area scenario (docs/linking.md): exact
// lines, files and one-line errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "weft_cli.h"

namespace {

using weft::testing::CommandRun;
using weft::testing::Weft;

TEST(LinkingCli, WideAreaPathsEvalAndReports) {
  SKIP_FIGURES_UNDER_SANITIZERS();
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_linking_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "wa.weft").string(), paths = (dir / "wa.paths.json").string();
  ASSERT_EQ(Weft("gen wide-area -o " + trace).rc, 0);
  CommandRun infer = Weft("infer " + trace + " --algo linking -o " + paths);
  ASSERT_EQ(infer.rc, 0) << infer.output;
  EXPECT_NE(
      infer.output.find("8930 clients aggregated; calls paired with their returns (RPC mode)"),
      std::string::npos)
      << infer.output;

  CommandRun table = Weft("paths " + paths + " --top 4 --sort expected");
  ASSERT_EQ(table.rc, 0) << table.output;
  EXPECT_NE(table.output.find("   4       781      740.0   6.47%     111ms     111ms     138ms  "
                              "CLIENT→P1[→DNS] →WEB1\n"),
            std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find(
                "  P1                   P3                         +311ms  (1834 messages)\n"),
            std::string::npos)
      << table.output;
  EXPECT_EQ(Weft("paths " + paths + " --sort expected-sqrt").rc, 0);

  CommandRun eval = Weft("eval --truth " + trace + " " + paths + " --top 20");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_NE(eval.output.find("path patterns           22       123        22       101         0"),
            std::string::npos)
      << eval.output;

  CommandRun timeline = Weft("report " + paths + " --timeline - --top 6 --sort expected");
  ASSERT_EQ(timeline.rc, 0) << timeline.output;
  EXPECT_NE(timeline.output.find("       1.962     65.433  call P1 → P3                            "
                                 "          1.962       63.471\n"),
            std::string::npos)
      << timeline.output;
  CommandRun svg = Weft("report " + paths + " --timeline " + (dir / "figs").string() + " --top 2");
  ASSERT_EQ(svg.rc, 0) << svg.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "figs" / "timeline-002.svg"));
  CommandRun delays = Weft("report " + paths + " --node-delays");
  ASSERT_EQ(delays.rc, 0);
  EXPECT_NE(delays.output.find("\nP3: mean 832us"), std::string::npos) << delays.output;

  CommandRun bad = Weft("infer " + trace + " --algo linking --min-link 0.9 -o " + paths);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.output, "weft infer: " + trace + ": min_link must be in (0, 0.5)\n");
  CommandRun order = Weft("report " + paths + " --timeline - --sort size");
  EXPECT_EQ(order.rc, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
