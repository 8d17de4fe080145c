// Advice: what a compiled query runs at each tracepoint (Pivot Tracing §3, Table 2). The
// compiler (compiler.cc) turns a query into a tree of units, one per alias bound to
// tracepoints or per joined query; the optimizer (optimizer.cc) rewrites the tree with the
// rules of Table 3; the interpreter (interpreter.cc) runs it. A unit is Pivot's advice for
// one side of a happened-before join:
//
//   OBSERVE  the variables its tracepoint exports that the query uses
//   FILTER   the conditions on those alone (before unpacking: Table 3's σ_q)
//   UNPACK   the tuples of each joined unit from the baggage (a cross product)
//   FILTER   the conditions that need the joined tuples
//   PACK     its output columns into the baggage for the unit it is joined to: ALL, FIRST,
//            FIRSTN, RECENT, RECENTN, or grouped (equal tuples merged with a multiplicity,
//            with partial aggregates)
//   EMIT     (the answered query's root unit only) grouped aggregation or plain tuples
//
// No jumps and no recursion: a unit is a fixed list of steps over a bounded row, so advice
// always terminates.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "query/ast.h"
#include "query/execution.h"
#include "query/value.h"

namespace weft::query {

// An expression over a unit's row, in a flat array: node k's operands come before it.
struct CompiledExpr {
  struct Node {
    ExprKind kind = ExprKind::kLiteral;
    UnaryOp unary = UnaryOp::kNot;
    BinaryOp binary = BinaryOp::kAdd;
    Value literal;
    uint32_t column = 0;            // kVariable: index in the row
    int32_t left = -1, right = -1;  // operand nodes
  };
  std::vector<Node> nodes;        // the last is the root
  std::string text;               // as written, for explain
  std::vector<uint32_t> columns;  // every row column it reads
};

// How a unit puts its tuples in the baggage for the unit it is joined to.
enum class PackMode : uint8_t {
  kAll,      // every tuple
  kGrouped,  // equal tuples merged (multiplicity and partial aggregates add up)
  kFirst,    // FIRST and FIRSTN: the n earliest
  kRecent,   // RECENT and RECENTN: the n latest
};

// An aggregate of the answered query's Select.
struct AggregateSpec {
  AggregateOp op = AggregateOp::kCount;
  std::string text;  // "SUM(r.latency)"
  // Where it is computed: -1 at the root from the row (the argument evaluated per row);
  // else the unit whose PACK carries it as a partial aggregate (Table 3's A_p / GA_p).
  int32_t pushed_to = -1;
};

// A partial aggregate: sum and weight for SUM, COUNT and AVERAGE; min and max for MIN,
// MAX. Combined across tuples by adding (sum, weight) and taking min/max.
struct PartialAggregate {
  double sum = 0;
  double weight = 0;
  Value min, max;
};

inline constexpr uint32_t kNoExport = UINT32_MAX;

struct PartialSource {
  int32_t child = -1;  // index into Unit::children, -1 for the unit's own row
  uint32_t index = 0;  // into that child's partials
};

struct Unit {
  // The alias it binds ("q"), and the query it belongs to, for explain.
  std::string alias;
  std::string description;
  std::vector<uint32_t> tracepoints;  // where its advice is woven (a union: From A, B)
  // Per tracepoint of `tracepoints`, the export id of each observed variable (kNoExport:
  // that tracepoint does not export it, so it is null). Row columns 0..observe_names.size().
  std::vector<std::vector<uint32_t>> observe;
  std::vector<std::string> observe_names;  // "q.http.url"
  // Joined units whose packed tuples this unit unpacks, in order; row columns follow the
  // observed ones, each child's columns (its `outputs`) in turn.
  std::vector<int32_t> children;
  std::vector<uint32_t> child_column;  // per child, its first row column
  uint32_t row_width = 0;
  std::vector<CompiledExpr> filter_before_unpack;  // conjuncts on observed columns only
  std::vector<CompiledExpr> filter;                // conjuncts after unpacking

  // PACK (every unit but the root): the unit it is joined to, how and what it packs.
  int32_t parent = -1;
  PackMode mode = PackMode::kAll;
  uint32_t n = 0;                     // kFirst, kRecent
  std::vector<CompiledExpr> outputs;  // packed columns
  std::vector<std::string> output_names;
  // Aggregates (indices into CompiledQuery::aggregates) whose partial state this unit's
  // tuples carry, and for each where it comes from: this unit's row (child -1, the
  // argument in CompiledQuery::aggregate_args) or the partial `index` of child `child`.
  std::vector<uint32_t> partials;
  std::vector<PartialSource> partial_sources;
};

// The answered query's EMIT.
struct EmitSpec {
  bool aggregated = false;               // GroupBy or aggregates: one row per group
  std::vector<CompiledExpr> group_keys;  // aggregated: the GroupBy expressions
  // One per result column: a plain expression (not aggregated), a GroupBy key, or an
  // aggregate.
  struct Column {
    std::string name;
    int32_t group_key = -1;  // aggregated: which group key it shows
    int32_t aggregate = -1;  // aggregated: which aggregate it shows
    int32_t expr = -1;       // not aggregated: index into `plain`
  };
  std::vector<Column> columns;
  std::vector<CompiledExpr> plain;
  // Per aggregate, where its value comes from at the root (as Unit::partial_sources).
  std::vector<PartialSource> aggregate_sources;
};

struct CompiledQuery {
  bool optimized = false;
  std::vector<Tracepoint> tracepoints;  // the ones it was compiled against
  std::vector<Unit> units;              // units[0] is the answered query's root
  // Baggage slot i holds what unit i packs (the root packs nothing).
  // Per tracepoint, the units woven there, parents before children: at one event, a unit
  // unpacks before the units joined to it pack, so no event happens before itself.
  struct Woven {
    int32_t unit;
    uint32_t variant;  // which of the unit's tracepoints this is
  };
  std::vector<std::vector<Woven>> advice;
  EmitSpec emit;
  std::vector<AggregateSpec> aggregates;
  // Per aggregate: its argument (empty for COUNT), compiled against the row of the unit
  // that computes it (the root, or `pushed_to`).
  std::vector<CompiledExpr> aggregate_args;
  std::vector<std::unique_ptr<std::string>> literals;  // what string literals point into
};

// Evaluates `expr` over `row`. Arithmetic on a null or a string is null; comparing a
// string with a number is false; division by zero is null.
Value Evaluate(const CompiledExpr& expr, const Value* row);
bool IsTrue(const Value& v);

}  // namespace weft::query
