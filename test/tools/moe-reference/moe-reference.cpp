//===- moe-reference.cpp - Naive fp64 references for numerical tests ------===//
//
// Part of the moe-mlir project.
//
// Computes what compiled moe code must produce, from .npy inputs, with the
// plainest loops of ALGORITHMS.md in fp64: the norms, the decay gates, the
// short convolution, cross-entropy, embedding, and KDA both as the per-token
// recurrence (section 1.3) and as the chunked WY form (section 1.4), and
// the MoE FFN with its router and balancers (ROUTE_REF and QB_REF of section
// 4.5, with a MaxVio checker for the balance tests). It
// shares no code with the compiler; only the .npy reader comes from the
// project. Results are written as f32 (or f64 with --dtype=f64). Attention
// (mla_attention) is plain causal softmax attention, section 3.5. The
// attention-residual mix is MIX_REF of section 5.5; `linear`, `glu_ffn` and
// `cross_entropy` compose into the projections and the lm_head loss.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "moe/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
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
using namespace moe_reference;

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

static cl::SubCommand
    attnResCmd("attn_res",
               "attention-residual mix (MIX_REF, section 5.5): attn_res "
               "SRC0 [SRC1 ...] QUERY KEY_NORM -o Y [--eps=1e-5]; "
               "p = softmax_i(sum_d v_i,d rstd_i key_norm_d query_d), "
               "y = sum_i p_i v_i");
static cl::SubCommand addCmd("add", "element-wise sum of arrays of one shape "
                                    "(a block's plain sum, section 5.2): add A "
                                    "B [C ...] -o Y");
static cl::SubCommand
    linearCmd("linear", "projection y[..., n] = sum_d x[..., d] W[d, n]: "
                        "linear X W -o Y [--transpose-weight: W is [n, d]]");
static cl::SubCommand
    gluFFNCmd("glu_ffn", "dense gated FFN act(x Wg, x Wu) Wd (section 7.1): "
                         "glu_ffn X W_GATE W_UP W_DOWN -o Y "
                         "[--activation=swiglu|situ_glu]");
static cl::SubCommand
    moeFFNCmd("moe_ffn",
              "MoE FFN with sigmoid top-k routing and the balancer update "
              "(sections 4.1, 4.3, 4.5, 7.1): moe_ffn X W_ROUTER BIAS W_GATE "
              "W_UP W_DOWN [WS_GATE WS_UP WS_DOWN] -o Y --top-k=K "
              "--scaling=S [--load=L --next-bias=B]");
static cl::SubCommand
    qbBalanceCmd("qb-balance",
                 "repeated ROUTE_REF + QB_REF steps on one batch (section "
                 "4.5): qb-balance X W_ROUTER BIAS -o LOADS --top-k=K "
                 "--steps=S; writes the [S+1, E] loads, prints MaxVio");
static cl::SubCommand
    maxVioCmd("max-vio",
              "MaxVio = max(load) / mean(load) - 1 of each load row (section "
              "4.4): max-vio LOAD.npy... [--last-at-most=V] "
              "[--ratio-at-most=R]");

static cl::SubCommand mlaAttentionCmd(
    "mla_attention",
    "causal softmax attention with an optional sigmoid output gate "
    "(section 3.5): mla_attention Q K V [GATE] -o O [--lse=LSE] [--scale=S]");

static cl::SubCommandGroup allCmds(
    {&l2NormCmd, &rmsNormCmd, &decayGateCmd, &shortConvCmd, &crossEntropyCmd,
     &embeddingCmd, &kdaCmd, &kdaChunkedCmd, &moeFFNCmd, &qbBalanceCmd,
     &mlaAttentionCmd, &attnResCmd, &linearCmd, &gluFFNCmd, &addCmd});
static cl::SubCommandGroup gateCmds({&decayGateCmd, &kdaCmd, &kdaChunkedCmd});
static cl::SubCommandGroup kdaCmds({&kdaCmd, &kdaChunkedCmd});
static cl::SubCommandGroup scaleCmds({&kdaCmd, &kdaChunkedCmd,
                                      &mlaAttentionCmd});
