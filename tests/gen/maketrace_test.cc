// maketrace: ground truth, determinism, lengths, parallelism and the added delay.
#include "gen/maketrace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "gen/scenario_files.h"
#include "gen_testing.h"
#include "infer/truth/truth.h"

namespace weft {
namespace {

// Each built-in scenario's TOML comes from its file in src/gen/scenarios/, and every file
// there is some scenario's.
TEST(MakeTrace, EveryScenarioHasItsFile) {
  std::set<std::string_view> used;
  for (const Scenario& s : BuiltinScenarios()) {
    Result<std::string> text = ScenarioConfigText(s.name);
    ASSERT_TRUE(text.ok()) << s.name;
    EXPECT_NE(text->find(fmt::format("# {}:", s.name)), std::string::npos) << s.name;
    for (const ScenarioFile& f : ScenarioFiles()) {
      std::string_view body = f.text.substr(0, f.text.find('%'));
      if (!body.empty() && text->find(body.substr(0, 200)) != std::string::npos)
        used.insert(f.name);
    }
  }
  for (const ScenarioFile& f : ScenarioFiles()) EXPECT_TRUE(used.contains(f.name)) << f.name;
}

TEST(MakeTrace, EveryScenarioFollowsTheConvention) {
  for (const Scenario& s : BuiltinScenarios()) {
    SCOPED_TRACE(std::string(s.name));
    GenConfig config = MustLoad(std::string(s.name));
    if (s.name != "email") config.messages = 30000;
    // The tracelets, without the network (MakeTrace.NetworkScenarios checks that).
    config.network = NetworkConfig{};
    GenSummary summary;
    Trace trace = MustMake(config, &summary);
    EXPECT_GE(trace.size(), s.name == "email" ? 4000u : 30000u);
    EXPECT_EQ(summary.messages, trace.size());
    EXPECT_EQ(CountTruthViolations(trace, s.name == "email"), 0);
    EXPECT_EQ(PathSignatures(trace).size(), summary.paths);
    // Every message sent and received at once, until skewed.
    EXPECT_EQ(trace.columns().send_time, trace.columns().recv_time);
  }
}

// timestamps = "send": one timestamp per message, the send time, as span data has; the
// same messages and truth as with both.
TEST(MakeTrace, SendTimesOnly) {
  GenConfig config = MustLoad("social");
  config.messages = 5000;
  Trace both = MustMake(config, nullptr);
  config.send_times_only = true;
  Trace one = MustMake(config, nullptr);
  ASSERT_EQ(one.size(), both.size());
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one.columns().recv_time[i], kNoTime);
    ASSERT_EQ(one.columns().send_time[i], both.columns().send_time[i]);
    ASSERT_EQ(one.columns().truth_parent[i], both.columns().truth_parent[i]);
  }
  Result<GenConfig> parsed = ParseGenConfig(
      "timestamps = \"send\"\n[[tracelet]]\nname = \"t\"\nthink = \"1s\"\nsteps = [{ op = \"msg\", "
      "from = \"A\", to = \"B\" }]\n",
      "t.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE(parsed->send_times_only);
  Result<GenConfig> bad = ParseGenConfig(
      "timestamps = \"recv\"\n[[tracelet]]\nname = \"t\"\nthink = \"1s\"\nsteps = [{ op = \"msg\", "
      "from = \"A\", to = \"B\" }]\n",
      "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.toml:1: 'timestamps' must be \"both\" or \"send\"");
}

// WAP5's setting: two timestamps on different clocks, network delays, untraced nodes.
TEST(MakeTrace, NetworkScenarios) {
  GenConfig config = MustLoad("wide-area");
  config.duration = 60 * kSecond;
  GenSummary summary;
  Trace trace = MustMake(config, &summary);
  const TraceColumns& c = trace.columns();
  ASSERT_GT(trace.size(), 5000u);
  std::map<std::string, TimeNs> offset(summary.clock_offsets.begin(), summary.clock_offsets.end());
  EXPECT_EQ(offset.size(), 6u);  // P1-P3, D1-D3: the traced nodes
  auto untraced = [&](NodeId n) {
    std::string_view name = trace.NodeName(n);
    return name.starts_with("CL-") || name == "DNS" || name.starts_with("WEB");
  };
  int both = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    SCOPED_TRACE(i);
    // Untraced nodes leave their timestamp out; no message runs between two of them.
    ASSERT_FALSE(untraced(c.sender[i]) && untraced(c.receiver[i]));
    EXPECT_EQ(c.send_time[i] == kNoTime, untraced(c.sender[i]));
    EXPECT_EQ(c.recv_time[i] == kNoTime, untraced(c.receiver[i]));
    EXPECT_TRUE(c.sender_endpoint[i].valid() && c.receiver_endpoint[i].valid());
    if (c.send_time[i] == kNoTime || c.recv_time[i] == kNoTime) continue;
    // On true time, a one-way delay of 5-80 ms, up to 10% asymmetric, plus jitter.
    const TimeNs delay = (c.recv_time[i] - offset[std::string(trace.NodeName(c.receiver[i]))]) -
                         (c.send_time[i] - offset[std::string(trace.NodeName(c.sender[i]))]);
    EXPECT_GE(delay, 5 * kMillisecond * 9 / 10);
    EXPECT_LE(delay, 80 * kMillisecond * 11 / 10 + 50 * kMillisecond);
    ++both;
  }
  EXPECT_GT(both, 1000);
  // The ground truth still makes trees, now with one client node per instance.
  Result<TruthInference> truth = InferFromTruth(trace);
  ASSERT_TRUE(truth.ok()) << truth.status().message();
  EXPECT_EQ(truth->paths.instance_count(), summary.paths);
  // Aggregated, the clients are one CLIENT node again: 22 patterns, as the tracelets give.
  Result<TruthInference> aggregated = InferFromTruth(trace, {.aggregate_clients = true});
  ASSERT_TRUE(aggregated.ok());
  EXPECT_EQ(aggregated->paths.patterns.size(), 22u);
}

