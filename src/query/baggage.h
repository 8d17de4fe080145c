// Baggage: the tuples a request carries from the advice that packs them to the advice that
// unpacks them later in its execution (Pivot Tracing §4 "Baggage", §5 "Branches and
// Versioning", Table 4). Offline it travels along a replayed execution; live (part 2,
// pivot/) the same model rides in a thread-local and in message headers.
//
// A baggage holds versioned instances. Packing writes into the active instance only.
// Splitting for a branch freezes the active instance and gives both sides the frozen ones
// and a fresh, empty active instance each, so tuples one branch packs stay invisible to
// the other until they join. Joining takes the union of both sides' instances, by id, so
// the tuples packed before the split are not counted twice. Frozen instances are shared,
// never copied. Unpacking combines a slot's tuples over every instance.
//
// Departure from the paper: Pivot names instances with interval tree clocks, which need no
// coordination between processes; offline one process replays the whole request, so a
// process-wide counter gives unique ids. The live side (pivot/baggage.h) names an instance
// with NameActive before it can meet instances from elsewhere (before a split, and before
// the branch it ends joins), and rebuilds decoded baggage with Restore.
#pragma once

#include <absl/container/inlined_vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "query/advice.h"
#include "query/value.h"

namespace weft::query {

// One slot's tuples in one instance, column-wise: `width` values and `partials` partial
// aggregates per tuple, a multiplicity and an order stamp (when it was packed: later
// stamps happened later or concurrently). A slot mostly holds a tuple or two of a value
// or two (a request's type, the server it went to), which fit inline: live, every request
// decodes and packs some, and three allocations per slot were a third of its baggage's.
struct PackedTuples {
  uint32_t width = 0;
  uint32_t partials = 0;
  absl::InlinedVector<Value, 2> values;
  std::vector<PartialAggregate> parts;  // most queries pack no partial aggregate
  absl::InlinedVector<double, 2> mult;
  absl::InlinedVector<int64_t, 2> order;

  size_t size() const { return mult.size(); }
  const Value* Values(size_t i) const { return values.data() + i * width; }
  const PartialAggregate* Parts(size_t i) const { return parts.data() + i * partials; }
  void Append(const Value* v, const PartialAggregate* p, double m, int64_t stamp);
  void Erase(size_t i);
  // The tuple whose values equal `v`, or -1.
  int64_t Find(const Value* v) const;
};

struct BaggageInstance {
  // Two instances are the same when both id and name are equal. Offline the id comes from
  // a process-wide counter and the name is empty; live the name is the interval tree clock
  // event that started the instance (unique without coordination) and the id its hash.
  uint64_t id = 0;
  std::string name;
  std::vector<PackedTuples> slots;  // by slot; sized on first pack

  size_t Tuples() const;  // over all slots
};

class Baggage {
 public:
  Baggage() = default;
  Baggage(const Baggage&) = default;
  Baggage& operator=(const Baggage&) = default;
  // Moves take packs() along. Where no query packs there are no frozen instances: then
  // their list is left alone, which an inline list's move would not do.
  Baggage(Baggage&& other) noexcept : active_(std::move(other.active_)), packs_(other.packs_) {
    if (!other.frozen_.empty()) frozen_.swap(other.frozen_);
  }
  Baggage& operator=(Baggage&& other) noexcept {
    if (this == &other) return *this;
    frozen_.clear();
    if (!other.frozen_.empty()) frozen_.swap(other.frozen_);
    active_ = std::move(other.active_);
    packs_ = other.packs_;
    return *this;
  }

  void Clear();
  // Clear, and packs() starts again from 0: as new, but keeping what the active instance's
  // slots had allocated (a state kept for the next baggage, pivot/baggage.cc).
  void Reset() {
    Clear();
    packs_ = 0;
  }
  size_t tuples() const;  // over every instance and slot

  // The active instance's tuples of `slot`, for PACK to add to (it assigns the active
  // instance an id on first use).
  PackedTuples& Active(uint32_t slot, uint32_t width, uint32_t partials);
  // How many times Active() was called on this object: unchanged, nothing was packed since
  // (a reply's baggage need not be serialized again after its Reply advice ran). It stays
  // with the object: Clear and Restore leave it, a move takes it along.
  uint64_t packs() const { return packs_; }

  // Calls fn(const PackedTuples&) for `slot` in every instance that has some, frozen ones
  // in the order they joined, the active one last.
  template <typename Fn>
  void ForEachInstance(uint32_t slot, Fn&& fn) const {
    for (const auto& instance : frozen_) {
      if (slot < instance->slots.size() && instance->slots[slot].size() > 0) {
        fn(instance->slots[slot]);
      }
    }
    if (slot < active_.slots.size() && active_.slots[slot].size() > 0) fn(active_.slots[slot]);
  }
  size_t SlotSize(uint32_t slot) const;

  // Table 4's split(): `branch` becomes this baggage's copy for a branching execution.
  void SplitInto(Baggage& branch);
  // Table 4's join(): merges in the baggage of a branch that rejoins this one.
  void Join(const Baggage& other);
  // The same for a branch that ends here: its instances are moved, not copied (`other` is
  // left to be cleared).
  void Join(Baggage&& other);

  // For the live baggage, which names instances and encodes them.
  // Inline up to two: a request's baggage mostly holds one or two frozen instances (what
  // its caller packed, what a reply brought back), and splits copy the list for each call.
  using FrozenInstances = absl::InlinedVector<std::shared_ptr<const BaggageInstance>, 2>;
  const FrozenInstances& frozen() const { return frozen_; }
  const BaggageInstance& active() const { return active_; }
  // Gives the active instance the id and name the caller chose (instead of the counter's).
  void NameActive(uint64_t id, std::string name);
  // Replaces the contents with decoded instances.
  void Restore(FrozenInstances frozen, BaggageInstance active);

 private:
  void ClearActive();

  FrozenInstances frozen_;
  BaggageInstance active_;
  uint64_t packs_ = 0;
};

}  // namespace weft::query
