// Event isolation (`weft capture --isolate`, BorderPatrol EuroSys'08 §3.2 and §5.2): a read
// on a stream with a protocol processor returns at most one input message, so that what
// the program does next can be attributed to that message alone (infer/fragment's forward
// scan). Internal to libweft-preload.so.
//
// Reads. On the input direction of a stream with a running protocol processor (requests
// at a server, responses at a client), a read whose bytes run past the end of the current
// message returns only up to that end; the rest is held back in the stream's HeldBytes
// (protocol_streams.h: mapped per stream on demand, never more than one read returned,
// unmapped at the last close). The next read is served from the held bytes first, again
// only up to the next end, without a system call. The parser still sees every byte once,
// in order, as the program gets it, so boundary offsets count delivered bytes. A read
// served from held bytes is logged as the read call it is.
//   MSG_PEEK: sees held bytes first (only up to the end of their message), consumes none.
//   MSG_WAITALL: the program asked for all `n` bytes; it gets them (held bytes, then the
//     kernel's), never cut at a boundary: a fixed-size read must stay whole.
//   recvmsg with ancillary data: a call whose real read returned control messages is not
//     cut (the data and its descriptors or credentials stay together).
//   MSG_OOB, MSG_TRUNC, MSG_ERRQUEUE: not isolated.
//
// Readiness (§5.2: "The buffered file descriptor should be labeled readable regardless of
// its actual condition"): poll/ppoll, select/pselect and epoll_wait/epoll_pwait report a
// descriptor with held bytes readable, and do not block while one is waited for (the real
// call gets a zero timeout and the results are merged). epoll_ctl is wrapped to know what
// each descriptor is registered for, with what epoll_data.
//
// One input per wait (§3.2: "By returning only one event at a time to the black-box
// module, BorderPatrol can attribute the following fragment of work to the request
// associated with the event"). An input is a readable descriptor on the input direction
// of a stream with a running processor (held bytes included). When a wait has several,
// it reports the one that has waited longest and holds the others' read side back (their
// writable bits, and every other descriptor, pass through unchanged):
//   level-triggered (poll, select, epoll without EPOLLET): nothing is remembered; the
//     kernel reports them again at the next wait, at once, while they stay readable;
//   EPOLLET and EPOLLONESHOT: the kernel would not report them again, so they are kept and
//     the next wait on the set reports them without blocking (zero timeout, merged); a
//     kept event dies with its registration (EPOLL_CTL_MOD re-arms and the kernel polls it
//     again, EPOLL_CTL_DEL, close), checked under a lock, and a full table reports it now.
// Each wait that held inputs back is counted (split_waits: one wait more than untraced).
//
// Deferred reads: one request per turn. A turn of a thread runs from a wait (or its reply
// on the stream it read a request from) to the next. A thread that read a request on one
// stream and, in the same turn, reads another stream's (haproxy reads every connection it
// has just accepted in one pass, then sends their requests on) would make both look like
// one fragment's. So the second read, if non-blocking, takes the kernel's bytes into that
// stream's held bytes and returns EAGAIN; the program waits (the wait reports the stream
// readable: its held bytes) and reads them then, after acting on the first. Each stream at
// most once per turn (a program that retries at once gets its bytes: no livelock), never a
// blocking read (EAGAIN would be a lie), only requests at a server. Counted with the reads
// cut at a message end (isolated_reads).
//
// TLS (tls_calls.cc). Over TLS the program reads plaintext with the library's record call
// (SSL_read, SSL_read_ex, gnutls_record_recv), and the system calls under it move
// ciphertext, which no processor can cut. The record call is isolated instead: it returns
// at most up to the current message's end and the rest is held, as above. But a program
// that reads "until the library says want-read" (nginx's ngx_ssl_recv loops SSL_read until
// SSL_ERROR_WANT_READ, whatever each call returned) would take the held bytes at once, in
// the same turn. So a stream gives one read per turn of a thread: once a thread was given
// bytes of a stream in its current turn, its next read of that stream, if the socket is
// non-blocking, says want-read (SSL_read -1 and SSL_get_error SSL_ERROR_WANT_READ,
// SSL_read_ex 0, GNUTLS_E_AGAIN), after draining what the library has buffered and the
// kernel has received into the held bytes: the wait the program goes to reports the
// descriptor readable for them (an edge-triggered epoll would not report bytes already
// there again). With nothing to drain it says what the library said (a real want-read,
// the end of the stream). As for system calls (RefillHeld above), a read that gives the
// last held bytes drains the library into the held bytes. A blocking socket is never
// told want-read nor drained; its reads are cut and served from the held bytes only.
// SSL_peek does not see held bytes.
//
// Cost when off: a wrapper tests one global flag after the protocol bit of the descriptor
// entry it already loaded; poll and friends test it once. On, a wait whose result has
// fewer than two readable descriptors pays a pass over the result.
#pragma once

