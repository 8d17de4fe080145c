#include "pivot/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "pivot/interner.h"
#include "pivot/live_query.h"
#include "pivot/protocol.h"
#include "pivot/untraced.h"
#include "pivot/weaving.h"

namespace weft::pivot {
namespace {

using Clock = std::chrono::system_clock;

constexpr size_t kInboxBound = 1024;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Control messages from the bus's thread to the agent's. Shared with the subscription's
// handler, which the bus may still be running just after Unsubscribe returns.
struct Inbox {
  std::mutex mu;
  std::condition_variable wake, handled_cv;
  std::deque<std::pair<std::string, std::string>> messages;
  uint64_t delivered = 0, handled = 0, overflow = 0;
  bool stop = false;
};

struct Installed {
  std::shared_ptr<LiveQuery> query;
  int64_t interval_end = INT64_MAX;  // wall clock, ns; never for a query without advice
  InstalledQueryInfo info;
  AgentDrops at_install;  // the bus's and the interner's counts when it was installed
  uint64_t unsent = 0;    // its partials not published: the bus was not connected
};

// Every agent of this process, for the fork handlers below.
std::mutex g_agents_mu;
std::vector<Agent::State*>& Agents() {
  static auto* agents = new std::vector<Agent::State*>;  // never destroyed: fork may come late
  return *agents;
}

void ForkPrepare();
void ForkParent();
void ForkChild();

}  // namespace

struct Agent::State {
  Bus* bus = nullptr;
  AgentOptions options;
  int64_t pid = 0;
  std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();
  uint64_t subscription = 0;

  mutable std::mutex mu;  // queries and counters
  std::map<std::string, Installed> queries;
  AgentCounters counters;
  std::thread thread;

  // Forked children hand what their advice emits to this agent through a pipe (the
  // child's end is non-blocking; live_query.h EnterForkChild), read by a thread of ours.
  int fork_pipe[2] = {-1, -1};
  std::atomic<uint64_t>* fork_refused = nullptr;  // in a MAP_SHARED page: children count
  std::atomic<bool> reader_stop{false};
  std::thread reader;
  std::mutex children_mu;   // one reader of the pipe at a time, so records stay whole
  std::string children_in;  // bytes read from the pipe, not yet a whole record
  ~State() {
    if (fork_pipe[0] >= 0) close(fork_pipe[0]);
    if (fork_pipe[1] >= 0) close(fork_pipe[1]);
    if (fork_refused != nullptr) munmap(fork_refused, sizeof(std::atomic<uint64_t>));
  }
  Status OpenForkPipe();
  void ReadChildren();
  // Reads and adds every record in the pipe now (the pipe's end is non-blocking).
  void DrainChildren();

