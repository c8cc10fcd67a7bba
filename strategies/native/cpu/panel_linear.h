#pragma once
// The CPU `fused` strategy's Linear: the weights repacked into panels that are read front to back,
// and register-blocked kernels over them. A schedule of the shared math (exit_math.h), not new
// math: every output is the bias plus the sum over i of x[i] * weight[o][i], in float.
//
// Layout. Panel p holds outputs [p*W, p*W + W) for every input i, contiguous: panel[p][i][W], zero
// past the last output, 64-byte aligned. W is two vectors, or one where the layer has no more
// outputs than one vector holds: an exit head of 10 classes on 16 lanes then reads and multiplies
// 16 weights per input, not 32. One panel is one sequential stream, so no access ever strides by
// the row pitch (at hidden 1024 the transposed layout's 4 KiB stride made every load of a 32-output
// tile a conflict miss on a new page), and a panel is read once per inference while every active
// row passes through it.
//
// Kernels. tile<Rows, Panels, Vectors> computes Panels panels of Vectors vectors for Rows rows:
// each weight vector is loaded once and used for every row, each broadcast x[r][i] is used for
// every vector of the panels, and the accumulators stay in registers for the whole sum. Where a
// tile has few accumulators, the sum over i is split into interleaved partial sums until it has
// kAccumulators of them: that many independent multiply-add chains keep both FMA pipes busy, and a
// single row's Linear (a chain of dependent layers at batch 1) is as short as it can be. Six rows of
// a two-vector panel are twelve accumulators; one row takes four panels at a time.
//
// Vector width: Lanes floats per vector, simd::kLanes in fused (16 where the compiler targets
// AVX-512, 8 otherwise). Both widths are ordinary vector-extension code, so the tests check both
// on any machine (a 16-lane vector is lowered to two 8-lane ones without AVX-512).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

#include "condbench/native_model.h"
#include "condbench/simd.h"

namespace condbench::cpu {

template <int Lanes>
class PanelLinear {
 public:
  static constexpr int kMaxRows = 6;  // rows per kernel call

