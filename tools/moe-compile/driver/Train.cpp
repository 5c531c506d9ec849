//===- Train.cpp - The training loop of executables built by moe-compile --===//
//
// Part of the moe-mlir project.
//
// The training program (docs/Training.md, "The executable"): fp32 master
// parameters and AdamW moments live here; each step takes the next batch of
// the training data's seeded shuffle (Data.h), computes the learning rate
// of the schedule and the bias corrections (in double), calls the compiled
// @moe_model_train_step, keeps the parameters and moments it returns (or
// drops them when the step's loss or gradient norm is not finite), and
// prints one line with the loss, learning rate, gradient norm, worst MoE
// MaxVio and throughput. --eval-every runs the forward pass on held-out
// batches; --save-dir writes checkpoints (Checkpoint.h) that --resume
// continues. Everything is deterministic: the same seed, data and flags
// give the same trajectory, bit for bit, on the CPU.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Data.h"
#include "Driver.h"
#include "ParamFiles.h"
#include "TrainLog.h"
#include "TrainOptions.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace moe_driver;

namespace {

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
  /// Rows [first, first + rows) of the matrix of `cols` columns; the
  /// compiled code's identity layout wants the offset in the pointer.
  MemRef<T, 2> rows(int64_t first, int64_t rows, int64_t cols) const {
    return {data, data + first * cols, 0, {rows, cols}, {cols, 1}};
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
    check(result);
    if (result.allocated != ref.allocated)
      releaseResult(ref.allocated);
    ref = result;
  }
  /// Copies the train step's new value into this vector's buffer, which
  /// stays where a CUDA graph of the step reads it.
  void copyFrom(const MemRef<float, 1> &result) {
    check(result);
    copyBuffer(get(), result.aligned + result.offset, count * sizeof(float));
  }

private:
  void check(const MemRef<float, 1> &result) const {
    if (!result.aligned || result.sizes[0] != static_cast<int64_t>(count) ||
        result.strides[0] != 1)
      fail(std::string("the train step returned ") + what + " of " +
           std::to_string(result.aligned ? result.sizes[0] : 0) +
           " values (stride " +
           std::to_string(result.aligned ? result.strides[0] : 0) +
           "), expected " + std::to_string(count) +
           " contiguous ones (the executable is damaged)");
  }

  MemRef<float, 1> ref;
  size_t count;
  const char *what;
};

/// Copies the returned metrics into `into`.
void readMetrics(const MemRef<float, 1> &result, std::vector<float> &into) {
  if (!result.aligned || result.sizes[0] != static_cast<int64_t>(into.size()))
    fail("the train step returned " +
         std::to_string(result.aligned ? result.sizes[0] : 0) +
         " metrics, expected " + std::to_string(into.size()) +
         " (the executable is damaged)");
  for (size_t i = 0; i < into.size(); ++i)
    into[i] = result.aligned[result.offset +
                             static_cast<int64_t>(i) * result.strides[0]];
}

/// The train step's arguments and results, for a capture.
struct StepCall {
  TrainStepResults *results;
  MemRef<float, 1> *params, *m, *v;
  MemRef<int32_t, 2> *inputs, *labels;
  MemRef<float, 1> *hyper;
};

void callTrainStep(void *context) {
  auto *call = static_cast<StepCall *>(context);
  _mlir_ciface_moe_model_train_step(call->results, call->params, call->m,
                                    call->v, call->inputs, call->labels,
                                    call->hyper);
}

/// --cuda-graph: the train step captured once as a CUDA graph, after an
/// uncaptured step that waited for the GPU once. Its replays read the
/// parameter, moment, batch and hyper-parameter buffers it was captured
/// with, and write their results into the captured call's result buffers;
/// so, once there is a graph, a good step's new state is copied into the
/// state buffers rather than taken over (a copy of the fp32 state per
/// step, a fraction of a millisecond on the GPU).
class StepGraph {
public:
  explicit StepGraph(bool loud) : loud(loud) {
    std::memset(&results, 0, sizeof(results));
  }
  ~StepGraph() {
    if (!ready)
      return;
    releaseGraph();
    for (void *buffer :
         {results.loss.allocated, results.params.allocated, results.m.allocated,
          results.v.allocated, results.metrics.allocated})
      releaseResult(buffer);
  }
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;

