// The on-disk layout of a per-process event log (docs/formats.md, "Event log (.wev)"),
// shared by its one writer (preload/, the LD_PRELOAD library) and its reader
// (event_log.h). Plain structs of fixed-width integers and nothing else: the preload
// library includes this header and must not depend on the C++ runtime.
//
// What is recorded follows WAP5 §3 / Table 1 (LibSockCap): per call a timestamp, the
// descriptor, the length or error; per connection both endpoints, the local name bound by
// connect, the port a listening socket got without bind, the peer pid of Unix sockets;
// per datagram a payload hash. Unlike LibSockCap, each call has an entry and an exit time
// (vPath §3.3 needs a receive's completion time, which it had to approximate), and
// endpoints are logged once per descriptor, not on every send and receive.
//
// All integers are little-endian (the writer runs only on little-endian hosts). A log is a
// FileHeader, then chunks (version 2): fixed-size pieces of the file, each filled by one
// thread at a time, that the writer maps into memory and fills record by record, so that every
// record a thread has finished is in the kernel's page cache at once and survives the process being
// killed. Version 1 logs (still read) held blocks: a BlockHeader and the records one thread
// buffered, written with one write().
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace weft::capture::wire {

// "\x89WEV\r\n\x1a\n": not text, survives no line-ending conversion.
inline constexpr uint8_t kFileMagic[8] = {0x89, 'W', 'E', 'V', '\r', '\n', 0x1a, '\n'};
inline constexpr uint32_t kVersion = 2;                // what the writer writes
inline constexpr uint32_t kBlockVersion = 1;           // blocks written with write(); still read
inline constexpr uint32_t kBlockMagic = 0x42564557;    // "WEVB" as little-endian bytes
inline constexpr uint32_t kSegmentMagic = 0x53564557;  // "WEVS" as little-endian bytes

// Fixed part of the file header; the three strings (host, executable, arguments) follow
// back to back, then zero bytes up to `header_size`, a multiple of 8.
struct FileHeader {
  uint8_t magic[8];
  uint32_t version;
  uint32_t header_size;  // bytes, this struct + strings + padding; multiple of 8
  int32_t pid;
  int32_t parent_pid;
  uint32_t exec_index;           // 0: first program image logged under this pid; n: after n execs
  uint32_t payload_prefix;       // payload bytes kept per call (0: none)
  int64_t clock_realtime_ns;     // CLOCK_REALTIME, read just before `clock_monotonic_ns`
  int64_t clock_monotonic_ns;    // CLOCK_MONOTONIC: the clock of every time in the log
  int64_t clock_uncertainty_ns;  // realtime read again after; the pair is this far apart
  uint8_t boot_id[16];           // /proc/sys/kernel/random/boot_id: monotonic clocks are
                                 // comparable between logs with equal boot ids
  uint32_t block_size;           // version 2: the largest chunk (ChunkSize); chunk 0 starts at
                                 // header_size, each next one right after. Version 1: bytes
                                 // of one thread buffer (the largest block the writer made)
  uint32_t header_checksum;      // low 32 bits of XXH3-64 of the whole header, this field 0
  uint32_t host_length;
  uint32_t executable_length;
  uint32_t arguments_length;  // argv joined with NUL bytes, as /proc/PID/cmdline
  uint32_t argument_count;
};
static_assert(sizeof(FileHeader) == 96);

struct BlockHeader {
  uint32_t magic;         // kBlockMagic
  uint32_t payload_size;  // bytes of records after this header; multiple of 8
  uint32_t record_count;
  int32_t tid;                // thread whose records these are; 0 for the end-of-log block
  uint64_t dropped_events;    // events the process had lost when this block was written
  uint32_t payload_checksum;  // low 32 bits of XXH3-64 of the payload
  uint32_t header_checksum;   // low 32 bits of XXH3-64 of bytes 0-27 of this header
};
static_assert(sizeof(BlockHeader) == 32);

// Version 2. A chunk is a piece of the file (ChunkSize) that one thread at a time appends
// to. It holds segments, back to back from its start: a SegmentHeader, then the records one
// thread made. A thread that ends leaves its chunk to the next new thread, which starts a
// segment of its own after the last one (so short-lived threads share a chunk); the end
// record is a segment with thread 0. Everything is committed by storing its first 8 bytes
// last, with release order, after the rest: a record's type/op/size, a segment header's
// magic and tid. A reader stops at the first 8 zero bytes where a record or a segment
// header would be. A record and the payload record that belongs to it are committed
// together (the second's first bytes, then the first's). A segment whose thread is done
// with it (its chunk full, the thread ended, the end of the log) is sealed:
// `sealed_checksum`, then `sealed_size` (released last); only a sealed segment can be
// followed by another. The last segment of a chunk may be left open (its process was
// killed, or still runs): it is read up to its first uncommitted record.
struct SegmentHeader {
  uint32_t magic;            // kSegmentMagic
  int32_t tid;               // thread whose records these are; 0 for the end record's segment
  uint64_t dropped_events;   // events the process had lost when the segment was started
  uint32_t header_checksum;  // low 32 bits of XXH3-64 of bytes 0-15
  uint32_t reserved;
  uint32_t sealed_size;      // 0 while open; once sealed, bytes of records after the header
  uint32_t sealed_checksum;  // low 32 bits of XXH3-64 of those bytes
};
static_assert(sizeof(SegmentHeader) == 32);

// Version 2: chunk 0 runs from the end of the header to the first 4 KiB boundary at least
// 2 KiB past it; chunk k >= 1 is min(4 KiB << k, block_size) bytes. A process that logs a
// little (a child forked per request, a short command) takes one small chunk that ends on
// a file-system block boundary, so a clean end has nothing worth cutting off; a busy one
// reaches the largest chunks after a few.
inline constexpr uint32_t kFirstChunkSize = 4096;
inline constexpr uint64_t ChunkSize(uint32_t block_size, uint64_t header_size, uint64_t k) {
  if (k == 0) return (header_size + kFirstChunkSize / 2 + 4095) / 4096 * 4096 - header_size;
  return k >= 16 || (uint64_t(kFirstChunkSize) << k) >= block_size ? block_size
                                                                   : uint64_t(kFirstChunkSize) << k;
}

// Every record starts with these 8 bytes; `size` (a multiple of 8, at least 8) lets a
// reader skip a type it does not know.
enum RecordType : uint8_t {
  kCallRecord = 1,         // CallRecord
  kDatagramRecord = 2,     // DatagramRecord: a call that moved one datagram
  kEndpointRecord = 3,     // EndpointRecord: what a descriptor is and where it points
  kPayloadRecord = 4,      // PayloadRecord: first bytes of the previous record's data
  kEndRecord = 5,          // EndRecord: the process image ended (exit or exec)
  kBoundaryRecord = 6,     // BoundaryRecord: a protocol message ended in a stream
  kSyncRecord = 7,         // SyncRecord: a synchronisation call (hand-off evidence)
  kHeaderBlockRecord = 8,  // HeaderBlockRecord: compressed header-block bytes (HTTP/2)
  kNameRecord = 9,         // NameRecord: a thread's name
  kImageRecord = 10,       // ImageRecord: what the program image is, when capture is blind to it
  kHttp2FrameRecord = 11,  // Http2FrameRecord: an HTTP/2 frame ended in a stream
};

// The socket-API call a record describes. Values are part of the format.
enum Op : uint8_t {
  kOpNone = 0,  // endpoint records of descriptors found open when logging started
  kOpSocket = 1,
  kOpSocketpair = 2,
  kOpPipe = 3,
  kOpConnect = 4,
  kOpAccept = 5,
  kOpBind = 6,
  kOpListen = 7,
  kOpClose = 8,
  kOpShutdown = 9,
  kOpDup = 10,  // dup, dup2, dup3, fcntl(F_DUPFD*): fd is the old one, result the new one
  kOpRead = 11,
  kOpReadv = 12,
  kOpWrite = 13,
  kOpWritev = 14,
  kOpSend = 15,
  kOpSendto = 16,
  kOpSendmsg = 17,
  kOpSendmmsg = 18,  // one record per message, arg = its index in the vector
  kOpRecv = 19,
  kOpRecvfrom = 20,
  kOpRecvmsg = 21,
  kOpRecvmmsg = 22,  // one record per message, arg = its index in the vector
  kOpSendfile = 23,
  kOpPoll = 24,       // poll and ppoll; fd -1, arg = nfds
  kOpSelect = 25,     // select and pselect; fd -1, arg = nfds
  kOpEpollWait = 26,  // epoll_wait and epoll_pwait; fd = the epoll descriptor
  kOpFork = 27,       // fork, vfork (arg 0), posix_spawn (arg 1); result = child pid
  kOpExec = 28,       // written before the exec; a second one with -errno if it failed
  kOpThread = 29,     // pthread_create, logged by the new thread: entry = the creator's
                      // call entry, exit = the new thread's start, result = creator tid
  // Synchronisation calls, in SyncRecords (object and second: see SyncRecord).
  kOpMutexLock = 30,      // reserved: locks are not logged (a section is known by its end)
  kOpMutexUnlock = 31,    // pthread_mutex_unlock
  kOpCondWait = 32,       // pthread_cond_wait/timedwait/clockwait; second = the mutex;
                          // entry = the mutex released, exit = taken again
  kOpCondSignal = 33,     // pthread_cond_signal
  kOpCondBroadcast = 34,  // pthread_cond_broadcast
  kOpSemPost = 35,        // sem_post
  kOpSemWait = 36,        // sem_wait/timedwait/clockwait/trywait that took a unit
  kOpWakeCreate = 37,     // eventfd (arg 0) or timerfd_create (arg 1): object = the fd
  kOpWakeWrite = 38,      // a write to an eventfd: object = the fd, second = the value
  kOpWakeRead = 39,       // a read of an eventfd or timerfd: second = the value read
  kOpTimerArm = 40,       // timerfd_settime: object = the fd, second = first expiry
                          // (CLOCK_MONOTONIC ns; 0: disarmed)
  // TLS (preload/tls_calls.cc), in CallRecords. A TLS library's call on a connection's
  // socket, with the plaintext it moved: these are the connection's data once TLS is in
  // use, counted in its stream offsets as reads and writes are. arg = TlsFunction.
  kOpTlsRead = 41,   // SSL_read, SSL_read_ex, gnutls_record_recv: result = plaintext bytes
  kOpTlsWrite = 42,  // SSL_write, SSL_write_ex, gnutls_record_send
  // A system call that moved ciphertext (handshake, records, alerts) on a socket where a
  // TLS library is in use: not the connection's data. arg = the call's own op (kOpRead,
  // kOpSend, ...), result = its bytes or -errno.
  kOpTlsTransport = 43,
  // gRPC's C API as a gRPC C++ program calls it (preload/grpc_calls.cc), in SyncRecords:
  // the application's side of each call, whose thread causality the wire hides (gRPC's
  // own threads read and write the frames). object = the grpc_call, second = the hash of
  // the application's metadata (GrpcMetadataHash, grpc_metadata.h).
  kOpGrpcCreate = 44,  // grpc_channel_create_call/_registered_call made a client call
  kOpGrpcTake = 45,    // a server call (a new RPC) came out of a completion queue to this
                       // thread; second = its request metadata's hash
  kOpGrpcStart = 46,   // grpc_call_start_batch sent the call's initial metadata
  kOpCount = 47,
};
inline constexpr uint8_t kOpLastSync = kOpTimerArm;  // sync ops: kOpMutexLock..kOpLastSync
inline constexpr bool IsGrpcOp(uint8_t op) { return op >= kOpGrpcCreate && op <= kOpGrpcStart; }

// Which library function a kOpTlsRead or kOpTlsWrite record is.
enum TlsFunction : int32_t {
  kTlsOpensslPlain = 1,  // SSL_read / SSL_write
  kTlsOpensslEx = 2,     // SSL_read_ex / SSL_write_ex
  kTlsGnutls = 3,        // gnutls_record_recv / gnutls_record_send
};

// Socket (or pipe) kinds, as the descriptor table and endpoint records know them.
enum SocketKind : uint8_t {
  kKindUnknown = 0,
  kKindTcp = 1,
  kKindUdp = 2,
  kKindUnixStream = 3,
  kKindUnixDatagram = 4,
  kKindUnixSeqpacket = 5,
  kKindPipe = 6,
  kKindOtherSocket = 7,  // raw, netlink, packet, ...
  kKindEventfd = 8,      // eventfd and timerfd: wake-ups, logged as SyncRecords, never
  kKindTimerfd = 9,      // messages
};

// Address families in records (not the host's AF_ values, so the format is portable).
enum AddressFamily : uint8_t {
  kFamilyNone = 0,
  kFamilyIpv4 = 1,  // first 4 bytes of addr
  kFamilyIpv6 = 2,
  kFamilyUnix = 3,  // path bytes follow the record; empty path = unnamed
};

struct CallRecord {
  uint8_t type;  // kCallRecord
  uint8_t op;
  uint16_t size;  // 32
  int32_t fd;
  int64_t entry_ns;  // CLOCK_MONOTONIC when the call was entered
  int64_t exit_ns;   // and when it returned
  int32_t result;    // bytes, a descriptor, a count or 0; -errno on failure
  int32_t arg;       // op-specific: see docs/formats.md
};
static_assert(sizeof(CallRecord) == 32);

struct WireAddress {
  uint8_t family;       // AddressFamily
  uint8_t path_length;  // kFamilyUnix: bytes of path stored after the record
  uint16_t port;        // host byte order
  uint32_t scope_id;
  uint8_t addr[16];  // network byte order
};
static_assert(sizeof(WireAddress) == 24);

struct DatagramRecord {
  CallRecord call;        // type kDatagramRecord
  uint64_t payload_hash;  // XXH3-64 (seed 0) of the bytes sent or received
  WireAddress peer;       // sendto/sendmsg destination or recvfrom/recvmsg source, if any
};
static_assert(sizeof(DatagramRecord) == 64);

struct EndpointRecord {
  uint8_t type;   // kEndpointRecord
  uint8_t op;     // the call that named the descriptor (kOpNone: open at start)
  uint16_t size;  // 88 + local and peer path bytes, rounded up to 8
  int32_t fd;
  int64_t time_ns;
  uint8_t kind;       // SocketKind
  uint8_t listening;  // 1 after a successful listen
  uint16_t reserved;
  int32_t peer_pid;     // SO_PEERCRED of Unix sockets; 0 unknown
  uint64_t inode;       // st_ino of the socket or pipe
  uint64_t peer_inode;  // socketpair and pipe: the other end's st_ino; 0 unknown
  WireAddress local;
  WireAddress peer;
  // then local.path_length bytes, then peer.path_length bytes, then zeros to `size`
};
static_assert(sizeof(EndpointRecord) == 88);

struct PayloadRecord {
  uint8_t type;   // kPayloadRecord
  uint8_t op;     // the op of the record it belongs to
  uint16_t size;  // 16 + length rounded up to 8
  int32_t fd;
  uint32_t length;  // bytes stored after this header
  uint32_t reserved;
};
static_assert(sizeof(PayloadRecord) == 16);

struct EndRecord {
  uint8_t type;   // kEndRecord
  uint8_t op;     // kOpNone at exit, kOpExec before an exec
  uint16_t size;  // 88 (40 before event isolation, 64 before split_waits, 72 before the
                  // TLS counters: readers take the counters a record lacks as 0)
  int32_t reserved;
  int64_t time_ns;
  uint64_t dropped_events;     // events lost: buffers that could not be written, signals
                               // that arrived while a record was being written, ...
  uint64_t untraced_io_calls;  // read/write family calls on files (counted, not logged)
  uint64_t failed_writes;      // log writes that failed (their events are in dropped)
  // Event isolation (weft capture --isolate, BorderPatrol §5.2 and Figure 15): the extra
  // work it did. Reads cut short at a message boundary, reads served from held-back bytes
  // without a system call (each is one more read call than the program would have made),
  // and the bytes held back in all.
  uint64_t isolated_reads;
  uint64_t held_reads;
  uint64_t held_bytes;
  // Waits that reported one input of several and held the others back for later waits
  // (BorderPatrol §3.2, one event at a time): each is one wait more than untraced.
  uint64_t split_waits;
  // TLS: connections whose plaintext was logged from the TLS library's calls, and streams
  // that carried TLS records the library never saw (a TLS library linked statically, or
  // one weft does not interpose): their bytes are ciphertext, parsed by no processor.
  uint64_t tls_streams;
  uint64_t tls_opaque_streams;
};
static_assert(sizeof(EndRecord) == 88);

// A protocol processor (capture/protocols/, BorderPatrol §3.3) found the end of a
// message in the bytes a call moved on a stream (TCP, Unix stream) or in one datagram.
// Written right after the call's record (and its payload record), one per message that
// ended in the call, in stream order.
//
// `offset` is the stream offset just past the message's last byte: the number of bytes
// moved in `direction` on this connection, counted from 0 when it was set up (the connect
// or accept that named the descriptor, whose endpoint record reconcile starts counting
// at), through every descriptor sharing the open file description (dup, fork), up to and
// including the message's last byte. Reconcile counts the same bytes: the results of the
// send or receive calls on the connection, in order. Datagrams: 0 (the datagram is the
// message). Receives with MSG_PEEK move nothing and are not counted.
//
// Attributes follow as text: "key=value" entries, each ended by a NUL byte
// (`attributes_length` bytes in all, NUL bytes of a value replaced by '?'), then zeros to
// `size`. Keys are the processors' (http.method, http.url, sql, redis.command, dns.id, ...).
enum BoundaryDirection : uint8_t { kBoundarySent = 0, kBoundaryReceived = 1 };
enum BoundaryMessage : uint8_t { kBoundaryRequest = 0, kBoundaryResponse = 1 };
struct BoundaryRecord {
  uint8_t type;      // kBoundaryRecord
  uint8_t protocol;  // capture::protocols::Protocol (1 http, 2 testbed, 3 postgres, ...)
  uint16_t size;     // 40 + attributes_length, rounded up to 8
  int32_t fd;
  int64_t entry_ns;  // entry and exit of the call that moved the message's last byte
  int64_t exit_ns;
  uint64_t offset;    // stream offset just past the message's last byte (0 for datagrams)
  uint8_t direction;  // BoundaryDirection: the process sent or received the message
  uint8_t message;    // BoundaryMessage: a request (client to server) or a response
  uint16_t attributes_length;
  uint32_t reserved;
};
static_assert(sizeof(BoundaryRecord) == 40);

// The end of an HTTP/2 frame of a stream: what a BoundaryRecord with the http2 processor's
// attributes says (capture::protocols::SetHttp2FrameAttributes gives them back), in 48
// bytes of numbers instead of some 100 of text, for the two or three frames of every
// request and response.
struct Http2FrameRecord {
  uint8_t type;        // kHttp2FrameRecord
  uint8_t frame_type;  // RFC 9113 §6: DATA, HEADERS, RST_STREAM, SETTINGS, PUSH_PROMISE,
                       // CONTINUATION
  uint16_t size;       // 48
  int32_t fd;
  int64_t entry_ns;  // entry and exit of the call that moved the frame's last byte
  int64_t exit_ns;
  uint64_t offset;    // stream offset just past the frame's last byte
  uint8_t direction;  // BoundaryDirection
  uint8_t message;    // BoundaryMessage
  uint8_t flags;      // the frame's flags
  uint8_t reserved;
  uint32_t stream;
  uint32_t length;  // payload bytes
  uint32_t extra;   // PUSH_PROMISE: the promised stream; SETTINGS: SETTINGS_HEADER_TABLE_SIZE
};
static_assert(sizeof(Http2FrameRecord) == 48);

// Bytes of a compressed header block (HTTP/2's HPACK, RFC 7541) that a call moved on a
// stream, for reconcile to decode: a processor that leaves header blocks compressed
// (protocols::HeaderBlockBytes) has them logged so, since decoding needs a table as large
// as the connection's and the traced program should not pay for it. Written right after
// the call's record, before the boundary record of the frame they belong to; a block split
// over several calls is logged in pieces, put back together by offset. `offset` is the
// stream offset of the first byte (counted as BoundaryRecord's), `length` bytes follow,
// then zeros to `size`. A run longer than kMaxHeaderBlockPiece is several records. Readers
// that predate the record skip it by its size.
struct HeaderBlockRecord {
  uint8_t type;      // kHeaderBlockRecord
  uint8_t protocol;  // capture::protocols::Protocol (kHttp2)
  uint16_t size;     // 32 + length, rounded up to 8
  int32_t fd;
  int64_t entry_ns;   // the call that moved the bytes
  uint64_t offset;    // stream offset of the first byte
  uint8_t direction;  // BoundaryDirection
  uint8_t message;    // BoundaryMessage
  uint16_t length;
  uint32_t reserved;
};
static_assert(sizeof(HeaderBlockRecord) == 32);
inline constexpr uint32_t kMaxHeaderBlockPiece = 1024;  // the record is built on the stack

// A thread's name (its comm, 15 bytes at most, as `ps` and `top` show it): logged before a
// thread's first record, with what the thread inherited or was given before it logged
// anything, and again each time the program renames a thread (prctl(PR_SET_NAME),
// pthread_setname_np). The record sits in the renaming thread's segment; `tid` names the
// thread renamed. Readers that predate the record skip it by its size.
enum NameReason : uint8_t {
  kNameFirstSeen = 0,  // the thread's name when it logged its first record
  kNameRenamed = 1,    // the program named the thread
};
struct NameRecord {
  uint8_t type;    // kNameRecord
  uint8_t reason;  // NameReason
  uint16_t size;   // 32
  int32_t tid;
  int64_t time_ns;
  char name[16];  // NUL-padded
};
static_assert(sizeof(NameRecord) == 32);

// What the program image is, logged once when logging starts, only where it matters: a
// Go program (go_image.h) makes its system calls itself, so the log of one holds none of
// its I/O. Readers that predate the record skip it by its size.
enum ImageRuntime : uint8_t {
  kRuntimeGo = 1,  // built by the Go toolchain: its I/O bypasses the C library
};
struct ImageRecord {
  uint8_t type;     // kImageRecord
  uint8_t runtime;  // ImageRuntime
  uint16_t size;    // 16
  uint32_t reserved;
  int64_t time_ns;
};
static_assert(sizeof(ImageRecord) == 16);

// A synchronisation call (preload/sync_calls.cc): the object handed over through, so that
// reconcile can link the thread that handed work over to the one that took it. Objects are
// the addresses of the mutex, condition variable or semaphore in the process (comparable
// only within one program image), or the descriptor of an eventfd or timerfd.
struct SyncRecord {
  uint8_t type;    // kSyncRecord
  uint8_t op;      // kOpMutexLock ... kOpTimerArm, or a gRPC op (kOpGrpcCreate ...)
  uint16_t size;   // 40
  int32_t result;  // 0, or -errno (a wait that timed out: -ETIMEDOUT)
  int64_t entry_ns;
  int64_t exit_ns;
  uint64_t object;
  uint64_t second;  // op-specific (Op above); 0 otherwise
};
static_assert(sizeof(SyncRecord) == 40);

inline constexpr uint32_t kMaxRecordSize = 65528;  // fits uint16_t size, multiple of 8

inline constexpr uint32_t RoundUp8(uint32_t n) { return (n + 7u) & ~7u; }

}  // namespace weft::capture::wire
