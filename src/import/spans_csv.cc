// Spans as CSV, the form public microservice trace datasets ship in: one span per row,
// with trace id, span id, parent id, service, operation, start and end (or duration)
// columns. The columns are named by the caller or guessed from the header; times are
// decimal numbers in one unit, given or guessed. Fields follow RFC 4180 (double quotes
// around a field with commas, "" for a quote inside one); a row is one line.
#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <map>

#include "core/text.h"
#include "import/span.h"

namespace weft {
namespace {

// Lowercase letters and digits only: "Trace ID", "trace_id" and "traceId" are one name.
std::string Normalize(std::string_view name) {
  std::string out;
  for (char c : name) {
    c = AsciiLower(c);
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) out += c;
  }
  return out;
}

// Splits one line into fields; false if a quote is left open.
bool SplitCsv(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return !quoted;
}

struct Guess {
  std::string_view field;
  std::vector<std::string_view> names;  // normalized
};
const Guess kGuesses[] = {
    {"trace", {"traceid", "trace", "traceidhex"}},
    {"span", {"spanid", "span", "id", "spanidhex"}},
    {"parent", {"parentid", "parentspanid", "parent", "parentspan", "parentidhex"}},
    {"service", {"service", "servicename", "svc", "microservice", "process", "component"}},
    {"operation",
     {"operation", "operationname", "name", "spanname", "endpoint", "method", "interface"}},
    {"start",
     {"start", "starttime", "startts", "starttimeunixnano", "startunixnano", "startns", "startus",
      "startms", "timestamp", "ts", "begin"}},
    {"end",
     {"end", "endtime", "endts", "endtimeunixnano", "endunixnano", "endns", "endus", "endms",
      "finish"}},
    {"duration",
     {"duration", "dur", "durationns", "durationus", "durationms", "latency", "rt", "elapsed"}},
};

int64_t UnitFromName(std::string_view normalized) {
  if (normalized.find("nano") != std::string_view::npos || normalized.ends_with("ns")) return 1;
  if (normalized.find("micro") != std::string_view::npos || normalized.ends_with("us")) return 1000;
  if (normalized.find("milli") != std::string_view::npos || normalized.ends_with("ms")) {
    return 1000000;
  }
  return 0;
}

// A decimal number of `unit_ns` units, as nanoseconds.
std::optional<TimeNs> ParseTime(std::string_view s, int64_t unit_ns) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return std::nullopt;
  int64_t w = 0;
  if (!whole.empty()) {
    auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
    if (ec != std::errc() || end != whole.data() + whole.size()) return std::nullopt;
  }
  if (w > std::numeric_limits<int64_t>::max() / unit_ns) return std::nullopt;
  int64_t ns = w * unit_ns;
  int64_t scale = unit_ns;
  for (char c : fraction) {
    if (c < '0' || c > '9') return std::nullopt;
    scale /= 10;  // digits finer than a nanosecond are dropped
    if (ns > std::numeric_limits<int64_t>::max() - 9 * scale) return std::nullopt;
    ns += (c - '0') * scale;
  }
  return negative ? -ns : ns;
}

int64_t UnitNs(std::string_view unit) {
  if (unit == "s") return 1000000000;
  if (unit == "ms") return 1000000;
  if (unit == "us") return 1000;
  if (unit == "ns") return 1;
  return 0;
}

}  // namespace

Status ParseCsvColumns(std::string_view spec, CsvColumns& columns) {
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? "" : spec.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("--columns: '{}' is not FIELD=COLUMN", item);
    }
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    std::string* slot = key == "trace"       ? &columns.trace
                        : key == "span"      ? &columns.span
                        : key == "parent"    ? &columns.parent
                        : key == "service"   ? &columns.service
                        : key == "operation" ? &columns.operation
                        : key == "start"     ? &columns.start
                        : key == "end"       ? &columns.end
                        : key == "duration"  ? &columns.duration
                        : key == "unit"      ? &columns.time_unit
                                             : nullptr;
    if (slot == nullptr) {
      return Status::InvalidArgument(
          "--columns: unknown field '{}' (want trace, span, parent, service, operation, start, "
          "end, duration or unit)",
          key);
    }
    if (key == "unit" && value != "auto" && UnitNs(value) == 0) {
      return Status::InvalidArgument("--columns: unit '{}' (want s, ms, us, ns or auto)", value);
    }
    *slot = std::string(value);
  }
  return Status::Ok();
}