static cl::SubCommandGroup epsCmds({&l2NormCmd, &rmsNormCmd, &attnResCmd});
static cl::SubCommandGroup ffnCmds({&moeFFNCmd, &gluFFNCmd});

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
                             cl::sub(scaleCmds), cl::cat(referenceCategory));
static cl::opt<std::string> initialStatePath(
    "initial-state", cl::desc("optional [B,H,K,V] initial state (default 0)"),
    cl::value_desc("path"), cl::sub(kdaCmds), cl::cat(referenceCategory));
static cl::opt<std::string> finalStatePath(
    "final-state", cl::desc("also write the [B,H,K,V] final state here"),
    cl::value_desc("path"), cl::sub(kdaCmds), cl::cat(referenceCategory));
static cl::opt<std::string>
    lsePath("lse", cl::desc("also write the [B,H,T] log-sum-exp here"),
            cl::value_desc("path"), cl::sub(mlaAttentionCmd),
            cl::cat(referenceCategory));
static cl::opt<int64_t> chunkSize("chunk", cl::init(64),
                                  cl::desc("chunk length C of kda-chunked"),
                                  cl::sub(kdaChunkedCmd),
                                  cl::cat(referenceCategory));

static cl::SubCommandGroup routingCmds({&moeFFNCmd, &qbBalanceCmd});
static cl::opt<int64_t> topK("top-k", cl::init(0),
                             cl::desc("experts per token (required)"),
                             cl::sub(routingCmds), cl::cat(referenceCategory));
static cl::opt<double> routedScaling("scaling", cl::init(1.0),
                                     cl::desc("routed scaling factor"),
                                     cl::sub(moeFFNCmd),
                                     cl::cat(referenceCategory));
static cl::opt<std::string> activationKind("activation", cl::init("swiglu"),
                                           cl::desc("swiglu or situ_glu"),
                                           cl::sub(ffnCmds),
                                           cl::cat(referenceCategory));
static cl::opt<double> gateBeta("gate-beta", cl::init(4.0),
                                cl::desc("SiTU gate beta"), cl::sub(ffnCmds),
                                cl::cat(referenceCategory));
static cl::opt<double> upBeta("up-beta", cl::init(0.0),
                              cl::desc("SiTU up-projection cap (0: none)"),
                              cl::sub(ffnCmds), cl::cat(referenceCategory));
static cl::opt<bool> transposeWeight("transpose-weight",
                                     cl::desc("the weight is [n, d]"),
                                     cl::sub(linearCmd),
                                     cl::cat(referenceCategory));
static cl::opt<std::string>
    balanceKind("balance", cl::init("exact"),
                cl::desc("exact (QB_REF), histogram or sign"),
                cl::sub(moeFFNCmd), cl::cat(referenceCategory));
static cl::opt<int64_t> histogramBins("bins", cl::init(512),
                                      cl::desc("bins of --balance=histogram"),
                                      cl::sub(moeFFNCmd),
                                      cl::cat(referenceCategory));
static cl::opt<double> signRate("rate", cl::init(1e-3),
                                cl::desc("step of --balance=sign"),
                                cl::sub(moeFFNCmd), cl::cat(referenceCategory));
static cl::opt<std::string> loadPath("load",
                                     cl::desc("also write the [E] i64 load"),
                                     cl::value_desc("path"), cl::sub(moeFFNCmd),
                                     cl::cat(referenceCategory));
static cl::opt<std::string>
    nextBiasPath("next-bias", cl::desc("also write the [E] next bias"),
                 cl::value_desc("path"), cl::sub(moeFFNCmd),
                 cl::cat(referenceCategory));
static cl::opt<std::string>
    indicesPath("indices", cl::desc("also write the [N, k] i64 indices"),
                cl::value_desc("path"), cl::sub(moeFFNCmd),
                cl::cat(referenceCategory));
