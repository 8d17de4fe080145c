#include "pivot/live_query.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <new>

#include "pivot/current_baggage.h"
#include "pivot/interner.h"
#include "pivot/weaving.h"
#include "query/parser.h"
#include "query/runner.h"

namespace weft::pivot {
namespace {

// Order stamps of packed tuples, shared by every thread (runner.h RunnerOptions).
std::atomic<int64_t> g_stamps{1};

query::Value ToValue(const TracepointArg& a) {
  switch (a.type) {
    case TracepointArg::Type::kInt:
      return query::Value::Int(a.i);
    case TracepointArg::Type::kFloat:
      return query::Value::Float(a.f);
    case TracepointArg::Type::kString:
      return query::Value::String(a.s);
    case TracepointArg::Type::kNull:
      break;
  }
  return query::Value::Null();
}

// A firing's exports by the query's export ids: `map` takes each to an argument index.
class ArgExports final : public query::EventExports {
 public:
  ArgExports(const std::vector<int32_t>& map, const TracepointArg* args, size_t n)
      : map_(map), args_(args), n_(n) {}
  void Observe(std::span<const uint32_t> ids, query::Value* out) const override {
    for (size_t j = 0; j < ids.size(); ++j) {
      const uint32_t id = ids[j];
      const int32_t at = id < map_.size() ? map_[id] : -1;
      out[j] = at < 0 || size_t(at) >= n_ ? query::Value::Null() : ToValue(args_[at]);
    }
  }

 private:
  const std::vector<int32_t>& map_;
  const TracepointArg* args_;
  size_t n_;
};

// A thread's state for one query: its runner (scratch rows) and its buffer.
struct ThreadState final : query::EmitSink {
  query::AdviceRunner runner;
  LiveQuery::ThreadBuffer* buffer = nullptr;  // owned by the query, which the cache holds

  ThreadState(std::shared_ptr<const query::CompiledQuery> q, uint32_t slot_base)
      : runner(std::move(q), {.slot_base = slot_base,
                              .shared_stamps = &g_stamps,
                              .track_baggage_size = false,
                              .keep_value = &InternValue}) {}

  void Emit(std::span<const query::Value> key, double mult,
            std::span<const query::PartialAggregate> partials) override {
    // A drop counts the tuples the emit stood for (a join emits several at once), so that
    // a COUNT misses exactly the drops.
    const uint64_t tuples = mult >= 1 ? uint64_t(std::llround(mult)) : 1;
    if (!buffer->mu.try_lock()) {  // the agent is harvesting: never wait for it
      buffer->drops.fetch_add(tuples, std::memory_order_relaxed);
      return;
    }
    bool added = buffer->groups.Add(key, mult, partials);
    buffer->mu.unlock();
    if (!added) buffer->drops.fetch_add(tuples, std::memory_order_relaxed);
  }
};

struct CacheEntry {
  std::shared_ptr<LiveQuery> query;
  std::unique_ptr<ThreadState> state;
};

}  // namespace

class LiveHook final : public WovenHook {
 public:
  LiveHook(std::shared_ptr<LiveQuery> query, uint32_t tracepoint, std::vector<int32_t> map)
      : query_(std::move(query)), tracepoint_(tracepoint), map_(std::move(map)) {}

  void Run(const TracepointArg* args, size_t n) override {
    ThreadState* state = State();
    state->runner.Fire(tracepoint_, ArgExports(map_, args, n), CurrentBaggage().Contents(), *state);
    state->buffer->events.fetch_add(1, std::memory_order_relaxed);
    if (query_->fork_pipe_ >= 0) [[unlikely]]
      query_->SendToParent(*state->buffer);
  }

 private:
  // This thread's state for the query; made on its first firing. Entries of queries
  // since removed are dropped here.
  ThreadState* State() {
    thread_local std::vector<CacheEntry> cache;
    for (size_t i = 0; i < cache.size();) {
      if (cache[i].query == query_) return cache[i].state.get();
      if (cache[i].query->unwoven_.load(std::memory_order_relaxed)) {
        cache.erase(cache.begin() + ptrdiff_t(i));
      } else {
        ++i;
      }
    }
    auto state = std::make_unique<ThreadState>(query_->compiled_, query_->slot_base_);
    state->buffer = query_->RegisterThread();
    cache.push_back({query_, std::move(state)});
    return cache.back().state.get();
  }

