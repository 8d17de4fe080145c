// weft infer --algo nesting's switches as a user runs them on the shop at 4 requests in
// flight (docs/nesting.md, docs/microservices.md): the defaults (lookahead, three sibling
// passes, x = 4, z = 1 scaled by the calls per visit), --no-lookahead,
// --fixed-generic-penalty, and --paper-scoring with and without explicit penalties, each
// scored by weft eval against the trace's truth: exact lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "weft_cli.h"

namespace {

// The sanitizer build runs the same switches on a fifth of the trace, for memory errors,
// and leaves the figures to the Release build (at 40,000 messages the switches took 117 s
// under clang's sanitizers, a tenth of that build's test time).
constexpr const char* kMessages = weft::testing::kSanitized ? "8000" : "40000";
constexpr bool kCheckFigures = !weft::testing::kSanitized;

using weft::testing::CommandRun;
using weft::testing::Weft;

TEST(NestingCli, SwitchesOnTheShopAtFourInFlight) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_nesting_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace = (dir / "shop.weft").string(), paths = (dir / "n.paths.json").string();
  ASSERT_EQ(
      Weft(std::string("gen shop --parallelism 4 --messages ") + kMessages + " -o " + trace).rc, 0);
  struct Case {
    std::string flags, whole_trees;
  };
  for (const Case& c : {
           Case{"", "726 exact (51.89%)"},
           Case{"--no-lookahead", "465 exact (33.24%)"},
           // z = 1 at every node: the shop's frontend and checkout make about 11 and 15
           // calls per visit, where the scaled z is 0.86 and 0.9.
           Case{"--fixed-generic-penalty", "744 exact (53.18%)"},
           Case{"--paper-scoring", "8 exact (0.57%)"},
           // An explicit penalty wins over --paper-scoring's.
           Case{"--paper-scoring --overlap-penalty 4 --generic-child-penalty 1",
                "108 exact (7.72%)"},
       }) {
    CommandRun infer = Weft("infer " + trace + " --algo nesting " + c.flags + " -o " + paths);
    ASSERT_EQ(infer.rc, 0) << c.flags << "\n" << infer.output;
    CommandRun eval = Weft("eval --truth " + trace + " " + paths);
    ASSERT_EQ(eval.rc, 0) << eval.output;
    std::string expected = "requests (whole trees): " + (kCheckFigures ? c.whole_trees : "");
    EXPECT_NE(eval.output.find(expected), std::string::npos) << c.flags << "\n" << eval.output;
  }
  CommandRun bad = Weft("infer " + trace + " --algo nesting --overlap-penalty x -o " + paths);
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.output.find("--overlap-penalty"), std::string::npos) << bad.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
