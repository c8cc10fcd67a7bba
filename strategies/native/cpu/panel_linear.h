#pragma once
// The CPU `fused` strategy's Linear: the weights repacked into panels that are read front to back,
// and register-blocked kernels over them. A schedule of the shared math (exit_math.h), not new
// math: every output is the bias plus the sum over i of x[i] * weight[o][i], in float.
//
// Layout. Panel p holds outputs [p*W, p*W + W) for every input i, contiguous: panel[p][i][W],
// W = 2 vectors, zero past the last output, 64-byte aligned. One panel is one sequential stream,
// so no access ever strides by the row pitch (at hidden 1024 the transposed layout's 4 KiB stride
// made every load of a 32-output tile a conflict miss on a new page), and a panel is read once
// per inference while every active row passes through it.
//
// Kernels. tile<Rows, Panels, Split> computes Panels panels for Rows rows: each weight vector is
// loaded once and used for every row, each broadcast x[r][i] is used for every vector of the
// panels, and the accumulators (times Split interleaved partial sums over i, where there are few)
// stay in registers for the whole sum. Six rows of one panel fill twelve of AVX2's sixteen
// registers; one row takes four panels at a time (eight chains), or one panel with the sum split
// four ways, so that enough multiply-add chains are always in flight.
//
// Vector width: Lanes floats per vector, simd::kLanes in fused (16 where the compiler targets
// AVX-512, 8 otherwise). Both widths are ordinary vector-extension code, so the tests check both
// on any machine (a 16-lane vector is lowered to two 8-lane ones without AVX-512).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "condbench/native_model.h"
#include "condbench/simd.h"

namespace condbench::cpu {

template <int Lanes>
class PanelLinear {
 public:
  static constexpr int kWidth = 2 * Lanes;  // outputs per panel
  static constexpr int kMaxRows = 6;        // rows per kernel call

