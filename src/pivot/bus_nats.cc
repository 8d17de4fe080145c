// The NATS transport (bus.h "nats://HOST:PORT") over libnats.
//
// libnats reconnects forever (natsOptions_SetMaxReconnect(-1)) and keeps what is published
// while disconnected in its reconnect buffer (OpenBusOptions::max_queued_bytes); a publish
// that does not fit fails with NATS_INSUFFICIENT_BUFFER and is counted as dropped. A server
// that is not up yet is retried the same way (natsOptions_SetRetryOnFailedConnect), so
// opening never fails for want of a server. Subscriptions are libnats's own, which it
// sends again on every reconnect.
//
// natsConnection_Publish can block: it writes to the socket once libnats's write buffer is
// full, so a stalled server would stall the caller. Publish therefore only appends to a
// bounded queue, and this object's sender thread makes the libnats calls.
//
// Handlers run on libnats's delivery thread of their subscription, not on the publisher's.
#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include "pivot/bus.h"
#include "pivot/bus_unix.h"
#include "pivot/frame.h"

namespace weft::pivot {
namespace {

constexpr int64_t kReconnectWaitMs = 100;
constexpr int64_t kConnectTimeoutMs = 1000;
constexpr int kCloseWaitMs = 2000;

class NatsBus final : public Bus {
 public:
  NatsBus(std::string url, const OpenBusOptions& options)
      : url_(std::move(url)), options_(options) {}

