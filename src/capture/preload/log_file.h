// The per-process log file of the preload library: opening it with its header, writing
// whole blocks to it, and keeping its descriptor out of the program's way. Internal.
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
// writes its header. Returns false if it cannot; nothing is logged then.
bool OpenLog(uint32_t block_size);
// Closes the log descriptor without writing (a forked child drops its parent's).
void ForgetLog();
// Writes one whole block with one write(). Returns false (and writes nothing more) if
// the log cannot take it. Reopens the log if the program closed its descriptor.
bool WriteBlock(const void* data, size_t size);
// Moves the log's descriptor away from `fd` if it is `fd` (before the program closes or
// dup2s over it).
void KeepLogFdFrom(int fd);
// A forked child inherits the lock state of its parent: start unlocked.
void ResetLogLockAfterFork();

// Small helpers that need no C++ runtime.
size_t CopyString(char* out, size_t capacity, const char* s);
size_t FormatDecimal(char* out, uint64_t value);
// Raw system calls, so the library's own I/O is never seen by its wrappers.
long SysRead(int fd, void* buf, size_t n);
long SysWrite(int fd, const void* buf, size_t n);
int SysOpen(const char* path, int flags, int mode);
int SysClose(int fd);
pid_t SysGetPid();
pid_t SysGetTid();

}  // namespace weft_preload
