// The paths file (.paths.json; docs/paths.md): what `weft infer` writes and report, eval
// and `weft paths` read. It holds one algorithm's path set, its counters by name and,
// for convolution, its causal graph.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "paths/causal_graph.h"
#include "paths/inference.h"
#include "paths/path_set.h"

namespace weft {

// The file's "format" and "version" fields; readers refuse any other.
inline constexpr std::string_view kPathsFormatName = "weft.paths";
inline constexpr int kPathsFormatVersion = 1;

struct PathsFile {
  PathSet paths;
  CounterList counters;  // as the algorithm's counters struct lists them
  // Convolution's causal graph (node ids in paths.nodes); empty for other algorithms.
  CausalGraph graph;
};

// An algorithm's result as a file.
template <typename Counters>
PathsFile ToPathsFile(Inference<Counters> inference) {
  return {std::move(inference.paths), inference.counters.List(), {}};
}

// WritePaths writes FormatPaths's text; ReadPaths reads a file ("-" is stdin) through
// ParsePaths, which checks everything (shape, every index, the key against the elements)
// and names `source` and the field in its one-line errors. Round trips are exact,
// histograms included.
std::string FormatPaths(const PathsFile& file);
Status WritePaths(const PathsFile& file, const std::string& path);
Result<PathsFile> ParsePaths(std::string_view text, std::string_view source);
Result<PathsFile> ReadPaths(const std::string& path);

}  // namespace weft
