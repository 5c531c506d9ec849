//===- CommonGrad.cpp - fp64 backward references of the small ops ---------===//
//
// Part of the moe-mlir project.
//
// moe-reference subcommands for the gradients of the decay gate, the L2 and
// RMS norms, the short convolution, the embedding and the attention-residual
// mix (ALGORITHMS.md sections 1.2, 2.1, 5.3 and 7.2), in fp64 with the
// plainest loops. Each takes the forward's operands and the gradient `DY`
// of its result, writes one gradient per differentiable operand (`-o` once
// per operand, in operand order) and checks itself first: the loss
// `L = sum(DY * forward(operands))` is differentiated by central finite
// differences in fp64 at up to --fd-samples elements of every operand, and
// the subcommand fails when the largest difference exceeds --fd-tol times
// the largest gradient of that operand. It prints one
// "fd-check <operand>: max relative error E (N elements)" line per operand.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace llvm;
using namespace moe_reference;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::SubCommand decayGateGradCmd(
    "decay_gate_grad",
    "gradient of the KDA decay gate (section 2.1): decay_gate_grad RAW "
    "DT_BIAS [A_LOG] DG -o DRAW -o DDT_BIAS [-o DA_LOG] "
    "--gate=bounded|softplus [--g-min=M]");
static cl::SubCommand l2NormGradCmd("l2_norm_grad",
                                    "gradient of the L2 norm (section 1.2): "
                                    "l2_norm_grad X DY -o DX [--eps=1e-6]");
static cl::SubCommand
    rmsNormGradCmd("rms_norm_grad",
                   "gradient of RMSNorm (section 7.2): rms_norm_grad X W DY "
                   "-o DX -o DW [--eps=1e-5]");
static cl::SubCommand shortConvGradCmd(
    "short_conv_grad",
    "gradient of the causal depth-wise conv (section 1.2): short_conv_grad "
    "X W DY -o DX -o DW [--silu]");
static cl::SubCommand embeddingGradCmd(
    "embedding_grad",
    "gradient of the embedding table, a scatter-add of DY rows by id "
    "(section 7.2; ids outside the table add nothing): embedding_grad "
    "TOKENS TABLE DY -o DTABLE");
static cl::SubCommand attnResMixGradCmd(
    "attn_res_mix_grad",
    "gradient of the attention-residual mix with the key norm folded into "
    "the query (section 5.3): attn_res_mix_grad SRC0 [SRC1 ...] QUERY DY "
    "-o DSRC0 [-o DSRC1 ...] -o DQUERY [--eps=1e-5]");

static cl::SubCommandGroup gradCmds({&decayGateGradCmd, &l2NormGradCmd,
                                     &rmsNormGradCmd, &shortConvGradCmd,
                                     &embeddingGradCmd, &attnResMixGradCmd});
static cl::SubCommandGroup gradEpsCmds({&l2NormGradCmd, &rmsNormGradCmd,
                                        &attnResMixGradCmd});

static cl::list<std::string> gradInputs(cl::Positional, cl::OneOrMore,
                                        cl::desc("<input.npy>..."),
                                        cl::sub(gradCmds),
                                        cl::cat(referenceCategory));
static cl::list<std::string>
    gradOutputs("o", cl::OneOrMore,
                cl::desc("output .npy file, once per differentiable operand"),
                cl::value_desc("path"), cl::sub(gradCmds),
                cl::cat(referenceCategory));
