//===- TileContraction.h - Tile programs' matmuls on tensor cores ---------===//
//
// Part of the moe-mlir project.
//
// A tile program's contraction (a `linalg.generic` computing
// C[m, n] += sum_k A[m, k] * B[k, n] on static f32 tiles, each operand in
// any of its two index orders) on the block's warps with `mma.sync`
// m16n8k8 tf32: each warp takes 16 x 8 tiles of C in turn, reads its A and
// B fragments straight from the tile buffers (shared memory or the block's
// global scratch), rounds them to tf32 (cvt.rna: 10 explicit mantissa bits,
// a relative error of at most 2^-11 per operand) and accumulates in fp32.
// On CUDA cores the same op gives each thread whole output elements, each a
// sequential K-long loop of dependent loads and FMAs.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_GPU_TRANSFORMS_TILECONTRACTION_H
#define MOE_GPU_TRANSFORMS_TILECONTRACTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::moe {

/// The dimensions of a contraction that `emitTensorCoreContraction` takes:
/// C's rows (`m`, a multiple of 16), its columns (`n`, a multiple of 8) and
/// the reduction (`k`, a multiple of 8), as loop dimensions of the op, and
/// which input holds m (`aInput`, 0 or 1).
struct TileContraction {
  unsigned m, n, k;
  unsigned aInput;
  int64_t rows, cols, depth;
};

/// `op` as a tensor-core contraction, if it is one: a generic with buffer
/// semantics, two f32 inputs and one f32 output of static shape, loops
/// (m, n, k) in any order with k the only reduction, A indexed by {m, k}, B
/// by {k, n} and C by {m, n} (each in either order), a body that is exactly
/// `out + a * b` (either operand order), and sizes that fit whole m16n8k8
/// tiles (m and n may swap roles to fit).
std::optional<TileContraction> matchTileContraction(linalg::GenericOp op);

/// Replaces `op` by the warp-level tensor-core loops described above,
/// followed by a barrier. `tid` is the thread index in the block (an
/// index), `blockSize` the block's threads (a multiple of 32).
void emitTensorCoreContraction(RewriterBase &rewriter, linalg::GenericOp op,
                               const TileContraction &contraction, Value tid,
                               int64_t blockSize);

} // namespace mlir::moe

#endif // MOE_GPU_TRANSFORMS_TILECONTRACTION_H
