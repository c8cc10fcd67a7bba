// The host arithmetic of the native CUDA kernels (include/condbench/cuda/linear_plan.h), on any
// machine: the layout the warp kernels read, which kernel a batch gets, how a sum is split and its
// parts partitioned, the persistent kernel's grid and the fused kernel's choice. The kernels run
// exactly these functions' answers (the partitions in device code too), so a plan that leaves a
// multiprocessor-sized hole or a gap in a sum fails here rather than on a lent GPU.
#include <gtest/gtest.h>

#include <vector>

#include "condbench/cuda/linear_plan.h"
#include "condbench/native_model.h"

namespace condbench::testing {
namespace {

using cuda::FusedKernel;
using cuda::LinearKernel;
using cuda::LinearPlan;

constexpr int kH200 = 132;  // multiprocessors of the GPU the suite's figures come from

TEST(LinearPlan, RowsArePaddedToWholeVectors) {
  EXPECT_EQ(cuda::vector_padded(1), 4);
  EXPECT_EQ(cuda::vector_padded(4), 4);
  EXPECT_EQ(cuda::vector_padded(33), 36);
  EXPECT_EQ(cuda::vector_padded(100), 100);
  EXPECT_EQ(cuda::vector_padded(4100), 4100);
}

TEST(LinearPlan, TheRowsLayoutIsTorchsWithZerosPastTheInputs) {
  const int in = 7, out = 5;
  std::vector<float> weight(static_cast<size_t>(in) * out), bias(out);
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = 1.0f + static_cast<float>(i);
  const NativeLinear linear = NativeLinear::from_torch(weight.data(), bias.data(), in, out);
  const std::vector<float> rows = cuda::rows_layout(linear);
  const int pitch = cuda::vector_padded(in);
  ASSERT_EQ(rows.size(), static_cast<size_t>(out) * pitch);
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < pitch; ++i)
      EXPECT_EQ(rows[static_cast<size_t>(o) * pitch + i], i < in ? weight[static_cast<size_t>(o) * in + i] : 0.0f)
          << "output " << o << ", input " << i;
}

TEST(LinearPlan, SmallBatchesRunTheGemvAndLargerTheGemm) {
  EXPECT_EQ(cuda::gemv_rows(1), 1);
  EXPECT_EQ(cuda::gemv_rows(2), 2);
  EXPECT_EQ(cuda::gemv_rows(3), 4);
  EXPECT_EQ(cuda::gemv_rows(7), 8);
  EXPECT_EQ(cuda::gemv_rows(8), 8);
  for (int batch : {1, 7, 8}) {
    const LinearPlan plan = cuda::plan_linear(batch, 1024, 1024, kH200);
    EXPECT_EQ(plan.kernel, LinearKernel::gemv) << batch;
    EXPECT_EQ(plan.group_rows, cuda::gemv_rows(batch)) << batch;
  }
  for (int batch : {9, 16, 64, 70, 200, 256}) {
    const LinearPlan plan = cuda::plan_linear(batch, 1024, 1024, kH200);
    EXPECT_EQ(plan.kernel, LinearKernel::gemm) << batch;
    EXPECT_EQ(plan.group_rows, cuda::kGemmRows) << batch;  // each weight read once per 64 rows
  }
}

TEST(LinearPlan, AGemvFillsTheMultiprocessorsWhereItsRowsAllow) {
  // Batch 1, hidden 1024: 1024 outputs at 8 per block are 128 blocks, fewer than 132: two warps an
  // output, 256 blocks.
  LinearPlan plan = cuda::plan_linear(1, 1024, 1024, kH200);
  EXPECT_EQ(plan.split, 2);
  EXPECT_EQ(plan.items, 256);
  // The heads' 10 outputs: split-K within a block, all eight warps an output: 10 blocks, not 2.
  plan = cuda::plan_linear(1, 1024, 10, kH200);
  EXPECT_EQ(plan.split, 8);
  EXPECT_EQ(plan.items, 10);
  // A 64-wide row is 16 float4: half a warp. Splitting it would leave lanes without a load.
  plan = cuda::plan_linear(1, 64, 10, kH200);
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.items, 2);
  // Enough outputs already: no split.
  plan = cuda::plan_linear(4, 4100, 4100, kH200);
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.items, 513);
}

TEST(LinearPlan, AGemmSplitsItsSumWhereTheTilesAreFewerThanTheMultiprocessors) {
  // Batch 64, hidden 1024: 16 tiles; split 8 ways, 128 blocks (16 ways would leave each part one
  // 32-input step: the split stops at 8).
  LinearPlan plan = cuda::plan_linear(64, 1024, 1024, kH200);
  EXPECT_EQ(plan.split, 8);
  EXPECT_EQ(plan.items, 128);
  EXPECT_EQ(cuda::split_counters(plan), 16);
  EXPECT_EQ(cuda::split_workspace_floats(plan), 128u * 64 * 64);
  // Batch 200, hidden 4100: 4 x 65 tiles fill the GPU alone.
  plan = cuda::plan_linear(200, 4100, 4100, kH200);
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.items, 260);
  EXPECT_EQ(cuda::split_counters(plan), 0);
  EXPECT_EQ(cuda::split_workspace_floats(plan), 0u);
  // A head at batch 64: one tile, split 8 ways.
  plan = cuda::plan_linear(64, 1024, 10, kH200);
  EXPECT_EQ(plan.split, 8);
  EXPECT_EQ(plan.items, 8);
  // Hidden 64: too short a sum to split (two steps of 32 per part at least).
  plan = cuda::plan_linear(64, 64, 64, kH200);
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.items, 1);
  // A GEMV plan needs no workspace whatever its split.
  EXPECT_EQ(cuda::split_workspace_floats(cuda::plan_linear(1, 1024, 10, kH200)), 0u);
}

