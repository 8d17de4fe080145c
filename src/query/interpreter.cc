// The advice interpreter (Pivot Tracing §5, "Materializing Advice"). AdviceRunner
// (runner.h) runs each unit's OBSERVE, FILTER, UNPACK, FILTER and PACK or EMIT when its
// tracepoint fires; the Evaluator replays executions through it, keeps one baggage per
// execution segment (split where the execution branches, joined where it rejoins), and
// aggregates what the answered query emits, per time interval if asked.
//
// Tuples carry a multiplicity and partial aggregates (advice.h), so that a row made of
// unpacked tuples t1..tk weighs the product of their multiplicities and an aggregate a
// child packed partially counts once per combination of the other children's tuples.
// With every multiplicity 1 and no partials (the unoptimized plan) this is the plain
// cross product, which is why the optimized plan's answer is the same.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "query/advice.h"
#include "query/baggage.h"
#include "query/query.h"
#include "query/runner.h"

namespace weft::query {
namespace {

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::span<const Value> key) const {
    size_t h = key.size();
    for (const Value& v : key) h = h * 1000003u ^ HashValue(v);
    return h;
  }
  size_t operator()(const std::vector<Value>& key) const {
    return (*this)(std::span<const Value>(key));
  }
};
struct KeyEq {
  using is_transparent = void;
  bool operator()(std::span<const Value> a, std::span<const Value> b) const {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
};

}  // namespace

void CombinePartial(PartialAggregate& into, const PartialAggregate& part, double scale) {
  into.sum += part.sum * scale;
  into.weight += part.weight * scale;
  if (!part.min.is_null() && (into.min.is_null() || CompareValues(part.min, into.min) < 0)) {
    into.min = part.min;
  }
  if (!part.max.is_null() && (into.max.is_null() || CompareValues(part.max, into.max) > 0)) {
    into.max = part.max;
  }
}

namespace {

// One value's contribution to a partial aggregate, counted `weight` times.
PartialAggregate Contribution(const Value& v, double weight) {
  PartialAggregate p;
  if (v.is_null()) return p;
  if (v.is_number()) {
    p.sum = v.AsDouble() * weight;
    p.weight = weight;
  }
  p.min = p.max = v;
  return p;
}

// Equal tuples merge only while a slot holds at most this many: merging saves baggage, and
// an unmerged duplicate is still counted right (rows weigh their multiplicities), so a
// request with thousands of distinct tuples never pays a quadratic search.
constexpr size_t kMergeLimit = 256;

// Up to this many tuples UnpackSlot sorts by insertion.
constexpr size_t kInsertionSortLimit = 16;

// What one child slot unpacked: its tuples, in order.
struct Unpacked {
  std::vector<const Value*> values;
  std::vector<double> mult;
  std::vector<const PartialAggregate*> parts;
  // Scratch: tuples merged across baggage instances, and references to sort.
  PackedTuples merged;
  std::vector<std::pair<int64_t, std::pair<const PackedTuples*, uint32_t>>> refs;
  size_t size() const { return mult.size(); }
};

}  // namespace

struct AdviceRunner::Scratch {
  std::vector<std::vector<Value>> rows;         // per unit
  std::vector<std::vector<Unpacked>> unpacked;  // per unit, per child
  std::vector<Value> pack_values;
  std::vector<PartialAggregate> pack_parts;
  std::vector<Value> key;
  std::vector<PartialAggregate> emit_parts;
};

AdviceRunner::AdviceRunner(std::shared_ptr<const CompiledQuery> query, RunnerOptions options)
    : query_(std::move(query)), options_(options), scratch_(std::make_unique<Scratch>()) {
  for (const Unit& unit : query_->units) {
    scratch_->rows.emplace_back(unit.row_width);
    scratch_->unpacked.emplace_back(unit.children.size());
  }
  scratch_->emit_parts.resize(query_->aggregates.size());
}

AdviceRunner::~AdviceRunner() = default;
AdviceRunner::AdviceRunner(AdviceRunner&&) noexcept = default;

void AdviceRunner::Fire(uint32_t tracepoint, const EventExports& exports, Baggage& bag,
                        EmitSink& sink) {
  if (tracepoint >= query_->advice.size()) return;
  const auto& woven = query_->advice[tracepoint];
  if (woven.empty()) return;
  ++counters_.events;
  for (const CompiledQuery::Woven& w : woven) RunUnit(w.unit, w.variant, exports, bag, sink);
}

