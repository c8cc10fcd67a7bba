#include "condbench/random.h"

#include <cmath>

namespace condbench {

float SplitMix64::normal() {
  // Box-Muller on two 53-bit uniforms; u1 is kept away from 0 so log() stays finite.
  const double u1 = (static_cast<double>(next() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
  const double u2 = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

std::vector<float> normal_floats(uint64_t seed, size_t n) {
  SplitMix64 rng(seed);
  std::vector<float> values(n);
  for (float& v : values) v = rng.normal();
  return values;
}

}  // namespace condbench
