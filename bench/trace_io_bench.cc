// Trace generation and I/O speed: messages per second for gen, for the text
// parser and for the binary loader, and bytes per message on disk and in memory.
//
// Each step is timed beside its baseline in the same run: loading a .weft file against
// reading its bytes into memory (ReadFile), parsing text against reading the text and
// counting its lines. Medians over --runs runs; the machine is shared, so ratios are the
// figures to trust.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/file.h"
#include "gen/gen.h"
#include "trace/binary_format.h"
#include "trace/text_format.h"

namespace weft {
namespace {

double Seconds(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const Status& s) {
  fmt::print(stderr, "trace_io_bench: {}\n", s.message());
  std::exit(1);
}

int Run(uint64_t messages, int runs, const std::string& dir) {
  Result<GenConfig> config = LoadGenConfig("multitier");
  if (!config.ok()) Die(config.status());
  config->messages = messages;
  std::filesystem::create_directories(dir);
  const std::string bin = dir + "/bench.weft", text = dir + "/bench.trace";

  std::vector<double> gen, write_bin, load_bin, read_bin, write_text, parse_text, read_text;
  size_t n = 0, memory = 0, bin_bytes = 0, text_bytes = 0;
  for (int r = 0; r < runs; ++r) {
    Trace trace;
    gen.push_back(Seconds([&] {
      Result<Trace> t = MakeTrace(*config);
      if (!t.ok()) Die(t.status());
      trace = std::move(t).value();
    }));
    n = trace.size();
    memory = trace.MemoryBytes();
    write_bin.push_back(Seconds([&] {
      if (Status s = WriteBinaryTrace(trace, bin); !s.ok()) Die(s);
    }));
    write_text.push_back(Seconds([&] {
      if (Status s = WriteFile(text, FormatTextTrace(trace)); !s.ok()) Die(s);
    }));
    bin_bytes = std::filesystem::file_size(bin);
    text_bytes = std::filesystem::file_size(text);
    // Baselines first, so that both read from a warm page cache.
    read_bin.push_back(Seconds([&] {
      if (!ReadFile(bin).ok()) Die(Status::IoError("read {}", bin));
    }));
    load_bin.push_back(Seconds([&] {
      Result<Trace> t = ReadBinaryTrace(bin);
      if (!t.ok() || t->size() != n) Die(t.status());
    }));
    size_t lines = 0;
    read_text.push_back(Seconds([&] {
      Result<std::string> s = ReadFile(text);
      if (!s.ok()) Die(s.status());
      lines = size_t(std::count(s->begin(), s->end(), '\n'));
    }));
    parse_text.push_back(Seconds([&] {
      Result<std::string> s = ReadFile(text);
      if (!s.ok()) Die(s.status());
      Result<Trace> t = ParseTextTrace(*s, text);
      if (!t.ok() || t->size() != n) Die(t.status());
    }));
    if (lines != n + 1) Die(Status::Internal("text has {} lines for {} messages", lines, n));
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);

  auto rate = [&](const std::vector<double>& v) { return double(n) / Median(v) / 1e6; };
  fmt::print("trace_io_bench: multitier, {} messages, {} runs (median)\n\n", n, runs);
  fmt::print("{:<28} {:>10} {:>12} {:>14} {:>8}\n", "step", "seconds", "M msgs/s", "baseline s",
             "ratio");
  auto row = [&](const char* name, const std::vector<double>& v, const std::vector<double>* base) {
    if (base) {
      fmt::print("{:<28} {:>10.3f} {:>12.2f} {:>14.3f} {:>8.2f}\n", name, Median(v), rate(v),
                 Median(*base), Median(v) / Median(*base));
    } else {
      fmt::print("{:<28} {:>10.3f} {:>12.2f} {:>14} {:>8}\n", name, Median(v), rate(v), "-", "-");
    }
  };
  row("gen (MakeTrace)", gen, nullptr);
  row("write .weft", write_bin, nullptr);
  row("load .weft (mmap)", load_bin, &read_bin);
  row("write text", write_text, nullptr);
  row("parse text", parse_text, &read_text);
  fmt::print(
      "\nbaselines: read the file's bytes into memory (binary); read and count lines (text)\n");
  fmt::print("bytes per message: .weft {:.1f}, text {:.1f}, in memory {:.1f}\n",
             double(bin_bytes) / double(n), double(text_bytes) / double(n),
             double(memory) / double(n));
  fmt::print("peak resident set: {:.0f} MB\n", double(usage.ru_maxrss) / 1024.0);
  std::filesystem::remove(bin);
  std::filesystem::remove(text);
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  uint64_t messages = 2'000'000;
  int runs = 5;
  std::string dir = "/tmp/weft-bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--messages")
      messages = std::stoull(argv[i + 1]);
    else if (flag == "--runs")
      runs = std::stoi(argv[i + 1]);
    else if (flag == "--dir")
      dir = argv[i + 1];
    else {
      fmt::print(stderr, "usage: trace_io_bench [--messages N] [--runs R] [--dir DIR]\n");
      return 2;
    }
  }
  return weft::Run(messages, runs, dir);
}
