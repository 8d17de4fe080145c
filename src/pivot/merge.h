// Merging the partial results of every agent (Pivot Tracing §2.2: the front end combines
// what each process's agent reports) into a query result per interval.
//
// Partials merge exactly (partials.h), so the merged result of an interval equals what
// one evaluator would give over every tuple the agents emitted in it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pivot/protocol.h"
#include "query/result.h"

namespace weft::pivot {

class ResultMerger {
 public:
  // Adds one agent's partials for one interval (all for the same query).
  void Add(const PartialResults& partials);

  // The intervals seen, by start (wall clock ns).
  std::vector<int64_t> Intervals() const;
  // One interval's rows (interval_start set to it), or with `interval` < 0 every
  // interval's tuples together (no interval_start), as the offline evaluator without
  // --interval gives them.
  query::QueryResult Result(int64_t interval = -1) const;
  // Every interval's rows, by interval.
  query::QueryResult Series() const;
  // Forgets an interval once shown.
  void Erase(int64_t interval);

  uint64_t drops() const { return drops_; }
  uint64_t events() const { return events_; }
  // Agents ("pid@host") that reported.
  const std::set<std::string>& agents() const { return agents_; }
  bool has_columns() const { return !columns_.empty(); }

 private:
  void AppendRows(const PartialGroups& groups, int64_t interval, query::QueryResult& out) const;

  std::vector<ResultColumn> columns_;
  bool aggregated_ = false;
  std::map<int64_t, PartialGroups> intervals_;
  uint64_t drops_ = 0, events_ = 0;
  std::set<std::string> agents_;
};

}  // namespace weft::pivot
