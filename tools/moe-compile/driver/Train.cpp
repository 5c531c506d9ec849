//===- Train.cpp - The training loop of executables built by moe-compile --===//
//
// Part of the moe-mlir project.
//
// The training program (docs/Training.md, "The executable"): fp32 master
// parameters and AdamW moments live here; each step draws a batch of random
// windows of the byte corpus, computes the learning rate of the schedule and
// the bias corrections (in double), calls the compiled
// @moe_model_train_step, keeps the parameters and moments it returns, and
// prints one line with the loss, learning rate, gradient norm, worst MoE
// MaxVio and throughput. --eval-every runs the forward pass on held-out
// batches. Everything is deterministic: the same seed, data and flags give
// the same trajectory, bit for bit, on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace moe_driver;

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

enum class Schedule { WSD, Cosine, Constant };

struct TrainOptions {
  int64_t steps = 300;
  double lr = 3e-3, minLr = 3e-4;
  int64_t warmup = 30;
  Schedule schedule = Schedule::WSD;
  double decayFraction = 0.2;
  double weightDecay = 0.1, clip = 1.0;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  int64_t batch = -1, length = -1;
  uint64_t seed = 0;
  std::string dataPath;
  int64_t logEvery = 1, evalEvery = 0, evalBatches = 4;
  std::string dumpParams;
  // Which options were given (for the checks that relate two of them).
  bool minLrGiven = false, warmupGiven = false;
};

const char *scheduleName(Schedule schedule) {
  switch (schedule) {
  case Schedule::WSD:
    return "wsd";
  case Schedule::Cosine:
    return "cosine";
  case Schedule::Constant:
    return "constant";
  }
  return "?";
}

