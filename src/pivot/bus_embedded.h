// What the embedded bus's hub (bus_unix_hub.cc) and clients (bus_unix_client.cc) share,
// and what the front end's hand-over (bus_unix.cc, which describes the whole) uses of
// them: the socket helpers, and EmbeddedBus, the publish queue, subscriptions and thread.
// Only those three files include this.
#pragma once

#include <sys/eventfd.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/frame.h"

namespace weft::pivot::embedded {

constexpr int kRetryMs = 200;
constexpr size_t kConnectionOutBound = 4 << 20;
constexpr size_t kBatchBytes = 256 << 10;
constexpr size_t kMaxConnections = 1024;
constexpr size_t kReadChunk = 64 << 10;

int64_t NowMs();
Status MakeAddress(const std::string& path, sockaddr_un* addr);
// A non-blocking connect; returns the connected socket or -1. On a Unix socket connect
// completes at once or fails (EAGAIN: the hub's backlog is full; try again later).
int ConnectTo(const sockaddr_un& addr, int* error);
// Writes what the socket takes now of out[*offset..]. False when the peer is gone.
bool WriteSome(int fd, std::string* out, size_t* offset);
// Reads what is there into `decoder`. False when the peer closed or the socket failed.
bool ReadSome(int fd, FrameDecoder* decoder);

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

// A client of the hub at `addr` (bus_unix_client.cc): connects now or later, in the
// background.
std::unique_ptr<EmbeddedBus> MakeClient(std::string path, const sockaddr_un& addr,
                                        const OpenBusOptions& options);

// The hub (bus_unix_hub.cc). TryLock: PATH.lock, locked, if no hub holds it (and nothing
// listens at `addr`); -1 if one does. Host: becomes the hub at `path`, holding `lock_fd`
// (TryLock), which it owns from then on.
Result<int> TryLock(const std::string& path, const sockaddr_un& addr);
Result<std::unique_ptr<Bus>> Host(const std::string& path, const sockaddr_un& addr,
                                  const OpenBusOptions& options, int lock_fd);

}  // namespace weft::pivot::embedded
