// Weaving advice into this process's tracepoints at run time (Pivot Tracing §5, "Dynamic
// Instrumentation"), and the process-wide registry of tracepoints.
//
// Each tracepoint points at an immutable AdviceList (null when nothing is woven). Weaving
// and unweaving build a new list, swap it in with one atomic exchange, and free the old
// one only once no thread can still be running it (see WaitForReaders in tracepoint.cc).
// Weaves are kept as standing orders by tracepoint name: a tracepoint constructed later
// (a function-local static, a library loaded later) gets the advice too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weft/tracepoint.h"

namespace weft::pivot {

// One installed query's advice at one tracepoint object.
class WovenHook {
 public:
  virtual ~WovenHook() = default;
  // Runs on the firing thread, with the tracepoint's arguments. Must not block.
  virtual void Run(const TracepointArg* args, size_t n) = 0;
};

struct AdviceList {
  std::vector<std::shared_ptr<WovenHook>> hooks;
  std::vector<uint64_t> owners;  // per hook, the weave that made it
};

// Makes the hook for one tracepoint object (its exports may differ from another object
// of the same name); null: no advice there.
using HookFactory = std::function<std::shared_ptr<WovenHook>(const Tracepoint&)>;

// Weaves into every tracepoint named `name`, now and constructed later, until Unweave.
// Returns the weave's id (never 0).
uint64_t Weave(std::string name, HookFactory factory);
// Removes the weave's hooks from every tracepoint, and returns once no thread runs them.
void Unweave(uint64_t weave);

struct TracepointInfo {
  std::string name;
  std::vector<std::string> exports;
};
// The tracepoints this process has registered, by name (one per name: the first
// registered's exports), sorted by name.
std::vector<TracepointInfo> RegisteredTracepoints();

}  // namespace weft::pivot