namespace {

void UnpackSlot(const CompiledQuery& query, const Baggage& bag, int32_t child, uint32_t slot,
                Unpacked& out);

}  // namespace

void AdviceRunner::RunUnit(int32_t u, uint32_t variant, const EventExports& exports, Baggage& bag,
                           EmitSink& sink) {
  const Unit& unit = query_->units[size_t(u)];
  Value* row = scratch_->rows[size_t(u)].data();
  exports.Observe(unit.observe[variant], row);
  ++counters_.tuples_observed;
  for (const CompiledExpr& f : unit.filter_before_unpack) {
    if (!IsTrue(Evaluate(f, row))) return;
  }
  if (unit.children.empty()) {  // nothing to unpack: one row
    for (const CompiledExpr& f : unit.filter) {
      if (!IsTrue(Evaluate(f, row))) return;
    }
    if (u == 0) {
      Emit(row, {}, 1, sink);
    } else {
      Pack(u, row, {}, 1, bag);
    }
    return;
  }
  std::vector<Unpacked>& children = scratch_->unpacked[size_t(u)];
  for (size_t c = 0; c < unit.children.size(); ++c) {
    UnpackSlot(*query_, bag, unit.children[c], options_.slot_base + uint32_t(unit.children[c]),
               children[c]);
    if (children[c].size() == 0) return;  // a join with nothing before it: no tuples
  }
  // The cross product of the unpacked tuples, odometer order (the last child fastest).
  size_t pick_storage[16];
  std::vector<size_t> pick_heap;
  size_t* pick = pick_storage;
  if (unit.children.size() > 16) {
    pick_heap.resize(unit.children.size());
    pick = pick_heap.data();
  }
  std::fill(pick, pick + unit.children.size(), 0);
  std::span<const size_t> picked(pick, unit.children.size());
  while (true) {
    double mult = 1;
    for (size_t c = 0; c < unit.children.size(); ++c) {
      const Unpacked& t = children[c];
      const Value* v = t.values[pick[c]];
      std::copy(v, v + query_->units[size_t(unit.children[c])].outputs.size(),
                row + unit.child_column[c]);
      mult *= t.mult[pick[c]];
    }
    bool pass = true;
    for (const CompiledExpr& f : unit.filter) {
      if (!IsTrue(Evaluate(f, row))) {
        pass = false;
        break;
      }
    }
    if (pass) {
      if (u == 0) {
        Emit(row, picked, mult, sink);
      } else {
        Pack(u, row, picked, mult, bag);
      }
    }
    size_t c = unit.children.size();
    while (c > 0 && ++pick[c - 1] == children[c - 1].size()) pick[--c] = 0;
    if (c == 0) break;
  }
}

