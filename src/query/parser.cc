// A recursive-descent parser over the lexer's tokens, one function per rule of the grammar
// in docs/query.md. The first error stops the parse and becomes the diagnostic: a query is
// a few lines long, so one precise message beats a list of guesses after it.
//
// Recursion is bounded: parentheses, subqueries and unary operators nest at most
// kMaxNesting deep, and an expression tree is at most kMaxExprHeight high (a chain of 300
// `+` is a tree 300 high, which later passes would walk recursively).
#include "query/parser.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "query/diagnostic.h"
#include "query/lexer.h"

namespace weft::query {
namespace {

constexpr size_t kMaxText = size_t{1} << 20;
constexpr int kMaxNesting = 64;
constexpr int kMaxExprHeight = 256;
constexpr size_t kMaxQuoted = 40;  // longer tokens and contexts are cut in messages

// An expression being built, with what its node does not store.
struct Parsed {
  ExprPtr expr;          // null after an error
  SourceLocation start;  // where its text starts: the '(' of a parenthesised expression
  int height = 0;        // nodes on the longest path down
};

// The clauses of a query, in the only order they may come.
enum class Clause { kFrom, kJoin, kWhere, kGroupBy, kSelect };

std::string_view ClauseName(Clause c) {
  switch (c) {
    case Clause::kFrom:
      return "From";
    case Clause::kJoin:
      return "Join";
    case Clause::kWhere:
      return "Where";
    case Clause::kGroupBy:
      return "GroupBy";
    case Clause::kSelect:
      return "Select";
  }
  return "";
}

std::string Quote(std::string_view text) {
  if (text.size() > kMaxQuoted) return fmt::format("'{}...'", text.substr(0, kMaxQuoted - 3));
  return fmt::format("'{}'", text);
}

std::string Describe(const Token& t) {
  return t.kind == TokenKind::kEnd ? "end of input" : Quote(t.text);
}

bool IsWord(const Token& t) {
  return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kKeyword;
}

bool IsComparison(TokenKind k) {
  return k == TokenKind::kEq || k == TokenKind::kNe || k == TokenKind::kLt || k == TokenKind::kLe ||
         k == TokenKind::kGt || k == TokenKind::kGe;
}

BinaryOp ComparisonOp(TokenKind k) {
  switch (k) {
    case TokenKind::kEq:
      return BinaryOp::kEq;
    case TokenKind::kNe:
      return BinaryOp::kNe;
    case TokenKind::kLt:
      return BinaryOp::kLt;
    case TokenKind::kLe:
      return BinaryOp::kLe;
    case TokenKind::kGt:
      return BinaryOp::kGt;
    default:
      return BinaryOp::kGe;
  }
}

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
    Nesting(Parser* parser, SourceLocation at) : parser_(parser) {
      ok_ = ++parser_->depth_ <= kMaxNesting ||
            parser_->Fail(at, fmt::format("nesting deeper than {} levels (parentheses, "
                                          "subqueries and unary operators)",
                                          kMaxNesting));
    }
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

  std::string Render(const After& after) const {
    return after.from ? TextSince(*after.from) : std::string(after.words);
  }

