//===- Transforms.h - moe rewrite patterns ----------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Pattern sets of the moe transforms, so that pipelines and tests can use
// them without their pass wrappers.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H
#define MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir {
class RewritePatternSet;
class Operation;
class RewriterBase;

namespace moe {
class MLAAttentionOp;
class MLAAttentionGradOp;

/// Adds the patterns that rewrite each layer op (kda_layer, mla_layer,
/// moe_ffn, attn_res, lm_head) into primitive moe ops and upstream ops.
void populateDecomposeLayerPatterns(RewritePatternSet &patterns);

/// Tile sizes of the causal attention forward: query rows and keys per tile.
struct AttentionTileSizes {
  int64_t queryTile = 64;
  int64_t keyTile = 64;
};

/// Replaces `op` by the causal online-softmax forward of ALGORITHMS.md
/// section 3.2 (the lowering of -moe-tile-attention): an scf.forall over
/// (batch, head, query tile), an scf.for over the key tiles below the
/// diagonal and the masked diagonal tiles, fp32 tiles throughout. Emits an
/// error on `op` and returns failure, leaving it in place, when `D_v` is
/// dynamic or the tile sizes are not positive with one dividing the other.
LogicalResult tileAttention(RewriterBase &rewriter, MLAAttentionOp op,
                            const AttentionTileSizes &tiles);

/// Replaces `op` by the flash-attention backward of ALGORITHMS.md section
/// 3.3 (-moe-tile-attention): dD = rowsum(d_output o output) and the gate's
/// adjoint on whole tensors, then an scf.forall over (batch, head, key
/// tile) that walks the query tiles for dK and dV, and one over (batch,
/// head, query tile) that walks the key tiles for dQ, recomputing the
/// probabilities from the saved log-sum-exp; fp32 tiles throughout. Fails
/// like tileAttention.
LogicalResult tileAttentionGrad(RewriterBase &rewriter, MLAAttentionGradOp op,
                                const AttentionTileSizes &tiles);

/// Tile sizes of the routed-expert lowering (-moe-fuse-routing).
struct RoutingTileSizes {
  /// Tokens per tile of the routing kernel.
  int64_t tokenTile = 64;
  /// Most groups of the routing kernel; each walks a contiguous run of token
  /// tiles and keeps its counts (and histogram) to itself.
  int64_t tokenGroups = 16;
  /// Rows per tile of the grouped expert GEMMs.
  int64_t rowTile = 32;
};

/// What fuseRouting lowered.
struct RoutingLoweringCounts {
  int64_t routes = 0, fusedDispatches = 0, dispatches = 0, expertFFNs = 0,
          combines = 0;
};

/// Lowers every moe.route, moe.dispatch, moe.expert_ffn and moe.combine under
/// `root` into tile IR (the rewrite of -moe-fuse-routing): a routing kernel
/// per route that also prepares the dispatches of its indices, the bias
/// update, grouped GEMMs over expert-sorted rows, and a weighted gather.
/// Emits an error on each op whose static-shape requirements fail, leaves it
/// in place and returns failure. `counts`, if given, receives the tally.
LogicalResult fuseRouting(RewriterBase &rewriter, Operation *root,
                          const RoutingTileSizes &tiles,
                          RoutingLoweringCounts *counts = nullptr);

} // namespace moe
} // namespace mlir

#endif // MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H
