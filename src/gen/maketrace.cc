// maketrace (Project 5 §7.1.1): tracelet loops instantiated directly.
//
// Each tracelet runs `instances x parallelism` loops. A loop starts at a uniformly random
// offset within its first think time, runs one instance of the tracelet (binding its
// choose variables, then timing each step after its `after` steps with a Gaussian delay),
// waits a uniform think time after the instance's last message, and repeats. Loops are
// advanced in order of their next start time, so a length in messages stops the trace
// after whole instances: every path is complete.
//
// Each loop draws from its own random stream (seed, tracelet, loop), so what one loop does
// does not depend on the timing of others. Extra delays (a step's `extra`, the added delay
// of Project 5 §7.2) do not move the loop's schedule: the next instance starts a think time
// after the instance would have ended without them. Hence a config and the same config
// with an extra delay give the same instances, node choices and delays, and differ only
// by the added time: pattern counts match exactly, and an algorithm's measurement of the
// added delay can be compared path by path.
//
// Messages are generated into a flat array, sorted by (time, generation order) once, and
// added to the TraceBuilder already in order; parents always precede children because a
// parent step is an ancestor (earlier time or equal time and earlier generation).
#include "gen/maketrace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>

#include "core/progress.h"
#include "gen/random.h"

namespace weft {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
// A guard against configs that would exhaust memory (about 100 bytes per message).
constexpr uint64_t kMaxMessages = 400'000'000;
// A call id is reused only this long after its call was answered, so that shifting clocks
// by any plausible skew (weft skew) cannot make an id's old return and new call overlap.
constexpr TimeNs kCallIdCooldown = 10 * kSecond;

struct GenMessage {
  TimeNs time;      // sent, true time
  TimeNs arrival;   // received, true time (= time without a network)
  uint32_t sender;  // index into GenConfig::nodes
  uint32_t receiver;
  uint32_t parent;  // generation index of the parent message, kNone for a root
  uint32_t path;    // instance number, in order of instance start
  uint32_t call;    // ret: generation index of its call; call: its call id number
  MessageKind kind;
};

struct Loop {
  uint32_t tracelet;
  Random rng;
  // loops / (instances x parallelism): stretches (or shrinks) the think time when the
  // loop count had to be rounded, at least one loop being kept so that no tracelet
  // vanishes at a small parallelism; the tracelet's request rate stays close to the one
  // asked for.
  double think_scale = 1;
};

// Endpoints of generated messages: node k (0-based) has the address 10.x.y.z of k + 1
// and serves on port 8000; calls leave from an ephemeral port picked by the message.
std::string Address(uint32_t node) {
  const uint32_t a = node + 1;
  return fmt::format("10.{}.{}.{}", (a >> 16) & 255, (a >> 8) & 255, a & 255);
}
std::string FixedEndpoint(uint32_t node) { return Address(node) + ":8000"; }
std::string EphemeralEndpoint(uint32_t node, uint32_t message) {
  uint64_t h = message;
  return fmt::format("{}:{}", Address(node), 32768 + SplitMix64(h) % 28232);
}

TimeNs DrawThink(const Tracelet& t, Random& rng, double scale) {
  double u = rng.Uniform();
  double think = double(t.think_lo) + u * double(t.think_hi - t.think_lo);
  return TimeNs(std::llround(think * scale));
}

// One draw from a step's delay: a mixture component by weight (only when there are
// several), then a Gaussian clamped at 0 (Project 5 §7.5.4 varies the deviation).
// Clamping rather than redrawing keeps the number of draws per step fixed.
TimeNs DrawDelay(const std::vector<DelayComponent>& delay, double deviation, Random& rng) {
  const DelayComponent* c = &delay[0];
  if (delay.size() > 1) {
    double total = 0;
    for (const DelayComponent& d : delay) total += d.weight;
    double u = rng.Uniform() * total;
    for (const DelayComponent& d : delay) {
      c = &d;
      if (u < d.weight) break;
      u -= d.weight;
    }
  }
  double value = double(c->mean) + double(c->sd) * deviation * rng.Gaussian();
  // Clamped above too, far beyond any configured delay, so times cannot overflow.
  return value <= 0 ? 0 : TimeNs(std::llround(std::min(value, 30 * double(kMaxStepDelay))));
}

// The network of a [network] table (WAP5 §2.4, §5.2): per node pair a base delay, the same
// for every message between them, drawn from the seed and the pair alone so that it needs
// no table; per node a clock offset; per message an exponential jitter.
class Network {
 public:
  Network(const GenConfig& config, size_t nodes) : net_(config.network), seed_(config.seed) {
    Random rng(seed_, 0xC10C);
    offset_.resize(nodes);
    for (TimeNs& o : offset_) o = TimeNs(std::llround(double(net_.clock_sd) * rng.Gaussian()));
  }

