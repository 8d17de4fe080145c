// A second, independent evaluation of happened-before join queries for the tests: Pivot
// Tracing's unoptimized strategy of Figure 6a. Every tracepoint event of a request is
// kept, the happened-before relation is computed from the execution's branches and joins,
// and each join is evaluated over the whole set of events, without advice or baggage. It
// reads the query's syntax tree directly, so it shares nothing with the compiler.
//
// It covers what the random query tests generate: From over tracepoints; joins to
// tracepoints or to a subquery (From, Where, Select) with any temporal filter; Where;
// GroupBy; Select with COUNT, SUM, MIN, MAX, AVERAGE. Rows made at one event are ordered
// by the order of the tuples they joined, as the interpreter orders them.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "query/ast.h"
#include "query/execution.h"
#include "query/result.h"
#include "query/value.h"

namespace weft::query::testing {

class HappenedBeforeOracle {
 public:
  HappenedBeforeOracle(const Program& program, const std::vector<Tracepoint>& tracepoints,
                       const EventSource& events)
      : query_(program.statements.back().query), tracepoints_(tracepoints), events_(events) {}

  void Run(const Execution& execution) {
    Index(execution);
    streams_.clear();
    for (const Row& row : Stream(query_, query_.from_alias)) {
      if (query_.where_clause && !Truth(Eval(*query_.where_clause, row.values))) continue;
      Emit(row.values, execution.weight);
    }
  }

  // Distinct rows with their weights, or groups with their aggregates, as QueryResult
  // sorts them.
  std::vector<ResultRow> Finish() const {
    std::vector<ResultRow> rows;
    for (const auto& [key, group] : groups_) {
      ResultRow row;
      row.weight = group.weight;
      size_t next_key = 0;
      for (size_t i = 0; i < query_.select.size(); ++i) {
        const Expr& e = *query_.select[i].expr;
        if (e.kind != ExprKind::kAggregate) {
          row.values.push_back(aggregated_ ? key[GroupIndex(e)] : key[next_key++]);
          continue;
        }
        const Aggregate& a = group.aggregates[i];
        switch (e.aggregate) {
          case AggregateOp::kCount:
            row.values.push_back(Value::Float(group.weight));
            break;
          case AggregateOp::kSum:
            row.values.push_back(a.weight > 0 ? Value::Float(a.sum) : Value::Null());
            break;
          case AggregateOp::kAverage:
            row.values.push_back(a.weight > 0 ? Value::Float(a.sum / a.weight) : Value::Null());
            break;
          case AggregateOp::kMin:
            row.values.push_back(a.min);
            break;
          case AggregateOp::kMax:
            row.values.push_back(a.max);
            break;
        }
      }
      rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(), [](const ResultRow& a, const ResultRow& b) {
      for (size_t i = 0; i < a.values.size(); ++i) {
        int c = CompareValues(a.values[i], b.values[i]);
        if (c != 0) return c < 0;
      }
      return false;
    });
    return rows;
  }

 private:
  using Values = std::map<std::string, Value>;
  struct Row {
    Values values;
    size_t fire = 0;            // the event that made it
    std::vector<size_t> order;  // then the order of what it joined
  };
  struct Fire {
    uint32_t tracepoint, event;
    std::set<size_t> before;  // fires that happened before it
  };
  struct Aggregate {
    double sum = 0, weight = 0;
    Value min, max;
  };
  struct Group {
    double weight = 0;
    std::vector<Aggregate> aggregates;
  };

  void Index(const Execution& execution) {
    fires_.clear();
    std::vector<std::set<size_t>> seen(execution.segments);
    for (const ExecutionStep& s : execution.steps) {
      switch (s.op) {
        case StepOp::kFire:
          fires_.push_back({s.tracepoint, s.event, seen[s.segment]});
          seen[s.segment].insert(fires_.size() - 1);
          break;
        case StepOp::kBranch:
          seen[s.other] = seen[s.segment];
          break;
        case StepOp::kJoin:
          seen[s.segment].insert(seen[s.other].begin(), seen[s.other].end());
          break;
      }
    }
  }

  bool Fires(const Source& source, uint32_t tracepoint) const {
    return std::any_of(source.names.begin(), source.names.end(),
                       [&](const std::string& n) { return n == tracepoints_[tracepoint].name; });
  }

  // The rows of `alias` of `query` (its own event joined with everything joined to it).
  const std::vector<Row>& Stream(const Query& query, const std::string& alias) {
    auto key = std::make_pair(&query, alias);
    auto it = streams_.find(key);
    if (it == streams_.end()) it = streams_.emplace(key, MakeStream(query, alias)).first;
    return it->second;
  }

