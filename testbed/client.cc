#include "testbed/client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "testbed/http.h"
#include "testbed/wire.h"

namespace weft::testbed {

std::string FormatLoadStats(const LoadStats& s) {
  return fmt::format(
      "{} requests in {}: {} ok, {} error replies, {} failed{}; {:.1f} req/s; latency p50 {} "
      "p99 {}",
      s.sent, FormatDuration(s.elapsed), s.ok, s.errors, s.failed,
      s.dropped > 0 ? fmt::format(" ({} dropped unsent)", s.dropped) : "", s.Throughput(),
      FormatDuration(s.latency.Quantile(0.5)), FormatDuration(s.latency.Quantile(0.99)));
}

namespace {

// An X-Request-Id value: 32 hex digits, like nginx's $request_id.
std::string RequestId(std::mt19937_64& ids) { return fmt::format("{:016x}{:016x}", ids(), ids()); }

// Open loop: this thread draws Poisson arrivals into a queue, and `concurrency` senders
// each take the oldest arrival and exchange it on their own connection. Arrivals never
// wait for replies, so a slow system shows as latency and drops, not as a lower rate.
LoadStats RunOpenLoop(const Topology& topo, const LoadOptions& options, TruthLog* log) {
  const Tier& entry = topo.tiers[0];
  std::vector<double> weights;
  for (const RequestType& r : entry.requests) weights.push_back(r.weight);
  Balancer balancer(topo, "client");
  std::atomic<uint32_t> next_call{0};
  std::mutex mu;
  std::condition_variable ready;
  std::deque<TimeNs> arrivals;  // scheduled send times no sender has taken yet
  uint32_t in_flight = 0;
  bool arriving = true;
  LoadStats total;
  const TimeNs start = WallNow();
  const TimeNs end = start + options.duration;
  auto interrupted = [&] { return options.stop && options.stop->load(); };

  auto sender = [&](uint32_t id) {
    std::mt19937_64 rng(topo.seed + 1 + id);
    std::mt19937_64 ids(std::random_device{}());
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    std::map<int, std::unique_ptr<Conn>> pooled;  // per entry server
    LoadStats mine;
    for (;;) {
      TimeNs scheduled = 0;
      {
        std::unique_lock lock(mu);
        ready.wait(lock, [&] { return !arrivals.empty() || !arriving; });
        if (arrivals.empty()) break;
        scheduled = arrivals.front();
        arrivals.pop_front();
        ++in_flight;
      }
      // An arrival older than io_timeout would time out anyway; after an interrupt the
      // backlog is not worth waiting for. Either way it is dropped unsent.
      if (interrupted() || WallNow() - scheduled > topo.io_timeout) {
        ++mine.failed;
        ++mine.dropped;
      } else {
        int server = balancer.Pick(0);
        std::unique_ptr<Conn> conn = std::move(pooled[server]);
        if (!conn) {
          Result<std::unique_ptr<Conn>> c =
              ConnectLoopback(entry.servers[server].port, topo.io_timeout, entry.udp);
          if (c.ok()) {
            conn = std::move(*c);
            conn->http = entry.http;
          }
        }
        bool answered = false, server_closes = false;
        if (conn) {
          Frame call;
          call.request_type = uint16_t(pick(rng));
          call.call_id = (uint64_t(getpid()) << 32) | ++next_call;
          call.request_id = call.call_id;
          call.close = !topo.client_pooled;  // HTTP: Connection: close
          call.baggage = options.baggage;
          const RequestType& rt = entry.requests[call.request_type];
          std::string wire = EncodeMessage(call, rt.request_bytes, conn->http);
          if (conn->http && options.request_id_header)
            AddHttpHeader(&wire, "X-Request-Id", RequestId(ids));
          if (log) {
            log->Record(TruthLog::Direction::kSend, call, *conn, wire.size(), rt.name, WallNow());
          }
          if (WriteAll(conn->fd, wire).ok()) {
            size_t bytes = 0;
            Result<std::optional<Frame>> reply = ReadConnFrame(*conn, &bytes);
            TimeNs done = WallNow();
            if (reply.ok() && reply->has_value() && (*reply)->call_id == call.call_id) {
              answered = true;
              server_closes = (*reply)->close;
              if (log) log->Record(TruthLog::Direction::kRecv, **reply, *conn, bytes, "-", done);
              if ((*reply)->type == FrameType::kReply) {
                ++mine.ok;
                mine.latency.Record(done - scheduled);
              } else {
                ++mine.errors;
              }
            }
          }
        }
        if (!answered) ++mine.failed;
        if (answered && !server_closes && topo.client_pooled) pooled[server] = std::move(conn);
      }
      std::lock_guard lock(mu);
      --in_flight;
    }
    std::lock_guard lock(mu);
    total.Add(mine);
  };
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < options.concurrency; ++i) threads.emplace_back(sender, i);