  // One-way delay from `a` to `b`: the pair's base, its direction's share of the
  // asymmetry, and a jitter draw from the sending loop's stream.
  TimeNs Delay(uint32_t a, uint32_t b, Random& rng) const {
    uint64_t h = seed_ ^ (uint64_t(std::min(a, b)) << 32 | std::max(a, b));
    const double u = double(SplitMix64(h) >> 11) * 0x1.0p-53;
    const double v = double(SplitMix64(h) >> 11) * 0x1.0p-53 * 2 - 1;
    double base = double(net_.delay_lo) + u * double(net_.delay_hi - net_.delay_lo);
    base *= 1 + (a < b ? v : -v) * net_.asymmetry;
    const double jitter = net_.jitter > 0 ? -double(net_.jitter) * std::log(1 - rng.Uniform()) : 0;
    return TimeNs(std::llround(base + jitter));
  }
  TimeNs Offset(uint32_t node) const { return offset_[node]; }

 private:
  const NetworkConfig& net_;
  uint64_t seed_;
  std::vector<TimeNs> offset_;
};

class Generator {
 public:
  explicit Generator(const GenConfig& config);

  Status Run();
  Result<Trace> Build(GenSummary* summary);

 private:
  // Runs one instance of loop `l` starting at `start`; returns the next start time.
  TimeNs RunInstance(Loop& loop, TimeNs start);

  // The name of node `n`: a config node, or a client standing in for a root node.
  std::string NodeName(uint32_t n) const;

