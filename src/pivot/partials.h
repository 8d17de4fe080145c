// Partial results of one live query (Pivot Tracing §5, "Pivot Tracing Agent"): per group,
// its weight (how many tuples, COUNT) and one partial aggregate per aggregate of the query
// (sum and weight for SUM and AVERAGE, min and max for MIN and MAX). Partials merge
// exactly: a firing thread's buffer into its agent's interval, and every agent's into the
// front end's, give the same groups as aggregating all the tuples in one place.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "query/advice.h"
#include "query/value.h"

namespace weft::pivot {

class PartialGroups {
 public:
  // `aggregates`: how many partials each group has. Past `max_groups` groups, a tuple of a
  // new group is refused (Add returns false) so memory stays bounded.
  explicit PartialGroups(size_t aggregates = 0,
                         size_t max_groups = std::numeric_limits<size_t>::max());
  // Moves keep the strings where they are; a copy would point into the original.
  PartialGroups(PartialGroups&&) = default;
  PartialGroups& operator=(PartialGroups&&) = default;
  PartialGroups(const PartialGroups&) = delete;
  PartialGroups& operator=(const PartialGroups&) = delete;

  // Adds `weight` tuples of group `key` with these partials; copies the strings it keeps.
  bool Add(std::span<const query::Value> key, double weight,
           std::span<const query::PartialAggregate> partials);
  // Adds every group of `other` (which has as many aggregates); the groups refused.
  uint64_t Merge(const PartialGroups& other);

  size_t size() const { return weights_.size(); }
  size_t aggregates() const { return aggregates_; }
  std::span<const query::Value> key(size_t g) const { return keys_[g]; }
  double weight(size_t g) const { return weights_[g]; }
  std::span<const query::PartialAggregate> partials(size_t g) const {
    return {parts_.data() + g * aggregates_, aggregates_};
  }

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::span<const query::Value> key) const;
    size_t operator()(const std::vector<query::Value>& key) const {
      return (*this)(std::span<const query::Value>(key));
    }
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(std::span<const query::Value> a, std::span<const query::Value> b) const {
      return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  query::Value Own(const query::Value& v);

  size_t aggregates_;
  size_t max_groups_;
  absl::flat_hash_map<std::vector<query::Value>, uint32_t, KeyHash, KeyEq> index_;
  std::vector<std::vector<query::Value>> keys_;
  std::vector<double> weights_;
  std::vector<query::PartialAggregate> parts_;
  std::deque<std::string> strings_;  // what string values point into
};

}  // namespace weft::pivot
