// Reading per-process event logs (.wev), written by the preload library (preload/) under
// `weft capture`. The layout is in event_log_format.h and docs/formats.md.
//
// Contract for reconcile: an EventLog holds one program image (one process until it
// execs); its events are one flat vector sorted by entry time, each thread's own events in
// the order they happened. Times are CLOCK_MONOTONIC nanoseconds of the host identified by
// `header.boot_id`; `ToRealtime` maps them to the Unix epoch through the header's clock
// reference. Descriptors are named by kEndpoint events (once per descriptor, when it is
// created, connected, bound, accepted or listens), so reconcile tracks fd -> endpoint
// itself; close and dup events end and copy those names.
//
// A damaged log is read as far as it can be (LevelDB's log reader). Version 2 (chunks of
// segments): a killed process's log holds every record committed before the kill; each
// segment is read up to its first uncommitted record, unused room is skipped, a sealed
// segment that fails its checksum is skipped, and a damaged segment header ends its chunk,
// while reading goes on. Version 1 (blocks): a log cut short yields every whole record before
// the cut; a block that fails its checksum is skipped and reading goes on at the next
// valid block. What was lost is counted in EventLog::loss and told, one line each, to an
// optional Reporter. Only a damaged or foreign file header is an error.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/event_log_format.h"
#include "core/status.h"
#include "core/time.h"

