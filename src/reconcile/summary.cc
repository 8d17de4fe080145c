// The reconcile summary's lines (reconcile.h ReconcileSummary) and DescribeLoss.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "reconcile/reconcile.h"

namespace weft::reconcile {

std::string ReconcileSummary::OneLine() const {
  return fmt::format(
             "{} events, {} connection ends ({} paired, {} half-traced), {} messages, {} bytes, "
             "{} bytes never read, {} UDP datagrams ({} seen at both ends), {} Unix datagrams ({} "
             "seen "
             "at both ends), {} pipes, {} I/O events on other sockets skipped, {} I/O events on "
             "unnamed "
             "descriptors, {} logs with losses",
             events, connections, matched, half_traced, messages, bytes, unmatched_bytes, datagrams,
             datagrams_matched, unix_datagrams, unix_datagrams_matched, pipes, skipped_io,
             unnamed_io, losses.size()) +
         (unreadable_logs == 0 ? ""
                               : fmt::format(", {} unreadable logs skipped", unreadable_logs)) +
         ProtocolPart() +
         (retried_connects == 0
              ? ""
              : fmt::format(", {} connects dated from the failed attempt they retried",
                            retried_connects)) +
         (forks_linked + execs_linked == 0
              ? ""
              : fmt::format(", {} forks and {} execs linked to the processes they started",
                            forks_linked, execs_linked)) +
         (threads_linked == 0 ? ""
                              : fmt::format(", {} threads linked to the threads that created them",
                                            threads_linked)) +
         (handoffs.queue_items + handoffs.wakes == 0
              ? ""
              : fmt::format(", {} hand-offs between threads ({} queue items, {} of them taken "
                            "while others waited, {} from a broadcast that woke several; {} "
                            "wake-ups, {} ambiguous; {} takes and {} items unpaired, {} "
                            "broadcasts unheard)",
                            handoffs.queue_items + handoffs.wakes, handoffs.queue_items,
                            handoffs.fifo_assumed, handoffs.broadcasts_shared, handoffs.wakes,
                            handoffs.wakes_ambiguous, handoffs.takes_unexplained,
                            handoffs.items_never_taken, handoffs.broadcasts_unheard)) +
         (grpc.takes + grpc.starts == 0
              ? ""
              : fmt::format(", gRPC: {} of {} server calls and {} of {} client calls tied to "
                            "their streams ({} and {} left untied: streams with alike "
                            "metadata), {} replies",
                            grpc.takes_linked, grpc.takes, grpc.starts_linked, grpc.starts,
                            grpc.takes_ambiguous, grpc.starts_ambiguous, grpc.answers_linked)) +
         (tls_streams == 0 ? "" : fmt::format(", {} TLS sockets read as plaintext", tls_streams)) +
         (tls_opaque_streams == 0
              ? ""
              : fmt::format(", {} streams of TLS ciphertext not read", tls_opaque_streams)) +
         (isolated_reads + held_reads + split_waits == 0
              ? ""
              : fmt::format(
                    ", event isolation: {} reads cut at a message end, {} served from {} held "
                    "bytes, {} waits held inputs back",
                    isolated_reads, held_reads, held_bytes, split_waits));
}

std::string ReconcileSummary::TlsNote() const {
  if (tls_opaque_streams == 0) return "";
  return fmt::format(
      "note: {} streams carried TLS records but no TLS library call of the program was seen "
      "(OpenSSL or GnuTLS linked statically, another TLS library, or OpenSSL's SSL BIO): "
      "their messages are ciphertext, cut only where the direction turns, with no "
      "attributes. To read them, run a build of the program that links libssl or "
      "libgnutls dynamically and calls SSL_read/SSL_write or gnutls_record_recv/send "
      "(docs/capture.md \"TLS\")",
      tls_opaque_streams);
}

std::string ReconcileSummary::HostClocks() const {
  std::vector<std::string> parts;
  for (const ClockOffset& h : host_offsets) {
    parts.push_back(
        fmt::format("{} is {}{} ahead of {} ({} messages)", h.b, h.offset >= 0 ? "" : "-",
                    FormatDuration(h.offset >= 0 ? h.offset : -h.offset), h.a, h.messages));
  }
  return parts.empty() ? "" : fmt::format("host clocks: {}", fmt::join(parts, "; "));
}

std::string ReconcileSummary::ProtocolPart() const {
  if (protocol_messages.empty()) return "";
  uint64_t total = 0;
  std::vector<std::string> parts;
  for (const auto& [protocol, count] : protocol_messages) {
    total += count;
    parts.push_back(fmt::format("{} {}", protocol, count));
  }
  return fmt::format(", {} messages ended at protocol boundaries ({})", total,
                     fmt::join(parts, ", "));
}

std::string DescribeLoss(const capture::EventLog& log) {
  const capture::EventLogLoss& l = log.loss;
  std::vector<std::string> parts;
  // A Go program exits without the C library's exit, so its log never has an end record;
  // its own line below says what matters.
  if (!l.has_end_record && !l.go_runtime) {
    // Version 2 logs hold every record committed before the process stopped; version 1
    // logs lost what their writer still buffered.
    parts.push_back(log.header.version >= 2
                        ? "no end record (killed: every record written before is here)"
                        : "no end record (killed or still running: its last buffers are missing)");
  }
  if (l.dropped_events > 0)
    parts.push_back(fmt::format("{} events dropped by the writer", l.dropped_events));
  if (l.truncated_bytes > 0)
    parts.push_back(fmt::format("{} bytes cut off after the last whole record", l.truncated_bytes));
  if (l.corrupt_bytes > 0) {
    parts.push_back(
        fmt::format("{} bytes in {} corrupt blocks skipped", l.corrupt_bytes, l.corrupt_blocks));
  }
  if (l.failed_writes > 0) parts.push_back(fmt::format("{} log writes failed", l.failed_writes));
  if (l.go_runtime) {
    std::string name = capture::ProcessName(log);
    if (name.empty()) name = capture::ProgramName(log);
    parts.push_back(fmt::format(
        "{} (pid {}) is a Go program: Go makes its system calls itself, not through the C "
        "library, so none of its I/O was seen; its connections show only at the traced ends, "
        "and requests through it are cut there",
        name, log.header.pid));
  }
  if (parts.empty()) return "";
  return fmt::format("{}: {}", log.path, fmt::join(parts, "; "));
}

}  // namespace weft::reconcile
