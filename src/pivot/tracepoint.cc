// Tracepoints, their registry, and the weaving of advice (weft/tracepoint.h, weaving.h).
//
// Freeing an unwoven AdviceList safely: every thread that runs advice owns a reader
// record with a sequence number, odd while it is inside FireWoven. The reader increments
// it (seq_cst) before it loads the tracepoint's list (seq_cst) and again when it is done.
// The writer exchanges the list (seq_cst), then reads every record: one that is even is
// outside, and if it enters later its load comes after the exchange in the single total
// order of seq_cst operations, so it sees the new list. One that is odd may hold the old
// list; the writer waits until that record's number changes (the reader left). After
// that the old list is unreachable and is freed. Readers never wait: they only touch
// their own record. Records are never freed; a thread that exits releases its record
// for the next new thread, so there are never more than the most threads alive at once.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "pivot/weaving.h"

namespace weft::pivot {

struct TracepointAccess {
  static std::atomic<const AdviceList*>& Advice(Tracepoint& t) { return t.advice_; }
};

namespace {

struct ReaderRecord {
  std::atomic<uint64_t> seq{0};
  std::atomic<bool> in_use{true};
  uint32_t depth = 0;  // this thread's nesting of FireWoven (advice firing a tracepoint)
  ReaderRecord* next = nullptr;
};

std::atomic<ReaderRecord*> g_records{nullptr};

ReaderRecord* AcquireRecord() {
  for (ReaderRecord* r = g_records.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    bool expected = false;
    if (!r->in_use.load(std::memory_order_relaxed) &&
        r->in_use.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      return r;
    }
  }
  auto* r = new ReaderRecord;  // never freed: writers may be reading it
  r->next = g_records.load(std::memory_order_relaxed);
  while (!g_records.compare_exchange_weak(r->next, r, std::memory_order_release,
                                          std::memory_order_relaxed)) {
  }
  return r;
}

struct RecordHolder {
  ReaderRecord* record = AcquireRecord();
  ~RecordHolder() { record->in_use.store(false, std::memory_order_release); }
};

ReaderRecord& ThisThreadRecord() {
  thread_local RecordHolder holder;
  return *holder.record;
}

void WaitForReaders() {
  std::vector<std::pair<ReaderRecord*, uint64_t>> inside;
  for (ReaderRecord* r = g_records.load(std::memory_order_acquire); r != nullptr; r = r->next) {
    uint64_t s = r->seq.load(std::memory_order_seq_cst);
    if (s & 1) inside.push_back({r, s});
  }
  for (const auto& [r, s] : inside) {
    while (r->seq.load(std::memory_order_acquire) == s) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

struct StandingWeave {
  uint64_t id;
  std::string name;
  HookFactory factory;
};

// Everything but the firing path, under one mutex: construction of tracepoints, weaving.
struct Registry {
  std::mutex mu;
  std::vector<Tracepoint*> tracepoints;
  std::vector<StandingWeave> weaves;
  uint64_t last_weave = 0;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // never destroyed: static tracepoints outlive it
  return *registry;
}

// Replaces `t`'s list with `next` (null if empty) and frees the old one. Under mu.
void Swap(Tracepoint& t, std::unique_ptr<AdviceList> next) {
  if (next != nullptr && next->hooks.empty()) next.reset();
  const AdviceList* old =
      TracepointAccess::Advice(t).exchange(next.release(), std::memory_order_seq_cst);
  if (old != nullptr) {
    WaitForReaders();
    delete old;
  }
}

std::unique_ptr<AdviceList> CopyList(Tracepoint& t) {
  const AdviceList* now = TracepointAccess::Advice(t).load(std::memory_order_relaxed);
  return std::make_unique<AdviceList>(now != nullptr ? *now : AdviceList{});
}

void Apply(Tracepoint& t, const StandingWeave& w) {
  std::shared_ptr<WovenHook> hook = w.factory(t);
  if (hook == nullptr) return;
  std::unique_ptr<AdviceList> next = CopyList(t);
  next->hooks.push_back(std::move(hook));
  next->owners.push_back(w.id);
  Swap(t, std::move(next));
}

}  // namespace

Tracepoint::Tracepoint(std::string_view name, std::initializer_list<std::string_view> exports)
    : name_(name) {
  for (std::string_view e : exports) exports_.emplace_back(e);
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  r.tracepoints.push_back(this);
  for (const StandingWeave& w : r.weaves) {
    if (w.name == name_) Apply(*this, w);
  }
}

Tracepoint::~Tracepoint() {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  std::erase(r.tracepoints, this);
  Swap(*this, nullptr);
}

void Tracepoint::FireWoven(const TracepointArg* args, size_t n) {
  ReaderRecord& r = ThisThreadRecord();
  if (r.depth++ == 0) r.seq.fetch_add(1, std::memory_order_seq_cst);
  const AdviceList* list = advice_.load(std::memory_order_seq_cst);
  if (list != nullptr) {
    for (const auto& hook : list->hooks) hook->Run(args, n);
  }
  if (--r.depth == 0) r.seq.fetch_add(1, std::memory_order_release);
}

uint64_t Weave(std::string name, HookFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  StandingWeave& w = r.weaves.emplace_back(StandingWeave{++r.last_weave, std::move(name),
                                                         std::move(factory)});
  for (Tracepoint* t : r.tracepoints) {
    if (t->name() == w.name) Apply(*t, w);
  }
  return w.id;
}

void Unweave(uint64_t weave) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  std::erase_if(r.weaves, [&](const StandingWeave& w) { return w.id == weave; });
  for (Tracepoint* t : r.tracepoints) {
    const AdviceList* now = TracepointAccess::Advice(*t).load(std::memory_order_relaxed);
    if (now == nullptr ||
        std::find(now->owners.begin(), now->owners.end(), weave) == now->owners.end()) {
      continue;
    }
    auto next = std::make_unique<AdviceList>();
    for (size_t i = 0; i < now->hooks.size(); ++i) {
      if (now->owners[i] == weave) continue;
      next->hooks.push_back(now->hooks[i]);
      next->owners.push_back(now->owners[i]);
    }
    Swap(*t, std::move(next));
  }
}

std::vector<TracepointInfo> RegisteredTracepoints() {
  Registry& r = GetRegistry();
  std::vector<TracepointInfo> out;
  {
    std::lock_guard lock(r.mu);
    for (const Tracepoint* t : r.tracepoints) {
      if (std::none_of(out.begin(), out.end(),
                       [&](const TracepointInfo& i) { return i.name == t->name(); })) {
        out.push_back({t->name(), t->exports()});
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TracepointInfo& a, const TracepointInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace weft::pivot
