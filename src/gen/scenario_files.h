// The built-in scenarios' TOML files (src/gen/scenarios/), compiled in by
// src/gen/CMakeLists.txt. scenarios.h is the interface; this is what it reads.
#pragma once

#include <span>
#include <string_view>

namespace weft {

struct ScenarioFile {
  std::string_view name;  // "shop.toml"
  std::string_view text;
};

// Every file, by name.
std::span<const ScenarioFile> ScenarioFiles();

}  // namespace weft
