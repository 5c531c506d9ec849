//===- moe-reference.cpp - Naive fp64 references for numerical tests ------===//
//
// Part of the moe-mlir project.
//
// Computes what compiled moe code must produce, from .npy inputs, with the
// plainest loops of ALGORITHMS.md in fp64: the norms, the decay gates, the
// short convolution, cross-entropy, embedding, and KDA both as the per-token
// recurrence (section 1.3) and as the chunked WY form (section 1.4). It
// shares no code with the compiler; only the .npy reader comes from the
// project. Results are written as f32 (or f64 with --dtype=f64).
//
//===----------------------------------------------------------------------===//

#include "moe/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace llvm;
namespace npy = mlir::moe::npy;

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

static cl::SubCommand l2NormCmd("l2_norm",
                                "x / sqrt(sum(x^2) + eps) over the last dim: "
                                "l2_norm X -o Y");
static cl::SubCommand rmsNormCmd("rms_norm",
                                 "x * (mean(x^2) + eps)^-1/2 * w over the "
                                 "last dim: rms_norm X W -o Y");
static cl::SubCommand
    decayGateCmd("decay_gate",
                 "KDA log decay (section 2.1): decay_gate RAW DT_BIAS "
                 "[A_LOG] -o G --gate=bounded|softplus [--g-min=M]");
static cl::SubCommand
    shortConvCmd("short_conv",
                 "causal depth-wise conv, zero left padding: short_conv X "
                 "W -o Y [--silu]");
static cl::SubCommand
    crossEntropyCmd("cross_entropy",
                    "mean cross-entropy over the labels that are not "
                    "--ignore-index: cross_entropy LOGITS LABELS -o LOSS");
static cl::SubCommand embeddingCmd("embedding",
                                   "table rows gathered by id: embedding "
                                   "TOKENS TABLE -o Y");
static cl::SubCommand
    kdaCmd("kda",
           "KDA forward by the per-token recurrence of section 1.3: kda Q K "
           "V Z BETA A_LOG DT_BIAS -o O --gate=...");
static cl::SubCommand
    kdaChunkedCmd("kda-chunked",
                  "KDA forward by the chunked WY form of section 1.4 "
                  "(CHUNK_REF): same operands as kda, plus --chunk=C");

static cl::OptionCategory referenceCategory("moe-reference options");

static cl::SubCommandGroup allCmds({&l2NormCmd, &rmsNormCmd, &decayGateCmd,
                                    &shortConvCmd, &crossEntropyCmd,
                                    &embeddingCmd, &kdaCmd, &kdaChunkedCmd});
static cl::SubCommandGroup gateCmds({&decayGateCmd, &kdaCmd, &kdaChunkedCmd});
static cl::SubCommandGroup kdaCmds({&kdaCmd, &kdaChunkedCmd});
static cl::SubCommandGroup epsCmds({&l2NormCmd, &rmsNormCmd});

static cl::list<std::string> inputPaths(cl::Positional, cl::OneOrMore,
                                        cl::desc("<input.npy>..."),
                                        cl::sub(allCmds),
                                        cl::cat(referenceCategory));
static cl::opt<std::string> outputPath("o", cl::Required,
                                       cl::desc("output .npy file"),
                                       cl::value_desc("path"), cl::sub(allCmds),
                                       cl::cat(referenceCategory));
static cl::opt<std::string>
    outputDType("dtype", cl::init("f32"),
                cl::desc("element type of the outputs: f32 or f64"),
                cl::sub(allCmds), cl::cat(referenceCategory));
static cl::opt<double>
    epsilon("eps",
            cl::desc("epsilon (default 1e-6 for l2_norm, 1e-5 for rms_norm)"),
            cl::sub(epsCmds), cl::cat(referenceCategory));
static cl::opt<std::string> gateKind("gate", cl::init("bounded"),
                                     cl::desc("bounded or softplus"),
                                     cl::sub(gateCmds),
                                     cl::cat(referenceCategory));
