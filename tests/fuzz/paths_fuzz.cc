// libFuzzer target for the paths file reader: any input either parses or gives an error,
// never a crash; what parses formats to text that parses again to the same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "paths/paths_file.h"
#include "paths/ranking.h"
#include "report/describe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto file = weft::ParsePaths(text, "fuzz.paths.json");
  if (!file.ok()) return 0;
  const weft::PathSet& set = file->paths;
  // Exercise what readers of a valid set do: rank and render every pattern.
  for (weft::PatternOrder order :
       {weft::PatternOrder::kCount, weft::PatternOrder::kLatency, weft::PatternOrder::kExpected}) {
    (void)weft::RankPatterns(set, order);
  }
  for (const weft::PathPattern& p : set.patterns) {
    (void)weft::CompactShape(set, p);
    (void)p.latency.Quantile(0.99);
  }
  if (!file->graph.empty()) (void)weft::FormatCausalGraph(file->graph, set.nodes);
  std::string formatted = weft::FormatPaths(*file);
  auto again = weft::ParsePaths(formatted, "formatted.paths.json");
  if (!again.ok()) {
    std::fprintf(stderr, "formatted paths do not parse: %s\n", again.status().message().c_str());
    std::abort();
  }
  if (weft::FormatPaths(*again) != formatted) {
    std::fprintf(stderr, "round trip changed the paths file\n");
    std::abort();
  }
  return 0;
}
