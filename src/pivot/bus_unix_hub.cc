// The embedded bus's hub (bus_unix.cc describes the whole): one thread that accepts
// clients, keeps each one's subscriptions and routes every published message to the
// clients and local handlers whose patterns match; the flock on PATH.lock that says a hub
// is alive.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "pivot/bus_embedded.h"

namespace weft::pivot::embedded {
namespace {

class HubBus final : public EmbeddedBus {
 public:
  HubBus(std::string path, int listen_fd, int lock_fd, ino_t inode, const OpenBusOptions& options)
      : EmbeddedBus(std::move(path), options),
        listen_fd_(listen_fd),
        lock_fd_(lock_fd),
        inode_(inode) {
    Start();
  }
  ~HubBus() override {
    Stop();
    for (Connection& c : connections_) close(c.fd);
    close(listen_fd_);
    // Remove the socket file only if it is still ours (not a successor's).
    struct stat st;
    if (stat(path_.c_str(), &st) == 0 && st.st_ino == inode_) unlink(path_.c_str());
    close(lock_fd_);  // releases the flock: the next front end may host
  }

 private:
  struct Connection {
    int fd;
    FrameDecoder decoder;
    std::map<uint64_t, std::string> patterns;
    std::string out;
    size_t out_offset = 0;
    bool closed = false;
  };

  const char* FlushBlocker() const override { return "hub thread busy"; }

  void Run() override {
    std::vector<pollfd> fds;
    bool more = false;  // local messages left over from the last batch
    while (!stopping()) {
      fds.clear();
      fds.push_back({waker_.fd(), POLLIN, 0});
      fds.push_back({listen_fd_, POLLIN, 0});
      for (const Connection& c : connections_) {
        fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      }
      if (poll(fds.data(), fds.size(), more ? 0 : -1) < 0 && errno != EINTR) break;
      if (fds[0].revents) Drained();
      if (fds[1].revents) Accept();
      // connections_ may have grown in Accept(); only the first ones were polled.
      for (size_t i = 0; i + 2 < fds.size(); ++i) {
        if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) ReadFrom(&connections_[i]);
      }
      std::vector<Message> batch = TakeBatch(&more);
      for (const Message& m : batch) Route(m.subject, m.payload);
      MarkDone(0);
      for (Connection& c : connections_) {
        if (!c.closed && !c.out.empty() && !WriteSome(c.fd, &c.out, &c.out_offset)) {
          c.closed = true;
        }
      }
      for (Connection& c : connections_) {
        if (c.closed) close(c.fd);
      }
      std::erase_if(connections_, [](const Connection& c) { return c.closed; });
    }
  }

  void Accept() {
    while (true) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection that died in the backlog
      if (connections_.size() >= kMaxConnections) {
        close(fd);
        continue;
      }
      connections_.push_back(Connection{.fd = fd});
    }
  }

  void ReadFrom(Connection* c) {
    if (c->closed) return;
    if (!ReadSome(c->fd, &c->decoder)) {
      c->closed = true;
      return;
    }
    Frame frame;
    while (true) {
      switch (c->decoder.Next(&frame)) {
        case FrameDecoder::Outcome::kNeedMore:
          return;
        case FrameDecoder::Outcome::kBad: {
          std::lock_guard lock(mu_);
          ++counters_.bad_frames;
          c->closed = true;
          return;
        }
        case FrameDecoder::Outcome::kFrame:
          switch (frame.type) {
            case FrameType::kPublish:
              Route(frame.subject, frame.payload);
              break;
            case FrameType::kSubscribe:
              c->patterns[frame.id] = std::string(frame.subject);
              break;
            case FrameType::kUnsubscribe:
              c->patterns.erase(frame.id);
              break;
          }
          break;
      }
    }
  }

  // Forwards a message to every connection with a matching pattern (the sender included,
  // as NATS does) and to the local handlers.
  void Route(std::string_view subject, std::string_view payload) {
    uint64_t dropped = 0;
    size_t frame_size = kFrameHeader + 3 + subject.size() + payload.size();
    for (Connection& c : connections_) {
      if (c.closed) continue;
      bool match = false;
      for (const auto& [id, pattern] : c.patterns) {
        if ((match = SubjectMatches(pattern, subject))) break;
      }
      if (!match) continue;
      if (c.out.size() - c.out_offset + frame_size > kConnectionOutBound) {
        ++dropped;  // this client is not reading; the others must not wait for it
        continue;
      }
      if (c.out_offset > 0 && c.out_offset >= c.out.size() / 2) {
        c.out.erase(0, c.out_offset);
        c.out_offset = 0;
      }
      AppendPublishFrame(subject, payload, &c.out);
    }
    if (dropped > 0) {
      std::lock_guard lock(mu_);
      counters_.dropped += dropped;
    }
    Deliver(subject, payload);
  }

  const int listen_fd_;
  const int lock_fd_;
  const ino_t inode_;
  std::vector<Connection> connections_;  // the bus thread's own
};

// Whether a process accepts connections at `addr` now.
bool SomeoneListens(const sockaddr_un& addr) {
  int error = 0;
  int fd = ConnectTo(addr, &error);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return error == EAGAIN;  // listening, with a full backlog
}

}  // namespace

Result<int> TryLock(const std::string& path, const sockaddr_un& addr) {
  std::string lock_path = path + ".lock";
  int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) {
    return Status::IoError("unix:{}: cannot open {}: {}", path, lock_path, std::strerror(errno));
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0 || SomeoneListens(addr)) {
    close(lock_fd);
    return -1;
  }
  return lock_fd;
}

Result<std::unique_ptr<Bus>> Host(const std::string& path, const sockaddr_un& addr,
                                  const OpenBusOptions& options, int lock_fd) {
  // Holding the lock, nobody else can be the hub: a socket file still there is stale.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      close(lock_fd);
      return Status::InvalidArgument("unix:{}: exists and is not a socket", path);
    }
    unlink(path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  Status status;
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, 128) != 0 || stat(path.c_str(), &st) != 0) {
    status = Status::IoError("unix:{}: cannot listen: {}", path, std::strerror(errno));
    if (fd >= 0) close(fd);
    close(lock_fd);
    return status;
  }
  return std::unique_ptr<Bus>(std::make_unique<HubBus>(path, fd, lock_fd, st.st_ino, options));
}

}  // namespace weft::pivot::embedded
