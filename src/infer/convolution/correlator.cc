// Project 5 §5.2.1 (discretisation) and §5.2 (spike detection), with FFTW real-to-complex
// transforms at sizes of the form 2^a 3^b 5^c 7^d, which FFTW's codelets do fastest.
#include "infer/convolution/correlator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "infer/convolution/convolution.h"

namespace weft {

uint64_t FastFftSize(uint64_t n) {
  if (n <= 1) return 1;
  uint64_t best = std::numeric_limits<uint64_t>::max();
  // Every 2^a 3^b 5^c 7^d below 2n; n is at most a few billion, so this is a few
  // thousand products.
  for (uint64_t p7 = 1; p7 < 2 * n; p7 *= 7) {
    for (uint64_t p5 = p7; p5 < 2 * n; p5 *= 5) {
      for (uint64_t p3 = p5; p3 < 2 * n; p3 *= 3) {
        uint64_t v = p3;
        while (v < n) v *= 2;
        best = std::min(best, v);
      }
    }
  }
  return best;
}

std::vector<uint32_t> FindSpikes(const std::vector<double>& c, double high, double low) {
  std::vector<uint32_t> spikes;
  if (c.empty()) return spikes;
  double sum = 0, sum_sq = 0;
  for (double v : c) {
    sum += v;
    sum_sq += v * v;
  }
  double n = double(c.size());
  double mean = sum / n;
  double var = std::max(0.0, sum_sq / n - mean * mean);
  double sd = std::sqrt(var);
  if (!(sd > 1e-12 * std::max(1.0, std::abs(mean)))) return spikes;  // flat: nothing stands out
  double hi = mean + high * sd, lo = mean + low * sd;
  // A spike is a local maximum above `hi`; of two, only the larger is kept unless the
  // correlation dips between them below `lo` (§5.2) or below half the smaller one. The
  // second rule is weft's: the correlation of two sparse signals is zero almost
  // everywhere, its standard deviation tiny, and every nonzero point is above `lo`, so
  // §5.2's rule alone would merge spikes a few quanta apart into one.
  int64_t candidate = -1;
  double dip = std::numeric_limits<double>::infinity();  // lowest point since the candidate
  for (size_t d = 0; d < c.size(); ++d) {
    double x = c[d];
    bool local_max = x >= hi && (d == 0 || x >= c[d - 1]) && (d + 1 == c.size() || x >= c[d + 1]);
    if (local_max) {
      if (candidate < 0) {
        candidate = int64_t(d);
      } else if (dip < lo || dip < 0.5 * std::min(x, c[size_t(candidate)])) {
        spikes.push_back(uint32_t(candidate));
        candidate = int64_t(d);
      } else if (x > c[size_t(candidate)]) {
        candidate = int64_t(d);
      } else {
        dip = std::min(dip, x);
        continue;
      }
      dip = std::numeric_limits<double>::infinity();
    } else if (candidate >= 0) {
      dip = std::min(dip, x);
    }
  }
  if (candidate >= 0) spikes.push_back(uint32_t(candidate));
  std::stable_sort(spikes.begin(), spikes.end(),
                   [&](uint32_t a, uint32_t b) { return c[a] > c[b]; });
  return spikes;
}

namespace convolution_internal {
namespace {

struct Sizes {
  uint64_t samples = 0, lag = 0, fft = 0, bytes = 0;
};

// Saturating sizes: a quantum of 1 ns over years must give a number, not an overflow.
Sizes ComputeSizes(TimeNs start, TimeNs end, TimeNs quantum, TimeNs max_delay) {
  Sizes s;
  constexpr uint64_t kHuge = uint64_t(1) << 60;
  uint64_t span = end > start ? uint64_t(end) - uint64_t(start) : 0;
  s.samples = span / uint64_t(quantum) + 1;
  if (s.samples > kHuge) s.samples = kHuge;
  // Without a max delay, lags up to half the trace: beyond that the overlap of the two
  // signals is too short for the statistics of the spike search.
  s.lag = s.samples / 2;
  if (max_delay > 0)
    s.lag = std::min<uint64_t>(s.samples - 1, uint64_t(max_delay) / uint64_t(quantum) + 1);
  uint64_t need = s.samples + s.lag;
  // FastFftSize enumerates up to 2n; beyond 2^40 only the figure matters.
  s.fft = need > (uint64_t(1) << 40) ? need : FastFftSize(need);
  uint64_t spectrum = s.fft / 2 + 1;
  // The real buffer, the work spectrum, the two spectra being correlated (one cached per
  // sending node at most, counted once here) and the correlation itself.
  long double bytes = (long double)s.fft * sizeof(double) +
                      (long double)spectrum * 3 * sizeof(fftw_complex) +
                      (long double)(s.lag + 1) * sizeof(double);
  s.bytes = bytes > (long double)kHuge ? kHuge : uint64_t(bytes);
  return s;
}

}  // namespace

uint64_t Correlator::BytesNeeded(TimeNs start, TimeNs end, TimeNs quantum, TimeNs max_delay) {
  return ComputeSizes(start, end, quantum, max_delay).bytes;
}

Result<std::unique_ptr<Correlator>> Correlator::Create(TimeNs start, TimeNs end, TimeNs quantum,
                                                       TimeNs max_delay, uint64_t max_bytes,
                                                       int threads) {
  if (quantum <= 0) return Status::InvalidArgument("quantum must be positive");
  Sizes s = ComputeSizes(start, end, quantum, max_delay);
  if (s.bytes > max_bytes || s.fft > uint64_t(std::numeric_limits<int>::max())) {
    return Status::OutOfRange(
        "a signal of {} quanta ({} over {}) needs {:.1f} MiB for its FFTs, more than the limit of "
        "{:.1f} MiB; "
        "use a larger quantum or a shorter trace",
        s.samples, FormatDuration(quantum), FormatDuration(end - start),
        double(s.bytes) / (1 << 20), double(max_bytes) / (1 << 20));
  }
  std::unique_ptr<Correlator> c(new Correlator());
  c->start_ = start;
  c->quantum_ = quantum;
  c->samples_ = s.samples;
  c->max_lag_ = s.lag;
  c->fft_size_ = s.fft;
  c->real_ = static_cast<double*>(fftw_malloc(sizeof(double) * s.fft));
  c->work_ = static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * c->spectrum_size()));
  if (!c->real_ || !c->work_)
    return Status::OutOfRange("cannot allocate {} bytes for the FFTs", s.bytes);
  // FFTW_ESTIMATE: planning with MEASURE costs more than the few dozen transforms of a run.
  int n = int(s.fft);
  // Threads pay only for long transforms; below that their start-up costs more.
  bool threaded = threads > 1 && s.fft >= kThreadedFftSize;
  if (threaded) {
    static std::once_flag init;
    std::call_once(init, [] { fftw_init_threads(); });
    fftw_plan_with_nthreads(threads);
  }
  c->forward_ = fftw_plan_dft_r2c_1d(n, c->real_, c->work_, FFTW_ESTIMATE);
  c->inverse_ = fftw_plan_dft_c2r_1d(n, c->work_, c->real_, FFTW_ESTIMATE);
  if (threaded) fftw_plan_with_nthreads(1);
  if (!c->forward_ || !c->inverse_)
    return Status::Internal("FFTW could not plan a transform of size {}", n);
  return c;
}