  std::shared_ptr<LiveQuery> query_;
  uint32_t tracepoint_;
  std::vector<int32_t> map_;
};

Result<std::shared_ptr<LiveQuery>> LiveQuery::Make(const InstallMessage& install) {
  std::vector<query::Tracepoint> catalog = install.catalog;
  for (const TracepointInfo& t : RegisteredTracepoints()) {
    if (std::none_of(catalog.begin(), catalog.end(),
                     [&](const query::Tracepoint& c) { return c.name == t.name; })) {
      catalog.push_back({t.name, t.exports, ""});
    }
  }
  WEFT_ASSIGN_OR_RETURN(query::Program program, query::ParseProgram(install.text, "install"));
  WEFT_ASSIGN_OR_RETURN(
      auto compiled,
      query::Compile(program, catalog,
                     {.text = install.text, .source = "install", .optimize = install.optimize}));
  std::shared_ptr<LiveQuery> q(new LiveQuery);
  q->id_ = install.id;
  q->text_ = install.text;
  q->slot_base_ = install.slot_base;
  q->interval_ns_ = install.interval_ns;
  q->compiled_ = std::move(compiled);
  const query::EmitSpec& emit = q->compiled_->emit;
  for (const query::EmitSpec::Column& c : emit.columns) {
    ResultColumn col{.name = c.name};
    if (!emit.aggregated) {
      col.key = c.expr;
    } else if (c.group_key >= 0) {
      col.key = c.group_key;
    } else {
      col.aggregate = c.aggregate;
      col.op = q->compiled_->aggregates[size_t(c.aggregate)].op;
    }
    q->columns_.push_back(std::move(col));
  }
  return q;
}

LiveQuery::~LiveQuery() {
  Unweave();
  for (BufferNode* n = buffers_.load(std::memory_order_acquire); n != nullptr;) {
    BufferNode* next = n->next;
    delete n;
    n = next;
  }
}

uint32_t LiveQuery::slots() const { return uint32_t(compiled_->units.size()); }

bool LiveQuery::Weave() {
  const std::vector<query::Tracepoint>& catalog = compiled_->tracepoints;
  const std::vector<TracepointInfo> here = RegisteredTracepoints();
  bool any = false;
  for (uint32_t t = 0; t < catalog.size(); ++t) {
    if (compiled_->advice[t].empty()) continue;
    any = any || std::any_of(here.begin(), here.end(),
                             [&](const TracepointInfo& i) { return i.name == catalog[t].name; });
    std::weak_ptr<LiveQuery> self = weak_from_this();
    std::vector<std::string> exports = catalog[t].exports;
    weaves_.push_back(pivot::Weave(
        catalog[t].name, [self, t, exports](const Tracepoint& tp) -> std::shared_ptr<WovenHook> {
          std::shared_ptr<LiveQuery> q = self.lock();
          if (q == nullptr) return nullptr;
          std::vector<int32_t> map(exports.size(), -1);
          for (size_t e = 0; e < exports.size(); ++e) {
            auto it = std::find(tp.exports().begin(), tp.exports().end(), exports[e]);
            if (it != tp.exports().end()) map[e] = int32_t(it - tp.exports().begin());
          }
          return std::make_shared<LiveHook>(std::move(q), t, std::move(map));
        }));
  }
  return any;
}

void LiveQuery::Unweave() {
  for (uint64_t w : weaves_) pivot::Unweave(w);
  weaves_.clear();
  unwoven_.store(true, std::memory_order_relaxed);
}

LiveQuery::ThreadBuffer* LiveQuery::RegisterThread() {
  auto* node = new BufferNode(compiled_->aggregates.size());
  node->next = buffers_.load(std::memory_order_relaxed);
  while (!buffers_.compare_exchange_weak(node->next, node, std::memory_order_release,
                                         std::memory_order_relaxed)) {
  }
  return &node->buffer;
}

LiveQuery::Harvest LiveQuery::TakeHarvest() {
  Harvest h{PartialGroups(compiled_->aggregates.size())};
  for (BufferNode* n = buffers_.load(std::memory_order_acquire); n != nullptr; n = n->next) {
    ThreadBuffer& b = n->buffer;
    PartialGroups taken(compiled_->aggregates.size(), kMaxGroupsPerThread);
    {
      std::lock_guard lock(b.mu);
      std::swap(taken, b.groups);
    }
    h.drops += h.groups.Merge(taken);
    h.events += b.events.exchange(0, std::memory_order_relaxed);
    h.drops += b.drops.exchange(0, std::memory_order_relaxed);
  }
  return h;
}

}  // namespace weft::pivot

