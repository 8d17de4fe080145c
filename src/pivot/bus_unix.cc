// The embedded bus (bus.h "unix:PATH"): a hub on a Unix stream socket, and the clients that
// connect to it. The frames they exchange are in frame.h.
//
// Each Bus object owns one thread that poll()s its non-blocking sockets and an eventfd
// that other threads write to wake it. Publish only appends to a bounded queue under a
// short lock (and writes the eventfd when the queue was idle, which cannot block), so the
// program that publishes never waits on the socket.
//
// The hub holds an exclusive flock() on PATH.lock for as long as it lives. That lock, not
// the socket file, says whether a hub is alive: a hub killed with SIGKILL leaves its
// socket file behind, and the next would-be hub that gets the lock knows the file is
// stale and replaces it. Two front ends that start at once cannot both become the hub,
// and neither unlinks the other's socket.
//
// A client that loses its hub (or never found one) retries every kRetryMs, queues what is
// published meanwhile up to OpenBusOptions::max_queued_messages and drops the rest, and
// on connecting sends its subscriptions again before anything else. A client that may host
// (a front end that found another hosting) takes the hub over when that one goes: every
// kRetryMs without a hub it tries the lock, and on getting it retires its client and
// becomes the hub, with its subscriptions and what it had queued (HandOverBus). The hub never waits
// for a client: each connection has its own output queue of at most kConnectionOutBound
// bytes, and a message that does not fit is dropped for that connection alone.
#include "pivot/bus_unix.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pivot/bus.h"
#include "pivot/frame.h"

namespace weft::pivot {
namespace {

constexpr int kRetryMs = 200;
constexpr size_t kConnectionOutBound = 4 << 20;
constexpr size_t kBatchBytes = 256 << 10;
constexpr size_t kMaxConnections = 1024;
constexpr size_t kReadChunk = 64 << 10;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status MakeAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    return Status::InvalidArgument("unix:{}: a socket path must have 1 to {} bytes", path,
                                   sizeof(addr->sun_path) - 1);
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return Status::Ok();
}

// A non-blocking connect; returns the connected socket or -1. On a Unix socket connect
// completes at once or fails (EAGAIN: the hub's backlog is full; try again later).
int ConnectTo(const sockaddr_un& addr, int* error) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = errno;
    close(fd);
    return -1;
  }
  return fd;
}

// Wakes the bus thread from poll(). Writing an eventfd blocks only when its counter is
// near 2^64, which one write per idle-to-busy transition never reaches.
class Waker {
 public:
  Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Waker() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }
  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
  }
  void Drain() {
    uint64_t value;
    [[maybe_unused]] ssize_t n = read(fd_, &value, sizeof(value));
  }

 private:
  int fd_;
};