namespace {

void UnpackSlot(const CompiledQuery& query, const Baggage& bag, int32_t child, uint32_t slot,
                Unpacked& out) {
  const Unit& unit = query.units[size_t(child)];
  out.values.clear();
  out.mult.clear();
  out.parts.clear();
  out.refs.clear();
  size_t instances = 0;
  bag.ForEachInstance(slot, [&](const PackedTuples& t) {
    // Live, a slot may still hold tuples a removed query packed: another layout is not ours.
    if (t.width != unit.outputs.size() || t.partials != unit.partials.size()) return;
    ++instances;
    for (uint32_t i = 0; i < t.size(); ++i) out.refs.push_back({t.order[i], {&t, i}});
  });
  if (unit.mode == PackMode::kGrouped && instances > 1) {
    // Equal tuples from different instances merge, as they would had one branch packed
    // them all.
    PackedTuples& m = out.merged;
    m.width = uint32_t(unit.outputs.size());
    m.partials = uint32_t(unit.partials.size());
    m.values.clear();
    m.parts.clear();
    m.mult.clear();
    m.order.clear();
    for (const auto& [order, ref] : out.refs) {
      const auto& [t, i] = ref;
      int64_t at = m.size() <= kMergeLimit ? m.Find(t->Values(i)) : -1;
      if (at < 0) {
        m.Append(t->Values(i), t->Parts(i), t->mult[i], order);
      } else {
        m.mult[size_t(at)] += t->mult[i];
        for (uint32_t p = 0; p < m.partials; ++p) {
          CombinePartial(m.parts[size_t(at) * m.partials + p], t->Parts(i)[p], 1);
        }
      }
    }
    for (uint32_t i = 0; i < m.size(); ++i) {
      out.values.push_back(m.Values(i));
      out.mult.push_back(m.mult[i]);
      out.parts.push_back(m.Parts(i));
    }
    return;
  }
  // Tuples in the order they were packed, whichever instance holds them: which is first
  // or latest, and the order of the rows one event makes, follow from it.
  if (instances > 1 || unit.mode == PackMode::kFirst || unit.mode == PackMode::kRecent) {
    auto earlier = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (out.refs.size() <= kInsertionSortLimit) {
      // A request's few tuples: insertion sort (stable too) without stable_sort's buffer,
      // which it allocates on every call.
      for (size_t i = 1; i < out.refs.size(); ++i) {
        for (size_t j = i; j > 0 && earlier(out.refs[j], out.refs[j - 1]); --j)
          std::swap(out.refs[j], out.refs[j - 1]);
      }
    } else {
      std::stable_sort(out.refs.begin(), out.refs.end(), earlier);
    }
  }
  if (unit.mode == PackMode::kFirst || unit.mode == PackMode::kRecent) {
    if (out.refs.size() > unit.n) {
      if (unit.mode == PackMode::kFirst) {
        out.refs.resize(unit.n);
      } else {
        out.refs.erase(out.refs.begin(), out.refs.end() - unit.n);
      }
    }
  }
  for (const auto& [order, ref] : out.refs) {
    out.values.push_back(ref.first->Values(ref.second));
    out.mult.push_back(ref.first->mult[ref.second]);
    out.parts.push_back(ref.first->Parts(ref.second));
  }
}

}  // namespace

PartialAggregate AdviceRunner::Partial(int32_t u, uint32_t aggregate, const PartialSource& s,
                                       const Value* row, std::span<const size_t> pick,
                                       double mult) const {
  if (s.child < 0) return Contribution(Evaluate(query_->aggregate_args[aggregate], row), mult);
  // The child's partial counts once per combination of the other children's tuples.
  const std::vector<Unpacked>& children = scratch_->unpacked[size_t(u)];
  double others = 1;
  for (size_t c = 0; c < pick.size(); ++c) {
    if (int32_t(c) != s.child) others *= children[c].mult[pick[c]];
  }
  PartialAggregate p;
  CombinePartial(p, children[size_t(s.child)].parts[pick[size_t(s.child)]][s.index], others);
  return p;
}

void AdviceRunner::Pack(int32_t u, const Value* row, std::span<const size_t> pick, double mult,
                        Baggage& bag) {
  const Unit& unit = query_->units[size_t(u)];
  const uint32_t slot = options_.slot_base + uint32_t(u);
  if (unit.mode == PackMode::kFirst && bag.SlotSize(slot) >= unit.n) return;
  std::vector<Value>& pack_values = scratch_->pack_values;
  std::vector<PartialAggregate>& pack_parts = scratch_->pack_parts;
  pack_values.clear();
  for (const CompiledExpr& e : unit.outputs) pack_values.push_back(Evaluate(e, row));
  pack_parts.clear();
  for (size_t p = 0; p < unit.partials.size(); ++p) {
    pack_parts.push_back(Partial(u, unit.partials[p], unit.partial_sources[p], row, pick, mult));
  }
  if (options_.keep_value != nullptr) {
    for (Value& v : pack_values) v = options_.keep_value(v);
    for (PartialAggregate& p : pack_parts) {
      p.min = options_.keep_value(p.min);
      p.max = options_.keep_value(p.max);
    }
  }
  PackedTuples& t = bag.Active(slot, uint32_t(unit.outputs.size()), uint32_t(unit.partials.size()));
  if (unit.mode == PackMode::kGrouped && t.size() <= kMergeLimit) {
    int64_t at = t.Find(pack_values.data());
    if (at >= 0) {
      t.mult[size_t(at)] += mult;
      for (size_t p = 0; p < pack_parts.size(); ++p) {
        CombinePartial(t.parts[size_t(at) * t.partials + p], pack_parts[p], 1);
      }
      return;
    }
  }
  const int64_t stamp = options_.shared_stamps != nullptr
                            ? options_.shared_stamps->fetch_add(1, std::memory_order_relaxed)
                            : stamp_++;
  t.Append(pack_values.data(), pack_parts.data(), mult, stamp);
  ++counters_.tuples_packed;
  if (unit.mode == PackMode::kRecent && t.size() > unit.n) {
    t.Erase(0);  // the oldest: tuples are appended in the order they were packed
  }
  if (options_.track_baggage_size) baggage_max_ = std::max(baggage_max_, bag.tuples());
}