  void Loop();
  void Handle(const std::string& subject, const std::string& payload);
  void Install(const InstallMessage& m);
  void Uninstall(const std::string& id);
  void Publish(Installed& q, int64_t start, bool final);
  // What the agent lost since it started.
  AgentDrops Lost() {
    AgentDrops d{.bus = bus->counters().dropped,
                 .interned = InternDrops(),
                 .children = fork_refused->load(std::memory_order_relaxed)};
    std::lock_guard lock(mu);
    d.partials = counters.unsent;
    return d;
  }
  void Reject() {
    std::lock_guard lock(mu);
    ++counters.rejected;
  }
};

namespace {

// A fork happens with every agent's queries steady (their mutexes held), and the child,
// which has no agent thread, starts handing its firings' results to its parent's agent.
void ForkPrepare() {
  g_agents_mu.lock();
  for (Agent::State* s : Agents()) s->mu.lock();
}
void ForkParent() {
  for (Agent::State* s : Agents()) s->mu.unlock();
  g_agents_mu.unlock();
}
void ForkChild() {
  for (Agent::State* s : Agents()) {
    for (auto& [id, q] : s->queries) {
      if (q.query != nullptr) q.query->EnterForkChild(s->fork_pipe[1], s->fork_refused);
    }
    s->mu.unlock();
  }
  g_agents_mu.unlock();
}

}  // namespace

Status Agent::State::OpenForkPipe() {
  static const int atfork = pthread_atfork(&ForkPrepare, &ForkParent, &ForkChild);
  (void)atfork;
  // Non-blocking at both ends: a child never waits to write, the agent never to read.
  if (pipe2(fork_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::IoError("pipe for forked children: {}", std::strerror(errno));
  }
  void* page = mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    close(fork_pipe[0]);
    close(fork_pipe[1]);
    fork_pipe[0] = fork_pipe[1] = -1;
    return Status::IoError("shared page for forked children: {}", std::strerror(errno));
  }
  fork_refused = new (page) std::atomic<uint64_t>(0);
  return Status::Ok();
}

void Agent::State::ReadChildren() {
  while (!reader_stop.load()) {
    pollfd p{fork_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) DrainChildren();
  }
}

void Agent::State::DrainChildren() {
  std::lock_guard children_lock(children_mu);
  std::string& in = children_in;
  char chunk[1 << 16];
  for (ssize_t n; (n = read(fork_pipe[0], chunk, sizeof chunk)) > 0;) {
    in.append(chunk, size_t(n));
    size_t at = 0;
    while (in.size() - at >= sizeof(uint32_t)) {
      uint32_t size;
      std::memcpy(&size, in.data() + at, sizeof size);
      if (size > PIPE_BUF) {  // only children of this process write here: cannot happen
        Reject();
        at = in.size();
        break;
      }
      if (in.size() - at - sizeof size < size) break;
      Result<PartialResults> record =
          DecodePartials(std::string_view(in.data() + at + sizeof size, size));
      at += sizeof size + size;
      if (!record.ok()) {
        Reject();
        continue;
      }
      std::shared_ptr<LiveQuery> q;
      {
        std::lock_guard lock(mu);
        auto it = queries.find(record->id);
        if (it != queries.end()) q = it->second.query;
      }
      if (q != nullptr) {
        q->AddFromChild(*record);
      } else {  // uninstalled since (Uninstall drains first, so a child's late firing)
        fork_refused->fetch_add(1, std::memory_order_relaxed);
      }
    }
    in.erase(0, at);
  }
}

Result<std::unique_ptr<Agent>> Agent::Start(Bus& bus, AgentOptions options) {
  // The agent's thread, and whatever the subscription starts, are weft's own (untraced.h).
  ScopedUntraced untraced;
  auto state = std::make_unique<State>();
  state->bus = &bus;
  state->options = std::move(options);
  state->pid = getpid();
  WEFT_RETURN_IF_ERROR(state->OpenForkPipe());
  if (state->options.host.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    state->options.host = host;
  }
  std::shared_ptr<Inbox> inbox = state->inbox;
  WEFT_ASSIGN_OR_RETURN(
      state->subscription,
      bus.Subscribe(kControlPattern, [inbox](std::string_view subject, std::string_view payload) {
        {
          std::lock_guard lock(inbox->mu);
          ++inbox->delivered;
          if (inbox->messages.size() >= kInboxBound) {
            ++inbox->overflow;
            ++inbox->handled;
          } else {
            inbox->messages.emplace_back(std::string(subject), std::string(payload));
          }
        }
        inbox->wake.notify_one();
      }));
  State* s = state.get();
  state->thread = std::thread([s] { s->Loop(); });
  state->reader = std::thread([s] { s->ReadChildren(); });
  {
    std::lock_guard lock(g_agents_mu);
    Agents().push_back(s);
  }
  return std::unique_ptr<Agent>(new Agent(std::move(state)));
}

Agent::Agent(std::unique_ptr<State> state) : state_(std::move(state)) {}

Agent::~Agent() {
  State& s = *state_;
  {
    std::lock_guard lock(g_agents_mu);
    std::erase(Agents(), &s);
  }
  s.reader_stop.store(true);
  s.reader.join();
  s.bus->Unsubscribe(s.subscription);
  {
    std::lock_guard lock(s.inbox->mu);
    s.inbox->stop = true;
  }
  s.inbox->wake.notify_all();
  s.thread.join();
  std::vector<std::string> ids;
  for (const auto& [id, q] : s.queries) ids.push_back(id);
  for (const std::string& id : ids) s.Uninstall(id);
}

AgentCounters Agent::counters() const {
  uint64_t overflow;
  {
    std::lock_guard lock(state_->inbox->mu);
    overflow = state_->inbox->overflow;
  }
  std::lock_guard lock(state_->mu);
  AgentCounters c = state_->counters;
  c.rejected += overflow;
  return c;
}

std::vector<std::string> Agent::installed() const {
  std::lock_guard lock(state_->mu);
  std::vector<std::string> out;
  for (const auto& [id, q] : state_->queries) out.push_back(id);
  return out;
}

void Agent::Sync() {
  Inbox& in = *state_->inbox;
  std::unique_lock lock(in.mu);
  uint64_t target = in.delivered;
  in.handled_cv.wait(lock, [&] { return in.handled >= target || in.stop; });
}

void Agent::State::Loop() {
  while (true) {
    std::deque<std::pair<std::string, std::string>> batch;
    // Only this thread changes `queries`: it reads them unlocked (and never holds mu and
    // inbox->mu at once).
    int64_t next = INT64_MAX;
    for (const auto& [id, q] : queries) next = std::min(next, q.interval_end);
    {
      std::unique_lock lock(inbox->mu);
      auto ready = [&] { return inbox->stop || !inbox->messages.empty(); };
      if (next == INT64_MAX) {
        inbox->wake.wait(lock, ready);
      } else {
        inbox->wake.wait_until(lock, Clock::time_point(std::chrono::nanoseconds(next)), ready);
      }
      if (inbox->stop) return;
      batch.swap(inbox->messages);
    }
    for (const auto& [subject, payload] : batch) Handle(subject, payload);
    if (!batch.empty()) {
      std::lock_guard lock(inbox->mu);
      inbox->handled += batch.size();
      inbox->handled_cv.notify_all();
    }
    const int64_t now = NowNs();
    for (auto& [id, q] : queries) {
      if (q.query == nullptr || now < q.interval_end) continue;
      const int64_t interval = q.query->interval_ns();
      Publish(q, q.interval_end - interval, false);
      // Intervals the agent slept through are skipped, not published empty.
      q.interval_end += interval * std::max<int64_t>(1, (now - q.interval_end) / interval + 1);
    }
  }
}

void Agent::State::Handle(const std::string& subject, const std::string& payload) {
  if (subject == kInstallSubject) {
    Result<InstallMessage> m = DecodeInstall(payload);
    if (!m.ok()) return Reject();
    Install(*m);
  } else if (subject == kUninstallSubject) {
    Result<UninstallMessage> m = DecodeUninstall(payload);
    if (!m.ok()) return Reject();
    Uninstall(m->id);
  } else if (subject == kListSubject) {
    Result<ListRequest> m = DecodeList(payload);
    if (!m.ok()) return Reject();
    AgentDescription d{.pid = pid, .host = options.host, .lost = Lost()};
    for (TracepointInfo& t : RegisteredTracepoints()) {
      d.tracepoints.push_back({std::move(t.name), std::move(t.exports), ""});
    }
    {
      std::lock_guard lock(mu);
      for (const auto& [id, q] : queries) d.queries.push_back(q.info);
      ++counters.lists;
    }
    bus->Publish(m->reply_to, EncodeAgent(d));
  } else {
    Reject();
  }
}

void Agent::State::Install(const InstallMessage& m) {
  {
    std::lock_guard lock(mu);
    if (queries.contains(m.id)) return;  // installed already: idempotent
  }
  Installed q;
  q.info = {.id = m.id, .text = m.text, .slot_base = m.slot_base};
  q.at_install = {.bus = bus->counters().dropped,
                  .interned = InternDrops(),
                  .children = fork_refused->load(std::memory_order_relaxed)};
  Result<std::shared_ptr<LiveQuery>> made = LiveQuery::Make(m);
  if (made.ok()) {
    // Two front ends installing at the same moment pick their slots from the same list
    // of installed queries, and would read each other's tuples. Every agent sees installs
    // in the bus's order, so each keeps the first and refuses the second.
    std::lock_guard lock(mu);
    const uint32_t begin = m.slot_base, end = m.slot_base + (*made)->slots();
    for (const auto& [id, other] : queries) {
      if (other.query == nullptr) continue;
      const uint32_t other_end = other.info.slot_base + other.info.slots;
      if (begin < other_end && other.info.slot_base < end) {
        made = Status::OutOfRange(
            "its baggage slots {}-{} are taken by query {}, installed at the same time by "
            "another front end: install it again",
            begin, end - 1, id);
        break;
      }
    }
  }
  if (!made.ok()) {
    // Kept, without advice, so that a list shows why; the front end is told at once.
    q.info.error = made.status().message();
    {
      std::lock_guard lock(mu);
      ++counters.failed;
      queries.emplace(m.id, q);
    }
    PartialResults r{.id = m.id,
                     .pid = pid,
                     .host = options.host,
                     .interval_ns = m.interval_ns,
                     .final = true,
                     .groups = PartialGroups(0),
                     .refused = q.info.error.substr(0, 4096)};
    bus->Publish(ResultsSubject(r.id), EncodePartials(r));
    return;
  }
  q.query = std::move(*made);
  q.info.slots = q.query->slots();
  q.info.woven = q.query->Weave();
  const int64_t interval = m.interval_ns;
  q.interval_end = (NowNs() / interval + 1) * interval;
  std::lock_guard lock(mu);
  ++counters.installed;
  queries.emplace(m.id, std::move(q));
}

void Agent::State::Uninstall(const std::string& id) {
  // What children emitted before the uninstall is in the pipe (a child writes before it
  // replies): add it while the query is still there to take it.
  if (fork_pipe[0] >= 0) DrainChildren();
  Installed q;
  {
    std::lock_guard lock(mu);
    auto it = queries.find(id);
    if (it == queries.end()) return;
    q = std::move(it->second);
    queries.erase(it);
    ++counters.uninstalled;
  }
  if (q.query == nullptr) return;
  q.query->Unweave();  // after this no thread adds to the buffers: the final harvest is whole
  Publish(q, q.interval_end - q.query->interval_ns(), true);
}

void Agent::State::Publish(Installed& q, int64_t start, bool final) {
  if (q.query == nullptr) return;
  // Harvested either way, so that the next interval starts empty.
  LiveQuery::Harvest h = q.query->TakeHarvest();
  const BusCounters bus_now = bus->counters();
  // Partials published while the bus is down would wait in its queue and arrive after the
  // front end has shown their interval (late, and crowding out the intervals after the
  // outage): they are counted instead, and the count travels with the next ones. The
  // final partials go anyway: they are the query's last word and the front end waits.
  if (!bus_now.connected && !final) {
    ++q.unsent;
    std::lock_guard lock(mu);
    ++counters.unsent;
    return;
  }
  PartialResults r{
      .id = q.query->id(),
      .pid = pid,
      .host = options.host,
      .interval_start_ns = std::max<int64_t>(0, start),
      .interval_ns = q.query->interval_ns(),
      .final = final,
      .aggregated = q.query->compiled().emit.aggregated,
      .columns = q.query->columns(),
      .events = h.events,
      .drops = h.drops,
      .groups = std::move(h.groups),
      .lost = {.partials = q.unsent,
               .bus = bus_now.dropped - q.at_install.bus,
               .interned = InternDrops() - q.at_install.interned,
               .children = fork_refused->load(std::memory_order_relaxed) - q.at_install.children}};
  bus->Publish(ResultsSubject(r.id), EncodePartials(r));
  std::lock_guard lock(mu);
  ++counters.published;
}

Bus& SharedLocalBus() {
  static Bus* bus = MakeLocalBus().release();  // never destroyed: agents may outlive main
  return *bus;
}

Result<Bus*> OpenAgentBus(std::string_view url) {
  if (url == "local") return &SharedLocalBus();
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<Bus> bus,
                        OpenBus(url == "default" ? DefaultBusUrl() : std::string(url)));
  return bus.release();  // never destroyed: the agent using it lives until the process exits
}

bool StartAgentFromEnvironment(std::string_view name) {
  static std::mutex mu;
  static Agent* agent = nullptr;  // lives until the process exits
  std::lock_guard lock(mu);
  if (agent != nullptr) return true;
  const char* url = std::getenv("WEFT_PIVOT_BUS");
  if (url == nullptr || *url == '\0') return true;
  Result<Bus*> bus = OpenAgentBus(url);
  if (!bus.ok()) {
    fmt::print(stderr, "weft pivot agent: {}\n", bus.status().message());
    return false;
  }
  Result<std::unique_ptr<Agent>> started = Agent::Start(**bus, {.host = std::string(name)});
  if (!started.ok()) {
    fmt::print(stderr, "weft pivot agent: {}\n", started.status().message());
    return false;
  }
  agent = started->release();
  return true;
}

}  // namespace weft::pivot
