// A query's answer: named columns and rows, optionally one set of rows per time interval,
// and what it cost to compute (the figures `weft query --explain` prints).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"
#include "query/value.h"

namespace weft::query {

struct ResultRow {
  TimeNs interval_start = kNoTime;  // the interval's start when the query ran with one
  std::vector<Value> values;        // one per column
  // How many tuples made this row, each counted with its request's weight: for a query
  // without aggregates, a tuple produced twice is one row of weight 2.
  double weight = 0;
};

// What evaluation cost, counted over all requests.
struct EvaluationCounters {
  uint64_t requests = 0;            // executions run
  uint64_t events = 0;              // tracepoint firings that ran advice
  uint64_t tuples_observed = 0;     // OBSERVE
  uint64_t tuples_packed = 0;       // tuples PACK put in baggage (after merging)
  uint64_t tuples_emitted = 0;      // EMIT
  uint64_t baggage_tuples_max = 0;  // the most tuples one request's baggage held at once
  double baggage_tuples_mean = 0;   // per request, the most it held, averaged
  bool weighted = false;            // some request had a weight below 1 (statistical inference)
};

struct QueryResult {
  std::vector<std::string> columns;
  bool aggregated = false;  // the query has aggregates or GroupBy: one row per group
  // Distinct rows sorted by interval, then by value, column by column.
  std::vector<ResultRow> rows;
  EvaluationCounters counters;
};

// The same columns, rows and weights, values NearlyEqual: the optimized and unoptimized
// plans of one query must give the same answer.
bool SameAnswer(const QueryResult& a, const QueryResult& b);

}  // namespace weft::query
