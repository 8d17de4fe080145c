#include "core/piecewise_file_writer.h"

#include <cerrno>
#include <cstdio>
#include <utility>

namespace weft {

Result<std::unique_ptr<PiecewiseFileWriter>> PiecewiseFileWriter::Open(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(OutputFile out, OpenOutput(path));
  return std::unique_ptr<PiecewiseFileWriter>(new PiecewiseFileWriter(path, std::move(out)));
}

PiecewiseFileWriter::PiecewiseFileWriter(std::string path, OutputFile out)
    : path_(std::move(path)), out_(std::move(out)), writer_([this] { WriteQueued(); }) {}

PiecewiseFileWriter::~PiecewiseFileWriter() {
  if (closed_) return;
  // Unfinished: the output is abandoned, its temporary file removed.
  (void)Close(ECANCELED);
}

void PiecewiseFileWriter::Append(std::string piece) {
  if (piece.empty()) return;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.size() < kPiecesQueued; });
  queue_.push_back(std::move(piece));
  changed_.notify_all();
}

void PiecewiseFileWriter::WriteQueued() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and everything written
    std::string piece = std::move(queue_.front());
    const bool failed = write_errno_ != 0;
    lock.unlock();
    // After a failure the rest is dropped: the file will not be put in place anyway.
    int err = 0;
    if (!failed && std::fwrite(piece.data(), 1, piece.size(), out_.file) != piece.size())
      err = errno ? errno : EIO;
    piece = std::string();  // freed outside the lock
    lock.lock();
    if (err && !write_errno_) write_errno_ = err;
    queue_.pop_front();
    changed_.notify_all();
  }
}

Status PiecewiseFileWriter::Close(int abandon_errno) {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  writer_.join();
  closed_ = true;
  return CloseOutput(path_, out_, abandon_errno ? abandon_errno : write_errno_);
}

Status PiecewiseFileWriter::Finish() {
  if (closed_) return Status::Internal("{}: finished twice", path_);
  return Close(0);
}

}  // namespace weft