namespace weft::capture {

enum class EventOp : uint8_t {
  kSocket = wire::kOpSocket,
  kSocketpair = wire::kOpSocketpair,
  kPipe = wire::kOpPipe,
  kConnect = wire::kOpConnect,
  kAccept = wire::kOpAccept,
  kBind = wire::kOpBind,
  kListen = wire::kOpListen,
  kClose = wire::kOpClose,
  kShutdown = wire::kOpShutdown,
  kDup = wire::kOpDup,
  kRead = wire::kOpRead,
  kReadv = wire::kOpReadv,
  kWrite = wire::kOpWrite,
  kWritev = wire::kOpWritev,
  kSend = wire::kOpSend,
  kSendto = wire::kOpSendto,
  kSendmsg = wire::kOpSendmsg,
  kSendmmsg = wire::kOpSendmmsg,
  kRecv = wire::kOpRecv,
  kRecvfrom = wire::kOpRecvfrom,
  kRecvmsg = wire::kOpRecvmsg,
  kRecvmmsg = wire::kOpRecvmmsg,
  kSendfile = wire::kOpSendfile,
  kPoll = wire::kOpPoll,
  kSelect = wire::kOpSelect,
  kEpollWait = wire::kOpEpollWait,
  kFork = wire::kOpFork,
  kExec = wire::kOpExec,
  kThread = wire::kOpThread,  // tid: the new thread; result: the thread that created it
  // Synchronisation (Event::object and Event::second say on what; event_log_format.h)
  kMutexLock = wire::kOpMutexLock,
  kMutexUnlock = wire::kOpMutexUnlock,
  kCondWait = wire::kOpCondWait,
  kCondSignal = wire::kOpCondSignal,
  kCondBroadcast = wire::kOpCondBroadcast,
  kSemPost = wire::kOpSemPost,
  kSemWait = wire::kOpSemWait,
  kWakeCreate = wire::kOpWakeCreate,
  kWakeWrite = wire::kOpWakeWrite,
  kWakeRead = wire::kOpWakeRead,
  kTimerArm = wire::kOpTimerArm,
  // TLS: plaintext moved by the TLS library (the connection's data once TLS is in use), and
  // the ciphertext system calls underneath (arg: the call's own op), which are not data.
  kTlsRead = wire::kOpTlsRead,
  kTlsWrite = wire::kOpTlsWrite,
  kTlsTransport = wire::kOpTlsTransport,
  // gRPC's C API (Event::object: the grpc_call; Event::second: its metadata's hash)
  kGrpcCreate = wire::kOpGrpcCreate,
  kGrpcTake = wire::kOpGrpcTake,
  kGrpcStart = wire::kOpGrpcStart,
  kEndpoint = 100,     // not a call: an endpoint record (Event::endpoint says which)
  kBoundary = 101,     // not a call: a protocol message ended (Event::boundary says which)
  kHeaderBlock = 102,  // not a call: header-block bytes (Event::boundary says which)
};

// "send", "recvmsg", "endpoint", ...
std::string_view EventOpName(EventOp op);
// Bytes leave the process (send family, write family, sendfile) / arrive (recv, read).
bool IsSendOp(EventOp op);
bool IsRecvOp(EventOp op);

struct Address {
  wire::AddressFamily family = wire::kFamilyNone;
  uint16_t port = 0;
  uint32_t scope_id = 0;
  std::array<uint8_t, 16> ip{};  // network byte order; IPv4 in the first 4 bytes
  std::string path;              // Unix sockets; may start with NUL (abstract namespace)
};
// "127.0.0.1:8080", "[::1]:53", "unix:/run/x.sock", "unix:@abstract", "unix:" (unnamed).
std::string FormatAddress(const Address& a);

struct Endpoint {
  wire::SocketKind kind = wire::kKindUnknown;
  bool listening = false;
  int32_t peer_pid = 0;     // Unix sockets: SO_PEERCRED; 0 unknown
  uint64_t inode = 0;       // of the socket or pipe
  uint64_t peer_inode = 0;  // socketpair and pipe: the other end; 0 unknown
  Address local, peer;
};

// A protocol message that ended in a stream (or a datagram): where, and what the
// protocol processor saw in it (event_log_format.h, BoundaryRecord).
struct Boundary {
  uint8_t protocol = 0;  // capture::protocols::Protocol
  bool sent = false;     // the process sent the message (else received it)
  bool request = false;  // a request, client to server (else a response)
  uint64_t offset = 0;   // stream offset just past the message's last byte; 0: datagram
  std::vector<std::pair<std::string, std::string>> attributes;  // in the processor's order
  // Not an end but compressed header-block bytes (HeaderBlockRecord, HTTP/2): these bytes,
  // the first at stream offset `offset`; no attributes.
  std::string header_block;
};

inline constexpr int32_t kNone = -1;

struct Event {
  EventOp op;
  int32_t tid = 0;
  int32_t fd = -1;
  TimeNs entry_ns = 0;  // CLOCK_MONOTONIC; for kEndpoint both are the time it was named
  TimeNs exit_ns = 0;
  int32_t result = 0;         // bytes, new descriptor, count, child pid; -errno on failure
  int32_t arg = 0;            // op-specific (docs/formats.md): cause op of kEndpoint, ...
  int32_t endpoint = kNone;   // kEndpoint: index into EventLog::endpoints
  int32_t boundary = kNone;   // kBoundary: index into EventLog::boundaries
  int32_t peer = kNone;       // datagrams: index into EventLog::addresses (sent to/came from)
  int32_t payload = kNone;    // index into EventLog::payloads (--payload-prefix)
  bool datagram = false;      // payload_hash is set
  uint64_t payload_hash = 0;  // datagrams: XXH3-64 of the bytes sent or received
  uint64_t object = 0;        // synchronisation: the mutex, condition variable, semaphore
  uint64_t second = 0;        // (addresses) or eventfd/timerfd; `second` as in SyncRecord
};

// A synchronisation call (kMutexLock ... kTimerArm).
bool IsSyncOp(EventOp op);

struct EventLogHeader {
  uint32_t version = 0;  // 2: chunks, every committed record survives a kill; 1: blocks
  int32_t pid = 0;
  int32_t parent_pid = 0;
  uint32_t exec_index = 0;
  uint32_t payload_prefix = 0;
  TimeNs clock_realtime_ns = 0;
  TimeNs clock_monotonic_ns = 0;
  TimeNs clock_uncertainty_ns = 0;
  std::array<uint8_t, 16> boot_id{};
  uint32_t block_size = 0;  // largest chunk (version 2), thread buffer size (version 1)
  std::string host;
  std::string executable;
  std::vector<std::string> arguments;
};

// What could not be read, and what the writer said it lost.
struct EventLogLoss {
  uint64_t truncated_bytes = 0;  // after the last whole record of a log cut short, or of a
                                 // record a killed process had not committed
  uint64_t corrupt_bytes = 0;    // in blocks or segments skipped for bad checksums or framing
  uint64_t corrupt_blocks = 0;   // blocks or segments
  // The writer's own count of dropped events: from the end record if there is one, else
  // the largest count seen in a block or segment header (events dropped after it are not
  // known).
  uint64_t dropped_events = 0;
  uint64_t untraced_io_calls = 0;  // only from the end record
  uint64_t failed_writes = 0;      // only from the end record
  // Event isolation's extra work (capture --isolate), only from the end record: reads cut
  // short at a message boundary, reads served from held-back bytes, bytes held back, waits
  // that reported one input of several (one more wait each).
  uint64_t isolated_reads = 0;
  uint64_t held_reads = 0;
  uint64_t held_bytes = 0;
  uint64_t split_waits = 0;
  // TLS, only from the end record: connections whose plaintext came from the TLS library's
  // calls, and streams that carried TLS records no interposed library saw (statically
  // linked TLS: ciphertext only).
  uint64_t tls_streams = 0;
  uint64_t tls_opaque_streams = 0;
  // A Go program (go_image.h, ImageRecord): its I/O bypassed the C library, so none of it
  // is in the log.
  bool go_runtime = false;
  // false: killed or still running. Version 2: every record committed before is in the
  // log; version 1: the writer's last buffers are missing.
  bool has_end_record = false;
  bool ended_by_exec = false;
};

// A thread's name (its comm) from a name record: what it had when it logged its first
// record, and each time the program renamed it.
struct ThreadName {
  int32_t tid = 0;
  TimeNs time_ns = 0;
  bool renamed = false;  // the program named it (prctl, pthread_setname_np)
  std::string name;
};

struct EventLog {
  std::string path;
  EventLogHeader header;
  std::vector<Event> events;
  std::vector<Endpoint> endpoints;
  std::vector<Address> addresses;
  std::vector<std::string> payloads;
  std::vector<Boundary> boundaries;
  // In log order: a thread's own records are in time order, but a rename of another
  // thread sits in the renaming thread's segment; order by time_ns to follow a thread.
  std::vector<ThreadName> thread_names;
  EventLogLoss loss;
  uint64_t blocks = 0;  // blocks (version 1) or segments (version 2) read