void printTrainHelp(const char *argv0, const Manifest &manifest) {
  TrainOptions d;
  std::printf(
      "USAGE: %s [options]\n\n"
      "Trains the model '%s' (compiled by moe-compile) with AdamW and prints\n"
      "one line per step:\n"
      "  step <n> loss <v> lr <v> grad-norm <v> max-vio <v> (layer <i>) "
      "tok/s <v>\n"
      "loss is the step's mean next-token cross-entropy (nats) before its\n"
      "update, grad-norm the global gradient norm before clipping, max-vio\n"
      "the largest MaxVio of the MoE layers (max expert load / mean load - 1)\n"
      "and the layer that has it, tok/s the training throughput since the\n"
      "last line. With --eval-every the line ends with 'val-loss <v>', the\n"
      "mean loss of the forward pass on --eval-batches held-out batches\n"
      "(the same batches at every evaluation). At the end it prints where\n"
      "the time went. Same seed, data and flags: the same numbers, bit for\n"
      "bit.\n\n"
      "Data: bytes (token id = byte value). Without --data, the embedded\n"
      "corpus: the fortune databases of Debian's fortunes package (2.5 MB of\n"
      "English, BSD licence). The data are cut into 20 parts of blocks of\n"
      "min(4096, size/20) bytes; every 20th block (5%%) is held out for\n"
      "validation, the others are the training text. Each row of a batch is\n"
      "a window of seq-len+1 bytes at a random position of the training text\n"
      "(inputs: its first seq-len bytes, labels: its last seq-len bytes),\n"
      "drawn by a generator seeded from --seed. --seed also initialises the\n"
      "weights.\n\n"
      "Learning rate of step t (1..steps): linear warm-up lr*t/warmup for\n"
      "t <= warmup, then\n"
      "  constant  lr\n"
      "  cosine    min-lr + (lr-min-lr)(1 + cos(pi p))/2, p = (t-warmup) / "
      "(steps-warmup)\n"
      "  wsd       lr, then in the last --decay-frac of the steps a linear "
      "decay\n"
      "            to min-lr (warm-up, stable, decay)\n\n"
      "OPTIONS (--name=value or --name value):\n"
      "  --steps=N          optimizer steps (default %ld)\n"
      "  --lr=X             peak learning rate, > 0 (default %g)\n"
      "  --warmup=N         warm-up steps, 0..steps (default steps/10)\n"
      "  --schedule=S       wsd, cosine or constant (default %s)\n"
      "  --min-lr=X         final learning rate of wsd and cosine, 0..lr\n"
      "                     (default lr/10)\n"
      "  --decay-frac=X     wsd: fraction of the steps that decay, (0, 1]\n"
      "                     (default %g)\n"
      "  --weight-decay=X   AdamW decoupled weight decay, >= 0 (default %g;\n"
      "                     not applied to norms, biases, A_log, dt_bias, "
      "...)\n"
      "  --clip=X           global gradient-norm clipping threshold; 0 "
      "turns\n"
      "                     clipping off (default %g)\n"
      "  --beta1=X          AdamW beta1, [0, 1) (default %g)\n"
      "  --beta2=X          AdamW beta2, [0, 1) (default %g)\n"
      "  --eps=X            AdamW epsilon, > 0 (default %g)\n"
      "  --batch=B          sequences per batch (default 4)\n"
      "  --seq-len=T        tokens per sequence (default 128)\n"
      "  --seed=N           seed of the weights and of the batches (default "
      "0)\n"
      "  --data=FILE        train on the bytes of FILE instead of the "
      "embedded\n"
      "                     corpus\n"
      "  --log-every=N      print every N-th step, and the first and last\n"
      "                     (default %ld)\n"
      "  --eval-every=N     measure val-loss every N steps and after the "
      "last;\n"
      "                     0: never (default %ld)\n"
      "  --eval-batches=N   held-out batches per evaluation (default %ld)\n"
      "  --dump-params=DIR  after training, write every parameter as\n"
      "                     DIR/<name>.npy (f32)\n"
      "  --help             print this help\n\n"
      "Model: vocab_size %ld, hidden_size %ld, %zu parameter tensors, %ld "
      "scalars, %ld metrics. Target: %s.\n",
      argv0, manifest.name.c_str(), static_cast<long>(d.steps), d.lr,
      scheduleName(d.schedule), d.decayFraction, d.weightDecay, d.clip, d.beta1,
      d.beta2, d.eps, static_cast<long>(d.logEvery),
      static_cast<long>(d.evalEvery), static_cast<long>(d.evalBatches),
      static_cast<long>(manifest.vocab), static_cast<long>(manifest.hidden),
      manifest.params.size(), static_cast<long>(manifest.scalars),
      static_cast<long>(manifest.numMetrics), kTargetName);
}

/// Parses a finite decimal or scientific number (the whole text).
bool parseNumber(const std::string &text, double &value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return false;
  char *end = nullptr;
  errno = 0;
  double parsed = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(parsed))
    return false;
  value = parsed;
  return true;
}

