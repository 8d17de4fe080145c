// Built with WEFT_NO_TRACEPOINTS (tests/pivot/CMakeLists.txt): tracepoints compiled out, in
// the same test binary as tracepoints compiled in.
#include <type_traits>

#include "weft/tracepoint.h"

namespace weft::pivot::testing {
namespace {

WEFT_TRACEPOINT(kCompiledOut, "CompiledOut.Request", "type", "bytes");

}  // namespace

bool CompiledOutTracepointIsEmpty() {
  return std::is_empty_v<Tracepoint> && std::is_trivially_destructible_v<Tracepoint> &&
         !kCompiledOut.woven();
}

void FireCompiledOut(int bytes) { kCompiledOut.Fire("read", bytes); }

bool StartCompiledOutAgent() { return StartAgentFromEnvironment("compiled-out"); }

}  // namespace weft::pivot::testing
