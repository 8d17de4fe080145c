// Builds EventLogs in memory for reconcile's unit tests, the way falcosecurity's
// sinsp_with_test_input feeds synthetic syscalls through the real parser: each helper adds
// the events the preload library would log for one call.
#pragma once

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "capture/event_log.h"
#include "capture/protocols/protocol.h"

namespace weft::reconcile::testing {

namespace w = capture::wire;

// Epoch of monotonic time 0 in every synthetic log.
inline constexpr TimeNs kEpoch = 1'700'000'000'000'000'000;

inline capture::Address Ipv4(const char* ip, uint16_t port) {
  capture::Address a;
  a.family = w::kFamilyIpv4;
  a.port = port;
  in_addr addr{};
  inet_pton(AF_INET, ip, &addr);
  std::memcpy(a.ip.data(), &addr, 4);
  return a;
}

inline capture::Address UnixPath(std::string path) {
  capture::Address a;
  a.family = w::kFamilyUnix;
  a.path = std::move(path);
  return a;
}

class LogBuilder {
 public:
  LogBuilder(std::string host, std::string executable, int32_t pid, uint8_t boot = 1) {
    log_.path = host + "/" + std::to_string(pid) + ".wev";
    log_.header.host = std::move(host);
    log_.header.executable = std::move(executable);
    log_.header.pid = pid;
    log_.header.boot_id[0] = boot;
    log_.header.clock_monotonic_ns = 0;
    log_.header.clock_realtime_ns = kEpoch;
    log_.loss.has_end_record = true;
  }

