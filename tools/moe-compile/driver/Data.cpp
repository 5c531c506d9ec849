//===- Data.cpp - Training data of the executables ------------------------===//
//
// Part of the moe-mlir project.
//
// Loading, splitting and sampling the training data (Data.h).
//
//===----------------------------------------------------------------------===//

#include "Data.h"
#include "SafeTensors.h"
#include "TokenFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <glob.h>
#include <sys/stat.h>

using namespace moe_driver;

uint64_t Dataset::count(const Shards &shards) {
  uint64_t total = 0;
  for (const auto &shard : shards)
    total += shard.size();
  return total;
}

namespace {
/// The files a --data value names: the matches of a glob (sorted), or the
/// path itself.
std::vector<std::string> expandPaths(const std::string &option,
                                     const std::string &pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos)
    return {pattern};
  glob_t matches;
  std::memset(&matches, 0, sizeof(matches));
  int status = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (status == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i)
      paths.push_back(matches.gl_pathv[i]);
  globfree(&matches);
  if (paths.empty())
    fail(option + " pattern '" + pattern + "' matches no file");
  return paths;
}

/// Reads one data file as tokens; `bytes` says whether it was a byte file.
std::vector<uint32_t> readShard(const std::string &path, DataFormat format,
                                uint64_t vocab, bool &bytes) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    fail("cannot open data file '" + path + "': " + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    fail("data file '" + path + "' is a directory");
  std::vector<unsigned char> data;
  std::string error = readWholeFile(path, data);
  if (!error.empty())
    fail("cannot read data file: " + error);
  std::vector<uint32_t> tokens;
  bytes = format == DataFormat::Bytes ||
          (format == DataFormat::Auto &&
           !hasTokenFileMagic(data.data(), data.size()));
  if (!bytes) {
    error = parseTokenFile(data.data(), data.size(), path, vocab, tokens);
    if (!error.empty())
      fail(error);
    return tokens;
  }
  if (vocab < 256)
    fail("data file '" + path +
         "' is a byte file (ids 0-255), but the model's vocab_size is " +
         std::to_string(vocab) + "; give an llm.c token file");
  tokens.assign(data.begin(), data.end());
  return tokens;
}

/// Loads every file of `pattern` as one shard each.
Shards loadShards(const std::string &option, const std::string &pattern,
                  DataFormat format, uint64_t vocab, std::string &source,
                  bool &allBytes, std::vector<std::string> *names) {
  std::vector<std::string> paths = expandPaths(option, pattern);
  Shards shards;
  for (const std::string &path : paths) {
    bool bytes = false;
    shards.push_back(readShard(path, format, vocab, bytes));
    allBytes = allBytes && bytes;
    if (names)
      names->push_back("data file '" + path + "'");
  }
  source = paths.size() == 1 && paths[0] == pattern
               ? "data file '" + pattern + "'"
               : std::to_string(paths.size()) + " data files '" + pattern + "'";
  return shards;
}

/// Moves every 20th block of min(4096, size/20) tokens of each shard into
/// `validation`.
void splitShards(Shards &train, Shards &validation) {
  Shards kept;
  for (auto &shard : train) {
    size_t size = shard.size();
    size_t block = std::min<size_t>(4096, size / 20);
    if (block == 0) {
      kept.push_back(std::move(shard));
      continue;
    }
    std::vector<uint32_t> trainPart, heldOut;
    for (size_t begin = 0, index = 0; begin < size; begin += block, ++index) {
      size_t end = std::min(size, begin + block);
      auto &part = index % 20 == 19 ? heldOut : trainPart;
      part.insert(part.end(), shard.begin() + begin, shard.begin() + end);
    }
    kept.push_back(std::move(trainPart));
    if (!heldOut.empty())
      validation.push_back(std::move(heldOut));
  }
  train = std::move(kept);
}
} // namespace

Dataset moe_driver::loadDataset(const std::string &dataPath,
                                const std::string &validationPath,
                                DataFormat format, uint64_t vocab) {
  Dataset data;
  bool allBytes = true;
  if (dataPath.empty()) {
    if (vocab < 256)
      fail("the training data are bytes (ids 0-255), but the model's "
           "vocab_size is " +
           std::to_string(vocab) + "; give --data");
    ByteSpan bytes = embeddedCorpus();
    data.source = "the embedded corpus (Debian fortunes)";
    data.train.emplace_back(bytes.data, bytes.data + bytes.size);
    data.names.push_back(data.source);
  } else {
    data.train = loadShards("--data", dataPath, format, vocab, data.source,
                            allBytes, &data.names);
  }
  for (const auto &shard : data.train)
    data.sizes.push_back(shard.size());
  if (validationPath.empty()) {
    splitShards(data.train, data.validation);
    data.validationSource = data.source;
  } else {
    data.split = false;
    data.validation = loadShards("--val-data", validationPath, format, vocab,
                                 data.validationSource, allBytes, nullptr);
  }
  data.unit = allBytes ? "bytes" : "tokens";
  return data;
}

//===----------------------------------------------------------------------===//
// Sampling
//===----------------------------------------------------------------------===//

BatchSampler::BatchSampler(const Shards &shards, int64_t length, uint64_t seed)
    : shards(shards), length(length), seed(seed) {
  startEpoch(0);
}

void BatchSampler::startEpoch(int64_t epoch) {
  epochIndex = epoch;
  position = 0;
  order.clear();
  Random random(seed ^
                (static_cast<uint64_t>(epoch) + 1) * 0xd1b54a32d192ed03ull);
  uint64_t span = static_cast<uint64_t>(length);
  uint64_t offset = random.below(span);
  for (size_t s = 0; s < shards.size(); ++s) {
    uint64_t size = shards[s].size();
    if (size < span + 1)
      continue;
    uint64_t first = std::min(offset, size - span - 1);
    for (uint64_t start = first; start + span + 1 <= size; start += span)
      order.push_back({static_cast<uint32_t>(s), start});
  }
  // Fisher-Yates.
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[random.below(i)]);
}

bool BatchSampler::restore(int64_t epoch, uint64_t cursor) {
  startEpoch(epoch);
  if (cursor > order.size())
    return false;
  position = cursor;
  return true;
}

void BatchSampler::next(int64_t batch, int32_t *inputs, int32_t *labels) {
  for (int64_t b = 0; b < batch; ++b) {
    if (position >= order.size())
      startEpoch(epochIndex + 1);
    if (order.empty())
      fail("no window of seq-len + 1 tokens in the data (internal error)");
    const Window &window = order[position++];
    const uint32_t *tokens = shards[window.shard].data() + window.start;
    for (int64_t i = 0; i < length; ++i) {
      inputs[b * length + i] = static_cast<int32_t>(tokens[i]);
      labels[b * length + i] = static_cast<int32_t>(tokens[i + 1]);
    }
  }
}