  // In unsigned arithmetic: a damaged header's clock reference may be any 64-bit value,
  // and a meaningless time is better than undefined behaviour.
  TimeNs ToRealtime(TimeNs monotonic_ns) const {
    return TimeNs(uint64_t(monotonic_ns) - uint64_t(header.clock_monotonic_ns) +
                  uint64_t(header.clock_realtime_ns));
  }
};

// Told about each piece of a log that could not be read, as it is found.
class Reporter {
 public:
  virtual ~Reporter() = default;
  // `bytes` were lost at `offset`; `reason` is one line.
  virtual void Lost(uint64_t offset, uint64_t bytes, std::string_view reason) = 0;
};

// The process's name as `ps` shows it: the last name its main thread (tid == pid) was
// given or, if the main thread logged none, the first name any thread logged; empty for a
// log without name records (written before they existed).
std::string ProcessName(const EventLog& log);
// The name of the process's program: argv[0]'s basename when it is a plain command, else
// the executable's (capture/program_name.h says why).
std::string ProgramName(const EventLog& log);

// Decodes a whole log held in memory; `name` is used in messages.
Result<EventLog> DecodeEventLog(std::span<const uint8_t> data, std::string_view name,
                                Reporter* reporter = nullptr);
// Maps and decodes the log at `path`.
Result<EventLog> ReadEventLog(const std::string& path, Reporter* reporter = nullptr);

// Every *.wev under `dir` (recursively), sorted by name.
Result<std::vector<std::string>> FindEventLogs(const std::string& dir);

// One line per event for people and golden tests:
// "12.000345678 tid 4012 send fd 5 -> 1 [4.1us]"
std::string FormatEvent(const EventLog& log, const Event& e);

}  // namespace weft::capture
