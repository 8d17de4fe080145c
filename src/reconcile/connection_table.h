// Descriptor -> TCP connection end, per event log (docs/capture.md "For reconcile").
//
// Walks one log's events in order: an endpoint record names a descriptor from then on,
// close ends the name, dup copies it (a dup2/dup3 onto a named descriptor ends that name
// first). A connection end lives while any descriptor names it. Descriptors inherited
// through fork or exec are named by records with op "none" at the start of the child's
// log; MergeInheritedEnds folds those into the parent's end, so the bytes both processes
// moved on one socket form one stream (vPath §3.1 follows a socket, not a process).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capture/event_log.h"
#include "core/time.h"

namespace weft::reconcile {

// Per boot id, what maps that boot's monotonic clock onto the trace's.
using BootOffsets = std::map<std::array<uint8_t, 16>, TimeNs>;

enum class Opener : uint8_t { kConnect, kAccept, kSocketpair, kUnknown };

// One send or receive on a connection end that moved at least one byte.
struct StreamIo {
  TimeNs entry_ns = 0;  // realtime (epoch) nanoseconds
  TimeNs exit_ns = 0;
  int64_t bytes = 0;
  int32_t tid = 0;
  uint32_t log = 0;                  // which log (process image) did it
  int32_t payload = capture::kNone;  // index into that log's payloads (--payload-prefix)
  bool send = false;
};

// The end of a protocol message that a protocol processor found in this end's stream
// (capture's boundary records, BorderPatrol §3.3).
struct StreamBoundary {
  int64_t offset = 0;                 // stream offset just past the message's last byte
  bool send = false;                  // in this end's sending direction (else its receiving one)
  bool request = false;               // a request (client to server), else a response
  uint8_t protocol = 0;               // capture::protocols::Protocol
  uint32_t log = 0;                   // the log that holds it
  int32_t boundary = capture::kNone;  // index into that log's boundaries (attributes)
};

// One end of a TCP connection or of a connected Unix stream socket (or socketpair) as the
// processes on one side saw it.
struct ConnectionEnd {
  std::string local;  // "ip:port", "unix:/path", "unix:" (unnamed)
  std::string peer;
  bool unix_socket = false;
  bool pipe = false;        // a pipe: both its descriptors, in every process, form one end
  uint64_t inode = 0;       // Unix: this end's socket inode
  uint64_t peer_inode = 0;  // Unix: the other end's, 0 where not logged (the connecting end)
  std::array<uint8_t, 16> boot_id{};
  Opener opener = Opener::kUnknown;
  uint32_t log = 0;    // the log that named it first
  TimeNs open_ns = 0;  // realtime
  // When the accept or connect call that made it began (realtime; kNoTime if not logged):
  // the socket may be in another process from then on (a fork during the call).
  TimeNs open_call_ns = kNoTime;
  int32_t open_tid = 0;  // the thread that connected, accepted or was found with it
  // An accepted connection's first read that found nothing, before any byte moved (kNoTime
  // if none), and the thread that made it: when that thread took the connection up.
  TimeNs taken_ns = kNoTime;
  int32_t taken_tid = 0;
  TimeNs close_ns = kNoTime;               // realtime of the last close; kNoTime if never closed
  std::vector<StreamIo> io;                // in entry order
  std::vector<StreamBoundary> boundaries;  // in log order (offsets rise per direction)
  // Compressed header-block pieces (HTTP/2; capture's header-block records): `offset` is
  // the stream offset of a piece's first byte, `boundary` indexes its bytes.
  std::vector<StreamBoundary> header_blocks;
  bool merged_away = false;  // folded into another end (inherited descriptor)
};

// A datagram socket, UDP or Unix, as its endpoint records named it. A UDP socket's local
// port may be named only after its first send (the kernel bound it then), so datagrams
// refer to the socket by index and read its names once the whole log has been walked.
struct DatagramSocket {
  std::string local;  // "0.0.0.0:53", "127.0.0.1:40000", "unix:/dev/log", "unix:" (unnamed)
  uint16_t local_port = 0;
  std::string peer;  // a connected socket's peer; "" if not connected (or unnamed)
  uint16_t peer_port = 0;
  bool bound = false;        // bound explicitly, or inherited bound: it serves a known port or path
  bool unix_socket = false;  // AF_UNIX SOCK_DGRAM
  bool connected = false;    // connect() named its peer (a client, even one bound for replies)
  uint64_t inode = 0;        // Unix: this socket's inode
  uint64_t peer_inode = 0;   // Unix: the other end's, for a socketpair (whose ends have no path)
  uint32_t log = 0;
};

// One datagram sent or received (sendto/recvfrom family, or send/recv/read/write on a
// connected datagram socket), with the XXH3-64 of its bytes.
struct Datagram {
  uint32_t socket = 0;  // index into the datagram sockets
  TimeNs entry_ns = 0;  // realtime
  TimeNs exit_ns = 0;
  int64_t bytes = 0;
  uint64_t hash = 0;
  // Sent to / came from; the socket's peer if the call gave none. Unix: "unix:" for an
  // unnamed source (an unbound sender) or a send on a socketpair end.
  std::string peer;
  uint16_t peer_port = 0;
  int32_t tid = 0;
  uint32_t log = 0;
  int32_t payload = capture::kNone;
  int32_t boundary = capture::kNone;  // the DNS processor's record for it (attributes)
  bool send = false;
};

struct ConnectionTableCounts {
  uint64_t events = 0;
  uint64_t skipped_io = 0;        // I/O on other sockets (raw, netlink, ...) and listeners
  uint64_t unnamed_io = 0;        // I/O on descriptors no record named
  uint64_t retried_connects = 0;  // connects dated from the failed attempt they retried
};

// `realtime_offset_ns` maps the log's monotonic times to the epoch (added to them).
// Appends the TCP connection ends of `log` (number `log_index`) to `ends`.
// Appends its datagram sockets (UDP and Unix) and datagrams to `datagram_sockets` and
// `datagrams`.
void CollectConnectionEnds(const capture::EventLog& log, uint32_t log_index,
                           TimeNs realtime_offset_ns, std::vector<ConnectionEnd>& ends,
                           std::vector<DatagramSocket>& datagram_sockets,
                           std::vector<Datagram>& datagrams, ConnectionTableCounts& counts);

// Folds each end named by inheritance (opener unknown, op "none") into an end on the same
// boot with the same 4-tuple (Unix: the same inode) that was open when it appeared; marks
// it merged_away. `logs` are the logs the ends' `log` indexes name (for their pids).
void MergeInheritedEnds(std::span<const capture::EventLog> logs, std::vector<ConnectionEnd>& ends);

}  // namespace weft::reconcile
