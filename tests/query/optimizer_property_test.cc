// Over random executions and random queries: optimized and unoptimized advice give the
// same answer (Pivot Tracing §4: the rewrites of Table 3 change what the baggage carries,
// never the result), both the same as the happened-before join evaluated globally over
// every event (Figure 6a); and how many fewer tuples the optimized baggage carried.
#include <gtest/gtest.h>

#include <random>

#include "query/hand_events.h"
#include "query/happened_before_oracle.h"
#include "sanitizer_build.h"

namespace weft::query::testing {
namespace {

class RandomQueries {
 public:
  explicit RandomQueries(uint64_t seed) : rng_(seed) {}

  std::string Query() {
    aliases_.clear();
    tracepoint_aliases_.clear();
    vars_.clear();
    numeric_.clear();
    std::string q = "From x0 In " + Tracepoints();
    AddAlias("x0", false);
    int joins = Pick(0, 3);
    for (int j = 1; j <= joins; ++j) {
      std::string alias = "x" + std::to_string(j);
      std::string target =
          tracepoint_aliases_[size_t(Pick(0, int(tracepoint_aliases_.size()) - 1))];
      bool subquery = Pick(0, 4) == 0;
      std::string source = subquery ? Subquery() : Tracepoints();
      static const char* kFilters[] = {
          "{}", "{}", "{}", "First({})", "MostRecent({})", "FirstN({}, 2)", "MostRecentN({}, 2)"};
      std::string filter = kFilters[Pick(0, 6)];
      filter.replace(filter.find("{}"), 2, source);
      q += " Join " + alias + " In " + filter + " On " + alias + " -> " + target;
      AddAlias(alias, subquery);
    }
    int conjuncts = Pick(0, 2);
    for (int c = 0; c < conjuncts; ++c) q += (c == 0 ? " Where " : " and ") + Condition();
    if (Pick(0, 2) == 0) {
      q += " Select " + Var() + ", " + Var();
    } else {
      int keys = Pick(0, 2);
      std::string group, select;
      for (int k = 0; k < keys; ++k) {
        std::string v = Var();
        if (group.find(v) != std::string::npos) continue;
        group += (group.empty() ? "" : ", ") + v;
        select += v + ", ";
      }
      static const char* kAggregates[] = {"COUNT", "SUM({})", "MIN({})", "MAX({})", "AVERAGE({})"};
      int aggregates = Pick(1, 3);
      for (int a = 0; a < aggregates; ++a) {
        std::string agg = kAggregates[Pick(0, 4)];
        if (agg != "COUNT") agg.replace(agg.find("{}"), 2, NumericVar());
        select += agg + " As g" + std::to_string(a) + (a + 1 < aggregates ? ", " : "");
      }
      if (!group.empty()) q += " GroupBy " + group;
      q += " Select " + select;
    }
    return q;
  }

  // A request's execution: calls in sequence and in parallel, each firing tracepoints.
  Execution Request(HandEvents& events) {
    Script script;
    Work(script, 0, 0, events);
    return script.Done(Pick(0, 3) == 0 ? 0.5 : 1);
  }

 private:
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string Tracepoints() {
    static const char* kNames[] = {"A", "B", "C"};
    std::string t = kNames[Pick(0, 2)];
    if (Pick(0, 5) == 0) t += std::string(", ") + kNames[Pick(0, 2)];
    return t;
  }
  std::string Subquery() {
    std::string s = "(From s In " + Tracepoints();
    if (Pick(0, 1) == 0) s += " Where s.v > " + std::to_string(Pick(0, 4));
    return s + " Select s.v, s.host As h)";
  }
  void AddAlias(const std::string& alias, bool subquery) {
    aliases_.push_back(alias);
    if (subquery) {
      vars_.push_back(alias + ".v");
      vars_.push_back(alias + ".h");
      numeric_.push_back(alias + ".v");
    } else {
      tracepoint_aliases_.push_back(alias);
      for (const char* f : {".id", ".v", ".host"}) vars_.push_back(alias + f);
      numeric_.push_back(alias + ".v");
    }
  }
  std::string Var() { return vars_[size_t(Pick(0, int(vars_.size()) - 1))]; }
  std::string NumericVar() { return numeric_[size_t(Pick(0, int(numeric_.size()) - 1))]; }
  std::string Condition() {
    switch (Pick(0, 4)) {
      case 0:
        return NumericVar() + " > " + std::to_string(Pick(0, 4));
      case 1:
        return NumericVar() + " <= " + NumericVar();
      case 2:
        return "not " + NumericVar() + " == " + std::to_string(Pick(0, 4));
      case 3:
        return "(" + NumericVar() + " < 2 or " + NumericVar() + " > 3)";
      default:
        return NumericVar() + " + " + NumericVar() + " != 4";
    }
  }

