#pragma once
// CPU vectors for the native engine and the CPU primitives: GCC/Clang vector-extension types, so
// one source serves every instruction set (-march=native picks the registers; without it the
// compiler lowers to what the target has).
#include <cstdint>
#include <cstring>

namespace condbench::simd {

// Floats per vector on this build's target: 16 where it has AVX-512, 8 otherwise.
#if defined(__AVX512F__)
inline constexpr int kLanes = 16;
#else
inline constexpr int kLanes = 8;
#endif

// Put before a loop with a small constant trip count over an array of vectors (a tile's
// accumulators, its bias, a store): unrolled before the vectoriser sees it, so every element is a
// register. Left to itself, GCC 12 turns such a loop into a loop over memory — the array goes to
// the stack, written back and reloaded around every loop it spans (seen in the generated code of
// PanelLinear's tiles).
#define CONDBENCH_UNROLL_FIXED _Pragma("GCC unroll 64")

template <int Lanes>
struct Vector {
  typedef float type __attribute__((vector_size(Lanes * sizeof(float))));
};
template <int Lanes>
using Vec = typename Vector<Lanes>::type;
// What comparing two Vec<Lanes> gives: a lane of all ones where true, zero where false.
template <int Lanes>
struct IntVector {
  typedef int32_t type __attribute__((vector_size(Lanes * sizeof(int32_t))));
};
template <int Lanes>
using IntVec = typename IntVector<Lanes>::type;

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
