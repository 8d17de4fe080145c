// Binding: every name of a query resolved to tracepoints, units and row columns
// (compiler.h has the design; planner.cc places the work).
#include "query/compiler.h"

#include <fmt/format.h>

#include <algorithm>

#include "query/diagnostic.h"

namespace weft::query {
namespace internal {

bool HasAggregate(const Expr& e) {
  if (e.kind == ExprKind::kAggregate) return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [](const ExprPtr& a) { return HasAggregate(*a); });
}

void Conjuncts(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::kBinary && e.binary == BinaryOp::kAnd) {
    Conjuncts(*e.args[0], out);
    Conjuncts(*e.args[1], out);
  } else {
    out.push_back(&e);
  }
}

void Variables(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::kVariable) out.push_back(&e);
  for (const ExprPtr& a : e.args) Variables(*a, out);
}

std::string_view AggregateName(AggregateOp op) {
  switch (op) {
    case AggregateOp::kCount:
      return "COUNT";
    case AggregateOp::kSum:
      return "SUM";
    case AggregateOp::kMin:
      return "MIN";
    case AggregateOp::kMax:
      return "MAX";
    case AggregateOp::kAverage:
      return "AVERAGE";
  }
  return "";
}

Compiler::Compiler(const Program& program, std::span<const Tracepoint> tracepoints,
                   const CompileOptions& options)
    : program_(program), options_(options), out_(std::make_shared<CompiledQuery>()) {
  out_->tracepoints.assign(tracepoints.begin(), tracepoints.end());
  out_->optimized = options.optimize;
  for (const Tracepoint& t : tracepoints) tracepoint_names_.push_back(t.name);
}

Result<std::shared_ptr<const CompiledQuery>> Compiler::Run() {
  if (program_.statements.empty()) return Fail({}, "the query is empty");
  for (size_t i = 0; i + 1 < program_.statements.size(); ++i) {
    named_[program_.statements[i].name] = i;
  }
  const Statement& answered = program_.statements.back();
  WEFT_RETURN_IF_ERROR(BuildQuery(answered.query, true, program_.statements.size() - 1).status());
  for (size_t s = 0; s < scopes_.size(); ++s) {
    WEFT_RETURN_IF_ERROR(PlaceConjuncts(int32_t(s)));
  }
  WEFT_RETURN_IF_ERROR(PlanEmit(answered.query));
  if (!options_.optimize) RequireAllOutputs();
  WEFT_RETURN_IF_ERROR(LayOut());
  Weave();
  return std::shared_ptr<const CompiledQuery>(std::move(out_));
}

Status Compiler::Fail(SourceLocation where, std::string message) {
  return DiagnosticStatus({where, std::move(message)}, options_.text, options_.source);
}

