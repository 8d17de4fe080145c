#include "query/baggage.h"

#include <algorithm>
#include <atomic>

namespace weft::query {
namespace {

uint64_t NewInstanceId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void PackedTuples::Append(const Value* v, const PartialAggregate* p, double m, int64_t stamp) {
  values.insert(values.end(), v, v + width);
  parts.insert(parts.end(), p, p + partials);
  mult.push_back(m);
  order.push_back(stamp);
}

void PackedTuples::Erase(size_t i) {
  values.erase(values.begin() + ptrdiff_t(i * width), values.begin() + ptrdiff_t((i + 1) * width));
  parts.erase(parts.begin() + ptrdiff_t(i * partials),
              parts.begin() + ptrdiff_t((i + 1) * partials));
  mult.erase(mult.begin() + ptrdiff_t(i));
  order.erase(order.begin() + ptrdiff_t(i));
}

int64_t PackedTuples::Find(const Value* v) const {
  for (size_t i = 0; i < size(); ++i) {
    if (std::equal(v, v + width, Values(i))) return int64_t(i);
  }
  return -1;
}

size_t BaggageInstance::Tuples() const {
  size_t n = 0;
  for (const PackedTuples& slot : slots) n += slot.size();
  return n;
}

void Baggage::Clear() {
  frozen_.clear();
  ClearActive();
}

void Baggage::ClearActive() {
  active_.id = 0;
  active_.name.clear();
  for (PackedTuples& slot : active_.slots) {
    slot.values.clear();
    slot.parts.clear();
    slot.mult.clear();
    slot.order.clear();
  }
}

size_t Baggage::tuples() const {
  size_t n = active_.Tuples();
  for (const auto& instance : frozen_) n += instance->Tuples();
  return n;
}

size_t Baggage::SlotSize(uint32_t slot) const {
  size_t n = 0;
  ForEachInstance(slot, [&](const PackedTuples& t) { n += t.size(); });
  return n;
}

PackedTuples& Baggage::Active(uint32_t slot, uint32_t width, uint32_t partials) {
  ++packs_;
  if (active_.id == 0) active_.id = NewInstanceId();
  if (active_.slots.size() <= slot) active_.slots.resize(slot + 1);
  PackedTuples& t = active_.slots[slot];
  t.width = width;
  t.partials = partials;
  return t;
}

void Baggage::SplitInto(Baggage& branch) {
  if (active_.Tuples() > 0) {
    // Moved, not copied: the active instance starts over empty anyway.
    frozen_.push_back(std::make_shared<const BaggageInstance>(std::move(active_)));
    ClearActive();
  }
  branch.Clear();
  branch.frozen_ = frozen_;
}

void Baggage::NameActive(uint64_t id, std::string name) {
  active_.id = id;
  active_.name = std::move(name);
}

void Baggage::Restore(FrozenInstances frozen, BaggageInstance active) {
  frozen_ = std::move(frozen);
  active_ = std::move(active);
}

void Baggage::Join(const Baggage& other) {
  auto known = [&](const BaggageInstance& instance) {
    return std::any_of(frozen_.begin(), frozen_.end(), [&](const auto& i) {
      return i->id == instance.id && i->name == instance.name;
    });
  };
  for (const auto& instance : other.frozen_) {
    if (!known(*instance)) frozen_.push_back(instance);
  }
  if (other.active_.Tuples() > 0 && !known(other.active_)) {
    // The branch's active instance ends with the branch: it is frozen as it joins. This
    // baggage's own active instance stays active (its tuples were packed on this side).
    frozen_.push_back(std::make_shared<const BaggageInstance>(other.active_));
  }
}

void Baggage::Join(Baggage&& other) {
  auto known = [&](const BaggageInstance& instance) {
    return std::any_of(frozen_.begin(), frozen_.end(), [&](const auto& i) {
      return i->id == instance.id && i->name == instance.name;
    });
  };
  for (auto& instance : other.frozen_) {
    if (!known(*instance)) frozen_.push_back(std::move(instance));
  }
  if (other.active_.Tuples() > 0 && !known(other.active_)) {
    frozen_.push_back(std::make_shared<const BaggageInstance>(std::move(other.active_)));
  }
  other.frozen_.clear();
  other.ClearActive();
}

}  // namespace weft::query
