#include "pivot/partials.h"

#include "query/runner.h"

namespace weft::pivot {

size_t PartialGroups::KeyHash::operator()(std::span<const query::Value> key) const {
  size_t h = key.size();
  for (const query::Value& v : key) h = h * 1000003u ^ query::HashValue(v);
  return h;
}

PartialGroups::PartialGroups(size_t aggregates, size_t max_groups)
    : aggregates_(aggregates), max_groups_(max_groups) {}

query::Value PartialGroups::Own(const query::Value& v) {
  if (v.type != query::ValueType::kString) return v;
  return query::Value::String(strings_.emplace_back(v.s));
}

bool PartialGroups::Add(std::span<const query::Value> key, double weight,
                        std::span<const query::PartialAggregate> partials) {
  auto it = index_.find(key);
  size_t g;
  if (it == index_.end()) {
    if (weights_.size() >= max_groups_) return false;
    g = weights_.size();
    std::vector<query::Value> owned;
    owned.reserve(key.size());
    for (const query::Value& v : key) owned.push_back(Own(v));
    index_.emplace(owned, uint32_t(g));
    keys_.push_back(std::move(owned));
    weights_.push_back(0);
    parts_.resize(parts_.size() + aggregates_);
  } else {
    g = it->second;
  }
  weights_[g] += weight;
  for (size_t a = 0; a < aggregates_ && a < partials.size(); ++a) {
    query::PartialAggregate& into = parts_[g * aggregates_ + a];
    query::Value min = into.min, max = into.max;
    query::CombinePartial(into, partials[a], 1);
    // A new min or max points into `partials`: keep a copy.
    if (!(into.min.type == min.type && into.min.s.data() == min.s.data())) {
      into.min = Own(into.min);
    }
    if (!(into.max.type == max.type && into.max.s.data() == max.s.data())) {
      into.max = Own(into.max);
    }
  }
  return true;
}

uint64_t PartialGroups::Merge(const PartialGroups& other) {
  uint64_t refused = 0;
  for (size_t g = 0; g < other.size(); ++g) {
    if (!Add(other.key(g), other.weight(g), other.partials(g))) ++refused;
  }
  return refused;
}

}  // namespace weft::pivot