TrainOptions parseTrainOptions(int argc, char **argv,
                               const Manifest &manifest) {
  TrainOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      printTrainHelp(argv[0], manifest);
      std::exit(0);
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
      fail("unexpected argument '" + arg +
           "' (options look like --name=value; see --help)");
    size_t equals = arg.find('=');
    std::string key = arg.substr(0, equals);
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else {
      if (i + 1 >= argc)
        fail("option " + key + " expects a value (see --help)");
      value = argv[++i];
    }
    if (value.empty())
      fail("option " + key + " expects a value, got an empty one");
    auto integer = [&](int64_t &out, int64_t min) {
      if (!parseInteger(value, out, min))
        fail("option " + key + " expects an integer >= " + std::to_string(min) +
             ", got '" + value + "'");
    };
    // A finite number in [min, max] (open ends when the flags say so).
    auto number = [&](double &out, double min, bool minOpen, double max,
                      bool maxOpen, const char *range) {
      double parsed = 0;
      if (!parseNumber(value, parsed) || parsed < min ||
          (minOpen && parsed == min) || parsed > max ||
          (maxOpen && parsed == max))
        fail("option " + key + " expects a number " + range + ", got '" +
             value + "'");
      out = parsed;
    };
    const double inf = HUGE_VAL;
    if (key == "--steps") {
      integer(options.steps, 1);
    } else if (key == "--lr") {
      number(options.lr, 0, true, inf, false, "> 0");
    } else if (key == "--min-lr") {
      number(options.minLr, 0, false, inf, false, ">= 0");
      options.minLrGiven = true;
    } else if (key == "--warmup") {
      integer(options.warmup, 0);
      options.warmupGiven = true;
    } else if (key == "--schedule") {
      if (value == "wsd")
        options.schedule = Schedule::WSD;
      else if (value == "cosine")
        options.schedule = Schedule::Cosine;
      else if (value == "constant")
        options.schedule = Schedule::Constant;
      else
        fail("option --schedule expects wsd, cosine or constant, got '" +
             value + "'");
    } else if (key == "--decay-frac") {
      number(options.decayFraction, 0, true, 1, false, "in (0, 1]");
    } else if (key == "--weight-decay") {
      number(options.weightDecay, 0, false, inf, false, ">= 0");
    } else if (key == "--clip") {
      number(options.clip, 0, false, inf, false, ">= 0 (0: no clipping)");
    } else if (key == "--beta1") {
      number(options.beta1, 0, false, 1, true, "in [0, 1)");
    } else if (key == "--beta2") {
      number(options.beta2, 0, false, 1, true, "in [0, 1)");
    } else if (key == "--eps") {
      number(options.eps, 0, true, inf, false, "> 0");
    } else if (key == "--batch") {
      integer(options.batch, 1);
    } else if (key == "--seq-len") {
      integer(options.length, 1);
    } else if (key == "--seed") {
      int64_t seed = 0;
      integer(seed, 0);
      options.seed = static_cast<uint64_t>(seed);
    } else if (key == "--data") {
      options.dataPath = value;
    } else if (key == "--log-every") {
      integer(options.logEvery, 1);
    } else if (key == "--eval-every") {
      integer(options.evalEvery, 0);
    } else if (key == "--eval-batches") {
      integer(options.evalBatches, 1);
    } else if (key == "--dump-params") {
      options.dumpParams = value;
    } else {
      fail("unknown option '" + key + "' (see --help)");
    }
  }
  if (!options.warmupGiven)
    options.warmup = options.steps / 10;
  if (!options.minLrGiven)
    options.minLr = options.lr / 10;
  if (options.minLr > options.lr)
    fail("--min-lr (" + std::to_string(options.minLr) +
         ") must not exceed --lr (" + std::to_string(options.lr) + ")");
  if (options.warmup > options.steps)
    fail("--warmup (" + std::to_string(options.warmup) +
         ") must not exceed --steps (" + std::to_string(options.steps) + ")");
  // A static batch or sequence size of the model wins over the defaults and
  // must agree with an explicit option.
  auto resolve = [](int64_t &size, int64_t fixed, int64_t fallback,
                    const char *what) {
    if (fixed >= 0 && size >= 0 && size != fixed)
      fail(std::string("the model was compiled for ") + what + " " +
           std::to_string(fixed) + ", got " + std::to_string(size));
    if (size < 0)
      size = fixed >= 0 ? fixed : fallback;
  };
  resolve(options.batch, manifest.batch, 4, "--batch");
  resolve(options.length, manifest.length, 128, "--seq-len");
  if (options.batch > (int64_t(1) << 20) ||
      options.length > (int64_t(1) << 24) ||
      options.batch * options.length > (int64_t(1) << 28))
    fail("--batch x --seq-len (" + std::to_string(options.batch) + " x " +
         std::to_string(options.length) + ") is too large");
  return options;
}