// Every part of every split covers its share of the sum once: the parts are contiguous, in order,
// end where the sum ends, and (GEMM) begin on a whole staging step.
TEST(LinearPlan, ThePartsOfASplitSumCoverItOnce) {
  for (int n : {1, 8, 16, 25, 32, 64, 100, 256, 1024, 1025, 4100}) {
    for (int split : {1, 2, 4, 8}) {
      int gemv_next = 0, gemm_next = 0;
      for (int part = 0; part < split; ++part) {
        const cuda::Range v = cuda::gemv_part(n, split, part), k = cuda::gemm_part(n, split, part);
        EXPECT_EQ(v.begin, gemv_next) << n << " / " << split << " part " << part;
        EXPECT_LE(v.begin, v.end);
        EXPECT_EQ(k.begin, gemm_next) << n << " / " << split << " part " << part;
        EXPECT_LE(k.begin, k.end);
        EXPECT_TRUE(k.begin == n || k.begin % cuda::kGemmDepth == 0) << n << " / " << split << " part " << part;
        gemv_next = v.end;
        gemm_next = k.end;
      }
      EXPECT_EQ(gemv_next, n) << n << " / " << split;
      EXPECT_EQ(gemm_next, n) << n << " / " << split;
    }
  }
}

// Every plan the suites and the GPU tests use keeps each part's work within the sum, and its
// items within what the kernels index.
TEST(LinearPlan, EveryPlanOfTheTestedShapesIsWellFormed) {
  for (int batch : {1, 7, 64, 70, 200})
    for (int hidden : {64, 100, 1024, 4100})
      for (int out : {hidden, 10})
        for (int sms : {1, 16, 132, 264}) {
          const LinearPlan plan = cuda::plan_linear(batch, hidden, out, sms);
          SCOPED_TRACE(::testing::Message()
                       << "batch " << batch << ", in " << hidden << ", out " << out << ", " << sms << " SMs");
          EXPECT_GE(plan.split, 1);
          EXPECT_EQ(plan.split & (plan.split - 1), 0) << "a power of two";
          if (plan.kernel == LinearKernel::gemv) {
            EXPECT_LE(plan.split, cuda::kMaxGemvSplit);
            EXPECT_EQ(plan.items * (cuda::kLinearWarps / plan.split) >= out, true);
            EXPECT_LT((plan.items - 1) * (cuda::kLinearWarps / plan.split), out);
          } else {
            EXPECT_LE(plan.split, cuda::kMaxGemmSplit);
            const int tiles =
                (batch + cuda::kGemmRows - 1) / cuda::kGemmRows * ((out + cuda::kGemmOutputs - 1) / cuda::kGemmOutputs);
            EXPECT_EQ(plan.items, tiles * plan.split);
          }
        }
}

TEST(PersistentGrid, OneBlockPerMultiprocessorAtMostAndNoMoreThanTheWork) {
  EXPECT_EQ(cuda::persistent_grid(132, 2, 256), 132);  // more would make every barrier wait longer
  EXPECT_EQ(cuda::persistent_grid(132, 1, 10), 10);
  EXPECT_EQ(cuda::persistent_grid(132, 1, 0), 1);
  EXPECT_EQ(cuda::persistent_grid(132, 0, 256), 0) << "a block that does not fit: no cooperative launch";
  EXPECT_EQ(cuda::persistent_grid(0, 1, 256), 0);
}

TEST(FusedKernel, TheSingleBlockKernelUpToHidden128ThePersistentOneAbove) {
  EXPECT_EQ(cuda::choose_fused_kernel(64, true, true), FusedKernel::single_block);
  EXPECT_EQ(cuda::choose_fused_kernel(cuda::kSingleBlockMaxHidden, true, true), FusedKernel::single_block);
  EXPECT_EQ(cuda::choose_fused_kernel(cuda::kSingleBlockMaxHidden + 1, true, true), FusedKernel::persistent);
  EXPECT_EQ(cuda::choose_fused_kernel(1024, true, true), FusedKernel::persistent);
  // Where the preferred kernel does not fit, the other; where neither does, none.
  EXPECT_EQ(cuda::choose_fused_kernel(64, false, true), FusedKernel::persistent);
  EXPECT_EQ(cuda::choose_fused_kernel(1024, true, false), FusedKernel::single_block);
  EXPECT_EQ(cuda::choose_fused_kernel(4096, false, false), std::nullopt);
  EXPECT_STREQ(cuda::fused_kernel_name(FusedKernel::persistent), "persistent");
  EXPECT_STREQ(cuda::fused_kernel_name(FusedKernel::single_block), "single-block");
}

}  // namespace
}  // namespace condbench::testing