  // The text from `start` to the end of the last token taken, whitespace collapsed
  // ("'Join q In Request'").
  std::string TextSince(SourceLocation start) const {
    if (pos_ == 0) return "";
    const Token& last = tokens_[pos_ - 1];
    size_t end = last.where.offset + last.text.size();
    std::string out;
    bool space = false;
    for (size_t i = start.offset; i < end && i < text_.size(); ++i) {
      char c = text_[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        space = true;
        continue;
      }
      if (space && !out.empty()) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
    return Quote(out);
  }

  // ---- errors

  // Records the first error; returns false so that callers can `return Fail(...)`.
  bool Fail(SourceLocation at, std::string message) {
    if (!error_) error_ = Diagnostic{at, std::move(message)};
    return false;
  }

  // "expected <what> after <after>, found <token>", with a hint when the token is a word
  // close to one of `keywords`.
  bool FailExpected(std::string_view what, const After& after_words,
                    std::span<const std::string> keywords = {}) {
    const Token& found = Peek();
    std::string after = Render(after_words);
    std::string message =
        after.empty() ? fmt::format("expected {}, found {}", what, Describe(found))
                      : fmt::format("expected {} after {}, found {}", what, after, Describe(found));
    if (IsWord(found) && !keywords.empty()) {
      message = WithSuggestion(std::move(message), found.text, keywords);
    } else if (found.kind == TokenKind::kAssign) {
      message += "; did you mean '=='?";
    }
    return Fail(found.where, std::move(message));
  }

  bool ExpectKeyword(Keyword k, std::string_view spelled, const After& after) {
    if (AtKeyword(k)) {
      Next();
      return true;
    }
    std::array<std::string, 1> keyword = {std::string(spelled)};
    return FailExpected(Quote(spelled), after, keyword);
  }

  bool Expect(TokenKind kind, std::string_view what, const After& after) {
    if (At(kind)) {
      Next();
      return true;
    }
    return FailExpected(what, after);
  }

  // An alias or query name: an identifier that is not a keyword.
  bool ParseAlias(std::string* name, SourceLocation* where, const After& after) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kIdentifier) {
      *name = std::string(t.text);
      *where = t.where;
      Next();
      return true;
    }
    if (t.kind == TokenKind::kKeyword) {
      return Fail(t.where, fmt::format("expected an alias after {}, found the keyword {}",
                                       Render(after), Quote(t.text)));
    }
    return FailExpected("an alias", after);
  }

  // ---- statements and queries

  void ParseStatements(Program* program) {
    while (true) {
      bool starts_statement = At(TokenKind::kIdentifier) || AtKeyword(Keyword::kFrom);
      if (starts_statement && !program->statements.empty() &&
          program->statements.back().name.empty()) {
        Fail(program->statements.back().where,
             "only the last query may be unnamed; name this one ('Name = From ...') or make it "
             "the last");
        return;
      }
      Statement statement;
      statement.where = Peek().where;
      if (At(TokenKind::kIdentifier) && Peek(1).kind == TokenKind::kAssign) {
        statement.name = std::string(Peek().text);
        auto [earlier, added] = name_lines_.try_emplace(statement.name, statement.where.line);
        if (!added) {
          Fail(statement.where, fmt::format("query '{}' is already defined at line {}",
                                            statement.name, earlier->second));
          return;
        }
        Next();
        Next();
      } else if (At(TokenKind::kIdentifier) && AtKeyword(Keyword::kFrom, 1)) {
        std::string name = Quote(Next().text);
        FailExpected("'='", fmt::format("the query name {}", name));
        return;
      }
      if (!ParseQuery(&statement.query, /*nested=*/false)) return;
      program->statements.push_back(std::move(statement));
      if (At(TokenKind::kSemicolon)) Next();
      if (At(TokenKind::kEnd)) break;
    }
    const Statement& last = program->statements.back();
    if (!last.name.empty()) {
      Fail(last.where, fmt::format("the last query is the one answered and cannot be named; "
                                   "add a query after '{}' that uses it",
                                   last.name));
    }
  }

