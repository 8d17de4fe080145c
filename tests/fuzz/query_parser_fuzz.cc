// libFuzzer target for the query language: any bytes either parse or give a diagnostic that
// names a position inside the text, never a crash or a deep recursion. A parsed program
// keeps the AST's invariants (only the last statement is unnamed, names are unique, every
// node has its operands and a location inside the text), and each expression's normalised
// text parses back to the same tree.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "query/parser.h"

namespace {

using weft::query::Expr;
using weft::query::ExprKind;
using weft::query::Query;
using weft::query::SourceLocation;

[[noreturn]] void Die(const char* what, std::string_view detail = "") {
  std::fprintf(stderr, "query_parser_fuzz: %s %.*s\n", what, int(detail.size()), detail.data());
  std::abort();
}

void Check(bool ok, const char* what, std::string_view detail = "") {
  if (!ok) Die(what, detail);
}

void CheckLocation(SourceLocation where, size_t text_size) {
  Check(where.line >= 1 && where.column >= 1, "location before the text");
  Check(where.offset <= text_size, "location after the text");
}

void CheckExpr(const Expr& e, size_t text_size, bool aggregates_allowed) {
  CheckLocation(e.where, text_size);
  Check(!e.text.empty(), "expression without text");
  size_t args = e.args.size();
  switch (e.kind) {
    case ExprKind::kLiteral:
    case ExprKind::kVariable:
      Check(args == 0, "leaf with operands", e.text);
      Check(e.kind != ExprKind::kVariable || !e.alias.empty(), "variable without alias");
      break;
    case ExprKind::kUnary:
      Check(args == 1, "unary without one operand", e.text);
      break;
    case ExprKind::kBinary:
    case ExprKind::kStartsWith:
      Check(args == 2, "binary without two operands", e.text);
      break;
    case ExprKind::kAggregate:
      Check(aggregates_allowed, "aggregate outside Select", e.text);
      Check(args == (e.aggregate == weft::query::AggregateOp::kCount ? 0u : 1u),
            "aggregate with wrong operands", e.text);
      aggregates_allowed = false;  // they do not nest
      break;
  }
  for (const auto& arg : e.args) {
    Check(arg != nullptr, "null operand", e.text);
    CheckExpr(*arg, text_size, aggregates_allowed);
  }
}

bool SameTree(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.text != b.text || a.args.size() != b.args.size()) return false;
  switch (a.kind) {
    case ExprKind::kLiteral:
      if (a.literal_type != b.literal_type || a.int_value != b.int_value ||
          a.string_value != b.string_value || a.float_value != b.float_value) {
        return false;
      }
      break;
    case ExprKind::kVariable:
      if (a.alias != b.alias || a.field != b.field) return false;
      break;
    case ExprKind::kUnary:
      if (a.unary != b.unary) return false;
      break;
    case ExprKind::kBinary:
      if (a.binary != b.binary) return false;
      break;
    case ExprKind::kStartsWith:
      break;
    case ExprKind::kAggregate:
      if (a.aggregate != b.aggregate) return false;
      break;
  }
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (!SameTree(*a.args[i], *b.args[i])) return false;
  }
  return true;
}

// `e`'s text, put back in a query of its own, parses to the same tree.
void CheckReparses(const Expr& e, bool in_select) {
  std::string text = (in_select ? "From x In A Select " : "From x In A Where ") + e.text;
  auto again = weft::query::ParseProgram(text);
  Check(again.ok(), "normalised text does not parse:", text);
  const Query& q = again->statements.at(0).query;
  const Expr* back = in_select ? q.select.at(0).expr.get() : q.where_clause.get();
  Check(back != nullptr && SameTree(e, *back), "normalised text parses differently:", text);
}

void CheckQuery(const Query& q, size_t text_size, bool reparse) {
  CheckLocation(q.where, text_size);
  Check(!q.from_alias.empty(), "query without a From alias");
  auto check_source = [&](const weft::query::Source& s) {
    CheckLocation(s.where, text_size);
    Check(s.names.size() == s.name_locations.size(), "names and locations differ in number");
    Check(s.names.empty() != (s.subquery == nullptr), "source with both or neither");
    for (const std::string& name : s.names) Check(!name.empty(), "empty source name");
    if (s.subquery) CheckQuery(*s.subquery, text_size, false);
  };
  check_source(q.from);
  for (const auto& j : q.joins) {
    Check(!j.alias.empty() && !j.before.empty() && !j.after.empty(), "join without an alias");
    bool counted = j.filter == weft::query::TemporalFilter::kFirstN ||
                   j.filter == weft::query::TemporalFilter::kMostRecentN;
    Check(counted == (j.n > 0), "join count and filter disagree");
    check_source(j.source);
  }
  if (q.where_clause) {
    CheckExpr(*q.where_clause, text_size, false);
    if (reparse) CheckReparses(*q.where_clause, false);
  }
  for (const auto& g : q.group_by) CheckExpr(*g, text_size, false);
  for (const auto& item : q.select) {
    Check(!item.name.empty(), "Select column without a name");
    CheckExpr(*item.expr, text_size, true);
    if (reparse) CheckReparses(*item.expr, true);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto program = weft::query::ParseProgram(text);
  if (!program.ok()) {
    // "query:LINE:COL: message", then the line and the caret.
    std::string message = program.status().message();
    Check(message.starts_with("query:"), "diagnostic without its source", message);
    Check(message.find('\n') != std::string::npos, "diagnostic without its line", message);
    Check(message.ends_with("^"), "diagnostic without its caret", message);
    return 0;
  }
  const auto& statements = program->statements;
  Check(!statements.empty(), "empty program parsed");
  std::set<std::string> names;
  for (size_t i = 0; i < statements.size(); ++i) {
    bool last = i + 1 == statements.size();
    Check(statements[i].name.empty() == last, "only the last statement may be unnamed");
    if (!last) Check(names.insert(statements[i].name).second, "duplicate query name");
    CheckLocation(statements[i].where, size);
    // Reparsing each expression is quadratic in the worst case; keep it to small inputs.
    CheckQuery(statements[i].query, size, size < 4096);
  }
  return 0;
}
