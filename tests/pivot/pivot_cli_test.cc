// `weft pivot` as a user runs it, where no live process is reachable: every error is a
// one-line message and exit code 1, a bad query a diagnostic before anything is sent.
#include <gtest/gtest.h>

#include "weft_cli.h"

namespace weft {
namespace {

using testing::Weft;

TEST(PivotCliTest, ABadQueryIsADiagnosticWithACaret) {
  auto run = Weft("pivot install 'From a In A Selec a.id' --bus local --wait 10");
  EXPECT_EQ(run.rc, 1) << run.output;
  EXPECT_NE(run.output.find("weft pivot: query:1:"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("^"), std::string::npos) << run.output;
}

// The window is long enough that the bus's own flush finishes within it on a loaded
// machine (a 10 ms window timed out there once).
TEST(PivotCliTest, NoLiveProcessIsSaid) {
  auto install = Weft("pivot install 'From a In A Select COUNT' --bus local --wait 300");
  EXPECT_EQ(install.rc, 1);
  EXPECT_NE(install.output.find("no live process answered on bus local within 300 ms"),
            std::string::npos)
      << install.output;
  auto list = Weft("pivot list --bus local --wait 300");
  EXPECT_EQ(list.rc, 0) << list.output;
  EXPECT_EQ(list.output, "no live process answered on local within 300 ms\n");
  auto tracepoints = Weft("pivot tracepoints --bus local --wait 300");
  EXPECT_EQ(tracepoints.rc, 0) << tracepoints.output;
  EXPECT_NE(tracepoints.output.find("no tracepoints"), std::string::npos);
}

TEST(PivotCliTest, BadFlagsAreErrors) {
  auto interval = Weft("pivot install 'From a In A Select COUNT' --interval 0s --bus local");
  EXPECT_EQ(interval.rc, 1);
  EXPECT_NE(interval.output.find("--interval must be between 1ms and 1h"), std::string::npos)
      << interval.output;
  auto format = Weft("pivot install 'From a In A Select COUNT' --format xml --bus local");
  EXPECT_EQ(format.rc, 1) << format.output;
  auto id = Weft("pivot uninstall 'not an id' --bus local");
  EXPECT_EQ(id.rc, 1);
  EXPECT_NE(id.output.find("\"not an id\" is not a query id"), std::string::npos) << id.output;
  auto bus = Weft("pivot list --bus udp://127.0.0.1:1");
  EXPECT_EQ(bus.rc, 1);
  EXPECT_NE(bus.output.find("bad bus URL 'udp://127.0.0.1:1'"), std::string::npos) << bus.output;
  // A NATS server that is not there: said, not waited for forever.
  auto unreachable = Weft("pivot list --bus nats://127.0.0.1:1 --wait 10");
  EXPECT_EQ(unreachable.rc, 1);
  EXPECT_NE(unreachable.output.find("nats://127.0.0.1:1"), std::string::npos) << unreachable.output;
}

}  // namespace
}  // namespace weft