  // An endpoint record naming `fd` as a TCP connection, caused by `cause` (connect,
  // accept, or kOpNone for a descriptor inherited at start).
  LogBuilder& Tcp(int32_t fd, TimeNs t, w::Op cause, const capture::Address& local,
                  const capture::Address& peer) {
    capture::Endpoint endpoint;
    endpoint.kind = w::kKindTcp;
    endpoint.local = local;
    endpoint.peer = peer;
    return AddEndpoint(fd, t, cause, std::move(endpoint));
  }
  // An endpoint record naming `fd` as a Unix stream socket with its inode and, where the
  // kernel told it, the other end's.
  LogBuilder& Unix(int32_t fd, TimeNs t, w::Op cause, std::string local_path, std::string peer_path,
                   uint64_t inode, uint64_t peer_inode) {
    capture::Endpoint endpoint;
    endpoint.kind = w::kKindUnixStream;
    endpoint.local = UnixPath(std::move(local_path));
    endpoint.peer = UnixPath(std::move(peer_path));
    endpoint.inode = inode;
    endpoint.peer_inode = peer_inode;
    return AddEndpoint(fd, t, cause, std::move(endpoint));
  }
  // An endpoint record naming `fd` as a Unix datagram socket (cause bind, connect,
  // socketpair, or the send after which an unbound socket was named), with its inode and,
  // for a socketpair end, the other end's.
  LogBuilder& UnixDatagram(int32_t fd, TimeNs t, w::Op cause, std::string local_path,
                           std::string peer_path, uint64_t inode, uint64_t peer_inode = 0) {
    capture::Endpoint endpoint;
    endpoint.kind = w::kKindUnixDatagram;
    endpoint.local = UnixPath(std::move(local_path));
    endpoint.peer = UnixPath(std::move(peer_path));
    endpoint.inode = inode;
    endpoint.peer_inode = peer_inode;
    return AddEndpoint(fd, t, cause, std::move(endpoint));
  }
  // An endpoint record naming `fd` as a UDP socket (cause socket, bind, or the send after
  // which the kernel's port was logged).
  LogBuilder& Udp(int32_t fd, TimeNs t, w::Op cause, const capture::Address& local,
                  const capture::Address& peer = {}) {
    capture::Endpoint endpoint;
    endpoint.kind = w::kKindUdp;
    endpoint.local = local;
    endpoint.peer = peer;
    return AddEndpoint(fd, t, cause, std::move(endpoint));
  }
  // A datagram sent to / received from `peer`, with the hash of its bytes.
  LogBuilder& Datagram(bool send, int32_t fd, int32_t tid, TimeNs entry, TimeNs exit, int32_t bytes,
                       uint64_t hash, const capture::Address& peer) {
    log_.addresses.push_back(peer);
    capture::Event e{.op = send ? capture::EventOp::kSendto : capture::EventOp::kRecvfrom,
                     .tid = tid,
                     .fd = fd,
                     .entry_ns = entry,
                     .exit_ns = exit,
                     .result = bytes};
    e.peer = int32_t(log_.addresses.size() - 1);
    e.datagram = true;
    e.payload_hash = hash;
    return Add(e);
  }
  // An endpoint record naming `fd` as one end of the pipe `inode`.
  LogBuilder& Pipe(int32_t fd, TimeNs t, w::Op cause, uint64_t inode) {
    capture::Endpoint endpoint;
    endpoint.kind = w::kKindPipe;
    endpoint.inode = inode;
    endpoint.peer_inode = inode;
    return AddEndpoint(fd, t, cause, std::move(endpoint));
  }
  LogBuilder& Send(int32_t fd, int32_t tid, TimeNs entry, TimeNs exit, int32_t bytes) {
    return Io(capture::EventOp::kSend, fd, tid, entry, exit, bytes);
  }
  LogBuilder& Recv(int32_t fd, int32_t tid, TimeNs entry, TimeNs exit, int32_t bytes) {
    return Io(capture::EventOp::kRead, fd, tid, entry, exit, bytes);
  }
  // Ciphertext a TLS library moved on `fd` (capture's tls_transport: a handshake, a record).
  LogBuilder& Transport(int32_t fd, int32_t tid, TimeNs entry, TimeNs exit, int32_t bytes) {
    return Io(capture::EventOp::kTlsTransport, fd, tid, entry, exit, bytes, capture::wire::kOpRead);
  }
  LogBuilder& Close(int32_t fd, TimeNs t) {
    return Add({.op = capture::EventOp::kClose,
                .tid = log_.header.pid,
                .fd = fd,
                .entry_ns = t,
                .exit_ns = t});
  }
  LogBuilder& Dup(int32_t old_fd, int32_t new_fd, TimeNs t) {
    return Add({.op = capture::EventOp::kDup,
                .tid = log_.header.pid,
                .fd = old_fd,
                .entry_ns = t,
                .exit_ns = t,
                .result = new_fd});
  }
  // A boundary record: a `protocol` message ended at stream `offset` in the call
  // [entry, exit] on `fd` (sent or received by this process), with its attributes.
  LogBuilder& Boundary(int32_t fd, int32_t tid, TimeNs entry, TimeNs exit, uint64_t offset,
                       bool sent, bool request,
                       std::vector<std::pair<std::string, std::string>> attributes = {},
                       uint8_t protocol = 1 /* http */) {
    log_.boundaries.push_back(capture::Boundary{.protocol = protocol,
                                                .sent = sent,
                                                .request = request,
                                                .offset = offset,
                                                .attributes = std::move(attributes)});
    capture::Event e{.op = capture::EventOp::kBoundary,
                     .tid = tid,
                     .fd = fd,
                     .entry_ns = entry,
                     .exit_ns = exit};
    e.boundary = int32_t(log_.boundaries.size() - 1);
    return Add(e);
  }
  // A header-block record (HTTP/2): `bytes` of a compressed header block, the first at
  // stream `offset`, moved by the call entered at `entry`.
  LogBuilder& HeaderBlock(int32_t fd, int32_t tid, TimeNs entry, uint64_t offset, bool sent,
                          bool request, std::string bytes,
                          uint8_t protocol = capture::protocols::kHttp2) {
    log_.boundaries.push_back(capture::Boundary{.protocol = protocol,
                                                .sent = sent,
                                                .request = request,
                                                .offset = offset,
                                                .header_block = std::move(bytes)});
    capture::Event e{.op = capture::EventOp::kHeaderBlock,
                     .tid = tid,
                     .fd = fd,
                     .entry_ns = entry,
                     .exit_ns = entry};
    e.boundary = int32_t(log_.boundaries.size() - 1);
    return Add(e);
  }
  // The payload prefix logged with the last event added.
  LogBuilder& Payload(std::string bytes) {
    log_.payloads.push_back(std::move(bytes));
    log_.events.back().payload = int32_t(log_.payloads.size() - 1);
    return *this;
  }
  // fork() returning `child` in the parent.
  // An accept call on `listener` entered at `entry` that returned `fd` at `exit` (its
  // endpoint record comes apart, with Tcp).
  LogBuilder& Accept(int32_t listener, int32_t fd, TimeNs entry, TimeNs exit) {
    return Add({.op = capture::EventOp::kAccept,
                .tid = log_.header.pid,
                .fd = listener,
                .entry_ns = entry,
                .exit_ns = exit,
                .result = fd});
  }
  LogBuilder& Fork(int32_t child, TimeNs entry, TimeNs exit) {
    return Add({.op = capture::EventOp::kFork,
                .tid = log_.header.pid,
                .fd = -1,
                .entry_ns = entry,
                .exit_ns = exit,
                .result = child});
  }
  // Thread `tid` started at `start`, created by thread `creator` whose pthread_create was
  // entered at `entry` (the new thread's record).
  LogBuilder& Thread(int32_t tid, int32_t creator, TimeNs entry, TimeNs start) {
    return Add({.op = capture::EventOp::kThread,
                .tid = tid,
                .fd = -1,
                .entry_ns = entry,
                .exit_ns = start,
                .result = creator});
  }
  // exec() entered at `t` by thread `tid`, which ended the image (a successful exec).
  LogBuilder& Exec(int32_t tid, TimeNs t) {
    log_.loss.ended_by_exec = true;
    return Add({.op = capture::EventOp::kExec, .tid = tid, .fd = -1, .entry_ns = t, .exit_ns = t});
  }
  // The log was opened at `t` (its clock reference; the epoch mapping stays the same).
  LogBuilder& OpenedAt(TimeNs t) {
    log_.header.clock_monotonic_ns = t;
    log_.header.clock_realtime_ns = kEpoch + t;
    return *this;
  }
  LogBuilder& ParentPid(int32_t pid) {
    log_.header.parent_pid = pid;
    return *this;
  }
  // The command line it was started with (argv).
  LogBuilder& Arguments(std::vector<std::string> arguments) {
    log_.header.arguments = std::move(arguments);
    return *this;
  }
  // The log is the pid's n-th image (<pid>.<n>.wev).
  LogBuilder& ExecIndex(uint32_t n) {
    log_.header.exec_index = n;
    return *this;
  }

