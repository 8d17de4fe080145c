// Strings that live advice keeps past the firing (packed into baggage, emitted into a
// group key) are interned: a tracepoint's string arguments are views valid during Fire
// only. Interned strings are never freed, so a Value holding one stays valid wherever the
// baggage travels in this process.
//
// A thread looks a string up in the few it interned last (by the address it came from,
// the contents compared), then in a cache of its own; only a string new to the thread
// takes the process-wide lock (held by firing threads only, never by the agent). Past
// kMaxInternedBytes the value becomes null and the drop is counted.
#pragma once

#include <cstdint>

#include "query/value.h"

namespace weft::pivot {

inline constexpr uint64_t kMaxInternedBytes = 64ull << 20;

// `v` with its string (if any) interned; other values unchanged.
query::Value InternValue(const query::Value& v);
// Strings that became null because the interner was full.
uint64_t InternDrops();

}  // namespace weft::pivot