static cl::opt<std::string>
    weightsPath("weights", cl::desc("also write the [N, k] routing weights"),
                cl::value_desc("path"), cl::sub(moeFFNCmd),
                cl::cat(referenceCategory));
static cl::opt<int64_t> qbSteps("steps", cl::init(1),
                                cl::desc("QB_REF steps of qb-balance"),
                                cl::sub(qbBalanceCmd),
                                cl::cat(referenceCategory));
static cl::list<std::string> loadPaths(cl::Positional, cl::OneOrMore,
                                       cl::desc("<load.npy>..."),
                                       cl::sub(maxVioCmd),
                                       cl::cat(referenceCategory));
static cl::opt<double>
    lastAtMost("last-at-most", cl::init(-1.0),
               cl::desc("fail unless the last MaxVio is <= this"),
               cl::sub(maxVioCmd), cl::cat(referenceCategory));
static cl::opt<double>
    ratioAtMost("ratio-at-most", cl::init(-1.0),
                cl::desc("fail unless last MaxVio <= this * first MaxVio"),
                cl::sub(maxVioCmd), cl::cat(referenceCategory));

//===----------------------------------------------------------------------===//
// Arrays
//===----------------------------------------------------------------------===//

static void store(StringRef path, const Tensor &tensor) {
  storeAs(path, tensor, outputDType);
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

/// MIX_REF (section 5.5), per token: `k_i = v_i / sqrt(mean(v_i^2) + eps)`,
/// `p = softmax_i(sum_d k_i,d rho_d w_d)`, `y = sum_i p_i v_i`.
static void runAttnRes() {
  if (inputPaths.size() < 3)
    exitOnErr(makeError("expected at least one source, the query and the "
                        "key norm, found " +
                        Twine(inputPaths.size()) + " input files"));
  size_t numSources = inputPaths.size() - 2;
  std::vector<Tensor> sources;
  for (size_t i = 0; i < numSources; ++i) {
    sources.push_back(load(inputPaths[i]));
    if (sources[i].shape != sources[0].shape)
      exitOnErr(makeError("source " + Twine(i) + ": expected shape " +
                          npy::formatShape(sources[0].shape) + ", found " +
                          npy::formatShape(sources[i].shape)));
  }
  Tensor w = load(inputPaths[numSources]),
         rho = load(inputPaths[numSources + 1]);
  int64_t width = sources[0].dim(-1);
  int64_t rows = sources[0].data.size() / std::max<int64_t>(width, 1);
  expectShape(w, "query", {width});
  expectShape(rho, "key norm", {width});
  double eps = epsilon.getNumOccurrences() ? epsilon : 1e-5;
  Tensor y = sources[0];
  std::vector<double> scores(numSources);
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < numSources; ++i) {
      const double *v = &sources[i].data[r * width];
      double sum = 0;
      for (int64_t c = 0; c < width; ++c)
        sum += v[c] * v[c];
      double rstd = 1.0 / std::sqrt(sum / width + eps);
      double score = 0;
      for (int64_t c = 0; c < width; ++c)
        score += v[c] * rstd * rho.data[c] * w.data[c];
      scores[i] = score;
    }
    double max = *std::max_element(scores.begin(), scores.end());
    double total = 0;
    for (double &score : scores) {
      score = std::exp(score - max);
      total += score;
    }
    for (int64_t c = 0; c < width; ++c) {
      double acc = 0;
      for (size_t i = 0; i < numSources; ++i)
        acc += scores[i] / total * sources[i].data[r * width + c];
      y.data[r * width + c] = acc;
    }
  }
  store(outputPath, y);
}

static void runAdd() {
  expectInputs(2, inputPaths.size());
  Tensor y = load(inputPaths[0]);
  for (size_t i = 1; i < inputPaths.size(); ++i) {
    Tensor x = load(inputPaths[i]);
    expectShape(x, "input " + std::to_string(i), y.shape);
    for (size_t j = 0; j < y.data.size(); ++j)
      y.data[j] += x.data[j];
  }
  store(outputPath, y);
}

