#include "core/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace weft {
namespace {

TEST(HistogramTest, ExactSummaries) {
  LatencyHistogram h;
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.Quantile(0.5), 0);
  for (TimeNs v : {10, 20, 30, 40}) h.Record(v * kMillisecond);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.min(), 10 * kMillisecond);
  EXPECT_EQ(h.max(), 40 * kMillisecond);
  EXPECT_DOUBLE_EQ(h.mean(), 25.0 * kMillisecond);
  EXPECT_NEAR(h.stddev(), std::sqrt(125.0) * kMillisecond, 1.0);
  EXPECT_EQ(h.Quantile(0), 10 * kMillisecond);
  EXPECT_EQ(h.Quantile(1), 40 * kMillisecond);
}

// Quantiles stay within 1% of the exact order statistic from nanoseconds to hours.
TEST(HistogramTest, QuantilesWithinOnePercent) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(50e6), 2.0);
  std::vector<TimeNs> values;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    TimeNs v = std::max<TimeNs>(1, TimeNs(dist(rng)));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
    TimeNs exact = values[size_t(std::ceil(q * values.size())) - 1];
    EXPECT_NEAR(double(h.Quantile(q)), double(exact), 0.01 * double(exact)) << "q=" << q;
  }
}

TEST(HistogramTest, NegativesZerosAndMerge) {
  LatencyHistogram a, b;
  a.Record(-5 * kMillisecond, 2);
  a.Record(0);
  b.Record(7 * kMillisecond);
  b.Record(-1 * kMillisecond);
  a.Merge(b);
  EXPECT_EQ(a.count(), 5u);
  EXPECT_EQ(a.min(), -5 * kMillisecond);
  EXPECT_EQ(a.max(), 7 * kMillisecond);
  EXPECT_DOUBLE_EQ(a.sum(), double(-10 - 1 + 7) * kMillisecond);
  EXPECT_NEAR(double(a.Quantile(0.4)), -5e6, 0.01 * 5e6);  // ranks 1-2 are -5ms
  EXPECT_NEAR(double(a.Quantile(0.6)), -1e6, 0.01 * 1e6);  // rank 3 is -1ms
  EXPECT_EQ(a.Quantile(0.8), 0);                           // rank 4 is 0
  LatencyHistogram restored = LatencyHistogram::FromParts(
      a.positive(), a.negative(), a.zeros(), a.min(), a.max(), a.sum(), a.sum_of_squares());
  EXPECT_EQ(restored.count(), a.count());
  for (double q : {0.1, 0.3, 0.5, 0.7, 0.9}) EXPECT_EQ(restored.Quantile(q), a.Quantile(q));
}

TEST(HistogramTest, BinsAreTwoPercentWide) {
  EXPECT_EQ(LatencyHistogram::BinOf(1), 0);
  int32_t b = LatencyHistogram::BinOf(1'000'000);
  EXPECT_LE(LatencyHistogram::BinLow(b), 1e6);
  EXPECT_GT(LatencyHistogram::BinLow(b + 1), 1e6);
  EXPECT_NEAR(LatencyHistogram::BinLow(b + 1) / LatencyHistogram::BinLow(b), 1.02, 1e-9);
  // An hour needs fewer than 1,500 bins from 1 ns: dense storage stays small.
  EXPECT_LT(LatencyHistogram::BinOf(3600 * kSecond), 1500);
}

}  // namespace
}  // namespace weft
