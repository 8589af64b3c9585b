// A small portable random generator (SplitMix64). The standard library's distributions are
// implementation-defined, so data generation and shuffling use this to give the same data on
// every machine and compiler.
#pragma once

#include <cmath>
#include <cstdint>

namespace ftbench::data {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform integer in [0, n); n > 0. The modulo bias (< n / 2^64) is irrelevant here.
  uint64_t below(uint64_t n) { return next() % n; }
  // Standard normal by Box-Muller.
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Independent stream for (seed, a, b): mixes the three so nearby indices do not correlate.
inline uint64_t stream_seed(uint64_t seed, uint64_t a, uint64_t b = 0) {
  SplitMix64 g(seed ^ (a * 0xD1B54A32D192ED03ULL) ^ (b * 0x8CB92BA72F3D8DD7ULL));
  return g.next();
}

}  // namespace ftbench::data
