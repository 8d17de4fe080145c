// weft skew (Project 5 §7.5.6) and weft drop (§7.5.5).
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "gen_testing.h"

namespace weft {
namespace {

Trace SmallMultitier() {
  GenConfig config = MustLoad("multitier");
  config.duration = 20 * kSecond;
  return MustMake(config);
}

// What identifies a message across a re-sort: its times, endpoints and truth path.
using Key = std::tuple<TimeNs, TimeNs, uint32_t, uint32_t, uint32_t>;
Key KeyOf(const Trace& t, size_t i) {
  const TraceColumns& c = t.columns();
  return {c.send_time[i], c.recv_time[i], c.sender[i].value(), c.receiver[i].value(),
          c.truth_path[i].value()};
}

TEST(SkewTrace, ShiftsExactlyTheGivenNodesClock) {
  Trace trace = SmallMultitier();
  SkewOptions options;
  options.offsets = {{"WS2", 30 * kMillisecond}, {"DB", -5 * kMillisecond}};
  std::vector<TimeNs> applied;
  Result<Trace> skewed = SkewTrace(trace, options, &applied);
  ASSERT_TRUE(skewed.ok()) << skewed.status().message();
  ASSERT_EQ(skewed->size(), trace.size());
  const NodeId ws2 = trace.nodes().Find("WS2"), db = trace.nodes().Find("DB");
  EXPECT_EQ(applied[ws2.value()], 30 * kMillisecond);
  EXPECT_EQ(applied[db.value()], -5 * kMillisecond);
  auto offset = [&](NodeId n) {
    return n == ws2 ? 30 * kMillisecond : n == db ? -5 * kMillisecond : TimeNs(0);
  };
  // Every original message, shifted by hand, is found in the skewed trace, and its parent
  // is the shifted original parent.
  const TraceColumns& c = trace.columns();
  std::map<Key, size_t> expected;
  for (size_t i = 0; i < trace.size(); ++i) {
    Key k{c.send_time[i] + offset(c.sender[i]), c.recv_time[i] + offset(c.receiver[i]),
          c.sender[i].value(), c.receiver[i].value(), c.truth_path[i].value()};
    ASSERT_TRUE(expected.emplace(k, i).second) << "keys must be unique";
  }
  const TraceColumns& s = skewed->columns();
  int shifted_sends = 0, shifted_receives = 0, wrong = 0;
  for (size_t j = 0; j < skewed->size(); ++j) {
    auto it = expected.find(KeyOf(*skewed, j));
    if (it == expected.end()) {
      ++wrong;
      continue;
    }
    const size_t i = it->second;
    shifted_sends += s.send_time[j] != c.send_time[i];
    shifted_receives += s.recv_time[j] != c.recv_time[i];
    if (s.kind[j] != c.kind[i] || s.call_id[j] != c.call_id[i]) ++wrong;
    const bool has_parent = s.truth_parent[j].valid();
    if (has_parent != c.truth_parent[i].valid()) {
      ++wrong;
    } else if (has_parent &&
               expected[KeyOf(*skewed, s.truth_parent[j].value())] != c.truth_parent[i].value()) {
      ++wrong;
    }
    if (j > 0) {
      EXPECT_LE(skewed->SortTime(MessageId(j - 1)), skewed->SortTime(MessageId(j)));
    }
  }
  EXPECT_EQ(wrong, 0);
  int sent = 0, received = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    sent += c.sender[i] == ws2 || c.sender[i] == db;
    received += c.receiver[i] == ws2 || c.receiver[i] == db;
  }
  EXPECT_EQ(shifted_sends, sent);
  EXPECT_EQ(shifted_receives, received);
  EXPECT_GT(sent, 1000);
}

TEST(SkewTrace, RandomOffsetsAreSeededAndUnknownNodesNamed) {
  Trace trace = SmallMultitier();
  SkewOptions options;
  options.random_sd = 10 * kMillisecond;
  options.seed = 4;
  options.offsets = {{"CLIENT", 0}};
  std::vector<TimeNs> a, b;
  ASSERT_TRUE(SkewTrace(trace, options, &a).ok());
  ASSERT_TRUE(SkewTrace(trace, options, &b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[trace.nodes().Find("CLIENT").value()], 0);
  int nonzero = 0;
  for (TimeNs o : a) nonzero += o != 0;
  EXPECT_EQ(nonzero, int(a.size()) - 1);

  options.offsets = {{"WS9", kMillisecond}};
  Result<Trace> bad = SkewTrace(trace, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind(
                "unknown node 'WS9' (the trace has: CLIENT, WS1, WS2, AUTH, ", 0),
            0u)
      << bad.status().message();
}

// Connect times are on the sender's clock and process links on their creator's: both move
// with that node's offset, and no link is lost.
TEST(SkewTrace, ShiftsConnectTimesAndProcessLinks) {
  TraceBuilder builder;
  const NodeId a = builder.nodes().Intern("A"), b = builder.nodes().Intern("B");
  MessageRecord call;
  call.kind = MessageKind::kCall;
  call.sender = a;
  call.receiver = b;
  call.send_time = 10 * kMillisecond;
  call.recv_time = 11 * kMillisecond;
  call.connect_time = 9 * kMillisecond;
  call.sender_thread = ThreadId(1);
  call.receiver_thread = ThreadId(2);
  builder.Add(call);
  ProcessLink link;
  link.time = 5 * kMillisecond;
  link.from = a;
  link.from_thread = ThreadId(1);
  link.to = a;
  link.to_thread = ThreadId(3);
  link.kind = ProcessLinkKind::kThread;
  builder.AddProcessLink(link);
  Result<Trace> trace = std::move(builder).Finish();
  ASSERT_TRUE(trace.ok()) << trace.status().message();

  SkewOptions options;
  options.offsets = {{"A", 100 * kMillisecond}, {"B", -1 * kMillisecond}};
  Result<Trace> skewed = SkewTrace(*trace, options);
  ASSERT_TRUE(skewed.ok()) << skewed.status().message();
  const TraceColumns& c = skewed->columns();
  ASSERT_EQ(skewed->size(), 1u);
  EXPECT_EQ(c.send_time[0], 110 * kMillisecond);
  EXPECT_EQ(c.connect_time[0], 109 * kMillisecond);
  EXPECT_EQ(c.recv_time[0], 10 * kMillisecond);
  ASSERT_EQ(skewed->process_links().size(), 1u);
  EXPECT_EQ(skewed->process_links()[0].time, 105 * kMillisecond);
  EXPECT_EQ(skewed->process_links()[0].to_thread, ThreadId(3));
}

TEST(ParseNodeOffset, SignedDurations) {
  auto plus = ParseNodeOffset("WS2=+30ms");
  ASSERT_TRUE(plus.ok());
  EXPECT_EQ(plus->first, "WS2");
  EXPECT_EQ(plus->second, 30 * kMillisecond);
  auto minus = ParseNodeOffset("10.0.0.1:80=-1.5ms");
  ASSERT_TRUE(minus.ok());
  EXPECT_EQ(minus->first, "10.0.0.1:80");
  EXPECT_EQ(minus->second, -1500 * kMicrosecond);
  EXPECT_EQ(ParseNodeOffset("WS2").status().message(),
            "bad offset 'WS2' (want NODE=+30ms or NODE=-5ms)");
  EXPECT_EQ(ParseNodeOffset("WS2=30").status().message(),
            "offset 'WS2=30': bad duration '30' (want a number and a unit: ns, us, ms, s, m, h)");
}

TEST(DropMessages, FastSnifferDropsNothing) {
  Trace trace = SmallMultitier();
  DropSummary summary;
  Result<Trace> kept = DropMessages(trace, DropOptions{1e12, 64}, &summary);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(summary.dropped, 0u);
  EXPECT_EQ(summary.paths_lost, 0u);
  EXPECT_EQ(summary.messages, trace.size());
  EXPECT_EQ(summary.paths, PathSignatures(trace).size());
  EXPECT_EQ(kept->columns().send_time, trace.columns().send_time);
  EXPECT_EQ(kept->columns().truth_parent, trace.columns().truth_parent);
  EXPECT_EQ(kept->columns().truth_path, trace.columns().truth_path);
}

TEST(DropMessages, HandComputedQueue) {
  // 1000 messages/s (1 ms each), a queue of 2. Arrivals in ms and paths:
  //   m0 0 p0 -> done at 1      m1 0 p0 -> done at 2      m2 0 p1 -> full: dropped
  //   m3 0.5 p1 -> full: dropped  m4 1.0 p2 -> m0 done; done at 3   m5 1.2 p3 -> full: dropped
  //   m6 5 p3 -> empty; done 6  m7 5 p4 -> done 7  m8 5 p5 -> dropped  m9 5 p5 -> dropped
  // Dropped 5 of 10; paths 1, 3, 5 lost of 6; m6 keeps no truth.
  TraceBuilder b;
  NodeId x = b.Node("X"), y = b.Node("Y");
  const double at[] = {0, 0, 0, 0.5, 1.0, 1.2, 5, 5, 5, 5};
  const uint32_t path[] = {0, 0, 1, 1, 2, 3, 3, 4, 5, 5};
  for (int i = 0; i < 10; ++i) {
    MessageRecord r;
    r.send_time = TimeNs(at[i] * 1e6);
    r.sender = x;
    r.receiver = y;
    r.truth_path = PathId(path[i]);
    b.Add(r);
  }
  b.SetParent(1, 0);
  b.SetParent(3, 2);
  b.SetParent(6, 5);
  b.SetParent(9, 8);
  Result<Trace> trace = std::move(b).Finish();
  ASSERT_TRUE(trace.ok());
  DropSummary summary;
  Result<Trace> kept = DropMessages(*trace, DropOptions{1000, 2}, &summary);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(FormatDropSummary(summary),
            "dropped 5 of 10 messages (50.00%); 3 of 6 path instances lost a message");
  const TraceColumns& c = kept->columns();
  EXPECT_EQ(c.send_time, (std::vector<TimeNs>{0, 0, 1000000, 5000000, 5000000}));
  EXPECT_EQ(c.truth_path,
            (std::vector<PathId>{PathId(0), PathId(0), PathId(2), PathId(), PathId(4)}));
  EXPECT_EQ(c.truth_parent, (std::vector<MessageId>{MessageId(), MessageId(0), MessageId(),
                                                    MessageId(), MessageId()}));
}

TEST(DropMessages, LossIsBurstyAndTruthStaysConsistent) {
  Trace trace = SmallMultitier();
  DropSummary summary;
  // multitier sends about 380 messages/s on average, in bursts: a sniffer of that rate
  // loses a few, in bursts.
  Result<Trace> kept = DropMessages(trace, DropOptions{380, 64}, &summary);
  ASSERT_TRUE(kept.ok());
  EXPECT_GT(summary.dropped, 0u);
  EXPECT_LT(summary.dropped, summary.messages / 10);
  EXPECT_EQ(kept->size(), summary.messages - summary.dropped);
  // Surviving paths are whole and still follow the convention.
  Trace truth_only;
  {
    TraceBuilder b;
    b.nodes() = kept->nodes();
    b.strings() = kept->strings();
    const TraceColumns& c = kept->columns();
    std::vector<uint32_t> row(kept->size(), UINT32_MAX);
    for (size_t i = 0; i < kept->size(); ++i) {
      if (!c.truth_path[i].valid()) continue;
      MessageRecord r = kept->Row(MessageId(uint32_t(i)));
      if (r.truth_parent.valid()) r.truth_parent = MessageId(row[r.truth_parent.value()]);
      row[i] = b.Add(r);
    }
    truth_only = std::move(b).Finish().value();
  }
  EXPECT_EQ(CountTruthViolations(truth_only), 0);
  EXPECT_EQ(PathSignatures(truth_only).size(), summary.paths - summary.paths_lost);
  EXPECT_EQ(DropMessages(trace, DropOptions{0, 64}).status().message(),
            "--rate must be a positive number of messages per second");
}

}  // namespace
}  // namespace weft