/// `y[..., n] = sum_d x[..., d] W[d, n]` (W[n, d] with --transpose-weight).
static void runLinear() {
  expectInputs(2, 2);
  Tensor x = load(inputPaths[0]), w = load(inputPaths[1]);
  int64_t d = x.dim(-1), rows = x.data.size() / std::max<int64_t>(d, 1);
  expectShape(w, "weight",
              transposeWeight ? std::vector<int64_t>{-1, d}
                              : std::vector<int64_t>{d, -1});
  int64_t n = transposeWeight ? w.dim(0) : w.dim(1);
  Tensor y;
  y.shape = x.shape;
  y.shape.back() = n;
  y.data.assign(rows * n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < d; ++c)
        acc += x.data[r * d + c] *
               (transposeWeight ? w.data[j * d + c] : w.data[c * n + j]);
      y.data[r * n + j] = acc;
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
// MoE routing, balancing and FFN (sections 4.1-4.5 and 7.1)
//===----------------------------------------------------------------------===//

namespace {
/// ROUTE_REF (section 4.1) of N tokens over E experts, in fp64.
struct Routing {
  int64_t tokens = 0, experts = 0, k = 0;
  std::vector<double> scores;   // s = sigmoid(x W^T), [N, E]
  std::vector<int64_t> indices; // [N, k]: decreasing s + b, ties to lower j
  std::vector<double> weights;  // [N, k]: s / (sum s + 1e-20) * scaling
  std::vector<int64_t> load;    // [E]: token-slots per expert
  std::vector<double> cut;      // [N]: (k+1)-th largest s + b (k < E)
};
} // namespace

static int64_t requireTopK(int64_t experts) {
  if (topK < 1 || topK > experts)
    exitOnErr(makeError("--top-k must be in [1, " + Twine(experts) + "], got " +
                        Twine(topK)));
  return topK;
}

/// `sigmoid(x W^T)` for `x: [N, d]` and `W: [E, d]`.
static std::vector<double> routerScores(const Tensor &x, const Tensor &w) {
  expectShape(x, "input", {-1, -1});
  int64_t tokens = x.dim(0), d = x.dim(1);
  expectShape(w, "w_router", {-1, d});
  int64_t experts = w.dim(0);
  std::vector<double> s(tokens * experts);
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t j = 0; j < experts; ++j) {
      double logit = 0;
      for (int64_t c = 0; c < d; ++c)
        logit += x.data[n * d + c] * w.data[j * d + c];
      s[n * experts + j] = sigmoid(logit);
    }
  return s;
}

/// Ranks every token's experts by `s + bias` with a stable sort (equal
/// values keep the lower expert first) and keeps the first k.
static Routing route(std::vector<double> scores, int64_t experts,
                     const std::vector<double> &bias, int64_t k,
                     double scaling) {
  Routing r;
  r.experts = experts;
  r.k = k;
  r.tokens = scores.size() / experts;
  r.scores = std::move(scores);
  r.indices.resize(r.tokens * k);
  r.weights.resize(r.tokens * k);
  r.cut.assign(r.tokens, 0.0);
  r.load.assign(experts, 0);
  std::vector<int64_t> order(experts);
  for (int64_t n = 0; n < r.tokens; ++n) {
    const double *s = &r.scores[n * experts];
    for (int64_t j = 0; j < experts; ++j)
      order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return s[a] + bias[a] > s[b] + bias[b];
    });
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
      sum += s[order[i]];
    for (int64_t i = 0; i < k; ++i) {
      r.indices[n * k + i] = order[i];
      r.weights[n * k + i] = s[order[i]] / (sum + 1e-20) * scaling;
      ++r.load[order[i]];
    }
    if (k < experts)
      r.cut[n] = s[order[k]] + bias[order[k]];
  }
  return r;
}

/// `b - mean(b)`.
static std::vector<double> centred(std::vector<double> b) {
  double mean = 0;
  for (double v : b)
    mean += v;
  mean /= std::max<size_t>(b.size(), 1);
  for (double &v : b)
    v -= mean;
  return b;
}

