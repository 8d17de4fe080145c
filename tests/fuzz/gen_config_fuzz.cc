// libFuzzer target for the maketrace config reader (gen/config.h): any input either parses
// or gives a one-line error naming the source, never a crash or an escaping exception. A
// config that parses generates a short trace without error, and every message of it has a
// ground-truth path.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "gen/config.h"
#include "gen/maketrace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = weft::ParseGenConfig(text, "fuzz.toml");
  if (!config.ok()) {
    const std::string message = config.status().message();
    if (message.rfind("fuzz.toml:", 0) != 0 || message.find('\n') != std::string::npos) {
      std::fprintf(stderr, "error without source or on several lines: %s\n", message.c_str());
      std::abort();
    }
    return 0;
  }
  // Keep generation small: a few hundred messages from at most a few thousand loops.
  double loops = 0;
  for (const weft::Tracelet& t : config->tracelets) loops += t.instances * config->parallelism;
  if (loops > 2000) return 0;
  config->messages = 300;
  auto trace = weft::MakeTrace(*config);
  if (!trace.ok()) {
    std::fprintf(stderr, "a config that parses failed to generate: %s\n",
                 trace.status().message().c_str());
    std::abort();
  }
  for (size_t i = 0; i < trace->size(); ++i) {
    if (!trace->columns().truth_path[i].valid()) {
      std::fprintf(stderr, "message %zu has no ground-truth path\n", i);
      std::abort();
    }
  }
  return 0;
}
