// Strongly typed 32-bit ids: a NodeId cannot be passed where a MessageId is expected.
// Most ids count from 0 and are invalid at the largest value; an id whose 0 already means
// "unknown" in the data (a thread id, as the kernel numbers threads) says so with
// `InvalidValue`.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace weft {

template <typename Tag, uint32_t InvalidValue = std::numeric_limits<uint32_t>::max()>
class Id {
 public:
  using Rep = uint32_t;
  static constexpr Rep kInvalidValue = InvalidValue;

  constexpr Id() = default;
  constexpr explicit Id(Rep value) : value_(value) {}
  static constexpr Id Invalid() { return Id(); }

  constexpr Rep value() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalidValue; }
  constexpr auto operator<=>(const Id&) const = default;

 private:
  Rep value_ = kInvalidValue;
};

using StringId = Id<struct StringIdTag>;    // an interned string (call id, attribute, ...)
using NodeId = Id<struct NodeIdTag>;        // a node of the system: host, process or thread
using MessageId = Id<struct MessageIdTag>;  // a message: its index in the time-sorted trace
using PathId = Id<struct PathIdTag>;        // a ground-truth path instance
// A thread of a node, by the id its kernel gave it; invalid (0) when capture did not see it.
using ThreadId = Id<struct ThreadIdTag, 0>;
// A clock that times messages: the host of a traced process (reconcile), or a node's own.
using ClockId = Id<struct ClockIdTag>;

}  // namespace weft

template <typename Tag, uint32_t InvalidValue>
struct std::hash<weft::Id<Tag, InvalidValue>> {
  size_t operator()(weft::Id<Tag, InvalidValue> id) const noexcept {
    return std::hash<uint32_t>()(id.value());
  }
};
