// What one testbed request's instrumentation costs with the case study's three queries
// woven (docs/pivot.md; bench/pivot_testbed_overhead installs the same ones): the advice at
// every tracepoint a request with one call fires, and the baggage's work at both ends of
// the call, on one thread, without the sockets, threads and processes around them. The
// testbed's servers do these steps in this order (testbed/server.cc, downstream.cc).
//
// The argument picks the shortcuts the testbed takes, as bits, so that each is measured
// on its own: 0 does it as before them, 31 as now.
//   1  replies: nothing back to a client that sent no baggage; after Reply fires, the
//      baggage serialized again but the reply re-encoded only if advice changed it
//   2  the call's branch serialized by SplitSerializeTo, not made and serialized
//   4  the reply joined undecoded (the instance the call took down is skipped), not
//      decoded whole first
//   8  after Reply fires, the baggage serialized again only if its advice packed (the
//      baggage's count of packs moved), not serialized again to be compared
//  16  a thread takes up a request's baggage by installing it in place
//      (pivot::InstalledBaggage), not by swapping it with the thread's own
// The second argument is how many of the queries are woven: 0 measures what the
// instrumentation costs a request when no query is installed (the baggage's work alone).
#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include "pivot/baggage.h"
#include "pivot/current_baggage.h"
#include "pivot/live_query.h"
#include "weft/tracepoint.h"

namespace {

using weft::pivot::Baggage;
using weft::pivot::CurrentBaggage;

WEFT_TRACEPOINT(kRequest, "Testbed.Request", "type", "bytes", "client", "server", "time");
WEFT_TRACEPOINT(kCall, "Testbed.Call", "type", "bytes", "tier", "to", "server", "replicas", "time");
WEFT_TRACEPOINT(kReply, "Testbed.Reply", "type", "status", "bytes", "latency", "server", "time");
WEFT_TRACEPOINT(kDiskRead, "Testbed.DiskRead", "type", "bytes", "server", "duration", "time");

constexpr const char* kQueries[] = {
    "From d In Testbed.DiskRead GroupBy d.server Select d.server, COUNT, SUM(d.bytes)",
    "From d In Testbed.DiskRead Join r In First(Testbed.Request) On r -> d "
    "GroupBy r.server, r.type, d.server Select r.server, r.type, d.server, COUNT",
    "From r In Testbed.Reply Join d In Testbed.DiskRead On d -> r Where r.server == \"front0\" "
    "GroupBy r.type Select r.type, COUNT, AVERAGE(r.latency)",
};

// The thread takes up a request's baggage and puts it down (RequestBaggageScope), in place
// or by a swap.
struct Scope {
  Baggage& bag;
  bool in_place;
  Baggage* previous = nullptr;
  Scope(Baggage& b, bool place) : bag(b), in_place(place) {
    if (in_place) {
      previous = weft::pivot::ExchangeCurrentBaggage(&bag);
    } else {
      swap(CurrentBaggage(), bag);
    }
  }
  ~Scope() {
    if (in_place) {
      weft::pivot::ExchangeCurrentBaggage(previous);
    } else {
      swap(CurrentBaggage(), bag);
    }
  }
};

void BM_RequestWithOneCall(benchmark::State& state) {
  const bool replies = state.range(0) & 1, split = state.range(0) & 2, join = state.range(0) & 4,
             counted = state.range(0) & 8, in_place = state.range(0) & 16;
  std::vector<std::shared_ptr<weft::pivot::LiveQuery>> queries;
  uint32_t slot_base = 0;
  for (int i = 0; i < state.range(1); ++i) {
    const char* text = kQueries[i];
    auto q = weft::pivot::LiveQuery::Make({.id = text, .text = text, .slot_base = slot_base});
    if (!q.ok()) {
      state.SkipWithError(std::string(q.status().message()).c_str());
      return;
    }
    slot_base += (*q)->slots();
    (*q)->Weave();
    queries.push_back(std::move(*q));
  }
  int64_t t = 1;
  for (auto _ : state) {
    // The front server: a request from the client, with no baggage.
    Baggage front;
    {
      Scope s(front, in_place);
      kRequest.Fire("read", 120, "127.0.0.1:4000", "front0", ++t);
    }
    std::string call;
    {
      Scope s(front, in_place);
      if (split) {
        CurrentBaggage().SplitSerializeTo(call);
      } else {
        call = CurrentBaggage().Split().Serialize();
      }
      kCall.Fire("block", 160, "storage", "storage0", "front0", "storage0,storage1", ++t);
    }
    // The storage server.
    std::string reply;
    {
      Baggage storage;
      (void)storage.Deserialize(call);
      Scope s(storage, in_place);
      kRequest.Fire("block", 160, "127.0.0.1:4001", "storage0", ++t);
      kDiskRead.Fire("block", 65536, "storage0", 0, ++t);
      const uint64_t packs = CurrentBaggage().packs();
      reply = CurrentBaggage().Serialize();
      kReply.Fire("block", "ok", 1100, 10, "storage0", ++t);
      if (!counted || CurrentBaggage().packs() != packs) {
        std::string again = CurrentBaggage().Serialize();
        if (!replies || again != reply) reply = std::move(again);
      }
    }
    // The front joins the reply and replies to the client.
    {
      Scope s(front, in_place);
      Baggage back;
      (void)back.Deserialize(reply);
      if (!join) (void)back.Decode();
      CurrentBaggage().Join(std::move(back));
      std::string to_client;
      if (!replies) to_client = CurrentBaggage().Serialize();
      kReply.Fire("read", "ok", 1100, 10, "front0", ++t);
      if (!replies) to_client = CurrentBaggage().Serialize();
      benchmark::DoNotOptimize(to_client);
    }
  }
  for (auto& q : queries) q->Unweave();
}
BENCHMARK(BM_RequestWithOneCall)
    ->Args({0, 3})
    ->Args({1, 3})
    ->Args({2, 3})
    ->Args({4, 3})
    ->Args({8, 3})
    ->Args({7, 3})
    ->Args({15, 3})
    ->Args({31, 3})
    ->Args({15, 0})
    ->Args({31, 0});

}  // namespace

BENCHMARK_MAIN();
