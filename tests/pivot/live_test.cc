// Live Pivot Tracing in one process, over the in-process bus: tracepoints fired on several
// threads, with the baggage handed between threads, and queries installed through the
// agent. The merged live results must equal the offline Evaluator's over the same
// firings (recorded as they happen and replayed as executions).
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "pivot/agent.h"
#include "pivot/current_baggage.h"
#include "pivot/frontend.h"
#include "pivot/live_query.h"
#include "pivot/merge.h"
#include "pivot/protocol.h"
#include "pivot/weaving.h"
#include "query/hand_events.h"
#include "weft/tracepoint.h"

namespace weft::pivot {
namespace {

using query::testing::HandEvents;
using query::testing::Script;

WEFT_TRACEPOINT(kA, "A", "id", "v", "host");
WEFT_TRACEPOINT(kB, "B", "id", "v", "host");
WEFT_TRACEPOINT(kC, "C", "id", "v", "host");
Tracepoint* const kTracepoints[] = {&kA, &kB, &kC};

struct Firing {
  uint32_t tracepoint;
  std::string id;
  int64_t v;
  std::string host;
};
using Request = std::vector<Firing>;  // one segment, in happened-before order

void Fire(Request& r, uint32_t tracepoint, std::string id, int64_t v, std::string host) {
  kTracepoints[tracepoint]->Fire(id, v, host);
  r.push_back({tracepoint, std::move(id), v, std::move(host)});
}

// Each of `pairs` producer threads runs `requests` requests: it fires A (and sometimes
// C), then hands the request and its baggage to its consumer thread, which fires B and
// ends the request. Returns every request's firings.
std::vector<Request> RunWorkload(int pairs, int requests) {
  struct Handoff {
    Baggage bag;
    Request request;
  };
  std::mutex done_mu;
  std::vector<Request> done;
  std::vector<std::thread> threads;
  for (int w = 0; w < pairs; ++w) {
    auto queue = std::make_shared<std::pair<std::mutex, std::deque<std::optional<Handoff>>>>();
    auto cv = std::make_shared<std::condition_variable>();
    threads.emplace_back([=] {
      for (int k = 0; k < requests; ++k) {
        CurrentBaggage().Clear();
        Request r;
        for (int i = 0; i <= k % 3; ++i) {
          Fire(r, 0, "a" + std::to_string((k + i) % 4), k + i, "p" + std::to_string(w));
        }
        if (k % 5 == 0) Fire(r, 2, "c" + std::to_string(k % 2), k, "p" + std::to_string(w));
        Handoff h{TakeCurrentBaggage(), std::move(r)};
        {
          std::lock_guard lock(queue->first);
          queue->second.push_back(std::move(h));
        }
        cv->notify_one();
      }
      {
        std::lock_guard lock(queue->first);
        queue->second.push_back(std::nullopt);
      }
      cv->notify_one();
    });
    threads.emplace_back([=, &done_mu, &done] {
      while (true) {
        std::optional<Handoff> h;
        {
          std::unique_lock lock(queue->first);
          cv->wait(lock, [&] { return !queue->second.empty(); });
          h = std::move(queue->second.front());
          queue->second.pop_front();
        }
        if (!h) return;
        SetCurrentBaggage(std::move(h->bag));
        Request r = std::move(h->request);
        Fire(r, 1, "b" + std::to_string(r.size() % 3), int64_t(r.size()) * 10,
             "q" + std::to_string(w));
        Fire(r, 1, "b9", 1, "q" + std::to_string(w));
        CurrentBaggage().Clear();
        std::lock_guard lock(done_mu);
        done.push_back(std::move(r));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return done;
}

// The offline Evaluator's answer over the recorded requests.
query::QueryResult Offline(const std::string& text, const std::vector<Request>& requests) {
  static std::deque<HandEvents> kept;  // the result's strings point into the events
  HandEvents& events = kept.emplace_back();
  size_t n = 0;
  for (const Request& r : requests) n += r.size();
  events.Reserve(n);
  std::vector<query::Execution> executions;
  for (const Request& r : requests) {
    Script script;
    for (const Firing& f : r) script.Fire(0, f.tracepoint, events.Add(f.id, f.v, f.host));
    executions.push_back(script.Done());
  }
  query::testing::Answer a =
      query::testing::Ask(text, query::testing::AbcTracepoints(), events, executions);
  EXPECT_EQ(a.error, "");
  return a.result;
}

// An agent on a local bus, and every partial result published on it.
class LiveFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    bus_ = MakeLocalBus();
    auto agent = Agent::Start(*bus_);
    ASSERT_TRUE(agent.ok()) << agent.status().message();
    agent_ = std::move(*agent);
    auto sub =
        bus_->Subscribe("weft.pivot.results.>", [this](std::string_view, std::string_view payload) {
          Result<PartialResults> p = DecodePartials(payload);
          std::lock_guard lock(mu_);
          if (!p.ok()) {
            ++bad_;
            return;
          }
          if (p->final) ++finals_[p->id];
          merged_[p->id].Add(*p);
        });
    ASSERT_TRUE(sub.ok());
  }

  // The agent publishes the final partials of queries still installed as it stops: let
  // them arrive while the maps they go into still exist.
  void TearDown() override {
    agent_.reset();
    bus_.reset();
  }

  void Send(std::string_view subject, const std::string& payload) {
    bus_->Publish(subject, payload);
    ASSERT_TRUE(bus_->Flush(10000).ok());
    agent_->Sync();
  }
  void Install(const std::string& id, const std::string& text, uint32_t slot_base) {
    Send(kInstallSubject, EncodeInstall({.id = id, .text = text, .slot_base = slot_base}));
  }
  // Uninstalls and waits for the final partials.
  void Uninstall(const std::string& id) {
    Send(kUninstallSubject, EncodeUninstall({.id = id}));
    ASSERT_TRUE(bus_->Flush(10000).ok());
  }
  query::QueryResult Live(const std::string& id) {
    std::lock_guard lock(mu_);
    return merged_[id].Result();
  }

  std::unique_ptr<Bus> bus_;
  std::unique_ptr<Agent> agent_;
  std::mutex mu_;
  std::map<std::string, ResultMerger> merged_;
  std::map<std::string, int> finals_;
  int bad_ = 0;
};

void ExpectSame(const query::QueryResult& live, const query::QueryResult& offline) {
  EXPECT_TRUE(query::SameAnswer(live, offline))
      << "live:\n"
      << ::testing::PrintToString(query::testing::Rows(live)) << "\noffline:\n"
      << ::testing::PrintToString(query::testing::Rows(offline));
  EXPECT_FALSE(offline.rows.empty());
}

TEST_F(LiveFixture, HappenedBeforeJoinAcrossThreadsEqualsOffline) {
  const std::string q1 =
      "From b In B Join a In A On a -> b GroupBy a.host, b.id "
      "Select a.host, b.id, COUNT, SUM(a.v), MIN(b.v), MAX(a.id), AVERAGE(b.v)";
  const std::string q2 = "From b In B Join c In First(C) On c -> b Select c.id, b.id, b.host";
  Install("q1", q1, 0);
  Install("q2", q2, 16);
  EXPECT_EQ(agent_->installed(), (std::vector<std::string>{"q1", "q2"}));
  EXPECT_TRUE(kA.woven());
  std::vector<Request> requests = RunWorkload(3, 60);
  Uninstall("q1");
  Uninstall("q2");
  EXPECT_FALSE(kA.woven());
  EXPECT_FALSE(kB.woven());
  std::lock_guard lock(mu_);
  EXPECT_EQ(finals_["q1"], 1);
  EXPECT_EQ(finals_["q2"], 1);
  EXPECT_EQ(bad_, 0);
  EXPECT_EQ(merged_["q1"].drops(), 0u);
  mu_.unlock();
  ExpectSame(Live("q1"), Offline(q1, requests));
  ExpectSame(Live("q2"), Offline(q2, requests));
  mu_.lock();
}

TEST_F(LiveFixture, TwoQueriesOnOneBaggageDoNotSeeEachOthersTuples) {
  // The same shape, so that with one slot range each would unpack the other's tuples.
  const std::string qa = "From b In B Join a In A On a -> b GroupBy a.id Select a.id, COUNT";
  const std::string qc = "From b In B Join c In C On c -> b GroupBy c.id Select c.id, COUNT";
  Install("qa", qa, 0);
  Install("qc", qc, 2);
  std::vector<Request> requests = RunWorkload(2, 40);
  Uninstall("qa");
  Uninstall("qc");
  ExpectSame(Live("qa"), Offline(qa, requests));
  ExpectSame(Live("qc"), Offline(qc, requests));
}

TEST_F(LiveFixture, MalformedMessagesAreRejectedAndCounted) {
  Send(kInstallSubject, "{not json");
  Send(kInstallSubject, R"({"type":"install","v":99,"id":"x"})");
  Send(kUninstallSubject, R"({"type":"uninstall","v":1,"id":"bad id!"})");
  Send(kListSubject, R"({"type":"list","v":1,"reply_to":"somewhere.else"})");
  EXPECT_EQ(agent_->counters().rejected, 4u);
  EXPECT_TRUE(agent_->installed().empty());
  EXPECT_FALSE(kA.woven());
  // A query that does not compile is kept without advice, and counted.
  Install("broken", "From x In NoSuchTracepoint Select x.id", 0);
  EXPECT_EQ(agent_->counters().failed, 1u);
  EXPECT_FALSE(kA.woven());
  // The agent still works.
  Install("ok", "From a In A Select COUNT", 0);
  EXPECT_TRUE(kA.woven());
}

TEST_F(LiveFixture, ListDescribesTracepointsAndQueries) {
  Install("qa", "From a In A GroupBy a.id Select a.id, COUNT", 0);
  std::mutex mu;
  std::vector<AgentDescription> replies;
  auto sub = bus_->Subscribe("weft.pivot.reply.t1", [&](std::string_view, std::string_view p) {
    Result<AgentDescription> d = DecodeAgent(p);
    ASSERT_TRUE(d.ok()) << d.status().message();
    std::lock_guard lock(mu);
    replies.push_back(std::move(*d));
  });
  ASSERT_TRUE(sub.ok());
  Send(kListSubject, EncodeList({.reply_to = "weft.pivot.reply.t1"}));
  ASSERT_TRUE(bus_->Flush(10000).ok());
  std::lock_guard lock(mu);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].pid, int64_t(getpid()));
  bool found = false;
  for (const query::Tracepoint& t : replies[0].tracepoints) {
    if (t.name == "B") {
      found = true;
      EXPECT_EQ(t.exports, (std::vector<std::string>{"id", "v", "host"}));
    }
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(replies[0].queries.size(), 1u);
  EXPECT_EQ(replies[0].queries[0].id, "qa");
  EXPECT_TRUE(replies[0].queries[0].woven);
  EXPECT_EQ(replies[0].queries[0].slots, 1u);
}

// Weaving without the agent: what a firing runs, and that unweaving removes it.
TEST(LiveQueryTest, UnweaveRemovesTheAdvice) {
  auto q = LiveQuery::Make({.id = "n", .text = "From a In A GroupBy a.host Select a.host, COUNT"});
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_FALSE(kA.woven());
  EXPECT_TRUE((*q)->Weave());
  EXPECT_TRUE(kA.woven());
  for (int i = 0; i < 5; ++i) kA.Fire("a", i, "h" + std::to_string(i % 2));
  LiveQuery::Harvest h = (*q)->TakeHarvest();
  EXPECT_EQ(h.events, 5u);
  ASSERT_EQ(h.groups.size(), 2u);
  EXPECT_EQ(h.groups.weight(0) + h.groups.weight(1), 5);
  (*q)->Unweave();
  EXPECT_FALSE(kA.woven());
  for (int i = 0; i < 5; ++i) kA.Fire("a", i, "h");
  h = (*q)->TakeHarvest();
  EXPECT_EQ(h.events, 0u);
  EXPECT_EQ(h.groups.size(), 0u);
}

// A tracepoint constructed after the query was woven gets the advice too; one destroyed
// while woven takes its advice with it.
TEST(LiveQueryTest, LateTracepointsAreWoven) {
  auto q = LiveQuery::Make(
      {.id = "late", .text = "From l In Late Select l.x", .catalog = {{"Late", {"x"}, ""}}});
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_FALSE((*q)->Weave());  // no such tracepoint yet
  {
    WEFT_TRACEPOINT(late, "Late", "x");
    EXPECT_TRUE(late.woven());
    late.Fire(std::string("hello"));
    late.Fire(7);
  }
  LiveQuery::Harvest h = (*q)->TakeHarvest();
  EXPECT_EQ(h.events, 2u);
  EXPECT_EQ(h.groups.size(), 2u);
  (*q)->Unweave();
}

// Firing from many threads while queries are woven and unwoven over and over: no thread
// ever runs a freed advice list (run under ASan to see it), and every firing counts.
TEST(LiveQueryTest, WeaveAndUnweaveWhileFiring) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) kC.Fire("c", 1, "h");
    });
  }
  for (int i = 0; i < 50; ++i) {
    auto q = LiveQuery::Make({.id = "w", .text = "From c In C Select COUNT"});
    ASSERT_TRUE(q.ok());
    (*q)->Weave();
    std::this_thread::yield();
    (*q)->Unweave();
    LiveQuery::Harvest h = (*q)->TakeHarvest();
    EXPECT_EQ(h.drops, 0u);
    if (h.groups.size() > 0) {
      EXPECT_EQ(h.groups.weight(0), double(h.events));
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
}

}  // namespace
}  // namespace weft::pivot

