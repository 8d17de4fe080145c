// gen: synthetic message traces with ground truth, and transforms of traces (Project 5
// §7.1.1 maketrace, §7.5.6 skewer, §7.5.5 sniffer loss). It takes a TOML config or a
// built-in scenario and gives a Trace whose messages carry path= and parent=; skew and
// drop take a Trace and give another. The one header the CLI and tests include.
#pragma once

#include "gen/config.h"     // GenConfig, ParseGenConfig
#include "gen/drop.h"       // DropMessages
#include "gen/maketrace.h"  // MakeTrace
#include "gen/scenarios.h"  // BuiltinScenarios, LoadGenConfig
#include "gen/skew.h"       // SkewTrace
