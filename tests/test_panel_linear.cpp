// The CPU fused strategy's Linear kernels (strategies/native/cpu/panel_linear.h) against a double
// sum, at both vector widths whatever this machine has: every row count a kernel call can get
// (1..6 and their combinations), odd and power-of-two sizes, one-vector panels (out up to a
// vector's lanes) and two-vector ones, sums split or not (in below and above the split), ReLU on
// and off, into exact rows and, as fused calls them, padded rows and panel ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "condbench/random.h"
#include "native/cpu/panel_linear.h"

namespace condbench::testing {
namespace {

NativeLinear random_linear(int in, int out, SplitMix64& rng) {
  NativeLinear l;
  l.in = in;
  l.out = out;
  l.pitch = (out + NativeLinear::kPitchMultiple - 1) / NativeLinear::kPitchMultiple * NativeLinear::kPitchMultiple;
  l.wt.assign(static_cast<size_t>(in) * l.pitch, 0.0f);
  l.bias.assign(l.pitch, 0.0f);
  for (int i = 0; i < in; ++i)
    for (int o = 0; o < out; ++o) l.wt[static_cast<size_t>(i) * l.pitch + o] = 2.0f * rng.uniform() - 1.0f;
  for (int o = 0; o < out; ++o) l.bias[o] = 2.0f * rng.uniform() - 1.0f;
  return l;
}

// How a test calls the kernels: forward() into rows of exactly `out` floats, forward(padded) into
// rows with room for padded_out() (as fused calls it), or forward_panels(padded) in two panel
// ranges, as two threads would.
enum class Call { exact, padded, two_ranges };

template <int Lanes>
void check(int in, int out, int rows, bool relu, uint64_t seed, Call call = Call::exact) {
  SCOPED_TRACE("lanes=" + std::to_string(Lanes) + " in=" + std::to_string(in) + " out=" + std::to_string(out) +
               " rows=" + std::to_string(rows) + (relu ? " relu" : "") + " call=" + std::to_string(int(call)));
  SplitMix64 rng(seed);
  const NativeLinear l = random_linear(in, out, rng);
  const cpu::PanelLinear<Lanes> panels(l);
  // Rows scattered in one buffer, in no particular order, as fused's active rows are.
  std::vector<float> x(static_cast<size_t>(rows) * in);
  for (float& v : x) v = 2.0f * rng.uniform() - 1.0f;
  // Each output row has a sentinel after what the call may write: the kernels must not write past
  // `out` (or, padded, past padded_out(), the padding itself written as zeros).
  const int room = call == Call::exact ? out : panels.padded_out();
  const size_t stride = static_cast<size_t>(room) + 1;
  std::vector<float> y(rows * stride, -7.0f);
  std::vector<const float*> xs;
  std::vector<float*> ys;
  for (int r = rows - 1; r >= 0; --r) {
    xs.push_back(x.data() + static_cast<size_t>(r) * in);
    ys.push_back(y.data() + r * stride);
  }
  if (call == Call::exact) {
    panels.forward(xs.data(), ys.data(), rows, relu);
  } else if (call == Call::padded) {
    panels.forward(xs.data(), ys.data(), rows, relu, /*padded=*/true);
  } else {
    const int split = panels.panels() / 2;
    panels.forward_panels(split, panels.panels(), xs.data(), ys.data(), rows, relu, /*padded=*/true);
    panels.forward_panels(0, split, xs.data(), ys.data(), rows, relu, /*padded=*/true);
  }
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double want = l.bias[o], magnitude = std::abs(l.bias[o]);
      for (int i = 0; i < in; ++i) {
        const double term =
            static_cast<double>(x[static_cast<size_t>(r) * in + i]) * l.wt[static_cast<size_t>(i) * l.pitch + o];
        want += term;
        magnitude += std::abs(term);
      }
      if (relu && want < 0) want = 0;
      ASSERT_NEAR(y[r * stride + o], want, 1e-5 * magnitude + 1e-30) << "row " << r << " output " << o;
    }
    for (int o = out; o < room; ++o) ASSERT_EQ(y[r * stride + o], 0.0f) << "row " << r << ": padding output " << o;
    ASSERT_EQ(y[r * stride + room], -7.0f) << "row " << r << ": written past the row's room";
  }
}

TEST(PanelLinear, MatchesADoubleSumAtEveryRowCountAndWidth) {
  uint64_t seed = 1;
  for (int rows = 1; rows <= 13; ++rows)
    for (const auto& [in, out] :
         {std::pair{1, 1}, {3, 17}, {32, 64}, {64, 10}, {100, 100}, {33, 48}, {5, 8}, {17, 9}, {64, 16}, {70, 5}}) {
      check<8>(in, out, rows, rows % 2 == 0, ++seed);
      check<16>(in, out, rows, rows % 2 == 1, ++seed);
    }
}

// fused's calls: rows padded to whole panels, and panel ranges as threads split them.
TEST(PanelLinear, PaddedRowsAndPanelRanges) {
  uint64_t seed = 500;
  for (const int rows : {1, 2, 6, 7, 13})
    for (const auto& [in, out] : {std::pair{1, 1}, {3, 17}, {32, 64}, {64, 10}, {100, 100}, {17, 9}, {70, 5}})
      for (const Call call : {Call::padded, Call::two_ranges}) {
        check<8>(in, out, rows, rows % 2 == 0, ++seed, call);
        check<16>(in, out, rows, rows % 2 == 1, ++seed, call);
      }
}

TEST(PanelLinear, WideLayersAtTheBenchmarkSizes) {
  for (const auto& [in, out, rows] : {std::tuple{1024, 1024, 1}, {1000, 1000, 7}, {1024, 1024, 64}, {1024, 10, 7}}) {
    check<8>(in, out, rows, true, 99);
    check<16>(in, out, rows, false, 98);
  }
}

}  // namespace
}  // namespace condbench::testing
