//===- Data.h - Training data of the executables -----------------*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// The training program's data: the embedded corpus, byte files and llm.c
// token files (TokenFile.h), one file or a glob of shards; the split into
// training and held-out tokens; and the batches, windows of seq-len + 1
// tokens drawn by a seeded shuffle whose position a checkpoint records.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_TOOLS_MOE_COMPILE_DRIVER_DATA_H
#define MOE_TOOLS_MOE_COMPILE_DRIVER_DATA_H

#include "Driver.h"

#include <string>
#include <vector>

namespace moe_driver {

enum class DataFormat { Auto, Bytes, Tokens };

/// Token ids in shards: a window never crosses from one shard into the
/// next.
using Shards = std::vector<std::vector<uint32_t>>;

struct Dataset {
  /// What the data are, for messages ("data file 'x'", ...).
  std::string source, validationSource;
  /// "bytes" when every file is a byte file, else "tokens".
  std::string unit;
  Shards train, validation;
  /// Whether the held-out part comes from a split (every 20th block).
  bool split = true;
  /// Each training shard's file ("data file 'x'") and size before the
  /// split.
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;

  static uint64_t count(const Shards &shards);
};

/// Loads `dataPath` (a file or a glob; empty: the embedded corpus) and,
/// when not empty, `validationPath` as the held-out data; without it every
/// 20th block of min(4096, size/20) tokens of each shard is held out.
/// Token files are checked against `vocab`; byte files need vocab >= 256.
/// Exits with an error on a missing, unreadable or malformed file.
Dataset loadDataset(const std::string &dataPath,
                    const std::string &validationPath, DataFormat format,
                    uint64_t vocab);

/// Batches of windows of `length` + 1 tokens. Each epoch draws an offset
/// o < length and enumerates the windows that start at o + k * length in
/// every shard (o clamped so that each shard holds one), then shuffles them
/// with a generator seeded from the seed and the epoch. Batches take the
/// next windows of the order, crossing into the next epoch when it runs
/// out. The position (epoch, cursor) is all a checkpoint needs.
class BatchSampler {
public:
  BatchSampler(const Shards &shards, int64_t length, uint64_t seed);
  /// Fills `batch` rows of inputs (a window's first `length` tokens) and
  /// labels (its last `length`).
  void next(int64_t batch, int32_t *inputs, int32_t *labels);
  int64_t epoch() const { return epochIndex; }
  uint64_t cursor() const { return position; }
  /// The windows of the current epoch.
  uint64_t windows() const { return order.size(); }
  /// Moves to `cursor` of `epoch`; false if the epoch has fewer windows.
  bool restore(int64_t epoch, uint64_t cursor);

private:
  void startEpoch(int64_t epoch);
  struct Window {
    uint32_t shard;
    uint64_t start;
  };
  const Shards &shards;
  int64_t length;
  uint64_t seed;
  int64_t epochIndex = 0;
  uint64_t position = 0;
  std::vector<Window> order;
};

} // namespace moe_driver

#endif // MOE_TOOLS_MOE_COMPILE_DRIVER_DATA_H
