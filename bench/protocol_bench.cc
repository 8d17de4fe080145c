// The protocol processors' speed (BorderPatrol §6 counts the processors' cost in the
// preload library's): MB/s and messages/s of Consume over recorded and synthetic streams,
// fed in 64 KiB pieces as a large read or write would bring them, on one thread. The
// memcached streams are the recordings in tests/data/protocols repeated to --megabytes,
// and a synthetic set/get load with 4 KiB values (the data blocks are counted, not read);
// the line processor, all that memcached could have before, reads the same text requests.
// Medians of --runs runs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capture/protocols/protocol.h"

namespace {

namespace p = weft::capture::protocols;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0
                   : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `unit` repeated until the stream holds at least `bytes`.
std::string Repeat(const std::string& unit, size_t bytes) {
  std::string s;
  if (unit.empty()) return s;
  s.reserve(bytes + unit.size());
  while (s.size() < bytes) s += unit;
  return s;
}

struct Feed {
  uint64_t messages = 0;
  bool failed = false;
};

Feed Run(p::Protocol protocol, p::Direction direction, const std::string& stream) {
  constexpr size_t kPiece = 64 * 1024;
  p::Parser parser;
  p::Init(&parser, protocol, direction);
  const auto* data = reinterpret_cast<const uint8_t*>(stream.data());
  for (size_t at = 0; at < stream.size();) {
    size_t left = std::min(kPiece, stream.size() - at);
    while (left > 0) {
      bool ended;
      size_t n = p::Consume(&parser, data + at, left, &ended);
      at += n;
      left -= n;
    }
  }
  return {parser.messages, parser.failed};
}

int Measure(const char* name, p::Protocol protocol, p::Direction direction,
            const std::string& stream, int runs) {
  std::vector<double> seconds;
  Feed feed;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    feed = Run(protocol, direction, stream);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  double s = Median(seconds);
  std::printf("%-34s %10.1f %12llu %10.0f %12.2f%s\n", name, stream.size() / 1e6,
              static_cast<unsigned long long>(feed.messages), stream.size() / 1e6 / s,
              feed.messages / s / 1e6, feed.failed ? "  (failed)" : "");
  return feed.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "tests/data/protocols";
  size_t megabytes = 64;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--data") data = argv[i + 1];
    if (flag == "--megabytes") megabytes = size_t(std::stoul(argv[i + 1]));
    if (flag == "--runs") runs = std::stoi(argv[i + 1]);
  }
  size_t bytes = megabytes << 20;
  auto recorded = [&](const char* file) {
    std::string unit = Read(data + "/" + file);
    if (unit.empty())
      std::fprintf(stderr, "protocol_bench: cannot read %s/%s\n", data.c_str(), file);
    return Repeat(unit, bytes);
  };
  std::string value(4096, 'v');
  std::string sets, replies;
  for (int i = 0; i < 1000; ++i) {
    std::string key = fmt::format("key:{:06}", i);
    sets += fmt::format("set {} 0 0 {}\r\n{}\r\nget {}\r\n", key, value.size(), value, key);
    replies += fmt::format("STORED\r\nVALUE {} 0 {}\r\n{}\r\nEND\r\n", key, value.size(), value);
  }
  std::string ascii_requests = recorded("memccapable_ascii.req");
  if (ascii_requests.empty()) return 1;

  std::printf("%-34s %10s %12s %10s %12s\n", "stream (64 KiB pieces)", "MB", "messages", "MB/s",
              "M msg/s");
  int failed = 0;
  constexpr auto kRequest = p::Direction::kRequest, kResponse = p::Direction::kResponse;
  failed += Measure("memcached text requests", p::kMemcached, kRequest, ascii_requests, runs);
  failed += Measure("  line, same bytes", p::kLine, kRequest, ascii_requests, runs);
  failed += Measure("memcached text replies", p::kMemcached, kResponse,
                    recorded("memccapable_ascii.resp"), runs);
  failed += Measure("memcached binary requests", p::kMemcached, kRequest,
                    recorded("memccapable_binary.req"), runs);
  failed += Measure("memcached binary replies", p::kMemcached, kResponse,
                    recorded("memccapable_binary.resp"), runs);
  failed += Measure("memcached set+get 4 KiB, requests", p::kMemcached, kRequest,
                    Repeat(sets, bytes), runs);
  failed += Measure("memcached set+get 4 KiB, replies", p::kMemcached, kResponse,
                    Repeat(replies, bytes), runs);
  return failed == 0 ? 0 : 1;
}