  PanelLinear() = default;
  explicit PanelLinear(const NativeLinear& l) : in_(l.in), out_(l.out), panels_((l.out + kWidth - 1) / kWidth) {
    const size_t floats = static_cast<size_t>(panels_) * (static_cast<size_t>(in_) + 1) * kWidth;
    data_.reset(static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t{64})));
    std::fill(data_.get(), data_.get() + floats, 0.0f);
    for (int p = 0; p < panels_; ++p) {
      float* panel = data_.get() + static_cast<size_t>(p) * in_ * kWidth;
      const int valid = std::min(kWidth, out_ - p * kWidth);
      for (int i = 0; i < in_; ++i)
        for (int j = 0; j < valid; ++j)
          panel[static_cast<size_t>(i) * kWidth + j] = l.wt[static_cast<size_t>(i) * l.pitch + p * kWidth + j];
      std::copy(l.bias.begin() + p * kWidth, l.bias.begin() + p * kWidth + valid, bias() + p * kWidth);
    }
  }

  int in() const { return in_; }
  int out() const { return out_; }
  int panels() const { return panels_; }

  // y[r][0..out) = act(bias + x[r] W^T) for rows r < rows (any number). Several rows: each panel
  // is read once while the rows pass through it in groups of up to kMaxRows. One row: up to four
  // panels at a time, so that each x[i] serves eight vectors and nothing is split.
  void forward(const float* const* x, float* const* y, size_t rows, bool relu) const {
    forward_panels(0, panels_, x, y, rows, relu);
  }

  // The same for the outputs of panels [begin, end) only: threads take disjoint panel ranges.
  void forward_panels(int begin, int end, const float* const* x, float* const* y, size_t rows, bool relu) const {
    if (rows == 1) {
      int p = begin;
      for (; p + 4 <= end; p += 4) tile<1, 4, 1>(p, x, y, relu);
      switch (end - p) {
        case 0:
          break;
        case 1:
          tile<1, 1, 4>(p, x, y, relu);
          break;
        case 2:
          tile<1, 2, 2>(p, x, y, relu);
          break;
        default:
          tile<1, 3, 2>(p, x, y, relu);
          break;
      }
      return;
    }
    for (int p = begin; p < end; ++p) {
      size_t r = 0;
      for (; r + kMaxRows <= rows; r += kMaxRows) tile<kMaxRows, 1, 1>(p, x + r, y + r, relu);
      switch (rows - r) {
        case 0:
          break;
        case 1:
          tile<1, 1, 4>(p, x + r, y + r, relu);
          break;
        case 2:
          tile<2, 1, 3>(p, x + r, y + r, relu);
          break;
        case 3:
          tile<3, 1, 2>(p, x + r, y + r, relu);
          break;
        case 4:
          tile<4, 1, 1>(p, x + r, y + r, relu);
          break;
        default:
          tile<5, 1, 1>(p, x + r, y + r, relu);
          break;
      }
    }
  }

 private:
  using V = simd::Vec<Lanes>;
  static constexpr int kVectors = kWidth / Lanes;  // per panel

  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };

  const float* panel(int p) const { return data_.get() + static_cast<size_t>(p) * in_ * kWidth; }
  // The biases follow the panels, padded like them: [panels][kWidth].
  float* bias() const { return data_.get() + static_cast<size_t>(panels_) * in_ * kWidth; }

  // Panels [p0, p0 + Panels) for Rows rows, with the sum over i split Split ways: Rows x Panels x
  // kVectors accumulators (times Split) in registers for the whole sum, each weight vector loaded
  // once for all rows, each x[r][i] broadcast once for all panels.
  template <int Rows, int Panels, int Split>
  void tile(int p0, const float* const* x, float* const* y, bool relu) const {
    constexpr int kAcc = Panels * kVectors;
    V acc[Split][Rows][kAcc];
    const float* b = bias() + p0 * kWidth;
    for (int s = 0; s < Split; ++s)
      for (int r = 0; r < Rows; ++r)
        for (int v = 0; v < kAcc; ++v) {
          acc[s][r][v] = V{};
          if (s == 0) simd::load<Lanes>(acc[0][r][v], b + v * Lanes);
        }
    const float* w[Panels];
    for (int q = 0; q < Panels; ++q) w[q] = panel(p0 + q);
    int i = 0;
    for (; i + Split <= in_; i += Split)
      for (int s = 0; s < Split; ++s)
        for (int q = 0; q < Panels; ++q) {
          V wv[kVectors];
          for (int v = 0; v < kVectors; ++v) simd::load<Lanes>(wv[v], w[q] + (i + s) * kWidth + v * Lanes);
          for (int r = 0; r < Rows; ++r) {
            const float xi = x[r][i + s];
            for (int v = 0; v < kVectors; ++v) acc[s][r][q * kVectors + v] += xi * wv[v];
          }
        }
    for (; i < in_; ++i)
      for (int q = 0; q < Panels; ++q) {
        V wv[kVectors];
        for (int v = 0; v < kVectors; ++v) simd::load<Lanes>(wv[v], w[q] + i * kWidth + v * Lanes);
        for (int r = 0; r < Rows; ++r)
          for (int v = 0; v < kVectors; ++v) acc[0][r][q * kVectors + v] += x[r][i] * wv[v];
      }
    for (int r = 0; r < Rows; ++r) {
      for (int s = 1; s < Split; ++s)
        for (int v = 0; v < kAcc; ++v) acc[0][r][v] += acc[s][r][v];
      for (int q = 0; q < Panels; ++q) store(y[r] + (p0 + q) * kWidth, &acc[0][r][q * kVectors], p0 + q, relu);
    }
  }

  // One panel's outputs of one row, ReLU'd if asked; a last panel stores only its real outputs.
  void store(float* out, const V* sums, int p, bool relu) const {
    float sum[kWidth];
    for (int v = 0; v < kVectors; ++v) simd::store<Lanes>(sum + v * Lanes, sums[v]);
    if (relu)
      for (float& value : sum) value = value < 0.0f ? 0.0f : value;  // fixed length: vectorised
    const int valid = std::min(kWidth, out_ - p * kWidth);
    if (valid == kWidth)
      std::copy(sum, sum + kWidth, out);  // fixed length: vector moves, not a memmove call
    else
      for (int j = 0; j < valid; ++j) out[j] = sum[j];
  }

  int in_ = 0, out_ = 0, panels_ = 0;
  std::unique_ptr<float[], AlignedDelete> data_;  // panels, then biases
};

}  // namespace condbench::cpu
