// The generator's pseudo-random numbers: xoshiro256** seeded through splitmix64 (Blackman
// and Vigna). Small, fast and fully specified, so a trace depends only on its config and
// seed, on every platform and standard library (std::normal_distribution is not portable).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace weft {

inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Random {
 public:
  // Streams for different `stream` values of one seed are independent for practical
  // purposes: each is seeded from splitmix64 over a mix of both.
  explicit Random(uint64_t seed, uint64_t stream = 0) {
    uint64_t sm = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    SplitMix64(sm);
    for (uint64_t& word : s_) word = SplitMix64(sm);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return double(Next() >> 11) * 0x1.0p-53; }

  // Standard normal, by the Box-Muller transform; the second value of each pair is kept for
  // the next call.
  double Gaussian() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 1.0 - Uniform();  // (0, 1]: log stays finite
    double u2 = Uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace weft
