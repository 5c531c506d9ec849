//===- MemRefCopy.cpp - memrefCopy of MLIR's C runner-utils ABI -----------===//
//
// Part of the moe-mlir project.
//
// Host code lowered from memref.copy between strided buffers calls
// `memrefCopy`. libmoert_mlir.so provides it, so that compiled host code
// needs no MLIR library at run time (the GPU machine has none).
//
//===----------------------------------------------------------------------===//

#include "moert/moert_mlir.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// The ranked descriptor fields of an unranked memref: aligned pointer,
/// offset, sizes[rank], strides[rank] (after the allocated pointer).
struct RankedView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
};

RankedView viewOf(const moertUnrankedMemRef *memref) {
  auto *words = static_cast<const int64_t *>(memref->descriptor);
  return {reinterpret_cast<char *>(words[1]), words[2], words + 3,
          words + 3 + memref->rank};
}
} // namespace

extern "C" void memrefCopy(int64_t elementSize, moertUnrankedMemRef *src,
                           moertUnrankedMemRef *dst) {
  int64_t rank = src->rank;
  RankedView from = viewOf(src), to = viewOf(dst);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= from.sizes[d];
  if (count == 0)
    return;
  // Walk every index in row-major order, keeping both element offsets.
  std::vector<int64_t> index(rank, 0);
  int64_t srcOffset = from.offset, dstOffset = to.offset;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(to.aligned + dstOffset * elementSize,
                from.aligned + srcOffset * elementSize, elementSize);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < from.sizes[d]) {
        srcOffset += from.strides[d];
        dstOffset += to.strides[d];
        break;
      }
      srcOffset -= from.strides[d] * (from.sizes[d] - 1);
      dstOffset -= to.strides[d] * (to.sizes[d] - 1);
      index[d] = 0;
    }
  }
}
