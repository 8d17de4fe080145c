// weft infer --algo fragment and --algo auto as a user runs them on a proxy that set a
// request aside (docs/precise.md, the rule on requests set aside): the proxy reads q1, then
// q2 before acting on q1, forwards q2, answers it, and forwards q1 in q2's turn. With the
// SQL on every query fragment follows q1 to its forward and says so; without it, it gives
// q1's forward to q2 and warns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "weft_cli.h"

namespace {

using weft::testing::CommandRun;
using weft::testing::Weft;

// The trace, with `sql` (percent-encoded, as weft writes it) on every CALL, or without.
std::string WriteTrace(const std::filesystem::path& dir, bool sql) {
  const std::string path = (dir / (sql ? "with.txt" : "without.txt")).string();
  std::string text = R"(# weft text trace: timestamp op sender receiver id [key=value ...]
1.000010000 CALL_SENT vm:c1 vm:proxy q1 recv=1.000020000 stid=1 rtid=10 sql=select%201
1.000012000 CALL_SENT vm:c2 vm:proxy q2 recv=1.000025000 stid=2 rtid=10 sql=select%202
1.000030000 CALL_SENT vm:proxy vm:db f2 recv=1.000035000 stid=10 rtid=20 sql=select%202
1.000040000 RET_SENT vm:db vm:proxy f2 recv=1.000050000 stid=20 rtid=10
1.000051000 RET_SENT vm:proxy vm:c2 q2 recv=1.000060000 stid=10 rtid=2
1.000052000 CALL_SENT vm:proxy vm:db f1 recv=1.000055000 stid=10 rtid=20 sql=select%201
1.000060000 RET_SENT vm:db vm:proxy f1 recv=1.000070000 stid=20 rtid=10
1.000071000 RET_SENT vm:proxy vm:c1 q1 recv=1.000080000 stid=10 rtid=1
)";
  if (!sql) text = std::regex_replace(text, std::regex(" sql=select%20[12]"), "");
  std::ofstream(path) << text;
  return path;
}

TEST(FragmentCli, ARequestSetAsideIsFollowedToItsForwardAndSaid) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_fragment_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string paths = (dir / "p.json").string();
  for (bool sql : {true, false}) {
    SCOPED_TRACE(sql ? "with sql" : "without");
    const std::string trace = WriteTrace(dir, sql);
    CommandRun infer = Weft("infer " + trace + " --algo fragment -o " + paths);
    ASSERT_EQ(infer.rc, 0) << infer.output;
    EXPECT_EQ(infer.output.find("fragment: 1 requests set aside by their program or read "
                                "together with another were followed to the call that "
                                "forwarded them") != std::string::npos,
              sql)
        << infer.output;
    EXPECT_EQ(infer.output.find("fragment: warning: 1 requests were followed by another input "
                                "before their thread sent") != std::string::npos,
              !sql)
        << infer.output;
    // Each client's query with its own forward; without the SQL, c1's query alone and c2's
    // with both forwards.
    CommandRun table = Weft("paths " + paths);
    ASSERT_EQ(table.rc, 0) << table.output;
    for (const char* shape : {"vm:c1→vm:proxy→vm:db\n", "vm:c2→vm:proxy→vm:db\n"}) {
      EXPECT_EQ(table.output.find(shape) != std::string::npos, sql) << table.output;
    }
    for (const char* shape : {"vm:c1→vm:proxy\n", "vm:c2→vm:proxy[→vm:db] →vm:db\n"}) {
      EXPECT_EQ(table.output.find(shape) != std::string::npos, !sql) << table.output;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
