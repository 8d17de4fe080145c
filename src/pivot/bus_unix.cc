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
//
// The parts: bus_embedded.{h,cc} (the socket helpers; EmbeddedBus, what the hub and the
// clients share), bus_unix_client.cc, bus_unix_hub.cc, and here the front end's bus that
// takes the hub over, and OpenUnixBus.
#include "pivot/bus_unix.h"

#include <sys/un.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "pivot/bus.h"
#include "pivot/bus_embedded.h"

namespace weft::pivot {
namespace {

using embedded::EmbeddedBus;
using embedded::kRetryMs;
using embedded::MakeClient;
using embedded::Message;

// A front end's bus while another hosts: a client that takes the hub over when the host
// goes. Publish, Subscribe and Unsubscribe go to the current inner bus; while it changes
// (a moment) they wait in this object.
class HandOverBus final : public Bus {
 public:
  HandOverBus(std::string path, const sockaddr_un& addr, const OpenBusOptions& options)
      : path_(std::move(path)),
        addr_(addr),
        options_(options),
        inner_(std::shared_ptr<EmbeddedBus>(MakeClient(path_, addr_, options_))),
        client_(static_cast<EmbeddedBus*>(inner_.get())) {
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
    Result<int> lock_fd = embedded::TryLock(path_, addr_);
    if (!lock_fd.ok() || *lock_fd < 0) return;  // another hub (or the lock file is gone)
    // The client goes first, so that it cannot connect to the hub this becomes; it is
    // destroyed unlocked (its thread may be in one of our handlers, which may publish).
    std::shared_ptr<Bus> old;
    EmbeddedBus* client;
    {
      std::lock_guard lock(mu_);
      old = std::move(inner_);
      client = std::exchange(client_, nullptr);
    }
    std::vector<Message> queued = client->TakeQueued();
    const BusCounters gone = old->counters();
    old.reset();
    Result<std::unique_ptr<Bus>> hub = embedded::Host(path_, addr_, options_, *lock_fd);
    std::lock_guard lock(mu_);
    retired_.published += gone.published;
    retired_.dropped += gone.dropped;
    retired_.received += gone.received;
    retired_.reconnects += gone.reconnects + 1;
    retired_.bad_frames += gone.bad_frames;
    if (hub.ok()) {
      inner_ = std::move(*hub);
    } else {  // no socket for it: a client again, which tries the lock again later
      auto again = std::shared_ptr<EmbeddedBus>(MakeClient(path_, addr_, options_));
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
  EmbeddedBus* client_;           // guarded by mu_: inner_ while it is a client, else null
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
  WEFT_RETURN_IF_ERROR(embedded::MakeAddress(path, &addr));
  if (!options.may_host) {
    return std::unique_ptr<Bus>(MakeClient(path, addr, options));
  }
  WEFT_ASSIGN_OR_RETURN(int lock_fd, embedded::TryLock(path, addr));
  if (lock_fd >= 0) return embedded::Host(path, addr, options, lock_fd);
  return std::unique_ptr<Bus>(std::make_unique<HandOverBus>(path, addr, options));
}

}  // namespace weft::pivot
