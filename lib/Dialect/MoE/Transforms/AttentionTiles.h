//===- AttentionTiles.h - Pieces shared by the attention tilers -*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// What the flash-attention forward (TileAttention.cpp) and backward
// (TileAttentionBackward.cpp) of -moe-tile-attention share: the padded
// sequence, the static per-(batch, head) row tiles and the causal mask.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_DIALECT_MOE_TRANSFORMS_ATTENTIONTILES_H
#define MOE_LIB_DIALECT_MOE_TRANSFORMS_ATTENTIONTILES_H

#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

namespace mlir::moe::attention_tiles {

/// The sizes of a `[B, T, H, D]` sequence padded along T to a multiple of
/// the larger of the query and key tiles (one divides the other).
struct PaddedSequence {
  Value batch, length, padded;
  OpFoldResult heads;
  /// ceil(length / tile) of each tile size: the tiles holding a real row.
  Value numQueryTiles, numKeyTiles;
};

/// The padded sizes of the sequence of `query: [B, T, H, D]`.
PaddedSequence padSequence(ImplicitLocOpBuilder &b, Value query,
                           int64_t queryTile, int64_t keyTile);

/// Rows `[start, start + rows)` of head `head` of batch `batch` of the fp32
/// `x: [B, Tp, H, D]` (static D), as a static `[rows, D]` tile.
Value headRows(ImplicitLocOpBuilder &b, Value x, Value batch, Value head,
               Value start, int64_t rows);

/// `scores: [Br, Bc]` of the query rows from `queryStart` against the keys
/// from `keyStart`, with every key after its query replaced by -inf (a
/// select, never the addition of a large negative number).
Value causalMasked(ImplicitLocOpBuilder &b, Value scores, Value queryStart,
                   Value keyStart);

} // namespace mlir::moe::attention_tiles

#endif // MOE_LIB_DIALECT_MOE_TRANSFORMS_ATTENTIONTILES_H
