// The per-process log file of the preload library: opening it with its header, handing
// out chunks of it mapped into memory (MAP_SHARED, so what a thread writes there is in the
// page cache at once and outlives the process), trimming it at a clean end, and keeping
// its descriptor out of the program's way. Internal.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

namespace weft_preload {

// Settings read from the environment at start (weft capture sets them).
struct CaptureSettings {
  char dir[1024];           // WEFT_CAPTURE_DIR: where this host's logs go
  uint32_t payload_prefix;  // WEFT_PAYLOAD_PREFIX
  char preload_path[1024];  // this library, for LD_PRELOAD of exec'd programs
  char protocols[512];      // WEFT_PROTOCOLS: which streams get protocol processors
  bool isolate;             // WEFT_ISOLATE=1: event isolation (isolation.h)
  int sync;                 // WEFT_SYNC=queues|all|off (runtime.h, SyncModes)
};
extern CaptureSettings g_settings;

// Creates <dir>/<pid>.wev (or <pid>.<n>.wev if taken: an exec'd image, a reused pid) and
// writes its header; chunks of up to `chunk_size` bytes follow it. Returns false if it cannot;
// nothing is logged then.
bool OpenLog(uint32_t chunk_size);
// Closes the log descriptor without writing (a forked child drops its parent's).
void ForgetLog();

// One chunk of the log, mapped read-write and shared with the file.
struct MappedChunk {
  void* mapping = nullptr;  // what to munmap (from the page holding the chunk's start)
  size_t mapping_size = 0;
  uint8_t* start = nullptr;  // the chunk: segments, then room
  uint64_t offset = 0;       // of `start` in the file
  uint32_t size = 0;         // bytes of the chunk (wire::ChunkSize)
};
// Grows the file by one chunk (fallocate, so a full disk is an error here and never a
// SIGBUS when a page is written later; then its zeros, so its pages are in the page cache)
// and maps it. Returns false if the log cannot grow
// or be mapped. Reopens the log if the program closed its descriptor. Safe in a signal
// handler (false if it interrupted the log lock's holder).
bool MapNewChunk(MappedChunk* chunk);
// Unmaps `chunk` (what was written stays in the file).
void ReleaseChunk(MappedChunk* chunk);
// Cuts the file at `end` if the chunk holding `end` is still the last one handed out and
// the cut frees a file-system block (a clean end: the last chunk's unused room is not
// kept).
void TrimLog(uint64_t end);
// Moves the log's descriptor away from `fd` if it is `fd` (before the program closes or
// dup2s over it).
void KeepLogFdFrom(int fd);
// A forked child inherits the lock state of its parent: start unlocked.
void ResetLogLockAfterFork();

// Small helpers that need no C++ runtime.
size_t CopyString(char* out, size_t capacity, const char* s);
size_t FormatDecimal(char* out, uint64_t value);
// Reads up to `capacity` bytes of a file (of /proc); returns how many (0 if unreadable).
size_t ReadSmallFile(const char* path, char* out, size_t capacity);
// Raw system calls, so the library's own I/O is never seen by its wrappers.
long SysRead(int fd, void* buf, size_t n);
long SysWrite(int fd, const void* buf, size_t n);
int SysOpen(const char* path, int flags, int mode);
int SysClose(int fd);
pid_t SysGetPid();
pid_t SysGetTid();

}  // namespace weft_preload
