#include "testbed/downstream.h"

#include <system_error>
#include <thread>
#include <utility>

#include "testbed/instrumentation.h"

namespace weft::testbed {

Status DownstreamCaller::CallAll(const Frame& request, std::mt19937_64& rng) {
  const RequestType& rt = tier_.requests[request.request_type];
  auto call_group = [&](const CallSpec& spec, uint32_t count) {
    return spawn_ ? CallGroupOnThreads(request, spec, count) : CallGroup(request, spec, count);
  };
  bool first = true;
  for (const CallSpec& spec : rt.calls) {
    uint32_t n = std::uniform_int_distribution<uint32_t>(spec.min_count, spec.max_count)(rng);
    if (spec.parallel) {
      if (n == 0) continue;
      if (!first) Serve(rt.between.Sample(rng));
      first = false;
      WEFT_RETURN_IF_ERROR(call_group(spec, n));
      continue;
    }
    for (uint32_t k = 0; k < n; ++k) {
      if (!first) Serve(rt.between.Sample(rng));
      first = false;
      WEFT_RETURN_IF_ERROR(call_group(spec, 1));
    }
  }
  return Status::Ok();
}

Result<DownstreamCaller::CallConn> DownstreamCaller::GetConn(int tier) {
  const Tier& t = topo_.tiers[tier];
  std::string_view replicas;
  ServerRef to{tier, balancer_.Pick(tier, &replicas)};
  if (tier_.pooled && !in_child_) {
    std::lock_guard lock(pool_mu_);
    auto& idle = pool_[to];
    if (!idle.empty()) {
      std::unique_ptr<Conn> c = std::move(idle.back());
      idle.pop_back();
      return CallConn{to, std::move(c), replicas};
    }
  }
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c,
                        ConnectLoopback(t.servers[to.index].port, topo_.io_timeout, t.udp));
  c->http = t.http;
  return CallConn{to, std::move(c), replicas};
}

void DownstreamCaller::PutConn(CallConn conn) {
  if (!tier_.pooled || in_child_) return;  // per-request connections close here
  std::lock_guard lock(pool_mu_);
  pool_[conn.to].push_back(std::move(conn.conn));
}

Status DownstreamCaller::CallGroup(const Frame& request, const CallSpec& spec, uint32_t count) {
  if (Pipelines(spec.tier)) return PipelinedCallGroup(request, spec, count);
  const RequestType& callee = topo_.tiers[spec.tier].requests[spec.request];
  // A parallel group sends every call before awaiting any reply, each on its own
  // connection; a sequential group of one is the same code with count 1.
  std::vector<std::pair<CallConn, Frame>> calls;
  for (uint32_t k = 0; k < count; ++k) {
    WEFT_ASSIGN_OR_RETURN(CallConn c, GetConn(spec.tier));
    Conn& conn = *c.conn;
    Frame call = NewCall(request, spec);
    call.baggage = BaggageForCall();
    std::string wire = EncodeMessage(call, callee.request_bytes, conn.http);
    kCallTracepoint.Fire(callee.name, wire.size(), topo_.tiers[spec.tier].name,
                         topo_.tiers[spec.tier].servers[c.to.index].name, server_, c.replicas,
                         TimeIfWoven(kCallTracepoint));
    log_.Record(TruthLog::Direction::kSend, call, conn, wire.size(), callee.name, WallNow());
    WEFT_RETURN_IF_ERROR(WriteAll(conn.fd, wire).WithContext(conn.peer));
    calls.emplace_back(std::move(c), call);
  }
  Status result;
  for (auto& [c, call] : calls) {
    Conn& conn = *c.conn;
    size_t bytes = 0;
    Result<std::optional<Frame>> reply = ReadConnFrame(conn, &bytes);
    if (!reply.ok() || !reply->has_value()) {
      return Status::IoError("{} from {}", reply.ok() ? "end of stream" : reply.status().message(),
                             conn.peer);
    }
    Frame& r = **reply;
    log_.Record(TruthLog::Direction::kRecv, r, conn, bytes, "-", WallNow());
    if (r.call_id != call.call_id) {
      return Status::Corruption("reply for call {:x} while awaiting {:x}", r.call_id, call.call_id);
    }
    JoinReplyBaggage(std::move(r.baggage));
    if (r.type == FrameType::kError && result.ok()) {
      result = Status::Internal("{} answered with an error", conn.peer);
    }
    if (!r.close) PutConn(std::move(c));  // the server closes it after this reply
  }
  return result;
}

