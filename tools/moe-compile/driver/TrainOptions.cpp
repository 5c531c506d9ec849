//===- TrainOptions.cpp - Options of the training program -----------------===//
//
// Part of the moe-mlir project.
//
// --help, the parsing and checking of the training program's options, the
// settings a checkpoint records, and the learning-rate schedule.
//
//===----------------------------------------------------------------------===//

#include "TrainOptions.h"
#include "ParamFiles.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace moe_driver;
using Json = nlohmann::json;

const char *moe_driver::scheduleName(Schedule schedule) {
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

namespace {
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
      "bit. It starts with the model (its MoE layers and experts) and every\n"
      "setting; on a terminal, a progress line with the time left stands\n"
      "between the step lines (not when stdout is a file).\n\n"
      "Data: byte files (token id = byte value) and llm.c token files (a\n"
      "header of 256 int32: magic 20240520, version, token count; then\n"
      "uint16 tokens in version 1, uint32 in version 2), recognised by the\n"
      "magic. --data takes one file or a glob of shards ('dir/*.bin').\n"
      "Without --data, the embedded corpus: the fortune databases of\n"
      "Debian's fortunes package (2.5 MB of English, BSD licence). Without\n"
      "--val-data, each file is cut into blocks of min(4096, size/20)\n"
      "tokens and every 20th block (5%%) is held out for validation. Each\n"
      "row of a batch is a window of seq-len+1 tokens of one shard (inputs:\n"
      "its first seq-len tokens, labels: its last seq-len): every epoch\n"
      "takes the windows that start at o + k*seq-len in each shard, o a\n"
      "random offset < seq-len, in an order shuffled by a generator seeded\n"
      "from --seed and the epoch, so that every window is seen once per\n"
      "epoch. --seed also initialises the weights.\n\n"
      "Learning rate of step t (1..steps): linear warm-up lr*t/warmup for\n"
      "t <= warmup, then\n"
      "  constant  lr\n"
      "  cosine    min-lr + (lr-min-lr)(1 + cos(pi p))/2, p = (t-warmup) / "
      "(steps-warmup)\n"
      "  wsd       lr, then in the last --decay-frac of the steps a linear "
      "decay\n"
      "            to min-lr (warm-up, stable, decay)\n\n"
      "OPTIONS (--name=value or --name value):\n"
      "  --steps=N          optimizer steps (default %ld); 0 trains "
      "nothing: the\n"
      "                     parameters go to --dump-params and --save-dir "
      "(step 0)\n"
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
      "  --data=FILE|GLOB   train on these byte or token files instead of "
      "the\n"
      "                     embedded corpus\n"
      "  --val-data=FILE|GLOB  hold these files out for validation "
      "instead of\n"
      "                     every 20th block of the training data\n"
      "  --data-format=F    auto (token files by their magic, else "
      "bytes), bytes\n"
      "                     or tokens (default auto)\n"
      "  --log-every=N      print every N-th step, and the first and last\n"
      "                     (default %ld)\n"
      "  --eval-every=N     measure val-loss every N steps and after the "
      "last;\n"
      "                     0: never (default %ld)\n"
      "  --eval-batches=N   held-out batches per evaluation (default %ld)\n"
      "  --max-bad-steps=N  stop (exit status 2) after N steps in a row "
      "whose loss\n"
      "                     or gradient norm is not finite (default %ld); "
      "such a\n"
      "                     step is skipped: parameters, moments and router "
      "biases\n"
      "                     stay as they were, its line ends with 'skipped "
      "(<n> in\n"
      "                     a row, <n> in all)'\n"
      "  --metrics=FILE     write one JSON object per step to FILE: step, "
      "loss, lr,\n"
      "                     grad_norm, tokens_per_s, skipped, bad_steps, "
      "moe (per\n"
      "                     MoE layer: max_vio and load, the tokens per "
      "expert),\n"
      "                     val_loss when measured; a resumed run keeps the "
      "lines\n"
      "                     up to its checkpoint\n"
      "  --dump-params=DIR  after training, write every parameter as\n"
      "                     DIR/<name>.npy (f32)\n"
      "  --dump-batches=FILE  write every step's batch to FILE: per step, "
      "batch rows\n"
      "                     of seq-len + 1 little-endian uint32 tokens (the "
      "inputs,\n"
      "                     then the row's last label), so that another "
      "program can\n"
      "                     train on the same data (bench/train)\n"
      "  --cuda-graph[=on|off]  cuda: capture the train step once, after "
      "an\n"
      "                     uncaptured step, as a CUDA graph and replay it "
      "for the\n"
      "                     later steps (not the profiled one); a step that "
      "waits for\n"
      "                     the GPU more than once runs uncaptured (with a "
      "warning\n"
      "                     when the flag is given) (default on)\n"
      "  --kernel-profile-step=N  cuda: time the GPU kernels of step N and "
      "print\n"
      "                     their launches and milliseconds "
      "(MOERT_KERNEL_PROFILE=1:\n"
      "                     by kernel name); 0: none (default 0)\n"
      "  --save-dir=DIR     write checkpoints DIR/step-<8 digits> "
      "(model.safetensors,\n"
      "                     optimizer.safetensors, state.json; DIR/latest "
      "names\n"
      "                     the newest) every --save-every steps, after the "
      "last\n"
      "                     step, and on SIGINT or SIGTERM (then it exits "
      "with 0)\n"
      "  --save-every=N     also checkpoint every N steps; 0: not (default "
      "0)\n"
      "  --keep=K           keep only the K newest checkpoints; 0: all "
      "(default 0)\n"
      "  --stop-after=N     stop after step N (of the --steps schedule) "
      "with a\n"
      "                     checkpoint, to --resume later\n"
      "  --resume=CKPT      continue the run of a checkpoint: its directory, "
      "a save\n"
      "                     directory (its latest), or 'latest' (that of "
      "--save-dir).\n"
      "                     Options not given take the checkpoint's "
      "settings; those\n"
      "                     given must agree with them, except "
      "--log-every,\n"
      "                     --eval-every, --eval-batches, --save-every, "
      "--keep,\n"
      "                     --max-bad-steps and --metrics. The run "
      "continues bit\n"
      "                     for bit as if it had not stopped.\n"
      "  --init-from=DIR    start a fresh run (step 0, zero moments) from "
      "the\n"
      "                     parameters in DIR/model.safetensors or in the "
      "shards of\n"
      "                     DIR/model.safetensors.index.json (weight_map: "
      "tensor ->\n"
      "                     shard file); F32, BF16 or F16, exact shapes, "
      "every\n"
      "                     tensor of the model and no other\n"
      "  --save-shard-bytes=N  write model.safetensors as shards "
      "model-<i>-of-<n>\n"
      "                     .safetensors of at most N bytes of tensors "
      "each (a\n"
      "                     larger tensor alone) and "
      "model.safetensors.index.json;\n"
      "                     0: one file (default 0)\n"
      "  --hf-names         name the tensors of model.safetensors (saved "
      "and\n"
      "                     --init-from) as a Hugging Face Kimi-Linear "
      "checkpoint:\n"
      "                     model.layers.N.self_attn.q_proj.weight, "
      "one tensor per\n"
      "                     expert (...experts.E.w1.weight), "
      "torch.nn.Linear\n"
      "                     weights transposed ([out, in]); parameters "
      "without such\n"
      "                     a name keep theirs (and may be absent from "
      "--init-from)\n"
      "  --init-names=N     the names --init-from reads, moe or hf "
      "(default: hf\n"
      "                     with --hf-names, else moe); with --steps=0 "
      "and\n"
      "                     --save-dir, a converter between the names\n"
      "  --help             print this help\n\n"
      "Model: vocab_size %ld, hidden_size %ld, %zu parameter tensors, %ld "
      "scalars, %ld metrics. Target: %s.\n",
      argv0, manifest.name.c_str(), static_cast<long>(d.steps), d.lr,
      scheduleName(d.schedule), d.decayFraction, d.weightDecay, d.clip, d.beta1,
      d.beta2, d.eps, static_cast<long>(d.logEvery),
      static_cast<long>(d.evalEvery), static_cast<long>(d.evalBatches),
      static_cast<long>(d.maxBadSteps), static_cast<long>(manifest.vocab),
      static_cast<long>(manifest.hidden), manifest.params.size(),
      static_cast<long>(manifest.scalars),
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

} // namespace

TrainOptions moe_driver::parseTrainOptions(int argc, char **argv,
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
    // The one flag without a value.
    if (arg == "--hf-names") {
      options.hfNames = true;
      options.given.insert(arg);
      continue;
    }
    if (arg.compare(0, 11, "--hf-names=") == 0)
      fail("option --hf-names takes no value");
    // Not a setting of the trajectory: a replay computes what the step does.
    if (arg == "--cuda-graph" || arg == "--cuda-graph=on" ||
        arg == "--cuda-graph=off") {
      options.cudaGraph = arg != "--cuda-graph=off";
      options.cudaGraphGiven = true;
      continue;
    }
    if (arg.compare(0, 13, "--cuda-graph=") == 0)
      fail("option --cuda-graph expects on or off, got '" + arg.substr(13) +
           "'");
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
    options.given.insert(key);
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
      integer(options.steps, 0);
    } else if (key == "--lr") {
      number(options.lr, 0, true, inf, false, "> 0");
    } else if (key == "--min-lr") {
      number(options.minLr, 0, false, inf, false, ">= 0");
    } else if (key == "--warmup") {
      integer(options.warmup, 0);
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
      options.seed = parseSeed(key, value);
    } else if (key == "--data") {
      options.dataPath = value;
    } else if (key == "--val-data") {
      options.validationPath = value;
    } else if (key == "--data-format") {
      if (value != "auto" && value != "bytes" && value != "tokens")
        fail("option --data-format expects auto, bytes or tokens, got '" +
             value + "'");
      options.dataFormat = value;
    } else if (key == "--log-every") {
      integer(options.logEvery, 1);
    } else if (key == "--eval-every") {
      integer(options.evalEvery, 0);
    } else if (key == "--eval-batches") {
      integer(options.evalBatches, 1);
    } else if (key == "--dump-params") {
      options.dumpParams = value;
    } else if (key == "--dump-batches") {
      options.dumpBatches = value;
    } else if (key == "--kernel-profile-step") {
      integer(options.kernelProfileStep, 0);
    } else if (key == "--metrics") {
      options.metricsPath = value;
    } else if (key == "--save-dir") {
      options.saveDir = value;
    } else if (key == "--save-every") {
      integer(options.saveEvery, 0);
    } else if (key == "--keep") {
      integer(options.keep, 0);
    } else if (key == "--max-bad-steps") {
      integer(options.maxBadSteps, 1);
    } else if (key == "--stop-after") {
      integer(options.stopAfter, 1);
    } else if (key == "--resume") {
      options.resume = value;
    } else if (key == "--save-shard-bytes") {
      integer(options.saveShardBytes, 0);
    } else if (key == "--init-names") {
      if (value != "moe" && value != "hf")
        fail("option --init-names expects moe or hf, got '" + value + "'");
      options.initNames = value;
    } else if (key == "--init-from") {
      options.initFrom = value;
    } else {
      fail("unknown option '" + key + "' (see --help)");
    }
  }
  for (const char *option :
       {"--save-every", "--keep", "--stop-after", "--save-shard-bytes"})
    if (options.given.count(option) && options.saveDir.empty())
      fail(std::string(option) + " needs --save-dir");
  if (!options.initFrom.empty() && !options.resume.empty())
    fail("--init-from and --resume exclude each other (--init-from starts a "
         "fresh run from a model's parameters, --resume continues a run)");
  if (!options.initNames.empty() && options.initFrom.empty())
    fail("--init-names needs --init-from");
  if ((options.hfNames || options.initNames == "hf") && !hasHFNames(manifest))
    fail(std::string(options.hfNames ? "--hf-names" : "--init-names=hf") +
         ": the model '" + manifest.name +
         "' has no parameter with a Hugging Face name");
  return options;
}

