// The query language's tokens (docs/query.md has the lexical rules). The lexer turns the
// whole text into tokens up front: queries are small (at most 1 MiB) and the parser wants
// to look one or two tokens ahead ("Group By", "Name = From").
//
// Words are identifiers or, case-insensitively, keywords; a keyword spelled in any case
// keeps its spelling in `text`. Numbers are integers, floats or durations (30ms: integer
// nanoseconds). Strings are double-quoted with \" \\ \n \t escapes; `text` keeps the
// quotes and the escapes and UnescapeString decodes it. Comments run from `--` or `#` to
// the end of the line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "query/ast.h"
#include "query/diagnostic.h"

namespace weft::query {

enum class TokenKind : uint8_t {
  kEnd,  // always the last token, at the end of the text
  kIdentifier,
  kKeyword,
  kInt,       // int_value; may be 2^63, which only a leading minus makes fit
  kFloat,     // float_value
  kDuration,  // int_value in nanoseconds
  kString,    // text with its quotes; UnescapeString gives the value
  kComma,
  kDot,
  kLParen,
  kRParen,
  kSemicolon,
  kArrow,   // ->
  kAssign,  // =
  kEq,      // ==
  kNe,      // !=
  kLt,
  kLe,
  kGt,
  kGe,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kAndAnd,  // &&
  kOrOr,    // ||
  kBang,    // !
};

enum class Keyword : uint8_t {
  kNone,
  kFrom,
  kIn,
  kJoin,
  kOn,
  kWhere,
  kGroupBy,
  kGroup,  // "Group By" in two words
  kBy,
  kSelect,
  kAs,
  kFirst,
  kFirstN,
  kMostRecent,
  kMostRecentN,
  kAnd,
  kOr,
  kNot,
  kTrue,
  kFalse,
  kCount,
  kSum,
  kMin,
  kMax,
  kAverage,
  kAvg,
  kStartsWith,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  Keyword keyword = Keyword::kNone;  // kKeyword only
  SourceLocation where;
  std::string_view text;  // as written; points into the lexed text
  uint64_t int_value = 0;
  double float_value = 0;
};

// Appends the tokens of `text` to `tokens`, ending with kEnd. On a lexical error
// (an unknown character, an unterminated string, a number that does not fit) returns the
// diagnostic; `tokens` then holds what came before it.
std::optional<Diagnostic> Tokenize(std::string_view text, std::vector<Token>* tokens);

// The keyword `word` spells, case-insensitively, or kNone.
Keyword KeywordOf(std::string_view word);

// The value of a kString token's text (quotes included; escapes already checked).
std::string UnescapeString(std::string_view quoted);

}  // namespace weft::query