namespace weft::pivot {

void LiveQuery::EnterForkChild(int pipe, std::atomic<uint64_t>* refused) {
  const size_t aggregates = compiled_->aggregates.size();
  for (BufferNode* n = buffers_.load(std::memory_order_acquire); n != nullptr; n = n->next) {
    ThreadBuffer& b = n->buffer;
    // Another thread of the parent may have held the mutex, or been inside the groups, at
    // the fork: both are made anew (the old groups are left behind, never touched again).
    new (&b.mu) std::mutex;
    new (&b.groups) PartialGroups(aggregates, kMaxGroupsPerThread);
    b.events.store(0, std::memory_order_relaxed);
    b.drops.store(0, std::memory_order_relaxed);
  }
  new (&children_mu_) std::mutex;
  children_ = nullptr;
  fork_pipe_ = pipe;
  fork_refused_ = refused;
}

// A record is a 4-byte length (host order: the reader is this machine's parent) and a
// PartialResults, written with one write() of at most PIPE_BUF bytes, which a pipe keeps
// whole even when several children write at once.
void LiveQuery::SendToParent(ThreadBuffer& b) {
  PartialResults r{.id = id_,
                   .pid = getpid(),
                   .interval_ns = interval_ns_,
                   .aggregated = compiled_->emit.aggregated,
                   .events = b.events.exchange(0, std::memory_order_relaxed),
                   .drops = b.drops.exchange(0, std::memory_order_relaxed),
                   .groups = PartialGroups(compiled_->aggregates.size(), kMaxGroupsPerThread)};
  {
    std::lock_guard lock(b.mu);
    std::swap(r.groups, b.groups);
  }
  const std::string payload = EncodePartials(r);
  const uint32_t size = uint32_t(payload.size());
  if (sizeof size + payload.size() > PIPE_BUF) {
    fork_refused_->fetch_add(r.groups.size(), std::memory_order_relaxed);
    return;
  }
  char record[PIPE_BUF];
  std::memcpy(record, &size, sizeof size);
  std::memcpy(record + sizeof size, payload.data(), payload.size());
  ssize_t wrote;
  do {
    wrote = write(fork_pipe_, record, sizeof size + payload.size());
  } while (wrote < 0 && errno == EINTR);
  if (wrote < 0) fork_refused_->fetch_add(r.groups.size(), std::memory_order_relaxed);
}

void LiveQuery::AddFromChild(const PartialResults& record) {
  std::lock_guard children_lock(children_mu_);
  if (children_ == nullptr) children_ = RegisterThread();
  ThreadBuffer& b = *children_;
  uint64_t refused = 0;
  if (record.groups.aggregates() == compiled_->aggregates.size()) {
    std::lock_guard lock(b.mu);  // the agent's own thread: it may wait for a harvest
    refused = b.groups.Merge(record.groups);
  } else {
    refused = record.groups.size();
  }
  b.events.fetch_add(record.events, std::memory_order_relaxed);
  b.drops.fetch_add(record.drops + refused, std::memory_order_relaxed);
}

}  // namespace weft::pivot
