#include "testbed/wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "testbed/http.h"

namespace weft::testbed {
namespace {

void PutU64(std::string& s, uint64_t v) {
  for (int i = 7; i >= 0; --i) s.push_back(char((v >> (8 * i)) & 0xff));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

std::string Endpoint(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return fmt::format("{}:{}", buf, ntohs(a.sin_port));
}

// Reads exactly n bytes: 1 when done, 0 at end of stream before any byte, -1 on error.
int ReadExact(int fd, char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r > 0) {
      got += size_t(r);
    } else if (r == 0) {
      if (got == 0) return 0;
      errno = EPIPE;
      return -1;
    } else if (errno != EINTR) {
      return -1;
    }
  }
  return 1;
}

}  // namespace

std::string EncodeFrame(const Frame& frame, uint32_t payload_bytes) {
  // Baggage over the bound is left out: the request goes on without it.
  const bool baggage = !frame.baggage.empty() && frame.baggage.size() <= kMaxFrameBaggage;
  uint32_t n = std::max<uint32_t>(
      payload_bytes,
      uint32_t(kPayloadHeader + (baggage ? kFrameBaggageHeader + frame.baggage.size() : 0)));
  std::string s;
  s.reserve(4 + n);
  for (int i = 3; i >= 0; --i) s.push_back(char((n >> (8 * i)) & 0xff));
  s.push_back(char(frame.type));
  s.push_back(char(frame.request_type >> 8));
  s.push_back(char(frame.request_type & 0xff));
  PutU64(s, frame.request_id);
  PutU64(s, frame.call_id);
  PutU64(s, frame.parent_call);
  if (baggage) {
    s.push_back('\0');
    s.push_back('B');
    for (int i = 3; i >= 0; --i) s.push_back(char((frame.baggage.size() >> (8 * i)) & 0xff));
    s += frame.baggage;
  }
  s.resize(4 + n, '.');
  return s;
}

Result<Frame> DecodePayload(std::string_view p) {
  if (p.size() < kPayloadHeader) {
    return Status::Corruption("frame of {} bytes is shorter than its header", p.size());
  }
  Frame f;
  uint8_t type = uint8_t(p[0]);
  if (type < 1 || type > 3) return Status::Corruption("unknown frame type {}", type);
  f.type = FrameType(type);
  f.request_type = uint16_t((uint8_t(p[1]) << 8) | uint8_t(p[2]));
  f.request_id = GetU64(p.data() + 3);
  f.call_id = GetU64(p.data() + 11);
  f.parent_call = GetU64(p.data() + 19);
  if (f.call_id == 0) return Status::Corruption("frame without a call id");
  std::string_view rest = p.substr(kPayloadHeader);
  if (rest.size() >= kFrameBaggageHeader && rest[0] == '\0' && rest[1] == 'B') {
    uint32_t size = 0;
    for (int i = 2; i < 6; ++i) size = (size << 8) | uint8_t(rest[i]);
    if (size <= kMaxFrameBaggage && size <= rest.size() - kFrameBaggageHeader) {
      f.baggage = std::string(rest.substr(kFrameBaggageHeader, size));
    }
  }
  return f;
}

Conn::Conn(int fd_in) : fd(fd_in) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) local = Endpoint(a);
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) peer = Endpoint(a);
  // Fails harmlessly on a UDP socket and on the endpoint-only Conn(-1) of a datagram: a
  // TCP socket that keeps Nagle only answers later.
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Conn::~Conn() {
  if (fd >= 0) close(fd);
}