/// The bias each expert would need to win each token: `r[j][n] = cut_n -
/// s[n, j]` (section 4.3).
static std::vector<std::vector<double>> neededBias(const Routing &r) {
  std::vector<std::vector<double>> needed(r.experts,
                                          std::vector<double>(r.tokens));
  for (int64_t n = 0; n < r.tokens; ++n)
    for (int64_t j = 0; j < r.experts; ++j)
      needed[j][n] = r.cut[n] - r.scores[n * r.experts + j];
  return needed;
}

/// QB_REF (section 4.5): per expert, the midpoint of the q-th and (q+1)-th
/// smallest r by a full sort, q = round(N k / E), clamped to [1, N]; then
/// centred. An empty batch keeps the centred current bias.
static std::vector<double> quantileBalanceExact(const Routing &r,
                                                const std::vector<double> &b) {
  if (r.tokens == 0)
    return centred(b);
  int64_t q = std::llround(static_cast<double>(r.tokens * r.k) / r.experts);
  int64_t lo = std::max<int64_t>(q, 1), hi = std::min<int64_t>(q + 1, r.tokens);
  std::vector<double> next(r.experts);
  std::vector<std::vector<double>> needed = neededBias(r);
  for (int64_t j = 0; j < r.experts; ++j) {
    std::sort(needed[j].begin(), needed[j].end());
    next[j] = 0.5 * (needed[j][lo - 1] + needed[j][hi - 1]);
  }
  return centred(next);
}

/// The histogram form of QB (section 4.3): per expert, counts of r over
/// `bins` uniform bins of [min b - 1, max b + 1]; the bin where the running
/// count reaches N k / E, interpolated linearly; then centred.
static std::vector<double>
quantileBalanceHistogram(const Routing &r, const std::vector<double> &b,
                         int64_t bins) {
  if (r.tokens == 0)
    return centred(b);
  double low = *std::min_element(b.begin(), b.end()) - 1.0;
  double high = *std::max_element(b.begin(), b.end()) + 1.0;
  double width = (high - low) / bins;
  double target = static_cast<double>(r.tokens * r.k) / r.experts;
  std::vector<double> next(r.experts);
  std::vector<std::vector<double>> needed = neededBias(r);
  for (int64_t j = 0; j < r.experts; ++j) {
    std::vector<int64_t> counts(bins, 0);
    for (double v : needed[j]) {
      double position = std::floor((v - low) / width);
      ++counts[std::clamp<int64_t>(static_cast<int64_t>(position), 0,
                                   bins - 1)];
    }
    int64_t below = 0, m = 0;
    while (m < bins - 1 && static_cast<double>(below + counts[m]) < target)
      below += counts[m++];
    next[j] = low + (m + (target - below) / counts[m]) * width;
  }
  return centred(next);
}

/// DeepSeek-V3's sign update (section 4.2): `b + rate * sign(mean - load)`.
static std::vector<double> signBiasBalance(const Routing &r,
                                           const std::vector<double> &b) {
  double mean = static_cast<double>(r.tokens * r.k) / r.experts;
  std::vector<double> next(b);
  for (int64_t j = 0; j < r.experts; ++j) {
    double gap = mean - static_cast<double>(r.load[j]);
    next[j] += signRate * ((gap > 0) - (gap < 0));
  }
  return next;
}

/// `act(x Wg) * (x Wu)` then `. Wd` for one token row `x: [d]`, with
/// `Wg, Wu: [d, F]` and `Wd: [F, d]` starting at the given offsets.
static void gatedFFN(const double *x, int64_t d, int64_t width,
                     const double *wg, const double *wu, const double *wd,
                     double factor, double *y) {
  bool situ = activationKind == "situ_glu";
  for (int64_t f = 0; f < width; ++f) {
    double a = 0, u = 0;
    for (int64_t c = 0; c < d; ++c) {
      a += x[c] * wg[c * width + f];
      u += x[c] * wu[c * width + f];
    }
    double h;
    if (situ) {
      double capped = upBeta > 0 ? upBeta * std::tanh(u / upBeta) : u;
      h = gateBeta * std::tanh(a / gateBeta) * sigmoid(a) * capped;
    } else {
      h = a * sigmoid(a) * u;
    }
    for (int64_t c = 0; c < d; ++c)
      y[c] += factor * h * wd[f * d + c];
  }
}

