// The preload library's runtime: the per-process log, per-thread record buffers, the
// descriptor table, and how records get from a wrapper into the log. Internal to
// libweft-preload.so (hidden visibility); the wrappers in *_calls.cc use it.
//
// Cost rules (WAP5 §3.1 measured about 1 us per call for LibSockCap): on the
// common path a wrapper reads the descriptor table, takes two CLOCK_MONOTONIC readings
// (vDSO, no system call), and copies a 32-byte record into its thread's chunk of the log,
// a shared mapping of the file (log_file.h): the record is in the page cache, and
// survives even SIGKILL, as soon as its first 8 bytes are stored. No lock, no allocation,
// no system call; fallocate, pwrite (zeros) and mmap once per chunk (up to 64 KiB). Everything else
// (naming descriptors, opening the log) happens on connection setup, which already costs system
// calls.
//
// Error style: no exceptions, no C++ runtime, integer results and counters. A log that
// cannot be written never changes what the program sees: its events are counted as
// dropped and the program goes on.
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "capture/event_log_format.h"

namespace weft_preload {

namespace wire = weft::capture::wire;

inline int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// --- descriptor table: which descriptors are sockets or pipes, and of what kind ---------

inline constexpr int kFdTableSize = 1 << 20;  // the default hard RLIMIT_NOFILE
extern uint8_t g_fd_kind[kFdTableSize];       // wire::SocketKind per descriptor; 0: not traced

// Bit 7 of an entry: the descriptor has had an endpoint record since it got its number.
inline constexpr uint8_t kNamedBit = 0x80;
// Bit 6: the bytes it moves go to a protocol processor (protocol_streams.h). Tested on the
// common path with the entry already loaded, so streams without one pay nothing more.
inline constexpr uint8_t kProtocolBit = 0x40;
// Bit 5: a TLS library is in use on the socket (tls_calls.cc): its system calls move
// ciphertext, logged as TLS transport, never as data or fed to a processor; the TLS
// library's calls carry the plaintext instead.
inline constexpr uint8_t kTlsBit = 0x20;
inline constexpr uint8_t kFlagBits = kNamedBit | kProtocolBit | kTlsBit;

inline uint8_t FdEntry(int fd) {
  return (fd >= 0 && fd < kFdTableSize) ? __atomic_load_n(&g_fd_kind[fd], __ATOMIC_RELAXED) : 0;
}
inline uint8_t FdKind(int fd) { return FdEntry(fd) & uint8_t(~kFlagBits); }
inline bool FdHasProtocol(int fd) { return (FdEntry(fd) & kProtocolBit) != 0; }
inline bool FdNamed(int fd) { return (FdEntry(fd) & kNamedBit) != 0; }
// Sets the whole entry (kind, and the named bit if given).
inline void SetFdKind(int fd, uint8_t entry) {
  if (fd >= 0 && fd < kFdTableSize) __atomic_store_n(&g_fd_kind[fd], entry, __ATOMIC_RELAXED);
}
inline bool IsDatagramKind(uint8_t kind) {
  return kind == wire::kKindUdp || kind == wire::kKindUnixDatagram;
}
uint8_t SocketKindOf(int domain, int type);

// --- state ---------------------------------------------------------------------------

// True once the log is set up and until the image ends, on a thread that is not marked
// untraced (weft_capture_set_untraced: weft's own threads); wrappers log nothing otherwise.
bool Logging();
// True once the log is set up and until the image ends, whatever the calling thread's mark:
// for what concerns the whole process (an exec ends its log; the signal stand-ins).
bool LogOpen();
// The calling thread's mark, 1 or 0; a thread starts with its creator's (thread_calls.cc).
int ThreadUntraced();
void SetThreadUntraced(int untraced);
// The payload prefix asked for (--payload-prefix), 0 for none.
uint32_t PayloadPrefix();
// --- records -------------------------------------------------------------------------

// The entry time of a call that moves bytes, marking the thread as inside it until its
// record is appended: the end of the log (exit, exec, a terminating signal) waits a few
// milliseconds for such calls, so that bytes that left or reached the process are logged.
int64_t BeginCall();
// Marks the thread as inside the call entered at `entry` again, after a call inside it
// (a TLS library's system call under SSL_read) appended its own record, which ends the mark.
void ResumeCall(int64_t entry);

// Appends a call record (and, with `data`, a payload record of its first bytes) to the
// calling thread's buffer. Safe in signal handlers: a record started while another is
// being written on the same thread is dropped and counted.
void LogCall(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg);
void LogCallWithPayload(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg,
                        const void* data, const struct iovec* iov, int iovcnt);
// A datagram: the call, the XXH3-64 of the `bytes` moved (from `data` or `iov`), the peer.
void LogDatagram(uint8_t op, int fd, int64_t entry, int64_t exit, long result, int arg,
                 const void* data, const struct iovec* iov, int iovcnt, size_t bytes,
                 const struct sockaddr* peer, socklen_t peer_length);
// The names an endpoint record gave a descriptor (for protocol selection).
struct EndpointNames {
  wire::WireAddress local, peer;
  char local_path[108], peer_path[108];  // local.path_length and peer.path_length bytes
};
// Names `fd` with an endpoint record: kind, local and peer name (asked of the kernel;
// `peer` when given is used instead of getpeername), inode and peer pid where they apply.
// The names go to `names` too when it is given.
void LogEndpoint(uint8_t op, int fd, uint8_t kind, const struct sockaddr* peer,
                 socklen_t peer_length, int64_t time, EndpointNames* names = nullptr);
// Appends one whole record (protocol_records.cc builds the protocol records).
void AppendRecord(const void* record, uint32_t size, int64_t time);
// A protocol message ended: a boundary record with the processor's attributes (a
// weft::capture::protocols::Attributes). In protocol_records.cc; also for DNS datagrams.
void LogBoundary(int fd, uint8_t protocol, bool sent, bool request, int64_t entry, int64_t exit,
                 uint64_t offset, const void* attributes);
// The program renamed `thread` (name_calls.cc): a name record for it, if it has logged.
void LogThreadRenamed(pthread_t thread, const char* name);
// The two ends of a socketpair or pipe, each with the other's inode.
void LogPairEndpoints(uint8_t op, const int fds[2], uint8_t kind, int64_t time);
// The inode of the other end of the connected Unix socket with `inode` (unix_peer.cc), 0 if
// the kernel cannot say.
uint64_t UnixPeerInode(uint64_t inode);
// A synchronisation call (sync_calls.cc): a SyncRecord.
void LogSync(uint8_t op, uint64_t object, uint64_t second, int64_t entry, int64_t exit,
             int32_t result);
// What synchronisation is logged (WEFT_SYNC): mutexes only once a condition variable has
// waited with them (the default), every mutex, or nothing.
enum SyncModes : int { kSyncQueues = 0, kSyncAll = 1, kSyncOff = 2 };
int SyncMode();
// read and write on an eventfd or timerfd (io_calls.cc hands them over): a wake-up.
ssize_t WakeRead(int fd, void* buffer, size_t n);
ssize_t WakeWrite(int fd, const void* buffer, size_t n);
// Sockets tied to a TLS library so far (tls_calls.cc): the end record's tls_streams.
uint64_t TlsStreams();
// read/write family on a descriptor that is not traced: counted, not logged.
void CountUntracedIo();

// --- process life --------------------------------------------------------------------

// Seals every thread's segment and writes an end record (op 0 at exit, kOpExec before an
// exec). After an exec that failed, ResumeAfterFailedExec makes logging go on.
void EndLog(uint8_t op);
void ResumeAfterFailedExec();
// A terminating signal is ending the process (signal_calls.cc): from BeginDying until
// EndDying (called only if the process outlived its signal), a thread that begins a call
// that moves bytes waits for the end instead, up to 100 ms (see BeginCall).
void BeginDying();
void EndDying();
// Stands in for SIG_DFL of SIGTERM, SIGINT, SIGHUP and SIGQUIT (signal_calls.cc).
void InstallTerminationHandlers();

// Environment for an exec or spawn: `envp` with LD_PRELOAD and the WEFT_* variables put
// back if the program removed them, so the new image is traced too. `envp` is `envp`
// itself when nothing is missing; otherwise it lives in `mapping` until ReleaseEnvironment
// (after a spawn, or an exec that failed).
struct ExecEnvironment {
  char* const* envp;
  void* mapping;
  size_t size;
};
ExecEnvironment EnvironmentForExec(char* const* envp);
void ReleaseEnvironment(const ExecEnvironment& environment);

}  // namespace weft_preload

// Exported wrappers are declared with this; everything else is hidden.
#define WEFT_EXPORT extern "C" __attribute__((visibility("default")))
