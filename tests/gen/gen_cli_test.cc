// The gen, skew and drop subcommands end to end: exit codes and their one-line messages.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "trace/io.h"
#include "weft_cli.h"

namespace weft {
namespace {

using weft::testing::CommandRun;
using weft::testing::Weft;

class GenCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("weft_gen_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(GenCli, ListsScenariosAndPrintsConfigs) {
  CommandRun list = Weft("gen --list");
  EXPECT_EQ(list.rc, 0);
  EXPECT_EQ(std::count(list.output.begin(), list.output.end(), '\n'), 12);
  EXPECT_EQ(list.output.rfind("multitier ", 0), 0u);
  CommandRun config = Weft("gen multitier-added-delay --print-config");
  EXPECT_EQ(config.rc, 0);
  EXPECT_NE(config.output.find("extra = { WS2 = \"200ms\" }"), std::string::npos);
}

TEST_F(GenCli, UnknownScenarioListsTheKnownOnes) {
  CommandRun r = Weft("gen multitear -o " + Path("x.trace"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.output,
            "weft gen: unknown scenario 'multitear' (built-in: multitier, multitier-added-delay, "
            "multitier-wan, wide-area, children-parallel, children-0-2, children-d-cc, "
            "penalty-breaker, email, shop, booking, social; or give a "
            ".toml file)\n");
}

TEST_F(GenCli, GenSkewDropRoundTrip) {
  const std::string gen = Path("g.weft"), skew = Path("s.weft"), drop = Path("d.trace");
  CommandRun g = Weft("gen children-0-2 --messages 3000 --seed 9 -o " + gen);
  ASSERT_EQ(g.rc, 0) << g.output;
  EXPECT_NE(g.output.find(" messages, "), std::string::npos);
  Result<Trace> t = LoadTrace(gen);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_GE(t->size(), 3000u);
  EXPECT_EQ(g.output.rfind(std::to_string(t->size()) + " messages, ", 0), 0u) << g.output;

  CommandRun bad = Weft("skew " + gen + " -o " + skew + " --offset Q=+1ms");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.output, "weft skew: unknown node 'Q' (the trace has: A, B, C)\n");
  CommandRun s = Weft("skew " + gen + " -o " + skew + " --offset B=+30ms");
  ASSERT_EQ(s.rc, 0) << s.output;
  EXPECT_EQ(s.output, "skewed " + std::to_string(t->size()) +
                          " messages; 1 of 3 nodes shifted: "
                          "B=+30ms\n");

  CommandRun d = Weft("drop " + gen + " -o " + drop + " --rate 1e9");
  ASSERT_EQ(d.rc, 0) << d.output;
  EXPECT_EQ(
      d.output.rfind("dropped 0 of " + std::to_string(t->size()) + " messages (0.00%); 0 of ", 0),
      0u)
      << d.output;
  CommandRun bad_config = Weft("gen " + Path("missing.toml") + " -o " + gen);
  EXPECT_EQ(bad_config.rc, 1);
}

}  // namespace
}  // namespace weft