static void storeIntegers(StringRef path, std::vector<int64_t> shape,
                          const std::vector<int64_t> &values) {
  exitOnErr(
      npy::writeFile(path, npy::Array::fromI64(std::move(shape), values)));
}

/// Dense gated FFN `act(x Wg, x Wu) Wd` on every row of `x: [..., d]`.
static void runGLUFFN() {
  expectInputs(4, 4);
  if (activationKind != "swiglu" && activationKind != "situ_glu")
    exitOnErr(makeError("--activation must be swiglu or situ_glu"));
  Tensor x = load(inputPaths[0]), wg = load(inputPaths[1]),
         wu = load(inputPaths[2]), wd = load(inputPaths[3]);
  int64_t d = x.dim(-1), rows = x.data.size() / std::max<int64_t>(d, 1);
  expectShape(wg, "w_gate", {d, -1});
  int64_t width = wg.dim(1);
  expectShape(wu, "w_up", {d, width});
  expectShape(wd, "w_down", {width, d});
  Tensor y{x.shape, std::vector<double>(x.data.size(), 0.0)};
  for (int64_t r = 0; r < rows; ++r)
    gatedFFN(&x.data[r * d], d, width, wg.data.data(), wu.data.data(),
             wd.data.data(), 1.0, &y.data[r * d]);
  store(outputPath, y);
}

/// MoE out = sum_{j in sel} w_j Expert_j(x) + Shared(x) (section 7.1), with
/// the load and the balancer's next bias.
static void runMoEFFN() {
  if (inputPaths.size() != 6 && inputPaths.size() != 9)
    exitOnErr(makeError("expected 6 input files (or 9 with a shared "
                        "expert), found " +
                        Twine(inputPaths.size())));
  if (activationKind != "swiglu" && activationKind != "situ_glu")
    exitOnErr(makeError("--activation must be swiglu or situ_glu"));
  Tensor x = load(inputPaths[0]), wr = load(inputPaths[1]);
  Tensor bias = load(inputPaths[2]);
  Tensor wg = load(inputPaths[3]), wu = load(inputPaths[4]),
         wd = load(inputPaths[5]);
  // [..., d] is routed as [N, d]; the result keeps the input's shape.
  if (x.rank() < 2)
    expectShape(x, "input", {-1, -1});
  std::vector<int64_t> inputShape = x.shape;
  int64_t d = x.dim(-1), tokens = x.data.size() / std::max<int64_t>(d, 1);
  x.shape = {tokens, d};
  expectShape(wr, "w_router", {-1, d});
  int64_t experts = wr.dim(0);
  int64_t k = requireTopK(experts);
  expectShape(bias, "bias", {experts});
  expectShape(wg, "w_gate", {experts, d, -1});
  int64_t width = wg.dim(2);
  expectShape(wu, "w_up", {experts, d, width});
  expectShape(wd, "w_down", {experts, width, d});

  Routing r = route(routerScores(x, wr), experts, bias.data, k, routedScaling);
  Tensor y{{tokens, d}, std::vector<double>(tokens * d, 0.0)};
  for (int64_t n = 0; n < tokens; ++n)
    for (int64_t i = 0; i < k; ++i) {
      int64_t j = r.indices[n * k + i];
      gatedFFN(&x.data[n * d], d, width, &wg.data[j * d * width],
               &wu.data[j * d * width], &wd.data[j * width * d],
               r.weights[n * k + i], &y.data[n * d]);
    }
  if (inputPaths.size() == 9) {
    Tensor sg = load(inputPaths[6]), su = load(inputPaths[7]),
           sd = load(inputPaths[8]);
    expectShape(sg, "w_shared_gate", {d, -1});
    int64_t sharedWidth = sg.dim(1);
    expectShape(su, "w_shared_up", {d, sharedWidth});
    expectShape(sd, "w_shared_down", {sharedWidth, d});
    for (int64_t n = 0; n < tokens; ++n)
      gatedFFN(&x.data[n * d], d, sharedWidth, sg.data.data(), su.data.data(),
               sd.data.data(), 1.0, &y.data[n * d]);
  }
  y.shape = inputShape;
  store(outputPath, y);

  std::vector<double> next;
  if (balanceKind == "exact" || balanceKind == "histogram") {
    if (k == experts)
      exitOnErr(makeError("quantile balancing needs --top-k < experts"));
    next = balanceKind == "exact"
               ? quantileBalanceExact(r, bias.data)
               : quantileBalanceHistogram(r, bias.data, histogramBins);
  } else if (balanceKind == "sign") {
    next = signBiasBalance(r, bias.data);
  } else {
    exitOnErr(makeError("--balance must be exact, histogram or sign"));
  }
  if (!loadPath.empty())
    storeIntegers(loadPath, {experts}, r.load);
  if (!nextBiasPath.empty())
    store(nextBiasPath, Tensor{{experts}, next});
  if (!indicesPath.empty())
    storeIntegers(indicesPath, {tokens, k}, r.indices);
  if (!weightsPath.empty())
    store(weightsPath, Tensor{{tokens, k}, r.weights});
}

