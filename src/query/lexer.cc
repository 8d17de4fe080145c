#include "query/lexer.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <utility>

#include "core/text.h"

namespace weft::query {
namespace {

constexpr uint64_t kTwoTo63 = uint64_t{1} << 63;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWordStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsWordChar(char c) { return IsWordStart(c) || IsDigit(c); }

constexpr std::array<std::pair<std::string_view, Keyword>, 26> kKeywords = {{
    {"from", Keyword::kFrom},
    {"in", Keyword::kIn},
    {"join", Keyword::kJoin},
    {"on", Keyword::kOn},
    {"where", Keyword::kWhere},
    {"groupby", Keyword::kGroupBy},
    {"group", Keyword::kGroup},
    {"by", Keyword::kBy},
    {"select", Keyword::kSelect},
    {"as", Keyword::kAs},
    {"first", Keyword::kFirst},
    {"firstn", Keyword::kFirstN},
    {"mostrecent", Keyword::kMostRecent},
    {"mostrecentn", Keyword::kMostRecentN},
    {"and", Keyword::kAnd},
    {"or", Keyword::kOr},
    {"not", Keyword::kNot},
    {"true", Keyword::kTrue},
    {"false", Keyword::kFalse},
    {"count", Keyword::kCount},
    {"sum", Keyword::kSum},
    {"min", Keyword::kMin},
    {"max", Keyword::kMax},
    {"average", Keyword::kAverage},
    {"avg", Keyword::kAvg},
    {"startswith", Keyword::kStartsWith},
}};

// Nanoseconds per duration unit.
struct DurationUnit {
  std::string_view name;
  int64_t nanos;
};
constexpr std::array<DurationUnit, 6> kUnits = {{
    {"ns", 1},
    {"us", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

// Operators and punctuation, the two-character ones first.
constexpr std::array<std::pair<std::string_view, TokenKind>, 21> kPunctuation = {{
    {"->", TokenKind::kArrow}, {"==", TokenKind::kEq},     {"!=", TokenKind::kNe},
    {"<=", TokenKind::kLe},    {">=", TokenKind::kGe},     {"&&", TokenKind::kAndAnd},
    {"||", TokenKind::kOrOr},  {",", TokenKind::kComma},   {".", TokenKind::kDot},
    {"(", TokenKind::kLParen}, {")", TokenKind::kRParen},  {";", TokenKind::kSemicolon},
    {"=", TokenKind::kAssign}, {"<", TokenKind::kLt},      {">", TokenKind::kGt},
    {"+", TokenKind::kPlus},   {"-", TokenKind::kMinus},   {"*", TokenKind::kStar},
    {"/", TokenKind::kSlash},  {"%", TokenKind::kPercent}, {"!", TokenKind::kBang},
}};

static_assert(
    [] {
      for (const auto& entry : kPunctuation) {
        if (entry.first.empty()) return false;  // an entry left out of the count
      }
      return true;
    }(),
    "kPunctuation has an empty spelling");

class Lexer {
 public:
  Lexer(std::string_view text, std::vector<Token>* tokens) : text_(text), tokens_(tokens) {}

  std::optional<Diagnostic> Run() {
    while (true) {
      SkipSpaceAndComments();
      if (pos_ >= text_.size()) break;
      if (auto error = LexOne()) return error;
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.where = Here();
    tokens_->push_back(end);
    return std::nullopt;
  }

 private:
  SourceLocation Here() const { return {line_, uint32_t(pos_ - line_start_ + 1), uint32_t(pos_)}; }
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        ++pos_;
        ++line_;
        line_start_ = pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
        ++pos_;
      } else if (c == '#' || (c == '-' && Peek(1) == '-')) {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  void Push(TokenKind kind, SourceLocation where, size_t length) {
    Token t;
    t.kind = kind;
    t.where = where;
    t.text = text_.substr(where.offset, length);
    tokens_->push_back(t);
    pos_ = where.offset + length;
  }

  std::optional<Diagnostic> LexOne() {
    SourceLocation where = Here();
    char c = text_[pos_];
    if (IsWordStart(c)) {
      size_t end = pos_;
      while (end < text_.size() && IsWordChar(text_[end])) ++end;
      std::string_view word = text_.substr(pos_, end - pos_);
      Keyword keyword = KeywordOf(word);
      Push(keyword == Keyword::kNone ? TokenKind::kIdentifier : TokenKind::kKeyword, where,
           word.size());
      tokens_->back().keyword = keyword;
      return std::nullopt;
    }
    if (IsDigit(c)) return LexNumber(where);
    if (c == '"') return LexString(where);
    for (const auto& [spelling, kind] : kPunctuation) {
      if (text_.substr(pos_, spelling.size()) == spelling) {
        Push(kind, where, spelling.size());
        return std::nullopt;
      }
    }
    if (c == '&' || c == '|') {
      return Diagnostic{where,
                        fmt::format("unexpected character '{}'; did you mean '{}{}'?", c, c, c)};
    }
    if (c == '\'') {
      return Diagnostic{where, "unexpected character \"'\"; strings are written in double quotes"};
    }
    if (c >= 0x21 && c <= 0x7e) {
      return Diagnostic{where, fmt::format("unexpected character '{}'", c)};
    }
    return Diagnostic{where, fmt::format("unexpected byte 0x{:02x}", uint8_t(c))};
  }

  // digits [. digits] [e [+-] digits] [unit]
  std::optional<Diagnostic> LexNumber(SourceLocation where) {
    size_t end = pos_;
    while (end < text_.size() && IsDigit(text_[end])) ++end;
    bool is_float = false;
    if (end + 1 < text_.size() && text_[end] == '.' && IsDigit(text_[end + 1])) {
      is_float = true;
      end += 1;
      while (end < text_.size() && IsDigit(text_[end])) ++end;
    }
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      size_t digits = end + 1;
      if (digits < text_.size() && (text_[digits] == '+' || text_[digits] == '-')) ++digits;
      if (digits < text_.size() && IsDigit(text_[digits])) {
        is_float = true;
        end = digits;
        while (end < text_.size() && IsDigit(text_[end])) ++end;
      }
    }
    std::string_view number = text_.substr(pos_, end - pos_);
    size_t unit_end = end;
    while (unit_end < text_.size() && IsWordChar(text_[unit_end])) ++unit_end;
    std::string_view unit = text_.substr(end, unit_end - end);
    std::string_view spelled = text_.substr(pos_, unit_end - pos_);

    int64_t nanos_per_unit = 0;
    if (!unit.empty()) {
      for (const DurationUnit& u : kUnits) {
        if (u.name == unit) nanos_per_unit = u.nanos;
      }
      if (nanos_per_unit == 0) {
        return Diagnostic{where,
                          fmt::format("unknown unit '{}' in '{}'; a duration ends in ns, us, ms, "
                                      "s, m or h",
                                      unit, spelled)};
      }
    }

    Token t;
    t.where = where;
    t.text = spelled;
    if (is_float) {
      double value = 0;
      auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
      if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value)) {
        return Diagnostic{where, fmt::format("number '{}' is out of range", spelled)};
      }
      if (nanos_per_unit != 0) {
        double nanos = value * double(nanos_per_unit);
        // 2^63 is the first double past int64's range.
        if (!(nanos < 9223372036854775808.0)) {
          return Diagnostic{
              where, fmt::format("duration '{}' does not fit in 64-bit nanoseconds", spelled)};
        }
        t.kind = TokenKind::kDuration;
        t.int_value = uint64_t(std::llround(nanos));
      } else {
        t.kind = TokenKind::kFloat;
        t.float_value = value;
      }
    } else {
      uint64_t value = 0;
      for (char d : number) {
        uint64_t digit = uint64_t(d - '0');
        if (value > (kTwoTo63 - digit) / 10) {
          return Diagnostic{where, fmt::format("integer '{}' does not fit in 64 bits", spelled)};
        }
        value = value * 10 + digit;
      }
      if (nanos_per_unit != 0) {
        if (value > uint64_t(std::numeric_limits<int64_t>::max()) / uint64_t(nanos_per_unit)) {
          return Diagnostic{
              where, fmt::format("duration '{}' does not fit in 64-bit nanoseconds", spelled)};
        }
        t.kind = TokenKind::kDuration;
        t.int_value = value * uint64_t(nanos_per_unit);
      } else {
        t.kind = TokenKind::kInt;
        t.int_value = value;
      }
    }
    tokens_->push_back(t);
    pos_ = unit_end;
    return std::nullopt;
  }

  std::optional<Diagnostic> LexString(SourceLocation where) {
    size_t end = pos_ + 1;
    while (true) {
      if (end >= text_.size() || text_[end] == '\n') {
        return Diagnostic{where, "unterminated string; it needs a closing '\"' on its line"};
      }
      char c = text_[end];
      if (c == '"') break;
      if (c == '\\') {
        char e = end + 1 < text_.size() ? text_[end + 1] : '\0';
        if (e != '"' && e != '\\' && e != 'n' && e != 't') {
          SourceLocation at{line_, uint32_t(end - line_start_ + 1), uint32_t(end)};
          return Diagnostic{at, "unknown escape in string; use \\\", \\\\, \\n or \\t"};
        }
        end += 2;
        continue;
      }
      ++end;
    }
    Push(TokenKind::kString, where, end + 1 - pos_);
    return std::nullopt;
  }

  std::string_view text_;
  std::vector<Token>* tokens_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

Keyword KeywordOf(std::string_view word) {
  if (word.size() > 11) return Keyword::kNone;  // "mostrecentn" is the longest
  for (const auto& [name, keyword] : kKeywords) {
    if (EqualsIgnoreCase(word, name)) return keyword;
  }
  return Keyword::kNone;
}

std::optional<Diagnostic> Tokenize(std::string_view text, std::vector<Token>* tokens) {
  return Lexer(text, tokens).Run();
}

std::string UnescapeString(std::string_view quoted) {
  std::string out;
  if (quoted.size() < 2) return out;
  std::string_view body = quoted.substr(1, quoted.size() - 2);
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\' && i + 1 < body.size()) {
      char e = body[++i];
      out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace weft::query
