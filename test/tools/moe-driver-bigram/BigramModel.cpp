//===- BigramModel.cpp - A hand-written model for the driver's tests ------===//
//
// Part of the moe-mlir project.
//
// moe-driver-bigram links moe-compile's driver (libMoEModelMain.a) with this
// file instead of a compiled model, so that the lit tests can exercise the
// training driver (options, data, schedule, determinism, evaluation) in
// seconds. The model is a byte bigram: logits = W[token], W a 256 x 256
// table, plus a 256-entry bias that is `no_weight_decay`. It implements the
// C interface of docs/Training.md by hand: @moe_model_forward (mean
// cross-entropy) and @moe_model_train_step (loss, gradient, global norm
// clipping and AdamW with decoupled weight decay, metrics [grad_norm]).
// Results are fresh malloc'ed buffers, as the compiled code returns them.
//
//===----------------------------------------------------------------------===//

#include "tools/moe-compile/driver/Driver.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace moe_driver;

namespace {
constexpr int64_t kVocab = 256;
constexpr int64_t kTable = kVocab * kVocab;
constexpr int64_t kScalars = kTable + kVocab;
} // namespace

extern "C" {
const char moe_model_manifest[] =
    "moe-model 1\n"
    "name bigram\n"
    "vocab 256\n"
    "hidden 256\n"
    "tokens -1 -1\n"
    "scalars 65792\n"
    "param 0 65536 normal 0.02 0 0 2 256 256 table.weight\n"
    "param 65536 256 zeros 0 0 0 1 256 table.bias\n"
    "program train\n"
    "metrics 1\n"
    "metric 0 1 grad_norm\n";
}

namespace {
template <typename T>
T *fresh(size_t count) {
  T *buffer = static_cast<T *>(std::malloc(count * sizeof(T)));
  if (!buffer)
    std::abort();
  return buffer;
}

/// Mean cross-entropy of the batch; adds d(loss)/d(params) into `grad`
/// when it is not null.
double lossAndGradient(const float *params, const MemRef<int32_t, 2> &tokens,
                       const MemRef<int32_t, 2> &labels, double *grad) {
  int64_t rows = tokens.sizes[0], cols = tokens.sizes[1];
  double count = static_cast<double>(rows * cols), total = 0;
  std::vector<double> logits(kVocab);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t token = tokens.aligned[tokens.offset + r * tokens.strides[0] +
                                     c * tokens.strides[1]];
      int64_t label = labels.aligned[labels.offset + r * labels.strides[0] +
                                     c * labels.strides[1]];
      const float *row = params + token * kVocab;
      double max = -HUGE_VAL;
      for (int64_t j = 0; j < kVocab; ++j) {
        logits[j] = double(row[j]) + double(params[kTable + j]);
        max = std::max(max, logits[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < kVocab; ++j)
        sum += std::exp(logits[j] - max);
      total += max + std::log(sum) - logits[label];
      if (!grad)
        continue;
      for (int64_t j = 0; j < kVocab; ++j) {
        double d = (std::exp(logits[j] - max) / sum - (j == label)) / count;
        grad[token * kVocab + j] += d;
        grad[kTable + j] += d;
      }
    }
  return total / count;
}
} // namespace

extern "C" void _mlir_ciface_moe_model_forward(MemRef0<float> *loss,
                                               MemRef<float, 1> *params,
                                               MemRef<int32_t, 2> *tokens,
                                               MemRef<int32_t, 2> *labels) {
  float *value = fresh<float>(1);
  *value = static_cast<float>(lossAndGradient(params->aligned + params->offset,
                                              *tokens, *labels, nullptr));
  *loss = {value, value, 0};
}

extern "C" void _mlir_ciface_moe_model_train_step(
    TrainStepResults *results, MemRef<float, 1> *params, MemRef<float, 1> *m,
    MemRef<float, 1> *v, MemRef<int32_t, 2> *tokens, MemRef<int32_t, 2> *labels,
    MemRef<float, 1> *hyper) {
  const float *p = params->aligned + params->offset;
  const float *m0 = m->aligned + m->offset;
  const float *v0 = v->aligned + v->offset;
  const float *h = hyper->aligned + hyper->offset;
  float lr = h[0], beta1 = h[1], beta2 = h[2], eps = h[3], decay = h[4],
        clip = h[5], correct1 = h[6], correct2 = h[7];

  std::vector<double> grad(kScalars, 0.0);
  float *loss = fresh<float>(1);
  *loss = static_cast<float>(lossAndGradient(p, *tokens, *labels, grad.data()));
  double norm = 0;
  for (double g : grad)
    norm += g * g;
  norm = std::sqrt(norm);
  double scale = clip > 0 ? std::min(1.0, clip / (norm + 1e-6)) : 1.0;

  float *newP = fresh<float>(kScalars), *newM = fresh<float>(kScalars),
        *newV = fresh<float>(kScalars), *metrics = fresh<float>(1);
  for (int64_t i = 0; i < kScalars; ++i) {
    float g = static_cast<float>(scale * grad[i]);
    newM[i] = beta1 * m0[i] + (1 - beta1) * g;
    newV[i] = beta2 * v0[i] + (1 - beta2) * g * g;
    float value = p[i];
    if (i < kTable) // the bias is no_weight_decay
      value -= lr * decay * value;
    value -= lr * (newM[i] * correct1) / (std::sqrt(newV[i] * correct2) + eps);
    newP[i] = value;
  }
  metrics[0] = static_cast<float>(norm);
  results->loss = {loss, loss, 0};
  results->params = {newP, newP, 0, {kScalars}, {1}};
  results->m = {newM, newM, 0, {kScalars}, {1}};
  results->v = {newV, newV, 0, {kScalars}, {1}};
  results->metrics = {metrics, metrics, 0, {1}, {1}};
}