/// `max(load) / mean(load) - 1` (section 4.4).
static double maxViolation(ArrayRef<int64_t> load) {
  double sum = 0, max = 0;
  for (int64_t v : load) {
    sum += v;
    max = std::max<double>(max, v);
  }
  return sum > 0 ? max / (sum / load.size()) - 1.0 : 0.0;
}

/// Section 4.5 test (1) on the reference alone: ROUTE_REF, then QB_REF, on
/// the same batch, `--steps` times.
static void runQBBalance() {
  expectInputs(3, 3);
  Tensor x = load(inputPaths[0]), wr = load(inputPaths[1]);
  Tensor bias = load(inputPaths[2]);
  std::vector<double> scores = routerScores(x, wr);
  int64_t experts = wr.dim(0);
  int64_t k = requireTopK(experts);
  if (k == experts)
    exitOnErr(makeError("quantile balancing needs --top-k < experts"));
  expectShape(bias, "bias", {experts});
  std::vector<double> b = bias.data;
  std::vector<int64_t> loads;
  for (int64_t step = 0; step <= qbSteps; ++step) {
    Routing r = route(scores, experts, b, k, 1.0);
    outs() << "step " << step << ": MaxVio "
           << format("%.4f", maxViolation(r.load)) << "\n";
    loads.insert(loads.end(), r.load.begin(), r.load.end());
    b = quantileBalanceExact(r, b);
  }
  storeIntegers(outputPath, {qbSteps + 1, experts}, loads);
}

