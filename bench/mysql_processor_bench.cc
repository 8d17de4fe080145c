// The MySQL/MariaDB processor's speed (capture/protocols/mysql.cc): bytes per second
// through Consume on a reply stream of text result sets (each row a packet, so the cost
// is per packet), on a stream of COM_QUERY requests (each query's text copied into the
// sql attribute), and on the recorded libmariadb session (tests/data/protocols). Fed in
// 64 KiB pieces, as a large read would bring them.
#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <string>

#include "capture/protocols/protocol.h"

namespace {

namespace p = weft::capture::protocols;

std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += char((v >> (8 * i)) & 0xff);
  return s;
}
std::string Packet(uint8_t seq, const std::string& payload) {
  return Le(payload.size(), 3) + char(seq) + payload;
}
std::string Eof() { return std::string("\xfe\0\0\x02\0", 5); }
std::string ColumnDef(const std::string& name) {
  std::string catalog = std::string(1, 3) + "def";
  std::string table = std::string(1, 1) + "w" + std::string(1, 1) + "t" + std::string(1, 1) + "t";
  return catalog + table + char(name.size()) + name + char(name.size()) + name + char(0x0c) +
         Le(0x21, 2) + Le(80, 4) + char(0xfd) + Le(0, 2) + '\0' + Le(0, 2);
}
std::string Greeting() {
  std::string version = "10.11.19-MariaDB";
  return Packet(0, char(0x0a) + version + '\0' + std::string(60, 'g')) +
         Packet(2, std::string("\0\0\0\x02\0\0\0", 7));
}

// `replies` result sets of `rows` rows of two columns (an id and a 40-byte name).
std::string ResultSets(int replies, int rows) {
  std::string s = Greeting();
  for (int r = 0; r < replies; ++r) {
    uint8_t seq = 1;
    s += Packet(seq++, "\x02\x01");
    s += Packet(seq++, ColumnDef("id"));
    s += Packet(seq++, ColumnDef("name"));
    s += Packet(seq++, Eof());
    for (int i = 0; i < rows; ++i) {
      std::string id = std::to_string(i);
      s += Packet(seq++, char(id.size()) + id + char(40) + std::string(40, 'n'));
    }
    s += Packet(seq++, Eof());
  }
  return s;
}

std::string Queries(int n) {
  std::string s = Packet(1, Le(0x00bfa284, 4) + Le(1u << 24, 4) + "\x21" + std::string(23, '\0') +
                                "root" + std::string(1, '\0') + std::string(21, '\0'));
  for (int i = 0; i < n; ++i) {
    s += Packet(0, "\x03SELECT id, name, price FROM items WHERE id = " + std::to_string(i) +
                       " AND name LIKE 'abc%' ORDER BY price");
  }
  return s;
}

std::string Recorded(const char* name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/protocols/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Run(benchmark::State& state, const std::string& stream, p::Direction direction) {
  uint64_t messages = 0;
  for (auto _ : state) {
    p::Parser parser;
    p::Init(&parser, p::kMysql, direction);
    size_t offset = 0;
    while (offset < stream.size()) {
      size_t piece = std::min<size_t>(65536, stream.size() - offset);
      const auto* data = reinterpret_cast<const uint8_t*>(stream.data()) + offset;
      size_t left = piece;
      while (left > 0) {
        bool ended;
        size_t n = p::Consume(&parser, data, left, &ended);
        data += n;
        left -= n;
      }
      offset += piece;
    }
    if (parser.failed) state.SkipWithError("the processor failed");
    messages += parser.messages;
    benchmark::DoNotOptimize(parser.attributes);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(stream.size()));
  state.counters["messages"] = benchmark::Counter(double(messages), benchmark::Counter::kIsRate);
}

void BM_ResultSetRows(benchmark::State& state) {
  static const std::string stream = ResultSets(100, 1000);
  Run(state, stream, p::Direction::kResponse);
}
BENCHMARK(BM_ResultSetRows);

void BM_QueryRequests(benchmark::State& state) {
  static const std::string stream = Queries(50000);
  Run(state, stream, p::Direction::kRequest);
}
BENCHMARK(BM_QueryRequests);

void BM_RecordedBinaryResponses(benchmark::State& state) {
  static const std::string stream = Recorded("mariadb_binary.resp");
  Run(state, stream, p::Direction::kResponse);
}
BENCHMARK(BM_RecordedBinaryResponses);

}  // namespace

BENCHMARK_MAIN();
