// Tables, CSV and JSON of query results; see output.h (plot.cc draws them).
#include "query/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/text.h"

namespace weft::query {
namespace {

constexpr std::string_view kWeightedNote =
    "# weighted by instance probability: tuples from statistically inferred paths count by "
    "their instance's probability, so counts and sums may be fractional\n";

// A column as the formats show it. `decimals` >= 0 fixes the digits after the point (the
// interval column, whose values are multiples of the interval length).
struct Column {
  std::string name;
  int decimals = -1;
};

// The result's rows as they are written: the interval column first, rows repeated by
// their weight or a weight column last (output.h).
struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
};

// Digits after the point that multiples of `interval` ns need in seconds.
int IntervalDecimals(TimeNs interval) {
  int decimals = 0;
  for (TimeNs unit = kSecond; decimals < 9 && interval % unit != 0; unit /= 10) ++decimals;
  return decimals;
}

Value IntervalValue(const ResultRow& row, const OutputOptions& options) {
  if (row.interval_start == kNoTime) return Value::Null();
  TimeNs since = row.interval_start - options.origin;
  if (since % kSecond == 0) return Value::Int(since / kSecond);
  return Value::Float(double(since) / double(kSecond));
}

bool IsIntegral(double w) { return std::isfinite(w) && w == std::trunc(w) && w >= 0; }

Table BuildTable(const QueryResult& result, const OutputOptions& options) {
  Table table;
  const bool with_interval = options.interval > 0;
  if (with_interval) table.columns.push_back({"interval", IntervalDecimals(options.interval)});
  for (const std::string& name : result.columns) table.columns.push_back({name});
  // A query without aggregates: rows by their tuple count. Weighted counts are fractional
  // by nature (an integral one is a coincidence), so they always get the column.
  bool weight_column = false;
  if (!result.aggregated) {
    weight_column = result.counters.weighted ||
                    std::any_of(result.rows.begin(), result.rows.end(),
                                [](const ResultRow& r) { return !IsIntegral(r.weight); });
  }
  if (weight_column) table.columns.push_back({"weight"});
  for (const ResultRow& row : result.rows) {
    std::vector<Value> values;
    values.reserve(table.columns.size());
    if (with_interval) values.push_back(IntervalValue(row, options));
    values.insert(values.end(), row.values.begin(), row.values.end());
    values.resize(table.columns.size() - (weight_column ? 1 : 0));  // short rows: nulls
    if (weight_column) values.push_back(Value::Float(row.weight));
    size_t copies = result.aggregated || weight_column ? 1 : size_t(row.weight);
    for (size_t k = 0; k < copies; ++k) table.rows.push_back(values);
  }
  return table;
}

// Floats for reading: six significant digits, without an exponent between 1e-4 and 1e15
// (latencies in ns read as 10005200, not 1.00052e+07).
std::string ReadableFloat(double f) {
  double magnitude = std::fabs(f);
  if (!std::isfinite(f) || magnitude >= 1e15 || (magnitude < 1e-4 && magnitude != 0))
    return FormatValue(Value::Float(f));
  int digits = magnitude < 1 ? 0 : int(std::floor(std::log10(magnitude))) + 1;
  int decimals = magnitude < 1 ? 5 - int(std::floor(std::log10(std::max(magnitude, 1e-300))))
                               : std::max(0, 6 - digits);
  if (magnitude == 0) decimals = 0;
  std::string text = fmt::format("{:.{}f}", f, decimals);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

// A value as a table or CSV cell. CSV is read by programs: its floats round-trip exactly.
std::string CellText(const Value& v, const Column& column, bool exact) {
  if (column.decimals >= 0 && v.is_number())
    return fmt::format("{:.{}f}", v.AsDouble(), column.decimals);
  if (v.type == ValueType::kFloat) return exact ? fmt::format("{}", v.f) : ReadableFloat(v.f);
  return FormatValue(v);
}

// Control characters as C escapes, so that a table row stays on one line.
std::string EscapeControls(std::string text) {
  if (std::none_of(text.begin(), text.end(), [](char c) { return (unsigned char)c < 0x20; }))
    return text;
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if ((unsigned char)c < 0x20) {
      out += fmt::format("\\x{:02x}", (unsigned char)c);
    } else {
      out += c;
    }
  }
  return out;
}

std::string CsvField(std::string text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

nlohmann::ordered_json JsonValue(const Value& v) {
  switch (v.type) {
    case ValueType::kNull:
      return nullptr;
    case ValueType::kInt:
      return v.i;
    case ValueType::kFloat:
      if (!std::isfinite(v.f)) return nullptr;
      return v.f;
    case ValueType::kString:
      return std::string(v.s);
  }
  return nullptr;
}

std::string JsonDump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return Status::InvalidArgument("unknown format '{}': expected table, csv or json", name);
}

std::string FormatResult(const QueryResult& result, OutputFormat format,
                         const OutputOptions& options) {
  switch (format) {
    case OutputFormat::kTable:
      return FormatTable(result, options);
    case OutputFormat::kCsv:
      return FormatCsv(result, options);
    case OutputFormat::kJson:
      return FormatJson(result, options);
  }
  return "";
}

std::string FormatTable(const QueryResult& result, const OutputOptions& options) {
  Table table = BuildTable(result, options);
  const size_t n = table.columns.size();
  std::vector<std::vector<std::string>> cells;
  cells.reserve(table.rows.size());
  std::vector<size_t> width(n);
  std::vector<bool> has_number(n, false), has_string(n, false);
  for (size_t c = 0; c < n; ++c) width[c] = CodePoints(table.columns[c].name);
  for (const std::vector<Value>& row : table.rows) {
    std::vector<std::string>& line = cells.emplace_back();
    for (size_t c = 0; c < n; ++c) {
      line.push_back(EscapeControls(CellText(row[c], table.columns[c], false)));
      width[c] = std::max(width[c], CodePoints(line.back()));
      has_number[c] = has_number[c] || row[c].is_number();
      has_string[c] = has_string[c] || row[c].type == ValueType::kString;
    }
  }
  auto write_line = [&](std::string& out, const std::vector<std::string>& line) {
    std::string text;
    for (size_t c = 0; c < n; ++c) {
      if (c > 0) text += "  ";
      size_t pad = width[c] - CodePoints(line[c]);
      bool right = has_number[c] && !has_string[c];
      if (right) text.append(pad, ' ');
      text += line[c];
      if (!right) text.append(pad, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + '\n';
  };
  std::string out;
  if (result.counters.weighted) out += kWeightedNote;
  std::vector<std::string> header;
  for (const Column& c : table.columns) header.push_back(EscapeControls(c.name));
  write_line(out, header);
  for (const std::vector<std::string>& line : cells) write_line(out, line);
  return out;
}

std::string FormatCsv(const QueryResult& result, const OutputOptions& options) {
  Table table = BuildTable(result, options);
  std::string out;
  if (result.counters.weighted) out += kWeightedNote;
  for (size_t c = 0; c < table.columns.size(); ++c)
    out += (c > 0 ? "," : "") + CsvField(table.columns[c].name);
  out += '\n';
  for (const std::vector<Value>& row : table.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += ',';
      if (!row[c].is_null()) out += CsvField(CellText(row[c], table.columns[c], true));
    }
    out += '\n';
  }
  return out;
}

std::string FormatJson(const QueryResult& result, const OutputOptions& options) {
  Table table = BuildTable(result, options);
  nlohmann::ordered_json columns = nlohmann::ordered_json::array();
  for (const Column& c : table.columns) columns.push_back(c.name);
  const EvaluationCounters& k = result.counters;
  nlohmann::ordered_json counters = {{"requests", k.requests},
                                     {"events", k.events},
                                     {"tuples_observed", k.tuples_observed},
                                     {"tuples_packed", k.tuples_packed},
                                     {"tuples_emitted", k.tuples_emitted},
                                     {"baggage_tuples_max", k.baggage_tuples_max},
                                     {"baggage_tuples_mean", k.baggage_tuples_mean}};
  // One row per line: the object stays readable and greppable at any size.
  std::string out = "{\n";
  out += fmt::format("  \"columns\": {},\n", JsonDump(columns));
  out += fmt::format("  \"aggregated\": {},\n", result.aggregated);
  out += fmt::format("  \"weighted\": {},\n", k.weighted);
  if (options.interval > 0) {
    out += fmt::format("  \"interval_ns\": {},\n", options.interval);
    out += fmt::format("  \"origin_ns\": {},\n", options.origin);
  }
  if (options.trace_fingerprint != 0)
    out += fmt::format("  \"trace_fingerprint\": \"{:016x}\",\n", options.trace_fingerprint);
  out += "  \"rows\": [";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (const Value& v : table.rows[r]) row.push_back(JsonValue(v));
    out += fmt::format("{}\n    {}", r > 0 ? "," : "", JsonDump(row));
  }
  out += table.rows.empty() ? "],\n" : "\n  ],\n";
  out += fmt::format("  \"counters\": {}\n}}\n", JsonDump(counters));
  return out;
}

}  // namespace weft::query