Frame DownstreamCaller::NewCall(const Frame& request, const CallSpec& spec) {
  Frame call;
  call.type = FrameType::kRequest;
  call.request_type = uint16_t(spec.request);
  call.request_id = request.request_id;
  call.call_id = NewCallId();
  call.parent_call = request.call_id;
  // HTTP: a connection that is not pooled is closed after its call, so say so.
  call.close = !tier_.pooled || in_child_;
  return call;
}

Result<std::shared_ptr<PipelinedConn>> DownstreamCaller::GetPipelined(int tier, ServerRef* callee,
                                                                      std::string_view* replicas) {
  ServerRef to{tier, balancer_.Pick(tier, replicas)};
  *callee = to;
  {
    std::lock_guard lock(pool_mu_);
    auto& open = pipelined_[to];
    std::erase_if(open, [](const auto& c) { return c->broken(); });
    // First fit, not least loaded: calls pack onto few connections, as pipelining
    // clients do, so that connections really carry several calls at once.
    for (const std::shared_ptr<PipelinedConn>& c : open) {
      if (c->TryReserve(tier_.pipeline)) return c;
    }
  }
  const Tier& t = topo_.tiers[tier];
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Conn> conn,
                        ConnectLoopback(t.servers[to.index].port, topo_.io_timeout));
  conn->http = t.http;
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<PipelinedConn> c,
                        PipelinedConn::Start(std::move(conn), log_));
  (void)c->TryReserve(tier_.pipeline);  // a fresh connection has room
  std::lock_guard lock(pool_mu_);
  pipelined_[to].push_back(c);
  return c;
}

Status DownstreamCaller::PipelinedCallGroup(const Frame& request, const CallSpec& spec,
                                            uint32_t count) {
  const RequestType& callee = topo_.tiers[spec.tier].requests[spec.request];
  // As CallGroup: every call of a parallel group goes out before any reply is awaited;
  // here calls may share a connection, their own or another worker's.
  std::vector<std::pair<std::shared_ptr<PipelinedConn>, std::shared_ptr<PipelinedConn::Pending>>>
      calls;
  for (uint32_t k = 0; k < count; ++k) {
    ServerRef to;
    std::string_view replicas;
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<PipelinedConn> conn,
                          GetPipelined(spec.tier, &to, &replicas));
    Frame call = NewCall(request, spec);
    call.baggage = BaggageForCall();
    std::string wire = EncodeMessage(call, callee.request_bytes, conn->conn().http);
    // `to` is the callee's node name, as on every other Call.
    kCallTracepoint.Fire(callee.name, wire.size(), topo_.tiers[spec.tier].name,
                         topo_.tiers[spec.tier].servers[to.index].name, server_, replicas,
                         TimeIfWoven(kCallTracepoint));
    WEFT_ASSIGN_OR_RETURN(auto pending, conn->Send(call, wire, callee.name));
    calls.emplace_back(std::move(conn), std::move(pending));
  }
  Status result;
  for (auto& [conn, pending] : calls) {
    WEFT_ASSIGN_OR_RETURN(Frame reply, conn->Await(pending));
    if (reply.type == FrameType::kError && result.ok()) {
      result = Status::Internal("{} answered with an error", conn->conn().peer);
    }
  }
  return result;
}

Status DownstreamCaller::CallGroupOnThreads(const Frame& request, const CallSpec& spec,
                                            uint32_t count) {
  std::vector<Status> results(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  // Each thread carries a branch of the request's baggage, joined back when it ends.
  std::vector<RequestBaggage> branches(count);
  Status spawned;
  for (uint32_t k = 0; k < count; ++k) {
    branches[k] = BranchCurrentBaggage();
    try {
      threads.emplace_back([this, &request, &spec, &results, &branches, k] {
        RequestBaggageScope baggage(branches[k]);
        results[k] = CallGroup(request, spec, 1);
      });
    } catch (const std::system_error& e) {  // no thread to be had: the calls made so far finish
      spawned = Status::IoError("spawning a thread for a call: {}", e.what());
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  for (RequestBaggage& branch : branches) JoinCurrentBaggage(std::move(branch));
  WEFT_RETURN_IF_ERROR(spawned);
  for (const Status& s : results) WEFT_RETURN_IF_ERROR(s);
  return Status::Ok();
}

}  // namespace weft::testbed
