// The live baggage: Table 4's operations, the binary form and its lazy decoding, refusal
// of bad bytes, and a property test that branches packing, splitting, joining and crossing
// "processes" (serialize, then deserialize) always see exactly the tuples of their causal
// past: no instance is lost to a name collision, none is counted twice.
#include "pivot/baggage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace weft::pivot {
namespace {

using query::PackedTuples;
using query::PartialAggregate;
using query::Value;

void Pack(Baggage& b, int64_t v, uint32_t slot = 0) {
  Value value = Value::Int(v);
  b.Contents().Active(slot, 1, 0).Append(&value, nullptr, 1, v);
}

std::vector<int64_t> Unpack(Baggage& b, uint32_t slot = 0) {
  std::vector<int64_t> out;
  b.Contents().ForEachInstance(slot, [&](const PackedTuples& t) {
    for (size_t i = 0; i < t.size(); ++i) out.push_back(t.Values(i)[0].i);
  });
  std::sort(out.begin(), out.end());
  return out;
}

Baggage RoundTrip(const Baggage& b) {
  Baggage out;
  EXPECT_TRUE(out.Deserialize(b.Serialize()).ok());
  return out;
}

TEST(Baggage, EmptyBaggageSerializesToNothing) {
  Baggage b;
  EXPECT_EQ(b.Serialize(), "");
  Baggage c;
  ASSERT_TRUE(c.Deserialize("").ok());
  EXPECT_EQ(c.tuples(), 0u);
  // Nor once it has branched: a call and its reply that carry no tuples carry no bytes.
  Baggage branch = b.Split();
  EXPECT_EQ(b.Serialize(), "");
  EXPECT_EQ(branch.Serialize(), "");
  std::string call = "x";
  b.SplitSerializeTo(call);
  EXPECT_EQ(call, "x");
  // A tuple makes it carry its lineage: version, origin, stamp, the instance.
  Pack(b, 7);
  EXPECT_EQ(b.Serialize().substr(0, 1), "\x02");
  EXPECT_GT(b.Serialize().size(), 10u);
}

// A request that spawns a hundred threads one after another, each with an empty branch
// that joins back empty, leaves no trace in its stamp: a branch of nothing is a lineage of
// its own, so no fork deepens the stamp (past 48 levels receivers would refuse it).
TEST(Baggage, EmptyBranchesLeaveTheStampAsItWas) {
  Baggage root;
  for (int i = 0; i < 100; ++i) root.Join(root.Split());
  Pack(root, 1);
  const std::string bytes = root.Serialize();
  EXPECT_LT(bytes.size(), 32u);
  Baggage back = RoundTrip(root);
  ASSERT_TRUE(back.Decode().ok()) << back.decode_status().message();
  EXPECT_EQ(Unpack(back), std::vector<int64_t>{1});
}

// Two receivers of nothing start lineages of their own; the tuples they pack come back to
// the caller and are all kept, however their stamps overlap.
TEST(Baggage, RepliesFromReceiversOfNothingAreAllKept) {
  Baggage root;
  Pack(root, 1);
  Baggage empty_root;
  std::vector<Baggage> receivers;
  for (int i = 0; i < 3; ++i) {
    std::string call;
    empty_root.SplitSerializeTo(call);
    ASSERT_EQ(call, "");
    receivers.emplace_back();
    ASSERT_TRUE(receivers.back().Deserialize(call).ok());
    Pack(receivers.back(), 10 + i);
    Baggage grandchild = RoundTrip(receivers.back().Split());
    Pack(grandchild, 20 + i);
    receivers.back().Join(RoundTrip(grandchild));
  }
  for (Baggage& r : receivers) root.Join(RoundTrip(r));
  EXPECT_EQ(Unpack(root), (std::vector<int64_t>{1, 10, 11, 12, 20, 21, 22}));
  // And again through a round trip of the whole.
  Baggage again = RoundTrip(root);
  EXPECT_EQ(Unpack(again), (std::vector<int64_t>{1, 10, 11, 12, 20, 21, 22}));
}

TEST(Baggage, EveryKindOfValueRoundTrips) {
  Baggage b;
  const std::string_view text = b.Intern("hello, baggage");
  const std::vector<Value> values = {
      Value::Null(),
      Value::Int(0),
      Value::Int(-1),
      Value::Int(std::numeric_limits<int64_t>::min()),
      Value::Int(std::numeric_limits<int64_t>::max()),
      Value::Float(-0.0),
      Value::Float(3.25),
      Value::Float(std::numeric_limits<double>::infinity()),
      Value::Float(std::nan("")),
      Value::String(""),
      Value::String(text),
  };
  PackedTuples& t = b.Contents().Active(2, uint32_t(values.size()), 2);
  PartialAggregate parts[2];
  parts[0].sum = 10.5;
  parts[0].weight = 3;
  parts[0].min = Value::Int(-4);
  parts[0].max = Value::String(text);
  t.Append(values.data(), parts, 2.5, -7);
  t.Append(values.data(), parts, 1, 1'000'000'000'000);

  Baggage c = RoundTrip(b);
  EXPECT_FALSE(c.decoded());
  const PackedTuples* got = nullptr;
  c.Contents().ForEachInstance(2, [&](const PackedTuples& x) { got = &x; });
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ(got->width, values.size());
  EXPECT_EQ(got->partials, 2u);
  for (size_t i = 0; i < values.size(); ++i) {
    const Value& v = got->Values(1)[i];
    ASSERT_EQ(v.type, values[i].type) << i;
    if (v.type == query::ValueType::kFloat) {
      EXPECT_EQ(std::bit_cast<uint64_t>(v.f), std::bit_cast<uint64_t>(values[i].f)) << i;
    } else {
      EXPECT_TRUE(v == values[i]) << i;
    }
  }
  EXPECT_EQ(got->mult[0], 2.5);
  EXPECT_EQ(got->order[0], -7);
  EXPECT_EQ(got->order[1], 1'000'000'000'000);
  EXPECT_EQ(got->Parts(0)[0].sum, 10.5);
  EXPECT_EQ(got->Parts(0)[0].weight, 3);
  EXPECT_TRUE(got->Parts(0)[0].min == Value::Int(-4));
  EXPECT_EQ(got->Parts(0)[0].max.s, "hello, baggage");
  EXPECT_TRUE(got->Parts(0)[1].min.is_null());
  // The decoded form encodes to the same bytes.
  EXPECT_EQ(c.Serialize(), b.Serialize());
}

// Tuples of the fewest bytes the format allows (null values, null partials) decode: the
// decoder's check of counts against the bytes left is not stricter than the format.
TEST(Baggage, TheSmallestTuplesDecode) {
  Baggage b;
  Value nulls[3];
  PartialAggregate parts[2];
  PackedTuples& t = b.Contents().Active(0, 3, 2);
  for (int i = 0; i < 5; ++i) t.Append(nulls, parts, 1, 0);
  Baggage c = RoundTrip(b);
  ASSERT_TRUE(c.Decode().ok()) << c.decode_status().message();
  EXPECT_EQ(c.tuples(), 5u);
  EXPECT_EQ(c.Serialize(), b.Serialize());
}

// Whole multiplicities take one varint, others the double; both come back exactly.
TEST(Baggage, MultiplicitiesRoundTripExactly) {
  Baggage b;
  const std::vector<double> mults = {1,
                                     0,
                                     3,
                                     4503599627370495.0,
                                     4503599627370496.0,
                                     0.5,
                                     -2,
                                     -0.0,
                                     std::numeric_limits<double>::infinity()};
  Value v = Value::Int(1);
  PackedTuples& t = b.Contents().Active(0, 1, 0);
  for (double m : mults) t.Append(&v, nullptr, m, 0);
  Baggage c = RoundTrip(b);
  const PackedTuples* got = nullptr;
  c.Contents().ForEachInstance(0, [&](const PackedTuples& x) { got = &x; });
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(got->size(), mults.size());
  for (size_t i = 0; i < mults.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(got->mult[i]), std::bit_cast<uint64_t>(mults[i])) << i;
  }
  EXPECT_EQ(c.Serialize(), b.Serialize());
}

