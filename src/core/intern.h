// String interning: each distinct string is stored once and named by a small typed id.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/id.h"

namespace weft {

// Maps strings to dense ids 0, 1, 2, ... in order of first appearance. Ids are stable for
// the table's life; views returned by Get() stay valid until the table is destroyed or
// cleared: strings are copied into fixed blocks that never move, so a million distinct
// strings cost a few allocations, not a million.
template <typename IdType>
class InternTable {
 public:
  InternTable() = default;
  InternTable(const InternTable& other) { *this = other; }
  InternTable& operator=(const InternTable& other) {
    if (this != &other) {
      Clear();
      Reserve(other.size());
      for (std::string_view s : other.views_) Intern(s);
    }
    return *this;
  }
  InternTable(InternTable&&) noexcept = default;
  InternTable& operator=(InternTable&&) noexcept = default;

  IdType Intern(std::string_view s) {
    auto it = index_.lazy_emplace(s, [&](const auto& construct) {
      std::string_view stored = Store(s);
      IdType id(static_cast<uint32_t>(views_.size()));
      views_.push_back(stored);
      construct(stored, id);
    });
    return it->second;
  }
  // The id of `s` if present, else an invalid id.
  IdType Find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? IdType() : it->second;
  }
  std::string_view Get(IdType id) const { return views_[id.value()]; }
  bool Contains(IdType id) const { return id.valid() && id.value() < views_.size(); }
  size_t size() const { return views_.size(); }
  void Reserve(size_t n) {
    views_.reserve(n);
    index_.reserve(n);
  }
  void Clear() {
    index_.clear();
    views_.clear();
    blocks_.clear();
    block_used_ = block_size_ = 0;
  }

 private:
  static constexpr size_t kBlockSize = 64 * 1024;

  std::string_view Store(std::string_view s) {
    if (s.empty()) return {};
    if (block_size_ - block_used_ < s.size()) {
      block_size_ = std::max(kBlockSize, s.size());
      blocks_.push_back(std::make_unique<char[]>(block_size_));
      block_used_ = 0;
    }
    char* p = blocks_.back().get() + block_used_;
    std::memcpy(p, s.data(), s.size());
    block_used_ += s.size();
    return {p, s.size()};
  }

  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  std::vector<std::string_view> views_;
  absl::flat_hash_map<std::string_view, IdType> index_;
};

using StringTable = InternTable<StringId>;
using NodeTable = InternTable<NodeId>;

}  // namespace weft
