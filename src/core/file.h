// Files with Status errors: whole-file reads, read-only memory maps, and writes that
// replace the destination only once everything was written (no half-written outputs).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

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

// WriteFile for output made in pieces: each piece is written on a second thread while the
// caller makes the next, so a large file costs little more than making it (weft infer's
// paths file). The same destinations and the same rule: the file replaces `path` only
// when Finish succeeds; an unfinished writer removes its temporary file.
//
// One thread calls Append and Finish. At most kPiecesQueued pieces wait at once; Append
// blocks beyond that, which bounds the memory to a few pieces.
class PiecewiseFileWriter {
 public:
  static constexpr size_t kPiecesQueued = 2;

  static Result<std::unique_ptr<PiecewiseFileWriter>> Open(const std::string& path);
  PiecewiseFileWriter(const PiecewiseFileWriter&) = delete;
  PiecewiseFileWriter& operator=(const PiecewiseFileWriter&) = delete;
  ~PiecewiseFileWriter();

  // Queues `piece` to be written after those before it. A write error is kept for Finish.
  void Append(std::string piece);
  // Waits for every piece, closes the file and renames it into place.
  Status Finish();

 private:
  PiecewiseFileWriter(std::string path, std::string tmp, FILE* file);
  void WriteQueued();  // the writing thread
  Status Close();      // joins the thread and closes the file, once

  const std::string path_;
  const std::string tmp_;  // empty: written in place (stdout, a pipe, a device)
  FILE* file_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;  // guarded by mutex_
  bool closing_ = false;           // guarded by mutex_
  int write_errno_ = 0;            // guarded by mutex_; first failed write's errno
  bool closed_ = false;
  std::thread writer_;  // last: starts after the members it uses
};

}  // namespace weft