Result<std::vector<uint32_t>> Compiler::ResolveTracepoints(const Source& source) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < source.names.size(); ++i) {
    const std::string& name = source.names[i];
    auto it = std::find(tracepoint_names_.begin(), tracepoint_names_.end(), name);
    if (it == tracepoint_names_.end()) {
      SourceLocation where =
          i < source.name_locations.size() ? source.name_locations[i] : source.where;
      if (named_.count(name) != 0) {
        return Fail(where, fmt::format("'{}' is a named query: join it (Join x In {} On x -> ...) "
                                       "rather than reading it in From or in a union",
                                       name, name));
      }
      std::vector<std::string> known = tracepoint_names_;
      for (const auto& [n, unused] : named_) known.push_back(n);
      return Fail(where, WithSuggestion(fmt::format("unknown tracepoint '{}'", name), name, known));
    }
    uint32_t id = uint32_t(it - tracepoint_names_.begin());
    // A union names each tracepoint once, however often it is listed.
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

int32_t Compiler::NewUnit(std::string alias, std::vector<uint32_t> tracepoints, int32_t scope) {
  Unit unit;
  unit.alias = std::move(alias);
  unit.tracepoints = std::move(tracepoints);
  unit.observe.resize(unit.tracepoints.size());
  out_->units.push_back(std::move(unit));
  plans_.push_back({});
  plans_.back().scope = scope;
  return int32_t(out_->units.size() - 1);
}

// Builds the units of `query` (and of the queries it joins); returns its scope. It may
// join the named queries defined before statement `visible`.
Result<int32_t> Compiler::BuildQuery(const Query& query, bool answered, size_t visible) {
  if (++depth_ > 64) return Fail(query.where, "queries nest more than 64 deep");
  int32_t s = int32_t(scopes_.size());
  scopes_.push_back({});
  scopes_[s].query = &query;
  if (query.from.subquery != nullptr) {
    return Fail(
        query.from.where,
        "From reads tracepoints; join the subquery instead (Join x In (From ...) On x -> ...)");
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<uint32_t> from, ResolveTracepoints(query.from));
  int32_t root = NewUnit(query.from_alias, std::move(from), s);
  scopes_[s].root = root;
  scopes_[s].aliases.push_back({query.from_alias, root, false, {}});
  out_->units[root].description = answered ? "the answered query" : "";

  for (const Join& join : query.joins) {
    if (scopes_[s].Find(join.alias) != nullptr) {
      return Fail(join.alias_location, fmt::format("alias '{}' is already used", join.alias));
    }
    AliasBinding binding{join.alias, -1, false, {}};
    const Query* joined = join.source.subquery.get();
    size_t inner_visible = visible;
    std::string named;
    if (joined == nullptr && join.source.names.size() == 1) {
      auto it = named_.find(join.source.names[0]);
      if (it != named_.end() && it->second < visible) {
        joined = &program_.statements[it->second].query;
        named = it->first;
        inner_visible = it->second;
      }
    }
    if (joined != nullptr) {
      WEFT_ASSIGN_OR_RETURN(int32_t inner, BuildQuery(*joined, false, inner_visible));
      binding.unit = scopes_[inner].root;
      binding.is_query = true;
      for (const SelectItem& item : joined->select) binding.columns.push_back(item.name);
      plans_[binding.unit].outer_scope = s;
      plans_[binding.unit].outer_alias = join.alias;
      out_->units[binding.unit].description =
          named.empty() ? "a joined query" : fmt::format("named query {}", named);
    } else {
      WEFT_ASSIGN_OR_RETURN(std::vector<uint32_t> tps, ResolveTracepoints(join.source));
      binding.unit = NewUnit(join.alias, std::move(tps), s);
    }
    Unit& unit = out_->units[binding.unit];
    switch (join.filter) {
      case TemporalFilter::kAll:
        unit.mode = PackMode::kAll;
        break;
      case TemporalFilter::kFirst:
      case TemporalFilter::kFirstN:
        unit.mode = PackMode::kFirst;
        break;
      case TemporalFilter::kMostRecent:
      case TemporalFilter::kMostRecentN:
        unit.mode = PackMode::kRecent;
        break;
    }
    unit.n = join.filter == TemporalFilter::kFirst || join.filter == TemporalFilter::kMostRecent
                 ? 1
                 : join.n;
    if (unit.mode != PackMode::kAll && unit.n == 0) {
      return Fail(join.where, "FirstN and MostRecentN need a count of at least 1");
    }
    scopes_[s].aliases.push_back(std::move(binding));
  }
  WEFT_RETURN_IF_ERROR(ConnectJoins(s));
  WEFT_RETURN_IF_ERROR(CheckClauses(query, answered));
  WEFT_RETURN_IF_ERROR(ResolveVariables(query, s));
  --depth_;
  return s;
}

Status Compiler::ConnectJoins(int32_t s) {
  const Query& query = *scopes_[s].query;
  for (const Join& join : query.joins) {
    const AliasBinding* self = scopes_[s].Find(join.alias);
    if (join.before != join.alias) {
      if (join.after == join.alias) {
        return Fail(join.before_location,
                    fmt::format("the joined alias comes first, as in On {} -> {} ({} happened "
                                "before {})",
                                join.alias, join.before, join.alias, join.before));
      }
      return Fail(
          join.before_location,
          fmt::format("the left of '->' must be this join's alias: On {} -> ...", join.alias));
    }
    const AliasBinding* target = scopes_[s].Find(join.after);
    if (target == nullptr) {
      return Fail(join.after_location, WithSuggestion(fmt::format("unknown alias '{}'", join.after),
                                                      join.after, scopes_[s].AliasNames()));
    }
    if (target == self) return Fail(join.after_location, "a join cannot happen before itself");
    if (target->is_query) {
      return Fail(
          join.after_location,
          fmt::format("'{}' is a joined query; join to an alias inside it instead", join.after));
    }
    out_->units[self->unit].parent = target->unit;
  }
  // Every join must lead to the From alias.
  for (const Join& join : query.joins) {
    int32_t u = scopes_[s].Find(join.alias)->unit;
    for (size_t steps = 0; u != scopes_[s].root; ++steps) {
      if (steps > query.joins.size()) return Fail(join.where, "these joins form a cycle");
      u = out_->units[u].parent;
    }
  }
  for (const Join& join : query.joins) {
    int32_t u = scopes_[s].Find(join.alias)->unit;
    out_->units[out_->units[u].parent].children.push_back(u);
  }
  return Status::Ok();
}

Status Compiler::CheckClauses(const Query& query, bool answered) {
  if (query.where_clause != nullptr && HasAggregate(*query.where_clause)) {
    return Fail(query.where_clause->where,
                "an aggregate cannot be in Where; filter before aggregating");
  }
  for (const ExprPtr& g : query.group_by) {
    if (HasAggregate(*g)) return Fail(g->where, "an aggregate cannot be in GroupBy");
  }
  for (const SelectItem& item : query.select) {
    const Expr& e = *item.expr;
    if (e.kind == ExprKind::kAggregate) {
      if (!answered) {
        return Fail(e.where,
                    "a joined query cannot aggregate; aggregate in the query that joins it");
      }
      if (!e.args.empty() && HasAggregate(*e.args[0]))
        return Fail(e.where, "aggregates cannot nest");
    } else if (HasAggregate(e)) {
      return Fail(e.where, "an aggregate must stand alone in Select (SUM(x), not SUM(x) / 2)");
    }
  }
  if (!answered) {
    if (query.select.empty()) {
      return Fail(query.where, "a joined query needs a Select naming what it passes on");
    }
    if (!query.group_by.empty()) {
      return Fail(query.group_by[0]->where,
                  "a joined query cannot group; group in the query that joins it");
    }
    std::set<std::string> names;
    for (const SelectItem& item : query.select) {
      if (!names.insert(item.name).second) {
        return Fail(item.expr->where,
                    fmt::format("two columns are named '{}'; name one with As", item.name));
      }
    }
  }
  return Status::Ok();
}

// The exports of a union of tracepoints, the first tracepoint's order first.
std::vector<std::string> Compiler::Exports(const std::vector<uint32_t>& tracepoints) const {
  std::vector<std::string> names;
  for (uint32_t t : tracepoints) {
    for (const std::string& e : out_->tracepoints[t].exports) {
      if (std::find(names.begin(), names.end(), e) == names.end()) names.push_back(e);
    }
  }
  return names;
}

// The column a variable names in scope `s`; registers what the tracepoint must observe.
Result<Column> Compiler::Resolve(const Expr& var, int32_t s) {
  const AliasBinding* b = scopes_[s].Find(var.alias);
  if (b == nullptr) {
    return Fail(var.where, WithSuggestion(fmt::format("unknown alias '{}'", var.alias), var.alias,
                                          scopes_[s].AliasNames()));
  }
  if (!b->is_query) {
    if (var.field.empty()) {
      return Fail(var.where, fmt::format("'{}' is a tracepoint alias: name one of its variables, "
                                         "as in {}.timestamp",
                                         var.alias, var.alias));
    }
    std::vector<std::string> exports = Exports(out_->units[b->unit].tracepoints);
    if (std::find(exports.begin(), exports.end(), var.field) == exports.end()) {
      std::string tp = out_->tracepoints[out_->units[b->unit].tracepoints[0]].name;
      return Fail(var.where, WithSuggestion(fmt::format("{} has no variable '{}'", tp, var.field),
                                            var.field, exports));
    }
    Column column{s, var.alias + "." + var.field};
    Observe(b->unit, column, var.field);
    return column;
  }
  std::string name = var.field;
  if (name.empty()) {
    if (b->columns.size() != 1) {
      return Fail(var.where, fmt::format("'{}' has {} columns: name one, as in {}.{}", var.alias,
                                         b->columns.size(), var.alias, b->columns[0]));
    }
    name = b->columns[0];
  }
  auto it = std::find(b->columns.begin(), b->columns.end(), name);
  if (it == b->columns.end()) {
    return Fail(var.where, WithSuggestion(fmt::format("'{}' has no column '{}'", var.alias, name),
                                          name, b->columns));
  }
  Column column{s, var.alias + "." + name};
  ColumnOrigin& origin = origins_[column];
  origin.unit = b->unit;
  origin.is_query = true;
  origin.select_item = int32_t(it - b->columns.begin());
  origin.inner_scope = plans_[b->unit].scope;
  return column;
}

void Compiler::Observe(int32_t unit, const Column& column, const std::string& field) {
  UnitPlan& plan = plans_[unit];
  if (std::find(plan.observed.begin(), plan.observed.end(), column) != plan.observed.end()) return;
  plan.observed.push_back(column);
  Unit& u = out_->units[unit];
  u.observe_names.push_back(column.name);
  u.observe.resize(u.tracepoints.size());
  for (size_t k = 0; k < u.tracepoints.size(); ++k) {
    const auto& exports = out_->tracepoints[u.tracepoints[k]].exports;
    auto it = std::find(exports.begin(), exports.end(), field);
    u.observe[k].push_back(it == exports.end() ? kNoExport : uint32_t(it - exports.begin()));
  }
  origins_[column] = {unit, false, -1, -1};
}

Status Compiler::ResolveVariables(const Query& query, int32_t s) {
  std::vector<const Expr*> vars;
  if (query.where_clause) Variables(*query.where_clause, vars);
  for (const ExprPtr& g : query.group_by) Variables(*g, vars);
  for (const SelectItem& item : query.select) Variables(*item.expr, vars);
  for (const Expr* v : vars) WEFT_RETURN_IF_ERROR(Resolve(*v, s).status());
  return Status::Ok();
}

}  // namespace internal

Result<std::shared_ptr<const CompiledQuery>> Compile(const Program& program,
                                                     std::span<const Tracepoint> tracepoints,
                                                     const CompileOptions& options) {
  return internal::Compiler(program, tracepoints, options).Run();
}

ReplayNeeds NeedsOf(const CompiledQuery& query) {
  ReplayNeeds needs;
  for (const auto& woven : query.advice) needs.tracepoints.push_back(!woven.empty());
  needs.causality = query.units.size() > 1;
  return needs;
}

std::vector<std::string> ResultColumns(const CompiledQuery& query) {
  std::vector<std::string> names;
  for (const EmitSpec::Column& c : query.emit.columns) names.push_back(c.name);
  return names;
}

}  // namespace weft::query
