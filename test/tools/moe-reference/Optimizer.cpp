//===- Optimizer.cpp - fp64 reference of the training step's optimizer ----===//
//
// Part of the moe-mlir project.
//
// `adamw-hyper` writes the hyper-parameter vector of @<model>_train_step
// (docs/Training.md) and `adamw` applies the step's optimizer to packed
// fp64 copies of the parameters, moments and gradient, naively: the global
// gradient norm over the non-buffer slots, the clip factor, AdamW of
// ALGORITHMS.md section 7.4 element by element, buffers copied and then
// overwritten where --set says (the router biases' next_bias), and the
// metrics vector [norm, MaxVio per load file, loads].
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <string>

using namespace llvm;
using namespace moe_reference;

static cl::SubCommand hyperCmd(
    "adamw-hyper",
    "the hyper-parameter vector of @<model>_train_step: adamw-hyper -o H.npy "
    "--lr --beta1 --beta2 --eps --weight-decay --max-grad-norm --step");
static cl::SubCommand adamwCmd(
    "adamw",
    "the optimizer of @<model>_train_step in fp64: adamw PARAMS M V GRAD "
    "HYPER [--no-decay=OFF:SIZE,...] [--buffer=OFF:SIZE,...] "
    "[--set=OFF:FILE,...] [--loads=FILE,...] --out-params=P --out-m=M "
    "--out-v=V [--out-metrics=METRICS]");

static cl::opt<std::string> hyperOut("o", cl::Required,
                                     cl::desc("output .npy (f32)"),
                                     cl::sub(hyperCmd),
                                     cl::cat(referenceCategory));
static cl::opt<double> lr("lr", cl::init(1e-3), cl::sub(hyperCmd),
                          cl::cat(referenceCategory));
static cl::opt<double> beta1("beta1", cl::init(0.9), cl::sub(hyperCmd),
                             cl::cat(referenceCategory));
static cl::opt<double> beta2("beta2", cl::init(0.95), cl::sub(hyperCmd),
                             cl::cat(referenceCategory));
static cl::opt<double> eps("eps", cl::init(1e-8), cl::sub(hyperCmd),
                           cl::cat(referenceCategory));
static cl::opt<double> weightDecay("weight-decay", cl::init(0.1),
                                   cl::sub(hyperCmd),
                                   cl::cat(referenceCategory));
static cl::opt<double> maxGradNorm("max-grad-norm", cl::init(1.0),
                                   cl::desc("<= 0 disables clipping"),
                                   cl::sub(hyperCmd),
                                   cl::cat(referenceCategory));
static cl::opt<int64_t> step("step", cl::init(1), cl::desc("t >= 1"),
                             cl::sub(hyperCmd), cl::cat(referenceCategory));

static cl::list<std::string> adamwInputs(cl::Positional, cl::OneOrMore,
                                         cl::desc("PARAMS M V GRAD HYPER"),
                                         cl::sub(adamwCmd),
                                         cl::cat(referenceCategory));
static cl::list<std::string>
    noDecay("no-decay", cl::CommaSeparated,
            cl::desc("OFFSET:SIZE ranges without weight decay"),
            cl::sub(adamwCmd), cl::cat(referenceCategory));
static cl::list<std::string>
    buffers("buffer", cl::CommaSeparated,
            cl::desc("OFFSET:SIZE ranges the optimizer leaves alone"),
            cl::sub(adamwCmd), cl::cat(referenceCategory));
static cl::list<std::string>
    sets("set", cl::CommaSeparated,
         cl::desc("OFFSET:FILE: the new parameters take FILE's values there"),
         cl::sub(adamwCmd), cl::cat(referenceCategory));
static cl::list<std::string> loads("loads", cl::CommaSeparated,
                                   cl::desc("per MoE layer, its load file"),
                                   cl::sub(adamwCmd),
                                   cl::cat(referenceCategory));
static cl::opt<std::string> outParams("out-params", cl::Required,
                                      cl::sub(adamwCmd),
                                      cl::cat(referenceCategory));
static cl::opt<std::string> outM("out-m", cl::Required, cl::sub(adamwCmd),
                                 cl::cat(referenceCategory));
static cl::opt<std::string> outV("out-v", cl::Required, cl::sub(adamwCmd),
                                 cl::cat(referenceCategory));
static cl::opt<std::string> outMetrics("out-metrics", cl::sub(adamwCmd),
                                       cl::cat(referenceCategory));

static int runHyper() {
  if (step < 1)
    exitOnErr(makeError("adamw-hyper: --step must be >= 1"));
  double t = static_cast<double>(step);
  Tensor hyper{{8},
               {lr, beta1, beta2, eps, weightDecay, maxGradNorm,
                1.0 / (1.0 - std::pow(beta1, t)),
                1.0 / (1.0 - std::pow(beta2, t))}};
  storeAs(hyperOut, hyper, "f32");
  return 0;
}