/// Prints the MaxVio of every row of every load file, in order, and checks
/// the requested bounds on the last one.
static int runMaxVio() {
  std::vector<double> values;
  for (const std::string &path : loadPaths) {
    npy::Array array = exitOnErr(npy::readFile(path));
    if (npy::isFloat(array.dtype) || array.getRank() < 1 ||
        array.getRank() > 2 || array.shape.back() < 1)
      exitOnErr(makeError(path + ": expected an [E] or [S, E] integer array"));
    std::vector<int64_t> all = array.toI64();
    int64_t experts = array.shape.back();
    for (size_t row = 0; row * experts < all.size(); ++row) {
      double v = maxViolation(ArrayRef(all).slice(row * experts, experts));
      outs() << "MaxVio[" << values.size() << "] " << format("%.4f", v) << "\n";
      values.push_back(v);
    }
  }
  if (lastAtMost >= 0 && values.back() > lastAtMost) {
    errs() << "moe-reference: last MaxVio " << format("%.4f", values.back())
           << " exceeds --last-at-most=" << format("%g", lastAtMost.getValue())
           << "\n";
    return 1;
  }
  if (ratioAtMost >= 0 && values.back() > ratioAtMost * values.front()) {
    errs() << "moe-reference: last MaxVio " << format("%.4f", values.back())
           << " exceeds " << format("%g", ratioAtMost.getValue())
           << " x first MaxVio " << format("%.4f", values.front()) << "\n";
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// MLA attention
//===----------------------------------------------------------------------===//

/// Section 3.5 attention, one query row at a time, for `q, k: [B,T,H,D]`,
/// `v: [B,T,H,Dv]` and the optional `gate: [B,T,H,Dv]`:
///   s_u = scale q_t . k_u for u <= t ; p = softmax(s) ; o_t = sum_u p_u v_u
///   output = o sigmoid(gate) ; lse[b,h,t] = log sum_u exp(s_u)
static void runMLAAttention() {
  expectInputs(3, 4);
  Tensor q = load(inputPaths[0]), k = load(inputPaths[1]),
         v = load(inputPaths[2]);
  expectShape(q, "q", {-1, -1, -1, -1});
  int64_t batch = q.dim(0), length = q.dim(1), heads = q.dim(2),
          qkDim = q.dim(3);
  expectShape(k, "k", q.shape);
  expectShape(v, "v", {batch, length, heads, -1});
  int64_t valueDim = v.dim(3);
  bool gated = inputPaths.size() == 4;
  Tensor gate;
  if (gated) {
    gate = load(inputPaths[3]);
    expectShape(gate, "gate", v.shape);
  }
  double lambda = scale > 0 ? scale : 1.0 / std::sqrt(double(qkDim));
  auto row = [&](const Tensor &x, int64_t b, int64_t t, int64_t h) {
    int64_t width = x.dim(3);
    return &x.data[((b * length + t) * heads + h) * width];
  };

  Tensor o{v.shape, std::vector<double>(v.data.size())};
  Tensor lse{{batch, heads, length},
             std::vector<double>(batch * heads * length)};
  std::vector<double> p(length);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < length; ++t) {
        const double *qt = row(q, b, t, h);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t u = 0; u <= t; ++u) {
          const double *ku = row(k, b, u, h);
          double dot = 0;
          for (int64_t d = 0; d < qkDim; ++d)
            dot += qt[d] * ku[d];
          p[u] = lambda * dot;
          max = std::max(max, p[u]);
        }
        double sum = 0;
        for (int64_t u = 0; u <= t; ++u) {
          p[u] = std::exp(p[u] - max);
          sum += p[u];
        }
        double *ot = &o.data[((b * length + t) * heads + h) * valueDim];
        for (int64_t j = 0; j < valueDim; ++j) {
          double acc = 0;
          for (int64_t u = 0; u <= t; ++u)
            acc += p[u] * row(v, b, u, h)[j];
          ot[j] = acc / sum;
          if (gated)
            ot[j] *= sigmoid(row(gate, b, t, h)[j]);
        }
        lse.data[(b * heads + h) * length + t] = max + std::log(sum);
      }
  store(outputPath, o);
  if (!lsePath.empty())
    store(lsePath, lse);
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

  // Subcommands defined in other files of this tool register themselves.
  for (const ReferenceCommand &command : referenceCommands())
    if (*command.subcommand)
      return command.run();

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
  else if (moeFFNCmd)
    runMoEFFN();
  else if (qbBalanceCmd)
    runQBBalance();
  else if (maxVioCmd)
    return runMaxVio();
  else if (mlaAttentionCmd)
    runMLAAttention();
  else if (attnResCmd)
    runAttnRes();
  else if (linearCmd)
    runLinear();
  else if (addCmd)
    runAdd();
  else if (gluFFNCmd)
    runGLUFFN();
  else {
    errs() << "moe-reference: expected a subcommand (see --help)\n";
    return 1;
  }
  return 0;
}
