// String interning: each distinct string is stored once and named by a small typed id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "core/id.h"

namespace weft {

// Maps strings to dense ids 0, 1, 2, ... in order of first appearance. Ids are stable for
// the table's life; views returned by Get() stay valid until the table is destroyed or
// cleared (strings live in a deque-like arena that never moves them).
template <typename IdType>
class InternTable {
 public:
  InternTable() = default;
  InternTable(const InternTable& other) { *this = other; }
  InternTable& operator=(const InternTable& other) {
    if (this != &other) {
      Clear();
      for (size_t i = 0; i < other.size(); ++i) Intern(other.Get(IdType(uint32_t(i))));
    }
    return *this;
  }
  InternTable(InternTable&&) noexcept = default;
  InternTable& operator=(InternTable&&) noexcept = default;

  IdType Intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    IdType id(static_cast<uint32_t>(strings_.size()));
    strings_.push_back(std::make_unique<std::string>(s));
    index_.emplace(std::string_view(*strings_.back()), id);
    return id;
  }
  // The id of `s` if present, else an invalid id.
  IdType Find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? IdType() : it->second;
  }
  std::string_view Get(IdType id) const { return *strings_[id.value()]; }
  bool Contains(IdType id) const { return id.valid() && id.value() < strings_.size(); }
  size_t size() const { return strings_.size(); }
  void Clear() {
    index_.clear();
    strings_.clear();
  }

 private:
  std::vector<std::unique_ptr<std::string>> strings_;
  absl::flat_hash_map<std::string_view, IdType> index_;
};

using StringTable = InternTable<StringId>;
using NodeTable = InternTable<NodeId>;

}  // namespace weft
