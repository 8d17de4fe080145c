#include "pivot/interner.h"

#include <absl/container/flat_hash_set.h>
#include <absl/container/node_hash_set.h>
#include <pthread.h>

#include <atomic>
#include <mutex>
#include <string>

namespace weft::pivot {
namespace {

struct Interner {
  std::mutex mu;
  absl::node_hash_set<std::string> strings;  // node-based: addresses stay put
  uint64_t bytes = 0;
  std::atomic<uint64_t> drops{0};
};

Interner* g_interner = nullptr;

// A child forked while another thread held the lock would never get it: the lock is held
// across fork.
void LockForFork() { g_interner->mu.lock(); }
void UnlockAfterFork() { g_interner->mu.unlock(); }

Interner& GetInterner() {
  static Interner* interner = [] {
    g_interner = new Interner;  // never destroyed: values point into it
    pthread_atfork(&LockForFork, &UnlockAfterFork, &UnlockAfterFork);
    return g_interner;
  }();
  return *interner;
}

}  // namespace

query::Value InternValue(const query::Value& v) {
  if (v.type != query::ValueType::kString) return v;
  thread_local absl::flat_hash_set<std::string_view> cache;
  auto it = cache.find(v.s);
  if (it != cache.end()) return query::Value::String(*it);
  Interner& in = GetInterner();
  std::string_view kept;
  {
    std::lock_guard lock(in.mu);
    auto found = in.strings.find(absl::string_view(v.s.data(), v.s.size()));
    if (found == in.strings.end()) {
      if (in.bytes + v.s.size() > kMaxInternedBytes) {
        in.drops.fetch_add(1, std::memory_order_relaxed);
        return query::Value::Null();
      }
      in.bytes += v.s.size() + sizeof(std::string);
      found = in.strings.emplace(v.s).first;
    }
    kept = *found;
  }
  cache.insert(kept);
  return query::Value::String(kept);
}

uint64_t InternDrops() { return GetInterner().drops.load(std::memory_order_relaxed); }

}  // namespace weft::pivot