namespace weft::pivot {
namespace {

// The front end's session against an agent in this process: the query is compiled
// against the agents' tracepoints, installed, and its merged results equal the offline
// Evaluator's over the same firings.
TEST(LiveSessionTest, InstallStreamAndFinishEqualsOffline) {
  auto bus = MakeLocalBus();
  auto agent = Agent::Start(*bus);
  ASSERT_TRUE(agent.ok());
  const std::string text =
      "From b In B Join a In A On a -> b GroupBy b.host Select b.host, COUNT, MAX(a.v)";
  auto session = LiveSession::Install(*bus, text, {.list_window_ms = 1000});
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_EQ((*session)->agents(), 1u);
  (*agent)->Sync();
  EXPECT_TRUE(kB.woven());
  std::vector<Request> requests = RunWorkload(2, 30);
  std::vector<query::QueryResult> intervals = (*session)->Finish(10000);
  EXPECT_FALSE(kB.woven());
  // However the tuples fell into intervals, the intervals together equal the offline
  // answer, and the streamed intervals hold every tuple. Unless an interval's harvest met
  // a firing: the firing thread then drops its tuple rather than wait (live_query.h), which
  // a slow run (AddressSanitizer on a loaded machine) meets now and then; the tuples lost
  // are exactly the drops counted.
  query::QueryResult offline = Offline(text, requests);
  double streamed = 0, expected = 0;
  for (const query::QueryResult& r : intervals) {
    for (const query::ResultRow& row : r.rows) streamed += row.weight;
  }
  for (const query::ResultRow& row : offline.rows) expected += row.weight;
  const uint64_t drops = (*session)->drops();
  if (drops == 0) ExpectSame((*session)->Total(), offline);
  EXPECT_EQ(streamed + double(drops), expected);
  EXPECT_LE(drops, 10u);
}

// Two front ends that install at the same moment pick their baggage slots from the same
// list: the agent keeps the query it saw first and refuses the other, saying why, rather
// than let each read the other's tuples.
TEST(LiveSessionTest, AnInstallOnTakenSlotsIsRefusedAndSaid) {
  auto bus = MakeLocalBus();
  auto agent = Agent::Start(*bus);
  ASSERT_TRUE(agent.ok());
  auto first = LiveSession::Install(*bus, "From b In B Join a In A On a -> b Select COUNT",
                                    {.list_window_ms = 1000});
  ASSERT_TRUE(first.ok()) << first.status().message();
  std::mutex mu;
  std::vector<PartialResults> answers;
  auto sub = bus->Subscribe(ResultsSubject("qrace"), [&](std::string_view, std::string_view p) {
    auto r = DecodePartials(p);
    std::lock_guard lock(mu);
    if (r.ok()) answers.push_back(std::move(*r));
  });
  ASSERT_TRUE(sub.ok());
  // As if installed from another front end's list, taken before the first was installed.
  bus->Publish(kInstallSubject, EncodeInstall({.id = "qrace",
                                               .text = "From b In B Join a In A On a -> b "
                                                       "GroupBy a.id Select a.id, COUNT",
                                               .slot_base = 0}));
  ASSERT_TRUE(bus->Flush(10000).ok());
  (*agent)->Sync();
  ASSERT_TRUE(bus->Flush(10000).ok());
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(answers.size(), 1u);
    EXPECT_TRUE(answers[0].final);
    EXPECT_EQ(answers[0].groups.size(), 0u);
    EXPECT_NE(answers[0].refused.find("taken by query " + (*first)->id()), std::string::npos)
        << answers[0].refused;
  }
  EXPECT_EQ((*agent)->counters().installed, 1u);
  EXPECT_EQ((*agent)->counters().failed, 1u);
  // The first query goes on, alone on its slots.
  std::vector<Request> requests = RunWorkload(2, 10);
  (void)(*first)->Finish(10000);
  ExpectSame((*first)->Total(),
             Offline("From b In B Join a In A On a -> b Select COUNT", requests));
  EXPECT_TRUE((*first)->refusals().empty());
}

TEST(LiveSessionTest, ABadQueryIsADiagnosticBeforeInstalling) {
  auto bus = MakeLocalBus();
  auto agent = Agent::Start(*bus);
  ASSERT_TRUE(agent.ok());
  // A window a loaded machine's agent thread answers within (50 ms did not, once).
  auto session = LiveSession::Install(*bus, "From x In Nope Select x.id", {.list_window_ms = 1000});
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().message().find("Nope"), std::string::npos)
      << session.status().message();
  EXPECT_EQ((*agent)->counters().installed, 0u);
}

}  // namespace
}  // namespace weft::pivot