TEST(MakeTrace, SameSeedSameTraceOtherSeedOtherTrace) {
  GenConfig config = MustLoad("children-d-cc");
  config.messages = 5000;
  Trace a = MustMake(config);
  Trace b = MustMake(config);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.columns().send_time, b.columns().send_time);
  EXPECT_EQ(a.columns().sender, b.columns().sender);
  EXPECT_EQ(a.columns().receiver, b.columns().receiver);
  EXPECT_EQ(a.columns().kind, b.columns().kind);
  EXPECT_EQ(a.columns().call_id, b.columns().call_id);
  EXPECT_EQ(a.columns().truth_path, b.columns().truth_path);
  EXPECT_EQ(a.columns().truth_parent, b.columns().truth_parent);
  config.seed += 1;
  Trace c = MustMake(config);
  EXPECT_NE(a.columns().send_time, c.columns().send_time);
}

TEST(MakeTrace, LengthInMessagesEndsWithWholePaths) {
  GenConfig config = MustLoad("multitier");
  config.messages = 10000;
  Trace trace = MustMake(config);
  // It stops starting instances once 10000 are reached: at most one more instance (the
  // longest multitier tracelet has 12 messages).
  EXPECT_GE(trace.size(), 10000u);
  EXPECT_LT(trace.size(), 10012u);
  EXPECT_EQ(CountTruthViolations(trace), 0);  // includes: every call answered
}

