#include "core/time.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(TimeTest, ParsesTimestampsExactly) {
  EXPECT_EQ(*ParseTimestamp("1047680084.482205"), 1047680084482205000);
  EXPECT_EQ(*ParseTimestamp("1047680084482205000"), 1047680084482205000);
  EXPECT_EQ(*ParseTimestamp("0.000000001"), 1);
  EXPECT_EQ(*ParseTimestamp(".5"), 500000000);
  EXPECT_EQ(*ParseTimestamp("-1.25"), -1250000000);
  EXPECT_EQ(*ParseTimestamp("12.5000000000"), 12500000000);  // zeros past ns are fine
}

TEST(TimeTest, RejectsBadTimestamps) {
  EXPECT_EQ(ParseTimestamp("12a").status().message(), "bad timestamp '12a'");
  EXPECT_EQ(ParseTimestamp("1.").status().message(), "bad timestamp '1.'");
  EXPECT_EQ(ParseTimestamp("").status().message(), "bad timestamp ''");
  EXPECT_EQ(ParseTimestamp("1.0000000001").status().message(),
            "timestamp '1.0000000001' is finer than a nanosecond");
  EXPECT_EQ(ParseTimestamp("99999999999999999999").status().message(),
            "bad timestamp '99999999999999999999'");
  EXPECT_EQ(ParseTimestamp("9999999999999.5").status().message(),
            "timestamp '9999999999999.5' is out of range");
}

TEST(TimeTest, ParsesDurations) {
  EXPECT_EQ(*ParseDuration("200ms"), 200 * kMillisecond);
  EXPECT_EQ(*ParseDuration("1.5s"), 1500 * kMillisecond);
  EXPECT_EQ(*ParseDuration("10us"), 10 * kMicrosecond);
  EXPECT_EQ(*ParseDuration("250ns"), 250);
  EXPECT_EQ(*ParseDuration("2m"), 120 * kSecond);
  EXPECT_EQ(*ParseDuration("1h"), 3600 * kSecond);
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_EQ(ParseDuration("10").status().message(),
            "bad duration '10' (want a number and a unit: ns, us, ms, s, m, h)");
  EXPECT_FALSE(ParseDuration("ms").ok());
  EXPECT_FALSE(ParseDuration("1.2.3s").ok());
}

TEST(TimeTest, FormatsAndRoundTrips) {
  EXPECT_EQ(FormatTimestamp(1047680084482205000), "1047680084.482205000");
  EXPECT_EQ(FormatTimestamp(-1), "-0.000000001");
  for (TimeNs t : {TimeNs{0}, TimeNs{1}, TimeNs{-123456789012}, TimeNs{1700000000123456789}}) {
    EXPECT_EQ(*ParseTimestamp(FormatTimestamp(t)), t);
  }
  EXPECT_EQ(FormatDuration(812), "812ns");
  EXPECT_EQ(FormatDuration(3400), "3.4us");
  EXPECT_EQ(FormatDuration(51'200'000), "51.2ms");
  EXPECT_EQ(FormatDuration(2 * kSecond), "2s");
  EXPECT_EQ(FormatDuration(62 * 60 * kSecond), "1h02m");
  EXPECT_EQ(FormatDuration(kNoTime), "-");
}

}  // namespace
}  // namespace weft