#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace weft_preload {

extern bool g_isolate;  // WEFT_ISOLATE=1 and some stream may get a processor
inline bool Isolating() { return __builtin_expect(g_isolate, false); }
void ConfigureIsolation(bool on);
// Deferred reads (above): the calling thread waits (a new turn), or sends on `fd`.
void NewTurn();
void SentOn(int fd);
// The extra work for the end record (wire::EndRecord).
void IsolationCounters(uint64_t* isolated_reads, uint64_t* held_reads, uint64_t* held_bytes,
                       uint64_t* split_waits);
// In a forked child: the counters start again (the parent's log has its own), locks
// another thread held at the fork are free.
void ResetIsolationAfterFork();

// A stream read (`op`: read, readv, recv, recvfrom, recvmsg) on `fd`, whose descriptor entry
// has kProtocolBit, with isolation on. The bytes go to `iov`; `message` is the program's
// msghdr for recvmsg, `address`/`length` its recvfrom source. True if it handled the call
// (result in *result, errno set); false: the caller does the plain call.
bool IsolatedRead(uint8_t op, int fd, const struct iovec* iov, int iovcnt, int flags,
                  struct msghdr* message, struct sockaddr* address, socklen_t* length,
                  ssize_t* result);

// A TLS library's read of at most `n` plaintext bytes into `buffer`, for IsolatedTlsRead:
// returns the bytes it moved (> 0), 0 when it moved none because it would block
// (want-read), -1 when it moved none for another reason (the end of the stream, an
// error). The reader keeps the library's own result and errno for its caller.
struct TlsReader {
  long (*read)(void* context, void* buffer, size_t n);
  void* context;
};
enum class TlsRead : uint8_t {
  kNotIsolated,  // not an isolated stream: the caller does the plain call
  kBytes,        // *bytes (> 0) of plaintext are in `buffer`
  kLibrary,      // the library moved nothing: the caller gives the program its result
  kAgain,        // the stream's next message waits for the next turn: say want-read
};
// A TLS record read on `fd`, whose descriptor entry has kProtocolBit and kTlsBit, with
// isolation on (above, "TLS"). Logs nothing: the caller logs the call and feeds *bytes.
TlsRead IsolatedTlsRead(int fd, void* buffer, size_t n, const TlsReader& reader, size_t* bytes);

// Waits, with isolation on (isolation_waits.cc). Each does the whole call.
int IsolatedPoll(struct pollfd* fds, nfds_t n, const struct timespec* timeout, const sigset_t* mask,
                 bool ppoll_call, int poll_timeout);
int IsolatedSelect(int n, fd_set* readable, fd_set* writable, fd_set* failed,
                   struct timeval* timeout, const struct timespec* ptimeout, const sigset_t* mask,
                   bool pselect_call);
int IsolatedEpollWait(int epfd, struct epoll_event* events, int max, int timeout,
                      const sigset_t* mask, bool pwait_call);
// epoll_ctl succeeded: remember (or forget) what `fd` is registered for in `epfd`.
void NoteEpollCtl(int epfd, int op, int fd, const struct epoll_event* event);
// `fd` is being closed (or replaced by dup2): forget its registration and what was kept
// for it, and if it is an epoll set, its members'.
void ForgetWaits(int fd);
uint64_t SplitWaits();
void ResetWaitsAfterFork();

}  // namespace weft_preload