  bool ParseQuery(Query* query, bool nested) {
    query->where = Peek().where;
    static const std::array<std::string, 1> kFromKeyword = {"From"};
    if (!AtKeyword(Keyword::kFrom)) {
      return FailExpected("'From' to start a query", "", kFromKeyword);
    }
    Next();
    if (!ParseAlias(&query->from_alias, &query->from_alias_location, "'From'")) return false;
    if (!ExpectKeyword(Keyword::kIn, "In", Since(query->where))) return false;
    if (!ParseSource(&query->from, Since(query->where))) return false;

    Clause last = Clause::kFrom;
    bool last_select_named = false;
    while (true) {
      const Token& t = Peek();
      Clause clause;
      if (AtKeyword(Keyword::kJoin)) {
        clause = Clause::kJoin;
      } else if (AtKeyword(Keyword::kWhere)) {
        clause = Clause::kWhere;
      } else if (AtKeyword(Keyword::kGroupBy) || AtKeyword(Keyword::kGroup)) {
        clause = Clause::kGroupBy;
      } else if (AtKeyword(Keyword::kSelect)) {
        clause = Clause::kSelect;
      } else {
        break;
      }
      if (clause == last && clause != Clause::kJoin) {
        return Fail(
            t.where,
            fmt::format("a query has at most one '{}' clause{}", ClauseName(clause),
                        clause == Clause::kWhere ? "; combine the conditions with 'and'"
                                                 : "; list the expressions after one, with ','"));
      }
      if (clause < last) {
        return Fail(t.where, fmt::format("'{}' must come before '{}' (the clauses go From, Join, "
                                         "Where, GroupBy, Select)",
                                         ClauseName(clause), ClauseName(last)));
      }
      bool ok = true;
      switch (clause) {
        case Clause::kFrom:
          break;
        case Clause::kJoin:
          query->joins.emplace_back();
          ok = ParseJoin(&query->joins.back());
          break;
        case Clause::kWhere: {
          Next();
          Parsed where = ParseExpr(AggregateContext::kWhere);
          ok = where.expr != nullptr;
          query->where_clause = std::move(where.expr);
          break;
        }
        case Clause::kGroupBy:
          ok = ParseGroupBy(query);
          break;
        case Clause::kSelect:
          ok = ParseSelect(query, &last_select_named);
          break;
      }
      if (!ok) return false;
      last = clause;
    }

    if (nested ? At(TokenKind::kRParen) : (At(TokenKind::kSemicolon) || At(TokenKind::kEnd))) {
      return true;
    }
    return FailAfterQuery(last, last_select_named, nested);
  }

  // The query should have ended; say what could have come instead of what did.
  bool FailAfterQuery(Clause last, bool last_select_named, bool nested) {
    std::string_view end = nested ? "')'" : "';'";
    if (!nested && AtKeyword(Keyword::kFrom)) {
      return Fail(Peek().where, "expected ';' before the next query, found 'From'");
    }
    static const std::vector<std::string> kAfterFrom = {"Join", "Where", "GroupBy", "Select"};
    static const std::vector<std::string> kAfterWhere = {"GroupBy", "Select"};
    static const std::vector<std::string> kAfterGroupBy = {"Select"};
    static const std::vector<std::string> kAfterSelect = {"As"};
    switch (last) {
      case Clause::kFrom:
      case Clause::kJoin:
        return FailExpected(fmt::format("'Join', 'Where', 'GroupBy', 'Select' or {}", end),
                            last == Clause::kFrom ? "the From clause" : "the Join clause",
                            kAfterFrom);
      case Clause::kWhere:
        return FailExpected(fmt::format("an operator, 'GroupBy', 'Select' or {}", end),
                            "the Where condition", kAfterWhere);
      case Clause::kGroupBy:
        return FailExpected(fmt::format("an operator, ',', 'Select' or {}", end),
                            "a GroupBy expression", kAfterGroupBy);
      case Clause::kSelect:
        if (last_select_named) {
          return FailExpected(fmt::format("',' or {}", end), "a Select column's name");
        }
        return FailExpected(fmt::format("an operator, ',', 'As' or {}", end), "a Select column",
                            kAfterSelect);
    }
    return false;
  }

  // Join alias In [Filter(] source [, n)] On before -> after
  bool ParseJoin(Join* join) {
    join->where = Peek().where;
    Next();
    if (!ParseAlias(&join->alias, &join->alias_location, "'Join'")) return false;
    if (!ExpectKeyword(Keyword::kIn, "In", Since(join->where))) return false;

    const Token& filter = Peek();
    bool counted = false;
    if (filter.kind == TokenKind::kKeyword) {
      switch (filter.keyword) {
        case Keyword::kFirst:
          join->filter = TemporalFilter::kFirst;
          break;
        case Keyword::kFirstN:
          join->filter = TemporalFilter::kFirstN;
          counted = true;
          break;
        case Keyword::kMostRecent:
          join->filter = TemporalFilter::kMostRecent;
          break;
        case Keyword::kMostRecentN:
          join->filter = TemporalFilter::kMostRecentN;
          counted = true;
          break;
        default:
          break;
      }
    }
    if (join->filter == TemporalFilter::kAll) {
      if (!ParseSource(&join->source, Since(join->where))) return false;
    } else {
      std::string_view name = filter.text;
      Next();
      Nesting nesting(this, Peek().where);
      if (!nesting.ok()) return false;
      if (!Expect(TokenKind::kLParen, "'('", Quote(name))) return false;
      if (!ParseSource(&join->source, Since(filter.where))) return false;
      if (counted) {
        std::string usage = fmt::format("'{}(source, count)'", name);
        if (!Expect(TokenKind::kComma, fmt::format("',' and a count in {}", usage), "")) {
          return false;
        }
        const Token& count = Peek();
        if (count.kind != TokenKind::kInt || count.int_value == 0 ||
            count.int_value > std::numeric_limits<uint32_t>::max()) {
          return FailExpected(fmt::format("a count from 1 to {} in {}",
                                          std::numeric_limits<uint32_t>::max(), usage),
                              "");
        }
        join->n = uint32_t(count.int_value);
        Next();
      }
      if (!Expect(TokenKind::kRParen, "')'", Since(filter.where))) return false;
    }

    if (!ExpectKeyword(Keyword::kOn, "On", Since(join->where))) return false;
    if (!ParseAlias(&join->before, &join->before_location, "'On'")) return false;
    if (!Expect(TokenKind::kArrow, "'->'", Since(join->where))) return false;
    return ParseAlias(&join->after, &join->after_location, "'->'");
  }

