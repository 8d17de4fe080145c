// libFuzzer target for the text trace reader: any input either parses or gives an error,
// never a crash; what parses formats to text that parses again to the same messages.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "trace/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trace = weft::ParseTextTrace(text, "fuzz.trace");
  if (!trace.ok()) return 0;
  std::string formatted = weft::FormatTextTrace(*trace);
  auto again = weft::ParseTextTrace(formatted, "formatted.trace");
  if (!again.ok()) {
    std::fprintf(stderr, "formatted trace does not parse: %s\n", again.status().message().c_str());
    std::abort();
  }
  if (again->size() != trace->size() || again->attributes().size() != trace->attributes().size() ||
      weft::FormatTextTrace(*again) != formatted) {
    std::fprintf(stderr, "round trip changed the trace (%zu -> %zu messages)\n", trace->size(),
                 again->size());
    std::abort();
  }
  return 0;
}
