// Protocol processors on the traced program's streams (capture/protocols/, BorderPatrol
// §3.3): which connections get one (`weft capture --protocols SPEC`, passed as
// WEFT_PROTOCOLS), where their parser state lives, and feeding them the bytes each call
// moved so that a boundary record is logged where each message ends. Internal to
// libweft-preload.so.
//
// Cost: a stream without a protocol pays nothing beyond today's path: its descriptor
// table entry lacks kProtocolBit, which the wrapper tests with the entry it already
// loaded. A stream with one pays a second table load, a per-direction try-lock (an atomic
// exchange) and the parser's walk over the bytes; a boundary adds a record.
//
// State: a ProtocolStream (both directions' parsers, the stream offsets) per connection,
// taken at connect or accept from slabs mapped on demand (never malloc); g_fd_stream maps
// a descriptor to it. The stream belongs to the open file description, not to the
// descriptor number: dup and dup2 share it (a reference count), close drops a reference,
// the last one frees it. A fork copies the slabs with the rest of the memory, so the
// child's copy goes on from the same offsets (reconcile folds the child's inherited
// descriptors into the parent's connection end, whose byte count is the same). An exec
// starts without any: inherited connections get no processor.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "capture/preload/runtime.h"

namespace weft_preload {

// Parses the selection (docs/capture.md "Protocols"): "none", "auto", or a comma list of
// "auto", "PROTO=PORT", "PROTO=/unix/path" (or "@abstract"), "PROTO=auto" (Detect may pick
// PROTO), "PROTO=PROGRAM" (every stream of a program named so). Unknown items are
// ignored: the program must run whatever the user typed. Called once at start.
void ConfigureProtocols(const char* spec);
// True if some stream might get a processor (so setup calls look at AttachProtocol).
bool ProtocolsEnabled();

// A stream socket (TCP, Unix stream) was connected (`client`) or accepted: gives it a
// processor if the selection asks for one. `port` is the server's port (the peer's for a
// client, the local one for a server), `path` the server's Unix path (may be null).
void AttachProtocol(int fd, uint8_t kind, bool client, uint16_t port, const char* path,
                    size_t path_length);
// A UDP socket bound to (`bound`), or connected to, `port`: its datagrams go to the DNS
// processor if the selection names that port for dns.
void AttachDatagramProtocol(int fd, uint16_t port, bool bound);
// The port of an IPv4 or IPv6 address, 0 for others.
uint16_t PortOf(const struct sockaddr* address, socklen_t length);

// `fd` is being closed (or replaced by dup2): drops its reference to its stream, if any.
void DetachProtocol(int fd);
extern uint32_t g_fd_stream[kFdTableSize];  // descriptor -> its stream's slot id; 0: none
inline bool HasProtocolStream(int fd) {
  return fd >= 0 && fd < kFdTableSize && __atomic_load_n(&g_fd_stream[fd], __ATOMIC_RELAXED) != 0;
}
// `new_fd` became a copy of `old_fd` (dup family): it shares the stream.
void ShareProtocol(int old_fd, int new_fd);

// A stream call on a descriptor with kProtocolBit moved `bytes` bytes, in `data` or the
// first of `iov`; `sending` is the program's direction. Feeds them to the direction's
// parser and logs a boundary record for each message that ended in them.
void FeedStream(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                const struct iovec* iov, int iovcnt, size_t bytes);
// Plaintext a TLS library's record call moved on `fd` (tls_calls.cc): fed as FeedStream
// feeds a system call's bytes, at the same stream offsets (they go on from the bytes moved
// in the clear before TLS began).
void FeedTlsPlaintext(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                      size_t bytes);
// Streams whose system calls carried TLS records at a message start while no TLS library
// call was tied to them (statically linked TLS): their processors were stopped, never fed
// ciphertext. The end record's tls_opaque_streams.
uint64_t TlsOpaqueStreams();
// Bytes moved that cannot be fed (sendfile, MSG_TRUNC): the direction's parser stops.
void AbandonStream(int fd, bool sending);
// One datagram on a UDP socket: goes to the DNS processor if the socket or `peer` (the
// destination or source the call gave) is a DNS port, logging one boundary record.
void FeedDatagram(int fd, bool sending, int64_t entry, int64_t exit, const void* data,
                  const struct iovec* iov, int iovcnt, size_t bytes, const struct sockaddr* peer,
                  socklen_t peer_length);

// --- event isolation (isolation.cc, BorderPatrol §5.2) ---------------------------------

// Input bytes a read returned past a message's end, held back for the next read: mapped
// on demand per stream, unmapped at the stream's last close.
struct HeldBytes {
  uint8_t* data;
  uint32_t capacity;  // bytes mapped
  uint32_t start;     // the next byte to give
  uint32_t length;    // bytes still held
  // TLS reads (isolation.cc, IsolatedTlsRead): the thread (the address of a thread-local
  // of its own) and the turn of it that were last given bytes of this stream.
  const void* given_thread;
  uint32_t given_turn;
  int8_t nonblocking;  // the socket's O_NONBLOCK, asked once: -1 not yet
  bool drained;        // since given_turn began, the library said it had nothing more
};
// The input direction (what this process reads: requests at a server, responses at a
// client) of a stream, taken for one read.
struct InputSide {
  void* stream;
  int direction;
  HeldBytes* held;
};
// Takes the input direction of `fd`'s stream. False if it has none or it stays taken.
bool LockInput(int fd, InputSide* side);
void UnlockInput(const InputSide& side);
// How many of the `n` bytes at `data` (or in `iov`) belong to the current input message: up to and
// including its end if it ends in them, else n (also when the parser is not running).
// Logs nothing and changes no parser; the feed of the bytes the program then gets may
// reuse its work (protocol_streams.cc, BoundarySearch).
size_t InputBoundary(const InputSide& side, const void* data, const struct iovec* iov, int iovcnt,
                     size_t n);
// FeedStream of received bytes, with the input side taken.
void FeedInputTaken(const InputSide& side, int fd, int64_t entry, int64_t exit, const void* data,
                    const struct iovec* iov, int iovcnt, size_t bytes);
// True if `fd` is an input for one-input-per-wait (isolation.h): its stream has a
// processor that is not off and whose input direction is not broken.
bool FdIsInput(int fd);
// True if `fd`'s stream holds bytes back; g_held_streams counts such streams.
bool FdHasHeld(int fd);
extern uint32_t g_held_streams;
// A stream's held bytes went from none to some, in a read on `fd` (with its input side
// taken): counts the stream in g_held_streams and marks `fd` in g_held_fds.
void StartHolding(int fd);
// Descriptors below kHeldFdBits through which a stream began holding bytes, one bit each,
// so that a wait finds the held ones without asking every registered descriptor: a set bit
// may be stale (the bytes were read since, the descriptor closed), a clear one is not,
// except for a stream shared by several descriptors (dup), which may hold bytes while a
// descriptor other than the one read from is registered: once any stream was shared
// (g_streams_shared), callers ask every descriptor instead.
inline constexpr int kHeldFdBits = 1 << 16;
extern uint64_t g_held_fds[kHeldFdBits / 64];
extern bool g_streams_shared;

// In a forked child: locks another thread held at the fork are free again.
void ResetProtocolsAfterFork();

}  // namespace weft_preload
