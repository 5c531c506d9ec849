//===- MemRefCopyTest.cpp - memrefCopy against direct indexing ------------===//
//
// Part of the moe-mlir project.
//
// Copies random strided views (transposed, sliced, with offsets, ranks 0-4,
// 4- and 8-byte elements) with memrefCopy and checks every element against
// the same copy done by explicit index arithmetic. Host logic only.
//
//===----------------------------------------------------------------------===//

#include "moert/moert_mlir.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

int failures = 0, checks = 0;

/// A ranked descriptor stored as 64-bit words, as MLIR lays it out.
struct Descriptor {
  std::vector<int64_t> words;
  moertUnrankedMemRef unranked;
  Descriptor(char *base, int64_t offset, const std::vector<int64_t> &sizes,
             const std::vector<int64_t> &strides) {
    int64_t rank = sizes.size();
    words.push_back(reinterpret_cast<int64_t>(base));
    words.push_back(reinterpret_cast<int64_t>(base));
    words.push_back(offset);
    words.insert(words.end(), sizes.begin(), sizes.end());
    words.insert(words.end(), strides.begin(), strides.end());
    unranked = {rank, words.data()};
  }
};

/// Element offset of multi-index `index` in a view.
int64_t offsetOf(const std::vector<int64_t> &index, int64_t offset,
                 const std::vector<int64_t> &strides) {
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * strides[d];
  return offset;
}

/// A random view of `sizes` into a buffer: a random dimension order
/// (transpose), padding between rows (slices) and a leading offset.
struct View {
  std::vector<int64_t> strides;
  int64_t offset;
  int64_t extent; // elements the buffer needs
};

View randomView(const std::vector<int64_t> &sizes, std::mt19937_64 &rng) {
  int64_t rank = sizes.size();
  std::vector<int64_t> order(rank);
  for (int64_t d = 0; d < rank; ++d)
    order[d] = d;
  std::shuffle(order.begin(), order.end(), rng);
  View view{std::vector<int64_t>(rank, 1), int64_t(rng() % 5), 0};
  int64_t stride = 1;
  for (int64_t d : order) {
    view.strides[d] = stride;
    stride *= sizes[d] + int64_t(rng() % 3); // padding
  }
  view.extent = view.offset + stride + 1;
  return view;
}

template <typename T>
void checkOne(std::mt19937_64 &rng, int64_t rank) {
  std::vector<int64_t> sizes(rank);
  int64_t count = 1;
  for (auto &size : sizes) {
    size = 1 + int64_t(rng() % 5);
    count *= size;
  }
  View src = randomView(sizes, rng), dst = randomView(sizes, rng);
  std::vector<T> srcData(src.extent), dstData(dst.extent, T(-1));
  for (auto &x : srcData)
    x = T(rng() % 1000);
  std::vector<T> expected = dstData;
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < count; ++n) {
    expected[offsetOf(index, dst.offset, dst.strides)] =
        srcData[offsetOf(index, src.offset, src.strides)];
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == sizes[d]; --d)
      index[d] = 0;
  }
  Descriptor from(reinterpret_cast<char *>(srcData.data()), src.offset, sizes,
                  src.strides);
  Descriptor to(reinterpret_cast<char *>(dstData.data()), dst.offset, sizes,
                dst.strides);
  memrefCopy(sizeof(T), &from.unranked, &to.unranked);
  ++checks;
  if (dstData != expected) {
    ++failures;
    std::printf("FAIL: rank %lld copy of %zu-byte elements differs\n",
                static_cast<long long>(rank), sizeof(T));
  }
}

} // namespace

int main() {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    checkOne<float>(rng, trial % 5);
    checkOne<double>(rng, trial % 5);
  }
  if (failures) {
    std::printf("moert-memref-copy-test: %d of %d checks failed\n", failures,
                checks);
    return 1;
  }
  std::printf("moert-memref-copy-test: all %d checks passed\n", checks);
  return 0;
}
