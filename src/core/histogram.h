// A log-binned histogram of durations: constant relative precision from nanoseconds to
// hours in a few hundred bins, exact count, sum, min and max, and quantiles.
//
// Bin b of a side holds magnitudes in [base^b, base^(b+1)); with the default base 1.02 a
// quantile is within 1% of the true value. Negative values (call delays under clock skew)
// have their own side; zero has its own count. Bins are stored densely between the lowest
// and highest bin used, so a histogram of one path element costs a few hundred counters.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"

namespace weft {

class LatencyHistogram {
 public:
  static constexpr double kBase = 1.02;

  // The counters of one sign: counts[i] is the count of bin first_bin + i.
  struct Side {
    int32_t first_bin = 0;
    std::vector<uint64_t> counts;
    void Add(int32_t bin, uint64_t n) {
      uint32_t i = uint32_t(bin - first_bin);
      if (!counts.empty() && i < counts.size()) {
        counts[i] += n;
      } else {
        Grow(bin, n);
      }
    }
    void Grow(int32_t bin, uint64_t n);  // Add for a bin outside the stored range
  };

  void Record(TimeNs value, uint64_t n = 1);
  void Merge(const LatencyHistogram& other);

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  TimeNs min() const { return count_ ? min_ : 0; }
  TimeNs max() const { return count_ ? max_ : 0; }
  double sum() const { return sum_; }
  double mean() const { return count_ ? sum_ / double(count_) : 0.0; }
  double stddev() const;
  // The value below which a fraction q of the recorded values lie, q in [0, 1].
  TimeNs Quantile(double q) const;

  // For serialisation: the raw state, and its exact restoration.
  const Side& positive() const { return positive_; }
  const Side& negative() const { return negative_; }
  uint64_t zeros() const { return zeros_; }
  double sum_of_squares() const { return sum_sq_; }
  static LatencyHistogram FromParts(Side positive, Side negative, uint64_t zeros, TimeNs min,
                                    TimeNs max, double sum, double sum_sq);

  // The bin of a magnitude >= 1. Computed with a table-driven log2 (error about 4e-4 of
  // a bin), deterministic: a value always lands in the same bin.
  static int32_t BinOf(TimeNs magnitude);
  static double BinLow(int32_t bin);

 private:
  Side positive_;
  Side negative_;
  uint64_t zeros_ = 0;
  uint64_t count_ = 0;
  TimeNs min_ = 0;
  TimeNs max_ = 0;
  double sum_ = 0;
  double sum_sq_ = 0;
};

}  // namespace weft
