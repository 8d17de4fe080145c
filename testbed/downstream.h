// A testbed server's calls to the tiers below it: the calls a request makes (its request
// type's call groups, each count drawn at random, `between` service times between them),
// on which connections (pooled, one per call, or pipelined up to the tier's `pipeline`),
// and the truth log of every call and reply. The threading models differ in who calls
// (server.cc); spawn makes each call on a thread of its own, and a fork model's child
// calls on connections of its own.
//
// Thread-safety: CallAll may run on many threads at once, except in a fork model's child,
// which has one.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "testbed/pipelined_conn.h"
#include "testbed/topology.h"
#include "testbed/wire.h"

namespace weft::testbed {

class DownstreamCaller {
 public:
  // For server `spec` of `tier` in `topo`; every call and reply is logged to `log`. All
  // three must outlive the caller.
  DownstreamCaller(const Topology& topo, const Tier& tier, const ServerSpec& spec, TruthLog& log)
      : topo_(topo),
        tier_(tier),
        spawn_(spec.model == ThreadingModel::kSpawn),
        server_(spec.name),
        log_(log),
        balancer_(topo, spec.name) {}

  // Makes every call of `request` (a request of this tier, of a known type), drawing the
  // counts and the `between` times from `rng`. The first failure: a call that could not
  // be made, a reply that did not come, or an error reply.
  Status CallAll(const Frame& request, std::mt19937_64& rng);

  // In a fork model's child, which has one thread: it takes no lock that another thread
  // of the parent may have held at the fork (the connection pools), so it calls
  // downstream on connections of its own, one per call, and never pipelines.
  void EnterChild() { in_child_ = true; }

 private:
  // A downstream connection of the blocking models and the server it leads to, to
  // return it to its pool.
  struct CallConn {
    ServerRef to;
    std::unique_ptr<Conn> conn;
    std::string_view replicas;  // the servers `to` was chosen among (the balancer's names)
  };

  uint64_t NewCallId() { return (uint64_t(getpid()) << 32) | ++next_call_; }
  Status CallGroup(const Frame& request, const CallSpec& spec, uint32_t count);
  // The spawn model's call group: each call on a std::thread spawned for it, all of them
  // started before any is joined (a parallel group) and all joined before it returns.
  Status CallGroupOnThreads(const Frame& request, const CallSpec& spec, uint32_t count);
  Result<CallConn> GetConn(int tier);
  void PutConn(CallConn conn);
  // A call frame nested in `request`, to `spec`'s request type.
  Frame NewCall(const Frame& request, const CallSpec& spec);
  // With tier_.pipeline > 1 calls to TCP tiers share pooled connections, up to
  // tier_.pipeline calls in flight on each.
  bool Pipelines(int tier) const {
    return tier_.pipeline > 1 && !topo_.tiers[tier].udp && !in_child_;
  }
  // A pooled connection to a server of `tier` with a slot reserved for one call: the
  // first open one with room, else a new one.
  // `to` and `replicas`: the callee and the servers it was chosen among.
  Result<std::shared_ptr<PipelinedConn>> GetPipelined(int tier, ServerRef* to,
                                                      std::string_view* replicas);
  Status PipelinedCallGroup(const Frame& request, const CallSpec& spec, uint32_t count);

  const Topology& topo_;
  const Tier& tier_;  // the caller's own tier
  const bool spawn_;
  const std::string server_;  // the caller's node name (Testbed.Call)
  TruthLog& log_;
  bool in_child_ = false;
  std::atomic<uint32_t> next_call_{0};
  Balancer balancer_;
  std::mutex pool_mu_;
  std::map<ServerRef, std::vector<std::unique_ptr<Conn>>> pool_;
  std::map<ServerRef, std::vector<std::shared_ptr<PipelinedConn>>> pipelined_;
};

}  // namespace weft::testbed
