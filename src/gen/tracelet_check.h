// The structural check of a parsed tracelet against the causality convention of
// paths/path_set.h, and the ground-truth parent of each step it computes. Internal to gen.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gen/config.h"

namespace weft {

// Sets every step's `parent`, or returns an error naming `source` and the step's line.
// `nodes` names the config's nodes, for messages.
Status CheckTraceletStructure(Tracelet& tracelet, const std::vector<std::string>& nodes,
                              std::string_view source);

// `text` with control characters written as \xNN, so that a message stays on one line.
std::string OneLine(std::string_view text);

}  // namespace weft
