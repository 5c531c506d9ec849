//===- Contract.cpp - fp32 contractions of the CPU back end ---------------===//
//
// Part of the moe-mlir project.
//
// moe_cpu_contract_f32, which -moe-contractions-to-blas calls in place of a
// contraction linalg op on buffers: C[o0, o1, m, n] += sum_k A[o0, o1, m, k]
// * B[o0, o1, k, n] over arbitrary element strides, where o0 and o1 are
// outer loops (batch dimensions, or extra M or N dimensions, whose stride is
// 0 in the operand that lacks them). Outer loops that continue M or N
// contiguously are folded into it; each remaining (M, N, K) slice whose
// matrices have a unit stride on one side is one cblas_sgemm (OpenBLAS),
// any other slice a plain loop nest.
//
//===----------------------------------------------------------------------===//

#include "CpuRuntime.h"
#include "Profile.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>

namespace {

/// One operand's view of a 2-d slice: first pointer and element strides of
/// its row (M or K) and column (K or N) dimensions.
struct Matrix {
  float *data;
  int64_t rowStride;
  int64_t colStride;
};

/// How BLAS reads a rows x cols matrix: row-major with leading dimension
/// `ld`, transposed or not. False if neither stride is a unit one (or the
/// other one overlaps rows).
bool asBlasMatrix(const Matrix &m, int64_t rows, int64_t cols,
                  CBLAS_TRANSPOSE &trans, int64_t &ld) {
  if (m.colStride == 1 &&
      (rows == 1 || m.rowStride >= std::max<int64_t>(cols, 1))) {
    trans = CblasNoTrans;
    ld = std::max<int64_t>(m.rowStride, std::max<int64_t>(cols, 1));
    return true;
  }
  if (m.rowStride == 1 &&
      (cols == 1 || m.colStride >= std::max<int64_t>(rows, 1))) {
    trans = CblasTrans;
    ld = std::max<int64_t>(m.colStride, std::max<int64_t>(rows, 1));
    return true;
  }
  return false;
}

/// C += A * B on one slice.
void contractSlice(Matrix a, Matrix b, Matrix c, int64_t m, int64_t n,
                   int64_t k) {
  CBLAS_TRANSPOSE transA, transB, transC;
  int64_t lda, ldb, ldc;
  bool blasA = asBlasMatrix(a, m, k, transA, lda);
  bool blasB = asBlasMatrix(b, k, n, transB, ldb);
  bool blasC = asBlasMatrix(c, m, n, transC, ldc);
  if (blasA && blasB && blasC) {
    if (transC == CblasNoTrans) {
      cblas_sgemm(CblasRowMajor, transA, transB, m, n, k, 1.0f, a.data, lda,
                  b.data, ldb, 1.0f, c.data, ldc);
      return;
    }
    // C^T = B^T A^T: a column-major C is a row-major C^T.
    auto flip = [](CBLAS_TRANSPOSE t) {
      return t == CblasNoTrans ? CblasTrans : CblasNoTrans;
    };
    cblas_sgemm(CblasRowMajor, flip(transB), flip(transA), n, m, k, 1.0f,
                b.data, ldb, a.data, lda, 1.0f, c.data, ldc);
    return;
  }
  // Any other layout: a loop nest with the reduction outermost so that the
  // innermost loop runs over n.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      float av = a.data[i * a.rowStride + p * a.colStride];
      const float *brow = b.data + p * b.rowStride;
      float *crow = c.data + i * c.rowStride;
      for (int64_t j = 0; j < n; ++j)
        crow[j * c.colStride] += av * brow[j * b.colStride];
    }
}

} // namespace

extern "C" void moe_cpu_contract_f32(
    intptr_t aBase, int64_t aOffset, intptr_t bBase, int64_t bOffset,
    intptr_t cBase, int64_t cOffset, int64_t m, int64_t n, int64_t k,
    int64_t outer0, int64_t outer1, int64_t aStrideM, int64_t aStrideK,
    int64_t aStride0, int64_t aStride1, int64_t bStrideK, int64_t bStrideN,
    int64_t bStride0, int64_t bStride1, int64_t cStrideM, int64_t cStrideN,
    int64_t cStride0, int64_t cStride1) {
  if (m <= 0 || n <= 0 || outer0 <= 0 || outer1 <= 0)
    return;
  if (k <= 0)
    return;
  // Fold an outer loop into M when A and C continue their M dimension with
  // it and B does not depend on it (tokens [B, T] of a projection); the
  // same for N. Outer loop 1 is the inner one.
  auto foldInto = [](int64_t &size, int64_t &outer, int64_t &sx, int64_t ox,
                     int64_t &sy, int64_t oy, int64_t oz) {
    if (outer == 1 || oz != 0)
      return false;
    if ((size == 1 || ox == size * sx) && (size == 1 || oy == size * sy)) {
      if (size == 1) {
        sx = ox;
        sy = oy;
      }
      size *= outer;
      outer = 1;
      return true;
    }
    return false;
  };
  // Loop 1 first (inner), then loop 0 (which may continue loop 1's fold).
  if (!foldInto(m, outer1, aStrideM, aStride1, cStrideM, cStride1, bStride1))
    foldInto(n, outer1, bStrideN, bStride1, cStrideN, cStride1, aStride1);
  if (outer1 == 1) {
    if (!foldInto(m, outer0, aStrideM, aStride0, cStrideM, cStride0, bStride0))
      foldInto(n, outer0, bStrideN, bStride0, cStrideN, cStride0, aStride0);
  }
  bool profiling = moe::cpu::contractionProfiling();
  double start = profiling ? moe::cpu::now() : 0.0;
  float *a = reinterpret_cast<float *>(aBase) + aOffset;
  float *b = reinterpret_cast<float *>(bBase) + bOffset;
  float *c = reinterpret_cast<float *>(cBase) + cOffset;
  for (int64_t i0 = 0; i0 < outer0; ++i0)
    for (int64_t i1 = 0; i1 < outer1; ++i1)
      contractSlice({a + i0 * aStride0 + i1 * aStride1, aStrideM, aStrideK},
                    {b + i0 * bStride0 + i1 * bStride1, bStrideK, bStrideN},
                    {c + i0 * cStride0 + i1 * cStride1, cStrideM, cStrideN}, m,
                    n, k);
  if (profiling)
    moe::cpu::recordContraction(double(outer0) * outer1 * m * n * k,
                                moe::cpu::now() - start);
}