void AdviceRunner::Emit(const Value* row, std::span<const size_t> pick, double mult,
                        EmitSink& sink) {
  const EmitSpec& emit = query_->emit;
  ++counters_.tuples_emitted;
  std::vector<Value>& key = scratch_->key;
  key.clear();
  for (const CompiledExpr& e : emit.aggregated ? emit.group_keys : emit.plain)
    key.push_back(Evaluate(e, row));
  std::vector<PartialAggregate>& parts = scratch_->emit_parts;
  for (size_t a = 0; a < query_->aggregates.size(); ++a) {
    parts[a] = query_->aggregates[a].op == AggregateOp::kCount
                   ? PartialAggregate{}
                   : Partial(0, uint32_t(a), emit.aggregate_sources[a], row, pick, mult);
  }
  sink.Emit(key, mult, parts);
}

struct Evaluator::State : EmitSink {
  std::shared_ptr<const CompiledQuery> query;
  const EventSource* events;
  EvaluateOptions options;
  AdviceRunner runner;
  std::vector<Baggage> baggage;  // per segment of the current execution
  bool uses_baggage = false;
  Baggage no_baggage;  // what advice sees when the query joins nothing

  std::vector<Value> key;  // scratch

  absl::flat_hash_map<std::vector<Value>, uint32_t, KeyHash, KeyEq> groups;
  std::vector<double> group_weight;
  std::vector<PartialAggregate> group_aggregates;  // per group, one per aggregate

  double weight = 1;   // the current execution's
  uint32_t event = 0;  // the firing event
  double baggage_max_sum = 0;
  EvaluationCounters counters;

  State(std::shared_ptr<const CompiledQuery> q, const EventSource& e, EvaluateOptions o)
      : query(q), events(&e), options(o), runner(std::move(q)) {}

  void Emit(std::span<const Value> group, double mult,
            std::span<const PartialAggregate> partials) override;
};

// A replayed event's exports, read from the source on demand.
class SourceExports final : public EventExports {
 public:
  SourceExports(const EventSource& source, uint32_t tracepoint, uint32_t event)
      : source_(source), tracepoint_(tracepoint), event_(event) {}
  void Observe(std::span<const uint32_t> ids, Value* out) const override {
    for (size_t j = 0; j < ids.size(); ++j) {
      out[j] = ids[j] == kNoExport ? Value::Null() : source_.Export(tracepoint_, ids[j], event_);
    }
  }

 private:
  const EventSource& source_;
  uint32_t tracepoint_, event_;
};

Evaluator::Evaluator(std::shared_ptr<const CompiledQuery> query, const EventSource& events,
                     EvaluateOptions options)
    : state_(std::make_unique<State>(std::move(query), events, options)) {
  state_->uses_baggage = state_->query->units.size() > 1;
}

Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;

void Evaluator::Run(const Execution& execution) {
  State& s = *state_;
  s.weight = execution.weight;
  if (execution.weight < 1) s.counters.weighted = true;
  ++s.counters.requests;
  s.runner.reset_baggage_max();
  if (s.uses_baggage) {
    if (s.baggage.size() < std::max<size_t>(execution.segments, 1)) {
      s.baggage.resize(std::max<size_t>(execution.segments, 1));
    }
    s.baggage[0].Clear();
  }
  for (size_t i = 0; i < execution.steps.size(); ++i) {
    const ExecutionStep& step = execution.steps[i];
    // A step naming a segment or tracepoint the execution does not have is ignored.
    if (step.segment >= execution.segments ||
        (step.op != StepOp::kFire && step.other >= execution.segments) ||
        (step.op == StepOp::kFire && step.tracepoint >= s.query->advice.size())) {
      continue;
    }
    s.runner.set_stamp(int64_t(i) << 24);
    switch (step.op) {
      case StepOp::kFire: {
        s.event = step.event;
        Baggage& bag = s.uses_baggage ? s.baggage[step.segment] : s.no_baggage;
        s.runner.Fire(step.tracepoint, SourceExports(*s.events, step.tracepoint, step.event), bag,
                      s);
        break;
      }
      case StepOp::kBranch:
        if (s.uses_baggage) s.baggage[step.segment].SplitInto(s.baggage[step.other]);
        break;
      case StepOp::kJoin:
        if (s.uses_baggage) s.baggage[step.segment].Join(s.baggage[step.other]);
        break;
    }
  }
  s.counters.baggage_tuples_max =
      std::max<uint64_t>(s.counters.baggage_tuples_max, s.runner.baggage_max());
  s.baggage_max_sum += double(s.runner.baggage_max());
}

