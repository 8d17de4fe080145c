// Built-in maketrace scenarios: TOML configs compiled into weft, each documented in
// docs/generator.md. `weft gen NAME --print-config` prints one to start an edited copy.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gen/config.h"

namespace weft {

struct Scenario {
  std::string_view name;
  std::string_view description;  // one line
};

std::span<const Scenario> BuiltinScenarios();

// The TOML text of a built-in scenario; NotFound listing the known ones otherwise.
Result<std::string> ScenarioConfigText(std::string_view name);

// A built-in scenario by name, or else a TOML file by path ("-" for stdin).
Result<GenConfig> LoadGenConfig(const std::string& scenario_or_path);

}  // namespace weft
