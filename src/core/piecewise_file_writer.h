// A file written in pieces on a second thread (weft infer's paths file).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/file.h"
#include "core/status.h"

namespace weft {

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
  PiecewiseFileWriter(std::string path, OutputFile out);
  void WriteQueued();  // the writing thread
  // Joins the thread and closes the file, once; a non-zero `abandon_errno` removes it.
  Status Close(int abandon_errno);

  const std::string path_;
  OutputFile out_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;  // guarded by mutex_
  bool closing_ = false;           // guarded by mutex_
  int write_errno_ = 0;            // guarded by mutex_; first failed write's errno
  bool closed_ = false;
  std::thread writer_;  // last: starts after the members it uses
};

}  // namespace weft