Status SetTimeouts(int fd, TimeNs timeout) {
  timeval tv{};
  tv.tv_sec = timeout / kSecond;
  tv.tv_usec = (timeout % kSecond) / kMicrosecond;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Status::IoError("setsockopt: {}", std::strerror(errno));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Conn>> ConnectLoopback(uint16_t port, TimeNs timeout, bool datagram) {
  int fd = socket(AF_INET, (datagram ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError("socket: {}", std::strerror(errno));
  WEFT_RETURN_IF_ERROR(SetTimeouts(fd, timeout));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  while (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    close(fd);
    return Status::IoError("connect to 127.0.0.1:{}: {}", port, std::strerror(err));
  }
  auto conn = std::make_unique<Conn>(fd);
  conn->datagram = datagram;
  return conn;
}

Result<Frame> DecodeDatagram(std::string_view d) {
  if (d.size() < 4) return Status::Corruption("datagram of {} bytes holds no frame", d.size());
  uint32_t n = (uint32_t(uint8_t(d[0])) << 24) | (uint32_t(uint8_t(d[1])) << 16) |
               (uint32_t(uint8_t(d[2])) << 8) | uint32_t(uint8_t(d[3]));
  if (n != d.size() - 4) {
    return Status::Corruption("frame length {} in a datagram of {} bytes", n, d.size());
  }
  return DecodePayload(d.substr(4));
}

std::string EncodeMessage(const Frame& frame, uint32_t payload_bytes, bool http, bool chunked) {
  return http ? EncodeHttp(frame, payload_bytes, chunked) : EncodeFrame(frame, payload_bytes);
}

Result<bool> TakeMessage(std::string& buf, bool http, Frame* frame, size_t* wire_bytes) {
  if (!http) {
    if (buf.size() < 4) return false;
    uint32_t n = (uint32_t(uint8_t(buf[0])) << 24) | (uint32_t(uint8_t(buf[1])) << 16) |
                 (uint32_t(uint8_t(buf[2])) << 8) | uint32_t(uint8_t(buf[3]));
    if (n < kPayloadHeader || n > kMaxPayload) {
      return Status::Corruption("frame length {} out of range", n);
    }
    if (buf.size() < 4 + n) return false;
    WEFT_ASSIGN_OR_RETURN(*frame, DecodePayload(std::string_view(buf).substr(4, n)));
    *wire_bytes = 4 + n;
    buf.erase(0, 4 + n);
    return true;
  }
  return TakeHttp(buf, frame, wire_bytes);
}

Result<std::optional<Frame>> ReadConnFrame(Conn& conn, size_t* wire_bytes) {
  if (conn.http) {
    Frame f;
    size_t bytes = 0;
    while (true) {
      WEFT_ASSIGN_OR_RETURN(bool taken, TakeMessage(conn.rbuf, true, &f, &bytes));
      if (taken) {
        if (wire_bytes) *wire_bytes = bytes;
        return std::optional<Frame>(f);
      }
      char buf[16384];
      ssize_t r = read(conn.fd, buf, sizeof buf);
      if (r == 0 && conn.rbuf.empty()) return std::optional<Frame>();
      if (r == 0) return Status::IoError("end of stream inside an HTTP message");
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Status::IoError("read: {}", std::strerror(errno));
      conn.rbuf.append(buf, size_t(r));
    }
  }
  if (!conn.datagram) return ReadFrame(conn.fd, wire_bytes);
  std::string buf(65536, '\0');
  ssize_t r;
  do {
    r = recv(conn.fd, buf.data(), buf.size(), 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return Status::IoError("recv: {}", std::strerror(errno));
  if (wire_bytes) *wire_bytes = size_t(r);
  WEFT_ASSIGN_OR_RETURN(Frame f, DecodeDatagram(std::string_view(buf.data(), size_t(r))));
  return std::optional<Frame>(f);
}

std::vector<std::pair<Frame, std::string>> ReleaseReply(Conn& conn, uint64_t seq, Frame reply,
                                                        std::string wire) {
  std::vector<std::pair<Frame, std::string>> due;
  if (!conn.http) {
    due.emplace_back(reply, std::move(wire));
    return due;
  }
  if (seq != conn.next_reply) {
    conn.held.emplace(seq, std::make_pair(reply, std::move(wire)));
    return due;
  }
  due.emplace_back(reply, std::move(wire));
  ++conn.next_reply;
  for (auto it = conn.held.begin(); it != conn.held.end() && it->first == conn.next_reply;
       it = conn.held.erase(it)) {
    due.push_back(std::move(it->second));
    ++conn.next_reply;
  }
  return due;
}

Result<bool> ReadAvailable(Conn& conn) {
  char buf[65536];
  while (true) {
    ssize_t r = recv(conn.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r > 0) {
      conn.rbuf.append(buf, size_t(r));
      return true;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    return Status::IoError("read: {}", std::strerror(errno));
  }
}

Result<std::optional<Frame>> ReadFrame(int fd, size_t* wire_bytes) {
  char len[4];
  int r = ReadExact(fd, len, 4);
  if (r == 0) return std::optional<Frame>();
  if (r < 0) return Status::IoError("read: {}", std::strerror(errno));
  uint32_t n = (uint32_t(uint8_t(len[0])) << 24) | (uint32_t(uint8_t(len[1])) << 16) |
               (uint32_t(uint8_t(len[2])) << 8) | uint32_t(uint8_t(len[3]));
  if (n < kPayloadHeader || n > kMaxPayload) {
    return Status::Corruption("frame length {} out of range", n);
  }
  std::string payload(n, '\0');
  if (ReadExact(fd, payload.data(), n) != 1) {
    return Status::IoError("read: {}", std::strerror(errno));
  }
  if (wire_bytes) *wire_bytes = 4 + n;
  WEFT_ASSIGN_OR_RETURN(Frame f, DecodePayload(payload));
  return std::optional<Frame>(f);
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IoError("write: {}", std::strerror(errno));
    }
    data.remove_prefix(size_t(w));
  }
  return Status::Ok();
}

uint32_t CurrentThreadId() {
  thread_local uint32_t tid = uint32_t(syscall(SYS_gettid));
  return tid;
}

TimeNs WallNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return TimeNs(ts.tv_sec) * kSecond + ts.tv_nsec;
}

void Serve(TimeNs d) {
  if (d > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(d));
}

Result<std::unique_ptr<TruthLog>> TruthLog::Open(const std::string& dir, const std::string& node) {
  std::string path = fmt::format("{}/{}.truth", dir, node);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("{}: {}", path, std::strerror(errno));
  std::string header = fmt::format("# weft testbed truth v1 node={} pid={}\n", node, getpid());
  if (write(fd, header.data(), header.size()) != ssize_t(header.size())) {
    close(fd);
    return Status::IoError("{}: {}", path, std::strerror(errno));
  }
  return std::unique_ptr<TruthLog>(new TruthLog(fd));
}

TruthLog::~TruthLog() { close(fd_); }

void TruthLog::Record(Direction dir, const Frame& frame, const Conn& conn, size_t bytes,
                      std::string_view request_name, TimeNs when) {
  // time thread dir type local peer request call parent bytes name
  std::string line =
      fmt::format("{} {} {} {} {} {} {:x} {:x} {:x} {} {}\n", when, CurrentThreadId(), char(dir),
                  int(frame.type), conn.local, conn.peer, frame.request_id, frame.call_id,
                  frame.parent_call, bytes, request_name.empty() ? "-" : request_name);
  // A truth log that cannot be written makes the run's ground truth incomplete, which the
  // truth tool reports; the server itself keeps serving.
  ssize_t w = write(fd_, line.data(), line.size());
  (void)w;
}

}  // namespace weft::testbed
