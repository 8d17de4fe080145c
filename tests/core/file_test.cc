#include "core/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

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

}  // namespace
}  // namespace weft
