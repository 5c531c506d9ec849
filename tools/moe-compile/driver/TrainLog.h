//===- TrainLog.h - What the training program reports ------------*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The training program's reports besides the step lines: the MoE layers'
// metrics (MaxVio and expert loads, named by the manifest), the --metrics
// file (one JSON object per step), and the progress line with an ETA that
// it keeps on a terminal.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINLOG_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINLOG_H

#include "Driver.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace moe_driver {

/// Where the train step's metrics vector keeps what the driver reports.
struct MetricLayout {
  int64_t gradNorm = -1;
  /// One per MoE layer, in manifest order.
  struct Layer {
    std::string name; ///< "layers.<i>.ffn"
    int64_t maxVio = -1, load = -1, experts = 0;
  };
  std::vector<Layer> layers;

  /// Reads the layout from the manifest's metric names; exits when
  /// grad_norm is missing (the executable is damaged).
  static MetricLayout fromManifest(const Manifest &manifest);
};

/// The --metrics file: one JSON object per line and step. A resumed run
/// keeps the lines of the steps up to the checkpoint and drops later ones
/// (written after the checkpoint by the run that stopped).
class MetricsLog {
public:
  MetricsLog() = default;
  ~MetricsLog();
  MetricsLog(const MetricsLog &) = delete;
  MetricsLog &operator=(const MetricsLog &) = delete;
  /// Opens `path` (nothing if empty); with `resumedAt` >= 0, keeps the
  /// existing lines of steps <= resumedAt. Exits on I/O errors.
  void open(const std::string &path, int64_t resumedAt);
  /// Writes `record` as one line and flushes it.
  void write(const nlohmann::json &record);

private:
  std::string path;
  FILE *file = nullptr;
};

/// The line a terminal shows between step lines: step, percentage, loss,
/// throughput and the estimated time left, redrawn in place. Off when
/// stdout is not a terminal, so that logs do not fill up with it.
class Progress {
public:
  Progress(int64_t steps, int64_t firstStep);
  bool enabled() const { return on; }
  /// Redraws the line after `step`; the time left is the wall time per
  /// step so far times the steps left.
  void update(int64_t step, float loss, double tokensPerSecond);
  /// Erases the line (before a step line or the end).
  void clear();

private:
  bool on;
  bool shown = false;
  int64_t steps, firstStep;
  std::chrono::steady_clock::time_point start;
};

/// "1h02m", "3m05s", "12s".
std::string formatDuration(double seconds);

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_TRAINLOG_H
