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

Result<OutputFile> OpenOutput(const std::string& path) {
  if (path == "-") return OutputFile{stdout, ""};
  struct stat st;
  const bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  OutputFile out{nullptr, in_place ? "" : path + ".tmp" + std::to_string(::getpid())};
  out.file = std::fopen(in_place ? path.c_str() : out.tmp.c_str(), "wb");
  if (!out.file) return Status::IoError("{}: {}", path, std::strerror(errno));
  return out;
}

Status CloseOutput(const std::string& path, OutputFile& out, int write_errno) {
  int err = write_errno;
  if (out.file == stdout) {
    if (std::fflush(stdout) != 0 && !err) err = errno ? errno : EIO;
  } else if (std::fclose(out.file) != 0 && !err) {
    err = errno ? errno : EIO;
  }
  out.file = nullptr;
  if (!err && !out.tmp.empty() && std::rename(out.tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    if (!out.tmp.empty()) std::remove(out.tmp.c_str());
    return Status::IoError("{}: write failed: {}", path == "-" ? "stdout" : path,
                           std::strerror(err));
  }
  return Status::Ok();
}

Status WriteFile(const std::string& path, std::string_view contents) {
  WEFT_ASSIGN_OR_RETURN(OutputFile out, OpenOutput(path));
  int err = 0;
  if (std::fwrite(contents.data(), 1, contents.size(), out.file) != contents.size())
    err = errno ? errno : EIO;
  return CloseOutput(path, out, err);
}

}  // namespace weft