static cl::opt<double> gMin("g-min", cl::init(-5.0),
                            cl::desc("lower bound of the bounded gate"),
                            cl::sub(gateCmds), cl::cat(referenceCategory));
static cl::opt<bool> silu("silu", cl::desc("apply SiLU after the conv"),
                          cl::sub(shortConvCmd), cl::cat(referenceCategory));
static cl::opt<int64_t> ignoreIndex("ignore-index", cl::init(-100),
                                    cl::desc("label that is not counted"),
                                    cl::sub(crossEntropyCmd),
                                    cl::cat(referenceCategory));
static cl::opt<double> scale("scale", cl::init(0.0),
                             cl::desc("query scale (default K^-1/2)"),
                             cl::sub(kdaCmds), cl::cat(referenceCategory));
static cl::opt<std::string> initialStatePath(
    "initial-state", cl::desc("optional [B,H,K,V] initial state (default 0)"),
    cl::value_desc("path"), cl::sub(kdaCmds), cl::cat(referenceCategory));
static cl::opt<std::string> finalStatePath(
    "final-state", cl::desc("also write the [B,H,K,V] final state here"),
    cl::value_desc("path"), cl::sub(kdaCmds), cl::cat(referenceCategory));
static cl::opt<int64_t> chunkSize("chunk", cl::init(64),
                                  cl::desc("chunk length C of kda-chunked"),
                                  cl::sub(kdaChunkedCmd),
                                  cl::cat(referenceCategory));

//===----------------------------------------------------------------------===//
// Arrays
//===----------------------------------------------------------------------===//

namespace {
/// An fp64 tensor with its shape, C order.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t dim(int64_t i) const { return shape[i < 0 ? shape.size() + i : i]; }
  int64_t rank() const { return shape.size(); }
};
} // namespace

static ExitOnError exitOnErr;

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static Tensor load(StringRef path) {
  npy::Array array = exitOnErr(npy::readFile(path));
  return Tensor{array.shape, array.toF64()};
}

static std::vector<int64_t> loadIntegers(StringRef path,
                                         std::vector<int64_t> &shape) {
  npy::Array array = exitOnErr(npy::readFile(path));
  if (npy::isFloat(array.dtype))
    exitOnErr(makeError(path + ": expected an integer array, found " +
                        npy::getDTypeName(array.dtype)));
  shape = array.shape;
  return array.toI64();
}

static void store(StringRef path, const Tensor &tensor) {
  std::optional<npy::DType> dtype = npy::parseDTypeName(outputDType);
  if (!dtype || !npy::isFloat(*dtype))
    exitOnErr(
        makeError("--dtype must be f32 or f64, not '" + outputDType + "'"));
  npy::Array array = npy::Array::fromF64(tensor.shape, tensor.data);
  exitOnErr(npy::writeFile(path, array.convertTo(*dtype)));
}

/// Fails unless `tensor` has `expected` (-1 matches any size).
static void expectShape(const Tensor &tensor, StringRef name,
                        ArrayRef<int64_t> expected) {
  bool ok = tensor.rank() == static_cast<int64_t>(expected.size());
  for (size_t i = 0; ok && i < expected.size(); ++i)
    ok = expected[i] < 0 || expected[i] == tensor.shape[i];
  if (!ok)
    exitOnErr(makeError(name + ": expected shape " +
                        npy::formatShape(expected) + ", found " +
                        npy::formatShape(tensor.shape)));
}

static void expectInputs(size_t min, size_t max) {
  if (inputPaths.size() < min || inputPaths.size() > max)
    exitOnErr(makeError("expected " + Twine(min) +
                        (min == max ? "" : " to " + Twine(max)) +
                        " input files, found " + Twine(inputPaths.size())));
}

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

static double softplus(double x) {
  // log(1 + e^x) is x itself to fp64 precision beyond 40.
  return x > 40.0 ? x : std::log1p(std::exp(x));
}

