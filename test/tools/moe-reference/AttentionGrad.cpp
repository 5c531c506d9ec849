//===- AttentionGrad.cpp - fp64 references of attention and loss adjoints -===//
//
// Part of the moe-mlir project.
//
// moe-reference subcommands for the backward of attention and of the loss,
// by the plainest formulas in fp64 (ALGORITHMS.md sections 3.1, 3.5, 7.2):
//
//   mla_attention_grad Q K V [GATE] DY -o DQ --dk=DK --dv=DV [--dgate=DG]
//     causal softmax attention with the optional sigmoid output gate; DY is
//     the adjoint of the (gated) output. The softmax backward is taken in
//     its textbook form dS = P o (dP - rowsum(P o dP)) on the materialised
//     probabilities, not through the saved log-sum-exp.
//   linear_cross_entropy X W LABELS -o LOSS [--lse=LSE] [--dx=DX --dw=DW]
//     the lm_head projection z = x W^T and the mean cross-entropy over the
//     labels that are not --ignore-index; with --dx/--dw the adjoints of x
//     and W for the loss adjoint --d-loss (default 1).
//   cross_entropy_grad LOGITS LABELS -o DZ: the logits' adjoint.
//
// With --check-fd each subcommand also differentiates its scalar objective
// (sum(DY o y) for attention, d_loss * loss for the losses) by central
// finite differences in fp64 on every entry of every input (or an evenly
// spaced sample of --fd-samples of them), prints the largest difference
// relative to the largest gradient entry, and fails above --fd-tolerance.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "moe/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

using namespace llvm;
using namespace moe_reference;
namespace npy = mlir::moe::npy;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::SubCommand attentionGradCmd(
    "mla_attention_grad",
    "adjoints of causal softmax attention with an optional sigmoid output "
    "gate (sections 3.1, 3.5): mla_attention_grad Q K V [GATE] DY -o DQ "
    "--dk=DK --dv=DV [--dgate=DG] [--scale=S] [--check-fd]");
static cl::SubCommand linearCrossEntropyCmd(
    "linear_cross_entropy",
    "lm_head projection z = x W^T with the mean cross-entropy (section 7.2) "
    "and its adjoints: linear_cross_entropy X W LABELS -o LOSS [--lse=LSE] "
    "[--dx=DX --dw=DW] [--d-loss=G] [--ignore-index=I] [--check-fd]");
static cl::SubCommand crossEntropyGradCmd(
    "cross_entropy_grad",
    "adjoint of the logits of the mean cross-entropy (section 7.2): "
    "cross_entropy_grad LOGITS LABELS -o DZ [--d-loss=G] [--ignore-index=I] "
    "[--check-fd]");

static cl::SubCommandGroup gradCmds({&attentionGradCmd, &linearCrossEntropyCmd,
                                     &crossEntropyGradCmd});
static cl::SubCommandGroup lossCmds({&linearCrossEntropyCmd,
                                     &crossEntropyGradCmd});

static cl::list<std::string> inputs(cl::Positional, cl::OneOrMore,
                                    cl::desc("<input.npy>..."),
                                    cl::sub(gradCmds),
                                    cl::cat(referenceCategory));
static cl::opt<std::string> output("o", cl::Required,
                                   cl::desc("output .npy file"),
                                   cl::value_desc("path"), cl::sub(gradCmds),
                                   cl::cat(referenceCategory));
