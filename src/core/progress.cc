#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace weft {

Progress::Progress(std::string_view what, uint64_t total, std::string_view unit)
    : what_(what),
      unit_(unit),
      total_(total),
      enabled_(isatty(STDERR_FILENO) && std::getenv("WEFT_NO_PROGRESS") == nullptr),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  if (enabled_ && last_draw_ != start_) fmt::print(stderr, "\r\033[K");
}

void Progress::Draw(uint64_t done, bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  double seconds = std::chrono::duration<double>(now - start_).count();
  if (total_ > 0) {
    fmt::print(stderr, "\r\033[K{}: {}/{} {} ({:.0f}%) {:.1f}s", what_, done, total_, unit_,
               100.0 * double(done) / double(total_), seconds);
  } else {
    fmt::print(stderr, "\r\033[K{}: {} {} {:.1f}s", what_, done, unit_, seconds);
  }
  std::fflush(stderr);
}

}  // namespace weft