SpanRead ReadCsvSpans(std::string_view text, std::string_view source, const CsvColumns& given) {
  SpanRead read;
  auto bad = [&](size_t line, std::string what) {
    if (read.problem.ok()) read.problem = Status::InvalidArgument("{}:{}: {}", source, line, what);
    ++read.bad_records;
  };
  std::vector<std::string> fields;
  size_t pos = 0, line = 0;
  auto next_line = [&](std::string_view& out) {
    if (pos >= text.size()) return false;
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    out = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    return true;
  };
  std::string_view header;
  while (next_line(header) && header.find_first_not_of(" \t\r") == std::string_view::npos) {
  }
  if (header.empty() || !SplitCsv(header, fields)) {
    read.problem = Status::InvalidArgument("{}:{}: no CSV header line", source, line);
    return read;
  }
  std::vector<std::string> names;
  for (const std::string& f : fields) names.push_back(Normalize(f));
  // Column index per field, -1 when absent.
  std::map<std::string_view, int> index;
  const std::string* chosen[] = {&given.trace,     &given.span,  &given.parent, &given.service,
                                 &given.operation, &given.start, &given.end,    &given.duration};
  for (size_t g = 0; g < std::size(kGuesses); ++g) {
    int found = -1;
    if (!chosen[g]->empty()) {
      std::string want = Normalize(*chosen[g]);
      for (size_t c = 0; c < names.size(); ++c) {
        if (names[c] == want) found = int(c);
      }
      if (found < 0) {
        read.problem =
            Status::InvalidArgument("{}:{}: no column '{}' for the {} (the header has: {})", source,
                                    line, *chosen[g], kGuesses[g].field, header);
        return read;
      }
    } else {
      for (std::string_view candidate : kGuesses[g].names) {
        for (size_t c = 0; c < names.size() && found < 0; ++c) {
          if (names[c] == candidate) found = int(c);
        }
        if (found >= 0) break;
      }
    }
    index[kGuesses[g].field] = found;
  }
  for (std::string_view need : {"trace", "span", "parent", "service", "start"}) {
    if (index[need] < 0) {
      read.problem = Status::InvalidArgument(
          "{}:{}: no {} column in the header (name it with --columns {}=NAME)", source, line, need,
          need);
      return read;
    }
  }
  if (index["end"] < 0 && index["duration"] < 0) {
    read.problem = Status::InvalidArgument(
        "{}:{}: no end or duration column in the header (name one with --columns end=NAME)", source,
        line);
    return read;
  }
  int64_t unit = UnitNs(given.time_unit);
  bool guess_unit = unit == 0;
  if (guess_unit) unit = UnitFromName(names[size_t(index["start"])]);
  std::string_view row;
  size_t max_column = 0;
  for (auto& [k, v] : index) max_column = std::max(max_column, size_t(std::max(v, 0)));
  while (next_line(row)) {
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (!SplitCsv(row, fields)) {
      bad(line, "a quoted field is not closed on its line");
      continue;
    }
    if (fields.size() <= max_column) {
      bad(line, fmt::format("{} fields, the header has {}", fields.size(), names.size()));
      continue;
    }
    auto field = [&](std::string_view name) -> std::string& { return fields[size_t(index[name])]; };
    if (unit == 0) {
      // The first start time since the epoch says its unit: 1.7e9 s, 1.7e12 ms, ...
      std::optional<TimeNs> raw = ParseTime(field("start"), 1);
      if (!raw) {
        bad(line, fmt::format("start '{}' is not a number", field("start").substr(0, 40)));
        continue;
      }
      int64_t magnitude = *raw < 0 ? -*raw : *raw;
      unit = magnitude >= 100000000000000000 ? 1
             : magnitude >= 100000000000000  ? 1000
             : magnitude >= 100000000000     ? 1000000
                                             : 1000000000;
    }
    Span span;
    span.trace_id = field("trace");
    span.span_id = field("span");
    span.parent_id = field("parent");
    span.service = field("service");
    if (index["operation"] >= 0) span.name = field("operation");
    std::string lower;
    for (char c : span.parent_id) lower += AsciiLower(c);
    if (lower == "-" || lower == "null" || lower == "none" || lower == "nan" || lower == "-1") {
      span.parent_id.clear();
    }
    if (span.trace_id.empty() || span.span_id.empty()) {
      bad(line, span.trace_id.empty() ? "empty trace id" : "empty span id");
      continue;
    }
    std::optional<TimeNs> start = ParseTime(field("start"), unit);
    if (!start) {
      bad(line, fmt::format("start '{}' is not a number", field("start").substr(0, 40)));
      continue;
    }
    std::optional<TimeNs> end;
    if (index["end"] >= 0) {
      end = ParseTime(field("end"), unit);
      if (!end) {
        bad(line, fmt::format("end '{}' is not a number", field("end").substr(0, 40)));
        continue;
      }
    } else {
      std::optional<TimeNs> d = ParseTime(field("duration"), unit);
      if (!d || *d < 0 || *start > std::numeric_limits<TimeNs>::max() - *d) {
        bad(line, fmt::format("duration '{}' is not a non-negative number",
                              field("duration").substr(0, 40)));
        continue;
      }
      end = *start + *d;
    }
    if (*end < *start) {
      bad(line, "the span ends before it starts");
      continue;
    }
    span.start = *start;
    span.end = *end;
    read.spans.push_back(std::move(span));
  }
  return read;
}

}  // namespace weft
