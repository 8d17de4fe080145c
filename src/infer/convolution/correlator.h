// FindCorrelation of Project 5 §5.2.1 with FFTW: square-root-of-count signals at quantum
// mu, and their cross-correlation for delays 0 .. max_lag quanta. Internal to
// infer/convolution (the one place weft includes fftw3.h).
#pragma once

#include <fftw3.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace weft::convolution_internal {

struct FftwFree {
  void operator()(void* p) const { fftw_free(p); }
};
using ComplexBuffer = std::unique_ptr<fftw_complex[], FftwFree>;

// One correlator per inference: the FFT size, the plans and the work buffers are shared by
// every correlation. Not thread-safe (FFTW's planner is not, and the buffers are shared).
class Correlator {
 public:
  // Signals cover [start, end] in samples of `quantum`; lags run 0 .. max_lag samples
  // (clamped to the signal length). OutOfRange, naming the bytes needed, if the buffers
  // would exceed max_bytes.
  // `threads` > 1 plans multi-threaded transforms (when the size is at least
  // kThreadedFftSize).
  static Result<std::unique_ptr<Correlator>> Create(TimeNs start, TimeNs end, TimeNs quantum,
                                                    TimeNs max_delay, uint64_t max_bytes,
                                                    int threads = 1);
  ~Correlator();
  Correlator(const Correlator&) = delete;
  Correlator& operator=(const Correlator&) = delete;

  uint64_t samples() const { return samples_; }
  uint64_t fft_size() const { return fft_size_; }
  uint64_t max_lag() const { return max_lag_; }
  uint64_t spectrum_size() const { return fft_size_ / 2 + 1; }
  TimeNs quantum() const { return quantum_; }

  // The spectrum of the signal of `times` (§5.2.1: sample t is the square root of the
  // number of times in [start + t mu, start + (t+1) mu)). `out` gets spectrum_size().
  ComplexBuffer NewSpectrum() const;
  void Spectrum(std::span<const TimeNs> times, fftw_complex* out);

  // correlation[d] = sum_t first(t) second(t + d) for d = 0 .. max_lag: the cross
  // correlation of Figure 6 line 31, cross_correlation(s2, s1) with s1 = first.
  void Correlate(const fftw_complex* first, const fftw_complex* second,
                 std::vector<double>& correlation);

  // Bytes the buffers of Create take for these arguments (saturating).
  static uint64_t BytesNeeded(TimeNs start, TimeNs end, TimeNs quantum, TimeNs max_delay);

 private:
  Correlator() = default;
  TimeNs start_ = 0;
  TimeNs quantum_ = 1;
  uint64_t samples_ = 0;
  uint64_t fft_size_ = 0;
  uint64_t max_lag_ = 0;
  double* real_ = nullptr;        // fft_size_ samples, fftw_malloc'ed
  fftw_complex* work_ = nullptr;  // spectrum_size_ values
  fftw_plan forward_ = nullptr;
  fftw_plan inverse_ = nullptr;
};

}  // namespace weft::convolution_internal