  // name {, name} | ( query )
  bool ParseSource(Source* source, const After& after) {
    source->where = Peek().where;
    if (At(TokenKind::kLParen)) {
      Nesting nesting(this, Peek().where);
      if (!nesting.ok()) return false;
      Next();
      source->subquery = std::make_unique<Query>();
      if (!ParseQuery(source->subquery.get(), /*nested=*/true)) return false;
      Next();  // ParseQuery saw the ')'
      return true;
    }
    if (!At(TokenKind::kIdentifier)) {
      return FailExpected("a tracepoint, a query name or '('", after);
    }
    while (true) {
      source->name_locations.push_back(Peek().where);
      source->names.push_back(std::string(Next().text));
      while (At(TokenKind::kDot)) {
        Next();
        if (!IsWord(Peek())) {
          return FailExpected("a name", fmt::format("'{}.'", source->names.back()));
        }
        source->names.back() += '.';
        source->names.back() += Next().text;
      }
      // A ',' before an integer is FirstN's count, not another name.
      if (!At(TokenKind::kComma) || Peek(1).kind == TokenKind::kInt) return true;
      Next();
      if (!At(TokenKind::kIdentifier)) {
        return FailExpected("a tracepoint or query name", "','");
      }
    }
  }

  bool ParseGroupBy(Query* query) {
    if (AtKeyword(Keyword::kGroup)) {
      Next();
      if (!ExpectKeyword(Keyword::kBy, "By", "'Group'")) return false;
    } else {
      Next();
    }
    do {
      if (!query->group_by.empty()) Next();  // the ','
      Parsed e = ParseExpr(AggregateContext::kGroupBy);
      if (!e.expr) return false;
      query->group_by.push_back(std::move(e.expr));
    } while (At(TokenKind::kComma));
    return true;
  }

  bool ParseSelect(Query* query, bool* last_named) {
    Next();
    do {
      if (!query->select.empty()) Next();  // the ','
      Parsed e = ParseExpr(AggregateContext::kAllowed);
      if (!e.expr) return false;
      SelectItem item;
      item.expr = std::move(e.expr);
      *last_named = AtKeyword(Keyword::kAs);
      if (*last_named) {
        Next();
        // Any word may name a column: `As count` is natural.
        if (!IsWord(Peek())) return FailExpected("a column name", "'As'");
        item.name = std::string(Next().text);
      } else if (item.expr->kind == ExprKind::kVariable) {
        item.name = item.expr->field.empty() ? item.expr->alias : item.expr->field;
      } else {
        item.name = item.expr->text;
      }
      query->select.push_back(std::move(item));
    } while (At(TokenKind::kComma));
    return true;
  }

  // ---- expressions, lowest precedence first

  Parsed ParseExpr(AggregateContext context) {
    AggregateContext saved = aggregates_;
    aggregates_ = context;
    Parsed e = ParseOr();
    aggregates_ = saved;
    return e;
  }

