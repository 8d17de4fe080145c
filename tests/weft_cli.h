// Runs the weft binary as a user would, for the tests that check its output (those
// declared RUNS_CLI in tests/CMakeLists.txt, which defines WEFT_BINARY).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "sanitizer_build.h"

namespace weft::testing {

struct CommandRun {
  int rc;              // exit code, -1 if killed by a signal
  std::string output;  // stdout and stderr together
};

// `command` run by the shell: its exit code and its stdout and stderr together.
inline CommandRun Shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CommandRun Weft(const std::string& args) {
  return Shell(std::string(WEFT_BINARY) + " " + args);
}

}  // namespace weft::testing