TEST(Baggage, DeserializeIsLazyAndForwardingKeepsTheBytes) {
  Baggage b;
  for (int i = 0; i < 10; ++i) Pack(b, i);
  std::string bytes = b.Serialize();
  // A forwarder that never looks inside passes exactly these bytes on.
  Baggage c;
  ASSERT_TRUE(c.Deserialize(bytes).ok());
  EXPECT_FALSE(c.decoded());
  EXPECT_EQ(c.Serialize(), bytes);
  Baggage moved = std::move(c);
  EXPECT_FALSE(moved.decoded());
  EXPECT_EQ(moved.Serialize(), bytes);
  EXPECT_EQ(Unpack(moved), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(moved.decoded());
  EXPECT_TRUE(moved.decode_status().ok());
  // A moved-from baggage is empty and usable.
  EXPECT_EQ(c.tuples(), 0u);
  Pack(c, 42);
  EXPECT_EQ(Unpack(c), std::vector<int64_t>{42});
}

// A receiver that has no further use for a message's field keeps the bytes themselves:
// the same baggage as from a copy, and refusals counted alike.
TEST(Baggage, DeserializeOwnedKeepsTheBytesAsDeserializeCopiesThem) {
  Baggage b;
  for (int i = 0; i < 3; ++i) Pack(b, i);
  const std::string bytes = b.Serialize();
  std::string field = bytes;
  Baggage owned;
  ASSERT_TRUE(owned.DeserializeOwned(std::move(field)).ok());
  EXPECT_FALSE(owned.decoded());
  EXPECT_EQ(owned.Serialize(), bytes);
  EXPECT_EQ(Unpack(owned), (std::vector<int64_t>{0, 1, 2}));

  std::string none;
  ASSERT_TRUE(owned.DeserializeOwned(std::move(none)).ok());
  EXPECT_EQ(owned.tuples(), 0u);
  const uint64_t refused = GlobalBaggageCounters().deserialize_rejected.load();
  EXPECT_FALSE(owned.DeserializeOwned(std::string("\x03\x02", 2)).ok());
  EXPECT_EQ(GlobalBaggageCounters().deserialize_rejected.load(), refused + 1);
  EXPECT_EQ(owned.Serialize(), "");
}

// A baggage draws its lineage (origin and stamp) only when something needs it, so a
// request no query packs into makes none; lineages drawn late are still apart, and a
// baggage that took in another lineage's instances before drawing its own forks and
// names as any other.
TEST(Baggage, TheLineageIsDrawnWhenFirstNeeded) {
  Baggage fresh;
  EXPECT_EQ(fresh.Serialize(), "");
  Baggage branch = fresh.Split();  // nothing to share: its own lineage, nothing drawn
  std::string call;
  fresh.SplitSerializeTo(call);
  EXPECT_EQ(call, "");

  // Two baggages that pack at once: different origins (bytes 1-8), so their instances
  // never meet as one.
  Baggage a, c;
  Pack(a, 1);
  Pack(c, 2);
  EXPECT_NE(a.Serialize().substr(1, 8), c.Serialize().substr(1, 8));

  // An unseeded baggage joins a reply from another lineage, then splits and joins again.
  Baggage request;
  Baggage reply;
  ASSERT_TRUE(reply.Deserialize(a.Serialize()).ok());
  request.Join(std::move(reply));
  EXPECT_EQ(Unpack(request), std::vector<int64_t>{1});
  Baggage down = request.Split();
  Pack(down, 3);
  Pack(request, 4);
  EXPECT_EQ(Unpack(down), (std::vector<int64_t>{1, 3}));
  Baggage back;
  ASSERT_TRUE(back.Deserialize(down.Serialize()).ok());
  request.Join(std::move(back));
  EXPECT_EQ(Unpack(request), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_FALSE(request.stamp().anonymous());
}

// What a reply relies on to skip serializing its baggage again after Reply's advice:
// packs() moves with every pack and with nothing else a firing may do to it (decode,
// unpack), and goes with the contents when baggages are swapped.
TEST(Baggage, PacksCountPacksOnly) {
  Baggage b;
  const uint64_t start = b.packs();
  Pack(b, 1);
  Pack(b, 2);
  EXPECT_EQ(b.packs(), start + 2);
  Baggage received;
  ASSERT_TRUE(received.Deserialize(b.Serialize()).ok());
  const uint64_t before = received.packs();
  EXPECT_EQ(Unpack(received), (std::vector<int64_t>{1, 2}));  // decodes
  EXPECT_EQ(received.packs(), before);
  Pack(received, 3);
  EXPECT_EQ(received.packs(), before + 1);
  const uint64_t mine = b.packs(), theirs = received.packs();
  swap(b, received);
  EXPECT_EQ(b.packs(), theirs);
  EXPECT_EQ(received.packs(), mine);
}

// A baggage's state goes back to its thread's few kept ones when it ends, and comes out as
// new: nothing of the last request shows in the next. A thread's kept states are freed when
// it ends (the ASan build's leak check), and a thread_local baggage that ends after that
// frees its own.
TEST(Baggage, EndedStatesAreReusedAsNew) {
  std::thread([] {
    thread_local Baggage last;  // ends after the thread's kept states were freed
    Pack(last, 9);
    for (int request = 0; request < 8; ++request) {
      Baggage b;
      EXPECT_EQ(b.tuples(), 0u);
      EXPECT_TRUE(b.Serialize().empty());
      Pack(b, request);
      EXPECT_EQ(b.packs(), 1u);  // counted from 0, whatever the state counted before
      Baggage received;
      ASSERT_TRUE(received.Deserialize(b.Serialize()).ok());
      EXPECT_EQ(Unpack(received), (std::vector<int64_t>{request}));
      Baggage bad;
      EXPECT_FALSE(bad.Deserialize(std::string(1, char(kBaggageFormatVersion))).ok() &&
                   bad.Decode().ok());
    }
    Baggage fresh;
    EXPECT_TRUE(fresh.decode_status().ok());
    EXPECT_EQ(fresh.tuples(), 0u);
  }).join();
}

TEST(Baggage, BadBytesAreRefusedAndCounted) {
  BaggageCounters& counters = GlobalBaggageCounters();
  uint64_t refused = counters.deserialize_rejected.load();
  uint64_t bad = counters.decode_rejected.load();
  Baggage b;
  EXPECT_FALSE(b.Deserialize(std::string("\x03\x02\x01\x00\x00", 5)).ok());  // version 3
  EXPECT_EQ(counters.deserialize_rejected.load(), refused + 1);
  EXPECT_FALSE(b.Deserialize(std::string(kMaxSerializedBytes + 1, '\x01')).ok());
  EXPECT_EQ(counters.deserialize_rejected.load(), refused + 2);

  Baggage good;
  for (int i = 0; i < 3; ++i) Pack(good, i);
  std::string bytes = good.Serialize();
  // Every truncation is refused when decoded, leaving an empty baggage that still works.
  for (size_t n = 1; n < bytes.size(); ++n) {
    Baggage t;
    ASSERT_TRUE(t.Deserialize(std::string_view(bytes).substr(0, n)).ok());
    EXPECT_FALSE(t.Decode().ok()) << n;
    EXPECT_EQ(t.tuples(), 0u);
    Pack(t, 7);
    EXPECT_EQ(Unpack(t), std::vector<int64_t>{7});
  }
  EXPECT_EQ(counters.decode_rejected.load(), bad + bytes.size() - 1);
  // A byte after the end, and an anonymous stamp (id 0), are refused too.
  Baggage t;
  ASSERT_TRUE(t.Deserialize(bytes + "x").ok());
  EXPECT_FALSE(t.Decode().ok());
  ASSERT_TRUE(t.Deserialize(std::string("\x02"
                                        "12345678"
                                        "\x02\x00\x00\x00",
                                        13))
                  .ok());
  EXPECT_FALSE(t.Decode().ok());
  EXPECT_NE(t.decode_status().message().find("anonymous"), std::string::npos);
}

TEST(Baggage, BranchesSeeEachOtherOnlyAfterTheyJoin) {
  Baggage root;
  Pack(root, 1);
  Baggage branch = root.Split();
  Pack(root, 2);
  Pack(branch, 3);
  EXPECT_EQ(Unpack(root), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Unpack(branch), (std::vector<int64_t>{1, 3}));
  // The branch crosses to another process and back.
  Baggage remote = RoundTrip(branch);
  Pack(remote, 4);
  Baggage back = RoundTrip(remote);
  root.Join(std::move(back));
  // 1 came along on both sides and counts once.
  EXPECT_EQ(Unpack(root), (std::vector<int64_t>{1, 2, 3, 4}));
}

// An RPC's shortcuts: SplitSerializeTo writes what Split().Serialize() writes, and a reply
// joined before it was decoded (its instances known here skipped in the decode) gives
// what joining a decoded reply gives.
TEST(Baggage, CallAndReplyShortcutsMatchSplitSerializeAndJoin) {
  Baggage a;
  Pack(a, 1);
  Baggage b = RoundTrip(a);  // the same lineage, stamp and tuple
  std::string call_a;
  a.SplitSerializeTo(call_a);
  const std::string call_b = b.Split().Serialize();
  EXPECT_EQ(call_a, call_b);
  std::string again_a;
  a.SplitSerializeTo(again_a);
  EXPECT_EQ(again_a, b.Split().Serialize());
  EXPECT_EQ(a.Serialize(), b.Serialize());  // both kept the same side
  // The callee packs 2 and replies; a joins the bytes undecoded, b decodes them first.
  Baggage callee;
  ASSERT_TRUE(callee.Deserialize(call_a).ok());
  Pack(callee, 2);
  const std::string reply = callee.Serialize();
  Baggage reply_a, reply_b;
  ASSERT_TRUE(reply_a.Deserialize(reply).ok());
  ASSERT_TRUE(reply_b.Deserialize(reply).ok());
  ASSERT_TRUE(reply_b.Decode().ok());
  a.Join(std::move(reply_a));
  b.Join(std::move(reply_b));
  EXPECT_EQ(Unpack(a), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.Serialize(), b.Serialize());
  // A malformed reply is refused all the same (a byte after the end) and adds nothing.
  const std::string bad = reply + '\0';
  Baggage reply_bad;
  ASSERT_TRUE(reply_bad.Deserialize(bad).ok());
  a.Join(std::move(reply_bad));
  EXPECT_EQ(Unpack(a), (std::vector<int64_t>{1, 2}));
}

// A reply leaves out what the call carried (the caller holds it) and joins to the same
// baggage as the whole serialization would; one that added nothing still brings the stamp
// back, so the caller's clock owns all of its interval again.
TEST(Baggage, RepliesCarryOnlyWhatTheCalleeAdded) {
  Baggage whole;
  Pack(whole, 1);
  Baggage delta = RoundTrip(whole);  // the same lineage, stamp and tuple on both sides
  std::string call, call_again;
  whole.SplitSerializeTo(call);
  delta.SplitSerializeTo(call_again);
  ASSERT_EQ(call, call_again);
  Baggage callee;
  ASSERT_TRUE(callee.Deserialize(call).ok());
  Pack(callee, 2);
  const std::string reply = callee.SerializeReply();
  const std::string full = callee.Serialize();
  EXPECT_LT(reply.size(), full.size());
  Baggage reply_full, reply_delta;
  ASSERT_TRUE(reply_full.Deserialize(full).ok());
  ASSERT_TRUE(reply_delta.Deserialize(reply).ok());
  whole.Join(std::move(reply_full));
  delta.Join(std::move(reply_delta));
  EXPECT_EQ(Unpack(delta), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(delta.Serialize(), whole.Serialize());  // same instances, names and stamp

  // A callee that packs nothing: the reply is the lineage and stamp alone, no instance.
  std::string call2;
  delta.SplitSerializeTo(call2);
  Baggage idle;
  ASSERT_TRUE(idle.Deserialize(call2).ok());
  ASSERT_TRUE(idle.Decode().ok());
  const std::string idle_reply = idle.SerializeReply();
  ASSERT_FALSE(idle_reply.empty());
  EXPECT_EQ(idle_reply.back(), '\0');  // an instance count of 0 ends it
  Baggage back;
  ASSERT_TRUE(back.Deserialize(idle_reply).ok());
  delta.Join(std::move(back));
  EXPECT_EQ(Unpack(delta), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(delta.stamp().ToString().substr(0, 3), "(1,");  // the whole id is back
  // Untouched, a reply forwards the bytes it came as.
  Baggage untouched;
  ASSERT_TRUE(untouched.Deserialize(call2).ok());
  EXPECT_EQ(untouched.SerializeReply(), call2);
}

// A baggage that branched many times carries a stamp of more than 127 bytes (a size of
// two varint bytes); it round trips, and its branches join back to every tuple.
TEST(Baggage, LongStampsRoundTrip) {
  Baggage root;
  std::vector<Baggage> branches;
  for (int i = 0; i < 40; ++i) {
    Pack(root, i);
    branches.push_back(root.Split());
    Pack(branches.back(), 100 + i);
  }
  std::string stamp = root.stamp().Encode();
  ASSERT_GT(stamp.size(), 127u);
  std::string bytes = root.Serialize();
  // After the version, the 8-byte origin and two size bytes.
  EXPECT_EQ(bytes.substr(11, stamp.size()), stamp);
  Baggage back = RoundTrip(root);
  ASSERT_TRUE(back.Decode().ok()) << back.decode_status().message();
  EXPECT_EQ(back.stamp().Encode(), stamp);
  for (Baggage& b : branches) back.Join(RoundTrip(b));
  std::vector<int64_t> want;
  for (int i = 0; i < 40; ++i) want.push_back(i);
  for (int i = 0; i < 40; ++i) want.push_back(100 + i);
  EXPECT_EQ(Unpack(back), want);
}

// Two processes that never talk name their instances apart, where a counter per process
// would hand out the same id on both sides.
TEST(Baggage, InstancesNamedInDifferentProcessesNeverCollide) {
  Baggage root;
  Baggage left = RoundTrip(root.Split());
  Baggage right = RoundTrip(root.Split());
  Pack(left, 10);
  Pack(right, 20);
  Baggage left_grandchild = left.Split();
  Baggage right_grandchild = right.Split();
  Pack(left_grandchild, 11);
  Pack(right_grandchild, 21);
  std::set<std::string> names;
  for (Baggage* b : {&left, &right}) {
    for (const auto& i : b->Contents().frozen()) names.insert(i->name);
  }
  EXPECT_EQ(names.size(), 2u);
  left.Join(RoundTrip(left_grandchild));
  right.Join(RoundTrip(right_grandchild));
  root.Join(RoundTrip(left));
  root.Join(RoundTrip(right));
  EXPECT_EQ(Unpack(root), (std::vector<int64_t>{10, 11, 20, 21}));
}

// The reference model: the set of tuples each live baggage has in its causal past.
TEST(Baggage, RandomBranchingAgreesWithTheReferenceModel) {
  std::mt19937_64 rng(1520);
  size_t checked = 0;
  for (int request = 0; request < 1500; ++request) {
    std::vector<Baggage> live(1);
    std::vector<std::set<int64_t>> seen(1);
    int64_t next = 0;
    int steps = 1 + int(rng() % 30);
    for (int step = 0; step < steps; ++step) {
      size_t pick = rng() % live.size();
      switch (rng() % 4) {
        case 0:
          if (live.size() < 6) {
            live.push_back(live[pick].Split());
            seen.push_back(seen[pick]);
            break;
          }
          [[fallthrough]];
        case 1: {
          int n = 1 + int(rng() % 3);
          for (int k = 0; k < n; ++k) {
            Pack(live[pick], next);
            seen[pick].insert(next++);
          }
          break;
        }
        case 2:
          if (live.size() > 1) {
            size_t with = rng() % (live.size() - 1);
            if (with >= pick) ++with;
            live[pick].Join(std::move(live[with]));
            seen[pick].insert(seen[with].begin(), seen[with].end());
            live.erase(live.begin() + ptrdiff_t(with));
            seen.erase(seen.begin() + ptrdiff_t(with));
          }
          break;
        case 3:  // to another process and on, sometimes without being looked at there
          live[pick] = RoundTrip(live[pick]);
          if (rng() % 2) live[pick] = RoundTrip(live[pick]);
          break;
      }
      for (size_t b = 0; b < live.size(); ++b) {
        std::vector<int64_t> want(seen[b].begin(), seen[b].end());
        ASSERT_EQ(Unpack(live[b]), want) << "request " << request << " step " << step;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20000u);
}

}  // namespace
}  // namespace weft::pivot
