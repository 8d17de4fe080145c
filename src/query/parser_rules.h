// The query parser's class, one member function per rule of the grammar in docs/query.md,
// defined in two files as the grammar has two halves: parser.cc (the token cursor, errors,
// statements, queries and their clauses) and parser_expressions.cc (expressions, lowest
// precedence first). parser.h is the interface; this header is for those two files only.
//
// The first error stops the parse and becomes the diagnostic: a query is a few lines long,
// so one precise message beats a list of guesses after it. Recursion is bounded:
// parentheses, subqueries and unary operators nest at most kMaxNesting deep, and an
// expression tree is at most kMaxExprHeight high (a chain of 300 `+` is a tree 300 high,
// which later passes would walk recursively).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "query/ast.h"
#include "query/diagnostic.h"
#include "query/lexer.h"

namespace weft::query::internal {

constexpr int kMaxNesting = 64;
constexpr int kMaxExprHeight = 256;

// `text` in quotes, cut to a length a message can carry.
std::string Quote(std::string_view text);

inline bool IsWord(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kKeyword;
}

// An expression being built, with what its node does not store.
struct Parsed {
  ExprPtr expr;          // null after an error
  SourceLocation start;  // where its text starts: the '(' of a parenthesised expression
  int height = 0;        // nodes on the longest path down
};

// The clauses of a query, in the only order they may come.
enum class Clause { kFrom, kJoin, kWhere, kGroupBy, kSelect };

class Parser {
 public:
  Parser(std::string_view text, std::vector<Token> tokens)
      : text_(text), tokens_(std::move(tokens)) {}

  std::optional<Diagnostic> Parse(Program* program) {
    ParseStatements(program);
    return std::move(error_);
  }

 private:
  // Where aggregates may appear in the expression being parsed.
  enum class AggregateContext { kAllowed, kInsideAggregate, kWhere, kGroupBy };

  // Counts one level of nesting for as long as it lives.
  class Nesting {
   public:
    Nesting(Parser* parser, SourceLocation at);
    ~Nesting() { --parser_->depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    bool ok() const { return ok_; }

   private:
    Parser* parser_;
    bool ok_ = false;
  };

  // ---- tokens

  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (t.kind != TokenKind::kEnd) ++pos_;
    return t;
  }
  bool At(TokenKind kind) const { return Peek().kind == kind; }
  bool AtKeyword(Keyword k, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kKeyword && Peek(ahead).keyword == k;
  }

  // What came before an error, for the "after ..." of its message: fixed words, or the
  // query's text from a location to the last token taken, rendered only for an error.
  struct After {
    After(std::string_view fixed) : words(fixed) {}    // NOLINT: implicit by design
    After(const std::string& fixed) : words(fixed) {}  // NOLINT
    After(const char* fixed) : words(fixed) {}         // NOLINT
    std::string_view words;
    std::optional<SourceLocation> from;  // if set, the text since here instead of `words`
  };
  static After Since(SourceLocation start) {
    After after("");
    after.from = start;
    return after;
  }
  std::string Render(const After& after) const;
  std::string TextSince(SourceLocation start) const;

  // ---- errors

  // Records the first error; returns false so that callers can `return Fail(...)`.
  bool Fail(SourceLocation at, std::string message) {
    if (!error_) error_ = Diagnostic{at, std::move(message)};
    return false;
  }
  bool FailExpected(std::string_view what, const After& after_words,
                    std::span<const std::string> keywords = {});
  bool ExpectKeyword(Keyword k, std::string_view spelled, const After& after);
  bool Expect(TokenKind kind, std::string_view what, const After& after);

  // ---- statements and queries (parser.cc)

  bool ParseAlias(std::string* name, SourceLocation* where, const After& after);
  void ParseStatements(Program* program);
  bool ParseQuery(Query* query, bool nested);
  bool FailAfterQuery(Clause last, bool last_select_named, bool nested);
  bool ParseJoin(Join* join);
  bool ParseSource(Source* source, const After& after);
  bool ParseGroupBy(Query* query);
  bool ParseSelect(Query* query, bool* last_named);

  // ---- expressions, lowest precedence first (parser_expressions.cc)

  Parsed ParseExpr(AggregateContext context);
  Parsed MakeBinary(BinaryOp op, const Token& op_token, Parsed lhs, Parsed rhs);
  Parsed MakeUnary(UnaryOp op, const Token& op_token, Parsed operand);
  Parsed ParseOr();
  Parsed ParseAnd();
  Parsed ParseNot();
  Parsed ParseComparison();
  Parsed ParseAdditive();
  Parsed ParseMultiplicative();
  Parsed ParseUnary();
  static Parsed Literal(const Token& t, SourceLocation start);
  Parsed ParsePrimary();
  Parsed ParseVariable();
  Parsed ParseStartsWith();
  Parsed ParseAggregate();

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  AggregateContext aggregates_ = AggregateContext::kAllowed;
  std::optional<Diagnostic> error_;
  absl::flat_hash_map<std::string, uint32_t> name_lines_;  // named queries and their lines
};

}  // namespace weft::query::internal
