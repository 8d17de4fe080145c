// JSON as the span readers need it: a document that may be cut short or damaged is read
// as far as it goes (the values before the damage, with every open array and object
// closed where the damage is), and small typed accessors that say what is wrong with a
// field instead of throwing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "import/span.h"

namespace weft::span_json {

using Json = nlohmann::json;

struct Document {
  Json value;  // null if nothing could be read
  bool damaged = false;
  size_t error_byte = 0;  // where the damage is, when damaged
  std::string error;      // "truncated" or what the parser saw there
};

// Never throws. Nesting deeper than 256 levels is damage.
Document Parse(std::string_view text);

// A field's value as text: a string as it is, a number or a boolean written out, an array
// or object as JSON. Used for attribute values, which the trace keeps as text.
std::string AsText(const Json& value);

// A required string field of `object`; `error` says why not ("missing 'spanId'", "'spanId'
// is a number, want a string").
std::optional<std::string> String(const Json& object, std::string_view key, std::string& error);
// An integer field that may be written as a number or a decimal string (OTLP writes 64-bit
// integers as strings); must fit int64.
std::optional<int64_t> Integer(const Json& object, std::string_view key, std::string& error);
// A time `key` in units of `unit_ns` nanoseconds (1 for ns, 1000 for µs).
std::optional<TimeNs> Time(const Json& object, std::string_view key, int64_t unit_ns,
                           std::string& error);
std::string_view TypeName(const Json& value);  // "a string", "a number", ...

}  // namespace weft::span_json

namespace weft::span_json {

// Collects a reader's problems: the first bad record becomes the one-line report, the
// rest are counted.
class Problems {
 public:
  Problems(SpanRead& read, std::string_view source) : read_(read), source_(source) {}
  // `where` names the record ("span 4 (resourceSpans[0].scopeSpans[0].spans[4])").
  void BadRecord(std::string_view where, std::string_view what);
  // The document itself is damaged at `doc.error_byte` (line `line`, 0 if not by line);
  // this is the report even if a record was bad before.
  void Damaged(const Document& doc, size_t line, std::string_view in_record);
  const std::string& source() const { return source_; }

 private:
  SpanRead& read_;
  std::string source_;
};

}  // namespace weft::span_json
