#include "trace/io.h"

#include "core/file.h"
#include "trace/binary_format.h"
#include "trace/text_format.h"

namespace weft {

Result<Trace> LoadTrace(const std::string& path) {
  if (path != "-") {
    WEFT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
    if (file.size() == 0) return Status::InvalidArgument("{}: empty file, not a trace", path);
    if (file.view().starts_with(kBinaryTraceMagic)) {
      return DecodeBinaryTrace({file.data(), file.size()}, path);
    }
    return ParseTextTrace(file.view(), path);
  }
  WEFT_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  if (data.empty()) return Status::InvalidArgument("stdin: empty input, not a trace");
  if (std::string_view(data).starts_with(kBinaryTraceMagic)) {
    return DecodeBinaryTrace({reinterpret_cast<const uint8_t*>(data.data()), data.size()}, "stdin");
  }
  return ParseTextTrace(data, "stdin");
}

TraceFormat FormatForPath(const std::string& path) {
  return path.ends_with(".weft") ? TraceFormat::kBinary : TraceFormat::kText;
}

Status SaveTrace(const Trace& trace, const std::string& path) {
  if (FormatForPath(path) == TraceFormat::kBinary) return WriteBinaryTrace(trace, path);
  return WriteFile(path, FormatTextTrace(trace));
}

}  // namespace weft
