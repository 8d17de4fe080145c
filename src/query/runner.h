// The per-event work of advice (Pivot Tracing §5, "Materializing Advice"), shared by the
// offline Evaluator (query.h) and the live agents (pivot/): when a tracepoint fires, each
// unit woven there runs OBSERVE, FILTER, UNPACK, FILTER, then PACK into the baggage or,
// for the answered query's root, EMIT to a sink.
//
// What differs between the two sides stays outside: where the exports come from (a
// replayed event offline, the firing tracepoint's arguments live), which baggage the
// event runs on, and what is done with emitted tuples (the Evaluator's groups offline,
// an agent's per-interval partial aggregates live).
//
// Several queries can share one request's baggage: each runner reads and writes only the
// slots [slot_base, slot_base + units) (unit u packs into slot slot_base + u), so queries
// with disjoint slot ranges never see each other's tuples.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "query/advice.h"
#include "query/baggage.h"
#include "query/result.h"

namespace weft::query {

// The variables the firing event exports, by export id of the tracepoint the query was
// compiled against.
class EventExports {
 public:
  virtual ~EventExports() = default;
  // OBSERVE: out[j] = the export `ids[j]`; Null for kNoExport or a variable the event
  // lacks. One call per unit, so a source pays one indirect call per unit, not per column.
  virtual void Observe(std::span<const uint32_t> ids, Value* out) const = 0;
};

// Receives the answered query's tuples. `key`: the GroupBy expressions when the query
// aggregates, else the Select expressions, evaluated over the row. `mult`: how many
// tuples this one stands for (the product of the unpacked tuples' multiplicities).
// `partials`: one per aggregate (CompiledQuery::aggregates); COUNT's is empty, since the
// multiplicity counts. The spans are valid only during the call; their string values
// point into the tracepoint's arguments or the baggage, so a sink that keeps them copies
// the strings.
class EmitSink {
 public:
  virtual ~EmitSink() = default;
  virtual void Emit(std::span<const Value> key, double mult,
                    std::span<const PartialAggregate> partials) = 0;
};

struct RunnerOptions {
  // The first baggage slot of this query.
  uint32_t slot_base = 0;
  // Where the order stamps of packed tuples come from: unset, a counter of the runner's
  // own that the caller sets per step (set_stamp; offline replay). Set, a counter shared
  // by every thread of the process (live: a tuple packed after another on any thread, as
  // happened-before orders them, gets a larger stamp).
  std::atomic<int64_t>* shared_stamps = nullptr;
  // Track the most tuples a baggage held (EvaluationCounters::baggage_tuples_*). Costs a
  // walk over the baggage per PACK; offline only.
  bool track_baggage_size = true;
  // Applied to every value PACK puts in the baggage (partials' min and max too), so that
  // its strings outlive the event (live: interned). Not to what EMIT passes: a sink copies
  // what it keeps (EmitSink), and most emits only add to a group it has already.
  Value (*keep_value)(const Value&) = nullptr;
};

// Runs one compiled query's advice. Holds scratch rows, so it is not thread-safe: one
// runner per thread (they may share the CompiledQuery).
class AdviceRunner {
 public:
  AdviceRunner(std::shared_ptr<const CompiledQuery> query, RunnerOptions options = {});
  ~AdviceRunner();
  AdviceRunner(AdviceRunner&&) noexcept;

  const CompiledQuery& query() const { return *query_; }

  // Runs every unit woven at `tracepoint` (an index into the tracepoints the query was
  // compiled against), parents before children. Counts an event if any is woven there.
  void Fire(uint32_t tracepoint, const EventExports& exports, Baggage& bag, EmitSink& sink);
  // One unit: `variant` is which of the unit's tracepoints fired (CompiledQuery::Woven).
  void RunUnit(int32_t unit, uint32_t variant, const EventExports& exports, Baggage& bag,
               EmitSink& sink);

  // The order stamp of the next tuple packed (with no shared counter).
  void set_stamp(int64_t stamp) { stamp_ = stamp; }
  EvaluationCounters& counters() { return counters_; }
  // The most tuples a baggage held after a PACK since the last reset (track_baggage_size).
  size_t baggage_max() const { return baggage_max_; }
  void reset_baggage_max() { baggage_max_ = 0; }

 private:
  struct Scratch;

  void Pack(int32_t u, const Value* row, std::span<const size_t> pick, double mult, Baggage& bag);
  void Emit(const Value* row, std::span<const size_t> pick, double mult, EmitSink& sink);
  PartialAggregate Partial(int32_t u, uint32_t aggregate, const PartialSource& s, const Value* row,
                           std::span<const size_t> pick, double mult) const;

  std::shared_ptr<const CompiledQuery> query_;
  RunnerOptions options_;
  std::unique_ptr<Scratch> scratch_;
  int64_t stamp_ = 0;
  size_t baggage_max_ = 0;
  EvaluationCounters counters_;
};

// Adds `part`, scaled by `scale`, into `into` (sums and weights add; min and max).
void CombinePartial(PartialAggregate& into, const PartialAggregate& part, double scale);

}  // namespace weft::query
