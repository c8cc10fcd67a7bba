#pragma once
// The one interface every strategy implements (docs/design.md §2) and the registry that lists them.
// A strategy is one file that defines its class and registers it in one line:
//
//   CONDBENCH_REGISTER_STRATEGY(FusedCpu, "fused", Engine::native, Device::cpu);
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "condbench/model.h"

namespace condbench {

enum class Device { cpu, cuda };
enum class Engine { torch, native };
const char* to_string(Device device);
const char* to_string(Engine engine);

// A result ready on the strategy's device: exit_id int32 [batch] with ids 1..blocks+1, logits
// float32 [batch, num_classes]. Tensors may alias the strategy's buffers: valid until the next run.
struct ExitOutput {
  at::Tensor exit_id;
  at::Tensor logits;
};

// What one inference did. FLOPs useful are a property of the exit ids (flops.h), not of the
// strategy, so the harness derives them; everything here is what the strategy itself knows.
struct InferenceCounters {
  int64_t host_syncs = 0;       // times the host waited on the device to decide (CPU: host decisions)
  int64_t launches = 0;         // kernel launches plus graph launches issued by the host (see README)
  double flops_executed = 0.0;  // FLOPs of the Linears actually computed, all rows
};

class Strategy {
 public:
  explicit Strategy(Device device) : device_(device) {}
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  Device device() const { return device_; }

  // Everything that allocates, uploads weights or captures graphs, for inputs of `batch` rows.
  virtual void prepare(const EarlyExitModel& model, int64_t batch) = 0;
  // One inference. input: contiguous float32 [batch, in_features] on device(); thresholds: one per
  // exit head, on the host. Returns with the work enqueued (the harness synchronises the stream).
  virtual ExitOutput run(const at::Tensor& input, const std::vector<float>& thresholds) = 0;
  // Blocks until the last run's result is ready on the device: nothing on the CPU, one stream
  // synchronisation on CUDA. The harness times it as part of the inference.
  virtual void finish() {}
  // What the last run() did. Called outside the timed region; may synchronise with the device.
  virtual InferenceCounters counters() const { return counters_; }
  // The CUDA stream the strategy's work runs on (a cudaStream_t; the legacy default stream is
  // nullptr), for GPU timing; nullopt for a CPU strategy.
  virtual std::optional<void*> cuda_stream() const { return std::nullopt; }

 protected:
  InferenceCounters counters_;

 private:
  Device device_;
};

struct StrategyInfo {
  std::string name;
  Engine engine;
  Device device;
  std::function<std::unique_ptr<Strategy>()> make;

  std::string key() const;  // "cpu/torch/eager_host"
};

class StrategyRegistry {
 public:
  static StrategyRegistry& instance();
  bool add(StrategyInfo info);  // returns true so registration can initialise a static
  const std::vector<StrategyInfo>& entries() const { return entries_; }
  const StrategyInfo* find(Device device, Engine engine, const std::string& name) const;
  bool knows(const std::string& name) const;  // on any device and engine

 private:
  std::vector<StrategyInfo> entries_;
};

#define CONDBENCH_CONCAT_INNER(a, b) a##b
#define CONDBENCH_CONCAT(a, b) CONDBENCH_CONCAT_INNER(a, b)
#define CONDBENCH_REGISTER_STRATEGY(Type, name, engine, device)                                                        \
  static const bool CONDBENCH_CONCAT(condbench_registered_, __LINE__) = ::condbench::StrategyRegistry::instance().add( \
      {name, engine, device, [] { return std::make_unique<Type>(device); }})

}  // namespace condbench