TEST(MakeTrace, DurationBoundsPathStarts) {
  GenConfig config = MustLoad("children-0-2");
  config.start = 1000 * kSecond;
  config.duration = 60 * kSecond;
  Trace trace = MustMake(config);
  const TraceColumns& c = trace.columns();
  TimeNs first_root = kNoTime, last_root = kNoTime;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (c.truth_parent[i].valid()) continue;
    if (first_root == kNoTime) first_root = c.send_time[i];
    last_root = c.send_time[i];
  }
  EXPECT_GE(first_root, 1000 * kSecond);
  EXPECT_LT(first_root, 1001 * kSecond);  // the first think time is at most 1 s
  EXPECT_LT(last_root, 1060 * kSecond);
  EXPECT_GT(last_root, 1059 * kSecond);
  EXPECT_LT(trace.EndTime(), 1061 * kSecond);  // paths that started are completed
}

// The time average of paths in flight, measured from the trace.
double MeasuredInFlight(const Trace& trace) {
  std::map<uint32_t, std::pair<TimeNs, TimeNs>> span;
  const TraceColumns& c = trace.columns();
  for (size_t i = 0; i < trace.size(); ++i) {
    auto [it, inserted] = span.try_emplace(c.truth_path[i].value(), c.send_time[i], c.send_time[i]);
    it->second.second = c.send_time[i];
  }
  double busy = 0;
  for (const auto& [p, s] : span) busy += double(s.second - s.first);
  return busy / double(trace.EndTime() - trace.StartTime());
}

TEST(MakeTrace, PathsInFlightMatchLoopsWithoutThinkTime) {
  Result<GenConfig> config = ParseGenConfig(R"(duration = "100s"
parallelism = 3
[[tracelet]]
name = "t"
instances = 5
think = "0s"
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c", delay = "20ms", sd = "2ms" },
  { op = "ret", ret = "c", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]
)",
                                            "t.toml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  GenSummary summary;
  Trace trace = MustMake(*config, &summary);
  EXPECT_EQ(summary.loops, 15u);
  // Each loop always has one path in flight, but for its start offset within a zero think.
  EXPECT_NEAR(summary.mean_in_flight, 15.0, 0.1);
  EXPECT_NEAR(MeasuredInFlight(trace), summary.mean_in_flight, 0.01);
  // 15 loops of paths of about 40 ms over 100 s.
  EXPECT_NEAR(double(summary.paths), 15 * 100 / 0.040, 15 * 100 / 0.040 * 0.02);
}

TEST(MakeTrace, ParallelismScalesPathsInFlight) {
  GenConfig config = MustLoad("multitier");
  config.duration = 100 * kSecond;
  GenSummary one, two;
  Trace a = MustMake(config, &one);
  config.parallelism = 2;
  Trace b = MustMake(config, &two);
  EXPECT_EQ(one.loops, 42u);
  EXPECT_EQ(two.loops, 84u);
  // With think times, in flight = loops x path time / (path time + mean think 0.75 s).
  EXPECT_NEAR(two.mean_in_flight / one.mean_in_flight, 2.0, 0.1);
  EXPECT_NEAR(double(b.size()) / double(a.size()), 2.0, 0.1);
  EXPECT_NEAR(MeasuredInFlight(a), one.mean_in_flight, 0.01);
}

TEST(MakeTrace, MultitierHasThirtyUntiedPatterns) {
  GenConfig config = MustLoad("multitier");
  GenSummary summary;
  Trace trace = MustMake(config, &summary);
  EXPECT_EQ(summary.loops, 42u);
  EXPECT_GT(trace.size(), 180000u);
  EXPECT_LT(trace.size(), 220000u);
  EXPECT_EQ(trace.nodes().size(), 7u);  // CLIENT, WS1, WS2, AUTH, AP1, AP2, DB
  std::vector<int> counts = SortedCounts(PatternCounts(trace));
  ASSERT_GE(counts.size(), 31u);
  EXPECT_EQ(counts.size(), 34u);
  for (size_t i = 0; i + 1 < 31; ++i) EXPECT_GT(counts[i], counts[i + 1]) << "rank " << i + 1;
}

