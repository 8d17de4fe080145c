// Ground truth for a paths file, as `weft eval --truth` takes it; shared by eval and
// report --html (defined in eval.cc).
#pragma once

#include <string>

#include "core/status.h"
#include "paths/path_set.h"

namespace weft::cli {

// The truth at `path` (a trace with ground truth, a paths file, or with `run` — the trace
// the paths were inferred from — a separate record of the run: a trace or a testbed truth
// directory, copied onto the run message by message; `run` itself is taken as carrying its
// own truth), its clients named and latencies measured as `inferred`'s are.
Result<PathSet> LoadTruth(const std::string& path, const PathSet& inferred, const std::string& run);

}  // namespace weft::cli