/// Splits "A:B" at its last colon.
static std::pair<int64_t, std::string> parsePair(StringRef text,
                                                 StringRef option) {
  auto [head, tail] = text.rsplit(':');
  int64_t offset = 0;
  if (tail.empty() || head.getAsInteger(10, offset) || offset < 0)
    exitOnErr(makeError("adamw: --" + option + " expects OFFSET:" +
                        (option == "set" ? "FILE" : "SIZE") + ", got '" + text +
                        "'"));
  return {offset, tail.str()};
}

/// Marks `[offset, offset + size)` of `mask` for each range of `ranges`.
static void markRanges(const cl::list<std::string> &ranges, StringRef option,
                       std::vector<bool> &mask) {
  for (const std::string &range : ranges) {
    auto [offset, sizeText] = parsePair(range, option);
    int64_t size = 0;
    if (StringRef(sizeText).getAsInteger(10, size) || size < 0 ||
        offset + size > static_cast<int64_t>(mask.size()))
      exitOnErr(makeError("adamw: --" + option + " range '" + range +
                          "' is not inside the buffer"));
    for (int64_t i = offset; i < offset + size; ++i)
      mask[i] = true;
  }
}

static int runAdamW() {
  if (adamwInputs.size() != 5)
    exitOnErr(makeError("adamw: expected PARAMS M V GRAD HYPER"));
  Tensor p = load(adamwInputs[0]), m = load(adamwInputs[1]),
         v = load(adamwInputs[2]), g = load(adamwInputs[3]),
         hyper = load(adamwInputs[4]);
  int64_t n = p.data.size();
  expectShape(p, "PARAMS", {n});
  expectShape(m, "M", {n});
  expectShape(v, "V", {n});
  expectShape(g, "GRAD", {n});
  expectShape(hyper, "HYPER", {8});
  double lrV = hyper.data[0], b1 = hyper.data[1], b2 = hyper.data[2],
         epsV = hyper.data[3], wd = hyper.data[4], maxNorm = hyper.data[5],
         bc1 = hyper.data[6], bc2 = hyper.data[7];

  std::vector<bool> isBuffer(n, false), isNoDecay(n, false);
  markRanges(buffers, "buffer", isBuffer);
  markRanges(noDecay, "no-decay", isNoDecay);

  double sumSq = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!isBuffer[i])
      sumSq += g.data[i] * g.data[i];
  double norm = std::sqrt(sumSq);
  double clip = maxNorm > 0 ? std::min(1.0, maxNorm / (norm + 1e-6)) : 1.0;

  for (int64_t i = 0; i < n; ++i) {
    if (isBuffer[i])
      continue;
    double gi = clip * g.data[i];
    m.data[i] = b1 * m.data[i] + (1 - b1) * gi;
    v.data[i] = b2 * v.data[i] + (1 - b2) * gi * gi;
    double pi = p.data[i];
    if (!isNoDecay[i])
      pi -= lrV * wd * p.data[i];
    pi -= lrV * (m.data[i] * bc1) / (std::sqrt(v.data[i] * bc2) + epsV);
    p.data[i] = pi;
  }
  for (const std::string &set : sets) {
    auto [offset, path] = parsePair(set, "set");
    Tensor values = load(path);
    if (offset + static_cast<int64_t>(values.data.size()) > n)
      exitOnErr(makeError("adamw: --set '" + set + "' runs past the buffer"));
    std::copy(values.data.begin(), values.data.end(), p.data.begin() + offset);
  }
  storeAs(outParams, p, "f32");
  storeAs(outM, m, "f32");
  storeAs(outV, v, "f32");

  if (!outMetrics.empty()) {
    Tensor metrics{{0}, {norm}};
    std::vector<Tensor> layerLoads;
    for (const std::string &path : loads)
      layerLoads.push_back(load(path));
    for (const Tensor &layer : layerLoads) {
      double sum = 0, max = 0;
      for (double x : layer.data) {
        sum += x;
        max = std::max(max, x);
      }
      double mean = layer.data.empty() ? 0 : sum / layer.data.size();
      metrics.data.push_back(mean > 0 ? max / mean - 1.0 : 0.0);
    }
    for (const Tensor &layer : layerLoads)
      metrics.data.insert(metrics.data.end(), layer.data.begin(),
                          layer.data.end());
    metrics.shape = {static_cast<int64_t>(metrics.data.size())};
    storeAs(outMetrics, metrics, "f32");
  }
  outs() << "grad_norm " << format("%.9g", norm) << " clip "
         << format("%.9g", clip) << "\n";
  return 0;
}

static RegisterReference registerHyper(hyperCmd, runHyper);
static RegisterReference registerAdamW(adamwCmd, runAdamW);