//===----------------------------------------------------------------------===//
// Element-wise and per-row references
//===----------------------------------------------------------------------===//

static void runL2Norm() {
  expectInputs(1, 1);
  Tensor x = load(inputPaths[0]);
  double eps = epsilon.getNumOccurrences() ? epsilon : 1e-6;
  int64_t width = x.dim(-1), rows = x.data.size() / std::max<int64_t>(width, 1);
  Tensor y = x;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += x.data[r * width + i] * x.data[r * width + i];
    for (int64_t i = 0; i < width; ++i)
      y.data[r * width + i] = x.data[r * width + i] / std::sqrt(sum + eps);
  }
  store(outputPath, y);
}

static void runRMSNorm() {
  expectInputs(2, 2);
  Tensor x = load(inputPaths[0]), w = load(inputPaths[1]);
  int64_t width = x.dim(-1), rows = x.data.size() / std::max<int64_t>(width, 1);
  expectShape(w, "weight", {width});
  double eps = epsilon.getNumOccurrences() ? epsilon : 1e-5;
  Tensor y = x;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += x.data[r * width + i] * x.data[r * width + i];
    double rstd = 1.0 / std::sqrt(sum / width + eps);
    for (int64_t i = 0; i < width; ++i)
      y.data[r * width + i] = x.data[r * width + i] * rstd * w.data[i];
  }
  store(outputPath, y);
}

/// The log decay of section 2.1 for `raw: [B, T, H, K]`; `aLog` may be empty
/// for the bounded gate.
static Tensor computeGate(const Tensor &raw, const Tensor &dtBias,
                          const Tensor *aLog) {
  expectShape(raw, "raw gate", {-1, -1, -1, -1});
  int64_t heads = raw.dim(2), keyDim = raw.dim(3);
  expectShape(dtBias, "dt_bias", {heads, keyDim});
  if (aLog)
    expectShape(*aLog, "A_log", {heads});
  bool bounded = gateKind == "bounded";
  if (!bounded && gateKind != "softplus")
    exitOnErr(makeError("--gate must be bounded or softplus, not '" + gateKind +
                        "'"));
  if (!bounded && !aLog)
    exitOnErr(makeError("the softplus gate needs A_log"));
  Tensor g = raw;
  for (size_t i = 0; i < raw.data.size(); ++i) {
    int64_t c = i % keyDim, h = (i / keyDim) % heads;
    double x = raw.data[i] + dtBias.data[h * keyDim + c];
    double rate = aLog ? std::exp(aLog->data[h]) : 1.0;
    g.data[i] = bounded ? gMin * sigmoid(rate * x) : -rate * softplus(x);
  }
  return g;
}

static void runDecayGate() {
  expectInputs(2, 3);
  Tensor raw = load(inputPaths[0]), dtBias = load(inputPaths[1]);
  Tensor aLog;
  if (inputPaths.size() == 3)
    aLog = load(inputPaths[2]);
  store(outputPath,
        computeGate(raw, dtBias, inputPaths.size() == 3 ? &aLog : nullptr));
}

static void runShortConv() {
  expectInputs(2, 2);
  Tensor x = load(inputPaths[0]), w = load(inputPaths[1]);
  expectShape(x, "input", {-1, -1, -1});
  int64_t batch = x.dim(0), length = x.dim(1), channels = x.dim(2);
  expectShape(w, "weight", {channels, -1});
  int64_t window = w.dim(1);
  Tensor y = x;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t c = 0; c < channels; ++c) {
        // c_t = sum_i w_i x_{t - W + 1 + i}, zero before the sequence.
        double sum = 0;
        for (int64_t i = 0; i < window; ++i) {
          int64_t s = t - window + 1 + i;
          if (s >= 0)
            sum += w.data[c * window + i] *
                   x.data[(b * length + s) * channels + c];
        }
        y.data[(b * length + t) * channels + c] =
            silu ? sum * sigmoid(sum) : sum;
      }
  store(outputPath, y);
}

