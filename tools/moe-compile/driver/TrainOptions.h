//===- TrainOptions.h - Options of the training program ---------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// The training program's options (--help lists them), the learning-rate
// schedule, and the settings that decide a run's trajectory, which a
// checkpoint records and a resumed run takes over.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINOPTIONS_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINOPTIONS_H

#include "Driver.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace moe_driver {

enum class Schedule { WSD, Cosine, Constant };
const char *scheduleName(Schedule schedule);

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
  std::string dataPath, validationPath;
  std::string dataFormat = "auto";
  int64_t logEvery = 1, evalEvery = 0, evalBatches = 4;
  std::string dumpParams, metricsPath;
  /// --dump-batches: every step's batch, appended as uint32 rows of
  /// seq-len + 1 tokens (the inputs, then the last label).
  std::string dumpBatches;
  /// --kernel-profile-step: time the GPU kernels of this step; 0: none.
  int64_t kernelProfileStep = 0;
  /// --cuda-graph: replay the train step as a CUDA graph (CUDA; on unless
  /// --cuda-graph=off). cudaGraphGiven: the flag was on the command line
  /// (a step that cannot be captured is then a warning, else silent).
  bool cudaGraph = true, cudaGraphGiven = false;
  // Checkpoints.
  std::string saveDir, resume;
  int64_t saveEvery = 0, keep = 0;
  /// --init-from: a directory with model.safetensors or a sharded index.
  std::string initFrom;
  /// --hf-names: model.safetensors (saved and --init-from) under the
  /// Hugging Face names of the manifest.
  bool hfNames = false;
  /// --init-names: the names --init-from reads ("moe" or "hf"); "": those
  /// of --hf-names.
  std::string initNames;
  /// --save-shard-bytes: split model.safetensors into shards of at most
  /// this many bytes of tensor data, with an index; 0: one file.
  int64_t saveShardBytes = 0;
  /// Stop (with a checkpoint) after this step; 0: at the end.
  int64_t stopAfter = 0;
  /// Stop after this many skipped steps in a row.
  int64_t maxBadSteps = 5;
  /// The options given on the command line ("--lr", ...).
  std::set<std::string> given;
};

/// Parses the command line (exits on --help and on errors). The defaults
/// that depend on other options and the checks that relate options are
/// left to finishTrainOptions, so that a resumed run can first take the
/// checkpoint's settings.
TrainOptions parseTrainOptions(int argc, char **argv, const Manifest &manifest);

/// Fills the defaults that depend on other options (--warmup, --min-lr,
/// the model's static sizes) and checks the options against each other.
void finishTrainOptions(TrainOptions &options, const Manifest &manifest);

/// The settings that decide the trajectory (schedule, optimizer, batch,
/// seed, data), then those of logging, evaluation and saving, keyed by
/// option name without the dashes.
nlohmann::json trajectorySettings(const TrainOptions &options);

/// Takes the checkpoint's `settings` for every option not given on the
/// command line. A trajectory setting given with another value is an error
/// (a resumed run follows the same trajectory); --log-every, --eval-every,
/// --eval-batches, --save-every and --keep may change.
void adoptSettings(TrainOptions &options, const nlohmann::json &settings,
                   const std::string &checkpoint);

/// The learning rate of step t in 1..steps.
double learningRate(const TrainOptions &options, int64_t t);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINOPTIONS_H
