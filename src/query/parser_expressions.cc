// The query parser's expressions, lowest precedence first: one member function of Parser
// (parser_rules.h) per level of the grammar in docs/query.md.
#include <fmt/format.h>

#include <limits>
#include <memory>

#include "query/parser_rules.h"

namespace weft::query::internal {
namespace {

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

}  // namespace

Parsed Parser::ParseExpr(AggregateContext context) {
  AggregateContext saved = aggregates_;
  aggregates_ = context;
  Parsed e = ParseOr();
  aggregates_ = saved;
  return e;
}

Parsed Parser::MakeBinary(BinaryOp op, const Token& op_token, Parsed lhs, Parsed rhs) {
  if (!lhs.expr || !rhs.expr) return {};
  Parsed out;
  out.start = lhs.start;
  out.height = 1 + std::max(lhs.height, rhs.height);
  if (out.height > kMaxExprHeight) {
    Fail(op_token.where, fmt::format("expression nests deeper than {} operators", kMaxExprHeight));
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

Parsed Parser::MakeUnary(UnaryOp op, const Token& op_token, Parsed operand) {
  if (!operand.expr) return {};
  Parsed out;
  out.start = op_token.where;
  out.height = operand.height + 1;
  if (out.height > kMaxExprHeight) {
    Fail(op_token.where, fmt::format("expression nests deeper than {} operators", kMaxExprHeight));
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

Parsed Parser::ParseOr() {
  Parsed lhs = ParseAnd();
  while (lhs.expr && (At(TokenKind::kOrOr) || AtKeyword(Keyword::kOr))) {
    const Token& op = Next();
    Parsed rhs = ParseAnd();
    lhs = MakeBinary(BinaryOp::kOr, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

Parsed Parser::ParseAnd() {
  Parsed lhs = ParseNot();
  while (lhs.expr && (At(TokenKind::kAndAnd) || AtKeyword(Keyword::kAnd))) {
    const Token& op = Next();
    Parsed rhs = ParseNot();
    lhs = MakeBinary(BinaryOp::kAnd, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

Parsed Parser::ParseNot() {
  if (!At(TokenKind::kBang) && !AtKeyword(Keyword::kNot)) return ParseComparison();
  Nesting nesting(this, Peek().where);
  if (!nesting.ok()) return {};
  const Token& op = Next();
  return MakeUnary(UnaryOp::kNot, op, ParseNot());
}

Parsed Parser::ParseComparison() {
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

Parsed Parser::ParseAdditive() {
  Parsed lhs = ParseMultiplicative();
  while (lhs.expr && (At(TokenKind::kPlus) || At(TokenKind::kMinus))) {
    const Token& op = Next();
    Parsed rhs = ParseMultiplicative();
    lhs = MakeBinary(op.kind == TokenKind::kPlus ? BinaryOp::kAdd : BinaryOp::kSub, op,
                     std::move(lhs), std::move(rhs));
  }
  return lhs;
}

Parsed Parser::ParseMultiplicative() {
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

Parsed Parser::ParseUnary() {
  if (!At(TokenKind::kMinus)) return ParsePrimary();
  const Token& op = Next();
  const Token& t = Peek();
  // A minus before a number is part of the literal: -5 is the integer -5, and
  // -9223372036854775808 fits although its magnitude alone does not.
  if (t.kind == TokenKind::kInt || t.kind == TokenKind::kDuration || t.kind == TokenKind::kFloat) {
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
Parsed Parser::Literal(const Token& t, SourceLocation start) {
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

Parsed Parser::ParsePrimary() {
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
Parsed Parser::ParseVariable() {
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
  out.expr->text = out.expr->field.empty() ? out.expr->alias
                                           : fmt::format("{}.{}", out.expr->alias, out.expr->field);
  return out;
}

Parsed Parser::ParseStartsWith() {
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

Parsed Parser::ParseAggregate() {
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

}  // namespace weft::query::internal