static void runCrossEntropy() {
  expectInputs(2, 2);
  Tensor logits = load(inputPaths[0]);
  std::vector<int64_t> labelShape;
  std::vector<int64_t> labels = loadIntegers(inputPaths[1], labelShape);
  std::vector<int64_t> leading(logits.shape.begin(), logits.shape.end() - 1);
  if (labelShape != leading)
    exitOnErr(makeError("labels: expected shape " + npy::formatShape(leading) +
                        ", found " + npy::formatShape(labelShape)));
  int64_t vocab = logits.dim(-1);
  double total = 0, count = 0;
  for (size_t n = 0; n < labels.size(); ++n) {
    if (labels[n] == ignoreIndex)
      continue;
    if (labels[n] < 0 || labels[n] >= vocab)
      exitOnErr(makeError("label " + Twine(labels[n]) + " at position " +
                          Twine(n) + " is outside [0, " + Twine(vocab) + ")"));
    const double *z = &logits.data[n * vocab];
    double max = *std::max_element(z, z + vocab), sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(z[v] - max);
    total += max + std::log(sum) - z[labels[n]];
    count += 1;
  }
  store(outputPath, Tensor{{}, {total / count}});
}

static void runEmbedding() {
  expectInputs(2, 2);
  std::vector<int64_t> tokenShape;
  std::vector<int64_t> tokens = loadIntegers(inputPaths[0], tokenShape);
  Tensor table = load(inputPaths[1]);
  expectShape(table, "table", {-1, -1});
  int64_t vocab = table.dim(0), width = table.dim(1);
  Tensor y;
  y.shape = tokenShape;
  y.shape.push_back(width);
  for (int64_t id : tokens) {
    if (id < 0 || id >= vocab)
      exitOnErr(makeError("token id " + Twine(id) + " is outside [0, " +
                          Twine(vocab) + ")"));
    y.data.insert(y.data.end(), table.data.begin() + id * width,
                  table.data.begin() + (id + 1) * width);
  }
  store(outputPath, y);
}

//===----------------------------------------------------------------------===//
// KDA
//===----------------------------------------------------------------------===//

namespace {
/// The operands of @kda_forward, with q and k normalised and the gate
/// applied: per (b, h), tokens are `[T, K]` / `[T, V]` slices.
struct KDAProblem {
  int64_t batch, length, heads, keyDim, valueDim;
  Tensor q, k, v, g, beta, state; // q, k, g: [B,T,H,K]; state: [B,H,K,V]
  double scale;

  double &at(Tensor &t, int64_t b, int64_t s, int64_t h, int64_t i,
             int64_t width) {
    return t.data[((b * length + s) * heads + h) * width + i];
  }
  double &stateAt(int64_t b, int64_t h, int64_t i, int64_t j) {
    return state.data[((b * heads + h) * keyDim + i) * valueDim + j];
  }
};
} // namespace

/// L2-normalises each row of the last dimension with eps 1e-6 (section 1.2).
static void normaliseRows(Tensor &x) {
  int64_t width = x.dim(-1);
  for (size_t r = 0; r < x.data.size() / width; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < width; ++i)
      sum += x.data[r * width + i] * x.data[r * width + i];
    double inv = 1.0 / std::sqrt(sum + 1e-6);
    for (int64_t i = 0; i < width; ++i)
      x.data[r * width + i] *= inv;
  }
}

