// Progress of long work on stderr, only when stderr is a terminal (never in pipes, logs or
// tests). Updates are cheap: the line is redrawn at most five times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

class Progress {
 public:
  // `total` 0 means unknown. `unit` names what is counted ("messages").
  Progress(std::string_view what, uint64_t total, std::string_view unit);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Update(uint64_t done) {
    if (enabled_ && (++calls_ & 0x3ff) == 0) Draw(done, false);
  }

 private:
  void Draw(uint64_t done, bool force);

  std::string what_;
  std::string unit_;
  uint64_t total_;
  uint64_t calls_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace weft
