// The compiler: a parsed query to advice (Pivot Tracing §3, "Advice"; §4, Table 3).
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
// opt_rules.h names the placement rules; docs/query.md shows each rewrite.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "query/advice.h"
#include "query/diagnostic.h"
#include "query/optimizer.h"
#include "query/query.h"

namespace weft::query {
namespace {

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

class Compiler {
 public:
  Compiler(const Program& program, std::span<const Tracepoint> tracepoints,
           const CompileOptions& options)
      : program_(program), options_(options), out_(std::make_shared<CompiledQuery>()) {
    out_->tracepoints.assign(tracepoints.begin(), tracepoints.end());
    out_->optimized = options.optimize;
    for (const Tracepoint& t : tracepoints) tracepoint_names_.push_back(t.name);
  }

  Result<std::shared_ptr<const CompiledQuery>> Run() {
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

 private:
  Status Fail(SourceLocation where, std::string message) {
    return DiagnosticStatus({where, std::move(message)}, options_.text, options_.source);
  }

  Result<std::vector<uint32_t>> ResolveTracepoints(const Source& source) {
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < source.names.size(); ++i) {
      const std::string& name = source.names[i];
      auto it = std::find(tracepoint_names_.begin(), tracepoint_names_.end(), name);
      if (it == tracepoint_names_.end()) {
        SourceLocation where =
            i < source.name_locations.size() ? source.name_locations[i] : source.where;
        if (named_.count(name) != 0) {
          return Fail(where,
                      fmt::format("'{}' is a named query: join it (Join x In {} On x -> ...) "
                                  "rather than reading it in From or in a union",
                                  name, name));
        }
        std::vector<std::string> known = tracepoint_names_;
        for (const auto& [n, unused] : named_) known.push_back(n);
        return Fail(where,
                    WithSuggestion(fmt::format("unknown tracepoint '{}'", name), name, known));
      }
      uint32_t id = uint32_t(it - tracepoint_names_.begin());
      // A union names each tracepoint once, however often it is listed.
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
  }

  int32_t NewUnit(std::string alias, std::vector<uint32_t> tracepoints, int32_t scope) {
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
  Result<int32_t> BuildQuery(const Query& query, bool answered, size_t visible) {
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

  Status ConnectJoins(int32_t s) {
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
        return Fail(join.after_location,
                    WithSuggestion(fmt::format("unknown alias '{}'", join.after), join.after,
                                   scopes_[s].AliasNames()));
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

  Status CheckClauses(const Query& query, bool answered) {
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
  std::vector<std::string> Exports(const std::vector<uint32_t>& tracepoints) const {
    std::vector<std::string> names;
    for (uint32_t t : tracepoints) {
      for (const std::string& e : out_->tracepoints[t].exports) {
        if (std::find(names.begin(), names.end(), e) == names.end()) names.push_back(e);
      }
    }
    return names;
  }

  // The column a variable names in scope `s`; registers what the tracepoint must observe.
  Result<Column> Resolve(const Expr& var, int32_t s) {
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

  void Observe(int32_t unit, const Column& column, const std::string& field) {
    UnitPlan& plan = plans_[unit];
    if (std::find(plan.observed.begin(), plan.observed.end(), column) != plan.observed.end())
      return;
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

  Status ResolveVariables(const Query& query, int32_t s) {
    std::vector<const Expr*> vars;
    if (query.where_clause) Variables(*query.where_clause, vars);
    for (const ExprPtr& g : query.group_by) Variables(*g, vars);
    for (const SelectItem& item : query.select) Variables(*item.expr, vars);
    for (const Expr* v : vars) WEFT_RETURN_IF_ERROR(Resolve(*v, s).status());
    return Status::Ok();
  }

  // The unit whose row first holds `column`.
  int32_t Home(const Column& column) const {
    const ColumnOrigin& o = origins_.at(column);
    return o.is_query ? out_->units[o.unit].parent : o.unit;
  }

  Result<std::vector<Column>> ColumnsOf(const Expr& e, int32_t s) {
    std::vector<const Expr*> vars;
    Variables(e, vars);
    std::vector<Column> columns;
    for (const Expr* v : vars) {
      WEFT_ASSIGN_OR_RETURN(Column c, Resolve(*v, s));
      columns.push_back(std::move(c));
    }
    return columns;
  }

  std::vector<int32_t> Homes(const std::vector<Column>& columns) const {
    std::vector<int32_t> homes;
    for (const Column& c : columns) homes.push_back(Home(c));
    return homes;
  }

  Status PlaceConjuncts(int32_t s) {
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

  Status PlanEmit(const Query& query) {
    EmitSpec& emit = out_->emit;
    const int32_t root = 0;
    emit.aggregated =
        !query.group_by.empty() ||
        std::any_of(query.select.begin(), query.select.end(),
                    [](const SelectItem& i) { return i.expr->kind == ExprKind::kAggregate; });
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
          return Fail(e.where,
                      fmt::format("'{}' must be in GroupBy or inside an aggregate", e.text));
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
    for (size_t i = 0; i < query.select.size(); ++i) {
      const SelectItem& item = query.select[i];
      bool clash =
          std::count_if(emit.columns.begin(), emit.columns.end(),
                        [&](const EmitSpec::Column& c) { return c.name == item.name; }) > 1;
      if (clash && item.expr->kind == ExprKind::kVariable && item.name == item.expr->field) {
        emit.columns[i].name = item.expr->text;
      }
    }
    return Status::Ok();
  }

  // No Select: every variable of every alias of the answered query, in alias order.
  Status PlanSelectAll() {
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

  Status PlanAggregate(const Expr& e) {
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

  int32_t ChildIndex(int32_t parent, int32_t child) const {
    const auto& children = out_->units[parent].children;
    return int32_t(std::find(children.begin(), children.end(), child) - children.begin());
  }

  // Makes `column` part of unit `at`'s row: the children between it and where the column
  // comes from pack it.
  Status Require(int32_t at, const Column& column) {
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
  void RequireAllOutputs() {
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
  Status LayOut() {
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
  static void KeepNeededObservations(Unit& unit, UnitPlan& plan) {
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

  std::vector<size_t> PostOrder() const {
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

  static CompiledExpr ColumnExpr(uint32_t column, const std::string& name) {
    CompiledExpr e;
    CompiledExpr::Node node;
    node.kind = ExprKind::kVariable;
    node.column = column;
    e.nodes.push_back(node);
    e.columns.push_back(column);
    e.text = name;
    return e;
  }

  Result<CompiledExpr> CompileExpr(const Expr& expr, int32_t scope,
                                   const std::map<Column, uint32_t>& row) {
    CompiledExpr out;
    out.text = expr.text;
    WEFT_RETURN_IF_ERROR(CompileNode(expr, scope, row, out).status());
    std::sort(out.columns.begin(), out.columns.end());
    out.columns.erase(std::unique(out.columns.begin(), out.columns.end()), out.columns.end());
    return out;
  }

  Result<int32_t> CompileNode(const Expr& expr, int32_t scope,
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
  void Weave() {
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

}  // namespace

Result<std::shared_ptr<const CompiledQuery>> Compile(const Program& program,
                                                     std::span<const Tracepoint> tracepoints,
                                                     const CompileOptions& options) {
  return Compiler(program, tracepoints, options).Run();
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
