// A query's result as the user reads it: an aligned table, CSV or JSON, and a line chart of
// a time series (Pivot Tracing's results are mostly plots, §6).
//
// Every format shows the same rows. A query without aggregates yields distinct rows, each
// with how many tuples made it (ResultRow::weight): when every weight is an integer, a row
// of weight w is written w times, as the tuples were emitted; otherwise, and always for a
// weighted result (where a whole weight is a coincidence), a last column `weight` carries
// it, once per row. With an interval, a first column `interval` holds the
// interval's start in seconds since the origin.
//
// Weighted results (EvaluationCounters::weighted): tuples from statistically inferred path
// instances count by the instance's probability, so counts and sums may be fractional.
// Every format says so: a first line "# weighted by instance probability: ..." in the table
// and CSV, a field `weighted` in JSON.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "query/result.h"

namespace weft::query {

enum class OutputFormat : uint8_t { kTable, kCsv, kJson };

// "table", "csv" or "json".
Result<OutputFormat> ParseOutputFormat(std::string_view name);

struct OutputOptions {
  TimeNs interval = 0;  // > 0: the query ran with this interval; adds the `interval` column
  TimeNs origin = 0;    // where interval 0 starts; `interval` is seconds since it
  // The trace the result came from (PathSet::trace_fingerprint), so that derived data
  // stays tied to its input; JSON writes it as "trace_fingerprint" when set.
  uint64_t trace_fingerprint = 0;
};

// The result in `format`; the text ends with a newline.
std::string FormatResult(const QueryResult& result, OutputFormat format,
                         const OutputOptions& options);

// Columns aligned, two spaces apart; a column whose values are all numbers (or null, shown
// as "-") is right-aligned, any other left-aligned. Control characters in strings are
// escaped ("\n") so that a row stays on one line.
std::string FormatTable(const QueryResult& result, const OutputOptions& options);
// RFC 4180: a field holding a comma, a double quote, CR or LF is quoted, its quotes
// doubled. Null is an empty field. Lines end with LF.
std::string FormatCsv(const QueryResult& result, const OutputOptions& options);
// {"columns": [...], "rows": [[...], ...], "weighted": bool, "counters": {...}} with typed
// values (numbers, strings, null); with an interval also "interval_ns" and "origin_ns", and
// "trace_fingerprint" (16 hex digits, as in paths files) when known.
std::string FormatJson(const QueryResult& result, const OutputOptions& options);

struct PlotOptions {
  TimeNs interval = 0;     // the query's interval; must be > 0
  TimeNs origin = 0;       // x is seconds since it
  std::string title;       // drawn above the chart; empty: "<y column> per <interval>"
  size_t max_groups = 12;  // lines at most; beyond, all but the largest are summed as "other"
};

// A self-contained SVG line chart of a time series: one line per group, where the group is
// every column but the last and y is the last column, which must be numeric; x is the
// interval's start. Groups are ranked by the sum of their y; past `max_groups`, the
// smallest are summed into one line "other (N groups)". A group missing from an interval
// has a gap there. An error if the result has no interval, the last column is not numeric,
// or a group has two rows in one interval (a query without aggregates: aggregate the last
// column).
Result<std::string> PlotResultSvg(const QueryResult& result, const PlotOptions& options);

// A self-contained SVG of stacked horizontal bars, for a breakdown such as Pivot Tracing's
// Figure 9b (where the time of slow requests goes): one bar per row of the last interval,
// labelled by its first column; each other numeric column is a segment, in column order,
// except a column named COUNT, which goes into the label ("true (n=312)"). Negative or
// null values draw no segment. An error if no row has a numeric column to draw.
Result<std::string> PlotBarsSvg(const QueryResult& result, const PlotOptions& options);

}  // namespace weft::query