// Writes what the socket takes now of out[*offset..]. False when the peer is gone.
bool WriteSome(int fd, std::string* out, size_t* offset) {
  while (*offset < out->size()) {
    ssize_t n = send(fd, out->data() + *offset, out->size() - *offset, MSG_NOSIGNAL);
    if (n > 0) {
      *offset += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  out->clear();
  *offset = 0;
  return true;
}

// Reads what is there into `decoder`. False when the peer closed or the socket failed.
bool ReadSome(int fd, FrameDecoder* decoder) {
  char chunk[kReadChunk];
  for (int rounds = 0; rounds < 16; ++rounds) {  // bounded: let the other sockets in
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      decoder->Append(std::string_view(chunk, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < sizeof(chunk)) return true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

struct Message {
  std::string subject, payload;
};

struct Subscription {
  uint64_t id;
  std::string pattern;
  Bus::Handler handler;
};

// What clients and the hub share: the publish queue, the local subscriptions, counters,
// and the bus thread. Subclasses supply Run(), the thread's loop.
class EmbeddedBus : public Bus {
 public:
  EmbeddedBus(std::string path, const OpenBusOptions& options)
      : path_(std::move(path)), options_(options) {}

  void Publish(std::string_view subject, std::string_view payload) override {
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      if (!ValidSubject(subject) || payload.size() > kMaxPayload ||
          queue_.size() >= options_.max_queued_messages) {
        ++counters_.dropped;
        return;
      }
      queue_.push_back({std::string(subject), std::string(payload)});
      ++counters_.published;
      ++accepted_;
      wake = !wake_pending_;
      wake_pending_ = true;
    }
    if (wake) waker_.Wake();
  }

  Result<uint64_t> Subscribe(std::string_view pattern, Handler handler) override {
    if (!ValidSubject(pattern)) {
      return Status::InvalidArgument("bad subscription pattern '{}'", pattern);
    }
    uint64_t id;
    {
      std::lock_guard lock(mu_);
      id = ++last_id_;
      subscriptions_.push_back({id, std::string(pattern), std::move(handler)});
      AppendSubscribeFrame(id, pattern, &control_);
    }
    waker_.Wake();
    return id;
  }

  void Unsubscribe(uint64_t id) override {
    {
      std::lock_guard lock(mu_);
      std::erase_if(subscriptions_, [id](const Subscription& s) { return s.id == id; });
      AppendUnsubscribeFrame(id, &control_);
    }
    waker_.Wake();
  }

  Status Flush(int timeout_ms) override {
    std::unique_lock lock(mu_);
    uint64_t target = accepted_;
    if (!flushed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return done_ >= target; })) {
      return Status::IoError("{}: flush timed out after {} ms ({})", url(), timeout_ms,
                             FlushBlocker());
    }
    return Status::Ok();
  }

  BusCounters counters() const override {
    std::lock_guard lock(mu_);
    return counters_;
  }
  std::string url() const override { return "unix:" + path_; }

  // Every message still queued, for a successor (HandOverBus); Flush no longer waits for it.
  std::vector<Message> TakeQueued() {
    std::vector<Message> queued;
    {
      std::lock_guard lock(mu_);
      queued.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
      accepted_ -= queued.size();
      counters_.published -= queued.size();
    }
    flushed_.notify_all();
    return queued;
  }

 protected:
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    waker_.Wake();
    if (thread_.joinable()) thread_.join();
  }
  bool stopping() {
    std::lock_guard lock(mu_);
    return stop_;
  }
  // Called on the bus thread after poll() returned with the eventfd readable.
  void Drained() {
    waker_.Drain();
    std::lock_guard lock(mu_);
    wake_pending_ = false;
  }
  // Runs every local handler whose pattern matches, unlocked (a handler may publish or
  // unsubscribe).
  void Deliver(std::string_view subject, std::string_view payload) {
    std::vector<Handler> targets;
    {
      std::lock_guard lock(mu_);
      for (const Subscription& s : subscriptions_) {
        if (SubjectMatches(s.pattern, subject)) targets.push_back(s.handler);
      }
      counters_.received += targets.size();
    }
    for (const Handler& h : targets) h(subject, payload);
  }
  // Takes queued messages, up to about kBatchBytes; later MarkDone() releases Flush.
  // `*more`: whether some are left for the next batch.
  std::vector<Message> TakeBatch(bool* more = nullptr) {
    std::vector<Message> batch;
    std::lock_guard lock(mu_);
    size_t bytes = 0;
    while (!queue_.empty() && bytes < kBatchBytes) {
      bytes += queue_.front().subject.size() + queue_.front().payload.size();
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    taken_ += batch.size();
    if (more != nullptr) *more = !queue_.empty();
    return batch;
  }
  // Every message taken so far has been sent, routed, or counted as `lost`.
  void MarkDone(uint64_t lost) {
    {
      std::lock_guard lock(mu_);
      counters_.dropped += lost;
      done_ = taken_;
    }
    flushed_.notify_all();
  }
  virtual void Run() = 0;
  virtual const char* FlushBlocker() const = 0;

  const std::string path_;
  const OpenBusOptions options_;
  Waker waker_;
  mutable std::mutex mu_;
  std::condition_variable flushed_;
  std::deque<Message> queue_;                     // guarded by mu_
  std::vector<Subscription> subscriptions_;       // guarded by mu_
  std::string control_;                           // guarded by mu_: frames for the hub
  BusCounters counters_;                          // guarded by mu_
  uint64_t last_id_ = 0;                          // guarded by mu_
  uint64_t accepted_ = 0, taken_ = 0, done_ = 0;  // guarded by mu_: messages so far
  bool wake_pending_ = false;                     // guarded by mu_
  bool stop_ = false;                             // guarded by mu_

 private:
  std::thread thread_;
};

class UnixClientBus final : public EmbeddedBus {
 public:
  UnixClientBus(std::string path, const sockaddr_un& addr, const OpenBusOptions& options)
      : EmbeddedBus(std::move(path), options), addr_(addr) {
    counters_.connected = false;
    Start();
  }
  ~UnixClientBus() override {
    Stop();
    if (fd_ >= 0) close(fd_);
  }

 private:
  const char* FlushBlocker() const override { return "no hub connected"; }

  void Run() override {
    while (!stopping()) {
      if (fd_ < 0 && NowMs() >= next_retry_ms_) TryConnect();
      if (fd_ >= 0 && out_.empty()) FillOutput();
      pollfd fds[2] = {{waker_.fd(), POLLIN, 0}, {fd_, POLLIN, 0}};
      if (fd_ >= 0 && !out_.empty()) fds[1].events |= POLLOUT;
      int timeout =
          fd_ >= 0 ? -1 : static_cast<int>(std::max<int64_t>(0, next_retry_ms_ - NowMs()));
      if (poll(fds, fd_ >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) break;
      if (fds[0].revents) Drained();
      if (fd_ < 0) continue;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!ReadFromHub()) {
          Disconnect();
          continue;
        }
      }
      if (!out_.empty()) {
        if (!WriteSome(fd_, &out_, &out_offset_)) {
          Disconnect();
        } else if (out_.empty()) {
          in_flight_ = 0;
          MarkDone(0);
        }
      }
    }
  }

  void TryConnect() {
    int error = 0;
    fd_ = ConnectTo(addr_, &error);
    if (fd_ < 0) {
      next_retry_ms_ = NowMs() + kRetryMs;
      return;
    }
    // The hub knows nothing of this client yet: every live subscription goes first.
    std::lock_guard lock(mu_);
    control_.clear();
    out_.clear();
    out_offset_ = 0;
    for (const Subscription& s : subscriptions_) AppendSubscribeFrame(s.id, s.pattern, &out_);
    if (ever_connected_) ++counters_.reconnects;
    ever_connected_ = true;
    counters_.connected = true;
  }

  void FillOutput() {
    {
      std::lock_guard lock(mu_);
      out_.swap(control_);
      control_.clear();
    }
    std::vector<Message> batch = TakeBatch();
    for (const Message& m : batch) AppendPublishFrame(m.subject, m.payload, &out_);
    in_flight_ = batch.size();
    out_offset_ = 0;
    if (out_.empty()) MarkDone(0);
  }

  bool ReadFromHub() {
    if (!ReadSome(fd_, &decoder_)) return false;
    Frame frame;
    while (true) {
      switch (decoder_.Next(&frame)) {
        case FrameDecoder::Outcome::kNeedMore:
          return true;
        case FrameDecoder::Outcome::kBad: {
          std::lock_guard lock(mu_);
          ++counters_.bad_frames;
          return false;
        }
        case FrameDecoder::Outcome::kFrame:
          if (frame.type != FrameType::kPublish) {
            std::lock_guard lock(mu_);
            ++counters_.bad_frames;
            return false;
          }
          Deliver(frame.subject, frame.payload);
          break;
      }
    }
  }

  // The messages of a batch not yet wholly written are lost with the connection.
  void Disconnect() {
    close(fd_);
    fd_ = -1;
    decoder_ = FrameDecoder();
    out_.clear();
    out_offset_ = 0;
    MarkDone(in_flight_);
    in_flight_ = 0;
    next_retry_ms_ = NowMs() + kRetryMs;
    std::lock_guard lock(mu_);
    counters_.connected = false;
  }

  const sockaddr_un addr_;
  // The bus thread's own state.
  int fd_ = -1;
  int64_t next_retry_ms_ = 0;
  bool ever_connected_ = false;
  FrameDecoder decoder_;
  std::string out_;
  size_t out_offset_ = 0;
  uint64_t in_flight_ = 0;  // messages in out_
};

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

// PATH.lock, locked, if no hub holds it (and nothing listens at `addr`); -1 if one does.
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

// Becomes the hub at `path`, holding `lock_fd` (TryLock), which it owns from now on.
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

// A front end's bus while another hosts: a client that takes the hub over when the host
// goes. Publish, Subscribe and Unsubscribe go to the current inner bus; while it changes
// (a moment) they wait in this object.
class HandOverBus final : public Bus {
 public:
  HandOverBus(std::string path, const sockaddr_un& addr, const OpenBusOptions& options)
      : path_(std::move(path)),
        addr_(addr),
        options_(options),
        inner_(std::make_shared<UnixClientBus>(path_, addr_, options_)),
        client_(static_cast<UnixClientBus*>(inner_.get())) {
    watcher_ = std::thread([this] { Watch(); });
  }
  ~HandOverBus() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    watcher_.join();
  }

  void Publish(std::string_view subject, std::string_view payload) override {
    std::lock_guard lock(mu_);
    if (inner_ != nullptr) return inner_->Publish(subject, payload);
    if (pending_.size() >= options_.max_queued_messages) {
      ++retired_.dropped;
    } else {
      pending_.push_back({std::string(subject), std::string(payload)});
    }
  }
  Result<uint64_t> Subscribe(std::string_view pattern, Handler handler) override {
    if (!ValidSubject(pattern)) {
      return Status::InvalidArgument("bad subscription pattern '{}'", pattern);
    }
    std::lock_guard lock(mu_);
    Local& local = locals_.emplace_back(Local{++last_id_, std::string(pattern), handler, 0});
    if (inner_ != nullptr) {
      WEFT_ASSIGN_OR_RETURN(local.inner_id, inner_->Subscribe(pattern, std::move(handler)));
    }
    return local.id;
  }
  void Unsubscribe(uint64_t id) override {
    std::lock_guard lock(mu_);
    for (auto it = locals_.begin(); it != locals_.end(); ++it) {
      if (it->id != id) continue;
      if (inner_ != nullptr) inner_->Unsubscribe(it->inner_id);
      locals_.erase(it);
      return;
    }
  }
  Status Flush(int timeout_ms) override {
    std::shared_ptr<Bus> inner;
    {
      std::lock_guard lock(mu_);
      inner = inner_;
    }
    if (inner == nullptr) return Status::IoError("{}: flush during a hub hand-over", url());
    return inner->Flush(timeout_ms);
  }
  BusCounters counters() const override {
    std::lock_guard lock(mu_);
    BusCounters c = inner_ != nullptr ? inner_->counters() : BusCounters{.connected = false};
    c.published += retired_.published;
    c.dropped += retired_.dropped;
    c.received += retired_.received;
    c.reconnects += retired_.reconnects;
    c.bad_frames += retired_.bad_frames;
    return c;
  }
  std::string url() const override { return "unix:" + path_; }

 private:
  struct Local {
    uint64_t id;
    std::string pattern;
    Handler handler;
    uint64_t inner_id;
  };

  // Every kRetryMs while the client has no hub: try the lock; with it, take over.
  void Watch() {
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(kRetryMs), [this] { return stop_; })) {
      if (client_ == nullptr || inner_->counters().connected) continue;
      lock.unlock();
      TakeOver();
      lock.lock();
    }
  }

  void TakeOver() {
    Result<int> lock_fd = TryLock(path_, addr_);
    if (!lock_fd.ok() || *lock_fd < 0) return;  // another hub (or the lock file is gone)
    // The client goes first, so that it cannot connect to the hub this becomes; it is
    // destroyed unlocked (its thread may be in one of our handlers, which may publish).
    std::shared_ptr<Bus> old;
    UnixClientBus* client;
    {
      std::lock_guard lock(mu_);
      old = std::move(inner_);
      client = std::exchange(client_, nullptr);
    }
    std::vector<Message> queued = client->TakeQueued();
    const BusCounters gone = old->counters();
    old.reset();
    Result<std::unique_ptr<Bus>> hub = Host(path_, addr_, options_, *lock_fd);
    std::lock_guard lock(mu_);
    retired_.published += gone.published;
    retired_.dropped += gone.dropped;
    retired_.received += gone.received;
    retired_.reconnects += gone.reconnects + 1;
    retired_.bad_frames += gone.bad_frames;
    if (hub.ok()) {
      inner_ = std::move(*hub);
    } else {  // no socket for it: a client again, which tries the lock again later
      auto again = std::make_shared<UnixClientBus>(path_, addr_, options_);
      client_ = again.get();
      inner_ = std::move(again);
    }
    for (Local& l : locals_) {
      Result<uint64_t> id = inner_->Subscribe(l.pattern, l.handler);
      l.inner_id = id.ok() ? *id : 0;
    }
    for (std::vector<Message>* from : {&queued, &pending_}) {
      for (const Message& m : *from) inner_->Publish(m.subject, m.payload);
    }
    pending_.clear();
  }

  const std::string path_;
  const sockaddr_un addr_;
  const OpenBusOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::shared_ptr<Bus> inner_;    // guarded by mu_; null during a take-over
  UnixClientBus* client_;         // guarded by mu_: inner_ while it is a client, else null
  std::vector<Local> locals_;     // guarded by mu_
  std::vector<Message> pending_;  // guarded by mu_: published during a take-over
  BusCounters retired_;           // guarded by mu_: the counts of inner buses gone
  uint64_t last_id_ = 0;          // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::thread watcher_;
};

}  // namespace

Result<std::unique_ptr<Bus>> OpenUnixBus(const std::string& path, const OpenBusOptions& options) {
  sockaddr_un addr;
  WEFT_RETURN_IF_ERROR(MakeAddress(path, &addr));
  if (!options.may_host) {
    return std::unique_ptr<Bus>(std::make_unique<UnixClientBus>(path, addr, options));
  }
  WEFT_ASSIGN_OR_RETURN(int lock_fd, TryLock(path, addr));
  if (lock_fd >= 0) return Host(path, addr, options, lock_fd);
  return std::unique_ptr<Bus>(std::make_unique<HandOverBus>(path, addr, options));
}

}  // namespace weft::pivot