  ~NatsBus() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (sender_.joinable()) sender_.join();
    if (nc_ != nullptr) natsConnection_Close(nc_);
    // A handler may still be running on a delivery thread; its closure must outlive it.
    for (Sub& s : subscriptions_) {
      if (s.sub != nullptr) natsSubscription_Destroy(s.sub);
      s.sub = nullptr;
    }
    {
      std::unique_lock lock(complete_mu_);
      completed_.wait_for(lock, std::chrono::milliseconds(kCloseWaitMs), [&] {
        return std::all_of(subscriptions_.begin(), subscriptions_.end(),
                           [](const Sub& s) { return s.complete.load(); });
      });
    }
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  Status Connect() {
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, url_.c_str());
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, true);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, kReconnectWaitMs);
    if (s == NATS_OK) s = natsOptions_SetReconnectJitter(opts, kReconnectWaitMs / 2, 0);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, kConnectTimeoutMs);
    if (s == NATS_OK) {
      s = natsOptions_SetReconnectBufSize(
          opts, static_cast<int>(std::clamp<size_t>(options_.max_queued_bytes, 1, 1 << 30)));
    }
    if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, &NatsBus::OnReconnected, this);
    if (s == NATS_OK)
      s = natsOptions_SetRetryOnFailedConnect(opts, true, &NatsBus::OnConnected, this);
    if (s == NATS_OK) {
      s = natsConnection_Connect(&nc_, opts);
      if (s == NATS_NOT_YET_CONNECTED) s = NATS_OK;  // libnats keeps trying in the background
    }
    if (opts != nullptr) natsOptions_Destroy(opts);
    if (s != NATS_OK) {
      nc_ = nullptr;
      return Status::IoError("{}: {}", url_, natsStatus_GetText(s));
    }
    sender_ = std::thread([this] { Send(); });
    return Status::Ok();
  }

  void Publish(std::string_view subject, std::string_view payload) override {
    {
      std::lock_guard lock(mu_);
      if (!ValidSubject(subject) || payload.size() > kMaxPayload ||
          queue_.size() >= options_.max_queued_messages) {
        ++counters_.dropped;
        return;
      }
      queue_.push_back({std::string(subject), std::string(payload)});
      ++accepted_;
    }
    wake_.notify_one();
  }

  Result<uint64_t> Subscribe(std::string_view pattern, Handler handler) override {
    if (!ValidSubject(pattern)) {
      return Status::InvalidArgument("bad subscription pattern '{}'", pattern);
    }
    std::lock_guard lock(mu_);
    Sub& sub = subscriptions_.emplace_back();
    sub.bus = this;
    sub.id = ++last_id_;
    sub.handler = std::move(handler);
    std::string p(pattern);
    natsStatus s = natsConnection_Subscribe(&sub.sub, nc_, p.c_str(), &NatsBus::OnMessage, &sub);
    if (s == NATS_OK) s = natsSubscription_SetOnCompleteCB(sub.sub, &NatsBus::OnComplete, &sub);
    if (s != NATS_OK) {
      if (sub.sub != nullptr) natsSubscription_Destroy(sub.sub);
      subscriptions_.pop_back();
      return Status::IoError("{}: cannot subscribe to '{}': {}", url_, pattern,
                             natsStatus_GetText(s));
    }
    return sub.id;
  }

  void Unsubscribe(uint64_t id) override {
    std::lock_guard lock(mu_);
    for (Sub& s : subscriptions_) {
      if (s.id != id || s.sub == nullptr) continue;
      s.active = false;
      natsSubscription_Unsubscribe(s.sub);
      natsSubscription_Destroy(s.sub);
      s.sub = nullptr;
    }
  }

  Status Flush(int timeout_ms) override {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    {
      std::unique_lock lock(mu_);
      uint64_t target = accepted_;
      if (!sent_cv_.wait_until(lock, deadline, [&] { return handed_ >= target; })) {
        return Status::IoError("{}: flush timed out after {} ms", url_, timeout_ms);
      }
    }
    int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now())
                       .count();
    natsStatus s = natsConnection_FlushTimeout(nc_, std::max<int64_t>(1, left));
    if (s != NATS_OK) return Status::IoError("{}: flush: {}", url_, natsStatus_GetText(s));
    return Status::Ok();
  }

  BusCounters counters() const override {
    std::lock_guard lock(mu_);
    BusCounters c = counters_;
    c.received = received_.load();
    c.reconnects = reconnects_.load();
    c.connected = nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
    return c;
  }
  std::string url() const override { return url_; }

 private:
  struct Message {
    std::string subject, payload;
  };
  // The closure of one libnats subscription; lives (in a std::list, so at a fixed
  // address) until the bus is destroyed.
  struct Sub {
    NatsBus* bus = nullptr;
    uint64_t id = 0;
    Handler handler;
    natsSubscription* sub = nullptr;
    std::atomic<bool> active{true};
    std::atomic<bool> complete{false};  // no callback will run again
  };

  static void OnMessage(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* sub = static_cast<Sub*>(closure);
    if (sub->active.load()) {
      sub->handler(
          std::string_view(natsMsg_GetSubject(msg)),
          std::string_view(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))));
      ++sub->bus->received_;
    }
    natsMsg_Destroy(msg);
  }
  static void OnComplete(void* closure) {
    auto* sub = static_cast<Sub*>(closure);
    {
      // Its own mutex: libnats may call this from within Unsubscribe, under mu_.
      std::lock_guard lock(sub->bus->complete_mu_);
      sub->complete = true;
    }
    sub->bus->completed_.notify_all();
  }
  static void OnReconnected(natsConnection*, void* closure) {
    ++static_cast<NatsBus*>(closure)->reconnects_;
  }
  static void OnConnected(natsConnection*, void*) {}

  // The sender thread: hands queued messages to libnats, off the publishers' threads.
  void Send() {
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      std::deque<Message> batch;
      batch.swap(queue_);
      lock.unlock();
      uint64_t ok = 0, failed = 0;
      for (const Message& m : batch) {
        natsStatus s = natsConnection_Publish(nc_, m.subject.c_str(), m.payload.data(),
                                              static_cast<int>(m.payload.size()));
        (s == NATS_OK ? ok : failed)++;
      }
      lock.lock();
      counters_.published += ok;
      counters_.dropped += failed;
      handed_ += batch.size();
      sent_cv_.notify_all();
    }
  }

  const std::string url_;
  const OpenBusOptions options_;
  natsConnection* nc_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable wake_, sent_cv_;
  std::mutex complete_mu_;
  std::condition_variable completed_;
  std::deque<Message> queue_;           // guarded by mu_
  std::list<Sub> subscriptions_;        // guarded by mu_
  BusCounters counters_;                // guarded by mu_: published and dropped
  uint64_t accepted_ = 0, handed_ = 0;  // guarded by mu_
  uint64_t last_id_ = 0;                // guarded by mu_
  bool stop_ = false;                   // guarded by mu_
  std::atomic<uint64_t> received_{0}, reconnects_{0};
  std::thread sender_;
};

}  // namespace

Result<std::unique_ptr<Bus>> OpenNatsBus(const std::string& url, const OpenBusOptions& options) {
  auto bus = std::make_unique<NatsBus>(url, options);
  WEFT_RETURN_IF_ERROR(bus->Connect());
  return std::unique_ptr<Bus>(std::move(bus));
}

}  // namespace weft::pivot
