// What an inference algorithm gives: its path set and what it counted on the way.
//
// Each algorithm has its own counters struct (NestingCounters, LinkingCounters, ...,
// beside the algorithm) whose fields are the counters by name, so a misspelt counter does
// not compile. Each lists its counters once, in List(): the names and the order the
// paths file (docs/paths.md) and `weft paths` use. Convolution gives a causal graph
// besides (ConvolutionInference, infer/convolution/convolution.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "paths/path_set.h"

namespace weft {

// Counters by name, in the order an algorithm lists them: what a paths file stores, for
// any algorithm.
using CounterList = std::vector<std::pair<std::string, int64_t>>;

template <typename Counters>
struct Inference {
  PathSet paths;
  Counters counters;
};

}  // namespace weft
