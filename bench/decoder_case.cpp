#include "decoder_case.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

#include "condbench/agreement.h"
#include "condbench/decoder/torch_decoder.h"
#include "condbench/output_file.h"
#include "condbench/torch_save_files.h"
#include "condbench/workload.h"

namespace condbench {

namespace {

// Sequences a case walks: each a prompt per row, started (prefilled) outside the timed region.
constexpr int64_t kSequences = 4;
// Rows whose full-depth generations calibrate the mixes' thresholds, whatever the batch, so that a
// mix means the same thresholds at every batch.
constexpr int64_t kCalibrationRows = 16;

std::vector<at::Tensor> prompt_sequences(const DecoderConfig& c, int64_t batch, int64_t sequences, uint64_t seed) {
  const at::Tensor all =
      at::tensor(seeded_prompts(c, sequences * batch, seed), at::kLong).reshape({sequences, batch, c.prompt});
  std::vector<at::Tensor> out;
  for (int64_t s = 0; s < sequences; ++s) out.push_back(all[s].contiguous());
  return out;
}

// The confidence at each exit before the final one of every token the model generates at full
// depth from the calibration prompts: row-major [tokens][exits - 1], what calibrate_thresholds reads.
std::vector<float> full_depth_confidences(const DecoderModel& model) {
  const DecoderConfig& c = model.config;
  const TorchDecoder decoder(model, at::Device(at::kCPU));
  const at::Tensor prompts = prompt_sequences(c, kCalibrationRows, 1, kPoolSeed).front();
  KvCache cache = decoder.make_cache(kCalibrationRows);
  decoder.prefill(prompts.narrow(1, 0, c.prompt - 1), cache);
  at::Tensor input = prompts.select(1, c.prompt - 1);
  std::vector<float> confidences;
  for (int t = 0; t < c.generate; ++t) {
    const int position = c.step_position(t);
    at::Tensor h = decoder.embed(input, position);
    std::vector<at::Tensor> at_exit;
    for (int l = 0, exit = 1; l < c.layers; ++l) {
      h = decoder.layer(l, h, cache, {}, position);
      if (exit < c.final_exit() && l + 1 == c.exit_layer(exit)) {
        at_exit.push_back(TorchDecoder::confidence(decoder.logits(h)));
        ++exit;
      }
    }
    input = decoder.logits(h).argmax(-1);
    const at::Tensor rows = at::stack(at_exit, 1).contiguous();
    confidences.insert(confidences.end(), rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
  }
  return confidences;
}

// A model's weights and its scenarios' thresholds, made once per model and kept for the run.
struct DecoderWorkload {
  explicit DecoderWorkload(DecoderModel m) : model(std::move(m)) {}
  DecoderModel model;
  // the mixes calibrated on full_depth_confidences, made at the first mix
  ScenarioThresholds thresholds_for{model.config.num_exits() - 1, [this] { return full_depth_confidences(model); }};
};

DecoderWorkload& workload_for(const DecoderConfig& config) {
  static std::map<std::string, std::unique_ptr<DecoderWorkload>> workloads;
  std::unique_ptr<DecoderWorkload>& w = workloads[config.describe()];
  if (!w)
    w = std::make_unique<DecoderWorkload>(DecoderModel{config, seeded_decoder_parameters(config, kDefaultWeightSeed)});
  return *w;
}

}  // namespace

const DecoderModel& decoder_model(const DecoderConfig& config) { return workload_for(config).model; }

const std::vector<float>& decoder_thresholds(const DecoderConfig& config, const Scenario& scenario) {
  return workload_for(config).thresholds_for(scenario);
}

at::Tensor decoder_case_prompts(const DecoderConfig& config, int64_t batch) {
  return at::stack(prompt_sequences(config, batch, kSequences, kPoolSeed + 1));
}

nlohmann::json export_decoder_model(const DecoderConfig& config, const std::set<Scenario>& scenarios,
                                    const std::filesystem::path& folder) {
  const DecoderModel& model = decoder_model(config);
  const std::vector<ParameterSpec> specs = decoder_parameters(config);
  StateDict state_dict;
  for (size_t i = 0; i < specs.size(); ++i)
    state_dict.emplace_back(
        specs[i].name, at::from_blob(const_cast<float*>(model.params[i].data()), specs[i].shape, at::kFloat).clone());
  save_state_dict_file(state_dict, (folder / "weights.pt").string());
  throw_if_interrupted();
  save_tensor_file(decoder_case_prompts(config, 1).select(1, 0).contiguous(), (folder / "prompts.pt").string());
  throw_if_interrupted();
  nlohmann::json meta;
  nlohmann::json& described = meta["config"];
  described["family"] = kDecoderFamily;
  for (const FamilyAxis& axis : decoder_family().axes()) described[axis.key] = config.size(axis.key);
  described["num_exits"] = config.num_exits();
  meta["name_axes"] = config.name_axes();
  meta["tag"] = config.tag();
  meta["step_tag"] = config.step_tag();  // what its AOTInductor packages are named by
  meta["weight_seed"] = kDefaultWeightSeed;
  // When the peer's decode loops agree with the module's decoding: condbench-infer's rule, as data.
  meta["agreement"]["relative_tolerance"] = kAgreementRelativeTolerance;
  meta["agreement"]["tie_margin"] = kTieMargin;
  for (const Scenario& scenario : scenarios) meta["thresholds"][scenario.str()] = decoder_thresholds(config, scenario);
  return meta;
}

}  // namespace condbench
