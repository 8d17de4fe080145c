// Helpers shared by the testbed's integration tests: scratch directories, reading a file
// whole, and checking that a run left no child process behind.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace weft::testbed {

// An empty directory of its own under the test's temporary directory.
inline std::string TempDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "weft_testbed_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// RunTestbed reaps every server it forked: the test process has no child left.
inline void ExpectNoChildren() {
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace weft::testbed
