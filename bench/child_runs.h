// What the overhead benchmarks share: running a child (the program under a tracer, or the
// tracer's own run) for its output, and the median of repeated runs.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace weft::bench {

// Runs `command` (each part quoted) and returns its stdout, and its stderr too with
// `with_stderr` (else thrown away).
inline std::string RunChild(const std::vector<std::string>& command, bool with_stderr = false) {
  std::string line;
  for (const std::string& part : command) line += "'" + part + "' ";
  FILE* pipe = popen((line + (with_stderr ? "2>&1" : "2>/dev/null")).c_str(), "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  pclose(pipe);
  return out;
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

}  // namespace weft::bench