void moe_driver::finishTrainOptions(TrainOptions &options,
                                    const Manifest &manifest) {
  if (!options.given.count("--warmup"))
    options.warmup = options.steps / 10;
  if (!options.given.count("--min-lr"))
    options.minLr = options.lr / 10;
  if (options.minLr > options.lr)
    fail("--min-lr (" + std::to_string(options.minLr) +
         ") must not exceed --lr (" + std::to_string(options.lr) + ")");
  if (options.warmup > options.steps)
    fail("--warmup (" + std::to_string(options.warmup) +
         ") must not exceed --steps (" + std::to_string(options.steps) + ")");
  resolveStaticSize(options.batch, manifest.batch, 4, "--batch");
  resolveStaticSize(options.length, manifest.length, 128, "--seq-len");
  if (options.batch > (int64_t(1) << 20) ||
      options.length > (int64_t(1) << 24) ||
      options.batch * options.length > (int64_t(1) << 28))
    fail("--batch x --seq-len (" + std::to_string(options.batch) + " x " +
         std::to_string(options.length) + ") is too large");
}

/// The learning rate of step t in 1..steps.
double moe_driver::learningRate(const TrainOptions &o, int64_t t) {
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
// Settings a checkpoint records
//===----------------------------------------------------------------------===//

Json moe_driver::trajectorySettings(const TrainOptions &o) {
  return Json{{"steps", o.steps},
              {"lr", o.lr},
              {"min-lr", o.minLr},
              {"warmup", o.warmup},
              {"schedule", scheduleName(o.schedule)},
              {"decay-frac", o.decayFraction},
              {"weight-decay", o.weightDecay},
              {"clip", o.clip},
              {"beta1", o.beta1},
              {"beta2", o.beta2},
              {"eps", o.eps},
              {"batch", o.batch},
              {"seq-len", o.length},
              {"seed", o.seed},
              {"data", o.dataPath},
              {"val-data", o.validationPath},
              {"data-format", o.dataFormat},
              // Not part of the trajectory: a resumed run may change them.
              {"log-every", o.logEvery},
              {"eval-every", o.evalEvery},
              {"eval-batches", o.evalBatches},
              {"save-every", o.saveEvery},
              {"keep", o.keep},
              {"max-bad-steps", o.maxBadSteps},
              {"metrics", o.metricsPath},
              {"hf-names", o.hfNames},
              {"save-shard-bytes", o.saveShardBytes}};
}

namespace {
/// The settings a resumed run takes when not given, but may change.
bool isChangeable(const std::string &key) {
  return key == "log-every" || key == "eval-every" || key == "eval-batches" ||
         key == "save-every" || key == "keep" || key == "max-bad-steps" ||
         key == "metrics" || key == "hf-names" || key == "save-shard-bytes";
}
} // namespace

void moe_driver::adoptSettings(TrainOptions &options, const Json &settings,
                               const std::string &checkpoint) {
  if (!settings.is_object())
    fail("checkpoint '" + checkpoint + "': state.json has no settings");
  // The current values of the options that were given; the others come
  // from the checkpoint.
  Json current = trajectorySettings(options);
  for (auto it = current.begin(); it != current.end(); ++it) {
    const std::string &key = it.key();
    auto saved = settings.find(key);
    // Checkpoints from before --hf-names have no such setting.
    if (saved == settings.end() &&
        (key == "hf-names" || key == "save-shard-bytes"))
      continue;
    if (saved == settings.end())
      fail("checkpoint '" + checkpoint + "': state.json has no setting '" +
           key + "'");
    bool given = options.given.count("--" + key) != 0;
    // --batch and --seq-len may come from the model's static sizes.
    if (!given && (key == "batch" || key == "seq-len") && *it != -1)
      given = true;
    if (given && isChangeable(key))
      continue;
    if (given) {
      if (*saved != *it)
        fail("--" + key + "=" + it->dump() + " differs from " + saved->dump() +
             " in checkpoint '" + checkpoint +
             "' (a resumed run keeps the settings of the run it continues)");
      continue;
    }
    auto number = [&](double &out) {
      if (!saved->is_number())
        fail("checkpoint '" + checkpoint + "': setting '" + key +
             "' is not a number");
      out = saved->get<double>();
    };
    auto integer = [&](int64_t &out) {
      if (!saved->is_number_unsigned() ||
          saved->get<uint64_t>() > uint64_t(INT64_MAX))
        fail("checkpoint '" + checkpoint + "': setting '" + key +
             "' is not an integer >= 0");
      out = saved->get<int64_t>();
    };
    if (key == "hf-names") {
      if (!saved->is_boolean())
        fail("checkpoint '" + checkpoint +
             "': setting 'hf-names' is not a boolean");
      options.hfNames = saved->get<bool>();
    } else if (key == "steps")
      integer(options.steps);
    else if (key == "log-every")
      integer(options.logEvery);
    else if (key == "eval-every")
      integer(options.evalEvery);
    else if (key == "eval-batches")
      integer(options.evalBatches);
    else if (key == "save-every")
      integer(options.saveEvery);
    else if (key == "keep")
      integer(options.keep);
    else if (key == "save-shard-bytes")
      integer(options.saveShardBytes);
    else if (key == "max-bad-steps")
      integer(options.maxBadSteps);
    else if (key == "lr")
      number(options.lr);
    else if (key == "min-lr")
      number(options.minLr);
    else if (key == "warmup")
      integer(options.warmup);
    else if (key == "decay-frac")
      number(options.decayFraction);
    else if (key == "weight-decay")
      number(options.weightDecay);
    else if (key == "clip")
      number(options.clip);
    else if (key == "beta1")
      number(options.beta1);
    else if (key == "beta2")
      number(options.beta2);
    else if (key == "eps")
      number(options.eps);
    else if (key == "batch")
      integer(options.batch);
    else if (key == "seq-len")
      integer(options.length);
    else if (key == "seed") {
      if (!saved->is_number_unsigned())
        fail("checkpoint '" + checkpoint +
             "': setting 'seed' is not an "
             "integer >= 0");
      options.seed = saved->get<uint64_t>();
    } else if (key == "schedule" || key == "data" || key == "val-data" ||
               key == "data-format" || key == "metrics") {
      if (!saved->is_string())
        fail("checkpoint '" + checkpoint + "': setting '" + key +
             "' is not a string");
      const std::string &text = saved->get_ref<const std::string &>();
      if (key == "data")
        options.dataPath = text;
      else if (key == "val-data")
        options.validationPath = text;
      else if (key == "data-format")
        options.dataFormat = text;
      else if (key == "metrics")
        options.metricsPath = text;
      else if (text == "wsd")
        options.schedule = Schedule::WSD;
      else if (text == "cosine")
        options.schedule = Schedule::Cosine;
      else if (text == "constant")
        options.schedule = Schedule::Constant;
      else
        fail("checkpoint '" + checkpoint + "': unknown schedule '" + text +
             "'");
    }
    // What was taken counts as given: no default overrides it.
    options.given.insert("--" + key);
  }
}
