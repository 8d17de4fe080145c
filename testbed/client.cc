#include "testbed/client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "testbed/wire.h"

namespace weft::testbed {

std::string FormatLoadStats(const LoadStats& s) {
  return fmt::format(
      "{} requests in {}: {} ok, {} error replies, {} failed; {:.1f} req/s; latency p50 {} "
      "p99 {}",
      s.sent, FormatDuration(s.elapsed), s.ok, s.errors, s.failed, s.Throughput(),
      FormatDuration(s.latency.Quantile(0.5)), FormatDuration(s.latency.Quantile(0.99)));
}

Result<LoadStats> RunLoad(const Topology& topo, const LoadOptions& options) {
  if (options.concurrency == 0) return Status::InvalidArgument("concurrency must be positive");
  std::unique_ptr<TruthLog> log;
  if (!options.truth_dir.empty()) {
    WEFT_ASSIGN_OR_RETURN(log, TruthLog::Open(options.truth_dir, "client"));
  }
  const Tier& entry = topo.tiers[0];
  std::vector<double> weights;
  for (const RequestType& r : entry.requests) weights.push_back(r.weight);
  std::atomic<uint32_t> round_robin{0};
  std::atomic<uint32_t> next_call{0};
  std::mutex mu;
  LoadStats total;
  const TimeNs start = WallNow();
  const TimeNs end = start + options.duration;
  auto stopped = [&] {
    return WallNow() >= end || (options.stop && options.stop->load());
  };

  auto session = [&](uint32_t id) {
    std::mt19937_64 rng(uint64_t(start) + id);
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    std::map<int, std::unique_ptr<Conn>> pooled;  // per entry server
    LoadStats mine;
    const uint32_t depth = std::max<uint32_t>(1, topo.pipeline);
    while (!stopped()) {
      int server = int(round_robin.fetch_add(1) % entry.servers.size());
      std::unique_ptr<Conn> conn = std::move(pooled[server]);
      if (!conn) {
        Result<std::unique_ptr<Conn>> c =
            ConnectLoopback(entry.servers[server].port, topo.io_timeout, entry.udp);
        if (!c.ok()) {
          ++mine.sent;
          ++mine.failed;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        conn = std::move(*c);
        conn->http = entry.http;
      }
      // Pipelining: `depth` requests go out back to back before any reply is read; replies
      // are matched by call id, since pool and event-loop servers may answer out of order.
      std::map<uint64_t, TimeNs> outstanding;
      bool broken = false;
      for (uint32_t k = 0; k < depth && !broken; ++k) {
        Frame call;
        call.request_type = uint16_t(pick(rng));
        call.call_id = (uint64_t(getpid()) << 32) | ++next_call;
        call.request_id = call.call_id;
        const RequestType& rt = entry.requests[call.request_type];
        ++mine.sent;
        std::string wire = EncodeMessage(call, rt.request_bytes, conn->http);
        TimeNs sent = WallNow();
        if (log) log->Record(TruthLog::Direction::kSend, call, *conn, wire.size(), rt.name, sent);
        if (WriteAll(conn->fd, wire).ok()) {
          outstanding[call.call_id] = sent;
        } else {
          ++mine.failed;
          broken = true;
        }
      }
      while (!outstanding.empty() && !broken) {
        size_t bytes = 0;
        Result<std::optional<Frame>> reply = ReadConnFrame(*conn, &bytes);
        TimeNs done = WallNow();
        auto it = reply.ok() && reply->has_value() ? outstanding.find((*reply)->call_id)
                                                   : outstanding.end();
        if (it == outstanding.end()) {
          broken = true;
          break;
        }
        if (log) log->Record(TruthLog::Direction::kRecv, **reply, *conn, bytes, "-", done);
        if ((*reply)->type == FrameType::kReply) {
          ++mine.ok;
          mine.latency.Record(done - it->second);
        } else {
          ++mine.errors;
        }
        outstanding.erase(it);
      }
      mine.failed += outstanding.size();
      if (topo.client_pooled && !broken) pooled[server] = std::move(conn);
      if (topo.think > 0) Serve(std::min(topo.think, std::max<TimeNs>(0, end - WallNow())));
    }
    std::lock_guard lock(mu);
    total.sent += mine.sent;
    total.ok += mine.ok;
    total.errors += mine.errors;
    total.failed += mine.failed;
    total.latency.Merge(mine.latency);
  };
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < options.concurrency; ++i) threads.emplace_back(session, i);
  for (std::thread& t : threads) t.join();
  total.elapsed = WallNow() - start;
  return total;
}

}  // namespace weft::testbed
