// A trace of one of weft gen's scenarios, for the tests that measure inference on them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "gen/gen.h"

namespace weft::testing {

// `name`'s trace with `parallelism` loops per request type, `messages` long; with
// `send_times_only` one timestamp per message, as span data and sniffers give.
inline Trace ScenarioTrace(std::string_view name, double parallelism, uint64_t messages,
                           bool send_times_only = false) {
  Result<GenConfig> config = LoadGenConfig(std::string(name));
  EXPECT_TRUE(config.ok()) << config.status().message();
  config->parallelism = parallelism;
  config->messages = messages;
  config->send_times_only = send_times_only;
  Result<Trace> trace = MakeTrace(*config);
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  return std::move(trace).value();
}

}  // namespace weft::testing
