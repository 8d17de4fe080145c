// What a tracepoint costs the program it is in (Pivot Tracing §6.2, Figure 10 and Table 5):
// with no advice woven (the common case: one relaxed atomic load and a predictable
// branch), against an empty inline function call in the same run; with a query woven
// that only observes and emits; and with advice that packs into the baggage, and packs
// then unpacks (a happened-before join within one request).
//
//   pivot_tracepoint_bench [--benchmark_repetitions=5 ...]  (Google Benchmark flags)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "pivot/current_baggage.h"
#include "pivot/live_query.h"
#include "weft/tracepoint.h"

namespace {

using weft::pivot::LiveQuery;

WEFT_TRACEPOINT(kRequest, "Bench.Request", "type", "bytes", "client");
WEFT_TRACEPOINT(kReply, "Bench.Reply", "type", "latency");

// The baseline: a call the compiler inlines, with the same arguments, each kept alive.
inline void EmptyInline(int64_t type, int64_t bytes, const char* client) {
  benchmark::DoNotOptimize(type);
  benchmark::DoNotOptimize(bytes);
  benchmark::DoNotOptimize(client);
}

std::shared_ptr<LiveQuery> Woven(const char* text) {
  auto q = LiveQuery::Make({.id = "bench", .text = text});
  if (!q.ok()) {
    std::fprintf(stderr, "pivot_tracepoint_bench: %s\n", q.status().message().c_str());
    std::abort();
  }
  (*q)->Weave();
  return *q;
}

void BM_EmptyInlineCall(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) EmptyInline(i++ & 7, 512, "c1");
}
BENCHMARK(BM_EmptyInlineCall);

void BM_TracepointNoAdvice(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    kRequest.Fire(i++ & 7, 512, "c1");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_TracepointNoAdvice);

// The same loop with the baseline's DoNotOptimize, so the two differ only in the call.
void BM_TracepointNoAdviceKept(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    int64_t type = i++ & 7;
    EmptyInline(type, 512, "c1");
    kRequest.Fire(type, 512, "c1");
  }
}
BENCHMARK(BM_TracepointNoAdviceKept);

// OBSERVE and EMIT: the firing thread aggregates into its own buffer.
void BM_TracepointObserveEmit(benchmark::State& state) {
  auto q = Woven("From r In Bench.Request Select COUNT");
  int64_t i = 0;
  for (auto _ : state) kRequest.Fire(i++ & 7, 512, "c1");
  q->Unweave();
  state.counters["events"] = double(q->TakeHarvest().events);
}
BENCHMARK(BM_TracepointObserveEmit);

void BM_TracepointObserveGroupBy(benchmark::State& state) {
  auto q = Woven("From r In Bench.Request GroupBy r.client Select r.client, SUM(r.bytes)");
  int64_t i = 0;
  for (auto _ : state) kRequest.Fire(i++ & 7, 512, "c1");
  q->Unweave();
}
BENCHMARK(BM_TracepointObserveGroupBy);

// Each iteration is one request: Bench.Request packs its type into the baggage (a join
// partner of Bench.Reply); the baggage is emptied after it, as a request's end does.
void BM_TracepointPack(benchmark::State& state) {
  auto q = Woven(
      "From p In Bench.Reply Join r In Bench.Request On r -> p GroupBy r.type "
      "Select r.type, COUNT");
  int64_t i = 0;
  for (auto _ : state) {
    kRequest.Fire(i++ & 7, 512, "c1");
    weft::pivot::CurrentBaggage().Clear();
  }
  q->Unweave();
}
BENCHMARK(BM_TracepointPack);

// The baggage emptied alone: what BM_TracepointPack adds besides the PACK.
void BM_ClearBaggage(benchmark::State& state) {
  for (auto _ : state) weft::pivot::CurrentBaggage().Clear();
}
BENCHMARK(BM_ClearBaggage);

// Pack at Bench.Request, unpack and emit at Bench.Reply: two firings per iteration.
void BM_TracepointPackUnpackEmit(benchmark::State& state) {
  auto q = Woven(
      "From p In Bench.Reply Join r In Bench.Request On r -> p GroupBy r.type "
      "Select r.type, COUNT, AVERAGE(p.latency)");
  int64_t i = 0;
  for (auto _ : state) {
    kRequest.Fire(i & 7, 512, "c1");
    kReply.Fire(i++ & 7, 1500);
    weft::pivot::CurrentBaggage().Clear();
  }
  q->Unweave();
}
BENCHMARK(BM_TracepointPackUnpackEmit);

}  // namespace

BENCHMARK_MAIN();
