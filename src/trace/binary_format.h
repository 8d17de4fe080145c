// The binary message trace (.weft): a versioned header, a table of sections (name tables,
// one section per column, attributes), each section checksummed. Loading maps the file
// and checks it in one pass linear in its size; a missing, truncated or corrupt file is
// an error that names the file and the offset or section, never a crash.
// docs/formats.md describes the layout byte by byte.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/trace.h"

namespace weft {

// The first eight bytes of every .weft file.
inline constexpr std::string_view kBinaryTraceMagic{"\x89WEFT\r\n\x1a", 8};

// Serialises `trace`; the result is a complete .weft file.
std::string EncodeBinaryTrace(const Trace& trace);

// Decodes a complete .weft file held in memory; `source` names it in errors.
Result<Trace> DecodeBinaryTrace(std::span<const uint8_t> data, std::string_view source);

// File versions of the above (the reader memory-maps the file).
Status WriteBinaryTrace(const Trace& trace, const std::string& path);
Result<Trace> ReadBinaryTrace(const std::string& path);

}  // namespace weft
