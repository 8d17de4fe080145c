// The cost of the live baggage (Pivot Tracing Figure 10: pack, unpack, serialize and
// deserialize of 8-byte tuples) and of the W3C baggage header, with a plain string split
// of the same header as the baseline in the same run (OpenTelemetry C++, whose parser is
// quoted at 4-20 us, is not packaged in Debian 12).
#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "pivot/baggage.h"
#include "pivot/w3c_baggage.h"

namespace {

using weft::pivot::Baggage;
using weft::pivot::W3cBaggage;
using weft::query::PackedTuples;
using weft::query::Value;

// Values that take all 8 bytes.
int64_t BigValue(int i) { return int64_t(0x1234'5678'9abc'def0) + i; }

void Fill(Baggage& b, int tuples) {
  for (int i = 0; i < tuples; ++i) {
    Value v = Value::Int(BigValue(i));
    b.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, i);
  }
}

// PACK of one tuple into the active instance (the baggage is emptied every 64 packs, which
// the figure includes, amortized).
void BM_PackOneTuple(benchmark::State& state) {
  Baggage b;
  int n = 0;
  for (auto _ : state) {
    Value v = Value::Int(BigValue(n));
    b.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, n);
    if (++n == 64) {
      b.Contents().Clear();
      n = 0;
    }
  }
}
BENCHMARK(BM_PackOneTuple);

// UNPACK of one tuple: every instance of the slot visited, the values read.
void BM_UnpackOneTuple(benchmark::State& state) {
  Baggage b;
  Fill(b, 1);
  for (auto _ : state) {
    int64_t sum = 0;
    b.Contents().ForEachInstance(0, [&](const PackedTuples& t) {
      for (size_t i = 0; i < t.size(); ++i) sum += t.Values(i)[0].i;
    });
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_UnpackOneTuple);

void BM_Serialize10Tuples(benchmark::State& state) {
  Baggage b;
  Fill(b, 10);
  std::string out;
  for (auto _ : state) {
    out.clear();
    b.SerializeTo(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = double(out.size());
}
BENCHMARK(BM_Serialize10Tuples);

// Deserialize and decode (what a process that runs advice pays).
void BM_Deserialize10Tuples(benchmark::State& state) {
  Baggage src;
  Fill(src, 10);
  std::string bytes = src.Serialize();
  Baggage b;
  for (auto _ : state) {
    (void)b.Deserialize(bytes);
    benchmark::DoNotOptimize(b.tuples());
  }
}
BENCHMARK(BM_Deserialize10Tuples);

// Deserialize, then serialize without looking inside (what a forwarding process pays).
void BM_Forward10Tuples(benchmark::State& state) {
  Baggage src;
  Fill(src, 10);
  std::string bytes = src.Serialize();
  Baggage b;
  std::string out;
  for (auto _ : state) {
    (void)b.Deserialize(bytes);
    out.clear();
    b.SerializeTo(out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Forward10Tuples);

// A request that packs one tuple, branches, packs one in the branch and joins it back
// (interval tree clock fork, two events and a join included).
void BM_PackSplitPackJoin(benchmark::State& state) {
  Baggage b;
  for (auto _ : state) {
    b.Clear();
    Fill(b, 1);
    Baggage branch = b.Split();
    Value v = Value::Int(1);
    branch.Contents().Active(0, 1, 0).Append(&v, nullptr, 1, 0);
    b.Join(std::move(branch));
    benchmark::DoNotOptimize(b.tuples());
  }
}
BENCHMARK(BM_PackSplitPackJoin);

// One RPC's baggage at both ends, as the testbed's servers handle it with the case study's
// queries: the caller packs a tuple and sends a branch, the callee decodes it, packs one
// and replies, the caller joins the reply. Arg 0: Split().Serialize() and a reply decoded
// whole before Join; arg 1: SplitSerializeTo and a reply joined undecoded (the instance
// the caller sent down is skipped by its decode).
void BM_CallAndReply(benchmark::State& state) {
  const bool shortcuts = state.range(0) == 1;
  Baggage caller;
  std::string call;
  for (auto _ : state) {
    caller.Clear();
    Fill(caller, 1);
    call.clear();
    if (shortcuts) {
      caller.SplitSerializeTo(call);
    } else {
      call = caller.Split().Serialize();
    }
    Baggage callee;
    (void)callee.Deserialize(call);
    Value v = Value::Int(BigValue(1));
    callee.Contents().Active(1, 1, 0).Append(&v, nullptr, 1, 1);
    const std::string reply = callee.Serialize();
    Baggage back;
    (void)back.Deserialize(reply);
    if (!shortcuts) (void)back.Decode();
    caller.Join(std::move(back));
    benchmark::DoNotOptimize(caller.tuples());
  }
}
BENCHMARK(BM_CallAndReply)->Arg(0)->Arg(1);

// The W3C header of the spec's example, and the same with Pivot's member carrying 10
// tuples.
std::string SpecHeader() {
  return "key1=value1;property1;property2, key2 = value2, key3=value3; "
         "propertyKey=propertyValue";
}
std::string PivotHeader() {
  Baggage b;
  Fill(b, 10);
  W3cBaggage h = W3cBaggage::Parse(SpecHeader());
  h.PutPivot(b);
  return h.Serialize();
}

void BM_W3cParse(benchmark::State& state, std::string header) {
  for (auto _ : state) {
    W3cBaggage h = W3cBaggage::Parse(header);
    benchmark::DoNotOptimize(h.size());
  }
  state.counters["bytes"] = double(header.size());
}
BENCHMARK_CAPTURE(BM_W3cParse, spec_example, SpecHeader());
BENCHMARK_CAPTURE(BM_W3cParse, with_pivot_10_tuples, PivotHeader());

// Baseline: split on ',' and '=' into owned strings, no validation at all.
void BM_W3cSplitBaseline(benchmark::State& state, std::string header) {
  for (auto _ : state) {
    std::vector<std::pair<std::string, std::string>> members;
    size_t start = 0;
    while (start <= header.size()) {
      size_t end = header.find(',', start);
      if (end == std::string::npos) end = header.size();
      std::string member = header.substr(start, end - start);
      size_t eq = member.find('=');
      members.emplace_back(member.substr(0, eq),
                           eq == std::string::npos ? "" : member.substr(eq + 1));
      start = end + 1;
    }
    benchmark::DoNotOptimize(members.data());
  }
}
BENCHMARK_CAPTURE(BM_W3cSplitBaseline, spec_example, SpecHeader());
BENCHMARK_CAPTURE(BM_W3cSplitBaseline, with_pivot_10_tuples, PivotHeader());

void BM_W3cSerialize(benchmark::State& state) {
  W3cBaggage h = W3cBaggage::Parse(PivotHeader());
  for (auto _ : state) benchmark::DoNotOptimize(h.Serialize());
}
BENCHMARK(BM_W3cSerialize);

// The whole receive path with advice: parse the header, decode Pivot's member, unpack.
void BM_W3cToTuples(benchmark::State& state) {
  std::string header = PivotHeader();
  Baggage b;
  for (auto _ : state) {
    W3cBaggage h = W3cBaggage::Parse(header);
    (void)h.GetPivot(b);
    benchmark::DoNotOptimize(b.tuples());
  }
}
BENCHMARK(BM_W3cToTuples);

}  // namespace

BENCHMARK_MAIN();
