//===- TrainLog.cpp - What the training program reports -------------------===//
//
// Part of the moe-mlir project.
//
// The metric layout, the --metrics file and the progress line of
// TrainLog.h.
//
//===----------------------------------------------------------------------===//

#include "TrainLog.h"
#include "SafeTensors.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <unistd.h>

using namespace moe_driver;
using Json = nlohmann::json;

namespace {
bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}
} // namespace

MetricLayout MetricLayout::fromManifest(const Manifest &manifest) {
  MetricLayout layout;
  auto layer = [&](const std::string &name) -> Layer & {
    for (Layer &existing : layout.layers)
      if (existing.name == name)
        return existing;
    layout.layers.push_back(Layer{name, -1, -1, 0});
    return layout.layers.back();
  };
  for (const Metric &metric : manifest.metrics) {
    if (metric.name == "grad_norm" && metric.count == 1)
      layout.gradNorm = metric.offset;
    else if (endsWith(metric.name, ".max_vio") && metric.count == 1)
      layer(metric.name.substr(0, metric.name.size() - 8)).maxVio =
          metric.offset;
    else if (endsWith(metric.name, ".load")) {
      Layer &entry = layer(metric.name.substr(0, metric.name.size() - 5));
      entry.load = metric.offset;
      entry.experts = metric.count;
    }
  }
  if (layout.gradNorm < 0)
    fail("the model's train step names no 'grad_norm' metric (the "
         "executable is damaged)");
  return layout;
}

//===----------------------------------------------------------------------===//
// --metrics
//===----------------------------------------------------------------------===//

MetricsLog::~MetricsLog() {
  if (file)
    std::fclose(file);
}

void MetricsLog::open(const std::string &target, int64_t resumedAt) {
  path = target;
  if (path.empty())
    return;
  std::string kept;
  if (resumedAt >= 0) {
    std::vector<unsigned char> bytes;
    if (readWholeFile(path, bytes).empty()) {
      std::string text(bytes.begin(), bytes.end());
      size_t begin = 0;
      while (begin < text.size()) {
        size_t end = text.find('\n', begin);
        if (end == std::string::npos)
          break; // a line cut short by the stop: dropped
        std::string line = text.substr(begin, end - begin);
        begin = end + 1;
        Json record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (record.is_object() && record.contains("step") &&
            record["step"].is_number_unsigned() &&
            record["step"].get<uint64_t>() <= uint64_t(resumedAt))
          kept += line + "\n";
      }
    }
  }
  file = std::fopen(path.c_str(), "w");
  if (!file)
    fail("cannot write the metrics file '" + path +
         "': " + std::strerror(errno));
  if (!kept.empty() &&
      std::fwrite(kept.data(), 1, kept.size(), file) != kept.size())
    fail("cannot write the metrics file '" + path + "'");
  std::fflush(file);
}

void MetricsLog::write(const Json &record) {
  if (!file)
    return;
  // Non-finite numbers become null (JSON has no NaN).
  std::string line =
      record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size() ||
      std::fflush(file) != 0)
    fail("cannot write the metrics file '" + path +
         "': " + std::strerror(errno));
}

//===----------------------------------------------------------------------===//
// Progress line
//===----------------------------------------------------------------------===//

std::string moe_driver::formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  long total = std::lround(seconds);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof(text), "%ldh%02ldm", total / 3600,
                  total / 60 % 60);
  else if (total >= 60)
    std::snprintf(text, sizeof(text), "%ldm%02lds", total / 60, total % 60);
  else
    std::snprintf(text, sizeof(text), "%lds", total);
  return text;
}

Progress::Progress(int64_t steps, int64_t firstStep)
    : on(isatty(STDOUT_FILENO) == 1), steps(steps), firstStep(firstStep),
      start(std::chrono::steady_clock::now()) {}

void Progress::update(int64_t step, float loss, double tokensPerSecond) {
  if (!on)
    return;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double done = static_cast<double>(step - firstStep + 1);
  double left = elapsed / done * static_cast<double>(steps - step);
  std::printf("\r\033[K[step %ld/%ld %.1f%% loss %.4g %.0f tok/s eta %s]",
              static_cast<long>(step), static_cast<long>(steps),
              100.0 * static_cast<double>(step) / static_cast<double>(steps),
              loss, tokensPerSecond, formatDuration(left).c_str());
  std::fflush(stdout);
  shown = true;
}

void Progress::clear() {
  if (!on || !shown)
    return;
  std::printf("\r\033[K");
  shown = false;
}