  std::mt19937_64 rng(topo.seed);
  std::exponential_distribution<double> gap(options.rate);  // seconds between arrivals
  uint64_t sent = 0, dropped = 0;
  for (TimeNs next = start + TimeNs(gap(rng) * double(kSecond)); next < end && !interrupted();
       next += TimeNs(gap(rng) * double(kSecond))) {
    for (TimeNs now = WallNow(); now < next && !interrupted(); now = WallNow()) {
      std::this_thread::sleep_for(
          std::chrono::nanoseconds(std::min<TimeNs>(next - now, 10 * kMillisecond)));
    }
    if (interrupted()) break;
    ++sent;
    std::lock_guard lock(mu);
    if (arrivals.size() + in_flight >= options.max_outstanding) {
      ++dropped;
    } else {
      arrivals.push_back(next);
      ready.notify_one();
    }
  }
  {
    std::lock_guard lock(mu);
    arriving = false;
  }
  ready.notify_all();
  for (std::thread& t : threads) t.join();
  total.sent = sent;
  total.failed += dropped;
  total.dropped += dropped;
  total.elapsed = WallNow() - start;
  return total;
}

}  // namespace

Result<LoadStats> RunLoad(const Topology& topo, const LoadOptions& options) {
  if (options.concurrency == 0) return Status::InvalidArgument("concurrency must be positive");
  if (!(options.rate >= 0)) return Status::InvalidArgument("rate must not be negative");
  if (options.rate > 0 && options.max_outstanding == 0) {
    return Status::InvalidArgument("max_outstanding must be positive");
  }
  std::unique_ptr<TruthLog> log;
  if (!options.truth_dir.empty()) {
    WEFT_ASSIGN_OR_RETURN(log, TruthLog::Open(options.truth_dir, "client"));
  }
  if (options.rate > 0) return RunOpenLoop(topo, options, log.get());
  const Tier& entry = topo.tiers[0];
  std::vector<double> weights;
  for (const RequestType& r : entry.requests) weights.push_back(r.weight);
  Balancer balancer(topo, "client");
  std::atomic<uint32_t> next_call{0};
  std::mutex mu;
  LoadStats total;
  const TimeNs start = WallNow();
  const TimeNs end = start + options.duration;
  std::atomic<uint64_t> started{0};
  // Claims the next `n` requests of the run's budget, if it has any left (a pipelined
  // batch may overrun it by less than a batch).
  auto claim = [&](uint32_t n) {
    return options.requests == 0 ||
           started.fetch_add(n, std::memory_order_relaxed) < options.requests;
  };
  auto stopped = [&] { return WallNow() >= end || (options.stop && options.stop->load()); };

  auto session = [&](uint32_t id) {
    // A run of a fixed number of requests draws the same request types every time (the
    // topology's seed), so that two builds or variants are given the same work to count.
    std::mt19937_64 rng(options.requests > 0 ? topo.seed + id : uint64_t(start) + id);
    std::mt19937_64 ids(std::random_device{}());
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    std::map<int, std::unique_ptr<Conn>> pooled;  // per entry server
    LoadStats mine;
    const uint32_t depth = std::max<uint32_t>(1, topo.pipeline);
    while (!stopped() && claim(depth)) {
      int server = balancer.Pick(0);
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
      bool server_closes = false;  // a reply said Connection: close
      for (uint32_t k = 0; k < depth && !broken; ++k) {
        Frame call;
        call.request_type = uint16_t(pick(rng));
        call.call_id = (uint64_t(getpid()) << 32) | ++next_call;
        call.request_id = call.call_id;
        call.close = !topo.client_pooled && k + 1 == depth;  // HTTP: Connection: close
        call.baggage = options.baggage;
        const RequestType& rt = entry.requests[call.request_type];
        ++mine.sent;
        std::string wire = EncodeMessage(call, rt.request_bytes, conn->http);
        if (conn->http && options.request_id_header)
          AddHttpHeader(&wire, "X-Request-Id", RequestId(ids));
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
        server_closes |= (*reply)->close;
        if ((*reply)->type == FrameType::kReply) {
          ++mine.ok;
          mine.latency.Record(done - it->second);
        } else {
          ++mine.errors;
        }
        outstanding.erase(it);
      }
      mine.failed += outstanding.size();
      if (topo.client_pooled && !broken && !server_closes) pooled[server] = std::move(conn);
      if (topo.think > 0) Serve(std::min(topo.think, std::max<TimeNs>(0, end - WallNow())));
    }
    std::lock_guard lock(mu);
    total.Add(mine);
  };
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < options.concurrency; ++i) threads.emplace_back(session, i);
  for (std::thread& t : threads) t.join();
  total.elapsed = WallNow() - start;
  return total;
}

}  // namespace weft::testbed