  std::vector<Row> MakeStream(const Query& query, const std::string& alias) {
    const Source* source = &query.from;
    for (const Join& j : query.joins) {
      if (j.alias == alias) source = &j.source;
    }
    std::vector<Row> rows;
    if (source->subquery) {
      const Query& sub = *source->subquery;
      for (const Row& r : Stream(sub, sub.from_alias)) {
        if (sub.where_clause && !Truth(Eval(*sub.where_clause, r.values))) continue;
        Row out{{}, r.fire, r.order};
        for (const SelectItem& item : sub.select)
          out.values[alias + "." + item.name] = Eval(*item.expr, r.values);
        rows.push_back(std::move(out));
      }
      return rows;
    }
    for (size_t f = 0; f < fires_.size(); ++f) {
      if (!Fires(*source, fires_[f].tracepoint)) continue;
      Row own{{}, f, {}};
      const auto& exports = tracepoints_[fires_[f].tracepoint].exports;
      for (size_t k = 0; k < exports.size(); ++k) {
        own.values[alias + "." + exports[k]] =
            events_.Export(fires_[f].tracepoint, uint32_t(k), fires_[f].event);
      }
      std::vector<Row> partial{own};
      for (const Join& j : query.joins) {
        if (j.after != alias) continue;
        std::vector<Row> before;
        for (const Row& r : Stream(query, j.alias)) {
          if (fires_[f].before.count(r.fire)) before.push_back(r);
        }
        std::stable_sort(before.begin(), before.end(), [](const Row& a, const Row& b) {
          return std::tie(a.fire, a.order) < std::tie(b.fire, b.order);
        });
        size_t n =
            j.filter == TemporalFilter::kFirst || j.filter == TemporalFilter::kMostRecent ? 1 : j.n;
        if (j.filter != TemporalFilter::kAll && before.size() > n) {
          bool first = j.filter == TemporalFilter::kFirst || j.filter == TemporalFilter::kFirstN;
          before = first ? std::vector<Row>(before.begin(), before.begin() + long(n))
                         : std::vector<Row>(before.end() - long(n), before.end());
        }
        std::vector<Row> joined;
        for (const Row& p : partial) {
          for (size_t i = 0; i < before.size(); ++i) {
            Row r = p;
            r.values.insert(before[i].values.begin(), before[i].values.end());
            r.order.push_back(i);
            joined.push_back(std::move(r));
          }
        }
        partial = std::move(joined);
      }
      rows.insert(rows.end(), partial.begin(), partial.end());
    }
    return rows;
  }

  size_t GroupIndex(const Expr& e) const {
    for (size_t k = 0; k < query_.group_by.size(); ++k) {
      if (query_.group_by[k]->text == e.text) return k;
    }
    return 0;
  }

  void Emit(const Values& row, double weight) {
    aggregated_ = !query_.group_by.empty() ||
                  std::any_of(query_.select.begin(), query_.select.end(), [](const SelectItem& i) {
                    return i.expr->kind == ExprKind::kAggregate;
                  });
    std::vector<Value> key;
    if (aggregated_) {
      for (const ExprPtr& g : query_.group_by) key.push_back(Eval(*g, row));
    } else {
      for (const SelectItem& item : query_.select) key.push_back(Eval(*item.expr, row));
    }
    Group& group = groups_[key];
    group.aggregates.resize(query_.select.size());
    group.weight += weight;
    for (size_t i = 0; i < query_.select.size(); ++i) {
      const Expr& e = *query_.select[i].expr;
      if (e.kind != ExprKind::kAggregate || e.args.empty()) continue;
      Value v = Eval(*e.args[0], row);
      Aggregate& a = group.aggregates[i];
      if (v.is_null()) continue;
      if (v.is_number()) {
        a.sum += v.AsDouble() * weight;
        a.weight += weight;
      }
      if (a.min.is_null() || CompareValues(v, a.min) < 0) a.min = v;
      if (a.max.is_null() || CompareValues(v, a.max) > 0) a.max = v;
    }
  }

  static bool Truth(const Value& v) {
    return v.type == ValueType::kInt     ? v.i != 0
           : v.type == ValueType::kFloat ? v.f != 0
                                         : !v.s.empty();
  }

  // The generated queries use integers, strings, + - and comparisons.
  Value Eval(const Expr& e, const Values& row) const {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal_type == LiteralType::kString ? Value::String(e.string_value)
                                                      : Value::Int(e.int_value);
      case ExprKind::kVariable: {
        auto it = row.find(e.alias + "." + e.field);
        return it == row.end() ? Value::Null() : it->second;
      }
      case ExprKind::kUnary:
        return e.unary == UnaryOp::kNot ? Value::Int(!Truth(Eval(*e.args[0], row)))
                                        : Value::Int(-Eval(*e.args[0], row).i);
      case ExprKind::kBinary: {
        Value a = Eval(*e.args[0], row), b = Eval(*e.args[1], row);
        bool numbers = a.is_number() && b.is_number();
        bool comparable = numbers || (a.type == ValueType::kString && b.type == ValueType::kString);
        int c = comparable ? CompareValues(a, b) : 0;
        switch (e.binary) {
          case BinaryOp::kAdd:
            return numbers ? Value::Int(a.i + b.i) : Value::Null();
          case BinaryOp::kSub:
            return numbers ? Value::Int(a.i - b.i) : Value::Null();
          case BinaryOp::kEq:
            return Value::Int(a == b);
          case BinaryOp::kNe:
            return Value::Int(!(a == b));
          case BinaryOp::kLt:
            return Value::Int(comparable && c < 0);
          case BinaryOp::kLe:
            return Value::Int(comparable && c <= 0);
          case BinaryOp::kGt:
            return Value::Int(comparable && c > 0);
          case BinaryOp::kGe:
            return Value::Int(comparable && c >= 0);
          case BinaryOp::kAnd:
            return Value::Int(Truth(a) && Truth(b));
          case BinaryOp::kOr:
            return Value::Int(Truth(a) || Truth(b));
          default:
            return Value::Null();
        }
      }
      default:
        return Value::Null();
    }
  }

  const Query& query_;
  const std::vector<Tracepoint> tracepoints_;
  const EventSource& events_;
  std::vector<Fire> fires_;
  std::map<std::pair<const Query*, std::string>, std::vector<Row>> streams_;  // per Run
  std::map<std::vector<Value>, Group,
           bool (*)(const std::vector<Value>&, const std::vector<Value>&)>
      groups_{[](const std::vector<Value>& a, const std::vector<Value>& b) {
        return std::lexicographical_compare(
            a.begin(), a.end(), b.begin(), b.end(),
            [](const Value& x, const Value& y) { return CompareValues(x, y) < 0; });
      }};
  bool aggregated_ = false;
};

}  // namespace weft::query::testing
