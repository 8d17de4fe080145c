#include "core/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace weft {

Result<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("{}: {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IoError("{}: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("{}: not a regular file", path);
  }
  MappedFile file;
  file.size_ = size_t(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::IoError("{}: mmap: {}", path, std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::string> ReadFile(const std::string& path) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) return Status::NotFound("{}: {}", path, std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  bool failed = std::ferror(f);
  if (f != stdin) std::fclose(f);
  if (failed) return Status::IoError("{}: read failed", path);
  return out;
}

Status WriteFile(const std::string& path, std::string_view contents) {
  if (path == "-") {
    if (std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size() ||
        std::fflush(stdout) != 0) {
      return Status::IoError("stdout: write failed");
    }
    return Status::Ok();
  }
  // A device or a pipe (-o /dev/null, a FIFO) is written in place: renaming a temporary
  // file over it would replace the device node with a regular file.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return Status::IoError("{}: {}", path, std::strerror(errno));
    bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) return Status::IoError("{}: write failed: {}", path, std::strerror(errno));
    return Status::Ok();
  }
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::IoError("{}: {}", path, std::strerror(errno));
  bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return Status::IoError("{}: write failed: {}", path, std::strerror(err));
  }
  return Status::Ok();
}

Result<std::unique_ptr<PiecewiseFileWriter>> PiecewiseFileWriter::Open(const std::string& path) {
  if (path == "-")
    return std::unique_ptr<PiecewiseFileWriter>(new PiecewiseFileWriter(path, "", stdout));
  struct stat st;
  const bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  std::string tmp = in_place ? "" : path + ".tmp" + std::to_string(::getpid());
  FILE* f = std::fopen(in_place ? path.c_str() : tmp.c_str(), "wb");
  if (!f) return Status::IoError("{}: {}", path, std::strerror(errno));
  return std::unique_ptr<PiecewiseFileWriter>(new PiecewiseFileWriter(path, std::move(tmp), f));
}

PiecewiseFileWriter::PiecewiseFileWriter(std::string path, std::string tmp, FILE* file)
    : path_(std::move(path)),
      tmp_(std::move(tmp)),
      file_(file),
      writer_([this] { WriteQueued(); }) {}

PiecewiseFileWriter::~PiecewiseFileWriter() {
  if (closed_) return;
  (void)Close();
  if (!tmp_.empty()) std::remove(tmp_.c_str());
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
    if (!failed && std::fwrite(piece.data(), 1, piece.size(), file_) != piece.size())
      err = errno ? errno : EIO;
    piece = std::string();  // freed outside the lock
    lock.lock();
    if (err && !write_errno_) write_errno_ = err;
    queue_.pop_front();
    changed_.notify_all();
  }
}

Status PiecewiseFileWriter::Close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  writer_.join();
  closed_ = true;
  int err = write_errno_;
  if (file_ == stdout) {
    if (std::fflush(stdout) != 0 && !err) err = errno ? errno : EIO;
  } else if (std::fclose(file_) != 0 && !err) {
    err = errno ? errno : EIO;
  }
  if (err)
    return Status::IoError("{}: write failed: {}", path_ == "-" ? "stdout" : path_,
                           std::strerror(err));
  return Status::Ok();
}

Status PiecewiseFileWriter::Finish() {
  if (closed_) return Status::Internal("{}: finished twice", path_);
  Status closed = Close();
  if (!closed.ok()) {
    if (!tmp_.empty()) std::remove(tmp_.c_str());
    return closed;
  }
  if (!tmp_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    std::remove(tmp_.c_str());
    return Status::IoError("{}: write failed: {}", path_, std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace weft
