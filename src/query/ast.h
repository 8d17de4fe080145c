// The syntax tree of a Pivot Tracing query (Pivot Tracing §3, Table 1; docs/query.md has
// the grammar). The parser builds it; the compiler resolves its names against the
// tracepoints and turns it into advice. Every node keeps where it starts in the text, so
// that a later error can point at it.
//
//   Slow = From r In Reply Where r.latency > 30ms Select r.latency;
//   From c In Call
//   Join q In First(Request) On q -> c
//   Where c.peer == "db"
//   GroupBy q.url
//   Select q.url, COUNT
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::query {

// 1-based line and column (in bytes) of a token, and its byte offset.
struct SourceLocation {
  uint32_t line = 1;
  uint32_t column = 1;
  uint32_t offset = 0;
};

enum class ExprKind : uint8_t {
  kLiteral,     // 42, 2.5, 30ms, "GET", true, false
  kVariable,    // alias.field, or alias alone (a joined query with one output column)
  kUnary,       // not x, -x
  kBinary,      // x + y, x == y, x and y, ...
  kStartsWith,  // StartsWith(x, "/api"): string prefix
  kAggregate,   // COUNT, SUM(x), MIN(x), MAX(x), AVERAGE(x): only in Select
};
enum class LiteralType : uint8_t { kInt, kFloat, kString, kBool };
enum class UnaryOp : uint8_t { kNot, kNegate };
enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};
enum class AggregateOp : uint8_t { kCount, kSum, kMin, kMax, kAverage };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  SourceLocation where;
  // kLiteral. Durations (30ms, 2s, 500us, 10ns) are integers in nanoseconds; true and
  // false are kBool with int_value 1 or 0.
  LiteralType literal_type = LiteralType::kInt;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;
  // kVariable: "r.url" has alias "r" and field "url"; "lat" alone has an empty field.
  std::string alias, field;
  UnaryOp unary = UnaryOp::kNot;
  BinaryOp binary = BinaryOp::kAdd;
  AggregateOp aggregate = AggregateOp::kCount;
  // Operands: kUnary 1, kBinary 2, kStartsWith 2, kAggregate 0 (COUNT) or 1.
  std::vector<ExprPtr> args;
  // The expression as written, whitespace normalised ("r.latency / 1000"): the default
  // name of a Select column.
  std::string text;
};

// Which of a joined query's tuples a join keeps (Pivot Tracing §3: "temporal filters").
enum class TemporalFilter : uint8_t { kAll, kFirst, kFirstN, kMostRecent, kMostRecentN };

struct Query;

// What From or Join reads: tracepoints or named queries by name (From takes several, a
// union), or a parenthesised query.
struct Source {
  SourceLocation where;
  std::vector<std::string> names;
  std::vector<SourceLocation> name_locations;  // one per name
  std::unique_ptr<Query> subquery;             // set instead of names
};

// Join alias In [Filter(] source [, n)] On before -> after
struct Join {
  SourceLocation where;
  std::string alias;
  SourceLocation alias_location;
  TemporalFilter filter = TemporalFilter::kAll;
  uint32_t n = 0;  // FirstN, MostRecentN
  Source source;
  // On before -> after: `before` must be this join's alias and `after` the From alias or
  // another join's alias (Pivot's Q7 chains joins: st -> getloc -> DNop).
  std::string before, after;
  SourceLocation before_location, after_location;
};

struct SelectItem {
  ExprPtr expr;
  std::string name;  // "As name" if given, else the field of a plain variable, else the text
};

struct Query {
  SourceLocation where;
  std::string from_alias;
  SourceLocation from_alias_location;
  Source from;
  std::vector<Join> joins;
  ExprPtr where_clause;  // null if none
  std::vector<ExprPtr> group_by;
  std::vector<SelectItem> select;  // empty: every variable of every alias
};

// `Name = Query;` defines a named query that later statements may join; the last
// statement is the one answered and may not be named.
struct Statement {
  std::string name;  // empty for the answered query
  SourceLocation where;
  Query query;
};

struct Program {
  std::vector<Statement> statements;
};

}  // namespace weft::query
