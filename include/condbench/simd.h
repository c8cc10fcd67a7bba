#pragma once
// CPU vectors for the native engine and the CPU primitives: GCC/Clang vector-extension types, so
// one source serves every instruction set (-march=native picks the registers; without it the
// compiler lowers to what the target has).
#include <cstring>

namespace condbench::simd {

// Floats per vector on this build's target: 16 where it has AVX-512, 8 otherwise.
#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
#else
inline constexpr int kLanes = 8;
#endif

template <int Lanes>
struct Vector {
  typedef float type __attribute__((vector_size(Lanes * sizeof(float))));
};
template <int Lanes>
using Vec = typename Vector<Lanes>::type;

// Loads and stores at any float address (memcpy: no alignment or aliasing assumption; compilers
// make it one unaligned vector move). Vectors go by reference: a 16-lane vector passed or returned
// by value has a different ABI with and without AVX-512 (GCC's -Wpsabi).
template <int Lanes>
inline void load(Vec<Lanes>& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
template <int Lanes>
inline void store(float* p, const Vec<Lanes>& v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace condbench::simd