static KDAProblem loadKDAProblem() {
  expectInputs(7, 7);
  KDAProblem p;
  p.q = load(inputPaths[0]);
  expectShape(p.q, "q", {-1, -1, -1, -1});
  p.batch = p.q.dim(0);
  p.length = p.q.dim(1);
  p.heads = p.q.dim(2);
  p.keyDim = p.q.dim(3);
  p.k = load(inputPaths[1]);
  expectShape(p.k, "k", p.q.shape);
  p.v = load(inputPaths[2]);
  expectShape(p.v, "v", {p.batch, p.length, p.heads, -1});
  p.valueDim = p.v.dim(3);
  Tensor z = load(inputPaths[3]);
  expectShape(z, "z", p.q.shape);
  p.beta = load(inputPaths[4]);
  expectShape(p.beta, "beta", {p.batch, p.length, p.heads});
  Tensor aLog = load(inputPaths[5]), dtBias = load(inputPaths[6]);
  p.g = computeGate(z, dtBias, &aLog);
  normaliseRows(p.q);
  normaliseRows(p.k);
  p.scale = scale > 0 ? scale : 1.0 / std::sqrt(double(p.keyDim));
  std::vector<int64_t> stateShape = {p.batch, p.heads, p.keyDim, p.valueDim};
  if (initialStatePath.empty()) {
    p.state = Tensor{stateShape, std::vector<double>(p.batch * p.heads *
                                                     p.keyDim * p.valueDim)};
  } else {
    p.state = load(initialStatePath);
    expectShape(p.state, "initial state", stateShape);
  }
  return p;
}

static void storeKDA(KDAProblem &p, const Tensor &output) {
  store(outputPath, output);
  if (!finalStatePath.empty())
    store(finalStatePath, p.state);
}

/// Section 1.3 FWD, one token at a time:
///   S~ = exp(g_t) * S ; u = beta (v - S~^T k) ; S = S~ + k u^T ;
///   o_t = S^T (s q_t).
static void runKDA() {
  KDAProblem p = loadKDAProblem();
  int64_t K = p.keyDim, V = p.valueDim;
  Tensor o{p.v.shape, std::vector<double>(p.v.data.size())};
  std::vector<double> u(V);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t t = 0; t < p.length; ++t) {
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            p.stateAt(b, h, i, j) *= std::exp(p.at(p.g, b, t, h, i, K));
        double beta = p.beta.data[(b * p.length + t) * p.heads + h];
        for (int64_t j = 0; j < V; ++j) {
          double predicted = 0;
          for (int64_t i = 0; i < K; ++i)
            predicted += p.stateAt(b, h, i, j) * p.at(p.k, b, t, h, i, K);
          u[j] = beta * (p.at(p.v, b, t, h, j, V) - predicted);
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j)
            p.stateAt(b, h, i, j) += p.at(p.k, b, t, h, i, K) * u[j];
        for (int64_t j = 0; j < V; ++j) {
          double sum = 0;
          for (int64_t i = 0; i < K; ++i)
            sum += p.stateAt(b, h, i, j) * p.scale * p.at(p.q, b, t, h, i, K);
          p.at(o, b, t, h, j, V) = sum;
        }
      }
  storeKDA(p, o);
}