static cl::opt<std::string>
    gradDType("dtype", cl::init("f32"),
              cl::desc("element type of the outputs: f32 or f64"),
              cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<double> gradEpsilon(
    "eps", cl::desc("epsilon (default 1e-6 for l2_norm_grad, 1e-5 otherwise)"),
    cl::sub(gradEpsCmds), cl::cat(referenceCategory));
static cl::opt<std::string> gradGateKind("gate", cl::init("bounded"),
                                         cl::desc("bounded or softplus"),
                                         cl::sub(decayGateGradCmd),
                                         cl::cat(referenceCategory));
static cl::opt<double> gradGMin("g-min", cl::init(-5.0),
                                cl::desc("lower bound of the bounded gate"),
                                cl::sub(decayGateGradCmd),
                                cl::cat(referenceCategory));
static cl::opt<bool> gradSilu("silu", cl::desc("SiLU after the convolution"),
                              cl::sub(shortConvGradCmd),
                              cl::cat(referenceCategory));
static cl::opt<int64_t>
    fdSamples("fd-samples", cl::init(96),
              cl::desc("elements of each operand checked by finite "
                       "differences (0: no check)"),
              cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<double>
    fdTolerance("fd-tol", cl::init(1e-7),
                cl::desc("largest accepted finite-difference error, relative "
                         "to the operand's largest gradient"),
                cl::sub(gradCmds), cl::cat(referenceCategory));

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

static double softplus(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

static void expectCounts(size_t minInputs, size_t maxInputs, size_t outputs) {
  if (gradInputs.size() < minInputs || gradInputs.size() > maxInputs)
    exitOnErr(
        makeError("expected " + Twine(minInputs) +
                  (minInputs == maxInputs ? "" : " to " + Twine(maxInputs)) +
                  " inputs, got " + Twine(gradInputs.size())));
  if (gradOutputs.size() != outputs)
    exitOnErr(makeError("expected " + Twine(outputs) +
                        " outputs (-o, one per differentiable operand), got " +
                        Twine(gradOutputs.size())));
}

static Tensor zerosLike(const Tensor &t) {
  return Tensor{t.shape, std::vector<double>(t.data.size(), 0.0)};
}

/// Number of rows of a `[..., n]` tensor.
static int64_t rowsOf(const Tensor &t) {
  return t.dim(-1) == 0 ? 0 : t.data.size() / t.dim(-1);
}

static void expectSameShape(const Tensor &t, StringRef name,
                            const Tensor &like) {
  expectShape(t, name, like.shape);
}

/// The forward of an op as a function of its float operands (in order).
using Forward = std::function<Tensor(const std::vector<Tensor> &)>;

/// Checks `grads[k]` (the analytic gradient of `sum(dy * forward)` with
/// respect to `operands[k]`, for each k in `checked`) by fp64 central finite
/// differences at up to --fd-samples elements, and exits with an error when
/// one is off by more than --fd-tol times the operand's largest gradient.
static void checkByFiniteDifferences(const Forward &forward,
                                     std::vector<Tensor> operands,
                                     const Tensor &dy,
                                     ArrayRef<const Tensor *> grads,
                                     ArrayRef<size_t> checked,
                                     ArrayRef<std::string> names) {
  if (fdSamples <= 0)
    return;
  // sum(dy * (forward(plus) - forward(minus))): the outputs that one
  // element does not reach cancel exactly, so the rounding of the loss's
  // other terms stays out of the difference.
  auto lossDifference = [&](const Tensor &plus, const Tensor &minus) {
    double sum = 0;
    for (size_t i = 0; i < plus.data.size(); ++i)
      sum += dy.data[i] * (plus.data[i] - minus.data[i]);
    return sum;
  };
  bool failed = false;
  for (auto [slot, operandIndex] : llvm::enumerate(checked)) {
    const Tensor &grad = *grads[slot];
    std::vector<double> &values = operands[operandIndex].data;
    int64_t size = values.size();
    int64_t count = std::min<int64_t>(size, fdSamples);
    double maxGrad = 0, maxError = 0;
    for (double g : grad.data)
      maxGrad = std::max(maxGrad, std::abs(g));
    for (int64_t k = 0; k < count; ++k) {
      // Evenly spread elements, the first and the last included.
      int64_t index = count == 1 ? 0 : k * (size - 1) / (count - 1);
      double saved = values[index];
      double step = 1e-6 * std::max(1.0, std::abs(saved));
      values[index] = saved + step;
      Tensor plus = forward(operands);
      values[index] = saved - step;
      Tensor minus = forward(operands);
      values[index] = saved;
      double numeric = lossDifference(plus, minus) / (2 * step);
      maxError = std::max(maxError, std::abs(numeric - grad.data[index]));
    }
    double relative = maxGrad > 0 ? maxError / maxGrad : maxError;
    outs() << "fd-check " << names[slot] << ": max relative error "
           << format("%.3e", relative) << " (" << count << " elements)\n";
    if (!(relative <= fdTolerance)) {
      errs() << "moe-reference: the " << names[slot]
             << " gradient differs from finite differences by "
             << format("%.3e", relative) << " > --fd-tol=" << fdTolerance
             << "\n";
      failed = true;
    }
  }
  if (failed)
    exit(1);
}

static void storeGrads(ArrayRef<const Tensor *> grads) {
  for (auto [path, grad] : llvm::zip_equal(gradOutputs, grads))
    storeAs(path, *grad, gradDType);
}

//===----------------------------------------------------------------------===//
// decay_gate_grad
//===----------------------------------------------------------------------===//

/// g = g_min sigmoid([exp(A)] (z + b)) or -exp(A) softplus(z + b).
static Tensor decayGateForward(const std::vector<Tensor> &in, bool bounded,
                               bool hasALog) {
  const Tensor &raw = in[0], &bias = in[1];
  int64_t heads = raw.dim(2), width = raw.dim(3);
  Tensor g = zerosLike(raw);
  for (size_t n = 0; n < raw.data.size(); ++n) {
    int64_t c = n % width, h = (n / width) % heads;
    double x = raw.data[n] + bias.data[h * width + c];
    double rate = hasALog ? std::exp(in[2].data[h]) : 1.0;
    g.data[n] = bounded ? gradGMin * sigmoid(rate * x) : -rate * softplus(x);
  }
  return g;
}

static int runDecayGateGrad() {
  bool bounded = gradGateKind == "bounded";
  if (!bounded && gradGateKind != "softplus")
    exitOnErr(makeError("--gate must be bounded or softplus, not '" +
                        gradGateKind + "'"));
  bool hasALog = gradInputs.size() == 4;
  expectCounts(3, 4, hasALog ? 3 : 2);
  if (!bounded && !hasALog)
    exitOnErr(makeError("the softplus gate requires A_LOG"));
  std::vector<Tensor> in;
  for (size_t i = 0; i + 1 < gradInputs.size(); ++i)
    in.push_back(load(gradInputs[i]));
  Tensor dy = load(gradInputs[gradInputs.size() - 1]);
  expectShape(in[0], "raw", {-1, -1, -1, -1});
  int64_t heads = in[0].dim(2), width = in[0].dim(3);
  expectShape(in[1], "dt_bias", {heads, width});
  if (hasALog)
    expectShape(in[2], "a_log", {heads});
  expectSameShape(dy, "dg", in[0]);

  Tensor dRaw = zerosLike(in[0]), dBias = zerosLike(in[1]), dALog;
  if (hasALog)
    dALog = zerosLike(in[2]);
  for (size_t n = 0; n < dRaw.data.size(); ++n) {
    int64_t c = n % width, h = (n / width) % heads;
    double x = in[0].data[n] + in[1].data[h * width + c];
    double rate = hasALog ? std::exp(in[2].data[h]) : 1.0;
    double dz, dA;
    if (bounded) {
      double p = rate * x;
      // sigmoid'(p) = sigmoid(p) sigmoid(-p).
      dz = dy.data[n] * gradGMin * sigmoid(p) * sigmoid(-p) * rate;
      dA = dz * x;
    } else {
      dz = -dy.data[n] * rate * sigmoid(x);
      dA = dy.data[n] * (-rate * softplus(x));
    }
    dRaw.data[n] = dz;
    dBias.data[h * width + c] += dz;
    if (hasALog)
      dALog.data[h] += dA;
  }

  std::vector<const Tensor *> grads = {&dRaw, &dBias};
  std::vector<size_t> checked = {0, 1};
  std::vector<std::string> names = {"raw", "dt_bias"};
  if (hasALog) {
    grads.push_back(&dALog);
    checked.push_back(2);
    names.push_back("a_log");
  }
  checkByFiniteDifferences(
      [&](const std::vector<Tensor> &at) {
        return decayGateForward(at, bounded, hasALog);
      },
      in, dy, grads, checked, names);
  storeGrads(grads);
  return 0;
}

//===----------------------------------------------------------------------===//
// l2_norm_grad and rms_norm_grad
//===----------------------------------------------------------------------===//

/// y = x / sqrt(sum(x^2) + eps), row by row.
static Tensor l2NormForward(const std::vector<Tensor> &in, double eps) {
  const Tensor &x = in[0];
  int64_t width = x.dim(-1);
  Tensor y = zerosLike(x);
  for (int64_t r = 0; r < rowsOf(x); ++r) {
    const double *row = &x.data[r * width];
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += row[i] * row[i];
    for (int64_t i = 0; i < width; ++i)
      y.data[r * width + i] = row[i] / std::sqrt(sum + eps);
  }
  return y;
}

static int runL2NormGrad() {
  expectCounts(2, 2, 1);
  double eps = gradEpsilon.getNumOccurrences() ? gradEpsilon : 1e-6;
  std::vector<Tensor> in = {load(gradInputs[0])};
  Tensor dy = load(gradInputs[1]);
  if (in[0].rank() < 1)
    exitOnErr(makeError("x: expected rank >= 1"));
  expectSameShape(dy, "dy", in[0]);
  const Tensor &x = in[0];
  int64_t width = x.dim(-1);
  Tensor dx = zerosLike(x);
  for (int64_t r = 0; r < rowsOf(x); ++r) {
    const double *row = &x.data[r * width], *g = &dy.data[r * width];
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += row[i] * row[i];
    double inv = 1.0 / std::sqrt(sum + eps);
    // dx = r (dy - y (y . dy)), y = x r.
    double ydy = 0;
    for (int64_t i = 0; i < width; ++i)
      ydy += row[i] * inv * g[i];
    for (int64_t i = 0; i < width; ++i)
      dx.data[r * width + i] = inv * (g[i] - row[i] * inv * ydy);
  }
  checkByFiniteDifferences(
      [&](const std::vector<Tensor> &at) { return l2NormForward(at, eps); }, in,
      dy, {&dx}, {0}, {"x"});
  storeGrads({&dx});
  return 0;
}

/// y = x (mean(x^2) + eps)^-1/2 w, row by row.
static Tensor rmsNormForward(const std::vector<Tensor> &in, double eps) {
  const Tensor &x = in[0], &w = in[1];
  int64_t width = x.dim(-1);
  Tensor y = zerosLike(x);
  for (int64_t r = 0; r < rowsOf(x); ++r) {
    const double *row = &x.data[r * width];
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += row[i] * row[i];
    double rstd = 1.0 / std::sqrt(sum / width + eps);
    for (int64_t i = 0; i < width; ++i)
      y.data[r * width + i] = row[i] * rstd * w.data[i];
  }
  return y;
}

static int runRMSNormGrad() {
  expectCounts(3, 3, 2);
  double eps = gradEpsilon.getNumOccurrences() ? gradEpsilon : 1e-5;
  std::vector<Tensor> in = {load(gradInputs[0]), load(gradInputs[1])};
  Tensor dy = load(gradInputs[2]);
  if (in[0].rank() < 1)
    exitOnErr(makeError("x: expected rank >= 1"));
  int64_t width = in[0].dim(-1);
  expectShape(in[1], "w", {width});
  expectSameShape(dy, "dy", in[0]);
  const Tensor &x = in[0], &w = in[1];
  Tensor dx = zerosLike(x), dw = zerosLike(w);
  for (int64_t r = 0; r < rowsOf(x); ++r) {
    const double *row = &x.data[r * width], *g = &dy.data[r * width];
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += row[i] * row[i];
    double rstd = 1.0 / std::sqrt(sum / width + eps);
    // g^ = w dy, x^ = x rstd: dx = rstd (g^ - x^ mean(x^ g^)).
    double mean = 0;
    for (int64_t i = 0; i < width; ++i)
      mean += row[i] * rstd * w.data[i] * g[i];
    mean /= width;
    for (int64_t i = 0; i < width; ++i) {
      double normed = row[i] * rstd;
      dx.data[r * width + i] = rstd * (w.data[i] * g[i] - normed * mean);
      dw.data[i] += g[i] * normed;
    }
  }
  checkByFiniteDifferences(
      [&](const std::vector<Tensor> &at) { return rmsNormForward(at, eps); },
      in, dy, {&dx, &dw}, {0, 1}, {"x", "w"});
  storeGrads({&dx, &dw});
  return 0;
}

//===----------------------------------------------------------------------===//
// short_conv_grad
//===----------------------------------------------------------------------===//

/// c[b,t,ch] = sum_i w[ch,i] x[b,t-W+1+i,ch], zero before the sequence;
/// then SiLU with --silu.
static Tensor shortConvForward(const std::vector<Tensor> &in) {
  const Tensor &x = in[0], &w = in[1];
  int64_t batch = x.dim(0), length = x.dim(1), channels = x.dim(2),
          window = w.dim(1);
  Tensor y = zerosLike(x);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t ch = 0; ch < channels; ++ch) {
        double c = 0;
        for (int64_t i = 0; i < window; ++i) {
          int64_t s = t - window + 1 + i;
          if (s >= 0)
            c += w.data[ch * window + i] *
                 x.data[(b * length + s) * channels + ch];
        }
        y.data[(b * length + t) * channels + ch] =
            gradSilu ? c * sigmoid(c) : c;
      }
  return y;
}

static int runShortConvGrad() {
  expectCounts(3, 3, 2);
  std::vector<Tensor> in = {load(gradInputs[0]), load(gradInputs[1])};
  Tensor dy = load(gradInputs[2]);
  expectShape(in[0], "x", {-1, -1, -1});
  const Tensor &x = in[0], &w = in[1];
  int64_t batch = x.dim(0), length = x.dim(1), channels = x.dim(2);
  expectShape(w, "w", {channels, -1});
  int64_t window = w.dim(1);
  expectSameShape(dy, "dy", x);

  Tensor dx = zerosLike(x), dw = zerosLike(w);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t ch = 0; ch < channels; ++ch) {
        double c = 0;
        for (int64_t i = 0; i < window; ++i) {
          int64_t s = t - window + 1 + i;
          if (s >= 0)
            c += w.data[ch * window + i] *
                 x.data[(b * length + s) * channels + ch];
        }
        double dc = dy.data[(b * length + t) * channels + ch];
        if (gradSilu) {
          // silu'(c) = s + c s (1 - s), s = sigmoid(c).
          double s = sigmoid(c);
          dc *= s + c * s * sigmoid(-c);
        }
        for (int64_t i = 0; i < window; ++i) {
          int64_t s = t - window + 1 + i;
          if (s < 0)
            continue;
          dx.data[(b * length + s) * channels + ch] +=
              w.data[ch * window + i] * dc;
          dw.data[ch * window + i] +=
              x.data[(b * length + s) * channels + ch] * dc;
        }
      }
  checkByFiniteDifferences(shortConvForward, in, dy, {&dx, &dw}, {0, 1},
                           {"x", "w"});
  storeGrads({&dx, &dw});
  return 0;
}

//===----------------------------------------------------------------------===//
// embedding_grad
//===----------------------------------------------------------------------===//

static int runEmbeddingGrad() {
  expectCounts(3, 3, 1);
  std::vector<int64_t> tokenShape;
  std::vector<int64_t> tokens = loadIntegers(gradInputs[0], tokenShape);
  std::vector<Tensor> in = {load(gradInputs[1])};
  Tensor dy = load(gradInputs[2]);
  const Tensor &table = in[0];
  expectShape(table, "table", {-1, -1});
  int64_t vocab = table.dim(0), width = table.dim(1);
  std::vector<int64_t> dyShape(tokenShape);
  dyShape.push_back(width);
  expectShape(dy, "dy", dyShape);

  // Rows gathered by id; an id outside the table reads zeros (the forward
  // leaves it undefined), so it has no gradient.
  auto forward = [&](const std::vector<Tensor> &at) {
    Tensor y{dyShape, std::vector<double>(tokens.size() * width, 0.0)};
    for (size_t n = 0; n < tokens.size(); ++n)
      if (tokens[n] >= 0 && tokens[n] < vocab)
        for (int64_t d = 0; d < width; ++d)
          y.data[n * width + d] = at[0].data[tokens[n] * width + d];
    return y;
  };
  Tensor dTable = zerosLike(table);
  for (size_t n = 0; n < tokens.size(); ++n)
    if (tokens[n] >= 0 && tokens[n] < vocab)
      for (int64_t d = 0; d < width; ++d)
        dTable.data[tokens[n] * width + d] += dy.data[n * width + d];
  checkByFiniteDifferences(forward, in, dy, {&dTable}, {0}, {"table"});
  storeGrads({&dTable});
  return 0;
}

//===----------------------------------------------------------------------===//
// attn_res_mix_grad
//===----------------------------------------------------------------------===//

/// Per token: rstd_i = (mean(v_i^2) + eps)^-1/2, s_i = rstd_i (v_i . u),
/// p = softmax(s), y = sum_i p_i v_i. `in` = sources..., query.
static Tensor mixForward(const std::vector<Tensor> &in, double eps,
                         std::vector<double> *probabilities = nullptr,
                         std::vector<double> *rstds = nullptr,
                         std::vector<double> *scores = nullptr) {
  size_t numSources = in.size() - 1;
  const Tensor &u = in.back();
  int64_t width = in[0].dim(-1), rows = rowsOf(in[0]);
  Tensor y = zerosLike(in[0]);
  std::vector<double> p(numSources), rstd(numSources), s(numSources);
  if (probabilities) {
    probabilities->assign(rows * numSources, 0);
    rstds->assign(rows * numSources, 0);
    scores->assign(rows * numSources, 0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY;
    for (size_t i = 0; i < numSources; ++i) {
      const double *v = &in[i].data[r * width];
      double squares = 0, dot = 0;
      for (int64_t d = 0; d < width; ++d) {
        squares += v[d] * v[d];
        dot += v[d] * u.data[d];
      }
      rstd[i] = 1.0 / std::sqrt(squares / width + eps);
      s[i] = rstd[i] * dot;
      max = std::max(max, s[i]);
    }
    double total = 0;
    for (size_t i = 0; i < numSources; ++i) {
      p[i] = std::exp(s[i] - max);
      total += p[i];
    }
    for (size_t i = 0; i < numSources; ++i) {
      p[i] /= total;
      for (int64_t d = 0; d < width; ++d)
        y.data[r * width + d] += p[i] * in[i].data[r * width + d];
      if (probabilities) {
        (*probabilities)[r * numSources + i] = p[i];
        (*rstds)[r * numSources + i] = rstd[i];
        (*scores)[r * numSources + i] = s[i];
      }
    }
  }
  return y;
}

static int runAttnResMixGrad() {
  if (gradInputs.size() < 3)
    exitOnErr(makeError("expected at least one source, the query and DY"));
  size_t numSources = gradInputs.size() - 2;
  expectCounts(gradInputs.size(), gradInputs.size(), numSources + 1);
  double eps = gradEpsilon.getNumOccurrences() ? gradEpsilon : 1e-5;
  std::vector<Tensor> in;
  for (size_t i = 0; i + 1 < gradInputs.size(); ++i)
    in.push_back(load(gradInputs[i]));
  Tensor dy = load(gradInputs[gradInputs.size() - 1]);
  if (in[0].rank() < 1)
    exitOnErr(makeError("source 0: expected rank >= 1"));
  for (size_t i = 1; i < numSources; ++i)
    expectSameShape(in[i], "source " + std::to_string(i), in[0]);
  int64_t width = in[0].dim(-1), rows = rowsOf(in[0]);
  expectShape(in[numSources], "query", {width});
  expectSameShape(dy, "dy", in[0]);
  const Tensor &u = in[numSources];

  std::vector<double> p, rstd, s;
  mixForward(in, eps, &p, &rstd, &s);
  std::vector<Tensor> dv(numSources, zerosLike(in[0]));
  Tensor du = zerosLike(u);
  std::vector<double> a(numSources);
  for (int64_t r = 0; r < rows; ++r) {
    const double *dh = &dy.data[r * width];
    // a_i = dh . v_i, ds_i = p_i (a_i - sum_j p_j a_j).
    double mean = 0;
    for (size_t i = 0; i < numSources; ++i) {
      a[i] = 0;
      for (int64_t d = 0; d < width; ++d)
        a[i] += dh[d] * in[i].data[r * width + d];
      mean += p[r * numSources + i] * a[i];
    }
    for (size_t i = 0; i < numSources; ++i) {
      double pi = p[r * numSources + i], ri = rstd[r * numSources + i],
             si = s[r * numSources + i];
      double ds = pi * (a[i] - mean);
      // dv_i = p_i dh + ds_i rstd_i (u - k_i (k_i . u) / d), k_i = rstd_i v_i.
      for (int64_t d = 0; d < width; ++d) {
        double v = in[i].data[r * width + d];
        double k = ri * v;
        dv[i].data[r * width + d] =
            pi * dh[d] + ds * ri * (u.data[d] - k * si / width);
        du.data[d] += ds * k;
      }
    }
  }

  std::vector<const Tensor *> grads;
  std::vector<size_t> checked;
  std::vector<std::string> names;
  for (size_t i = 0; i < numSources; ++i) {
    grads.push_back(&dv[i]);
    checked.push_back(i);
    names.push_back("source " + std::to_string(i));
  }
  grads.push_back(&du);
  checked.push_back(numSources);
  names.push_back("query");
  checkByFiniteDifferences(
      [&](const std::vector<Tensor> &at) { return mixForward(at, eps); }, in,
      dy, grads, checked, names);
  storeGrads(grads);
  return 0;
}

static RegisterReference registerDecayGateGrad(decayGateGradCmd,
                                               runDecayGateGrad);
static RegisterReference registerL2NormGrad(l2NormGradCmd, runL2NormGrad);
static RegisterReference registerRMSNormGrad(rmsNormGradCmd, runRMSNormGrad);
static RegisterReference registerShortConvGrad(shortConvGradCmd,
                                               runShortConvGrad);
static RegisterReference registerEmbeddingGrad(embeddingGradCmd,
                                               runEmbeddingGrad);
static RegisterReference registerAttnResMixGrad(attnResMixGradCmd,
                                                runAttnResMixGrad);
