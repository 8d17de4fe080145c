// Reading what `valgrind --tool=callgrind --separate-threads=yes` writes: one file per
// thread of every process it followed (forked children included), each with the
// instructions (Ir) the thread executed in user space, by function. Instruction counts
// do not move with the machine's load, so two builds or variants can be compared to a
// fraction of a percent where timings cannot; they count no kernel work and no waiting,
// so they are a measure of instructions, not of time or throughput.
//
// Only what the benchmarks need of the format (valgrind's docs/cl-format.html): the
// header's thread number and summary, fn= and cfn= names (compressed as "(id) name"
// once, "(id)" after), cost lines "POSITION IR", and calls= lines, whose next cost line is
// the callee's inclusive cost and so not the caller's own.
#pragma once

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace weft::bench {

struct ThreadProfile {
  std::string file;
  long pid = 0;           // from the file's name, "cg.PID-THREAD"
  int thread = 0;         // 1: the process's main thread
  bool complete = false;  // the file ends with its totals (not cut short by a SIGKILL)
  uint64_t total = 0;     // Ir of the whole thread
  // The thread's body, as std::thread names it ("std::thread::_State_impl<...>::_M_run()");
  // empty for a main thread.
  std::string body;
  std::unordered_map<std::string, uint64_t> self;  // Ir by function, callees excluded
  bool Calls(std::string_view prefix) const {
    for (const auto& [name, ir] : self) {
      if (name.starts_with(prefix)) return true;
    }
    return false;
  }
};

// Reads one callgrind output file; false if it is not one (an empty leftover).
inline bool ReadCallgrindFile(const std::string& path, ThreadProfile* out) {
  std::ifstream in(path);
  std::string line;
  std::unordered_map<std::string, std::string> names;  // "(id)" -> name
  auto name_of = [&](std::string_view spec) {
    // "(id) name" defines the id; "(id)" refers to it; a bare name is uncompressed.
    if (spec.empty() || spec[0] != '(') return std::string(spec);
    size_t close = spec.find(')');
    std::string id(spec.substr(0, close + 1));
    if (close + 2 <= spec.size()) names[id] = std::string(spec.substr(close + 2));
    return names[id];
  };
  ThreadProfile p;
  p.file = path;
  uint64_t* current = nullptr;
  bool call_cost_next = false, seen_summary = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '*') {
      if (call_cost_next) {
        call_cost_next = false;
        continue;
      }
      size_t space = line.find(' ');
      if (current != nullptr && space != std::string::npos) {
        *current += std::strtoull(line.c_str() + space + 1, nullptr, 10);
      }
    } else if (line.starts_with("fn=")) {
      std::string name = name_of(std::string_view(line).substr(3));
      if (name.find("::_M_run()") != std::string::npos && p.body.empty()) p.body = name;
      current = &p.self[name];
    } else if (line.starts_with("cfn=")) {
      (void)name_of(std::string_view(line).substr(4));
    } else if (line.starts_with("calls=")) {
      call_cost_next = true;
    } else if (line.starts_with("thread: ")) {
      p.thread = std::atoi(line.c_str() + 8);
    } else if (line.starts_with("totals: ")) {
      p.complete = true;
    } else if (line.starts_with("summary: ")) {
      p.total = std::strtoull(line.c_str() + 9, nullptr, 10);
      seen_summary = true;
    }
  }
  if (!seen_summary) return false;
  const size_t dot = path.rfind("cg.");
  if (dot != std::string::npos) p.pid = std::strtol(path.c_str() + dot + 3, nullptr, 10);
  *out = std::move(p);
  return true;
}

// Every thread profile in `dir`.
inline std::vector<ThreadProfile> ReadCallgrindDir(const std::string& dir) {
  std::vector<ThreadProfile> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ThreadProfile p;
    if (ReadCallgrindFile(dir + "/" + e->d_name, &p)) out.push_back(std::move(p));
  }
  closedir(d);
  return out;
}

}  // namespace weft::bench