namespace weft::pivot {
namespace {

// A request that branches to a spawned thread and rejoins (Table 4's split and join):
// a tuple packed on one side after the split is invisible to the other until the join.
TEST_F(LiveFixture, BranchAndJoinAcrossThreadsEqualsOffline) {
  const std::string text = "From b In B Join a In A On a -> b Select a.id, b.id";
  Install("bj", text, 0);
  CurrentBaggage().Clear();
  kA.Fire("a1", 1, "h");
  Baggage branch = CurrentBaggage().Split();
  kA.Fire("a3", 3, "h");  // after the split, on the parent's side
  Baggage returned;
  std::thread child([&] {
    SetCurrentBaggage(std::move(branch));
    kA.Fire("a2", 2, "h");
    kB.Fire("b1", 1, "h");  // sees a1, a2; not a3
    returned = TakeCurrentBaggage();
  });
  child.join();
  CurrentBaggage().Join(std::move(returned));
  kB.Fire("b2", 2, "h");  // sees a1, a2, a3
  CurrentBaggage().Clear();
  Uninstall("bj");

  HandEvents events;
  events.Reserve(6);
  Script s;
  s.Fire(0, 0, events.Add("a1", 1));
  uint32_t child_segment = s.Branch(0);
  s.Fire(0, 0, events.Add("a3", 3));
  s.Fire(child_segment, 0, events.Add("a2", 2));
  s.Fire(child_segment, 1, events.Add("b1", 1));
  s.Join(0, child_segment);
  s.Fire(0, 1, events.Add("b2", 2));
  std::vector<query::Execution> executions{s.Done()};
  query::testing::Answer offline =
      query::testing::Ask(text, query::testing::AbcTracepoints(), events, executions);
  ASSERT_EQ(offline.error, "");
  EXPECT_EQ(query::testing::Rows(offline.result),
            (std::vector<std::string>{"a1 b1", "a1 b2", "a2 b1", "a2 b2", "a3 b2"}));
  ExpectSame(Live("bj"), offline.result);
}

// A thread's buffer holds at most kMaxGroupsPerThread groups: tuples of more are dropped
// and counted, never grown without bound.
TEST(LiveQueryTest, TooManyGroupsAreDroppedAndCounted) {
  auto q = LiveQuery::Make({.id = "g", .text = "From a In A GroupBy a.v Select a.v, COUNT"});
  ASSERT_TRUE(q.ok());
  (*q)->Weave();
  for (size_t i = 0; i < kMaxGroupsPerThread + 5; ++i) kA.Fire("a", int64_t(i), "h");
  (*q)->Unweave();
  LiveQuery::Harvest h = (*q)->TakeHarvest();
  EXPECT_EQ(h.events, kMaxGroupsPerThread + 5);
  EXPECT_EQ(h.groups.size(), kMaxGroupsPerThread);
  EXPECT_EQ(h.drops, 5u);
}

}  // namespace
}  // namespace weft::pivot

namespace weft::pivot {
namespace {

// WEFT_PIVOT_BUS starts the process's agent; a front end on the same bus finds it.
TEST(AgentFromEnvironmentTest, StartsOnTheNamedBus) {
  ASSERT_EQ(setenv("WEFT_PIVOT_BUS", "udp://127.0.0.1:1", 1), 0);
  EXPECT_FALSE(StartAgentFromEnvironment());  // no such kind of bus: said, not fatal
  ASSERT_EQ(setenv("WEFT_PIVOT_BUS", "local", 1), 0);
  EXPECT_TRUE(StartAgentFromEnvironment());
  EXPECT_TRUE(StartAgentFromEnvironment());  // once per process
  Result<std::vector<AgentDescription>> agents = ListAgents(SharedLocalBus(), 50);
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ((*agents)[0].pid, int64_t(getpid()));
  unsetenv("WEFT_PIVOT_BUS");
}

}  // namespace
}  // namespace weft::pivot
