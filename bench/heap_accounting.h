// Heap accounting for benchmarks: every allocation of the process goes through the
// operator new and delete defined here, which keep the live and peak byte counts. Include
// it in exactly one file of a benchmark executable.
//
//   const int64_t before = weft::bench::StartPeak();
//   ... the work ...
//   const int64_t peak_bytes = weft::bench::PeakSince(before);
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace weft::bench {

inline std::atomic<int64_t> g_live{0};
inline std::atomic<int64_t> g_peak{0};

inline void* Allocate(size_t n) {
  void* p = std::malloc(n + 16);
  if (!p) throw std::bad_alloc();
  *static_cast<size_t*>(p) = n;
  int64_t live = g_live.fetch_add(int64_t(n)) + int64_t(n);
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return static_cast<char*>(p) + 16;
}

inline void Free(void* p) {
  if (!p) return;
  char* base = static_cast<char*>(p) - 16;
  g_live.fetch_sub(int64_t(*reinterpret_cast<size_t*>(base)));
  std::free(base);
}

// Resets the peak to the bytes live now, and returns them.
inline int64_t StartPeak() {
  const int64_t live = g_live.load();
  g_peak.store(live);
  return live;
}
// The most bytes live at once since StartPeak returned `start`, beyond `start`.
inline int64_t PeakSince(int64_t start) { return g_peak.load() - start; }

}  // namespace weft::bench

void* operator new(size_t n) { return weft::bench::Allocate(n); }
void* operator new[](size_t n) { return weft::bench::Allocate(n); }
void operator delete(void* p) noexcept { weft::bench::Free(p); }
void operator delete[](void* p) noexcept { weft::bench::Free(p); }
void operator delete(void* p, size_t) noexcept { weft::bench::Free(p); }
void operator delete[](void* p, size_t) noexcept { weft::bench::Free(p); }
