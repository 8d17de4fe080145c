// The testbed's topology: tiers of servers, their threading models, and for each request
// type a stochastic call graph (docs/testbed.md). Loaded from TOML; ports 0 are chosen by
// the kernel when the runner binds them.
#pragma once

#include <atomic>
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace weft::testbed {

// How one server turns requests into work. See docs/testbed.md for what each model makes
// hard for a tracer.
enum class ThreadingModel : uint8_t {
  kThreadPerConnection,  // blocking; the thread that reads a request replies to it
  kWorkerPool,           // dispatcher reads, a worker calls downstream and replies
  kHandoff,              // one pool calls downstream, another replies
  kStaged,               // SEDA: read, compute, call and reply stages with their own queues
  kEventLoop,            // SPED: one thread, non-blocking sockets, epoll, many requests at once
  kFork,                 // CGI: a connection's thread reads a request, a forked child serves it
  kSpawn,                // thread per connection, each downstream call on a thread spawned for it
};
std::string_view ThreadingModelName(ThreadingModel model);

// A service time: constant, exponential or uniform.
struct Distribution {
  enum class Kind : uint8_t { kConstant, kExponential, kUniform } kind = Kind::kConstant;
  TimeNs a = 0;  // the constant, the mean, or the low end
  TimeNs b = 0;  // the high end of a uniform
  TimeNs Sample(std::mt19937_64& rng) const;
};
// "2ms", "exp(2ms)", "uniform(1ms,3ms)"; "0" is no time.
Result<Distribution> ParseDistribution(std::string_view text);

// One downstream call of a request type: `count` calls (uniform in [min_count, max_count])
// to `tier`'s request `request`, in sequence or all at once.
struct CallSpec {
  int tier = -1;
  int request = -1;
  uint32_t min_count = 1;
  uint32_t max_count = 1;
  bool parallel = false;
};

struct RequestType {
  std::string name;
  double weight = 1;  // share of the client's mix (entry tier only)
  Distribution before, between, after;
  uint32_t reply_bytes = 64;
  uint32_t request_bytes = 64;
  // Bytes a request of this type reads from (simulated) disk, during its `before` time:
  // the Testbed.DiskRead tracepoint reports them. 0: no disk read.
  uint32_t disk_bytes = 0;
  std::vector<CallSpec> calls;
};

struct ServerSpec {
  std::string name;  // "<tier><index>", the node name in traces
  uint16_t port = 0;
  ThreadingModel model = ThreadingModel::kThreadPerConnection;
  uint32_t workers = 8;            // threads per pool or stage
  uint32_t queue_capacity = 1024;  // per queue; a full queue answers with an error
};

// How calls to a tier are spread over its servers (`balance` in the tier's table).
// kPreferFirst: random, but the tier's first server gets a share `prefer_share` of the calls
// and the others split the rest (a replica choice that silently is not uniform, the shape
// of HDFS-6268; the case study in docs/testbed.md).
enum class Balance : uint8_t { kRoundRobin, kRandom, kPreferFirst };

struct Tier {
  std::string name;
  Balance balance = Balance::kRoundRobin;
  double prefer_share = 0.5;  // kPreferFirst only
  // Replication: each call's candidates are `replicas` distinct servers of the tier drawn
  // at random (the replicas of the block it reads), listed in the tier's order, as a name
  // node that does not shuffle its answer lists them; the balance picks among them (kPreferFirst:
  // the first listed). 0: every server is a candidate, listed in order.
  uint32_t replicas = 0;
  // A fault the reader is not told about: the server of index `slow_server` takes
  // `slow_extra` longer for a share `slow_share` of its disk reads (request types with
  // disk_bytes), as a failing disk would. -1: none.
  int slow_server = -1;
  double slow_share = 0;
  TimeNs slow_extra = 0;
  bool pooled = true;  // persistent downstream connections, else one per call
  // Calls one pooled downstream connection of this tier's servers may carry at once
  // (HTTP/1.1-style pipelining: requests written back to back, replies read back in
  // order). 1: a connection carries one call at a time. Calls to UDP tiers never pipeline.
  uint32_t pipeline = 1;
  // Served over UDP, one frame per datagram, by `workers` threads sharing the socket (a
  // DNS-like service); the threading model does not apply.
  bool udp = false;
  bool http = false;          // HTTP/1.1 messages instead of frames (protocol = "http")
  bool http_chunked = false;  // HTTP: this tier's servers send replies in chunked coding
  // HTTP: a server closes a connection after answering its N-th request, saying
  // "Connection: close" in that reply (as servers bound keep-alive); 0: never.
  uint32_t http_close_after = 0;
  // Event-loop servers: service times are spent in the loop itself, as a single-threaded
  // server computes (BorderPatrol's "immediate" modules), instead of on timers, as when it
  // waits for asynchronous I/O. Other models ignore it.
  bool inline_service = false;
  // Event-loop servers with service times on timers: one timerfd for all of them, the
  // earliest of a heap kept in the loop (as libuv and nginx keep their timers), instead of
  // a timerfd per sleeping request (as a loop waits on a per-request asynchronous
  // operation). Only the latter tells a capture which request a timer resumes.
  bool shared_timer = false;
  std::vector<ServerSpec> servers;
  std::vector<RequestType> requests;
};

struct Topology {
  std::string name;
  std::vector<Tier> tiers;  // tiers[0] is the entry tier the load client calls
  bool client_pooled = true;
  TimeNs think = 0;                 // client think time between requests
  uint32_t pipeline = 1;            // requests a client session sends before reading their replies
  TimeNs io_timeout = 5 * kSecond;  // bounds every blocking read and write
  uint64_t seed = 1;  // seeds random load sharing, so that a run's choices can be repeated

  int TierIndex(std::string_view name) const;
};

// One server of a topology: topology.tiers[tier].servers[index]. Ordered, to key the
// downstream connection pools.
struct ServerRef {
  int tier = -1;
  int index = -1;
  auto operator<=>(const ServerRef&) const = default;
};

// Picks the server of a tier for each call from one node, by the tier's balance. Random
// choices come from one generator per node seeded by the topology's seed and the node's
// name: the node's k-th call to a tier goes to the same server in every run. Thread-safe.
class Balancer {
 public:
  Balancer(const Topology& topo, std::string_view node);
  // With `candidates`, also the servers it chose among, as the tier lists them
  // ("storage0,storage2"): a view valid as long as the balancer.
  int Pick(int tier, std::string_view* candidates = nullptr);

 private:
  // A tier with fewer replicas than servers.
  int PickReplica(int tier, std::string_view* candidates);

  const Topology& topo_;
  std::vector<std::atomic<uint32_t>> round_robin_;  // per tier
  std::vector<std::string> every_server_;           // per tier: its servers' names, listed
  std::mutex mu_;
  std::mt19937_64 rng_;
  // Per tier, the names of each set of candidates met so far, by its bit set (guarded by mu_).
  std::vector<std::map<uint64_t, std::string>> candidate_names_;
};

Result<Topology> ParseTopology(std::string_view text, std::string_view source);
Result<Topology> LoadTopology(const std::string& path);

}  // namespace weft::testbed
