// The query parser's token cursor, errors, statements, queries and their clauses
// (parser_rules.h has the class and why it stops at the first error), and ParseProgram.
#include "query/parser.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <memory>

#include "query/parser_rules.h"

namespace weft::query {

constexpr size_t kMaxText = size_t{1} << 20;

namespace internal {
namespace {

constexpr size_t kMaxQuoted = 40;  // longer tokens and contexts are cut in messages

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

std::string Describe(const Token& t) {
  return t.kind == TokenKind::kEnd ? "end of input" : Quote(t.text);
}

}  // namespace

std::string Quote(std::string_view text) {
  if (text.size() > kMaxQuoted) return fmt::format("'{}...'", text.substr(0, kMaxQuoted - 3));
  return fmt::format("'{}'", text);
}

Parser::Nesting::Nesting(Parser* parser, SourceLocation at) : parser_(parser) {
  ok_ = ++parser_->depth_ <= kMaxNesting ||
        parser_->Fail(at, fmt::format("nesting deeper than {} levels (parentheses, "
                                      "subqueries and unary operators)",
                                      kMaxNesting));
}

// ---- tokens and errors

std::string Parser::Render(const After& after) const {
  return after.from ? TextSince(*after.from) : std::string(after.words);
}

// The text from `start` to the end of the last token taken, whitespace collapsed
// ("'Join q In Request'").
std::string Parser::TextSince(SourceLocation start) const {
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

// "expected <what> after <after>, found <token>", with a hint when the token is a word
// close to one of `keywords`.
bool Parser::FailExpected(std::string_view what, const After& after_words,
                          std::span<const std::string> keywords) {
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

bool Parser::ExpectKeyword(Keyword k, std::string_view spelled, const After& after) {
  if (AtKeyword(k)) {
    Next();
    return true;
  }
  std::array<std::string, 1> keyword = {std::string(spelled)};
  return FailExpected(Quote(spelled), after, keyword);
}

bool Parser::Expect(TokenKind kind, std::string_view what, const After& after) {
  if (At(kind)) {
    Next();
    return true;
  }
  return FailExpected(what, after);
}

// ---- statements and queries

bool Parser::ParseAlias(std::string* name, SourceLocation* where, const After& after) {
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

void Parser::ParseStatements(Program* program) {
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

bool Parser::ParseQuery(Query* query, bool nested) {
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
      return Fail(t.where, fmt::format("a query has at most one '{}' clause{}", ClauseName(clause),
                                       clause == Clause::kWhere
                                           ? "; combine the conditions with 'and'"
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
bool Parser::FailAfterQuery(Clause last, bool last_select_named, bool nested) {
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
bool Parser::ParseJoin(Join* join) {
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
        return FailExpected(
            fmt::format("a count from 1 to {} in {}", std::numeric_limits<uint32_t>::max(), usage),
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
bool Parser::ParseSource(Source* source, const After& after) {
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

bool Parser::ParseGroupBy(Query* query) {
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

bool Parser::ParseSelect(Query* query, bool* last_named) {
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

}  // namespace internal

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
  if (auto error = internal::Parser(text, std::move(tokens)).Parse(&program)) {
    return DiagnosticStatus(*error, text, source);
  }
  return program;
}

}  // namespace weft::query
