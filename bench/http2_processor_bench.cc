// The HTTP/2 processor's speed (capture/protocols/http2.cc): bytes per second through
// Consume, and the HeaderBlockBytes question the preload library asks after each call, on
// a response stream of 8 interleaved streams (each a 40-byte HEADERS frame and DATA frames
// of `data` bytes), and on a request stream of HEADERS-only GETs. Fed in 64 KiB pieces, as
// a large read would bring them. Every frame is an end, so the cost is per frame. And on a
// recorded connection (tests/data/protocols/nginx_h2load.*: h2load's 1,000 GETs to nginx,
// 16 streams in flight, HPACK-compressed as real peers send them), both directions.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "capture/protocols/protocol.h"

namespace {

namespace p = weft::capture::protocols;

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string s;
  s += char(payload.size() >> 16);
  s += char(payload.size() >> 8);
  s += char(payload.size());
  s += char(type);
  s += char(flags);
  s += char(stream >> 24);
  s += char(stream >> 16);
  s += char(stream >> 8);
  s += char(stream);
  return s + payload;
}

std::string Responses(int rounds, size_t data) {
  std::string s = Frame(4, 0, 0, std::string(18, '\1'));
  for (int r = 0; r < rounds; ++r) {
    for (uint32_t k = 0; k < 8; ++k) s += Frame(1, 0x4, 1 + 2 * (8 * r + k), std::string(40, 'h'));
    for (uint32_t k = 0; k < 8; ++k)
      s += Frame(0, 0x1, 1 + 2 * (8 * r + k), std::string(data, 'd'));
  }
  return s;
}

std::string Requests(int count) {
  std::string s = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + Frame(4, 0, 0, std::string(12, '\1'));
  for (int k = 0; k < count; ++k) s += Frame(1, 0x5, 1 + 2 * uint32_t(k), std::string(30, 'h'));
  return s;
}

void Run(benchmark::State& state, p::Direction direction, const std::string& stream) {
  uint64_t ends = 0, block_bytes = 0;
  for (auto _ : state) {
    p::Parser parser;
    p::Init(&parser, p::kHttp2, direction);
    for (size_t at = 0; at < stream.size();) {
      size_t piece = stream.size() - at < 65536 ? stream.size() - at : 65536;
      const auto* data = reinterpret_cast<const uint8_t*>(stream.data()) + at;
      while (piece > 0) {
        bool ended = false;
        size_t n = p::Consume(&parser, data, piece, &ended);
        size_t begin = 0, count = 0;
        if (p::HeaderBlockBytes(&parser, &begin, &count)) block_bytes += count;
        ends += ended;
        data += n;
        piece -= n;
        at += n;
      }
    }
    if (parser.failed) state.SkipWithError("the processor failed");
  }
  benchmark::DoNotOptimize(block_bytes);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(stream.size()));
  state.counters["frames"] = benchmark::Counter(double(ends), benchmark::Counter::kIsRate);
}

void BM_InterleavedResponses(benchmark::State& state) {
  static const std::string stream = Responses(256, size_t(state.range(0)));
  Run(state, p::Direction::kResponse, stream);
}
BENCHMARK(BM_InterleavedResponses)->Arg(512);

void BM_InterleavedResponsesLargeData(benchmark::State& state) {
  static const std::string stream = Responses(64, size_t(state.range(0)));
  Run(state, p::Direction::kResponse, stream);
}
BENCHMARK(BM_InterleavedResponsesLargeData)->Arg(16384);

void BM_GetRequests(benchmark::State& state) {
  static const std::string stream = Requests(4096);
  Run(state, p::Direction::kRequest, stream);
}
BENCHMARK(BM_GetRequests);

std::string Recorded(const char* name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void BM_RecordedNginxRequests(benchmark::State& state) {
  static const std::string stream = Recorded("nginx_h2load.req");
  if (stream.empty())
    return state.SkipWithError("tests/data/protocols/nginx_h2load.req is missing");
  Run(state, p::Direction::kRequest, stream);
}
BENCHMARK(BM_RecordedNginxRequests);

void BM_RecordedNginxResponses(benchmark::State& state) {
  static const std::string stream = Recorded("nginx_h2load.resp");
  if (stream.empty())
    return state.SkipWithError("tests/data/protocols/nginx_h2load.resp is missing");
  Run(state, p::Direction::kResponse, stream);
}
BENCHMARK(BM_RecordedNginxResponses);

}  // namespace

BENCHMARK_MAIN();
