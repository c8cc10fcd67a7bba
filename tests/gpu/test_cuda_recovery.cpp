// A failure in one CUDA case must not fail the next: the runtime's last error is cleared when a
// check throws, and a capture abandoned by an exception leaves no stream capturing and no
// allocator routing behind (the thread could otherwise neither allocate nor synchronise). The
// same rules are tested without a GPU through fakes (test_cuda_check.cpp, test_paired_scope.cpp);
// here they run against the real runtime and LibTorch.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <stdexcept>

#include "condbench/cuda/check.h"
#include "condbench/cuda/device_info.h"
#include "condbench/cuda/resources.h"
#include "condbench/error.h"
#include "gpu_test_support.h"
#include "torch/cuda/conditional_graph_kernels.h"
#include "torch/cuda/torch_graph_support.h"

namespace condbench::testing {
namespace {

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(stream, &status), cudaSuccess);
  return status != cudaStreamCaptureStatusNone;
}

// What "healthy" means after a failure: allocation, a kernel, a device-wide synchronisation.
void expect_healthy() {
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  const at::Tensor t = at::ones({1024}, at::TensorOptions().device(at::kCUDA));
  EXPECT_EQ((t * 2).sum().item<float>(), 2048.0f);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaRecovery, AFailedCheckClearsTheRuntimeError) {
  skip_without_gpu();
  EXPECT_THROW(CONDBENCH_CUDA_CHECK(cudaSetDevice(1 << 20)), Error);
  expect_healthy();
}

TEST(CudaRecovery, AnAbandonedTorchCaptureEndsItsCapture) {
  skip_without_gpu();
  const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  const at::Tensor x = at::ones({64, 64}, at::TensorOptions().device(at::kCUDA));
  {
    const c10::cuda::CUDAStreamGuard on_side(side);
    at::matmul(x, x);  // warm-up outside capture
    side.synchronize();
    at::cuda::CUDAGraph graph;
    EXPECT_THROW(
        {
          TorchGraphCapture capture(graph, at::cuda::graph_pool_handle());
          const at::Tensor y = at::matmul(x, x);
          throw std::runtime_error("the body failed");
        },
        std::runtime_error);
    EXPECT_FALSE(capturing(side.stream()));
  }
  expect_healthy();
  // And the next capture on the same stream works.
  const c10::cuda::CUDAStreamGuard on_side(side);
  at::cuda::CUDAGraph graph;
  at::Tensor y;
  {
    TorchGraphCapture capture(graph, at::cuda::graph_pool_handle());
    y = at::matmul(x, x);
    capture.end();
  }
  graph.replay();
  side.synchronize();
  EXPECT_EQ(y[0][0].item<float>(), 64.0f);
}

TEST(CudaRecovery, AbandonedPoolRoutingIsEnded) {
  skip_without_gpu();
  const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  GraphMemoryPool pool;
  EXPECT_THROW(
      {
        const auto routing = pool.route([](cudaStream_t) { return true; });
        throw std::runtime_error("capture failed");
      },
      std::runtime_error);
  // Routing ended: a second one on the same pool may begin (LibTorch refuses a pool that is
  // already being recorded to).
  const auto routing = pool.route([](cudaStream_t) { return false; });
  routing->close();
  expect_healthy();
}

// The runtime route's pieces (graph_cond, torch engine, on LibTorch without conditional capture):
// a body abandoned inside its IF node, with the allocator routed to the graph's pool.
TEST(CudaRecovery, AnAbandonedRuntimeRouteBodyIsClosed) {
  skip_without_gpu();
  const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  const cuda::Stream body_stream = cuda::make_stream();
  const at::cuda::CUDAStream body = at::cuda::getStreamFromExternal(body_stream.get(), c10::cuda::current_device());
  const at::Tensor x = at::ones({64, 64}, at::TensorOptions().device(at::kCUDA));
  for (const at::cuda::CUDAStream& stream : {side, body}) {
    const c10::cuda::CUDAStreamGuard on(stream);
    at::matmul(x, x);  // warm-up outside capture
    stream.synchronize();
  }
  {
    GraphMemoryPool pool;
    const c10::cuda::CUDAStreamGuard on_side(side);
    EXPECT_THROW(
        {
          const auto routing = pool.route([](cudaStream_t) { return true; });
          cuda::CaptureScope capture(side.stream());
          const at::Tensor predicate = x.sum() > 0;
          const cudaGraphConditionalHandle handle = cuda::make_condition(side.stream());
          cuda::launch_set_condition_from(handle, predicate.data_ptr<bool>(), side.stream());
          const cudaGraph_t body_graph = cuda::add_conditional(side.stream(), handle, cudaGraphCondTypeIf);
          cuda::CaptureScope body_capture(body.stream(), body_graph);
          const c10::cuda::CUDAStreamGuard on_body(body);
          const at::Tensor y = at::matmul(x, x);
          throw std::runtime_error("the body failed");
        },
        std::runtime_error);
    EXPECT_FALSE(capturing(side.stream()));
    EXPECT_FALSE(capturing(body.stream()));
  }
  expect_healthy();
}

#if CONDBENCH_TORCH_NATIVE_CONDITIONAL
TEST(CudaRecovery, AnAbandonedConditionalBodyIsClosed) {
  skip_without_gpu();
  const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  const at::Tensor x = at::ones({64, 64}, at::TensorOptions().device(at::kCUDA));
  for (const auto kind : {TorchConditionalBody::Kind::if_node, TorchConditionalBody::Kind::while_node}) {
    const c10::cuda::CUDAStreamGuard on_side(side);
    at::matmul(x, x);
    side.synchronize();
    at::cuda::CUDAGraph graph;
    EXPECT_THROW(
        {
          TorchGraphCapture capture(graph, at::cuda::graph_pool_handle());
          const at::Tensor predicate = x.sum() > 0;
          TorchConditionalBody body(graph, predicate, kind);
          const at::Tensor y = at::matmul(x, x);
          throw std::runtime_error("the body failed");
        },
        std::runtime_error);
    EXPECT_FALSE(capturing(side.stream()));
  }
  expect_healthy();
}
#endif

// The result file's context says what state the GPU was in (clocks, SMs, persistence), from the
// runtime and the driver's management library; where the driver answers, nothing is unknown.
TEST(CudaDeviceState, TheGpusStateIsReadForTheContext) {
  skip_without_gpu();
  const cuda::DeviceInfo info = cuda::device_info();
  const std::map<std::string, std::string> state(info.state.begin(), info.state.end());
  EXPECT_NE(info.device_name, "none");
  EXPECT_GT(std::stoi(state.at("gpu_sm_count")), 0);
  EXPECT_TRUE(std::regex_match(state.at("gpu_compute_capability"), std::regex(R"(\d+\.\d+)")))
      << state.at("gpu_compute_capability");
  EXPECT_GT(std::stoi(state.at("gpu_sm_clock_peak_mhz")), 100);
  EXPECT_TRUE(state.at("gpu_ecc") == "on" || state.at("gpu_ecc") == "off") << state.at("gpu_ecc");
  // NVML: nvidia-smi answers on the device machine, so the library it uses is there
  EXPECT_TRUE(state.at("gpu_persistence_mode") == "on" || state.at("gpu_persistence_mode") == "off")
      << state.at("gpu_persistence_mode");
  EXPECT_GT(std::stoi(state.at("gpu_sm_clock_mhz")), 0) << state.at("gpu_sm_clock_mhz");
}

}  // namespace
}  // namespace condbench::testing
