#pragma once
// A small counter-free generator (SplitMix64) so that "seed N" means the same weights and inputs
// on every machine and library version; torch's generators make no such promise across releases.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace condbench {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits: exactly representable as float.
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  float normal();  // Box-Muller, in double then rounded

 private:
  uint64_t state_;
};

// n floats from N(0, 1).
std::vector<float> normal_floats(uint64_t seed, size_t n);

}  // namespace condbench
