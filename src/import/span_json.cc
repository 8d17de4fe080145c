#include "import/span_json.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <vector>

namespace weft::span_json {
namespace {

constexpr size_t kMaxDepth = 256;

// A SAX handler that builds the document as it goes, so that when the parser stops at
// damage everything before it is already in place.
class PartialBuilder {
 public:
  Json root;
  std::string error;
  size_t error_byte = 0;
  bool failed = false;
  bool reached_end = false;  // the parser stopped at the end of the input: a cut
  size_t input_size = 0;

  bool null() { return Put(nullptr) != nullptr; }
  bool boolean(bool b) { return Put(b) != nullptr; }
  bool number_integer(Json::number_integer_t v) { return Put(v) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v) != nullptr; }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return Put(v) != nullptr; }
  bool string(Json::string_t& s) { return Put(std::move(s)) != nullptr; }
  bool binary(Json::binary_t&) { return Put(nullptr) != nullptr; }
  bool start_object(size_t) { return Open(Json::object()); }
  bool start_array(size_t) { return Open(Json::array()); }
  bool key(Json::string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(size_t position, const std::string& token, const nlohmann::json::exception&) {
    failed = true;
    error_byte = position > 0 ? position - 1 : 0;
    error = fmt::format("bad JSON near '{}'", token.substr(0, 20));
    reached_end = position >= input_size;
    return false;
  }

 private:
  bool Open(Json container) {
    if (stack_.size() >= kMaxDepth) {
      failed = true;
      error = fmt::format("nested deeper than {} levels", kMaxDepth);
      return false;
    }
    Json* slot = Put(std::move(container));
    stack_.push_back(slot);
    return true;
  }
  bool Close() {
    if (!stack_.empty()) stack_.pop_back();
    return true;
  }
  template <typename V>
  Json* Put(V&& v) {
    if (stack_.empty()) {
      root = Json(std::forward<V>(v));
      return &root;
    }
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(Json(std::forward<V>(v)));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = Json(std::forward<V>(v));
    return &slot;
  }

  std::vector<Json*> stack_;
  std::string key_;
};

}  // namespace

Document Parse(std::string_view text) {
  PartialBuilder builder;
  builder.input_size = text.size();
  Document doc;
  try {
    Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                    /*strict=*/true);
  } catch (const std::exception& e) {
    // sax_parse reports through parse_error; anything else is still damage, never a crash.
    builder.failed = true;
    if (builder.error.empty()) builder.error = "bad JSON";
  }
  doc.value = std::move(builder.root);
  doc.damaged = builder.failed;
  doc.error_byte = builder.error_byte;
  doc.error = builder.error;
  // The parser reports the position one past the last byte it read; when that is the end
  // of the input, the document was cut short there.
  if (doc.damaged && builder.reached_end) {
    doc.error = "truncated";
    doc.error_byte = text.size();
  }
  return doc;
}

std::string_view TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    default:
      return "binary";
  }
}

std::string AsText(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<std::string> String(const Json& object, std::string_view key, std::string& error) {
  auto it = object.find(key);
  if (it == object.end()) {
    error = fmt::format("missing '{}'", key);
    return std::nullopt;
  }
  if (!it->is_string()) {
    error = fmt::format("'{}' is {}, want a string", key, TypeName(*it));
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::optional<int64_t> Integer(const Json& object, std::string_view key, std::string& error) {
  auto it = object.find(key);
  if (it == object.end()) {
    error = fmt::format("missing '{}'", key);
    return std::nullopt;
  }
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    if (v <= uint64_t(std::numeric_limits<int64_t>::max())) return int64_t(v);
  } else if (it->is_number_integer()) {
    return it->get<int64_t>();
  } else if (it->is_number_float()) {
    double v = it->get<double>();
    if (v == v && v >= -9.2e18 && v <= 9.2e18) return int64_t(v);
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return v;
    error = fmt::format("'{}' is '{}', not an integer", key, s.substr(0, 40));
    return std::nullopt;
  }
  error = fmt::format("'{}' is {}, want an integer", key, TypeName(*it));
  return std::nullopt;
}

std::optional<TimeNs> Time(const Json& object, std::string_view key, int64_t unit_ns,
                           std::string& error) {
  std::optional<int64_t> v = Integer(object, key, error);
  if (!v) return std::nullopt;
  // Half of int64 at most (year 2116), so that start + duration cannot overflow.
  int64_t limit = std::numeric_limits<int64_t>::max() / 2 / unit_ns;
  if (*v > limit || *v < -limit) {
    error = fmt::format("'{}' is {}, out of range", key, *v);
    return std::nullopt;
  }
  return *v * unit_ns;
}

}  // namespace weft::span_json

namespace weft::span_json {

void Problems::BadRecord(std::string_view where, std::string_view what) {
  if (read_.problem.ok())
    read_.problem = Status::InvalidArgument("{}: {}: {}", source_, where, what);
  ++read_.bad_records;
}

void Problems::Damaged(const Document& doc, size_t line, std::string_view in_record) {
  std::string place = line > 0 ? fmt::format("{}:{}", source_, line) : source_;
  std::string record = in_record.empty() ? "" : fmt::format(" in {}", in_record);
  read_.problem =
      Status::InvalidArgument("{}: byte {}: {}{}; kept the {} spans read before it", place,
                              doc.error_byte, doc.error, record, read_.spans.size());
}

}  // namespace weft::span_json