  /// Captures the step with these arguments; false (with a warning, when
  /// loud) when the capture fails.
  bool capture(StepCall call) {
    tried = true;
    call.results = &results;
    std::string why;
    auto start = std::chrono::steady_clock::now();
    nodes = captureGraph(callTrainStep, &call, why);
    captureSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (nodes < 0) {
      warn(why);
      std::memset(&results, 0, sizeof(results));
      return false;
    }
    ready = true;
    // The uncaptured steps' device buffers, cached by the stream-ordered
    // pool, are not used again: the replays' buffers are the graph's.
    releaseCachedMemory();
    return true;
  }
  void warn(const std::string &why) {
    tried = true;
    if (loud)
      std::fprintf(stderr,
                   "warning: the train step is not replayed as a CUDA graph: "
                   "%s; it runs uncaptured\n",
                   why.c_str());
  }

  bool loud, ready = false, tried = false;
  long long nodes = 0, replays = 0;
  double captureSeconds = 0;
  /// The captured call's results: each replay writes them.
  TrainStepResults results;
};

/// The signal (SIGINT or SIGTERM) that asked the run to stop, or 0.
volatile std::sig_atomic_t stopSignal = 0;

extern "C" void onStopSignal(int signal) {
  stopSignal = signal;
  // A second one stops the process at once (an interrupted save leaves no
  // checkpoint that looks complete).
  std::signal(signal, SIG_DFL);
}

/// This process's place in a data-parallel run.
struct DataParallel {
  int64_t rank = 0, ranks = 1;
};