/// The learning rate of step t in 1..steps.
double learningRate(const TrainOptions &o, int64_t t) {
  if (t <= o.warmup)
    return o.lr * static_cast<double>(t) / static_cast<double>(o.warmup);
  switch (o.schedule) {
  case Schedule::Constant:
    return o.lr;
  case Schedule::Cosine: {
    double span = static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
    double p = static_cast<double>(t - o.warmup) / span;
    return o.minLr + (o.lr - o.minLr) * 0.5 * (1 + std::cos(M_PI * p));
  }
  case Schedule::WSD: {
    // The decay phase: the last ceil(decayFraction * steps) steps, not
    // reaching into the warm-up; its last step runs at min-lr.
    int64_t decay = static_cast<int64_t>(
        std::ceil(o.decayFraction * static_cast<double>(o.steps)));
    decay = std::min(decay, o.steps - o.warmup);
    int64_t start = o.steps - decay;
    if (t <= start || decay == 0)
      return o.lr;
    double p = static_cast<double>(t - start) / static_cast<double>(decay);
    return o.lr + (o.minLr - o.lr) * p;
  }
  }
  return o.lr;
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

/// The training and validation bytes.
struct Corpus {
  std::string source;
  std::vector<unsigned char> train, validation;
};

std::vector<unsigned char> readDataFile(const std::string &path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    fail("cannot open data file '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    fail("data file '" + path + "' is a directory");
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    fail("cannot open data file '" + path + "': " + std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char buffer[1 << 16];
  size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + count);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed)
    fail("cannot read data file '" + path + "'");
  return bytes;
}

/// Splits `bytes` into blocks of min(4096, size/20) bytes; every 20th
/// block goes to validation.
Corpus splitCorpus(std::string source, const unsigned char *bytes,
                   size_t size) {
  Corpus corpus;
  corpus.source = std::move(source);
  size_t block = std::min<size_t>(4096, size / 20);
  if (block == 0) {
    corpus.train.assign(bytes, bytes + size);
    return corpus;
  }
  for (size_t begin = 0, index = 0; begin < size; begin += block, ++index) {
    size_t end = std::min(size, begin + block);
    auto &part = index % 20 == 19 ? corpus.validation : corpus.train;
    part.insert(part.end(), bytes + begin, bytes + end);
  }
  return corpus;
}

/// Fills one batch of inputs and next-byte labels with `batch` random
/// windows of `text`.
void drawBatch(const std::vector<unsigned char> &text, int64_t batch,
               int64_t length, Random &random, int32_t *inputs,
               int32_t *labels) {
  uint64_t positions = text.size() - static_cast<size_t>(length);
  for (int64_t b = 0; b < batch; ++b) {
    size_t start = random.below(positions);
    for (int64_t i = 0; i < length; ++i) {
      inputs[b * length + i] = text[start + i];
      labels[b * length + i] = text[start + i + 1];
    }
  }
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

/// A buffer the compiled code reads, freed at scope exit.
template <typename T>
class Buffer {
public:
  explicit Buffer(size_t count)
      : count(count),
        data(static_cast<T *>(allocateBuffer(count * sizeof(T)))) {
    std::memset(data, 0, count * sizeof(T));
  }
  ~Buffer() { freeBuffer(data); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  T *get() const { return data; }
  size_t size() const { return count; }
  MemRef<T, 1> vector() const {
    return {data, data, 0, {static_cast<int64_t>(count)}, {1}};
  }
  MemRef<T, 2> matrix(int64_t rows, int64_t cols) const {
    return {data, data, 0, {rows, cols}, {cols, 1}};
  }

private:
  size_t count;
  T *data;
};

/// A vector of fp32 state (parameters, moments) that the train step reads
/// and returns anew: each step's results become the state (no copy), and
/// the previous buffers are freed.
class StateVector {
public:
  StateVector(size_t count, const char *what) : count(count), what(what) {
    auto *data = static_cast<float *>(allocateBuffer(count * sizeof(float)));
    std::memset(data, 0, count * sizeof(float));
    ref = {data, data, 0, {static_cast<int64_t>(count)}, {1}};
  }
  ~StateVector() { releaseResult(ref.allocated); }
  StateVector(const StateVector &) = delete;
  StateVector &operator=(const StateVector &) = delete;
  float *get() const { return ref.aligned + ref.offset; }
  MemRef<float, 1> vector() const { return ref; }
  /// Takes the train step's new value of this vector.
  void adopt(const MemRef<float, 1> &result) {
    if (!result.aligned || result.sizes[0] != static_cast<int64_t>(count) ||
        result.strides[0] != 1)
      fail(std::string("the train step returned ") + what + " of " +
           std::to_string(result.aligned ? result.sizes[0] : 0) +
           " values (stride " +
           std::to_string(result.aligned ? result.strides[0] : 0) +
           "), expected " + std::to_string(count) +
           " contiguous ones (the executable is damaged)");
    if (result.allocated != ref.allocated)
      releaseResult(ref.allocated);
    ref = result;
  }

private:
  MemRef<float, 1> ref;
  size_t count;
  const char *what;
};

/// Copies the returned metrics into `into` and frees them.
void takeMetrics(MemRef<float, 1> &result, std::vector<float> &into) {
  if (!result.aligned || result.sizes[0] != static_cast<int64_t>(into.size()))
    fail("the train step returned " +
         std::to_string(result.aligned ? result.sizes[0] : 0) +
         " metrics, expected " + std::to_string(into.size()) +
         " (the executable is damaged)");
  for (size_t i = 0; i < into.size(); ++i)
    into[i] = result.aligned[result.offset +
                             static_cast<int64_t>(i) * result.strides[0]];
  releaseResult(result.allocated);
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

} // namespace

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

int moe_driver::runTraining(int argc, char **argv, const Manifest &manifest) {
  auto programStart = std::chrono::steady_clock::now();
  TrainOptions options = parseTrainOptions(argc, argv, manifest);
  checkDevice("while loading the kernels");
  const int64_t batch = options.batch, length = options.length;

  // Data.
  auto dataStart = std::chrono::steady_clock::now();
  if (manifest.vocab < 256)
    fail("the training data are bytes (ids 0-255), but the model's "
         "vocab_size is " +
         std::to_string(manifest.vocab));
  Corpus corpus;
  if (options.dataPath.empty()) {
    ByteSpan bytes = embeddedCorpus();
    corpus = splitCorpus("the embedded corpus (Debian fortunes)", bytes.data,
                         bytes.size);
  } else {
    std::vector<unsigned char> bytes = readDataFile(options.dataPath);
    corpus = splitCorpus("data file '" + options.dataPath + "'", bytes.data(),
                         bytes.size());
  }
  size_t window = static_cast<size_t>(length) + 1;
  if (corpus.train.size() < window)
    fail(corpus.source + " holds " +
         std::to_string(corpus.train.size() + corpus.validation.size()) +
         " bytes, of which " + std::to_string(corpus.train.size()) +
         " are for training: too few for one window of seq-len + 1 = " +
         std::to_string(window) + " bytes");
  if (options.evalEvery > 0 && corpus.validation.size() < window)
    fail(corpus.source + " holds " + std::to_string(corpus.validation.size()) +
         " held-out bytes (every 20th block): too few for one window of "
         "seq-len + 1 = " +
         std::to_string(window) +
         " bytes; use more data or drop "
         "--eval-every");
  double dataSeconds = seconds(dataStart);

  // Metrics: the gradient norm and each MoE layer's MaxVio.
  int64_t gradNormIndex = -1;
  std::vector<std::pair<int64_t, std::string>> maxVio;
  for (const Metric &metric : manifest.metrics) {
    if (metric.name == "grad_norm" && metric.count == 1)
      gradNormIndex = metric.offset;
    const std::string suffix = ".max_vio";
    if (metric.count == 1 && metric.name.size() > suffix.size() &&
        metric.name.compare(metric.name.size() - suffix.size(), suffix.size(),
                            suffix) == 0)
      maxVio.emplace_back(
          metric.offset,
          metric.name.substr(0, metric.name.size() - suffix.size()));
  }
  if (gradNormIndex < 0)
    fail("the model's train step names no 'grad_norm' metric (the "
         "executable is damaged)");

  // State: parameters and AdamW moments (fp32), the batch, the hyper-
  // parameters.
  auto initStart = std::chrono::steady_clock::now();
  size_t scalars = static_cast<size_t>(manifest.scalars);
  StateVector params(scalars, "parameters"), m(scalars, "first moments"),
      v(scalars, "second moments");
  Buffer<float> hyper(8);
  initialiseParams(manifest, options.seed, params.get());
  size_t tokens = static_cast<size_t>(batch * length);
  Buffer<int32_t> inputs(tokens), labels(tokens);
  double initSeconds = seconds(initStart);

  std::printf("training %s: %ld parameters, batch %ld x %ld tokens, %ld "
              "steps, %s schedule, lr %g (min %g, warm-up %ld), weight decay "
              "%g, clip %g, seed %lu, target %s\n"
              "data: %s, %zu training and %zu held-out bytes\n",
              manifest.name.c_str(), static_cast<long>(manifest.scalars),
              static_cast<long>(batch), static_cast<long>(length),
              static_cast<long>(options.steps), scheduleName(options.schedule),
              options.lr, options.minLr, static_cast<long>(options.warmup),
              options.weightDecay, options.clip,
              static_cast<unsigned long>(options.seed), kTargetName,
              corpus.source.c_str(), corpus.train.size(),
              corpus.validation.size());
  std::fflush(stdout);

  // The batches: one stream for training, a fixed set for validation.
  Random trainRandom(options.seed * 0x9e3779b97f4a7c15ull ^
                     hashName("moe-driver/train-batches"));
  const uint64_t validationSeed =
      options.seed * 0x9e3779b97f4a7c15ull ^ hashName("moe-driver/validation");

  auto evaluate = [&]() {
    Random random(validationSeed);
    double sum = 0;
    for (int64_t i = 0; i < options.evalBatches; ++i) {
      drawBatch(corpus.validation, batch, length, random, inputs.get(),
                labels.get());
      MemRef<float, 1> paramsRef = params.vector();
      MemRef<int32_t, 2> inputsRef = inputs.matrix(batch, length);
      MemRef<int32_t, 2> labelsRef = labels.matrix(batch, length);
      MemRef0<float> lossRef = {nullptr, nullptr, 0};
      _mlir_ciface_moe_model_forward(&lossRef, &paramsRef, &inputsRef,
                                     &labelsRef);
      checkDevice("while running the forward pass");
      sum += lossRef.aligned[lossRef.offset];
      releaseResult(lossRef.allocated);
    }
    return sum / static_cast<double>(options.evalBatches);
  };

  double stepSeconds = 0, evalSeconds = 0, intervalSeconds = 0;
  int64_t intervalTokens = 0;
  std::vector<float> metrics(static_cast<size_t>(manifest.numMetrics));
  float firstLoss = 0, lastLoss = 0;
  for (int64_t step = 1; step <= options.steps; ++step) {
    auto batchStart = std::chrono::steady_clock::now();
    drawBatch(corpus.train, batch, length, trainRandom, inputs.get(),
              labels.get());
    dataSeconds += seconds(batchStart);

    // hyper = [lr, beta1, beta2, eps, weight_decay, max_grad_norm,
    //          1/(1 - beta1^t), 1/(1 - beta2^t)], corrections in double.
    double lr = learningRate(options, step);
    double t = static_cast<double>(step);
    double hyperValues[8] = {lr,
                             options.beta1,
                             options.beta2,
                             options.eps,
                             options.weightDecay,
                             options.clip,
                             1.0 / (1.0 - std::pow(options.beta1, t)),
                             1.0 / (1.0 - std::pow(options.beta2, t))};
    for (int i = 0; i < 8; ++i)
      hyper.get()[i] = static_cast<float>(hyperValues[i]);

    MemRef<float, 1> paramsRef = params.vector(), mRef = m.vector(),
                     vRef = v.vector(), hyperRef = hyper.vector();
    MemRef<int32_t, 2> inputsRef = inputs.matrix(batch, length);
    MemRef<int32_t, 2> labelsRef = labels.matrix(batch, length);
    TrainStepResults results;
    std::memset(&results, 0, sizeof(results));
    auto stepStart = std::chrono::steady_clock::now();
    _mlir_ciface_moe_model_train_step(&results, &paramsRef, &mRef, &vRef,
                                      &inputsRef, &labelsRef, &hyperRef);
    checkDevice("while running the train step");
    float loss = results.loss.aligned[results.loss.offset];
    releaseResult(results.loss.allocated);
    if (results.params.allocated == results.m.allocated ||
        results.params.allocated == results.v.allocated ||
        results.m.allocated == results.v.allocated)
      fail("the train step returned one buffer for two of its results (the "
           "executable is damaged)");
    params.adopt(results.params);
    m.adopt(results.m);
    v.adopt(results.v);
    takeMetrics(results.metrics, metrics);
    double elapsed = seconds(stepStart);
    stepSeconds += elapsed;
    intervalSeconds += elapsed;
    intervalTokens += batch * length;
    if (step == 1)
      firstLoss = loss;
    lastLoss = loss;
    if (!std::isfinite(loss)) {
      std::printf("step %ld loss %.9g\n", static_cast<long>(step), loss);
      std::fprintf(stderr, "error: the loss is not finite at step %ld\n",
                   static_cast<long>(step));
      return 2;
    }

    bool last = step == options.steps;
    bool log = step == 1 || last || step % options.logEvery == 0;
    bool eval =
        options.evalEvery > 0 && (last || step % options.evalEvery == 0);
    if (!log && !eval)
      continue;
    std::printf("step %ld loss %.9g lr %.6g grad-norm %.6g",
                static_cast<long>(step), loss, lr,
                metrics[static_cast<size_t>(gradNormIndex)]);
    if (!maxVio.empty()) {
      size_t worst = 0;
      for (size_t i = 1; i < maxVio.size(); ++i)
        if (metrics[maxVio[i].first] > metrics[maxVio[worst].first])
          worst = i;
      std::printf(" max-vio %.6g (%s)", metrics[maxVio[worst].first],
                  maxVio[worst].second.c_str());
    }
    std::printf(" tok/s %.1f", static_cast<double>(intervalTokens) /
                                   std::max(intervalSeconds, 1e-9));
    intervalTokens = 0;
    intervalSeconds = 0;
    if (eval) {
      auto evalStart = std::chrono::steady_clock::now();
      double validationLoss = evaluate();
      evalSeconds += seconds(evalStart);
      std::printf(" val-loss %.9g", validationLoss);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  if (!options.dumpParams.empty())
    dumpParams(options.dumpParams, manifest, params.get());

  double total = seconds(programStart);
  double trained = static_cast<double>(options.steps * batch * length);
  std::printf("loss %.6g -> %.6g after %ld steps (%.0f tokens)\n", firstLoss,
              lastLoss, static_cast<long>(options.steps), trained);
  std::printf("time: total %.3f s = init %.3f s + data %.3f s + step %.3f s "
              "+ eval %.3f s + other %.3f s\n",
              total, initSeconds, dataSeconds, stepSeconds, evalSeconds,
              std::max(0.0, total - initSeconds - dataSeconds - stepSeconds -
                                evalSeconds));
  std::printf("throughput: %.1f tok/s in the train step, %.1f tok/s "
              "overall\n",
              trained / std::max(stepSeconds, 1e-9),
              trained / std::max(total, 1e-9));
  return 0;
}