Correlator::~Correlator() {
  if (forward_) fftw_destroy_plan(forward_);
  if (inverse_) fftw_destroy_plan(inverse_);
  fftw_free(real_);
  fftw_free(work_);
}

ComplexBuffer Correlator::NewSpectrum() const {
  return ComplexBuffer(
      static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * spectrum_size())));
}

void Correlator::Spectrum(std::span<const TimeNs> times, fftw_complex* out) {
  std::memset(real_, 0, sizeof(double) * fft_size_);
  for (TimeNs t : times) {
    if (t < start_) continue;
    uint64_t bin = uint64_t(t - start_) / uint64_t(quantum_);
    if (bin < samples_) real_[bin] += 1.0;
  }
  // §5.2.1: the square root of the count, so that a product of two equally busy samples
  // in the correlation counts their messages, not their square. One linear pass (sqrt(0)
  // is 0), cheaper than the transform that follows.
  for (uint64_t b = 0; b < samples_; ++b) real_[b] = std::sqrt(real_[b]);
  fftw_execute_dft_r2c(forward_, real_, out);
}

void Correlator::Correlate(const fftw_complex* first, const fftw_complex* second,
                           std::vector<double>& correlation) {
  // conj(F1) x F2 is the transform of sum_t s1(t) s2(t + d); the signals are zero beyond
  // `samples_` and fft_size_ >= samples_ + max_lag_, so lags 0 .. max_lag_ do not wrap.
  size_t m = spectrum_size();
  for (size_t i = 0; i < m; ++i) {
    double ar = first[i][0], ai = -first[i][1];
    double br = second[i][0], bi = second[i][1];
    work_[i][0] = ar * br - ai * bi;
    work_[i][1] = ar * bi + ai * br;
  }
  fftw_execute_dft_c2r(inverse_, work_, real_);
  correlation.resize(max_lag_ + 1);
  // Scaled by samples / overlap: at lag d only samples - d products exist, and without
  // this the correlation of two busy signals falls linearly with d, a slope whose
  // variance would hide every spike (weft's departure from §5.2, which does not say).
  double scale = 1.0 / double(fft_size_);
  double samples = double(samples_);
  for (size_t d = 0; d <= max_lag_; ++d)
    correlation[d] = real_[d] * scale * samples / (samples - double(d));
}

}  // namespace convolution_internal
}  // namespace weft