  Parsed MakeBinary(BinaryOp op, const Token& op_token, Parsed lhs, Parsed rhs) {
    if (!lhs.expr || !rhs.expr) return {};
    Parsed out;
    out.start = lhs.start;
    out.height = 1 + std::max(lhs.height, rhs.height);
    if (out.height > kMaxExprHeight) {
      Fail(op_token.where,
           fmt::format("expression nests deeper than {} operators", kMaxExprHeight));
      return {};
    }
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kBinary;
    out.expr->binary = op;
    out.expr->where = lhs.start;
    out.expr->text = fmt::format("{} {} {}", lhs.expr->text, op_token.text, rhs.expr->text);
    out.expr->args.push_back(std::move(lhs.expr));
    out.expr->args.push_back(std::move(rhs.expr));
    return out;
  }

  Parsed MakeUnary(UnaryOp op, const Token& op_token, Parsed operand) {
    if (!operand.expr) return {};
    Parsed out;
    out.start = op_token.where;
    out.height = operand.height + 1;
    if (out.height > kMaxExprHeight) {
      Fail(op_token.where,
           fmt::format("expression nests deeper than {} operators", kMaxExprHeight));
      return {};
    }
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kUnary;
    out.expr->unary = op;
    out.expr->where = op_token.where;
    // A word operator needs a space before its operand, and so does a minus before a minus
    // ("--" starts a comment).
    bool space = op_token.kind == TokenKind::kKeyword ||
                 (op_token.kind == TokenKind::kMinus && operand.expr->text.starts_with('-'));
    out.expr->text = fmt::format("{}{}{}", op_token.text, space ? " " : "", operand.expr->text);
    out.expr->args.push_back(std::move(operand.expr));
    return out;
  }