  const GenConfig& config_;
  // Clients (network.clients > 0): client k of the root node roots_[slot] is node
  // config.nodes.size() + slot x clients + k.
  std::vector<uint32_t> roots_;
  uint32_t node_count_ = 0;
  Network network_;
  std::vector<GenMessage> messages_;
  std::vector<TimeNs> times_;              // per step of the current instance: sent
  std::vector<TimeNs> arrivals_;           // received
  std::vector<TimeNs> arrivals_no_extra_;  // received, had there been no extra delays
  std::vector<uint32_t> bound_;            // node bound to each choose variable
  uint32_t instances_ = 0;
  uint64_t loops_ = 0;
  double busy_ = 0;  // sum over instances of (last - first message time), in ns
};

// The root nodes an instance can start at: step 0's sender, or any node its variable
// can bind.
std::vector<uint32_t> RootNodes(const GenConfig& config) {
  std::vector<uint32_t> roots;
  for (const Tracelet& t : config.tracelets) {
    const NodeRef& from = t.steps[0].from;
    if (from.variable < 0) {
      roots.push_back(from.node);
    } else {
      for (uint32_t n : t.variables[from.variable].nodes) roots.push_back(n);
    }
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

uint32_t NodeCount(const GenConfig& config, size_t roots) {
  return uint32_t(config.nodes.size() + roots * config.network.clients);
}

Generator::Generator(const GenConfig& config)
    : config_(config),
      roots_(config.network.clients > 0 ? RootNodes(config) : std::vector<uint32_t>{}),
      node_count_(NodeCount(config, roots_.size())),
      network_(config, node_count_) {}

std::string Generator::NodeName(uint32_t n) const {
  if (n < config_.nodes.size()) return config_.nodes[n];
  n -= uint32_t(config_.nodes.size());
  const uint32_t clients = config_.network.clients;
  return fmt::format("{}-{}", config_.nodes[roots_[n / clients]], n % clients);
}

TimeNs Generator::RunInstance(Loop& loop, TimeNs start) {
  const Tracelet& t = config_.tracelets[loop.tracelet];
  Random& rng = loop.rng;
  bound_.resize(t.variables.size());
  for (size_t v = 0; v < t.variables.size(); ++v) {
    const ChooseVariable& var = t.variables[v];
    double u = rng.Uniform();
    size_t k = 0;
    while (k + 1 < var.cumulative.size() && u >= var.cumulative[k]) ++k;
    bound_[v] = var.nodes[k];
  }
  auto bind = [&](const NodeRef& r) { return r.variable >= 0 ? bound_[r.variable] : r.node; };
  // With clients, the root node is one of its clients throughout the instance.
  uint32_t root = kNone, client = kNone;
  if (!roots_.empty()) {
    root = bind(t.steps[0].from);
    const uint32_t clients = config_.network.clients;
    const auto slot =
        uint32_t(std::lower_bound(roots_.begin(), roots_.end(), root) - roots_.begin());
    client = uint32_t(config_.nodes.size()) + slot * clients +
             std::min(clients - 1, uint32_t(rng.Uniform() * clients));
  }
  auto resolve = [&](const NodeRef& r) {
    const uint32_t n = bind(r);
    return n == root ? client : n;
  };
  const bool network = config_.network.enabled;
  const size_t n = t.steps.size();
  times_.resize(n);
  arrivals_.resize(n);
  arrivals_no_extra_.resize(n);
  const uint32_t first = uint32_t(messages_.size());
  const uint32_t path = instances_++;
  TimeNs end = start, end_no_extra = start;
  for (size_t i = 0; i < n; ++i) {
    const StepTemplate& s = t.steps[i];
    // A step is sent a delay after the steps it waits for have arrived.
    TimeNs base = start, base_no_extra = start;
    for (uint32_t a : s.after) {
      base = std::max(base, arrivals_[a]);
      base_no_extra = std::max(base_no_extra, arrivals_no_extra_[a]);
    }
    const TimeNs delay = DrawDelay(s.delay, config_.deviation, rng);
    const uint32_t sender = resolve(s.from), receiver = resolve(s.to);
    TimeNs time = base + delay;
    for (const ExtraDelay& e : s.extra) {
      if (e.node == bind(s.from)) time += e.delay;
    }
    const TimeNs network_delay = network ? network_.Delay(sender, receiver, rng) : 0;
    times_[i] = time;
    arrivals_[i] = time + network_delay;
    arrivals_no_extra_[i] = base_no_extra + delay + network_delay;
    end = std::max(end, arrivals_[i]);
    end_no_extra = std::max(end_no_extra, arrivals_no_extra_[i]);
    messages_.push_back(GenMessage{time, arrivals_[i], sender, receiver,
                                   s.parent >= 0 ? first + uint32_t(s.parent) : kNone, path,
                                   s.answers >= 0 ? first + uint32_t(s.answers) : kNone, s.kind});
  }
  busy_ += double(end - times_[0]);
  if (!t.has_extra) end_no_extra = end;
  return end_no_extra + DrawThink(t, rng, loop.think_scale);
}

Status Generator::Run() {
  std::vector<Loop> loops;
  using Entry = std::pair<TimeNs, uint32_t>;  // next start, loop; ties by loop index
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  for (uint32_t ti = 0; ti < config_.tracelets.size(); ++ti) {
    const Tracelet& t = config_.tracelets[ti];
    const double wanted = double(t.instances) * config_.parallelism;
    const auto count = std::max<uint64_t>(1, uint64_t(std::llround(wanted)));
    if (count > 1'000'000) {
      return Status::InvalidArgument("tracelet '{}': {} loops is too many", t.name, count);
    }
    for (uint64_t l = 0; l < count; ++l) {
      Loop loop{ti, Random(config_.seed, (uint64_t(ti) << 32) | l),
                wanted > 0 ? double(count) / wanted : 1.0};
      TimeNs first_think = DrawThink(t, loop.rng, loop.think_scale);
      TimeNs offset = TimeNs(std::llround(loop.rng.Uniform() * double(first_think)));
      queue.emplace(config_.start + offset, uint32_t(loops.size()));
      loops.push_back(std::move(loop));
    }
  }
  loops_ = loops.size();
  const bool by_messages = config_.messages > 0;
  const TimeNs stop = config_.start + config_.duration;
  if (by_messages) messages_.reserve(config_.messages + 1024);
  Progress progress("gen", by_messages ? config_.messages : 0, "messages");
  while (!queue.empty()) {
    auto [start, l] = queue.top();
    if (by_messages ? messages_.size() >= config_.messages : start >= stop) break;
    queue.pop();
    TimeNs next = RunInstance(loops[l], start);
    queue.emplace(next, l);
    progress.Update(messages_.size());
    if (messages_.size() > kMaxMessages) {
      return Status::OutOfRange(
          "{}: more than {} messages; ask for fewer with --messages or a "
          "shorter --duration",
          config_.source, kMaxMessages);
    }
  }
  return Status::Ok();
}

Result<Trace> Generator::Build(GenSummary* summary) {
  const size_t n = messages_.size();
  std::vector<std::pair<TimeNs, uint32_t>> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = {messages_[i].time, i};
  std::sort(order.begin(), order.end());

  TraceBuilder builder;
  std::vector<NodeId> node_ids;
  for (uint32_t node = 0; node < node_count_; ++node)
    node_ids.push_back(builder.Node(NodeName(node)));
  const NetworkConfig& net = config_.network;
  std::vector<bool> untraced(node_count_, false);
  for (uint32_t node : net.untraced) untraced[node] = true;
  for (uint32_t c = uint32_t(config_.nodes.size()); c < node_count_; ++c) {
    untraced[c] = untraced[roots_[(c - config_.nodes.size()) / net.clients]];
  }
  // A message between two untraced nodes is seen by no one: it is left out, and its
  // children take its parent (kept messages come first in time, so new_index is set).
  auto kept = [&](const GenMessage& m) { return !(untraced[m.sender] && untraced[m.receiver]); };
  std::vector<uint32_t> new_index(n, kNone);
  std::vector<uint32_t> path_ids(instances_, kNone);  // numbered by first message in time
  uint32_t next_path = 0, row = 0;
  std::vector<StringId> call_names;
  std::deque<std::pair<uint32_t, TimeNs>> free_ids;  // answered call ids, by answer time
  for (uint32_t sorted = 0; sorted < n; ++sorted) {
    const uint32_t i = order[sorted].second;
    GenMessage& m = messages_[i];
    uint32_t parent = m.parent;
    while (parent != kNone && !kept(messages_[parent])) parent = messages_[parent].parent;
    if (!kept(m)) continue;
    new_index[i] = row++;
    if (path_ids[m.path] == kNone) path_ids[m.path] = next_path++;
    MessageRecord r;
    r.send_time = untraced[m.sender] ? kNoTime : m.time + network_.Offset(m.sender);
    r.recv_time = untraced[m.receiver] ? kNoTime : m.arrival + network_.Offset(m.receiver);
    if (config_.send_times_only && r.send_time != kNoTime) r.recv_time = kNoTime;
    r.sender = node_ids[m.sender];
    r.receiver = node_ids[m.receiver];
    r.kind = m.kind;
    r.truth_path = PathId(path_ids[m.path]);
    if (parent != kNone) r.truth_parent = MessageId(new_index[parent]);
    if (net.enabled) {
      // A call (or message) leaves from an ephemeral port to the receiver's fixed port; a
      // return goes back between the same two.
      const bool back = m.kind == MessageKind::kReturn;
      const uint32_t conversation = back ? m.call : i;
      r.sender_endpoint = builder.String(back ? FixedEndpoint(m.sender)
                                              : EphemeralEndpoint(m.sender, conversation));
      r.receiver_endpoint = builder.String(back ? EphemeralEndpoint(m.receiver, conversation)
                                                : FixedEndpoint(m.receiver));
    }
    if (m.kind == MessageKind::kCall) {
      // Unique among open calls, and reused only after a cooldown: see kCallIdCooldown.
      if (!free_ids.empty() && free_ids.front().second + kCallIdCooldown <= m.time) {
        m.call = free_ids.front().first;
        free_ids.pop_front();
      } else {
        m.call = uint32_t(call_names.size());
        call_names.push_back(builder.String(fmt::format("c{}", m.call)));
      }
      r.call_id = call_names[m.call];
    } else if (m.kind == MessageKind::kReturn) {
      const uint32_t id = messages_[m.call].call;  // its call came earlier in time order
      r.call_id = call_names[id];
      free_ids.emplace_back(id, m.time);
    }
    builder.Add(r);
  }
  if (summary) {
    summary->messages = row;
    summary->paths = instances_;
    summary->loops = loops_;
    summary->first = n ? order.front().first : config_.start;
    summary->last = n ? order.back().first : config_.start;
    const double span = double(summary->last - summary->first);
    summary->mean_in_flight = span > 0 ? busy_ / span : 0;
    summary->clock_offsets.clear();
    if (net.enabled) {
      for (uint32_t node = 0; node < node_count_; ++node) {
        if (!untraced[node])
          summary->clock_offsets.emplace_back(NodeName(node), network_.Offset(node));
      }
    }
  }
  return std::move(builder).Finish();
}

}  // namespace

Result<Trace> MakeTrace(const GenConfig& config, GenSummary* summary) {
  WEFT_RETURN_IF_ERROR(CheckGenLimits(config));
  Generator generator(config);
  WEFT_RETURN_IF_ERROR(generator.Run());
  return generator.Build(summary);
}

std::string FormatGenSummary(const GenSummary& s) {
  return fmt::format("{} messages, {} paths over {}; {} loops, {:.1f} paths in flight on average",
                     s.messages, s.paths, FormatDuration(s.last - s.first), s.loops,
                     s.mean_in_flight);
}

}  // namespace weft
