// WEFT_NO_TRACEPOINTS: a translation unit built with it registers no tracepoint and starts
// no agent, next to one built without it in the same binary (the inline namespace keeps
// the two Tracepoint classes apart).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "pivot/weaving.h"
#include "weft/tracepoint.h"

namespace weft::pivot::testing {

bool CompiledOutTracepointIsEmpty();
void FireCompiledOut(int bytes);
bool StartCompiledOutAgent();

namespace {

WEFT_TRACEPOINT(kCompiledIn, "CompiledIn.Request", "type", "bytes");

bool Registered(std::string_view name) {
  std::vector<TracepointInfo> all = RegisteredTracepoints();
  return std::any_of(all.begin(), all.end(),
                     [&](const TracepointInfo& t) { return t.name == name; });
}

TEST(CompiledOut, RegistersNothingBesideTracepointsCompiledIn) {
  EXPECT_TRUE(CompiledOutTracepointIsEmpty());
  EXPECT_TRUE(Registered("CompiledIn.Request"));
  EXPECT_FALSE(Registered("CompiledOut.Request"));
  FireCompiledOut(64);
  kCompiledIn.Fire("read", 64);
}

TEST(CompiledOut, StartsNoAgent) {
  // A bus the real agent could not open (it would say so and return false).
  setenv("WEFT_PIVOT_BUS", "unix:/nonexistent-weft-dir/bus.sock", 1);
  EXPECT_TRUE(StartCompiledOutAgent());
  unsetenv("WEFT_PIVOT_BUS");
}

}  // namespace
}  // namespace weft::pivot::testing