static cl::opt<std::string>
    dtype("dtype", cl::init("f32"),
          cl::desc("element type of the outputs: f32 or f64"),
          cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<bool>
    checkFD("check-fd",
            cl::desc("check the adjoints against fp64 central differences"),
            cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<unsigned>
    fdSamples("fd-samples", cl::init(400),
              cl::desc("entries per input checked by --check-fd (evenly "
                       "spaced; all when fewer)"),
              cl::sub(gradCmds), cl::cat(referenceCategory));
static cl::opt<double> fdTolerance(
    "fd-tolerance", cl::init(1e-6),
    cl::desc("largest accepted finite-difference error, relative to the "
             "largest gradient entry"),
    cl::sub(gradCmds), cl::cat(referenceCategory));

static cl::opt<std::string> dkPath("dk", cl::desc("adjoint of K"),
                                   cl::sub(attentionGradCmd),
                                   cl::cat(referenceCategory));
static cl::opt<std::string> dvPath("dv", cl::desc("adjoint of V"),
                                   cl::sub(attentionGradCmd),
                                   cl::cat(referenceCategory));
static cl::opt<std::string> dgatePath("dgate", cl::desc("adjoint of GATE"),
                                      cl::sub(attentionGradCmd),
                                      cl::cat(referenceCategory));
static cl::opt<double>
    attentionScale("scale", cl::init(0.0),
                   cl::desc("softmax scale (default D_qk^-1/2)"),
                   cl::sub(attentionGradCmd), cl::cat(referenceCategory));

static cl::opt<std::string> lsePath("lse",
                                    cl::desc("per-token log-sum-exp output"),
                                    cl::sub(linearCrossEntropyCmd),
                                    cl::cat(referenceCategory));
static cl::opt<std::string> dxPath("dx", cl::desc("adjoint of X"),
                                   cl::sub(linearCrossEntropyCmd),
                                   cl::cat(referenceCategory));
static cl::opt<std::string> dwPath("dw", cl::desc("adjoint of W"),
                                   cl::sub(linearCrossEntropyCmd),
                                   cl::cat(referenceCategory));
static cl::opt<double> dLoss("d-loss", cl::init(1.0),
                             cl::desc("adjoint of the loss"), cl::sub(lossCmds),
                             cl::cat(referenceCategory));
static cl::opt<int64_t> ignoreIndex("ignore-index", cl::init(-100),
                                    cl::desc("label that does not count"),
                                    cl::sub(lossCmds),
                                    cl::cat(referenceCategory));

static void expectInputCount(size_t min, size_t max) {
  if (inputs.size() < min || inputs.size() > max)
    exitOnErr(makeError("expected " + Twine(min) +
                        (min == max ? "" : " to " + Twine(max)) +
                        " input files, found " + Twine(inputs.size())));
}

static void store(StringRef path, const Tensor &tensor) {
  storeAs(path, tensor, dtype);
}

static Tensor zerosLike(const Tensor &t) {
  return Tensor{t.shape, std::vector<double>(t.data.size(), 0.0)};
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

//===----------------------------------------------------------------------===//
// Finite differences
//===----------------------------------------------------------------------===//

/// Compares `gradient` (the analytic adjoint of `input`) with central
/// differences of `objective` in `input`'s entries; returns the largest
/// error relative to the largest |gradient| entry and prints it.
static double checkAgainstFD(StringRef name, Tensor &input,
                             const Tensor &gradient,
                             const std::function<double()> &objective) {
  double maxGrad = 0;
  for (double g : gradient.data)
    maxGrad = std::max(maxGrad, std::abs(g));
  size_t n = input.data.size();
  size_t samples = std::min<size_t>(n, fdSamples);
  double worst = 0;
  for (size_t s = 0; s < samples; ++s) {
    size_t i = samples == n ? s : s * n / samples;
    double saved = input.data[i];
    double h = 1e-5 * std::max(1.0, std::abs(saved));
    input.data[i] = saved + h;
    double plus = objective();
    input.data[i] = saved - h;
    double minus = objective();
    input.data[i] = saved;
    double fd = (plus - minus) / (2 * h);
    worst = std::max(worst, std::abs(fd - gradient.data[i]));
  }
  double relative = maxGrad > 0 ? worst / maxGrad : worst;
  outs() << "fd check " << name << ": " << samples << " entries, max error "
         << format("%.3e", relative) << " (relative to max |grad| "
         << format("%.3e", maxGrad) << ")\n";
  return relative;
}

/// Fails when a finite-difference check exceeded the tolerance.
static int finishFD(ArrayRef<double> errors) {
  double worst = 0;
  for (double e : errors)
    worst = std::max(worst, e);
  if (worst > fdTolerance) {
    errs() << "moe-reference: finite-difference check failed: "
           << format("%.3e", worst) << " > " << fdTolerance.getValue() << "\n";
    return 1;
  }
  outs() << "fd check passed\n";
  return 0;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
/// Causal softmax attention on [B, T, H, D] arrays, forward and backward.
struct Attention {
  Tensor q, k, v, gate;
  bool gated = false;
  double scale = 0;
  int64_t batch = 0, length = 0, heads = 0, dqk = 0, dv = 0;

  double &at(Tensor &x, int64_t b, int64_t t, int64_t h, int64_t j) {
    return x.data[((b * length + t) * heads + h) * x.dim(3) + j];
  }
  double at(const Tensor &x, int64_t b, int64_t t, int64_t h, int64_t j) {
    return x.data[((b * length + t) * heads + h) * x.dim(3) + j];
  }

  /// P[t][s] (s <= t) of (b, h), the softmax of the scaled causal scores.
  std::vector<std::vector<double>> probabilities(int64_t b, int64_t h) {
    std::vector<std::vector<double>> p(length);
    for (int64_t t = 0; t < length; ++t) {
      p[t].resize(t + 1);
      double max = -INFINITY;
      for (int64_t s = 0; s <= t; ++s) {
        double dot = 0;
        for (int64_t j = 0; j < dqk; ++j)
          dot += at(q, b, t, h, j) * at(k, b, s, h, j);
        p[t][s] = scale * dot;
        max = std::max(max, p[t][s]);
      }
      double sum = 0;
      for (double &x : p[t])
        sum += (x = std::exp(x - max));
      for (double &x : p[t])
        x /= sum;
    }
    return p;
  }

  /// The (gated) output [B, T, H, Dv].
  Tensor forward() {
    Tensor y{{batch, length, heads, dv},
             std::vector<double>(batch * length * heads * dv, 0.0)};
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        auto p = probabilities(b, h);
        for (int64_t t = 0; t < length; ++t)
          for (int64_t j = 0; j < dv; ++j) {
            double o = 0;
            for (int64_t s = 0; s <= t; ++s)
              o += p[t][s] * at(v, b, s, h, j);
            at(y, b, t, h, j) = gated ? o * sigmoid(at(gate, b, t, h, j)) : o;
          }
      }
    return y;
  }

  /// The adjoints of q, k, v and gate for the output adjoint `dy`.
  void backward(const Tensor &dy, Tensor &dq, Tensor &dk, Tensor &dvOut,
                Tensor &dgate) {
    dq = zerosLike(q);
    dk = zerosLike(k);
    dvOut = zerosLike(v);
    if (gated)
      dgate = zerosLike(gate);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h) {
        auto p = probabilities(b, h);
        for (int64_t t = 0; t < length; ++t) {
          // dO = dy * sigmoid(gate); dgate = dy * o * s (1 - s).
          std::vector<double> dO(dv);
          for (int64_t j = 0; j < dv; ++j) {
            double g = at(dy, b, t, h, j);
            if (!gated) {
              dO[j] = g;
              continue;
            }
            double o = 0;
            for (int64_t s = 0; s <= t; ++s)
              o += p[t][s] * at(v, b, s, h, j);
            double sg = sigmoid(at(gate, b, t, h, j));
            dO[j] = g * sg;
            at(dgate, b, t, h, j) = g * o * sg * (1 - sg);
          }
          // dP[s] = dO . v_s; dS = P (dP - sum_s P dP).
          std::vector<double> dP(t + 1);
          double weighted = 0;
          for (int64_t s = 0; s <= t; ++s) {
            double dot = 0;
            for (int64_t j = 0; j < dv; ++j) {
              dot += dO[j] * at(v, b, s, h, j);
              at(dvOut, b, s, h, j) += p[t][s] * dO[j];
            }
            dP[s] = dot;
            weighted += p[t][s] * dot;
          }
          for (int64_t s = 0; s <= t; ++s) {
            double dS = p[t][s] * (dP[s] - weighted) * scale;
            for (int64_t j = 0; j < dqk; ++j) {
              at(dq, b, t, h, j) += dS * at(k, b, s, h, j);
              at(dk, b, s, h, j) += dS * at(q, b, t, h, j);
            }
          }
        }
      }
  }
};
} // namespace

static int runAttentionGrad() {
  expectInputCount(4, 5);
  Attention a;
  a.gated = inputs.size() == 5;
  a.q = load(inputs[0]);
  a.k = load(inputs[1]);
  a.v = load(inputs[2]);
  if (a.gated)
    a.gate = load(inputs[3]);
  Tensor dy = load(inputs[inputs.size() - 1]);
  expectShape(a.q, "q", {-1, -1, -1, -1});
  a.batch = a.q.dim(0);
  a.length = a.q.dim(1);
  a.heads = a.q.dim(2);
  a.dqk = a.q.dim(3);
  expectShape(a.k, "k", a.q.shape);
  expectShape(a.v, "v", {a.batch, a.length, a.heads, -1});
  a.dv = a.v.dim(3);
  if (a.gated)
    expectShape(a.gate, "gate", a.v.shape);
  expectShape(dy, "dy", a.v.shape);
  if (dkPath.empty() || dvPath.empty() || (a.gated && dgatePath.empty()))
    exitOnErr(makeError("expected --dk, --dv (and --dgate with a gate)"));
  a.scale = attentionScale > 0 ? attentionScale.getValue()
                               : 1.0 / std::sqrt(double(a.dqk));

  Tensor dq, dk, dv, dgate;
  a.backward(dy, dq, dk, dv, dgate);
  store(output, dq);
  store(dkPath, dk);
  store(dvPath, dv);
  if (a.gated)
    store(dgatePath, dgate);
  if (!checkFD)
    return 0;

  auto objective = [&] {
    Tensor y = a.forward();
    double total = 0;
    for (size_t i = 0; i < y.data.size(); ++i)
      total += y.data[i] * dy.data[i];
    return total;
  };
  SmallVector<double> errors = {checkAgainstFD("dq", a.q, dq, objective),
                                checkAgainstFD("dk", a.k, dk, objective),
                                checkAgainstFD("dv", a.v, dv, objective)};
  if (a.gated)
    errors.push_back(checkAgainstFD("dgate", a.gate, dgate, objective));
  return finishFD(errors);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// Labels of the leading shape of `x: [..., n]`, checked against [0, vocab)
/// unless ignored.
static std::vector<int64_t> loadLabels(StringRef path, const Tensor &x,
                                       int64_t vocab) {
  std::vector<int64_t> shape;
  std::vector<int64_t> labels = loadIntegers(path, shape);
  std::vector<int64_t> leading(x.shape.begin(), x.shape.end() - 1);
  if (shape != leading)
    exitOnErr(makeError("labels: expected shape " + npy::formatShape(leading) +
                        ", found " + npy::formatShape(shape)));
  for (size_t n = 0; n < labels.size(); ++n)
    if (labels[n] != ignoreIndex && (labels[n] < 0 || labels[n] >= vocab))
      exitOnErr(makeError("label " + Twine(labels[n]) + " at position " +
                          Twine(n) + " is outside [0, " + Twine(vocab) + ")"));
  return labels;
}

/// Mean cross-entropy of the logits `z: [N, V]` (row-major); fills the
/// per-row log-sum-exp and, when `dz` is given, the logits' adjoint for
/// the loss adjoint `dLoss`.
static double crossEntropy(const std::vector<double> &z, int64_t vocab,
                           const std::vector<int64_t> &labels,
                           std::vector<double> &lse, std::vector<double> *dz) {
  size_t tokens = labels.size();
  lse.assign(tokens, 0.0);
  double total = 0, count = 0;
  for (size_t n = 0; n < tokens; ++n) {
    const double *row = &z[n * vocab];
    double max = *std::max_element(row, row + vocab), sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(row[v] - max);
    lse[n] = max + std::log(sum);
    if (labels[n] == ignoreIndex)
      continue;
    total += lse[n] - row[labels[n]];
    count += 1;
  }
  if (dz) {
    dz->assign(z.size(), 0.0);
    for (size_t n = 0; n < tokens; ++n) {
      if (labels[n] == ignoreIndex)
        continue;
      for (int64_t v = 0; v < vocab; ++v)
        (*dz)[n * vocab + v] = dLoss / count *
                               (std::exp(z[n * vocab + v] - lse[n]) -
                                (v == labels[n] ? 1.0 : 0.0));
    }
  }
  return total / count;
}

/// z = x W^T for `x: [..., d]`, `w: [V, d]`, as [N, V].
static std::vector<double> project(const Tensor &x, const Tensor &w) {
  int64_t d = x.dim(-1), vocab = w.dim(0);
  int64_t tokens = x.data.size() / d;
  std::vector<double> z(tokens * vocab, 0.0);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t v = 0; v < vocab; ++v) {
      double dot = 0;
      for (int64_t j = 0; j < d; ++j)
        dot += x.data[n * d + j] * w.data[v * d + j];
      z[n * vocab + v] = dot;
    }
  return z;
}

static int runLinearCrossEntropy() {
  expectInputCount(3, 3);
  Tensor x = load(inputs[0]), w = load(inputs[1]);
  if (x.rank() < 2)
    exitOnErr(makeError("x: expected a rank of at least 2"));
  int64_t d = x.dim(-1);
  expectShape(w, "w", {-1, d});
  int64_t vocab = w.dim(0);
  std::vector<int64_t> labels = loadLabels(inputs[2], x, vocab);
  if (dxPath.empty() != dwPath.empty())
    exitOnErr(makeError("expected both --dx and --dw, or neither"));

  std::vector<double> lse, dz;
  bool grads = !dxPath.empty() || checkFD;
  double loss =
      crossEntropy(project(x, w), vocab, labels, lse, grads ? &dz : nullptr);
  store(output, Tensor{{}, {loss}});
  if (!lsePath.empty())
    store(lsePath, Tensor{{x.shape.begin(), x.shape.end() - 1}, lse});
  if (!grads)
    return 0;

  // dx = dz W, dW = dz^T x.
  int64_t tokens = labels.size();
  Tensor dx = zerosLike(x), dw = zerosLike(w);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t v = 0; v < vocab; ++v) {
      double g = dz[n * vocab + v];
      if (g == 0)
        continue;
      for (int64_t j = 0; j < d; ++j) {
        dx.data[n * d + j] += g * w.data[v * d + j];
        dw.data[v * d + j] += g * x.data[n * d + j];
      }
    }
  if (!dxPath.empty()) {
    store(dxPath, dx);
    store(dwPath, dw);
  }
  if (!checkFD)
    return 0;
  auto objective = [&] {
    std::vector<double> unused;
    return dLoss * crossEntropy(project(x, w), vocab, labels, unused, nullptr);
  };
  return finishFD({checkAgainstFD("dx", x, dx, objective),
                   checkAgainstFD("dw", w, dw, objective)});
}

static int runCrossEntropyGrad() {
  expectInputCount(2, 2);
  Tensor z = load(inputs[0]);
  if (z.rank() < 1)
    exitOnErr(makeError("logits: expected a rank of at least 1"));
  int64_t vocab = z.dim(-1);
  std::vector<int64_t> labels = loadLabels(inputs[1], z, vocab);
  std::vector<double> lse;
  Tensor dz{z.shape, {}};
  crossEntropy(z.data, vocab, labels, lse, &dz.data);
  store(output, dz);
  if (!checkFD)
    return 0;
  auto objective = [&] {
    std::vector<double> unused;
    return dLoss * crossEntropy(z.data, vocab, labels, unused, nullptr);
  };
  return finishFD({checkAgainstFD("dlogits", z, dz, objective)});
}

static RegisterReference registerAttentionGrad(attentionGradCmd,
                                               runAttentionGrad);
static RegisterReference registerLinearCrossEntropy(linearCrossEntropyCmd,
                                                    runLinearCrossEntropy);
static RegisterReference registerCrossEntropyGrad(crossEntropyGradCmd,
                                                  runCrossEntropyGrad);
