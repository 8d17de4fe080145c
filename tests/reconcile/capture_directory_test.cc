// ReadCaptureDirectory past logs it cannot read: a stray file and a damaged header are
// named and skipped, the other logs are read and reconciled, and a directory none of
// whose logs can be read is still an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "reconcile/damaged_directory.h"
#include "reconcile/reconcile.h"

namespace weft::reconcile {
namespace {

namespace fs = std::filesystem;

class ReconcileDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("weft-reconcile-dir-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ReconcileDirectoryTest, UnreadableLogsAreNamedAndTheRestReconciled) {
  testing::DamagedDirectory bad = testing::WriteDamagedDirectory(dir_);
  ReadProblems problems;
  Result<std::vector<capture::EventLog>> logs = ReadCaptureDirectory(dir_.string(), &problems);
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  ASSERT_EQ(logs->size(), 2u);
  EXPECT_TRUE(problems.losses.empty());
  ASSERT_EQ(problems.unreadable.size(), 2u);
  // Sorted by path: 300.wev before stray.wev.
  EXPECT_EQ(problems.unreadable[0].rfind(bad.damaged + ": header checksum mismatch", 0), 0u)
      << problems.unreadable[0];
  EXPECT_EQ(problems.unreadable[1], bad.stray + ": not a weft event log (bad magic at byte 0)");

  ReconcileSummary summary;
  Result<Trace> trace = Reconcile(*logs, {.nodes = NodeNaming::kProcess}, &summary);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  summary.unreadable_logs = problems.unreadable.size();
  // The client's request and the server's reply, both ends traced.
  EXPECT_EQ(summary.messages, 2u);
  EXPECT_EQ(summary.matched, 1u);
  EXPECT_EQ(summary.bytes, 28u);
  ASSERT_EQ(trace->size(), 2u);
  const TraceColumns& c = trace->columns();
  EXPECT_EQ(c.kind[0], MessageKind::kCall);
  EXPECT_EQ(c.bytes[0], 11);
  EXPECT_EQ(trace->NodeName(c.sender[0]), "testhost:client[100]");
  EXPECT_EQ(trace->NodeName(c.receiver[0]), "testhost:server[200]");
  EXPECT_EQ(c.kind[1], MessageKind::kReturn);
  EXPECT_EQ(c.bytes[1], 17);
  EXPECT_NE(summary.OneLine().find(", 0 logs with losses, 2 unreadable logs skipped"),
            std::string::npos)
      << summary.OneLine();
}

TEST_F(ReconcileDirectoryTest, NoReadableLogIsAnError) {
  fs::create_directories(dir_ / "h");
  testing::WriteFile(dir_ / "h" / "1.wev", "x");
  testing::WriteFile(dir_ / "h" / "2.wev", "not a log either");
  ReadProblems problems;
  Result<std::vector<capture::EventLog>> logs = ReadCaptureDirectory(dir_.string(), &problems);
  ASSERT_FALSE(logs.ok());
  EXPECT_EQ(logs.status().message(),
            dir_.string() + ": none of its 2 event logs could be read; the first: " +
                (dir_ / "h" / "1.wev").string() + ": not a weft event log (bad magic at byte 0)");
  EXPECT_EQ(problems.unreadable.size(), 2u);
}

// A summary without unreadable logs says nothing of them (the line is as it always was).
TEST_F(ReconcileDirectoryTest, SummaryMentionsUnreadableLogsOnlyWhenThereAreAny) {
  ReconcileSummary summary;
  EXPECT_EQ(summary.OneLine().find("unreadable"), std::string::npos);
  summary.unreadable_logs = 1;
  EXPECT_NE(summary.OneLine().find(", 1 unreadable logs skipped"), std::string::npos);
}

}  // namespace
}  // namespace weft::reconcile