/// Joins the data-parallel group of a sharded program (the environment
/// names it, docs/Distributed.md); only rank 0 prints to stdout after this.
DataParallel joinDataParallel(const Manifest &manifest) {
  DataParallel group;
  if (manifest.dataParallel <= 1)
    return group;
  if (!moe_dist_init_groups || !moe_dist_rank || !moe_dist_all_reduce_sum)
    fail("the manifest says 'data_parallel " +
         std::to_string(manifest.dataParallel) +
         "' but the executable has no distributed runtime (it is damaged)");
  char error[1024] = "";
  if (moe_dist_init_groups(manifest.dataParallel, manifest.expertParallel,
                           error, sizeof(error)) != 0)
    fail(std::string("cannot join the data-parallel group: ") + error);
  group.ranks = manifest.dataParallel;
  group.rank = moe_dist_rank();
  std::fflush(stdout);
  if (group.rank != 0 && !std::freopen("/dev/null", "w", stdout))
    fail("rank " + std::to_string(group.rank) +
         ": cannot send stdout to /dev/null: " + std::strerror(errno));
  return group;
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

  // State: parameters and AdamW moments (fp32), from a checkpoint or fresh.
  auto initStart = std::chrono::steady_clock::now();
  size_t scalars = static_cast<size_t>(manifest.scalars);
  StateVector params(scalars, "parameters"), m(scalars, "first moments"),
      v(scalars, "second moments");
  nlohmann::json resumed;
  std::string resumedFrom;
  if (!options.resume.empty()) {
    resumedFrom = findCheckpoint(options.resume, options.saveDir);
    resumed =
        loadCheckpoint(resumedFrom, manifest, params.get(), m.get(), v.get());
    adoptSettings(options, resumed.value("settings", nlohmann::json()),
                  resumedFrom);
  }
  finishTrainOptions(options, manifest);
  const DataParallel group = joinDataParallel(manifest);
  if (options.batch % group.ranks != 0)
    fail("--batch " + std::to_string(options.batch) + " is not a multiple of " +
         "the " + std::to_string(group.ranks) +
         " data-parallel ranks (each takes an equal share of every batch)");
  // Every rank draws the same global batch and trains on its rows.
  const int64_t localBatch = options.batch / group.ranks;
  const int64_t firstRow = group.rank * localBatch;
  // What a killed save left (rank 0 writes the saves): gone now, even when
  // this run saves nothing (resumed at its last step).
  if (!options.saveDir.empty() && group.rank == 0)
    removeInterruptedSaves(options.saveDir);
  if (options.resume.empty())
    initialiseParams(manifest, options.seed, params.get());
  // --init-from: a fresh run (step 0, zero moments) from given parameters;
  // those it may leave out keep their initialisation.
  if (!options.initFrom.empty())
    initParamsFrom(options.initFrom, manifest,
                   options.initNames.empty() ? options.hfNames
                                             : options.initNames == "hf",
                   params.get());
  const int64_t batch = options.batch, length = options.length;
  Buffer<float> hyper(8);
  size_t tokens = static_cast<size_t>(batch * length);
  Buffer<int32_t> inputs(tokens), labels(tokens);
  double initSeconds = seconds(initStart);

  // Data.
  auto dataStart = std::chrono::steady_clock::now();
  Dataset data =
      loadDataset(options.dataPath, options.validationPath,
                  options.dataFormat == "bytes"    ? DataFormat::Bytes
                  : options.dataFormat == "tokens" ? DataFormat::Tokens
                                                   : DataFormat::Auto,
                  static_cast<uint64_t>(manifest.vocab));
  const char *unit = data.unit.c_str();
  uint64_t window = static_cast<uint64_t>(length) + 1;
  for (size_t i = 0; i < data.train.size(); ++i)
    if (data.train[i].size() < window)
      fail(data.names[i] + " holds " + std::to_string(data.sizes[i]) + " " +
           unit + ", of which " + std::to_string(data.train[i].size()) +
           " are for training: too few for one window of seq-len + 1 = " +
           std::to_string(window) + " " + unit);
  uint64_t trainTokens = Dataset::count(data.train);
  uint64_t validationTokens = Dataset::count(data.validation);
  bool anyValidationWindow = false;
  for (const auto &shard : data.validation)
    anyValidationWindow = anyValidationWindow || shard.size() >= window;
  if (options.evalEvery > 0 && !anyValidationWindow)
    fail(data.validationSource + " holds " + std::to_string(validationTokens) +
         " held-out " + unit + (data.split ? " (every 20th block)" : "") +
         ": too few for one window of seq-len + 1 = " + std::to_string(window) +
         " " + unit + "; use more data or drop --eval-every");
  double dataSeconds = seconds(dataStart);

  // Metrics: the gradient norm and each MoE layer's MaxVio and loads.
  MetricLayout layout = MetricLayout::fromManifest(manifest);

  std::printf("training %s: %ld parameters, batch %ld x %ld tokens, %ld "
              "steps, %s schedule, lr %g (min %g, warm-up %ld), weight decay "
              "%g, clip %g, seed %lu, target %s\n"
              "data: %s, %lu training and %lu held-out %s%s%s\n",
              manifest.name.c_str(), static_cast<long>(manifest.scalars),
              static_cast<long>(batch), static_cast<long>(length),
              static_cast<long>(options.steps), scheduleName(options.schedule),
              options.lr, options.minLr, static_cast<long>(options.warmup),
              options.weightDecay, options.clip,
              static_cast<unsigned long>(options.seed), kTargetName,
              data.source.c_str(), static_cast<unsigned long>(trainTokens),
              static_cast<unsigned long>(validationTokens), unit,
              data.split ? "" : " from ",
              data.split ? "" : data.validationSource.c_str());
  // The model and every setting, so that a log says what ran.
  std::string experts;
  for (const MetricLayout::Layer &layer : layout.layers)
    experts += (experts.empty() ? " (" : ", ") + layer.name + ": " +
               std::to_string(layer.experts) + " experts";
  if (!experts.empty())
    experts += ")";
  std::printf("model: %s, vocab_size %ld, hidden_size %ld, %zu parameter "
              "tensors, %ld scalars, %zu MoE layers%s\n",
              manifest.name.c_str(), static_cast<long>(manifest.vocab),
              static_cast<long>(manifest.hidden), manifest.params.size(),
              static_cast<long>(manifest.scalars), layout.layers.size(),
              experts.c_str());
  std::string settings;
  nlohmann::json values = trajectorySettings(options);
  for (auto it = values.begin(); it != values.end(); ++it) {
    std::string value;
    if (it->is_boolean()) {
      // A flag: named when set.
      if (it->get<bool>())
        settings += " --" + it.key();
      continue;
    }
    if (it->is_string()) {
      value = it->get_ref<const std::string &>();
    } else if (it->is_number_float()) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", it->get<double>());
      value = text;
    } else {
      value = it->dump();
    }
    if (!value.empty())
      settings += " --" + it.key() + "=" + value;
  }
  std::printf("settings:%s\n", settings.c_str());

  // The batches: one stream for training, a fixed set for validation.
  BatchSampler trainBatches(data.train, length,
                            options.seed * 0x9e3779b97f4a7c15ull ^
                                hashName("moe-driver/train-batches"));
  const uint64_t validationSeed =
      options.seed * 0x9e3779b97f4a7c15ull ^ hashName("moe-driver/validation");

  // What a checkpoint records besides the tensors, and its restoration.
  float firstLoss = 0, lastLoss = 0;
  // Skipped steps (non-finite loss or gradient norm): in a row, in all.
  int64_t badInARow = 0, badSteps = 0;
  auto runState = [&]() {
    return nlohmann::json{
        {"settings", trajectorySettings(options)},
        {"data",
         {{"source", data.source},
          {"train_tokens", trainTokens},
          {"validation_tokens", validationTokens},
          {"epoch", trainBatches.epoch()},
          {"cursor", trainBatches.cursor()}}},
        {"first_loss", firstLoss},
        {"last_loss", lastLoss},
        {"bad_steps", {{"in_a_row", badInARow}, {"total", badSteps}}}};
  };
  int64_t startStep = 0;
  if (!resumedFrom.empty()) {
    auto bad = [&](const std::string &what) {
      fail("checkpoint '" + resumedFrom + "': " + what);
    };
    nlohmann::json position = resumed.value("data", nlohmann::json());
    if (!position.is_object() ||
        !position.value("epoch", nlohmann::json()).is_number_unsigned() ||
        !position.value("cursor", nlohmann::json()).is_number_unsigned())
      bad("state.json has no data position");
    if (position.value("train_tokens", nlohmann::json()) != trainTokens ||
        position.value("validation_tokens", nlohmann::json()) !=
            validationTokens)
      bad("its data (" + position.value("source", nlohmann::json()).dump() +
          ", " + position.value("train_tokens", nlohmann::json()).dump() +
          " training " + unit + ") differ from " + data.source + " (" +
          std::to_string(trainTokens) + " training " + unit + ")");
    if (!trainBatches.restore(position["epoch"].get<int64_t>(),
                              position["cursor"].get<uint64_t>()))
      bad("its data position lies past the end of its epoch");
    uint64_t savedStep = resumed["step"].get<uint64_t>();
    if (savedStep > uint64_t(options.steps))
      bad("it is at step " + std::to_string(savedStep) + ", past --steps " +
          std::to_string(options.steps));
    startStep = static_cast<int64_t>(savedStep);
    auto loss = [&](const char *key) {
      const nlohmann::json &value = resumed.value(key, nlohmann::json());
      return value.is_number() ? value.get<float>() : NAN;
    };
    firstLoss = loss("first_loss");
    lastLoss = loss("last_loss");
    nlohmann::json counters = resumed.value("bad_steps", nlohmann::json());
    if (!counters.is_object() ||
        !counters.value("in_a_row", nlohmann::json()).is_number_unsigned() ||
        !counters.value("total", nlohmann::json()).is_number_unsigned())
      bad("state.json has no bad_steps");
    badInARow = counters["in_a_row"].get<int64_t>();
    badSteps = counters["total"].get<int64_t>();
    std::printf("resumed from %s at step %ld\n", resumedFrom.c_str(),
                static_cast<long>(startStep));
  }
  std::fflush(stdout);
  auto save = [&](int64_t step) {
    // The ranks hold the same state: rank 0 writes it.
    if (group.rank != 0)
      return std::string("(written by rank 0)");
    std::string dir = saveCheckpoint(
        options.saveDir, step, options.keep, manifest, options.hfNames,
        options.saveShardBytes, params.get(), m.get(), v.get(), runState());
    return dir;
  };

  // SIGINT and SIGTERM: save after the current step and exit with 0.
  if (!options.saveDir.empty()) {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
  }

  auto evaluate = [&]() {
    BatchSampler batches(data.validation, length, validationSeed);
    double sum = 0;
    for (int64_t i = 0; i < options.evalBatches; ++i) {
      batches.next(batch, inputs.get(), labels.get());
      MemRef<float, 1> paramsRef = params.vector();
      MemRef<int32_t, 2> inputsRef = inputs.rows(firstRow, localBatch, length);
      MemRef<int32_t, 2> labelsRef = labels.rows(firstRow, localBatch, length);
      MemRef0<float> lossRef = {nullptr, nullptr, 0};
      _mlir_ciface_moe_model_forward(&lossRef, &paramsRef, &inputsRef,
                                     &labelsRef);
      checkDevice("while running the forward pass");
      sum += lossRef.aligned[lossRef.offset];
      releaseResult(lossRef.allocated);
    }
    // The mean over the ranks' equal shares.
    if (group.ranks > 1) {
      moe_dist_all_reduce_sum(&sum, 1, /*f64*/ 2);
      sum /= static_cast<double>(group.ranks);
    }
    return sum / static_cast<double>(options.evalBatches);
  };

  // Test hook: MOE_TEST_POISON_STEPS=<n>[,<n>...] runs those steps on a
  // copy of the parameters filled with NaN, a stand-in for a step that
  // diverges (the step's results are then dropped).
  std::set<int64_t> poisonSteps;
  if (const char *list = std::getenv("MOE_TEST_POISON_STEPS")) {
    std::string text = list;
    for (size_t begin = 0; begin <= text.size();) {
      size_t end = std::min(text.find(',', begin), text.size());
      int64_t poisoned = 0;
      if (!parseInteger(text.substr(begin, end - begin), poisoned, 1))
        fail("MOE_TEST_POISON_STEPS expects step numbers separated by "
             "commas, got '" +
             text + "'");
      poisonSteps.insert(poisoned);
      begin = end + 1;
    }
  }
  std::unique_ptr<Buffer<float>> poison;

  MetricsLog metricsLog;
  // Rank 0 writes the metrics file (the ranks agree on every entry).
  metricsLog.open(group.rank == 0 ? options.metricsPath : std::string(),
                  resumedFrom.empty() ? -1 : startStep);
  Progress progress(options.steps, startStep + 1);

  double stepSeconds = 0, evalSeconds = 0, intervalSeconds = 0;
  int64_t intervalTokens = 0;
  std::vector<float> metrics(static_cast<size_t>(manifest.numMetrics));
  // --dump-batches: rank 0 writes the global batch of every step.
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> batchFile(nullptr,
                                                             std::fclose);
  if (!options.dumpBatches.empty() && group.rank == 0) {
    batchFile.reset(std::fopen(options.dumpBatches.c_str(), "wb"));
    if (!batchFile)
      fail("cannot write --dump-batches file '" + options.dumpBatches +
           "': " + std::strerror(errno));
  }
  std::vector<uint32_t> batchRow(static_cast<size_t>(length + 1));
  StepGraph graph(options.cudaGraphGiven);
  // The host's waits for the GPU during the last uncaptured step.
  uint64_t stepSyncs = 0;
  for (int64_t step = startStep + 1; step <= options.steps; ++step) {
    auto batchStart = std::chrono::steady_clock::now();
    trainBatches.next(batch, inputs.get(), labels.get());
    dataSeconds += seconds(batchStart);
    if (batchFile) {
      for (int64_t row = 0; row < batch; ++row) {
        const int32_t *in = inputs.get() + row * length;
        for (int64_t t = 0; t < length; ++t)
          batchRow[static_cast<size_t>(t)] = static_cast<uint32_t>(in[t]);
        batchRow[static_cast<size_t>(length)] =
            static_cast<uint32_t>(labels.get()[row * length + length - 1]);
        if (std::fwrite(batchRow.data(), sizeof(uint32_t), batchRow.size(),
                        batchFile.get()) != batchRow.size())
          fail("cannot write --dump-batches file '" + options.dumpBatches +
               "': " + std::strerror(errno));
      }
    }

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
    bool poisoned = poisonSteps.count(step) > 0;
    if (poisoned) {
      if (!poison)
        poison = std::make_unique<Buffer<float>>(scalars);
      std::fill(poison->get(), poison->get() + scalars, NAN);
      paramsRef = poison->vector();
    }
    MemRef<int32_t, 2> inputsRef = inputs.rows(firstRow, localBatch, length);
    MemRef<int32_t, 2> labelsRef = labels.rows(firstRow, localBatch, length);
    TrainStepResults results;
    std::memset(&results, 0, sizeof(results));
    bool profiled = step == options.kernelProfileStep;
    // The profiled and the poisoned steps run uncaptured (the graph's
    // kernels are not timed one by one; it reads the real parameters).
    auto stepStart = std::chrono::steady_clock::now();
    bool replayed = false;
    // One process: the collectives of a data-parallel step are not in the
    // compiled code's stream.
    if (options.cudaGraph && group.ranks == 1 && !profiled && !poisoned) {
      if (!graph.tried && stepSyncs > 1)
        graph.warn("a step waited for the GPU " + std::to_string(stepSyncs) +
                   " times (host code that reads results mid-way); a graph "
                   "needs the one wait at the end");
      if (!graph.tried && stepSyncs == 1)
        graph.capture({nullptr, &paramsRef, &mRef, &vRef, &inputsRef,
                       &labelsRef, &hyperRef});
      replayed = graph.ready;
    }
    if (profiled)
      startKernelTiming();
    if (replayed) {
      ++graph.replays;
      replayGraph();
      results = graph.results;
    } else {
      uint64_t syncsBefore = streamSyncCount();
      _mlir_ciface_moe_model_train_step(&results, &paramsRef, &mRef, &vRef,
                                        &inputsRef, &labelsRef, &hyperRef);
      checkDevice("while running the train step");
      stepSyncs = streamSyncCount() - syncsBefore;
    }
    int launches = 0;
    double kernelMs = 0;
    if (profiled && finishKernelTiming(launches, kernelMs) && group.rank == 0)
      std::fprintf(stderr,
                   "kernels of step %ld: %d launches, %.3f ms on the "
                   "GPU\n",
                   static_cast<long>(step), launches, kernelMs);
    float loss = results.loss.aligned[results.loss.offset];
    if (results.params.allocated == results.m.allocated ||
        results.params.allocated == results.v.allocated ||
        results.m.allocated == results.v.allocated)
      fail("the train step returned one buffer for two of its results (the "
           "executable is damaged)");
    readMetrics(results.metrics, metrics);
    // A replay's results are the graph's.
    if (!replayed) {
      releaseResult(results.loss.allocated);
      releaseResult(results.metrics.allocated);
    }
    float gradNorm = metrics[static_cast<size_t>(layout.gradNorm)];
    // A step whose loss or gradient norm is not finite changes nothing:
    // its parameters, moments and router biases are dropped.
    bool bad = !std::isfinite(loss) || !std::isfinite(gradNorm);
    if (bad) {
      // A replay's results are the graph's; an uncaptured step's are freed.
      if (!replayed)
        for (const MemRef<float, 1> *result :
             {&results.params, &results.m, &results.v}) {
          if (result->allocated == params.vector().allocated ||
              result->allocated == m.vector().allocated ||
              result->allocated == v.vector().allocated)
            fail("the train step updated its state in place, so a bad step "
                 "cannot be skipped (the executable is damaged)");
          releaseResult(result->allocated);
        }
      ++badInARow;
      ++badSteps;
    } else if (graph.ready) {
      params.copyFrom(results.params);
      m.copyFrom(results.m);
      v.copyFrom(results.v);
      if (!replayed)
        for (void *buffer : {results.params.allocated, results.m.allocated,
                             results.v.allocated})
          releaseResult(buffer);
      badInARow = 0;
    } else {
      params.adopt(results.params);
      m.adopt(results.m);
      v.adopt(results.v);
      badInARow = 0;
    }
    double elapsed = seconds(stepStart);
    stepSeconds += elapsed;
    intervalSeconds += elapsed;
    intervalTokens += batch * length;
    if (step == 1)
      firstLoss = loss;
    lastLoss = loss;

    bool last = step == options.steps;
    bool log = step == 1 || last || step % options.logEvery == 0 || bad;
    bool eval =
        options.evalEvery > 0 && (last || step % options.evalEvery == 0);
    double stepTokensPerSecond =
        static_cast<double>(batch * length) / std::max(elapsed, 1e-9);
    nlohmann::json record = {{"step", step},
                             {"loss", loss},
                             {"lr", lr},
                             {"grad_norm", gradNorm},
                             {"tokens_per_s", stepTokensPerSecond},
                             {"skipped", bad},
                             {"bad_steps", badSteps}};
    if (!layout.layers.empty()) {
      nlohmann::json layers = nlohmann::json::object();
      for (const MetricLayout::Layer &layer : layout.layers) {
        nlohmann::json entry = nlohmann::json::object();
        if (layer.maxVio >= 0)
          entry["max_vio"] = metrics[static_cast<size_t>(layer.maxVio)];
        if (layer.load >= 0)
          entry["load"] =
              std::vector<float>(metrics.begin() + layer.load,
                                 metrics.begin() + layer.load + layer.experts);
        layers[layer.name] = std::move(entry);
      }
      record["moe"] = std::move(layers);
    }
    if (log || eval) {
      progress.clear();
      std::printf("step %ld loss %.9g lr %.6g grad-norm %.6g",
                  static_cast<long>(step), loss, lr, gradNorm);
      const MetricLayout::Layer *worst = nullptr;
      for (const MetricLayout::Layer &layer : layout.layers)
        if (layer.maxVio >= 0 &&
            (!worst || metrics[layer.maxVio] > metrics[worst->maxVio]))
          worst = &layer;
      if (worst)
        std::printf(" max-vio %.6g (%s)", metrics[worst->maxVio],
                    worst->name.c_str());
      std::printf(" tok/s %.1f", static_cast<double>(intervalTokens) /
                                     std::max(intervalSeconds, 1e-9));
      intervalTokens = 0;
      intervalSeconds = 0;
      if (bad)
        std::printf(" skipped (%ld in a row, %ld in all)",
                    static_cast<long>(badInARow), static_cast<long>(badSteps));
      if (eval) {
        auto evalStart = std::chrono::steady_clock::now();
        double validationLoss = evaluate();
        evalSeconds += seconds(evalStart);
        std::printf(" val-loss %.9g", validationLoss);
        record["val_loss"] = validationLoss;
      }
      std::printf("\n");
      std::fflush(stdout);
    } else {
      progress.update(step, loss, stepTokensPerSecond);
    }
    metricsLog.write(record);

    if (badInARow >= options.maxBadSteps) {
      progress.clear();
      std::fprintf(
          stderr,
          "error: %ld steps in a row (%ld to %ld) had a non-finite "
          "loss or gradient norm and were skipped; stopping "
          "(--max-bad-steps=%ld)\n",
          static_cast<long>(badInARow), static_cast<long>(step - badInARow + 1),
          static_cast<long>(step), static_cast<long>(options.maxBadSteps));
      return 2;
    }

    // Checkpoints: every --save-every steps, after the last, on a signal.
    if (options.saveDir.empty())
      continue;
    std::string saved;
    if (last || (options.saveEvery > 0 && step % options.saveEvery == 0)) {
      saved = save(step);
      progress.clear();
      std::printf("saved checkpoint %s\n", saved.c_str());
      std::fflush(stdout);
    }
    if ((stopSignal || step == options.stopAfter) && !last) {
      if (saved.empty())
        saved = save(step);
      progress.clear();
      std::printf("stopped by %s after step %ld: checkpoint %s\n",
                  !stopSignal            ? "--stop-after"
                  : stopSignal == SIGINT ? "SIGINT"
                                         : "SIGTERM",
                  static_cast<long>(step), saved.c_str());
      std::fflush(stdout);
      return 0;
    }
  }

  // --steps=0: the parameters as they were loaded or initialised.
  if (options.steps == 0 && !options.saveDir.empty()) {
    std::string saved = save(0);
    progress.clear();
    std::printf("saved checkpoint %s\n", saved.c_str());
  }
  // Rank r > 0 writes its copy into DIR/rank-<r>: equal to rank 0's when
  // the ranks stayed in step.
  if (!options.dumpParams.empty() && group.rank != 0)
    makeDirectory(options.dumpParams);
  if (!options.dumpParams.empty())
    dumpParams(group.rank == 0
                   ? options.dumpParams
                   : options.dumpParams + "/rank-" + std::to_string(group.rank),
               manifest, params.get());

  double total = seconds(programStart);
  double trained =
      static_cast<double>((options.steps - startStep) * batch * length);
  progress.clear();
  if (badSteps > 0)
    std::printf("skipped %ld of %ld steps (non-finite loss or gradient "
                "norm)\n",
                static_cast<long>(badSteps), static_cast<long>(options.steps));
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
  if (graph.ready && group.rank == 0)
    std::printf("cuda graph: %lld of %ld steps replayed a graph of %lld "
                "nodes (captured in %.3f s)\n",
                graph.replays, static_cast<long>(options.steps - startStep),
                graph.nodes, graph.captureSeconds);
  std::string peak = peakMemoryLine();
  if (!peak.empty() && group.rank == 0)
    std::printf("%s\n", peak.c_str());
  return 0;
}
