// libFuzzer target for the otlp reader (import/span.h): see span_fuzz.h.
#include "span_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return weft::FuzzSpans(data, size, weft::SpanFormat::kOtlp);
}
