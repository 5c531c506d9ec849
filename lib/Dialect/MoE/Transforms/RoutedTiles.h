//===- RoutedTiles.h - Tile helpers of the routed-expert lowerings -*- C++
//-*-===//
//
// Part of the moe-mlir project.
//
// Pieces of tile IR that the forward routing lowering (-moe-fuse-routing)
// and the gradient lowering (-moe-lower-routing-grad) share: padded row
// tiles, an expert's weight slice, the inverse of a dispatch's source_slot
// and the per-token sum over slots. Private to lib/Dialect/MoE/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_DIALECT_MOE_TRANSFORMS_ROUTEDTILES_H
#define MOE_LIB_DIALECT_MOE_TRANSFORMS_ROUTEDTILES_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::moe {

/// `value` cast to `type` (a tensor.cast) when their static shapes differ.
Value castTensorTo(ImplicitLocOpBuilder &b, Value value, Type type);

/// Rows `[offset, offset + rows)` (index values) of the 1-D or 2-D `source`,
/// padded below with `padValue` to a static `size` rows.
Value buildPaddedRows(ImplicitLocOpBuilder &b, Value source, Value offset,
                      Value rows, int64_t size, Value padValue);

/// The `[rows, cols]` matrix of expert `expert` (an index) out of the
/// grouped `weights: [E, rows, cols]`.
Value buildExpertSlice(ImplicitLocOpBuilder &b, Value weights, Value expert);

/// Inverts a dispatch's `sourceSlot: [M]` (a permutation of `[0, M)`):
/// `slotRow[sourceSlot[m]] = m`, an i64 tensor of the same size.
Value buildSlotRows(ImplicitLocOpBuilder &b, Value sourceSlot);

/// `result[n, c] = sum_i w[n, i] * rows[slotRow[n * k + i], c]` summed in
/// fp32 over `i` in order, for `rows: [M, d]`, `slotRow: [M]` and
/// `perSlot: [N, k]`: `w = perSlot` when `weighted`, else 1 (then `perSlot`,
/// of any element type, only gives N and k). Returns `[N, d]` f32.
Value buildSlotSum(ImplicitLocOpBuilder &b, Value rows, Value slotRow,
                   Value perSlot, bool weighted);

} // namespace mlir::moe

#endif // MOE_LIB_DIALECT_MOE_TRANSFORMS_ROUTEDTILES_H
