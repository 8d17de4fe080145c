#include "capture/preload/log_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capture/event_log_format.h"

namespace weft_preload {

namespace wire = weft::capture::wire;

CaptureSettings g_settings;

namespace {

// The log's descriptor and identity; guarded by g_log_lock except for the first open.
int g_log_fd = -1;
dev_t g_log_dev = 0;
ino_t g_log_ino = 0;
char g_log_path[1200];
int g_log_lock = 0;         // tid of the holder, 0 when free
uint32_t g_chunk_size = 0;  // the largest chunk (wire::ChunkSize)
uint64_t g_chunks = 0;      // chunks handed out so far
uint64_t g_chunks_end = 0;  // where the next chunk starts (the header's size at first)
uint64_t g_header_size = 0;

// Log writes and descriptor moves take this lock; wrappers never do (only full buffers
// and connection-level events reach it). It is not reentrant: a signal handler on the
// thread holding it gets false and its block counts as dropped, instead of a deadlock.
bool LockLog() {
  int self = SysGetTid();
  for (int spins = 0;; ++spins) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_log_lock, &expected, self, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      return true;
    }
    if (expected == self) return false;
    if (spins > 50) sched_yield();
  }
}
void UnlockLog() { __atomic_store_n(&g_log_lock, 0, __ATOMIC_RELEASE); }

// Puts the log at descriptor 1000 or above (below RLIMIT_NOFILE), far from the low numbers
// programs pass to dup2 and expect to be free, close-on-exec. Returns the descriptor used.
int MoveHigh(int fd, int avoid) {
  struct rlimit limit;
  long floor = 1000;
  if (syscall(SYS_getrlimit, RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      long(limit.rlim_cur) <= floor + 16) {
    floor = long(limit.rlim_cur) - 16;
  }
  if (floor <= avoid && avoid < floor + 64) floor = avoid + 1;
  if (floor < 3) return fd;
  long high = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
  if (high < 0) return fd;
  SysClose(fd);
  return int(high);
}

bool RememberIdentity(int fd) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return false;
  g_log_dev = st.st_dev;
  g_log_ino = st.st_ino;
  return true;
}

// The program may have closed the log's descriptor behind the library's back
// (close_range, a raw system call) and even reused the number: never write into a
// descriptor that is not the log file; reopen the file instead.
bool EnsureLogDescriptor() {
  struct stat st;
  if (g_log_fd >= 0 && syscall(SYS_fstat, g_log_fd, &st) == 0 && st.st_dev == g_log_dev &&
      st.st_ino == g_log_ino) {
    return true;
  }
  int fd = SysOpen(g_log_path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return false;
  if (syscall(SYS_fstat, fd, &st) != 0 || st.st_dev != g_log_dev || st.st_ino != g_log_ino) {
    SysClose(fd);  // another file under the log's name: not ours to write
    return false;
  }
  g_log_fd = MoveHigh(fd, -1);
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void ReadBootId(uint8_t out[16]) {
  char text[64];
  size_t n = ReadSmallFile("/proc/sys/kernel/random/boot_id", text, sizeof text);
  int nibbles = 0;
  for (size_t i = 0; i < n && nibbles < 32; ++i) {
    int v = HexValue(text[i]);
    if (v < 0) continue;
    out[nibbles / 2] = uint8_t(out[nibbles / 2] | (nibbles % 2 == 0 ? v << 4 : v));
    ++nibbles;
  }
}

int64_t ClockNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The header, built in `out` (at least 96 + 64 KiB bytes). Returns its size.
size_t BuildHeader(uint8_t* out, size_t capacity, uint32_t exec_index, uint32_t block_size) {
  wire::FileHeader h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, wire::kFileMagic, 8);
  h.version = wire::kVersion;
  h.pid = SysGetPid();
  h.parent_pid = int32_t(syscall(SYS_getppid));
  h.exec_index = exec_index;
  h.payload_prefix = g_settings.payload_prefix;
  // Clock reference: CLOCK_MONOTONIC between two CLOCK_REALTIME readings, realtime taken
  // as their midpoint; the gap bounds the error of mapping one clock onto the other.
  int64_t before = ClockNs(CLOCK_REALTIME);
  h.clock_monotonic_ns = ClockNs(CLOCK_MONOTONIC);
  int64_t after = ClockNs(CLOCK_REALTIME);
  h.clock_realtime_ns = before + (after - before) / 2;
  h.clock_uncertainty_ns = after - before;
  ReadBootId(h.boot_id);
  h.block_size = block_size;
  char* text = reinterpret_cast<char*>(out) + sizeof h;
  size_t room = capacity - sizeof h - 8;
  struct utsname names;
  if (syscall(SYS_uname, &names) == 0)
    h.host_length = uint32_t(CopyString(text, room, names.nodename));
  long exe = syscall(SYS_readlink, "/proc/self/exe", text + h.host_length, room - h.host_length);
  h.executable_length = exe > 0 ? uint32_t(exe) : 0;
  char* args = text + h.host_length + h.executable_length;
  size_t args_room = room - h.host_length - h.executable_length;
  size_t n = ReadSmallFile("/proc/self/cmdline", args, args_room);
  if (n == args_room) {  // too long: keep whole arguments only
    while (n > 0 && args[n - 1] != '\0') --n;
  }
  // The last argument's terminator is not stored, nor the NULs a program that rewrote its
  // command line padded it with (php-fpm's workers: "php-fpm: pool www", then zeros to the
  // old length): they are no arguments.
  while (n > 0 && args[n - 1] == '\0') --n;
  h.arguments_length = uint32_t(n);
  h.argument_count = n > 0 ? 1 : 0;
  for (size_t i = 0; i < n; ++i) h.argument_count += args[i] == '\0';
  size_t used = sizeof h + h.host_length + h.executable_length + n;
  size_t size = wire::RoundUp8(uint32_t(used));
  memset(out + used, 0, size - used);
  h.header_size = uint32_t(size);
  h.header_checksum = 0;
  memcpy(out, &h, sizeof h);
  h.header_checksum = uint32_t(XXH3_64bits(out, size));
  memcpy(out, &h, sizeof h);
  return size;
}

}  // namespace

