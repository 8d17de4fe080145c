#include "pivot/frontend.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "pivot/agent.h"
#include "query/parser.h"
#include "query/query.h"

namespace weft::pivot {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomToken() {
  std::random_device device;
  std::mt19937_64 rng((uint64_t(device()) << 32) ^ uint64_t(NowNs()) ^ uint64_t(getpid()));
  return fmt::format("{:012x}", rng() & 0xffffffffffffULL);
}

}  // namespace

Result<Bus*> OpenFrontEndBus(std::string_view url) {
  if (url == "local") return &SharedLocalBus();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Bus> bus, OpenBus(url, {.may_host = true}));
  return bus.release();  // one per `weft pivot` run, which ends with the process
}

Result<std::vector<AgentDescription>> ListAgents(Bus& bus, int window_ms) {
  struct Replies {
    std::mutex mu;
    std::vector<AgentDescription> agents;
  };
  auto replies = std::make_shared<Replies>();
  const std::string reply_to = std::string(kReplyPrefix) + RandomToken();
  WEFT_ASSIGN_OR_RETURN(
      uint64_t sub, bus.Subscribe(reply_to, [replies](std::string_view, std::string_view p) {
        Result<AgentDescription> d = DecodeAgent(p);
        if (!d.ok()) return;
        std::lock_guard lock(replies->mu);
        auto same = std::find_if(
            replies->agents.begin(), replies->agents.end(),
            [&](const AgentDescription& a) { return a.host == d->host && a.pid == d->pid; });
        if (same == replies->agents.end()) {
          replies->agents.push_back(std::move(*d));
        } else {
          *same = std::move(*d);  // the latest answer
        }
      }));
  // Asked again every 100 ms of the window: a bus this front end has just started hosting
  // has no agents yet (they connect within their 200 ms retry), and a message published
  // before an agent subscribed never reaches it.
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(window_ms);
  Status flushed;
  do {
    bus.Publish(kListSubject, EncodeList({.reply_to = reply_to}));
    flushed = bus.Flush(window_ms);
    if (!flushed.ok()) break;
    std::this_thread::sleep_until(
        std::min(end, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
  } while (std::chrono::steady_clock::now() < end);
  bus.Unsubscribe(sub);
  if (!flushed.ok()) return flushed;
  std::lock_guard lock(replies->mu);
  std::vector<AgentDescription> out = std::move(replies->agents);
  std::sort(out.begin(), out.end(), [](const AgentDescription& a, const AgentDescription& b) {
    return std::tie(a.host, a.pid) < std::tie(b.host, b.pid);
  });
  return out;
}

std::vector<query::Tracepoint> Catalog(const std::vector<AgentDescription>& agents) {
  std::vector<query::Tracepoint> out;
  for (const AgentDescription& a : agents) {
    for (const query::Tracepoint& t : a.tracepoints) {
      if (std::none_of(out.begin(), out.end(),
                       [&](const query::Tracepoint& o) { return o.name == t.name; })) {
        out.push_back(t);
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const query::Tracepoint& a, const query::Tracepoint& b) { return a.name < b.name; });
  return out;
}

Result<std::unique_ptr<LiveSession>> LiveSession::Install(Bus& bus, std::string text,
                                                          const SessionOptions& options) {
  WEFT_ASSIGN_OR_RETURN(query::Program program, query::ParseProgram(text, "query"));
  WEFT_ASSIGN_OR_RETURN(std::vector<AgentDescription> agents,
                        ListAgents(bus, options.list_window_ms));
  if (agents.empty()) {
    return Status::NotFound("no live process answered on bus {} within {} ms", bus.url(),
                            options.list_window_ms);
  }
  std::vector<query::Tracepoint> catalog = Catalog(agents);
  WEFT_ASSIGN_OR_RETURN(
      auto compiled,
      query::Compile(program, catalog,
                     {.text = text, .source = "query", .optimize = options.optimize}));
  uint32_t slot_base = 0;
  for (const AgentDescription& a : agents) {
    for (const InstalledQueryInfo& q : a.queries) {
      slot_base = std::max(slot_base, q.slot_base + q.slots);
    }
  }
  if (slot_base + compiled->units.size() > kMaxSlotBase) {
    return Status::OutOfRange("no baggage slots left: uninstall some queries");
  }
  std::unique_ptr<LiveSession> s(new LiveSession(bus));
  s->id_ = "q" + RandomToken();
  s->interval_ns_ = options.interval_ns;
  s->agents_ = agents.size();
  LiveSession* self = s.get();
  WEFT_ASSIGN_OR_RETURN(
      s->subscription_,
      bus.Subscribe(ResultsSubject(s->id_), [self](std::string_view, std::string_view payload) {
        self->OnPartials(payload);
      }));
  bus.Publish(kInstallSubject, EncodeInstall({.id = s->id_,
                                              .text = std::move(text),
                                              .slot_base = slot_base,
                                              .interval_ns = options.interval_ns,
                                              .optimize = options.optimize,
                                              .catalog = std::move(catalog)}));
  WEFT_RETURN_IF_ERROR(bus.Flush(5000));
  return s;
}

LiveSession::~LiveSession() {
  if (!finished_) (void)Finish(0);
  bus_.Unsubscribe(subscription_);
  // The bus may still be delivering to this session's handler: wait for it.
  (void)bus_.Flush(1000);
}

void LiveSession::OnPartials(std::string_view payload) {
  Result<PartialResults> p = DecodePartials(payload);
  std::lock_guard lock(mu_);
  if (!p.ok() || p->id != id_) {
    ++bad_;
    return;
  }
  const std::string agent = fmt::format("{}@{}", p->pid, p->host);
  AgentDrops& lost = lost_[agent];
  lost.partials = std::max(lost.partials, p->lost.partials);
  lost.bus = std::max(lost.bus, p->lost.bus);
  lost.interned = std::max(lost.interned, p->lost.interned);
  lost.children = std::max(lost.children, p->lost.children);
  if (p->final) finals_.push_back(agent);
  if (!p->refused.empty()) {
    refusals_.push_back(fmt::format("{}: {}", agent, p->refused));
    return;
  }
  if (std::find(returned_.begin(), returned_.end(), p->interval_start_ns) != returned_.end()) {
    if (p->groups.size() > 0) ++late_;
    return;
  }
  pending_.Add(*p);
  all_.Add(*p);
  reported_[p->interval_start_ns].insert(agent);
}

std::vector<query::QueryResult> LiveSession::TakeComplete(int64_t now_ns) {
  const int64_t grace = std::min<int64_t>(interval_ns_ / 2, 500'000'000);
  std::lock_guard lock(mu_);
  std::vector<query::QueryResult> out;
  for (int64_t start : pending_.Intervals()) {
    const int64_t end = start + interval_ns_;
    const bool everyone = reported_[start].size() + refusals_.size() >= agents_;
    if (now_ns < end + grace && !(everyone && now_ns >= end)) break;
    out.push_back(pending_.Result(start));
    pending_.Erase(start);
    reported_.erase(start);
    returned_.push_back(start);
  }
  return out;
}

std::vector<query::QueryResult> LiveSession::Finish(int timeout_ms) {
  finished_ = true;
  bus_.Publish(kUninstallSubject, EncodeUninstall({.id = id_}));
  (void)bus_.Flush(timeout_ms);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mu_);
      if (finals_.size() >= agents_) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return TakeComplete(INT64_MAX);
}

query::QueryResult LiveSession::Series() const {
  std::lock_guard lock(mu_);
  return all_.Series();
}

query::QueryResult LiveSession::Total() const {
  std::lock_guard lock(mu_);
  return all_.Result();
}

uint64_t LiveSession::drops() const {
  std::lock_guard lock(mu_);
  return all_.drops();
}

AgentDrops LiveSession::lost() const {
  std::lock_guard lock(mu_);
  AgentDrops sum;
  for (const auto& [agent, d] : lost_) {
    sum.partials += d.partials;
    sum.bus += d.bus;
    sum.interned += d.interned;
    sum.children += d.children;
  }
  return sum;
}

std::vector<std::string> LiveSession::refusals() const {
  std::lock_guard lock(mu_);
  return refusals_;
}

uint64_t LiveSession::late() const {
  std::lock_guard lock(mu_);
  return late_;
}

Status UninstallQuery(Bus& bus, std::string_view id) {
  if (!ValidQueryId(id)) return Status::InvalidArgument("\"{}\" is not a query id", id);
  bus.Publish(kUninstallSubject, EncodeUninstall({.id = std::string(id)}));
  return bus.Flush(5000);
}

}  // namespace weft::pivot