  Parsed ParseOr() {
    Parsed lhs = ParseAnd();
    while (lhs.expr && (At(TokenKind::kOrOr) || AtKeyword(Keyword::kOr))) {
      const Token& op = Next();
      Parsed rhs = ParseAnd();
      lhs = MakeBinary(BinaryOp::kOr, op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Parsed ParseAnd() {
    Parsed lhs = ParseNot();
    while (lhs.expr && (At(TokenKind::kAndAnd) || AtKeyword(Keyword::kAnd))) {
      const Token& op = Next();
      Parsed rhs = ParseNot();
      lhs = MakeBinary(BinaryOp::kAnd, op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Parsed ParseNot() {
    if (!At(TokenKind::kBang) && !AtKeyword(Keyword::kNot)) return ParseComparison();
    Nesting nesting(this, Peek().where);
    if (!nesting.ok()) return {};
    const Token& op = Next();
    return MakeUnary(UnaryOp::kNot, op, ParseNot());
  }

  Parsed ParseComparison() {
    Parsed lhs = ParseAdditive();
    if (!lhs.expr || !IsComparison(Peek().kind)) return lhs;
    const Token& op = Next();
    Parsed rhs = ParseAdditive();
    Parsed out = MakeBinary(ComparisonOp(op.kind), op, std::move(lhs), std::move(rhs));
    if (out.expr && IsComparison(Peek().kind)) {
      Fail(Peek().where, fmt::format("comparisons do not chain: write 'a < b and b < c', not "
                                     "'a < b < c'"));
      return {};
    }
    return out;
  }

  Parsed ParseAdditive() {
    Parsed lhs = ParseMultiplicative();
    while (lhs.expr && (At(TokenKind::kPlus) || At(TokenKind::kMinus))) {
      const Token& op = Next();
      Parsed rhs = ParseMultiplicative();
      lhs = MakeBinary(op.kind == TokenKind::kPlus ? BinaryOp::kAdd : BinaryOp::kSub, op,
                       std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Parsed ParseMultiplicative() {
    Parsed lhs = ParseUnary();
    while (lhs.expr && (At(TokenKind::kStar) || At(TokenKind::kSlash) || At(TokenKind::kPercent))) {
      const Token& op = Next();
      BinaryOp binary = op.kind == TokenKind::kStar    ? BinaryOp::kMul
                        : op.kind == TokenKind::kSlash ? BinaryOp::kDiv
                                                       : BinaryOp::kMod;
      Parsed rhs = ParseUnary();
      lhs = MakeBinary(binary, op, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Parsed ParseUnary() {
    if (!At(TokenKind::kMinus)) return ParsePrimary();
    const Token& op = Next();
    const Token& t = Peek();
    // A minus before a number is part of the literal: -5 is the integer -5, and
    // -9223372036854775808 fits although its magnitude alone does not.
    if (t.kind == TokenKind::kInt || t.kind == TokenKind::kDuration ||
        t.kind == TokenKind::kFloat) {
      Next();
      Parsed out = Literal(t, op.where);
      out.expr->text = fmt::format("-{}", t.text);
      if (t.kind == TokenKind::kFloat) {
        out.expr->float_value = -t.float_value;
      } else {
        out.expr->int_value = int64_t(0 - t.int_value);  // wraps 2^63 to INT64_MIN
      }
      return out;
    }
    Nesting nesting(this, op.where);
    if (!nesting.ok()) return {};
    return MakeUnary(UnaryOp::kNegate, op, ParseUnary());
  }

  // A literal node for token `t` (a number's sign is the caller's).
  static Parsed Literal(const Token& t, SourceLocation start) {
    Parsed out;
    out.start = start;
    out.height = 1;
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kLiteral;
    out.expr->where = start;
    out.expr->text = std::string(t.text);
    switch (t.kind) {
      case TokenKind::kFloat:
        out.expr->literal_type = LiteralType::kFloat;
        out.expr->float_value = t.float_value;
        break;
      case TokenKind::kString:
        out.expr->literal_type = LiteralType::kString;
        out.expr->string_value = UnescapeString(t.text);
        break;
      case TokenKind::kKeyword:
        out.expr->literal_type = LiteralType::kBool;
        out.expr->int_value = t.keyword == Keyword::kTrue ? 1 : 0;
        break;
      default:
        out.expr->literal_type = LiteralType::kInt;
        out.expr->int_value = int64_t(t.int_value);
        break;
    }
    return out;
  }

  Parsed ParsePrimary() {
    const Token& t = Peek();
    switch (t.kind) {
      case TokenKind::kInt:
        if (t.int_value > uint64_t(std::numeric_limits<int64_t>::max())) {
          Fail(t.where, fmt::format("integer {} does not fit in 64 bits", Quote(t.text)));
          return {};
        }
        [[fallthrough]];
      case TokenKind::kFloat:
      case TokenKind::kDuration:
      case TokenKind::kString:
        Next();
        return Literal(t, t.where);
      case TokenKind::kIdentifier:
        return ParseVariable();
      case TokenKind::kLParen: {
        Nesting nesting(this, t.where);
        if (!nesting.ok()) return {};
        Next();
        Parsed inner = ParseOr();
        if (!inner.expr) return {};
        if (!At(TokenKind::kRParen)) {
          FailExpected(fmt::format("')' to close the '(' at {}:{}", t.where.line, t.where.column),
                       "");
          return {};
        }
        Next();
        inner.expr->text = fmt::format("({})", inner.expr->text);
        inner.start = t.where;
        return inner;
      }
      case TokenKind::kKeyword:
        switch (t.keyword) {
          case Keyword::kTrue:
          case Keyword::kFalse:
            Next();
            return Literal(t, t.where);
          case Keyword::kStartsWith:
            return ParseStartsWith();
          case Keyword::kCount:
          case Keyword::kSum:
          case Keyword::kMin:
          case Keyword::kMax:
          case Keyword::kAverage:
          case Keyword::kAvg:
            return ParseAggregate();
          default:
            break;
        }
        break;
      default:
        break;
    }
    std::string after = pos_ > 0 ? Quote(tokens_[pos_ - 1].text) : "";
    FailExpected("an expression", after);
    return {};
  }

  // alias [. field {. field}]: "r.http.url" is alias "r", field "http.url".
  Parsed ParseVariable() {
    const Token& t = Next();
    Parsed out;
    out.start = t.where;
    out.height = 1;
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kVariable;
    out.expr->where = t.where;
    out.expr->alias = std::string(t.text);
    while (At(TokenKind::kDot)) {
      Next();
      if (!IsWord(Peek())) {
        FailExpected("a field name", Since(t.where));
        return {};
      }
      if (!out.expr->field.empty()) out.expr->field += '.';
      out.expr->field += Next().text;
    }
    out.expr->text = out.expr->field.empty()
                         ? out.expr->alias
                         : fmt::format("{}.{}", out.expr->alias, out.expr->field);
    return out;
  }

  Parsed ParseStartsWith() {
    const Token& name = Next();
    Nesting nesting(this, name.where);
    if (!nesting.ok()) return {};
    if (!Expect(TokenKind::kLParen, "'('", Quote(name.text))) return {};
    Parsed s = ParseOr();
    if (!s.expr) return {};
    if (!Expect(TokenKind::kComma, "',' and a prefix", Since(name.where))) return {};
    Parsed prefix = ParseOr();
    if (!prefix.expr) return {};
    if (!Expect(TokenKind::kRParen, "')'", Since(name.where))) return {};
    Parsed out;
    out.start = name.where;
    out.height = 1 + std::max(s.height, prefix.height);
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kStartsWith;
    out.expr->where = name.where;
    out.expr->text = fmt::format("{}({}, {})", name.text, s.expr->text, prefix.expr->text);
    out.expr->args.push_back(std::move(s.expr));
    out.expr->args.push_back(std::move(prefix.expr));
    return out;
  }

  Parsed ParseAggregate() {
    const Token& name = Peek();
    switch (aggregates_) {
      case AggregateContext::kAllowed:
        break;
      case AggregateContext::kInsideAggregate:
        Fail(name.where,
             fmt::format("aggregates do not nest: {} inside another aggregate", Quote(name.text)));
        return {};
      case AggregateContext::kWhere:
      case AggregateContext::kGroupBy:
        Fail(name.where,
             fmt::format("aggregate {} is only allowed in Select, not in {}", Quote(name.text),
                         aggregates_ == AggregateContext::kWhere ? "Where" : "GroupBy"));
        return {};
    }
    Next();
    Parsed out;
    out.start = name.where;
    out.height = 1;
    out.expr = std::make_unique<Expr>();
    out.expr->kind = ExprKind::kAggregate;
    out.expr->where = name.where;
    switch (name.keyword) {
      case Keyword::kCount:
        out.expr->aggregate = AggregateOp::kCount;
        break;
      case Keyword::kSum:
        out.expr->aggregate = AggregateOp::kSum;
        break;
      case Keyword::kMin:
        out.expr->aggregate = AggregateOp::kMin;
        break;
      case Keyword::kMax:
        out.expr->aggregate = AggregateOp::kMax;
        break;
      default:
        out.expr->aggregate = AggregateOp::kAverage;
        break;
    }
    if (name.keyword == Keyword::kCount) {
      out.expr->text = std::string(name.text);
      if (At(TokenKind::kLParen)) {
        Next();
        if (!At(TokenKind::kRParen)) {
          Fail(Peek().where, "COUNT takes no argument: write COUNT or COUNT()");
          return {};
        }
        Next();
        out.expr->text += "()";
      }
      return out;
    }
    Nesting nesting(this, name.where);
    if (!nesting.ok()) return {};
    if (!Expect(TokenKind::kLParen, "'('", Quote(name.text))) return {};
    Parsed arg = ParseExpr(AggregateContext::kInsideAggregate);
    if (!arg.expr) return {};
    if (!Expect(TokenKind::kRParen, "')'", Since(name.where))) return {};
    out.height = arg.height + 1;
    out.expr->text = fmt::format("{}({})", name.text, arg.expr->text);
    out.expr->args.push_back(std::move(arg.expr));
    return out;
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  AggregateContext aggregates_ = AggregateContext::kAllowed;
  std::optional<Diagnostic> error_;
  absl::flat_hash_map<std::string, uint32_t> name_lines_;  // named queries and their lines
};

}  // namespace

Result<Program> ParseProgram(std::string_view text, std::string_view source) {
  if (text.size() > kMaxText) {
    Diagnostic too_long{{1, 1, 0},
                        fmt::format("the query is {} bytes; at most {} (1 MiB) are allowed",
                                    text.size(), kMaxText)};
    return DiagnosticStatus(too_long, text, source);
  }
  std::vector<Token> tokens;
  if (auto error = Tokenize(text, &tokens)) return DiagnosticStatus(*error, text, source);
  Program program;
  if (auto error = Parser(text, std::move(tokens)).Parse(&program)) {
    return DiagnosticStatus(*error, text, source);
  }
  return program;
}

}  // namespace weft::query