size_t ReadSmallFile(const char* path, char* out, size_t capacity) {
  int fd = SysOpen(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  size_t used = 0;
  while (used < capacity) {
    long n = SysRead(fd, out + used, capacity - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += size_t(n);
  }
  SysClose(fd);
  return used;
}

long SysRead(int fd, void* buf, size_t n) { return syscall(SYS_read, fd, buf, n); }
long SysWrite(int fd, const void* buf, size_t n) { return syscall(SYS_write, fd, buf, n); }
int SysOpen(const char* path, int flags, int mode) {
  return int(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}
int SysClose(int fd) { return int(syscall(SYS_close, fd)); }
pid_t SysGetPid() { return pid_t(syscall(SYS_getpid)); }
pid_t SysGetTid() { return pid_t(syscall(SYS_gettid)); }

size_t CopyString(char* out, size_t capacity, const char* s) {
  size_t n = 0;
  while (s[n] != '\0' && n + 1 < capacity) {
    out[n] = s[n];
    ++n;
  }
  if (capacity > 0) out[n] = '\0';
  return n;
}

size_t FormatDecimal(char* out, uint64_t value) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = char('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
  return n;
}

bool OpenLog(uint32_t chunk_size) {
  // <dir>/<pid>.wev, or <pid>.<n>.wev: the n-th later image (after exec) under this pid.
  size_t dir_length = CopyString(g_log_path, sizeof g_log_path - 48, g_settings.dir);
  char* name = g_log_path + dir_length;
  *name++ = '/';
  int fd = -1;
  uint32_t exec_index = 0;
  for (; exec_index < 100000; ++exec_index) {
    char* p = name + FormatDecimal(name, uint64_t(SysGetPid()));
    if (exec_index > 0) {
      *p++ = '.';
      p += FormatDecimal(p, exec_index);
    }
    CopyString(p, 8, ".wev");
    fd = SysOpen(g_log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) return false;
  // The log holds URLs, SQL text and payload bytes: its owner's alone, whatever the umask
  // (which could only narrow 0600 at creation; the explicit mode keeps it exactly that).
  syscall(SYS_fchmod, fd, 0600);
  size_t capacity = sizeof(wire::FileHeader) + 65536;
  void* scratch =
      mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (scratch == MAP_FAILED) {
    SysClose(fd);
    return false;
  }
  size_t size = BuildHeader(static_cast<uint8_t*>(scratch), capacity, exec_index, chunk_size);
  long written;
  do {
    written = SysWrite(fd, scratch, size);
  } while (written < 0 && errno == EINTR);
  munmap(scratch, capacity);
  if (written != long(size) || !RememberIdentity(fd)) {
    SysClose(fd);
    return false;
  }
  g_log_fd = MoveHigh(fd, -1);
  g_chunk_size = chunk_size;
  g_chunks = 0;
  g_chunks_end = size;
  g_header_size = size;
  return true;
}

void ForgetLog() {
  if (g_log_fd >= 0) SysClose(g_log_fd);
  g_log_fd = -1;
}

namespace {

long PageSize() {
  static long size = 0;
  if (size == 0) size = sysconf(_SC_PAGESIZE);
  return size;
}

// Allocates [offset, offset + length) of the log, growing it, and puts its pages in the
// page cache. fallocate reserves the blocks (so a full disk is an error here, never a
// SIGBUS later); writing the zeros too makes the program's first store to each page a
// minor fault on a page already there. Without them, every page's first store made ext4
// convert its unwritten extent in the fault (capture_overhead's loop: 176 ns added per
// call with fallocate alone, 105-119 ns with the zeros written, 97 ns with the write()
// per 64 KiB buffer of format version 1). Past the file size limit it fails without
// trying: the kernel would send the program SIGXFSZ.
bool Allocate(uint64_t offset, uint64_t length) {
  struct rlimit limit;
  if (syscall(SYS_getrlimit, RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      offset + length > uint64_t(limit.rlim_cur)) {
    errno = EFBIG;
    return false;
  }
  long r;
  do {
    r = syscall(SYS_fallocate, g_log_fd, 0, offset, length);
  } while (r < 0 && errno == EINTR);
  if (r != 0 && errno != EOPNOTSUPP) return false;  // no fallocate: the zeros allocate
  static uint8_t zeros[64 * 1024];                  // never written: bss, no memory used
  for (uint64_t done = 0; done < length;) {
    uint64_t n = length - done < sizeof zeros ? length - done : sizeof zeros;
    long written = syscall(SYS_pwrite64, g_log_fd, zeros, n, offset + done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    done += uint64_t(written);
  }
  return true;
}

}  // namespace

bool MapNewChunk(MappedChunk* chunk) {
  if (!LockLog()) return false;
  bool ok = EnsureLogDescriptor();
  uint64_t offset = g_chunks_end;
  uint64_t chunk_size = wire::ChunkSize(g_chunk_size, g_header_size, g_chunks);
  ok = ok && Allocate(offset, chunk_size);
  if (ok) {
    uint64_t page_start = offset - offset % uint64_t(PageSize());
    size_t size = size_t(offset - page_start + chunk_size);
    void* mapping =
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, g_log_fd, off_t(page_start));
    ok = mapping != MAP_FAILED;
    if (ok) {
      ++g_chunks;
      g_chunks_end += chunk_size;
      chunk->mapping = mapping;
      chunk->mapping_size = size;
      chunk->start = static_cast<uint8_t*>(mapping) + (offset - page_start);
      chunk->offset = offset;
      chunk->size = uint32_t(chunk_size);
    }
  }
  UnlockLog();
  return ok;
}

void ReleaseChunk(MappedChunk* chunk) {
  if (chunk->mapping != nullptr) munmap(chunk->mapping, chunk->mapping_size);
  *chunk = MappedChunk{};
}

void TrimLog(uint64_t end) {
  if (!LockLog()) return;
  uint64_t last_start =
      g_chunks == 0 ? 0 : g_chunks_end - wire::ChunkSize(g_chunk_size, g_header_size, g_chunks - 1);
  // Only a cut that frees whole blocks is worth its system call (and its discard).
  uint64_t page = uint64_t(PageSize());
  if (g_chunks > 0 && end > last_start && (end + page - 1) / page * page < g_chunks_end &&
      EnsureLogDescriptor()) {
    syscall(SYS_ftruncate, g_log_fd, end);
  }
  UnlockLog();
}

void KeepLogFdFrom(int fd) {
  if (fd < 0 || fd != __atomic_load_n(&g_log_fd, __ATOMIC_RELAXED)) return;
  if (!LockLog()) return;
  if (fd == g_log_fd) {
    g_log_fd = MoveHigh(g_log_fd, fd);
    if (g_log_fd == fd) {  // nowhere to move it: give it up, reopen at the next write
      SysClose(fd);
      g_log_fd = -1;
    }
  }
  UnlockLog();
}

void ResetLogLockAfterFork() { __atomic_store_n(&g_log_lock, 0, __ATOMIC_RELAXED); }

}  // namespace weft_preload
