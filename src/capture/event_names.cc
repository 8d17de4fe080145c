// What an event log's operations are called, which move bytes, which process wrote it, and
// one event as a line of text (`weft events`).
#include <arpa/inet.h>
#include <sys/socket.h>

#include <iterator>

#include "capture/event_log.h"
#include "capture/program_name.h"
#include "capture/protocols/protocol.h"

namespace weft::capture {
namespace {

constexpr std::string_view kOpNames[] = {
    "none",       "socket",       "socketpair",  "pipe",          "connect",
    "accept",     "bind",         "listen",      "close",         "shutdown",
    "dup",        "read",         "readv",       "write",         "writev",
    "send",       "sendto",       "sendmsg",     "sendmmsg",      "recv",
    "recvfrom",   "recvmsg",      "recvmmsg",    "sendfile",      "poll",
    "select",     "epoll_wait",   "fork",        "exec",          "thread",
    "mutex_lock", "mutex_unlock", "cond_wait",   "cond_signal",   "cond_broadcast",
    "sem_post",   "sem_wait",     "wake_create", "wake_write",    "wake_read",
    "timer_arm",  "tls_read",     "tls_write",   "tls_transport", "grpc_create",
    "grpc_take",  "grpc_start"};
static_assert(std::size(kOpNames) == wire::kOpCount);

// Bytes as printable ASCII, others (and the backslash) as \\xNN.
std::string Escaped(std::string_view bytes) {
  std::string shown;
  for (char c : bytes) {
    shown += (c >= 32 && c < 127 && c != '\\') ? std::string(1, c)
                                               : fmt::format("\\x{:02x}", uint8_t(c));
  }
  return shown;
}

}  // namespace

std::string_view EventOpName(EventOp op) {
  if (op == EventOp::kEndpoint) return "endpoint";
  if (op == EventOp::kBoundary) return "boundary";
  if (op == EventOp::kHeaderBlock) return "header-block";
  auto i = static_cast<size_t>(op);
  return i < std::size(kOpNames) ? kOpNames[i] : "?";
}

bool IsSyncOp(EventOp op) {
  return uint8_t(op) >= wire::kOpMutexLock && uint8_t(op) <= wire::kOpLastSync;
}

bool IsSendOp(EventOp op) {
  switch (op) {
    case EventOp::kWrite:
    case EventOp::kWritev:
    case EventOp::kSend:
    case EventOp::kSendto:
    case EventOp::kSendmsg:
    case EventOp::kSendmmsg:
    case EventOp::kSendfile:
    case EventOp::kTlsWrite:
      return true;
    default:
      return false;
  }
}

bool IsRecvOp(EventOp op) {
  switch (op) {
    case EventOp::kRead:
    case EventOp::kReadv:
    case EventOp::kRecv:
    case EventOp::kRecvfrom:
    case EventOp::kRecvmsg:
    case EventOp::kRecvmmsg:
    case EventOp::kTlsRead:
      return true;
    default:
      return false;
  }
}

std::string FormatAddress(const Address& a) {
  char text[INET6_ADDRSTRLEN] = {};
  switch (a.family) {
    case wire::kFamilyIpv4:
      inet_ntop(AF_INET, a.ip.data(), text, sizeof text);
      return fmt::format("{}:{}", text, a.port);
    case wire::kFamilyIpv6:
      inet_ntop(AF_INET6, a.ip.data(), text, sizeof text);
      return fmt::format("[{}]:{}", text, a.port);
    case wire::kFamilyUnix:
      if (!a.path.empty() && a.path[0] == '\0') return "unix:@" + a.path.substr(1);
      return "unix:" + a.path;
    default:
      return "-";
  }
}

std::string ProcessName(const EventLog& log) {
  const ThreadName* main_thread = nullptr;
  const ThreadName* first = nullptr;
  for (const ThreadName& n : log.thread_names) {
    if (n.tid == log.header.pid && (main_thread == nullptr || n.time_ns >= main_thread->time_ns)) {
      main_thread = &n;
    }
    if (first == nullptr || n.time_ns < first->time_ns) first = &n;
  }
  if (main_thread != nullptr) return main_thread->name;
  return first != nullptr ? first->name : std::string();
}

std::string ProgramName(const EventLog& log) {
  const std::string& exe = log.header.executable;
  std::string_view argv0;
  if (!log.header.arguments.empty()) argv0 = log.header.arguments[0];
  ProgramNameText name = ProgramName(exe.data(), exe.size(), argv0.data(), argv0.size());
  return std::string(name.data, name.size);
}

std::string FormatEvent(const EventLog& log, const Event& e) {
  std::string line = fmt::format("{} {}/{} {}", FormatTimestamp(log.ToRealtime(e.entry_ns)),
                                 log.header.pid, e.tid, EventOpName(e.op));
  if (e.op == EventOp::kEndpoint) {
    const Endpoint& ep = log.endpoints[e.endpoint];
    constexpr std::string_view kKinds[] = {
        "?",    "tcp",    "udp",     "unix-stream", "unix-dgram", "unix-seqpacket",
        "pipe", "socket", "eventfd", "timerfd"};
    line += fmt::format(" fd {} by {} {} {} -> {}", e.fd, EventOpName(static_cast<EventOp>(e.arg)),
                        ep.kind < std::size(kKinds) ? kKinds[ep.kind] : "?",
                        FormatAddress(ep.local), FormatAddress(ep.peer));
    if (ep.listening) line += " listening";
    if (ep.peer_pid != 0) line += fmt::format(" peer-pid {}", ep.peer_pid);
    if (ep.inode != 0) line += fmt::format(" inode {}", ep.inode);
    if (ep.peer_inode != 0) line += fmt::format(" peer-inode {}", ep.peer_inode);
    return line;
  }
  if (e.op == EventOp::kBoundary) {
    const Boundary& b = log.boundaries[e.boundary];
    line += fmt::format(" fd {} {} {} {} ends at {}", e.fd,
                        protocols::ProtocolName(protocols::Protocol(b.protocol)),
                        b.request ? "request" : "response", b.sent ? "sent" : "received", b.offset);
    for (const auto& [key, value] : b.attributes)
      line += fmt::format(" {}=\"{}\"", key, Escaped(value));
    return line;
  }
  if (e.op == EventOp::kHeaderBlock) {
    const Boundary& b = log.boundaries[e.boundary];
    return line + fmt::format(" fd {} {} {} {} {} bytes at {}", e.fd,
                              protocols::ProtocolName(protocols::Protocol(b.protocol)),
                              b.request ? "request" : "response", b.sent ? "sent" : "received",
                              b.header_block.size(), b.offset);
  }
  if (IsSyncOp(e.op)) {
    return line + fmt::format(" {:#x} {:#x} = {} [{}]", e.object, e.second, e.result,
                              FormatDuration(TimeNs(uint64_t(e.exit_ns) - uint64_t(e.entry_ns))));
  }
  line += fmt::format(" fd {} = {}", e.fd, e.result);
  if (e.op == EventOp::kTlsTransport) {
    line += fmt::format(" by {}", EventOpName(static_cast<EventOp>(e.arg)));  // ciphertext
  } else if (e.arg != 0) {
    line += fmt::format(" arg {}", e.arg);
  }
  line += fmt::format(" [{}]", FormatDuration(TimeNs(uint64_t(e.exit_ns) - uint64_t(e.entry_ns))));
  if (e.datagram) line += fmt::format(" hash {:016x}", e.payload_hash);
  if (e.peer != kNone) line += " peer " + FormatAddress(log.addresses[e.peer]);
  if (e.payload != kNone) {
    line += " payload \"" + Escaped(log.payloads[e.payload]) + "\"";
  }
  return line;
}

}  // namespace weft::capture
