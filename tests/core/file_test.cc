#include "core/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "core/piecewise_file_writer.h"

namespace weft {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid())))
      .string();
}

TEST(WriteFileTest, ReplacesARegularFileWhole) {
  std::string path = TempPath("weft-write-file");
  ASSERT_TRUE(WriteFile(path, "a longer first version").ok());
  ASSERT_TRUE(WriteFile(path, "second").ok());
  Result<std::string> back = ReadFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "second");
  std::filesystem::remove(path);
}

// `-o /dev/null` once replaced the device with a regular file (a temporary file renamed
// over it). A FIFO stands in for the device here: it must stay a FIFO and get the bytes.
TEST(WriteFileTest, WritesIntoAPipeOrDeviceInPlace) {
  std::string path = TempPath("weft-write-fifo");
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] {
    Result<std::string> r = ReadFile(path);
    if (r.ok()) got = *r;
  });
  Status written = WriteFile(path, "through the pipe");
  reader.join();
  EXPECT_TRUE(written.ok()) << written.message();
  EXPECT_EQ(got, "through the pipe");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  std::filesystem::remove(path);
}

TEST(PiecewiseFileWriterTest, WritesThePiecesInOrderAndReplacesOnlyOnFinish) {
  std::string path = TempPath("weft-piecewise");
  ASSERT_TRUE(WriteFile(path, "old").ok());
  std::string expected;
  {
    Result<std::unique_ptr<PiecewiseFileWriter>> writer = PiecewiseFileWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    // Many more pieces than may wait at once, of different sizes.
    for (int i = 0; i < 200; ++i) {
      std::string piece(size_t(i) * 997 % 70000, char('a' + i % 26));
      expected += piece;
      (*writer)->Append(std::move(piece));
    }
    EXPECT_EQ(*ReadFile(path), "old");  // not yet in place
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  EXPECT_EQ(*ReadFile(path), expected);
  std::filesystem::remove(path);
}

TEST(PiecewiseFileWriterTest, AnUnfinishedWriterLeavesTheOldFileAndNoTemporary) {
  std::string dir = TempPath("weft-piecewise-dir");
  std::filesystem::create_directories(dir);
  std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFile(path, "old").ok());
  {
    Result<std::unique_ptr<PiecewiseFileWriter>> writer = PiecewiseFileWriter::Open(path);
    ASSERT_TRUE(writer.ok());
    (*writer)->Append("new, but never finished");
  }
  EXPECT_EQ(*ReadFile(path), "old");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  std::filesystem::remove_all(dir);
}

TEST(PiecewiseFileWriterTest, AFailedWriteIsReportedByFinish) {
  // /dev/full is a device, written in place, and refuses every write.
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  Result<std::unique_ptr<PiecewiseFileWriter>> writer = PiecewiseFileWriter::Open("/dev/full");
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  for (int i = 0; i < 10; ++i) (*writer)->Append(std::string(1 << 16, 'x'));
  Status finished = (*writer)->Finish();
  EXPECT_EQ(finished.message(), "/dev/full: write failed: No space left on device");
  EXPECT_FALSE((*writer)->Finish().ok());
}

TEST(PiecewiseFileWriterTest, ANonexistentDirectoryIsAnError) {
  Result<std::unique_ptr<PiecewiseFileWriter>> writer =
      PiecewiseFileWriter::Open("/nonexistent-weft-dir/out.json");
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().message(), "/nonexistent-weft-dir/out.json: No such file or directory");
}

}  // namespace
}  // namespace weft
