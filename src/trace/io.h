// Loading and saving traces in either format, chosen by content on load and by file name
// on save. The formats themselves are in text_format.h and binary_format.h.
#pragma once

#include <string>

#include "core/status.h"
#include "trace/trace.h"

namespace weft {

enum class TraceFormat { kText, kBinary };

// Reads a .weft binary trace (recognised by its magic) or a text trace; "-" reads stdin.
Result<Trace> LoadTrace(const std::string& path);

// Binary for names ending in ".weft", text otherwise (".trace", "-" for stdout).
TraceFormat FormatForPath(const std::string& path);
Status SaveTrace(const Trace& trace, const std::string& path);

}  // namespace weft
