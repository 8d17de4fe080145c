// Planning: where each condition, aggregate and column of a bound query goes, and the
// advice that results (compiler.h has the design; optimizer.h the rules).
#include <fmt/format.h>

#include <algorithm>

#include "query/compiler.h"
#include "query/diagnostic.h"
#include "query/optimizer.h"

namespace weft::query::internal {

// The unit whose row first holds `column`.
int32_t Compiler::Home(const Column& column) const {
  const ColumnOrigin& o = origins_.at(column);
  return o.is_query ? out_->units[o.unit].parent : o.unit;
}

Result<std::vector<Column>> Compiler::ColumnsOf(const Expr& e, int32_t s) {
  std::vector<const Expr*> vars;
  Variables(e, vars);
  std::vector<Column> columns;
  for (const Expr* v : vars) {
    WEFT_ASSIGN_OR_RETURN(Column c, Resolve(*v, s));
    columns.push_back(std::move(c));
  }
  return columns;
}

std::vector<int32_t> Compiler::Homes(const std::vector<Column>& columns) const {
  std::vector<int32_t> homes;
  for (const Column& c : columns) homes.push_back(Home(c));
  return homes;
}

Status Compiler::PlaceConjuncts(int32_t s) {
  const Query& query = *scopes_[s].query;
  if (query.where_clause == nullptr) return Status::Ok();
  std::vector<const Expr*> conjuncts;
  Conjuncts(*query.where_clause, conjuncts);
  for (const Expr* c : conjuncts) {
    WEFT_ASSIGN_OR_RETURN(std::vector<Column> columns, ColumnsOf(*c, s));
    int32_t root = scopes_[s].root;
    int32_t at = root;
    bool before_unpack = false;
    if (options_.optimize) {
      at = PushDownTarget(out_->units, LowestCommonUnit(out_->units, Homes(columns), root), root);
      before_unpack = std::all_of(columns.begin(), columns.end(), [&](const Column& col) {
        const ColumnOrigin& o = origins_.at(col);
        return !o.is_query && o.unit == at;
      });
    }
    (before_unpack ? plans_[at].before : plans_[at].after).push_back({c, s});
    for (const Column& col : columns) WEFT_RETURN_IF_ERROR(Require(at, col));
  }
  return Status::Ok();
}

Status Compiler::PlanEmit(const Query& query) {
  EmitSpec& emit = out_->emit;
  const int32_t root = 0;
  emit.aggregated = !query.group_by.empty() ||
                    std::any_of(query.select.begin(), query.select.end(), [](const SelectItem& i) {
                      return i.expr->kind == ExprKind::kAggregate;
                    });
  for (const ExprPtr& g : query.group_by) {
    WEFT_ASSIGN_OR_RETURN(std::vector<Column> columns, ColumnsOf(*g, 0));
    for (const Column& c : columns) WEFT_RETURN_IF_ERROR(Require(root, c));
    pending_group_keys_.push_back(g.get());
  }
  if (query.select.empty()) return PlanSelectAll();
  for (const SelectItem& item : query.select) {
    const Expr& e = *item.expr;
    EmitSpec::Column column;
    column.name = item.name;
    if (e.kind == ExprKind::kAggregate) {
      WEFT_RETURN_IF_ERROR(PlanAggregate(e));
      column.aggregate = int32_t(out_->aggregates.size() - 1);
    } else if (emit.aggregated) {
      for (size_t k = 0; k < query.group_by.size(); ++k) {
        if (query.group_by[k]->text == e.text) column.group_key = int32_t(k);
      }
      if (column.group_key < 0) {
        return Fail(e.where, fmt::format("'{}' must be in GroupBy or inside an aggregate", e.text));
      }
    } else {
      WEFT_ASSIGN_OR_RETURN(std::vector<Column> columns, ColumnsOf(e, 0));
      for (const Column& c : columns) WEFT_RETURN_IF_ERROR(Require(root, c));
      column.expr = int32_t(pending_plain_.size());
      pending_plain_.push_back({&e, {}});
    }
    emit.columns.push_back(std::move(column));
  }
  // Two columns named alike ("q.http.url" and "r.http.url" are both "http.url") keep
  // their alias.
  std::vector<bool> clash(query.select.size());
  for (size_t i = 0; i < query.select.size(); ++i) {
    for (size_t j = 0; j < query.select.size(); ++j) {
      clash[i] = clash[i] || (i != j && emit.columns[i].name == emit.columns[j].name);
    }
  }
  for (size_t i = 0; i < query.select.size(); ++i) {
    const Expr& e = *query.select[i].expr;
    if (clash[i] && e.kind == ExprKind::kVariable && query.select[i].name == e.field) {
      emit.columns[i].name = e.text;
    }
  }
  return Status::Ok();
}

// No Select: every variable of every alias of the answered query, in alias order.
Status Compiler::PlanSelectAll() {
  if (out_->emit.aggregated) {
    return Fail(scopes_[0].query->where, "a query with GroupBy needs a Select");
  }
  for (const AliasBinding& b : scopes_[0].aliases) {
    std::vector<std::string> fields =
        b.is_query ? b.columns : Exports(out_->units[b.unit].tracepoints);
    for (const std::string& field : fields) {
      Expr var;
      var.kind = ExprKind::kVariable;
      var.alias = b.name;
      var.field = field;
      WEFT_ASSIGN_OR_RETURN(Column c, Resolve(var, 0));
      WEFT_RETURN_IF_ERROR(Require(0, c));
      EmitSpec::Column column;
      column.name = c.name;
      column.expr = int32_t(pending_plain_.size());
      pending_plain_.push_back({nullptr, c});
      out_->emit.columns.push_back(std::move(column));
    }
  }
  return Status::Ok();
}

Status Compiler::PlanAggregate(const Expr& e) {
  AggregateSpec spec;
  spec.op = e.aggregate;
  spec.text = e.args.empty() ? std::string(AggregateName(e.aggregate))
                             : fmt::format("{}({})", AggregateName(e.aggregate), e.args[0]->text);
  std::vector<Column> columns;
  if (!e.args.empty()) {
    WEFT_ASSIGN_OR_RETURN(columns, ColumnsOf(*e.args[0], 0));
  } else if (e.aggregate != AggregateOp::kCount) {
    return Fail(e.where, fmt::format("{} needs an argument", AggregateName(e.aggregate)));
  }
  int32_t at = 0;
  if (options_.optimize && !columns.empty()) {
    at = PushDownTarget(out_->units, LowestCommonUnit(out_->units, Homes(columns), 0), 0);
  }
  spec.pushed_to = at == 0 ? -1 : at;
  for (const Column& c : columns) WEFT_RETURN_IF_ERROR(Require(at, c));
  uint32_t g = uint32_t(out_->aggregates.size());
  out_->aggregates.push_back(std::move(spec));
  pending_aggregate_args_.push_back(e.args.empty() ? nullptr : e.args[0].get());
  // The partial travels up from `at` to the root, combined by each unit on the way.
  PartialSource source;
  for (int32_t u = at, below = -1; u != 0; below = u, u = out_->units[u].parent) {
    Unit& unit = out_->units[u];
    if (below >= 0)
      source = {ChildIndex(u, below), uint32_t(out_->units[below].partials.size() - 1)};
    unit.partials.push_back(g);
    unit.partial_sources.push_back(source);
    if (out_->units[u].parent == 0) {
      out_->emit.aggregate_sources.push_back(
          {ChildIndex(0, u), uint32_t(unit.partials.size() - 1)});
    }
  }
  if (at == 0) out_->emit.aggregate_sources.push_back({});
  return Status::Ok();
}

int32_t Compiler::ChildIndex(int32_t parent, int32_t child) const {
  const auto& children = out_->units[parent].children;
  return int32_t(std::find(children.begin(), children.end(), child) - children.begin());
}

// Makes `column` part of unit `at`'s row: the children between it and where the column
// comes from pack it.
Status Compiler::Require(int32_t at, const Column& column) {
  UnitPlan& plan = plans_[at];
  if (!plan.needed.insert(column).second) return Status::Ok();
  const ColumnOrigin& origin = origins_.at(column);
  if (!origin.is_query && origin.unit == at) return Status::Ok();
  int32_t child = origin.unit;
  while (child >= 0 && out_->units[child].parent != at) child = out_->units[child].parent;
  if (child < 0) return Status::Internal("query compiler: {} is not below {}", column.name, at);
  UnitPlan& child_plan = plans_[child];
  if (std::find(child_plan.outputs.begin(), child_plan.outputs.end(), column) !=
      child_plan.outputs.end()) {
    return Status::Ok();
  }
  child_plan.outputs.push_back(column);
  if (origin.is_query && origin.unit == child) {
    // A joined query's column: its Select item, computed from the joined query's row.
    const Query& inner = *scopes_[origin.inner_scope].query;
    WEFT_ASSIGN_OR_RETURN(
        std::vector<Column> columns,
        ColumnsOf(*inner.select[size_t(origin.select_item)].expr, origin.inner_scope));
    for (const Column& c : columns) WEFT_RETURN_IF_ERROR(Require(child, c));
    return Status::Ok();
  }
  return Require(child, column);
}

// Unoptimized, a joined query passes on every column it selects (Pivot's plain
// compilation: PACK what the join unpacks, whether read or not).
void Compiler::RequireAllOutputs() {
  for (size_t u = 0; u < plans_.size(); ++u) {
    const UnitPlan& plan = plans_[u];
    if (plan.outer_scope < 0) continue;
    const AliasBinding* b = scopes_[plan.outer_scope].Find(plan.outer_alias);
    for (const std::string& name : b->columns) {
      Expr var;
      var.kind = ExprKind::kVariable;
      var.alias = plan.outer_alias;
      var.field = name;
      Result<Column> c = Resolve(var, plan.outer_scope);
      if (c.ok()) (void)Require(out_->units[u].parent, *c);
    }
  }
}

// The rows, and every expression compiled against them.
Status Compiler::LayOut() {
  std::vector<std::map<Column, uint32_t>> rows(out_->units.size());
  // Children before parents: a parent's row holds its children's outputs.
  for (size_t i : PostOrder()) {
    Unit& unit = out_->units[i];
    UnitPlan& plan = plans_[i];
    KeepNeededObservations(unit, plan);
    uint32_t column = 0;
    for (const Column& c : plan.observed) rows[i][c] = column++;
    for (int32_t child : unit.children) {
      unit.child_column.push_back(column);
      for (const Column& c : plans_[child].outputs) rows[i][c] = column++;
    }
    unit.row_width = column;
    for (auto& [expr, scope] : plan.before) {
      WEFT_ASSIGN_OR_RETURN(CompiledExpr e, CompileExpr(*expr, scope, rows[i]));
      unit.filter_before_unpack.push_back(std::move(e));
    }
    for (auto& [expr, scope] : plan.after) {
      WEFT_ASSIGN_OR_RETURN(CompiledExpr e, CompileExpr(*expr, scope, rows[i]));
      unit.filter.push_back(std::move(e));
    }
    if (i == 0) continue;
    if (options_.optimize && unit.mode == PackMode::kAll &&
        KeepsAllTuplesToRoot(out_->units, int32_t(i))) {
      unit.mode = PackMode::kGrouped;
    }
    for (const Column& c : plan.outputs) {
      const ColumnOrigin& origin = origins_.at(c);
      CompiledExpr e;
      if (origin.is_query && origin.unit == int32_t(i)) {
        const Query& inner = *scopes_[origin.inner_scope].query;
        WEFT_ASSIGN_OR_RETURN(e, CompileExpr(*inner.select[size_t(origin.select_item)].expr,
                                             origin.inner_scope, rows[i]));
      } else {
        e = ColumnExpr(rows[i].at(c), c.name);
      }
      unit.outputs.push_back(std::move(e));
      unit.output_names.push_back(c.name);
    }
  }
  EmitSpec& emit = out_->emit;
  for (const Expr* g : pending_group_keys_) {
    WEFT_ASSIGN_OR_RETURN(CompiledExpr e, CompileExpr(*g, 0, rows[0]));
    emit.group_keys.push_back(std::move(e));
  }
  for (const auto& [expr, column] : pending_plain_) {
    if (expr != nullptr) {
      WEFT_ASSIGN_OR_RETURN(CompiledExpr e, CompileExpr(*expr, 0, rows[0]));
      emit.plain.push_back(std::move(e));
    } else {
      emit.plain.push_back(ColumnExpr(rows[0].at(column), column.name));
    }
  }
  for (size_t g = 0; g < pending_aggregate_args_.size(); ++g) {
    CompiledExpr e;
    if (const Expr* arg = pending_aggregate_args_[g]) {
      int32_t at = std::max(out_->aggregates[g].pushed_to, 0);
      WEFT_ASSIGN_OR_RETURN(e, CompileExpr(*arg, 0, rows[size_t(at)]));
    }
    out_->aggregate_args.push_back(std::move(e));
  }
  return Status::Ok();
}

// A variable observed only for a column nobody reads (a joined query's Select item that
// the optimized plan does not pack) is not observed at all.
void Compiler::KeepNeededObservations(Unit& unit, UnitPlan& plan) {
  std::vector<Column> observed;
  std::vector<std::string> names;
  std::vector<std::vector<uint32_t>> ids(unit.observe.size());
  for (size_t j = 0; j < plan.observed.size(); ++j) {
    if (plan.needed.count(plan.observed[j]) == 0) continue;
    observed.push_back(plan.observed[j]);
    names.push_back(unit.observe_names[j]);
    for (size_t k = 0; k < ids.size(); ++k) ids[k].push_back(unit.observe[k][j]);
  }
  plan.observed = std::move(observed);
  unit.observe_names = std::move(names);
  unit.observe = std::move(ids);
}

std::vector<size_t> Compiler::PostOrder() const {
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> stack{{0, 0}};  // unit, next child
  while (!stack.empty()) {
    auto& [u, next] = stack.back();
    const auto& children = out_->units[u].children;
    if (next < children.size()) {
      stack.push_back({size_t(children[next++]), 0});
    } else {
      order.push_back(u);
      stack.pop_back();
    }
  }
  return order;
}

CompiledExpr Compiler::ColumnExpr(uint32_t column, const std::string& name) {
  CompiledExpr e;
  CompiledExpr::Node node;
  node.kind = ExprKind::kVariable;
  node.column = column;
  e.nodes.push_back(node);
  e.columns.push_back(column);
  e.text = name;
  return e;
}

Result<CompiledExpr> Compiler::CompileExpr(const Expr& expr, int32_t scope,
                                           const std::map<Column, uint32_t>& row) {
  CompiledExpr out;
  out.text = expr.text;
  WEFT_RETURN_IF_ERROR(CompileNode(expr, scope, row, out).status());
  std::sort(out.columns.begin(), out.columns.end());
  out.columns.erase(std::unique(out.columns.begin(), out.columns.end()), out.columns.end());
  return out;
}

Result<int32_t> Compiler::CompileNode(const Expr& expr, int32_t scope,
                                      const std::map<Column, uint32_t>& row, CompiledExpr& out) {
  CompiledExpr::Node node;
  node.kind = expr.kind;
  node.unary = expr.unary;
  node.binary = expr.binary;
  switch (expr.kind) {
    case ExprKind::kLiteral:
      switch (expr.literal_type) {
        case LiteralType::kInt:
        case LiteralType::kBool:
          node.literal = Value::Int(expr.int_value);
          break;
        case LiteralType::kFloat:
          node.literal = Value::Float(expr.float_value);
          break;
        case LiteralType::kString:
          out_->literals.push_back(std::make_unique<std::string>(expr.string_value));
          node.literal = Value::String(*out_->literals.back());
          break;
      }
      break;
    case ExprKind::kVariable: {
      WEFT_ASSIGN_OR_RETURN(Column c, Resolve(expr, scope));
      auto it = row.find(c);
      if (it == row.end()) return Status::Internal("query compiler: {} not in the row", c.name);
      node.column = it->second;
      out.columns.push_back(it->second);
      break;
    }
    case ExprKind::kAggregate:
      return Fail(expr.where, "an aggregate cannot be used here");
    default: {
      WEFT_ASSIGN_OR_RETURN(node.left, CompileNode(*expr.args[0], scope, row, out));
      if (expr.args.size() > 1) {
        WEFT_ASSIGN_OR_RETURN(node.right, CompileNode(*expr.args[1], scope, row, out));
      }
    }
  }
  out.nodes.push_back(node);
  return int32_t(out.nodes.size() - 1);
}

// Per tracepoint, its units in pre-order from the root.
void Compiler::Weave() {
  out_->advice.assign(out_->tracepoints.size(), {});
  std::vector<int32_t> stack{0};
  while (!stack.empty()) {
    int32_t u = stack.back();
    stack.pop_back();
    const Unit& unit = out_->units[u];
    for (size_t k = 0; k < unit.tracepoints.size(); ++k) {
      out_->advice[unit.tracepoints[k]].push_back({u, uint32_t(k)});
    }
    for (auto it = unit.children.rbegin(); it != unit.children.rend(); ++it) stack.push_back(*it);
  }
}

}  // namespace weft::query::internal