TEST(MakeTrace, EmailRoutesAreFrequentOrRare) {
  GenConfig config = MustLoad("email");
  GenSummary summary;
  Trace trace = MustMake(config, &summary);
  EXPECT_GE(trace.nodes().size(), 15u);
  EXPECT_LE(trace.nodes().size(), 30u);
  EXPECT_GT(trace.EndTime() - trace.StartTime(), 24 * 3600 * kSecond);
  int frequent = 0, rare = 0;
  for (const auto& [pattern, count] : PatternCounts(trace)) {
    int hops = int(std::count(pattern.begin(), pattern.end(), ';'));
    int messages = count * hops;
    EXPECT_TRUE(messages >= 200 || messages < 80) << pattern << ": " << messages;
    (messages >= 200 ? frequent : rare) += 1;
  }
  EXPECT_EQ(frequent, 5);
  EXPECT_EQ(rare, 5);
  // Hops are forwarded mostly at once, 15% after 10-15 s: the gateway -> relay hops all
  // use that mixture.
  const TraceColumns& c = trace.columns();
  int late = 0, hops = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (!trace.NodeName(c.sender[i]).starts_with("GW") ||
        !trace.NodeName(c.receiver[i]).starts_with("RELAY")) {
      continue;
    }
    const TimeNs d = c.send_time[i] - c.send_time[c.truth_parent[i].value()];
    ++hops;
    late += d > 6 * kSecond;
    EXPECT_LT(d, 20 * kSecond);
  }
  EXPECT_GT(hops, 1000);
  EXPECT_NEAR(double(late) / hops, 0.15, 0.03);
}

// Per trace: the mean over WS2 paths of (WS2 -> AP call time - AUTH -> WS2 return time).
double MeanAuthToApDelay(const Trace& trace, std::string_view ws) {
  const TraceColumns& c = trace.columns();
  std::map<uint32_t, TimeNs> auth_return;
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    std::string_view from = trace.NodeName(c.sender[i]), to = trace.NodeName(c.receiver[i]);
    uint32_t path = c.truth_path[i].value();
    if (c.kind[i] == MessageKind::kReturn && from == "AUTH" && to == ws)
      auth_return[path] = c.send_time[i];
    if (c.kind[i] == MessageKind::kCall && from == ws && to.starts_with("AP") &&
        auth_return.count(path)) {
      sum += double(c.send_time[i] - auth_return[path]);
      ++n;
      auth_return.erase(path);
    }
  }
  EXPECT_GT(n, 1000);
  return sum / n;
}

TEST(MakeTrace, AddedDelayIsOnlyAtWs2AndKeepsTheWorkload) {
  GenConfig normal = MustLoad("multitier");
  GenConfig added = MustLoad("multitier-added-delay");
  normal.duration = added.duration = 100 * kSecond;
  Trace a = MustMake(normal);
  Trace b = MustMake(added);
  const double ws2 = MeanAuthToApDelay(b, "WS2") - MeanAuthToApDelay(a, "WS2");
  EXPECT_NEAR(ws2, 200e6, 5e6);
  EXPECT_NEAR(MeanAuthToApDelay(b, "WS1") - MeanAuthToApDelay(a, "WS1"), 0, 1e6);
  // Same instances and choices: the same pattern counts, exactly.
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(PatternCounts(a), PatternCounts(b));
  EXPECT_NEAR(MeanAuthToApDelay(a, "WS2"), 50e6, 2e6);  // the mean call delay of §7.5.6
}

TEST(MakeTrace, ParallelismRoundsTheLoopCount) {
  GenConfig config = MustLoad("children-parallel");
  config.messages = 1000;
  config.parallelism = 0.05;  // one loop
  GenSummary summary;
  Trace trace = MustMake(config, &summary);
  EXPECT_EQ(summary.loops, 1u);
  EXPECT_EQ(trace.size(), 1002u);  // 6 messages per path: 167 paths
  EXPECT_EQ(summary.paths, 167u);
}

}  // namespace
}  // namespace weft
