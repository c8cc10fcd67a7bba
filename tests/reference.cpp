#include "reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include "condbench/strategy.h"

namespace condbench::testing {

namespace {
// y = W x + b for weight [out][in] (torch layout), in double; `magnitude` gets sum |w x| + |b|.
std::vector<double> linear(const std::vector<float>& w, const std::vector<float>& b, const std::vector<double>& x,
                           std::vector<double>* magnitude = nullptr) {
  const size_t out = b.size(), in = x.size();
  std::vector<double> y(out);
  if (magnitude) magnitude->assign(out, 0.0);
  for (size_t o = 0; o < out; ++o) {
    double acc = b[o], size = std::abs(static_cast<double>(b[o]));
    for (size_t i = 0; i < in; ++i) {
      acc += static_cast<double>(w[o * in + i]) * x[i];
      size += std::abs(static_cast<double>(w[o * in + i]) * x[i]);
    }
    y[o] = acc;
    if (magnitude) (*magnitude)[o] = size;
  }
  return y;
}

double max_softmax(const std::vector<double>& logits) {
  double m = logits[0];
  for (double v : logits) m = std::max(m, v);
  double sum = 0;
  for (double v : logits) sum += std::exp(v - m);
  return 1.0 / sum;
}

// LayerNorm of n values over their mean and (biased) variance, eps 1e-5, then weight and bias.
std::vector<double> layer_norm(const double* x, size_t n, const std::vector<float>& w, const std::vector<float>& b) {
  double mean = 0, var = 0;
  for (size_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  std::vector<double> y(n);
  for (size_t i = 0; i < n; ++i) y[i] = (x[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i];
  return y;
}

// The transformer (docs/design.md §1) for one row [seq][d], written out: per layer, pre-LN multi-head
// self-attention with a residual, then pre-LN GELU FFN with a residual; each head a LayerNorm and a
// Linear on token 0.
void transformer_row(const ModelConfig& config, const FlatParameters& params, const float* x,
                     std::vector<std::vector<double>>& logits, std::vector<std::vector<double>>& magnitude,
                     std::vector<double>& confidence) {
  const size_t seq = config.size("seq"), d = config.size("d_model"), heads = config.size("heads"), dh = d / heads;
  std::vector<std::vector<double>> h(seq);
  for (size_t t = 0; t < seq; ++t) h[t].assign(x + t * d, x + (t + 1) * d);
  auto head = [&](int k) {
    const std::vector<float>* p = &params[12 * config.blocks + 4 * k];
    const std::vector<double> normed = layer_norm(h[0].data(), d, p[0], p[1]);
    std::vector<double> size;
    logits.push_back(linear(p[2], p[3], normed, &size));
    magnitude.push_back(size);
  };
  for (int k = 0; k < config.blocks; ++k) {
    const std::vector<float>* p = &params[12 * k];  // in_proj w/b, out_proj w/b, linear1 w/b, linear2 w/b, norm1, norm2
    std::vector<std::vector<double>> qkv(seq), context(seq, std::vector<double>(d));
    for (size_t t = 0; t < seq; ++t) qkv[t] = linear(p[0], p[1], layer_norm(h[t].data(), d, p[8], p[9]));
    for (size_t a = 0; a < heads; ++a)
      for (size_t t = 0; t < seq; ++t) {
        std::vector<double> score(seq);
        double top = -INFINITY;
        for (size_t u = 0; u < seq; ++u) {
          double dot = 0;
          for (size_t j = 0; j < dh; ++j) dot += qkv[t][a * dh + j] * qkv[u][d + a * dh + j];
          score[u] = dot / std::sqrt(static_cast<double>(dh));
          top = std::max(top, score[u]);
        }
        double sum = 0;
        for (double& s : score) sum += (s = std::exp(s - top));
        for (size_t u = 0; u < seq; ++u)
          for (size_t j = 0; j < dh; ++j) context[t][a * dh + j] += score[u] / sum * qkv[u][2 * d + a * dh + j];
      }
    for (size_t t = 0; t < seq; ++t) {
      const std::vector<double> attended = linear(p[2], p[3], context[t]);
      for (size_t i = 0; i < d; ++i) h[t][i] += attended[i];
      std::vector<double> inner = linear(p[4], p[5], layer_norm(h[t].data(), d, p[10], p[11]));
      for (double& v : inner) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      const std::vector<double> out = linear(p[6], p[7], inner);
      for (size_t i = 0; i < d; ++i) h[t][i] += out[i];
    }
    head(k);
    confidence.push_back(max_softmax(logits.back()));
  }
  head(config.blocks);
}
}  // namespace

namespace {

// Runs row(r) for r in [0, rows) on every core: the rows are independent and each writes only its own
// slot, so the result is the same as one loop's. The reference at hidden 4100 is ~8.6 G multiply-adds
// for 256 rows; on one core that is seconds per test process, on the GPU machine's 16 a fraction.
void for_each_row(int64_t rows, const std::function<void(int64_t)>& row) {
  const int64_t workers = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(rows, 1));
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&] {
    for (int64_t r = next++; r < rows; r = next++) {
      try {
        row(r);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int64_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

ReferenceHeads reference_heads(const ModelConfig& config, const FlatParameters& params, const at::Tensor& x) {
  const at::Tensor input = x.to(at::kCPU, at::kFloat).contiguous();
  const float* data = input.data_ptr<float>();
  const int64_t rows = input.size(0);
  ReferenceHeads heads;
  heads.blocks = config.blocks;
  heads.logits.resize(rows);
  heads.magnitude.resize(rows);
  heads.confidence.resize(rows);
  if (config.family->name() == "transformer") {
    for_each_row(rows, [&](int64_t r) {
      transformer_row(config, params, data + r * config.row_elements(), heads.logits[r], heads.magnitude[r],
                      heads.confidence[r]);
    });
    return heads;
  }
  // params: blocks' (weight, bias) pairs, then exit heads', then final's.
  auto weight = [&](int layer) -> const std::vector<float>& { return params[2 * layer]; };
  auto bias = [&](int layer) -> const std::vector<float>& { return params[2 * layer + 1]; };
  for_each_row(rows, [&](int64_t r) {
    const int in = config.size("in_features");
    std::vector<double> h(data + r * in, data + (r + 1) * in);
    std::vector<std::vector<double>>& logits = heads.logits[r];
    std::vector<std::vector<double>>& magnitude = heads.magnitude[r];
    magnitude.resize(config.blocks + 1);
    for (int k = 0; k < config.blocks; ++k) {
      h = linear(weight(k), bias(k), h);
      for (double& v : h) v = std::max(v, 0.0);
      logits.push_back(linear(weight(config.blocks + k), bias(config.blocks + k), h, &magnitude[k]));
      heads.confidence[r].push_back(max_softmax(logits.back()));
    }
    logits.push_back(linear(weight(2 * config.blocks), bias(2 * config.blocks), h, &magnitude[config.blocks]));
  });
  return heads;
}

ReferenceResult pick_exits(const ReferenceHeads& heads, const std::vector<float>& thresholds, int64_t rows) {
  if (rows < 0) rows = static_cast<int64_t>(heads.logits.size());
  ReferenceResult result;
  for (int64_t r = 0; r < rows; ++r) {
    int exit = heads.blocks + 1;
    for (int k = 0; k < heads.blocks; ++k)
      if (heads.confidence[r][k] > static_cast<double>(thresholds[k])) {
        exit = k + 1;
        break;
      }
    result.exit_id.push_back(exit);
    result.logits.push_back(heads.logits[r][exit - 1]);
    result.magnitude.push_back(heads.magnitude[r][exit - 1]);
    result.confidence.push_back(heads.confidence[r]);
  }
  return result;
}

ReferenceResult reference_forward(const ModelConfig& config, const FlatParameters& params, const at::Tensor& x,
                                  const std::vector<float>& thresholds) {
  return pick_exits(reference_heads(config, params, x), thresholds);
}

std::vector<const StrategyInfo*> strategies_on(Device device) {
  std::vector<const StrategyInfo*> found;
  for (const StrategyInfo& info : StrategyRegistry::instance().of<StrategyInfo>())
    if (info.device == device) found.push_back(&info);
  return found;
}

::testing::AssertionResult matches_reference(const ExitOutput& out, const ReferenceResult& ref, double rtol) {
  const at::Tensor ids = out.exit_id.to(at::kCPU, at::kInt).contiguous();
  const at::Tensor logits = out.logits.to(at::kCPU, at::kFloat).contiguous();
  const int64_t rows = static_cast<int64_t>(ref.exit_id.size());
  if (ids.numel() != rows || logits.size(0) != rows)
    return ::testing::AssertionFailure() << "expected " << rows << " rows, got " << ids.numel();
  const int64_t classes = logits.size(1);
  for (int64_t r = 0; r < rows; ++r) {
    if (ids.data_ptr<int32_t>()[r] != ref.exit_id[r])
      return ::testing::AssertionFailure()
             << "row " << r << ": exit " << ids.data_ptr<int32_t>()[r] << ", reference exit " << ref.exit_id[r];
    for (int64_t c = 0; c < classes; ++c) {
      const double got = logits.data_ptr<float>()[r * classes + c], want = ref.logits[r][c];
      if (std::abs(got - want) > rtol * std::max({std::abs(want), ref.magnitude[r][c], 1e-30}))
        return ::testing::AssertionFailure() << "row " << r << " logit " << c << ": " << got << ", reference " << want
                                             << " (exit " << ref.exit_id[r] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

ModelConfig mlp_config(int in, int hidden, int classes, int blocks) {
  ModelConfig config = model_config("mlp");
  config.set("in_features", in).set("hidden", hidden);
  config.num_classes = classes;
  config.blocks = blocks;
  return config;
}

at::Tensor seeded_input(const ModelConfig& config, int64_t rows, uint64_t seed) {
  std::vector<float> values = seeded_inputs(config, rows, seed);
  return at::from_blob(values.data(), config.input_shape(rows), at::kFloat).clone();
}

}  // namespace condbench::testing

namespace condbench::testing {

ReferenceDecoder::ReferenceDecoder(const DecoderConfig& config, const FlatParameters& params,
                                   std::vector<int64_t> prompt, Skipped skipped)
    : config_(config), params_(params), skipped_(skipped) {
  // The prefill: every prompt token but the last runs every layer.
  tokens_.assign(prompt.begin(), prompt.end() - 1);
  depth_.assign(tokens_.size(), config.layers);
}

void ReferenceDecoder::undo() {
  tokens_.pop_back();
  depth_.pop_back();
}

DecoderReferenceStep ReferenceDecoder::step(int64_t input, const std::vector<float>& thresholds, int forced_exit) {
  const DecoderConfig& c = config_;
  const size_t d = c.d_model, dh = c.head_dim();
  tokens_.push_back(input);
  depth_.push_back(c.layers);  // until the last position's token leaves
  const size_t n = tokens_.size(), last = n - 1;
  const std::vector<float>& embed = params_[0];
  const std::vector<float>& pos = params_[1];
  std::vector<std::vector<double>> h(n, std::vector<double>(d));
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < d; ++i) h[j][i] = double{embed[tokens_[j] * d + i]} + pos[j * d + i];

  const std::vector<float>& norm_w = params_[params_.size() - 3];
  const std::vector<float>& norm_b = params_[params_.size() - 2];
  const std::vector<float> no_bias(c.vocab, 0.0f);
  auto exit_logits = [&](const std::vector<double>& state) {
    return linear(params_.back(), no_bias, layer_norm(state.data(), d, norm_w, norm_b));
  };
  DecoderReferenceStep result;
  bool decided = false;
  int exit = 1;
  for (int l = 0; l < c.layers; ++l) {
    const size_t base = 2 + 12 * static_cast<size_t>(l);  // decoder_parameters() order
    const auto& [n1w, n1b, qkv_w, qkv_b, out_w, out_b] = std::tie(
        params_[base], params_[base + 1], params_[base + 2], params_[base + 3], params_[base + 4], params_[base + 5]);
    const auto& [n2w, n2b, fc1_w, fc1_b, fc2_w, fc2_b] =
        std::tie(params_[base + 6], params_[base + 7], params_[base + 8], params_[base + 9], params_[base + 10],
                 params_[base + 11]);
    // Every position's query, key and value, from its state entering this layer (a frozen one's too).
    std::vector<std::vector<double>> qkv(n);
    for (size_t j = 0; j < n; ++j) {
      qkv[j] = linear(qkv_w, qkv_b, layer_norm(h[j].data(), d, n1w, n1b));
      const bool skipped = l >= depth_[j];
      if (skipped && skipped_ == Skipped::zero) std::fill(qkv[j].begin() + d, qkv[j].end(), 0.0);
    }
    std::vector<std::vector<double>> next = h;
    for (size_t j = 0; j < n; ++j) {
      if (l >= depth_[j] && skipped_ != Skipped::computed_in_full) continue;  // frozen
      std::vector<double> context(d, 0.0);
      for (int head = 0; head < c.heads; ++head) {
        const size_t o = head * dh;
        std::vector<double> score(j + 1);
        double top = -INFINITY, sum = 0.0;
        for (size_t i = 0; i <= j; ++i) {  // causal: positions up to j
          double s = 0.0;
          for (size_t e = 0; e < dh; ++e) s += qkv[j][o + e] * qkv[i][d + o + e];
          score[i] = s / std::sqrt(static_cast<double>(dh));
          top = std::max(top, score[i]);
        }
        for (double& s : score) sum += s = std::exp(s - top);
        for (size_t i = 0; i <= j; ++i)
          for (size_t e = 0; e < dh; ++e) context[o + e] += score[i] / sum * qkv[i][2 * d + o + e];
      }
      const std::vector<double> attended = linear(out_w, out_b, context);
      std::vector<double> x(d);
      for (size_t i = 0; i < d; ++i) x[i] = h[j][i] + attended[i];
      std::vector<double> f = linear(fc1_w, fc1_b, layer_norm(x.data(), d, n2w, n2b));
      for (double& v : f) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      const std::vector<double> mlp = linear(fc2_w, fc2_b, f);
      for (size_t i = 0; i < d; ++i) next[j][i] = x[i] + mlp[i];
    }
    h = std::move(next);
    if (decided || exit == c.final_exit() || l + 1 != c.exit_layer(exit)) continue;
    std::vector<double> logits = exit_logits(h[last]);
    const double confidence = max_softmax(logits);
    result.confidence.push_back(confidence);
    if (forced_exit > 0 ? forced_exit == exit : confidence > thresholds[exit - 1]) {
      decided = true;
      depth_[last] = l + 1;
      result.exit = exit;
      result.logits = std::move(logits);
    }
    ++exit;
  }
  if (!decided) {
    result.exit = c.final_exit();
    result.logits = exit_logits(h[last]);
  }
  result.token = std::max_element(result.logits.begin(), result.logits.end()) - result.logits.begin();
  return result;
}

}  // namespace condbench::testing
