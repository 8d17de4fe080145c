#include "core/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace weft {

namespace {

const double kLogBase = std::log(LatencyHistogram::kBase);

// log2 of 1 + (i + 0.5) / 4096: the mantissa's top 12 bits index it.
struct Log2Table {
  double value[4096];
  Log2Table() {
    for (int i = 0; i < 4096; ++i) value[i] = std::log2(1.0 + (i + 0.5) / 4096.0);
  }
};
const Log2Table kLog2Table;

double FastLog2(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int exponent = int((bits >> 52) & 0x7ff) - 1023;
  return exponent + kLog2Table.value[(bits >> 40) & 0xfff];
}

}  // namespace

int32_t LatencyHistogram::BinOf(TimeNs magnitude) {
  static const double kScale = std::log(2.0) / kLogBase;
  return static_cast<int32_t>(std::floor(FastLog2(double(magnitude)) * kScale));
}

double LatencyHistogram::BinLow(int32_t bin) { return std::exp(bin * kLogBase); }

void LatencyHistogram::Side::Grow(int32_t bin, uint64_t n) {
  if (counts.empty()) {
    first_bin = bin;
    counts.assign(1, 0);
  } else if (bin < first_bin) {
    counts.insert(counts.begin(), size_t(first_bin - bin), 0);
    first_bin = bin;
  } else if (bin >= first_bin + int32_t(counts.size())) {
    counts.resize(size_t(bin - first_bin + 1), 0);
  }
  counts[size_t(bin - first_bin)] += n;
}

void LatencyHistogram::Record(TimeNs value, uint64_t n) {
  if (n == 0) return;
  if (value == 0) {
    zeros_ += n;
  } else if (value > 0) {
    positive_.Add(BinOf(value), n);
  } else {
    // -value overflows for INT64_MIN; clamp, such a delay is meaningless anyway.
    negative_.Add(BinOf(value == std::numeric_limits<TimeNs>::min() ? -(value + 1) : -value), n);
  }
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += n;
  sum_ += double(value) * double(n);
  sum_sq_ += double(value) * double(value) * double(n);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < other.positive_.counts.size(); ++i) {
    if (other.positive_.counts[i])
      positive_.Add(other.positive_.first_bin + int32_t(i), other.positive_.counts[i]);
  }
  for (size_t i = 0; i < other.negative_.counts.size(); ++i) {
    if (other.negative_.counts[i])
      negative_.Add(other.negative_.first_bin + int32_t(i), other.negative_.counts[i]);
  }
  zeros_ += other.zeros_;
  min_ = count_ ? std::min(min_, other.min_) : other.min_;
  max_ = count_ ? std::max(max_, other.max_) : other.max_;
  count_ += other.count_;
  sum_ += other.sum_;
  sum_sq_ += other.sum_sq_;
}

double LatencyHistogram::stddev() const {
  if (count_ < 2) return 0.0;
  double m = mean();
  double var = sum_sq_ / double(count_) - m * m;
  return var > 0 ? std::sqrt(var) : 0.0;
}

TimeNs LatencyHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0.0) return min_;
  if (q == 1.0) return max_;
  // The rank of the wanted value, 1-based; walk values in increasing order.
  uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(q * double(count_))));
  auto representative = [&](int32_t bin, double sign) {
    // The geometric middle of the bin, kept inside the observed range.
    double mid = std::sqrt(BinLow(bin) * BinLow(bin + 1)) * sign;
    return std::clamp(TimeNs(std::llround(mid)), min_, max_);
  };
  uint64_t seen = 0;
  for (size_t i = negative_.counts.size(); i-- > 0;) {
    seen += negative_.counts[i];
    if (seen >= rank) return representative(negative_.first_bin + int32_t(i), -1.0);
  }
  seen += zeros_;
  if (seen >= rank) return 0;
  for (size_t i = 0; i < positive_.counts.size(); ++i) {
    seen += positive_.counts[i];
    if (seen >= rank) return representative(positive_.first_bin + int32_t(i), 1.0);
  }
  return max_;
}

LatencyHistogram LatencyHistogram::FromParts(Side positive, Side negative, uint64_t zeros,
                                             TimeNs min, TimeNs max, double sum, double sum_sq) {
  LatencyHistogram h;
  h.positive_ = std::move(positive);
  h.negative_ = std::move(negative);
  h.zeros_ = zeros;
  for (uint64_t c : h.positive_.counts) h.count_ += c;
  for (uint64_t c : h.negative_.counts) h.count_ += c;
  h.count_ += zeros;
  h.min_ = min;
  h.max_ = max;
  h.sum_ = sum;
  h.sum_sq_ = sum_sq;
  return h;
}

}  // namespace weft
