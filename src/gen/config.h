// The maketrace configuration (Project 5 §7.1.1): a set of tracelets, each a template for
// an ordered sequence of messages with Gaussian delays, run by a number of parallel loops
// with a uniform think time between runs. docs/generator.md describes the TOML format.
//
// ParseGenConfig reads the TOML and checks every tracelet structurally, so that a config
// that loads always yields path instances that are trees following the causality
// convention of paths/path_set.h; what it computes on the way (each step's ground-truth
// parent step) is kept in the config, and generation only draws times and nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "trace/trace.h"

namespace weft {

// One component of a step's delay: a Gaussian clamped at 0 (see DrawDelay in
// maketrace.cc), chosen with probability weight / (sum of the step's weights).
struct DelayComponent {
  TimeNs mean = 0;
  TimeNs sd = 0;
  double weight = 1;
};

// A node a step names: a fixed node, or a variable of the tracelet bound per instance.
struct NodeRef {
  int32_t variable = -1;  // index into Tracelet::variables, or -1
  uint32_t node = 0;      // index into GenConfig::nodes when variable < 0
  bool operator==(const NodeRef&) const = default;
};

// A `choose` variable: bound once per instance to one of `nodes`, by weight.
struct ChooseVariable {
  std::string name;                // without the '$'
  std::vector<uint32_t> nodes;     // indices into GenConfig::nodes
  std::vector<double> cumulative;  // cumulative weights, normalised to end at 1
};

// An additional fixed delay on a step, applied only when its sender resolves to `node`.
struct ExtraDelay {
  uint32_t node = 0;
  TimeNs delay = 0;
};

struct StepTemplate {
  MessageKind kind = MessageKind::kMessage;
  NodeRef from;
  NodeRef to;
  std::vector<DelayComponent> delay;  // at least one component
  std::vector<ExtraDelay> extra;
  std::vector<uint32_t> after;  // earlier steps this one waits for; empty only for step 0
  int32_t parent = -1;          // ground-truth parent step, -1 for the root (step 0)
  int32_t answers = -1;         // for a ret: the call step it answers
  std::string id;               // may be empty
  int line = 0;                 // in the config source, for messages
};

struct Tracelet {
  std::string name;
  uint32_t instances = 1;  // parallel loops before the parallelism factor
  TimeNs think_lo = 0;
  TimeNs think_hi = 0;
  std::vector<ChooseVariable> variables;
  std::vector<StepTemplate> steps;
  bool has_extra = false;  // some step has an extra delay
};

// The network between nodes (WAP5 §2.4, §5.2), off unless the config has a [network]
// table. With it a message is received a network delay after it is sent, each node's clock
// runs off by its own offset, and untraced nodes leave their timestamps out, so that a
// trace has two timestamps per message as capture produces them. docs/generator.md.
struct NetworkConfig {
  bool enabled = false;
  TimeNs delay_lo = 0;  // one-way base delay of a node pair, uniform in [lo, hi] per pair
  TimeNs delay_hi = 0;
  TimeNs jitter = 0;               // mean of an exponential delay added to each message
  double asymmetry = 0;            // the two directions of a pair differ by up to this fraction
  TimeNs clock_sd = 0;             // each node's clock offset is drawn from N(0, clock_sd)
  uint32_t clients = 0;            // > 0: each instance's root node is one of this many clients
  std::vector<uint32_t> untraced;  // nodes (indices into GenConfig::nodes) not traced
};

struct GenConfig {
  std::string source;  // file or scenario name, for messages
  uint64_t seed = 1;
  TimeNs start = 0;
  // Length: exactly one of the two is in force; messages > 0 wins.
  TimeNs duration = 60 * kSecond;
  uint64_t messages = 0;
  double parallelism = 1;
  double deviation = 1;
  std::vector<std::string> nodes;  // every node name, in order of first mention
  std::vector<Tracelet> tracelets;
  NetworkConfig network;
  // One timestamp per message, the send time, as span data and one-sided logs give
  // (`timestamps = "send"`): receive times are left out (kept only where the sender was
  // untraced, so that every message has a time).
  bool send_times_only = false;
};

// Bounds that keep every computed time far inside 64-bit nanoseconds (1000 steps of
// the longest delay after the latest start and the longest duration still fit).
inline constexpr TimeNs kMaxStepDelay = 24 * 3600 * kSecond;  // delay, sd, extra
inline constexpr TimeNs kMaxThink = 30 * 24 * 3600 * kSecond;
inline constexpr TimeNs kMaxDuration = 3650LL * 24 * 3600 * kSecond;
inline constexpr TimeNs kMaxStart = 4'000'000'000 * kSecond;  // |start|, about 2096
inline constexpr size_t kMaxSteps = 1000;                     // per tracelet
inline constexpr double kMaxParallelism = 10000;
inline constexpr double kMaxDeviation = 1000;
inline constexpr uint32_t kMaxClients = 1'000'000;

// Checks the top-level numbers against the bounds above (ParseGenConfig does; call it
// again after changing them, as the command line does).
Status CheckGenLimits(const GenConfig& config);

// Parses and checks a config. `source` names it in errors, which are one line:
// "my.toml:12: unknown key 'thinktime' in [[tracelet]] (known: ...)".
Result<GenConfig> ParseGenConfig(std::string_view toml_text, std::string_view source);

}  // namespace weft
