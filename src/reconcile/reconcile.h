// reconcile: per-process event logs (capture/) -> one message trace (trace/).
//
// Takes the EventLogs of a capture run and gives a Trace whose messages carry both
// timestamps, both threads, bytes, CALL/RETURN and a call id. What it does, following
// vPath §3 (ATC'09) and WAP5 §4 (WWW'06):
//   - descriptor -> endpoint, per log, from endpoint records, close and dup
//     (connection_table.h);
//   - the two ends of a TCP connection are paired by reversed 4-tuple and lifetime, so a
//     reused port pairs with the right instance (vPath §3.3);
//   - a message is a run of sends in one direction until the direction turns (vPath §3.2
//     normalisation, WAP5's "fat messages"), and the two sides are lined up by byte offset,
//     so reads and writes of different sizes still match exactly.
// TCP, Unix stream sockets (paired by inode), pipes (by inode), UDP (each datagram a
// message, paired by ports and payload hash) and Unix datagram sockets (each datagram a
// message, paired by path or socketpair inode and payload hash) are reconciled. Forks and
// execs of traced processes become the trace's process links (BorderPatrol §5.5: paths
// continue across process creation).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "capture/event_log.h"
#include "core/status.h"
#include "reconcile/grpc_handoffs.h"
#include "reconcile/handoffs.h"
#include "trace/clock_offsets.h"
#include "trace/trace.h"

namespace weft::reconcile {

// How traced processes are named as nodes.
enum class NodeNaming : uint8_t {
  kHost,     // "host:program" (program = basename of the executable)
  kProcess,  // "host:program[pid]"
  kThread,   // "host:program[pid/tid]"
  kName,     // "host:name": the process's name (its main thread's comm, as ps shows it;
             // the program if the log has none), so processes of one program that name
             // themselves apart ("web0", "web1") are apart, and those that do not are one
};
Result<NodeNaming> ParseNodeNaming(std::string_view name);  // "host", "process", "thread", "name"

// Attribute holding a message's first bytes in hex, when capture logged a payload prefix
// (weft capture --payload-prefix N).
inline constexpr std::string_view kPayloadAttribute = "payload.prefix";

// Attribute naming the protocol whose processor found a message's end ("http", "redis",
// ...); the processor's own attributes (http.method, http.url, sql, ...) come with it.
inline constexpr std::string_view kProtocolAttribute = "protocol";

struct ReconcileOptions {
  NodeNaming nodes = NodeNaming::kHost;
};

struct ReconcileSummary {
  uint64_t events = 0;       // events read from all logs
  uint64_t connections = 0;  // TCP and Unix stream connection ends seen (one per side)
  uint64_t matched = 0;      // connections whose two ends were both traced and paired
  uint64_t half_traced = 0;  // connections with only one end traced (peer named by endpoint)
  uint64_t messages = 0;
  uint64_t bytes = 0;                   // bytes in all messages
  uint64_t datagrams = 0;               // UDP messages
  uint64_t datagrams_matched = 0;       // of them, seen at both ends
  uint64_t unix_datagrams = 0;          // Unix datagram socket messages
  uint64_t unix_datagrams_matched = 0;  // of them, seen at both ends
  uint64_t pipes = 0;                   // pipes with I/O (each one stream, whoever holds its ends)
  uint64_t skipped_io = 0;              // I/O on other sockets (raw, netlink, ...) and listeners
  uint64_t unnamed_io = 0;              // I/O events on descriptors no endpoint record named
  uint64_t retried_connects = 0;        // connects dated from the failed attempt they retried
  uint64_t unmatched_bytes = 0;         // bytes one end sent that the traced other end never read
  // Stream messages that ended at a protocol boundary (capture --protocols), by protocol
  // name; the rest ended where the direction turned.
  std::map<std::string, uint64_t> protocol_messages;
  std::vector<std::string> losses;  // one line per log that lost something
  // Logs skipped whole because they could not be read at all (ReadProblems::unreadable).
  // Reconcile never sees them: its caller, which read the logs, sets this.
  uint64_t unreadable_logs = 0;
  // Logs from several hosts (boot ids): per pair of hosts that exchanged messages timed at
  // both ends in both directions, b's clock minus a's, estimated as WAP5 §5.2 does
  // (trace/clock_offsets.h). The trace's times stay on each host's own clock.
  std::vector<ClockOffset> host_offsets;
  std::string HostClocks() const;  // "host clocks: b is 3.01s ahead of a (1234 messages)", or ""
  // Event isolation's extra work (capture --isolate, BorderPatrol Figure 15), summed over
  // the logs' end records: reads cut at a message end, reads served from held bytes,
  // waits that reported one input and held the others back.
  uint64_t isolated_reads = 0;
  uint64_t held_reads = 0;
  uint64_t held_bytes = 0;
  uint64_t split_waits = 0;
  // TLS, summed over the logs' end records: sockets whose plaintext came from the TLS
  // library's calls (its ciphertext system calls are not messages), and streams that
  // carried TLS records no interposed TLS library call was tied to (a statically linked
  // TLS library): ciphertext, left to direction turns, never parsed.
  uint64_t tls_streams = 0;
  uint64_t tls_opaque_streams = 0;
  // "note: ..." for the user about tls_opaque_streams, or "" if there were none.
  std::string TlsNote() const;
  // Forks and execs whose new process (image) was traced: each is a process link per
  // thread of it in the trace (trace.h ProcessLink).
  uint64_t forks_linked = 0;
  uint64_t execs_linked = 0;
  // Threads created with pthread_create, each linked to the thread that created it.
  uint64_t threads_linked = 0;
  // Work handed between threads through queues and wake-ups: each a HANDOFF link
  // (handoffs.h).
  HandoffCounts handoffs;
  // gRPC calls tied from the wire to the application's threads (grpc_handoffs.h).
  GrpcHandoffCounts grpc;

  std::string OneLine() const;  // "12345 events, 40 connections (18 matched, ...), ..."
  // ", 120 messages ended at protocol boundaries (http 80, redis 40)", or "" if none did.
  std::string ProtocolPart() const;
};

// Builds the trace. `summary` may be null. Logs sharing a boot id share one monotonic
// clock; all of them are mapped to the epoch through the first such log's reference, so
// their order is kept exactly.
Result<Trace> Reconcile(std::span<const capture::EventLog> logs, const ReconcileOptions& options,
                        ReconcileSummary* summary);

// What reading a capture directory could not read. Reading goes on past both kinds.
struct ReadProblems {
  // Damage inside a log, one line per piece naming the file and byte offset:
  // "run/web/7.wev: byte 65600: 65536 bytes lost: block checksum mismatch".
  std::vector<std::string> losses;
  // Logs skipped whole, one line each naming the file and what is wrong: a stray file
  // ("not a weft event log (bad magic at byte 0)"), a damaged or cut header, a file that
  // cannot be opened.
  std::vector<std::string> unreadable;
};

// Reads every `*.wev` under `dir` (recursively: one folder per host). Damage inside a log
// and logs that cannot be read at all are not errors: each is told in `problems` (may be
// null) and reading goes on. A missing directory, one without logs, or one none of whose
// logs can be read is an error. What each log lost overall is told by Reconcile's summary.
Result<std::vector<capture::EventLog>> ReadCaptureDirectory(const std::string& dir,
                                                            ReadProblems* problems);

// One line describing what `log` lost, or "" if nothing.
std::string DescribeLoss(const capture::EventLog& log);

}  // namespace weft::reconcile
