// Tracepoints for Pivot Tracing (Pivot Tracing §3 "Tracepoints", §5 "Dynamic
// Instrumentation"): the one header an instrumented C++ program includes.
//
// A tracepoint is a named place in the program that exports named variables. Queries
// installed at run time (`weft pivot install`) weave advice into the tracepoints they
// name; until then a tracepoint costs one relaxed atomic load and a predictable branch.
//
//   WEFT_TRACEPOINT(kRequestReceived, "Server.Request", "type", "bytes", "client");
//   ...
//   kRequestReceived.Fire(type, bytes, client);  // integers, doubles, strings
//
// Declare tracepoints at namespace scope or as function-local statics: one object per
// tracepoint, alive as long as the code that fires it. Construction registers it in this
// process's registry (so `weft pivot tracepoints` lists it and queries installed earlier
// are woven into it); destruction unregisters it and unweaves its advice, waiting for
// threads still running that advice. Two objects may share a name (a tracepoint in two
// libraries); a query naming it is woven into both.
//
// Fire's arguments are the exports in declaration order; a missing one is null, an extra
// one ignored. Strings are read during the call only (the advice copies what it keeps).
// Fire is safe from any thread at any time, except from a signal handler.
//
// The agent (src/pivot/agent.h, library weft_pivot_agent) receives the queries; a program
// starts it once, e.g. with weft::pivot::StartAgentFromEnvironment().
//
// Compiled out: a translation unit built with WEFT_NO_TRACEPOINTS defined (say
// -DWEFT_NO_TRACEPOINTS for a whole program) gets a Tracepoint that registers nothing and
// whose Fire is empty (its arguments are still evaluated, as any call's), and a
// StartAgentFromEnvironment that starts nothing: the program as it was before it was
// instrumented, with no library to link. Both live in an inline namespace of their own,
// so one binary may hold code built either way. bench/pivot_testbed_overhead builds the
// testbed so to measure what the instrumentation costs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft::pivot {

// One exported value of a firing: null, an integer, a double or a string (a view valid
// during Fire only).
struct TracepointArg {
  enum class Type : uint8_t { kNull, kInt, kFloat, kString };
  Type type = Type::kNull;
  int64_t i = 0;
  double f = 0;
  std::string_view s;

  constexpr TracepointArg() = default;
  template <typename T>
  requires(std::is_integral_v<T>) constexpr TracepointArg(T v)
      : type(Type::kInt), i(static_cast<int64_t>(v)) {}
  template <typename T>
  requires(std::is_floating_point_v<T>) constexpr TracepointArg(T v)
      : type(Type::kFloat), f(static_cast<double>(v)) {}
  constexpr TracepointArg(std::string_view v) : type(Type::kString), s(v) {}
  constexpr TracepointArg(const char* v) : type(Type::kString), s(v) {}
  TracepointArg(const std::string& v) : type(Type::kString), s(v) {}
  constexpr TracepointArg(std::nullptr_t) {}
};

#ifdef WEFT_NO_TRACEPOINTS

inline namespace no_tracepoints {

class Tracepoint {
 public:
  constexpr Tracepoint(std::string_view, std::initializer_list<std::string_view>) {}
  Tracepoint(const Tracepoint&) = delete;
  Tracepoint& operator=(const Tracepoint&) = delete;

  template <typename... Args>
  void Fire(const Args&...) {}
  bool woven() const { return false; }
};

inline bool StartAgentFromEnvironment(std::string_view = {}) { return true; }

}  // namespace no_tracepoints

#else  // WEFT_NO_TRACEPOINTS

struct AdviceList;  // what queries wove into a tracepoint (src/pivot/weaving.h)

class Tracepoint {
 public:
  // `name` is how queries name it ("Server.Request"); `exports` the names of the
  // variables Fire passes, in order.
  Tracepoint(std::string_view name, std::initializer_list<std::string_view> exports);
  ~Tracepoint();
  Tracepoint(const Tracepoint&) = delete;
  Tracepoint& operator=(const Tracepoint&) = delete;

  // Runs the advice woven here, if any, on this thread with the exports `args`.
  template <typename... Args>
  void Fire(const Args&... args) {
    // Relaxed: the slow path loads the list again with the ordering it needs.
    if (advice_.load(std::memory_order_relaxed) != nullptr) [[unlikely]] {
      const std::array<TracepointArg, sizeof...(Args)> values{TracepointArg(args)...};
      FireWoven(values.data(), values.size());
    }
  }

  // Whether advice is woven here now.
  bool woven() const { return advice_.load(std::memory_order_relaxed) != nullptr; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& exports() const { return exports_; }

 private:
  friend struct TracepointAccess;
  void FireWoven(const TracepointArg* args, size_t n);

  std::string name_;
  std::vector<std::string> exports_;
  std::atomic<const AdviceList*> advice_{nullptr};
};

// Starts this process's agent if the environment variable WEFT_PIVOT_BUS names a bus
// ("unix:PATH", "nats://HOST:PORT", "default": the embedded bus weft pivot uses by
// default, "local"); does nothing if it is unset or the agent runs
// already. Returns false (and says why on stderr) if the bus cannot be opened; the
// program goes on without live queries. `name` is how `weft pivot list` names this
// process (empty: the host's name). Defined in weft_pivot_agent.
bool StartAgentFromEnvironment(std::string_view name = {});

#endif  // WEFT_NO_TRACEPOINTS

}  // namespace weft::pivot

// Declares `var`, a weft::pivot::Tracepoint named `name` exporting the variables named
// by the remaining arguments (string literals).
#define WEFT_TRACEPOINT(var, name, ...) \
  ::weft::pivot::Tracepoint var {       \
    name, { __VA_ARGS__ }               \
  }