  capture::EventLog Build() const {
    capture::EventLog log = log_;
    std::stable_sort(
        log.events.begin(), log.events.end(),
        [](const capture::Event& a, const capture::Event& b) { return a.entry_ns < b.entry_ns; });
    return log;
  }

 private:
  // The endpoint record naming `fd`, made at `t` by `cause`.
  LogBuilder& AddEndpoint(int32_t fd, TimeNs t, w::Op cause, capture::Endpoint endpoint) {
    log_.endpoints.push_back(std::move(endpoint));
    capture::Event e{.op = capture::EventOp::kEndpoint,
                     .tid = log_.header.pid,
                     .fd = fd,
                     .entry_ns = t,
                     .exit_ns = t};
    e.arg = cause;
    e.endpoint = int32_t(log_.endpoints.size() - 1);
    return Add(e);
  }
  LogBuilder& Io(capture::EventOp op, int32_t fd, int32_t tid, TimeNs entry, TimeNs exit,
                 int32_t bytes, int32_t arg = 0) {
    return Add({.op = op,
                .tid = tid,
                .fd = fd,
                .entry_ns = entry,
                .exit_ns = exit,
                .result = bytes,
                .arg = arg});
  }
  LogBuilder& Add(const capture::Event& e) {
    log_.events.push_back(e);
    return *this;
  }
  capture::EventLog log_;
};

}  // namespace weft::reconcile::testing
