// Files with Status errors: whole-file reads, read-only memory maps, and writes that
// replace the destination only once everything was written (no half-written outputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/status.h"

namespace weft {

// A read-only memory map of a whole file. An empty file maps to an empty view. Move-only.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole file, or all of stdin for "-".
Result<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` ("-" is stdout) through a temporary file that is renamed
// into place, so a failed write leaves any previous file untouched.
Status WriteFile(const std::string& path, std::string_view contents);

// Where WriteFile and PiecewiseFileWriter write: stdout for "-"; a device or a pipe
// (-o /dev/null, a FIFO) in place, since renaming a temporary file over it would replace
// the device node with a regular file; anything else a temporary file beside `path`.
struct OutputFile {
  FILE* file = nullptr;
  std::string tmp;  // empty: written in place
};
Result<OutputFile> OpenOutput(const std::string& path);
// Closes `out` and renames its temporary file into place, or removes it if `write_errno`
// (the first failed write's errno, 0 for none) or the close says the write failed.
Status CloseOutput(const std::string& path, OutputFile& out, int write_errno);

}  // namespace weft
