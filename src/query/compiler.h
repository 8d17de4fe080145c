// The compiler's internals (compiler.cc binds names, planner.cc places the work): a
// parsed query to advice (Pivot Tracing §3, "Advice"; §4, Table 3).
//
// Each alias bound to tracepoints, and each joined query, becomes a unit (advice.h); a
// join `On y -> x` makes y's unit a child of x's, whose advice unpacks what y's packs. The
// plan is then made in three steps, the same with and without optimization except for
// where things are placed:
//   1. Place each conjunct of a Where at a unit. Unoptimized: the query's root. Optimized:
//      the lowest unit whose row has every variable it reads, as long as every join from
//      there up to the query's root keeps all tuples (Table 3's σ_p and σ_q: a filter
//      below a First or MostRecent join would change which tuple is first).
//   2. Place each aggregate of the answered query. Unoptimized: the root. Optimized: the
//      lowest unit whose row has its argument, under joins that all keep all tuples; its
//      tuples then carry a partial aggregate that the units above combine (Table 3's A_p,
//      GA_p, G_q A_p), and tuples whose packed values are equal merge into one with a
//      multiplicity (Π and G_p: GA_q packs nothing but the multiplicity).
//   3. Require every variable where it is read; a unit packs exactly what the units above
//      it read (projection, Table 3's Π).
// optimizer.h names the placement rules; docs/query.md shows each rewrite.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "query/advice.h"
#include "query/query.h"

namespace weft::query::internal {

struct AliasBinding {
  std::string name;
  int32_t unit = -1;
  bool is_query = false;             // bound to a joined query, not to tracepoints
  std::vector<std::string> columns;  // is_query: the joined query's Select names
};

// One query being compiled: the answered one, an instance of a named query, a subquery.
struct Scope {
  const Query* query = nullptr;
  int32_t root = -1;
  std::vector<AliasBinding> aliases;

  const AliasBinding* Find(std::string_view name) const {
    for (const AliasBinding& b : aliases) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }
  std::vector<std::string> AliasNames() const {
    std::vector<std::string> names;
    for (const AliasBinding& b : aliases) names.push_back(b.name);
    return names;
  }
};

// A row column's identity: the scope it was named in and its name ("q.http.url"), so that
// a subquery's aliases never collide with the outer query's.
struct Column {
  int32_t scope = 0;
  std::string name;
  auto operator<=>(const Column&) const = default;
};

struct ColumnOrigin {
  int32_t unit = -1;         // the unit that observes it, or the joined query's root unit
  bool is_query = false;     // an output of a joined query: it appears in the parent's row
  int32_t select_item = -1;  // is_query: which Select item of that query computes it
  int32_t inner_scope = -1;  // is_query: the joined query's scope
};

// Per unit, what only the compiler needs.
struct UnitPlan {
  int32_t scope = -1;
  std::vector<Column> observed;  // its own variables, in order of first use
  std::vector<Column> outputs;   // what it packs, in order of first requirement
  std::set<Column> needed;       // what its row must hold
  std::vector<std::pair<const Expr*, int32_t>> before, after;  // conjuncts and their scope
  // A joined query's root: the scope whose alias names its columns, and that alias.
  int32_t outer_scope = -1;
  std::string outer_alias;
};

bool HasAggregate(const Expr& e);
// The conjuncts of an and-tree, and every variable an expression reads.
void Conjuncts(const Expr& e, std::vector<const Expr*>& out);
void Variables(const Expr& e, std::vector<const Expr*>& out);
std::string_view AggregateName(AggregateOp op);

class Compiler {
 public:
  Compiler(const Program& program, std::span<const Tracepoint> tracepoints,
           const CompileOptions& options);

  Result<std::shared_ptr<const CompiledQuery>> Run();

 private:
  // Binding (compiler.cc): names to tracepoints, units and columns.
  Status Fail(SourceLocation where, std::string message);
  Result<std::vector<uint32_t>> ResolveTracepoints(const Source& source);
  int32_t NewUnit(std::string alias, std::vector<uint32_t> tracepoints, int32_t scope);
  // Builds the units of `query` (and of the queries it joins); returns its scope. It may
  // join the named queries defined before statement `visible`.
  Result<int32_t> BuildQuery(const Query& query, bool answered, size_t visible);
  Status ConnectJoins(int32_t s);
  Status CheckClauses(const Query& query, bool answered);
  // The exports of a union of tracepoints, the first tracepoint's order first.
  std::vector<std::string> Exports(const std::vector<uint32_t>& tracepoints) const;
  // The column a variable names in scope `s`; registers what the tracepoint must observe.
  Result<Column> Resolve(const Expr& var, int32_t s);
  void Observe(int32_t unit, const Column& column, const std::string& field);
  Status ResolveVariables(const Query& query, int32_t s);

  // Planning (planner.cc): where each condition, aggregate and column goes.
  // The unit whose row first holds `column`.
  int32_t Home(const Column& column) const;
  Result<std::vector<Column>> ColumnsOf(const Expr& e, int32_t s);
  std::vector<int32_t> Homes(const std::vector<Column>& columns) const;
  Status PlaceConjuncts(int32_t s);
  Status PlanEmit(const Query& query);
  // No Select: every variable of every alias of the answered query, in alias order.
  Status PlanSelectAll();
  Status PlanAggregate(const Expr& e);
  int32_t ChildIndex(int32_t parent, int32_t child) const;
  // Makes `column` part of unit `at`'s row: the children between it and where the column
  // comes from pack it.
  Status Require(int32_t at, const Column& column);
  // Unoptimized, a joined query passes on every column it selects (Pivot's plain
  // compilation: PACK what the join unpacks, whether read or not).
  void RequireAllOutputs();
  // The rows, and every expression compiled against them.
  Status LayOut();
  // A variable observed only for a column nobody reads (a joined query's Select item that
  // the optimized plan does not pack) is not observed at all.
  static void KeepNeededObservations(Unit& unit, UnitPlan& plan);
  std::vector<size_t> PostOrder() const;
  static CompiledExpr ColumnExpr(uint32_t column, const std::string& name);
  Result<CompiledExpr> CompileExpr(const Expr& expr, int32_t scope,
                                   const std::map<Column, uint32_t>& row);
  Result<int32_t> CompileNode(const Expr& expr, int32_t scope,
                              const std::map<Column, uint32_t>& row, CompiledExpr& out);
  // Per tracepoint, its units in pre-order from the root.
  void Weave();

  const Program& program_;
  const CompileOptions& options_;
  std::shared_ptr<CompiledQuery> out_;
  std::vector<std::string> tracepoint_names_;
  std::map<std::string, size_t> named_;
  int depth_ = 0;
  std::vector<Scope> scopes_;
  std::vector<UnitPlan> plans_;
  std::map<Column, ColumnOrigin> origins_;
  std::vector<const Expr*> pending_group_keys_;
  std::vector<std::pair<const Expr*, Column>> pending_plain_;
  std::vector<const Expr*> pending_aggregate_args_;
};

}  // namespace weft::query::internal
