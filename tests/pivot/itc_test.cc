// Interval tree clocks against a reference model: every stamp also carries the explicit set
// of events it has seen, and random fork/join/event sequences must keep Leq equal to set
// inclusion, live ids disjoint, encodings round-tripping and every event's name unique.
#include "pivot/itc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace weft::pivot::itc {
namespace {

TEST(Itc, PaperNotation) {
  Stamp a = Stamp::Seed();
  EXPECT_EQ(a.ToString(), "(1, 0)");
  Stamp b = a.Fork();
  EXPECT_EQ(a.ToString(), "((1, 0), 0)");
  EXPECT_EQ(b.ToString(), "((0, 1), 0)");
  ASSERT_TRUE(a.Event());
  EXPECT_EQ(a.ToString(), "((1, 0), (0, 1, 0))");
  ASSERT_TRUE(b.Event());
  ASSERT_TRUE(b.Event());
  EXPECT_EQ(b.ToString(), "((0, 1), (0, 0, 2))");
  EXPECT_FALSE(a.Leq(b));
  EXPECT_FALSE(b.Leq(a));
  a.Join(b);
  // fill collapses the tree once the whole interval is owned again.
  EXPECT_EQ(a.ToString(), "(1, (1, 0, 1))");
  ASSERT_TRUE(a.Event());
  EXPECT_EQ(a.ToString(), "(1, 2)");
  EXPECT_TRUE(b.Leq(a));
}

TEST(Itc, AnonymousStampsRecordNothing) {
  Stamp a = Stamp::Seed();
  ASSERT_TRUE(a.Event());
  Stamp p = Stamp::Peek(a);
  EXPECT_TRUE(p.anonymous());
  EXPECT_FALSE(p.Event());
  EXPECT_TRUE(p.Leq(a));
  EXPECT_TRUE(a.Leq(p));
  EXPECT_FALSE(Stamp::IdsOverlap(a, p));
}

TEST(Itc, DecodeRejectsWhatEncodeNeverWrites) {
  EXPECT_TRUE(Stamp::Decode(Stamp::Seed().Encode()).ok());
  const std::vector<std::string> bad = {
      "",                                  // nothing
      std::string("\x01", 1),              // no event tree
      std::string("\x03\x00", 2),          // unknown id tag
      std::string("\x02\x01\x01\x00", 4),  // id (1, 1) is not normal
      std::string("\x02\x00\x00\x00", 4),  // id (0, 0) is not normal
      std::string("\x01\x01\x02\x02", 4),  // event (0, 1, 1): minimum not lifted
      std::string("\x01\x03\x00\x00", 4),  // event (1, 0, 0) is not normal
      std::string("\x01\x80\x00", 3),      // a varint that is not minimal
      std::string("\x01\x00\x00", 3),      // a byte after the stamp
      std::string("\x01\x80", 2),          // a truncated varint
  };
  for (const std::string& b : bad) EXPECT_FALSE(Stamp::Decode(b).ok()) << testing::PrintToString(b);
  // Deeper than kMaxDepth.
  std::string deep(kMaxDepth + 2, '\x02');
  EXPECT_FALSE(Stamp::Decode(deep).ok());
  // Counts whose sum along a path would overflow.
  std::string big = "\x01";
  uint64_t v = ((uint64_t{1} << 62) - 1) * 2 + 1;  // a node with the largest count
  while (v >= 0x80) {
    big.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  big.push_back(char(v));
  big += std::string("\x02\x00", 2);  // a child of count 1 under it, then 0
  EXPECT_FALSE(Stamp::Decode(big).ok());
}

struct Modelled {
  Stamp stamp;
  std::set<int> seen;
};

TEST(Itc, RandomSequencesAgreeWithTheReferenceModel) {
  std::mt19937_64 rng(20081215);
  std::set<std::string> names;  // every event's canonical name, over all sequences
  size_t events = 0, checks = 0;
  for (int sequence = 0; sequence < 3000; ++sequence) {
    std::vector<Modelled> live;
    live.push_back({Stamp::Seed(), {}});
    int next_event = 0;
    std::set<std::string> sequence_names;
    int steps = 1 + int(rng() % 40);
    for (int step = 0; step < steps; ++step) {
      size_t pick = rng() % live.size();
      int op = int(rng() % 3);
      if (op == 0 && live.size() < 8) {
        Stamp other = live[pick].stamp.Fork();
        live.push_back({std::move(other), live[pick].seen});
      } else if (op == 1 && live.size() > 1) {
        size_t with = rng() % (live.size() - 1);
        if (with >= pick) ++with;
        live[pick].stamp.Join(live[with].stamp);
        live[pick].seen.insert(live[with].seen.begin(), live[with].seen.end());
        live.erase(live.begin() + ptrdiff_t(with));
      } else {
        ASSERT_TRUE(live[pick].stamp.Event());
        live[pick].seen.insert(next_event++);
        std::string name;
        live[pick].stamp.EncodeEvent(name);
        // The name the live baggage gives an instance: never one an earlier event had.
        EXPECT_TRUE(sequence_names.insert(name).second) << live[pick].stamp.ToString();
        ++events;
      }
      for (size_t a = 0; a < live.size(); ++a) {
        auto decoded = Stamp::Decode(live[a].stamp.Encode());
        ASSERT_TRUE(decoded.ok()) << decoded.status().message();
        EXPECT_TRUE(*decoded == live[a].stamp);
        EXPECT_EQ(decoded->ToString(), live[a].stamp.ToString());
        for (size_t b = 0; b < live.size(); ++b) {
          bool subset = std::includes(live[b].seen.begin(), live[b].seen.end(),
                                      live[a].seen.begin(), live[a].seen.end());
          ASSERT_EQ(live[a].stamp.Leq(live[b].stamp), subset)
              << live[a].stamp.ToString() << " vs " << live[b].stamp.ToString();
          if (a != b) {
            ASSERT_FALSE(Stamp::IdsOverlap(live[a].stamp, live[b].stamp));
          }
          ++checks;
        }
      }
    }
    names.insert(sequence_names.begin(), sequence_names.end());
  }
  EXPECT_GT(events, 20000u);
  EXPECT_GT(checks, 500000u);
}

}  // namespace
}  // namespace weft::pivot::itc