  void Work(Script& script, uint32_t segment, int depth, HandEvents& events) {
    int actions = Pick(1, 4);
    for (int i = 0; i < actions; ++i) {
      int what = depth >= 3 ? 0 : Pick(0, 3);
      if (what <= 1) {
        uint32_t tp = uint32_t(Pick(0, 2));
        std::string id = std::string(1, char('a' + tp)) + std::to_string(Pick(1, 3));
        script.Fire(segment, tp,
                    events.Add(id, Pick(0, 5), Pick(0, 1) ? "h1" : "h2", Pick(0, 3) * 1000));
      } else if (what == 2) {  // a call: the reply joins back
        uint32_t call = script.Branch(segment);
        Work(script, call, depth + 1, events);
        uint32_t reply = script.Branch(call);
        script.Join(segment, reply);
      } else {  // two calls in parallel
        uint32_t left = script.Branch(segment), right = script.Branch(segment);
        Work(script, left, depth + 1, events);
        Work(script, right, depth + 1, events);
        script.Join(segment, script.Branch(left));
        script.Join(segment, script.Branch(right));
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> aliases_, tracepoint_aliases_, vars_, numeric_;
};

// The release build checks 1,000 random queries (3 s); the sanitizer build, 16 times slower
// at them with GCC and some 50 with clang and the query engine's fuzz coverage (32 s for
// 200), a fifth: it is there for memory errors, which the first queries exercise as well
// as the last.
constexpr int kTrials = weft::testing::kSanitized ? 200 : 1000;

TEST(OptimizerProperty, OptimizedAndUnoptimizedAgreeOnRandomQueries) {
  RandomQueries random(20261124);
  HandEvents events;
  events.Reserve(1 << 20);
  uint64_t packed_plain = 0, packed_optimized = 0, checked = 0, oracle_checked = 0, non_empty = 0;
  double baggage_plain = 0, baggage_optimized = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<Execution> executions;
    for (int r = 0; r < 20; ++r) executions.push_back(random.Request(events));
    std::string q = random.Query();
    Answer plain = Ask(q, AbcTracepoints(), events, executions, false);
    Answer optimized = Ask(q, AbcTracepoints(), events, executions, true);
    ASSERT_EQ(plain.error, "") << q;
    ASSERT_EQ(optimized.error, "") << q;
    const auto &a = plain.result.rows, &b = optimized.result.rows;
    ASSERT_EQ(a.size(), b.size()) << q << "\nunoptimized:\n"
                                  << plain.explain << "optimized:\n"
                                  << optimized.explain;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].values.size(), b[i].values.size());
      for (size_t k = 0; k < a[i].values.size(); ++k) {
        ASSERT_TRUE(NearlyEqual(a[i].values[k], b[i].values[k]))
            << q << "\nrow " << i << " column " << k << ": " << FormatValue(a[i].values[k])
            << " vs " << FormatValue(b[i].values[k]) << "\n"
            << plain.explain << optimized.explain;
      }
      ASSERT_NEAR(a[i].weight, b[i].weight, 1e-9 * std::max(1.0, a[i].weight)) << q;
    }
    ++checked;
    non_empty += a.empty() ? 0 : 1;
    packed_plain += plain.result.counters.tuples_packed;
    packed_optimized += optimized.result.counters.tuples_packed;
    baggage_plain += plain.result.counters.baggage_tuples_mean;
    baggage_optimized += optimized.result.counters.baggage_tuples_mean;
    // Every fourth query, both agree with the happened-before join evaluated over all
    // events at once (slow: it joins every pair of events).
    if (trial % 4 != 0) continue;
    ++oracle_checked;
    Result<Program> program = ParseProgram(q);
    HappenedBeforeOracle oracle(*program, AbcTracepoints(), events);
    for (const Execution& e : executions) oracle.Run(e);
    std::vector<ResultRow> expected = oracle.Finish();
    ASSERT_EQ(expected.size(), a.size()) << q << "\n" << plain.explain;
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t k = 0; k < a[i].values.size(); ++k) {
        ASSERT_TRUE(NearlyEqual(expected[i].values[k], a[i].values[k]))
            << q << "\nrow " << i << " column " << k << ": oracle "
            << FormatValue(expected[i].values[k]) << ", advice " << FormatValue(a[i].values[k])
            << "\n"
            << plain.explain;
      }
      ASSERT_NEAR(expected[i].weight, a[i].weight, 1e-9 * std::max(1.0, a[i].weight)) << q;
    }
  }
  EXPECT_EQ(checked, uint64_t(kTrials));
  EXPECT_EQ(oracle_checked, uint64_t(kTrials / 4));
  EXPECT_GT(non_empty, uint64_t(kTrials / 2));  // most random queries answer something
  EXPECT_LT(packed_optimized, packed_plain);
  std::cerr << kTrials
            << " random queries over 20 random requests each: identical answers (and the "
            << "same as the global happened-before join for " << kTrials / 4
            << " of them); tuples packed " << packed_plain << " unoptimized, " << packed_optimized
            << " optimized (" << 100.0 * (1 - double(packed_optimized) / double(packed_plain))
            << "% fewer); the most tuples one request's baggage held, mean over queries: "
            << baggage_plain / kTrials << " unoptimized, " << baggage_optimized / kTrials
            << " optimized\n";
}

}  // namespace
}  // namespace weft::query::testing
