#include "pivot/interner.h"

#include <absl/container/flat_hash_set.h>
#include <absl/container/node_hash_set.h>
#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
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
  // First the strings this thread interned last, by the address they were interned from:
  // a tracepoint's string arguments are mostly the same few strings (a server's name, a
  // request's type) at the same addresses, so most lookups end here, with one compare
  // and no hash. The compare is of the contents, so an address reused for another string
  // is only a miss. Trivially destructible: read without a thread-local init guard.
  struct Recent {
    const char* from = nullptr;
    std::string_view kept;
  };
  thread_local constinit std::array<Recent, 8> recent{};
  Recent& r = recent[(uintptr_t(v.s.data()) >> 3 ^ v.s.size()) & 7];
  if (r.from == v.s.data() && r.kept.size() == v.s.size() &&
      std::memcmp(r.kept.data(), v.s.data(), v.s.size()) == 0) {
    return query::Value::String(r.kept);
  }
  thread_local absl::flat_hash_set<std::string_view> cache;
  auto it = cache.find(v.s);
  if (it != cache.end()) {
    r = {v.s.data(), *it};
    return query::Value::String(*it);
  }
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
  r = {v.s.data(), kept};
  return query::Value::String(kept);
}

uint64_t InternDrops() { return GetInterner().drops.load(std::memory_order_relaxed); }

}  // namespace weft::pivot