  PanelLinear() = default;
  explicit PanelLinear(const NativeLinear& l)
      : in_(l.in), out_(l.out), vectors_(l.out <= Lanes ? 1 : 2), panels_((l.out + width() - 1) / width()) {
    const int w = width();
    const size_t floats = static_cast<size_t>(panels_) * (static_cast<size_t>(in_) + 1) * w;
    data_.reset(static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t{64})));
    std::fill(data_.get(), data_.get() + floats, 0.0f);
    for (int p = 0; p < panels_; ++p) {
      float* panel = data_.get() + static_cast<size_t>(p) * in_ * w;
      const int valid = std::min(w, out_ - p * w);
      for (int i = 0; i < in_; ++i)
        for (int j = 0; j < valid; ++j)
          panel[static_cast<size_t>(i) * w + j] = l.wt[static_cast<size_t>(i) * l.pitch + p * w + j];
      std::copy(l.bias.begin() + p * w, l.bias.begin() + p * w + valid, bias() + p * w);
    }
  }

  int in() const { return in_; }
  int out() const { return out_; }
  int panels() const { return panels_; }
  int width() const { return vectors_ * Lanes; }        // outputs per panel
  int padded_out() const { return panels_ * width(); }  // out rounded up to whole panels

  // y[r][0..out) = act(bias + x[r] W^T) for rows r < rows (any number). Several rows: each panel
  // is read once while the rows pass through it in groups of up to kMaxRows. One row: up to four
  // panels at a time, so that each x[i] serves up to eight vectors. padded: each y[r] has room for
  // padded_out() floats, and whole vectors are stored, the padding outputs included (zero: their
  // weights and bias are); a vector read of them then takes its value straight from the store.
  void forward(const float* const* x, float* const* y, size_t rows, bool relu, bool padded = false) const {
    forward_panels(0, panels_, x, y, rows, relu, padded);
  }

  // The same for the outputs of panels [begin, end) only: threads take disjoint panel ranges.
  void forward_panels(int begin, int end, const float* const* x, float* const* y, size_t rows, bool relu,
                      bool padded = false) const {
    const Epilogue epilogue{relu, padded};
    if (vectors_ == 1)
      sweep<1>(begin, end, x, y, rows, epilogue);
    else
      sweep<2>(begin, end, x, y, rows, epilogue);
  }

 private:
  using V = simd::Vec<Lanes>;
  // Accumulators a tile aims for (splitting the sum over i to get them): half the vector registers,
  // 8 of AVX2's 16 and 16 of AVX-512's 32, so the weights and broadcasts have the rest.
  static constexpr int kAccumulators = Lanes >= 16 ? 16 : 8;

  struct Epilogue {
    bool relu, padded;
  };
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };

  const float* panel(int p) const { return data_.get() + static_cast<size_t>(p) * in_ * width(); }
  // The biases follow the panels, padded like them: [panels][width].
  float* bias() const { return data_.get() + static_cast<size_t>(panels_) * in_ * width(); }

  template <int Vectors>
  void sweep(int begin, int end, const float* const* x, float* const* y, size_t rows, Epilogue epilogue) const {
    if (rows == 1) {
      int p = begin;
      for (; p + 4 <= end; p += 4) tile<1, 4, Vectors>(p, x, y, epilogue);
      switch (end - p) {
        case 0:
          break;
        case 1:
          tile<1, 1, Vectors>(p, x, y, epilogue);
          break;
        case 2:
          tile<1, 2, Vectors>(p, x, y, epilogue);
          break;
        default:
          tile<1, 3, Vectors>(p, x, y, epilogue);
          break;
      }
      return;
    }
    for (int p = begin; p < end; ++p) {
      size_t r = 0;
      for (; r + kMaxRows <= rows; r += kMaxRows) tile<kMaxRows, 1, Vectors>(p, x + r, y + r, epilogue);
      switch (rows - r) {
        case 0:
          break;
        case 1:
          tile<1, 1, Vectors>(p, x + r, y + r, epilogue);
          break;
        case 2:
          tile<2, 1, Vectors>(p, x + r, y + r, epilogue);
          break;
        case 3:
          tile<3, 1, Vectors>(p, x + r, y + r, epilogue);
          break;
        case 4:
          tile<4, 1, Vectors>(p, x + r, y + r, epilogue);
          break;
        default:
          tile<5, 1, Vectors>(p, x + r, y + r, epilogue);
          break;
      }
    }
  }

  // Panels [p0, p0 + Panels) for Rows rows: Rows x Panels x Vectors accumulators, times Split
  // interleaved partial sums over i, in registers for the whole sum; each weight vector loaded once
  // for all rows, each x[r][i] broadcast once for all panels.
  template <int Rows, int Panels, int Vectors>
  void tile(int p0, const float* const* x, float* const* y, Epilogue epilogue) const {
    constexpr int kWidth = Vectors * Lanes;
    constexpr int kAcc = Panels * Vectors;
    constexpr int Split = std::max(1, kAccumulators / (Rows * kAcc));
    V acc[Rows][kAcc][Split];
    V b[kAcc];
    CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < kAcc; ++v) simd::load<Lanes>(b[v], bias() + p0 * kWidth + v * Lanes);
    CONDBENCH_UNROLL_FIXED
    for (int r = 0; r < Rows; ++r) CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < kAcc; ++v) CONDBENCH_UNROLL_FIXED
    for (int s = 0; s < Split; ++s) acc[r][v][s] = s == 0 ? b[v] : V{};
    const float* w[Panels];
    CONDBENCH_UNROLL_FIXED
    for (int q = 0; q < Panels; ++q) w[q] = panel(p0 + q);
    int i = 0;
    for (; i + Split <= in_; i += Split) CONDBENCH_UNROLL_FIXED
    for (int s = 0; s < Split; ++s) CONDBENCH_UNROLL_FIXED
    for (int q = 0; q < Panels; ++q) {
      V wv[Vectors];
      CONDBENCH_UNROLL_FIXED
      for (int v = 0; v < Vectors; ++v) simd::load<Lanes>(wv[v], w[q] + (i + s) * kWidth + v * Lanes);
      CONDBENCH_UNROLL_FIXED
      for (int r = 0; r < Rows; ++r) {
        const float xi = x[r][i + s];
        CONDBENCH_UNROLL_FIXED
        for (int v = 0; v < Vectors; ++v) acc[r][q * Vectors + v][s] += xi * wv[v];
      }
    }
    for (; i < in_; ++i) CONDBENCH_UNROLL_FIXED
    for (int q = 0; q < Panels; ++q) {
      V wv[Vectors];
      CONDBENCH_UNROLL_FIXED
      for (int v = 0; v < Vectors; ++v) simd::load<Lanes>(wv[v], w[q] + i * kWidth + v * Lanes);
      CONDBENCH_UNROLL_FIXED
      for (int r = 0; r < Rows; ++r) CONDBENCH_UNROLL_FIXED
      for (int v = 0; v < Vectors; ++v) acc[r][q * Vectors + v][0] += x[r][i] * wv[v];
    }
    CONDBENCH_UNROLL_FIXED
    for (int r = 0; r < Rows; ++r) CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < kAcc; ++v) {
      add_up<Split>(acc[r][v]);
      // ReLU as a vector select (NaN stays NaN, as in torch.relu); the sums never leave registers.
      if (epilogue.relu) acc[r][v][0] = acc[r][v][0] < V{} ? V{} : acc[r][v][0];
    }
    V sums[Rows][kAcc];
    CONDBENCH_UNROLL_FIXED
    for (int r = 0; r < Rows; ++r) CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < kAcc; ++v) sums[r][v] = acc[r][v][0];
    CONDBENCH_UNROLL_FIXED
    for (int r = 0; r < Rows; ++r) CONDBENCH_UNROLL_FIXED
    for (int q = 0; q < Panels; ++q) {
      float* out = y[r] + (p0 + q) * kWidth;
      if (epilogue.padded) {
        CONDBENCH_UNROLL_FIXED
        for (int v = 0; v < Vectors; ++v) simd::store<Lanes>(out + v * Lanes, sums[r][q * Vectors + v]);
      } else {
        store<Vectors>(out, &sums[r][q * Vectors], p0 + q);
      }
    }
  }

  // a[0] = a[0] + ... + a[N - 1] pairwise: a tree of depth ceil(log2 N), not a chain of N - 1 adds.
  template <int N>
  static void add_up(V* a) {
    if constexpr (N > 1) {
      constexpr int kUpper = (N + 1) / 2;
      CONDBENCH_UNROLL_FIXED
      for (int s = 0; s < N / 2; ++s) a[s] += a[s + kUpper];
      add_up<kUpper>(a);
    }
  }

  // One panel's outputs of one row: whole vectors, or, in a last panel, only its real outputs —
  // its whole vectors, then the rest in pieces of Lanes/2, ..., 2 and 1 floats (constant-size copies: a
  // plain loop over the rest became a `rep movs`, which costs more than the exit head it ends).
  template <int Vectors>
  void store(float* out, const V* sums, int p) const {
    constexpr int kWidth = Vectors * Lanes;
    const int valid = std::min(kWidth, out_ - p * kWidth);
    float sum[kWidth];
    CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < Vectors; ++v) simd::store<Lanes>(sum + v * Lanes, sums[v]);
    int j = 0;
    CONDBENCH_UNROLL_FIXED
    for (int v = 0; v < Vectors; ++v)
      if (j + Lanes <= valid) {
        simd::store<Lanes>(out + j, sums[v]);
        j += Lanes;
      }
    CONDBENCH_UNROLL_FIXED
    for (int piece = Lanes / 2; piece >= 1; piece /= 2)
      if (valid - j >= piece) {
        std::memcpy(out + j, sum + j, piece * sizeof(float));
        j += piece;
      }
  }

  int in_ = 0, out_ = 0;
  int vectors_ = 2;  // per panel: 1 where out <= Lanes
  int panels_ = 0;
  std::unique_ptr<float[], AlignedDelete> data_;  // panels, then biases
};

}  // namespace condbench::cpu
