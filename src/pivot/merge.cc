#include "pivot/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace weft::pivot {

void ResultMerger::Add(const PartialResults& p) {
  if (columns_.empty()) {
    columns_ = p.columns;
    aggregated_ = p.aggregated;
  }
  agents_.insert(fmt::format("{}@{}", p.pid, p.host));
  drops_ += p.drops;
  events_ += p.events;
  auto it = intervals_.find(p.interval_start_ns);
  if (it == intervals_.end()) {
    it = intervals_.emplace(p.interval_start_ns, PartialGroups(p.groups.aggregates())).first;
  }
  if (it->second.aggregates() == p.groups.aggregates()) it->second.Merge(p.groups);
}

std::vector<int64_t> ResultMerger::Intervals() const {
  std::vector<int64_t> out;
  for (const auto& [start, groups] : intervals_) out.push_back(start);
  return out;
}

void ResultMerger::Erase(int64_t interval) { intervals_.erase(interval); }

void ResultMerger::AppendRows(const PartialGroups& groups, int64_t interval,
                              query::QueryResult& out) const {
  for (size_t g = 0; g < groups.size(); ++g) {
    query::ResultRow row;
    row.weight = groups.weight(g);
    if (interval >= 0) row.interval_start = interval;
    std::span<const query::Value> key = groups.key(g);
    std::span<const query::PartialAggregate> parts = groups.partials(g);
    for (const ResultColumn& c : columns_) {
      if (c.aggregate < 0) {
        row.values.push_back(size_t(c.key) < key.size() ? key[size_t(c.key)]
                                                         : query::Value::Null());
        continue;
      }
      if (size_t(c.aggregate) >= parts.size()) {
        row.values.push_back(query::Value::Null());
        continue;
      }
      const query::PartialAggregate& p = parts[size_t(c.aggregate)];
      switch (c.op) {
        case query::AggregateOp::kCount:
          row.values.push_back(query::Value::Int(std::llround(row.weight)));
          break;
        case query::AggregateOp::kSum:
          row.values.push_back(p.weight > 0 ? query::Value::Float(p.sum) : query::Value::Null());
          break;
        case query::AggregateOp::kAverage:
          row.values.push_back(p.weight > 0 ? query::Value::Float(p.sum / p.weight)
                                            : query::Value::Null());
          break;
        case query::AggregateOp::kMin:
          row.values.push_back(p.min);
          break;
        case query::AggregateOp::kMax:
          row.values.push_back(p.max);
          break;
      }
    }
    out.rows.push_back(std::move(row));
  }
}

namespace {

query::QueryResult Sorted(query::QueryResult r) {
  std::sort(r.rows.begin(), r.rows.end(), [](const query::ResultRow& a, const query::ResultRow& b) {
    if (a.interval_start != b.interval_start) return a.interval_start < b.interval_start;
    for (size_t i = 0; i < a.values.size(); ++i) {
      int c = query::CompareValues(a.values[i], b.values[i]);
      if (c != 0) return c < 0;
    }
    return false;
  });
  return r;
}

}  // namespace

query::QueryResult ResultMerger::Result(int64_t interval) const {
  query::QueryResult out;
  for (const ResultColumn& c : columns_) out.columns.push_back(c.name);
  out.aggregated = aggregated_;
  if (interval >= 0) {
    auto it = intervals_.find(interval);
    if (it != intervals_.end()) AppendRows(it->second, interval, out);
    return Sorted(std::move(out));
  }
  if (intervals_.empty()) return out;
  PartialGroups all(intervals_.begin()->second.aggregates());
  for (const auto& [start, groups] : intervals_) all.Merge(groups);
  AppendRows(all, -1, out);
  return Sorted(std::move(out));
}

query::QueryResult ResultMerger::Series() const {
  query::QueryResult out;
  for (const ResultColumn& c : columns_) out.columns.push_back(c.name);
  out.aggregated = aggregated_;
  for (const auto& [start, groups] : intervals_) AppendRows(groups, start, out);
  return Sorted(std::move(out));
}

}  // namespace weft::pivot
