// Strongly typed 32-bit ids: a NodeId cannot be passed where a MessageId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace weft {

template <typename Tag>
class Id {
 public:
  using Rep = uint32_t;
  static constexpr Rep kInvalidValue = std::numeric_limits<Rep>::max();

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

}  // namespace weft

template <typename Tag>
struct std::hash<weft::Id<Tag>> {
  size_t operator()(weft::Id<Tag> id) const noexcept { return std::hash<uint32_t>()(id.value()); }
};