/// Section 1.4 CHUNK_REF: per chunk of n <= C tokens, with G the in-chunk
/// cumulative log decay, Q = s q and D = exp(G_i - G_j) (j <= i):
///   Aqk[i,j] = sum_d Q_i k_j D ; L[i,j] = beta_i sum_d k_i k_j D (j < i)
///   M = (I + L)^-1 ; W = M (beta k exp(G)) ; U = M (beta v) ; Vn = U - W S
///   O = (Q exp(G)) S + Aqk Vn ; S = exp(G_last) S + (k exp(G_last - G))^T Vn
static void runKDAChunked() {
  if (chunkSize < 1)
    exitOnErr(makeError("--chunk must be positive"));
  KDAProblem p = loadKDAProblem();
  int64_t K = p.keyDim, V = p.valueDim, C = chunkSize;
  Tensor o{p.v.shape, std::vector<double>(p.v.data.size())};
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t c0 = 0; c0 < p.length; c0 += C) {
        int64_t n = std::min(C, p.length - c0);
        auto q = [&](int64_t i, int64_t d) {
          return p.scale * p.at(p.q, b, c0 + i, h, d, K);
        };
        auto k = [&](int64_t i, int64_t d) {
          return p.at(p.k, b, c0 + i, h, d, K);
        };
        auto v = [&](int64_t i, int64_t j) {
          return p.at(p.v, b, c0 + i, h, j, V);
        };
        auto beta = [&](int64_t i) {
          return p.beta.data[(b * p.length + c0 + i) * p.heads + h];
        };
        std::vector<double> G(n * K);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t d = 0; d < K; ++d)
            G[i * K + d] =
                (i ? G[(i - 1) * K + d] : 0.0) + p.at(p.g, b, c0 + i, h, d, K);

        std::vector<double> aqk(n * n, 0.0), L(n * n, 0.0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j <= i; ++j) {
            double qk = 0, kk = 0;
            for (int64_t d = 0; d < K; ++d) {
              double decay = std::exp(G[i * K + d] - G[j * K + d]);
              qk += q(i, d) * k(j, d) * decay;
              kk += k(i, d) * k(j, d) * decay;
            }
            aqk[i * n + j] = qk;
            if (j < i)
              L[i * n + j] = beta(i) * kk;
          }

        // M = (I + L)^-1 by forward substitution.
        std::vector<double> M(n * n, 0.0);
        for (int64_t i = 0; i < n; ++i) {
          M[i * n + i] = 1.0;
          for (int64_t m = 0; m < i; ++m)
            for (int64_t j = 0; j < n; ++j)
              M[i * n + j] -= L[i * n + m] * M[m * n + j];
        }

        std::vector<double> W(n * K, 0.0), U(n * V, 0.0), Vn(n * V);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t m = 0; m < n; ++m) {
            double coeff = M[i * n + m] * beta(m);
            for (int64_t d = 0; d < K; ++d)
              W[i * K + d] += coeff * k(m, d) * std::exp(G[m * K + d]);
            for (int64_t j = 0; j < V; ++j)
              U[i * V + j] += coeff * v(m, j);
          }
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < V; ++j) {
            double ws = 0;
            for (int64_t d = 0; d < K; ++d)
              ws += W[i * K + d] * p.stateAt(b, h, d, j);
            Vn[i * V + j] = U[i * V + j] - ws;
          }

        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < V; ++j) {
            double sum = 0;
            for (int64_t d = 0; d < K; ++d)
              sum += q(i, d) * std::exp(G[i * K + d]) * p.stateAt(b, h, d, j);
            for (int64_t m = 0; m <= i; ++m)
              sum += aqk[i * n + m] * Vn[m * V + j];
            p.at(o, b, c0 + i, h, j, V) = sum;
          }

        const double *last = &G[(n - 1) * K];
        for (int64_t d = 0; d < K; ++d)
          for (int64_t j = 0; j < V; ++j) {
            double sum = std::exp(last[d]) * p.stateAt(b, h, d, j);
            for (int64_t m = 0; m < n; ++m)
              sum += k(m, d) * std::exp(last[d] - G[m * K + d]) * Vn[m * V + j];
            p.stateAt(b, h, d, j) = sum;
          }
      }
  storeKDA(p, o);
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  exitOnErr.setBanner("moe-reference: ");
  cl::HideUnrelatedOptions(referenceCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "moe-reference: naive fp64 references of moe ops on .npy files\n\n"
      "  moe-reference <subcommand> INPUT.npy... -o OUT.npy [options]\n");

  if (l2NormCmd)
    runL2Norm();
  else if (rmsNormCmd)
    runRMSNorm();
  else if (decayGateCmd)
    runDecayGate();
  else if (shortConvCmd)
    runShortConv();
  else if (crossEntropyCmd)
    runCrossEntropy();
  else if (embeddingCmd)
    runEmbedding();
  else if (kdaCmd)
    runKDA();
  else if (kdaChunkedCmd)
    runKDAChunked();
  else {
    errs() << "moe-reference: expected a subcommand (see --help)\n";
    return 1;
  }
  return 0;
}
