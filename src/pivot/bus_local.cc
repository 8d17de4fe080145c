// The in-process bus (bus.h "local"): one delivery thread and a bounded queue, so that a
// publisher never runs subscribers' handlers on its own stack and never blocks.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "pivot/bus.h"

namespace weft::pivot {

bool SubjectMatches(std::string_view pattern, std::string_view subject) {
  while (true) {
    size_t pe = pattern.find('.');
    size_t se = subject.find('.');
    std::string_view p = pattern.substr(0, pe);
    std::string_view s = subject.substr(0, se);
    if (p == ">") return !subject.empty();
    if (subject.empty() || (p != "*" && p != s)) return false;
    if (pe == std::string_view::npos || se == std::string_view::npos) {
      return pe == std::string_view::npos && se == std::string_view::npos;
    }
    pattern.remove_prefix(pe + 1);
    subject.remove_prefix(se + 1);
  }
}

namespace {

constexpr size_t kQueueBound = 4096;

class LocalBus final : public Bus {
 public:
  LocalBus() : thread_([this] { Deliver(); }) {}
  ~LocalBus() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void Publish(std::string_view subject, std::string_view payload) override {
    {
      std::lock_guard lock(mu_);
      if (queue_.size() >= kQueueBound) {
        ++counters_.dropped;
        return;
      }
      queue_.push_back({std::string(subject), std::string(payload)});
      ++counters_.published;
    }
    wake_.notify_one();
  }

  Result<uint64_t> Subscribe(std::string_view pattern, Handler handler) override {
    std::lock_guard lock(mu_);
    subscriptions_.push_back({++last_id_, std::string(pattern), std::move(handler)});
    return last_id_;
  }

  void Unsubscribe(uint64_t id) override {
    std::lock_guard lock(mu_);
    std::erase_if(subscriptions_, [id](const Subscription& s) { return s.id == id; });
  }

  Status Flush(int timeout_ms) override {
    std::unique_lock lock(mu_);
    uint64_t target = enqueued_total();
    if (!idle_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                        [&] { return delivered_ >= target; })) {
      return Status::IoError("local bus: flush timed out after {} ms", timeout_ms);
    }
    return Status::Ok();
  }

  BusCounters counters() const override {
    std::lock_guard lock(mu_);
    return counters_;
  }
  std::string url() const override { return "local"; }

 private:
  struct Message {
    std::string subject, payload;
  };
  struct Subscription {
    uint64_t id;
    std::string pattern;
    Handler handler;
  };

  uint64_t enqueued_total() const { return delivered_ + queue_.size() + (busy_ ? 1 : 0); }

  void Deliver() {
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      Message m = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      // Handlers run unlocked (they may publish); a copy keeps them valid meanwhile.
      std::vector<Handler> targets;
      for (const Subscription& s : subscriptions_) {
        if (SubjectMatches(s.pattern, m.subject)) targets.push_back(s.handler);
      }
      lock.unlock();
      for (const Handler& h : targets) h(m.subject, m.payload);
      lock.lock();
      busy_ = false;
      counters_.received += targets.size();
      ++delivered_;
      idle_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Message> queue_;
  std::vector<Subscription> subscriptions_;
  BusCounters counters_;
  uint64_t last_id_ = 0;
  uint64_t delivered_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

std::unique_ptr<Bus> MakeLocalBus() { return std::make_unique<LocalBus>(); }

}  // namespace weft::pivot
