// libFuzzer target for timestamps and durations: parsing never crashes or overflows, and a
// parsed timestamp formats to text that parses back to the same nanosecond.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = weft::ParseTimestamp(text);
  if (t.ok()) {
    std::string formatted = weft::FormatTimestamp(*t);
    auto again = weft::ParseTimestamp(formatted);
    if (!again.ok() || *again != *t) {
      std::fprintf(stderr, "timestamp %lld formats as '%s', which does not parse back\n",
                   static_cast<long long>(*t), formatted.c_str());
      std::abort();
    }
  }
  auto d = weft::ParseDuration(text);
  if (d.ok()) (void)weft::FormatDuration(*d);
  // Every int64 value formats and parses back, including the extremes, except kNoTime
  // (INT64_MIN): it means "not observed" and is never written as a timestamp.
  if (size >= 8) {
    int64_t v;
    __builtin_memcpy(&v, data, 8);
    if (v == weft::kNoTime) return 0;
    auto back = weft::ParseTimestamp(weft::FormatTimestamp(v));
    if (!back.ok() || *back != v) {
      std::fprintf(stderr, "FormatTimestamp(%lld) does not parse back\n",
                   static_cast<long long>(v));
      std::abort();
    }
  }
  return 0;
}
