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
// Kernels. rows_panel<Rows, Split> computes one panel for Rows rows: each weight vector is loaded
// once and used for every row, each broadcast x[r][i] is used for both vectors of the panel, and
// the Rows x 2 accumulators (x Split interleaved partial sums over i, for few rows) stay in
// registers for the whole sum. Six rows fill twelve of AVX2's sixteen registers; one row splits
// the sum four ways so that eight multiply-add chains are in flight.
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

  // y[r][0..out) = act(bias + x[r] W^T) for rows r < rows (any number): each panel is read once
  // while the rows pass through it in groups of up to kMaxRows.
  void forward(const float* const* x, float* const* y, size_t rows, bool relu) const {
    for (int p = 0; p < panels_; ++p) {
      size_t r = 0;
      for (; r + kMaxRows <= rows; r += kMaxRows) rows_panel<kMaxRows, 1>(p, x + r, y + r, relu);
      switch (rows - r) {
        case 0:
          break;
        case 1:
          rows_panel<1, 4>(p, x + r, y + r, relu);
          break;
        case 2:
          rows_panel<2, 3>(p, x + r, y + r, relu);
          break;
        case 3:
          rows_panel<3, 2>(p, x + r, y + r, relu);
          break;
        case 4:
          rows_panel<4, 1>(p, x + r, y + r, relu);
          break;
        default:
          rows_panel<5, 1>(p, x + r, y + r, relu);
          break;
      }
    }
  }

 private:
  using V = simd::Vec<Lanes>;

  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };

  const float* panel(int p) const { return data_.get() + static_cast<size_t>(p) * in_ * kWidth; }
  // The biases follow the panels, padded like them: [panels][kWidth].
  float* bias() const { return data_.get() + static_cast<size_t>(panels_) * in_ * kWidth; }

  template <int Rows, int Split>
  void rows_panel(int p, const float* const* x, float* const* y, bool relu) const {
    const float* w = panel(p);
    const float* b = bias() + p * kWidth;
    V acc[Split][Rows][2];
    for (int s = 0; s < Split; ++s)
      for (int r = 0; r < Rows; ++r) {
        acc[s][r][0] = acc[s][r][1] = V{};
        if (s == 0) {
          simd::load<Lanes>(acc[0][r][0], b);
          simd::load<Lanes>(acc[0][r][1], b + Lanes);
        }
      }
    int i = 0;
    for (; i + Split <= in_; i += Split, w += Split * kWidth)
      for (int s = 0; s < Split; ++s) {
        V w0, w1;
        simd::load<Lanes>(w0, w + s * kWidth);
        simd::load<Lanes>(w1, w + s * kWidth + Lanes);
        for (int r = 0; r < Rows; ++r) {
          const float xi = x[r][i + s];
          acc[s][r][0] += xi * w0;
          acc[s][r][1] += xi * w1;
        }
      }
    for (; i < in_; ++i, w += kWidth) {
      V w0, w1;
      simd::load<Lanes>(w0, w);
      simd::load<Lanes>(w1, w + Lanes);
      for (int r = 0; r < Rows; ++r) {
        acc[0][r][0] += x[r][i] * w0;
        acc[0][r][1] += x[r][i] * w1;
      }
    }
    const int valid = std::min(kWidth, out_ - p * kWidth);
    for (int r = 0; r < Rows; ++r) {
      for (int s = 1; s < Split; ++s) {
        acc[0][r][0] += acc[s][r][0];
        acc[0][r][1] += acc[s][r][1];
      }
      float sum[kWidth];
      simd::store<Lanes>(sum, acc[0][r][0]);
      simd::store<Lanes>(sum + Lanes, acc[0][r][1]);
      float* out = y[r] + p * kWidth;
      for (int j = 0; j < valid; ++j) out[j] = relu && sum[j] < 0.0f ? 0.0f : sum[j];
    }
  }

  int in_ = 0, out_ = 0, panels_ = 0;
  std::unique_ptr<float[], AlignedDelete> data_;  // panels, then biases
};

}  // namespace condbench::cpu