void Evaluator::State::Emit(std::span<const Value> group, double mult,
                            std::span<const PartialAggregate> partials) {
  key.clear();
  if (options.interval > 0) {
    TimeNs t = events->Time(event);
    int64_t k = t == kNoTime ? 0 : (t - options.origin) / options.interval;
    if (t != kNoTime && t < options.origin && (t - options.origin) % options.interval != 0) --k;
    key.push_back(Value::Int(k));
  }
  key.insert(key.end(), group.begin(), group.end());
  auto it = groups.find(std::span<const Value>(key));
  uint32_t g;
  if (it == groups.end()) {
    g = uint32_t(group_weight.size());
    groups.emplace(key, g);
    group_weight.push_back(0);
    group_aggregates.resize(group_aggregates.size() + query->aggregates.size());
  } else {
    g = it->second;
  }
  group_weight[g] += weight * mult;
  for (size_t a = 0; a < query->aggregates.size(); ++a) {
    if (query->aggregates[a].op == AggregateOp::kCount) continue;
    CombinePartial(group_aggregates[g * query->aggregates.size() + a], partials[a], weight);
  }
}

QueryResult Evaluator::Finish() && {
  State& s = *state_;
  const CompiledQuery& q = *s.query;
  QueryResult result;
  result.columns = ResultColumns(q);
  result.aggregated = q.emit.aggregated;
  const size_t n_aggregates = q.aggregates.size();
  const size_t offset = s.options.interval > 0 ? 1 : 0;
  for (const auto& [key, g] : s.groups) {
    ResultRow row;
    row.weight = s.group_weight[g];
    if (offset) row.interval_start = s.options.origin + key[0].i * s.options.interval;
    for (const EmitSpec::Column& c : q.emit.columns) {
      if (!q.emit.aggregated) {
        row.values.push_back(key[offset + size_t(c.expr)]);
      } else if (c.group_key >= 0) {
        row.values.push_back(key[offset + size_t(c.group_key)]);
      } else {
        const PartialAggregate& p = s.group_aggregates[g * n_aggregates + size_t(c.aggregate)];
        switch (q.aggregates[size_t(c.aggregate)].op) {
          case AggregateOp::kCount:  // a whole number unless requests weigh less than 1
            row.values.push_back(s.counters.weighted
                                     ? Value::Float(row.weight)
                                     : Value::Int(int64_t(std::llround(row.weight))));
            break;
          case AggregateOp::kSum:
            row.values.push_back(p.weight > 0 ? Value::Float(p.sum) : Value::Null());
            break;
          case AggregateOp::kAverage:
            row.values.push_back(p.weight > 0 ? Value::Float(p.sum / p.weight) : Value::Null());
            break;
          case AggregateOp::kMin:
            row.values.push_back(p.min);
            break;
          case AggregateOp::kMax:
            row.values.push_back(p.max);
            break;
        }
      }
    }
    result.rows.push_back(std::move(row));
  }
  std::sort(result.rows.begin(), result.rows.end(), [](const ResultRow& a, const ResultRow& b) {
    if (a.interval_start != b.interval_start) return a.interval_start < b.interval_start;
    for (size_t i = 0; i < a.values.size(); ++i) {
      int c = CompareValues(a.values[i], b.values[i]);
      if (c != 0) return c < 0;
    }
    return false;
  });
  const EvaluationCounters& r = s.runner.counters();
  result.counters = s.counters;
  result.counters.events = r.events;
  result.counters.tuples_observed = r.tuples_observed;
  result.counters.tuples_packed = r.tuples_packed;
  result.counters.tuples_emitted = r.tuples_emitted;
  if (s.counters.requests > 0) {
    result.counters.baggage_tuples_mean = s.baggage_max_sum / double(s.counters.requests);
  }
  return result;
}

}  // namespace weft::query
