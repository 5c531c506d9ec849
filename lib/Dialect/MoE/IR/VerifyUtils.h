//===- VerifyUtils.h - Shared checks of moe op verifiers --------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Shape and value checks that many moe verifiers share, so that every op
// reports a mismatch with the same wording: the operand's name, the expected
// shape and the shape it has.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_LIB_DIALECT_MOE_IR_VERIFYUTILS_H
#define MOE_LIB_DIALECT_MOE_IR_VERIFYUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace mlir::moe::verification {

/// A dimension a check does not constrain. It also stands for dimensions
/// that are themselves dynamic, which match anything.
constexpr int64_t kAnyDim = ShapedType::kDynamic;

/// A dimension computed from attribute values that does not fit in int64_t
/// (say `num_experts + 1` for num_experts = 2^63 - 1). No tensor has it, and
/// verifyShape reports it as an overflow instead of matching anything.
constexpr int64_t kOverflowDim = -2;

/// Returns `a * b`: kOverflowDim when either is kOverflowDim or the product
/// overflows, else kAnyDim when either is unknown.
int64_t mulDims(int64_t a, int64_t b);

/// Returns `a + b`, with the same rules as mulDims.
int64_t addDims(int64_t a, int64_t b);

/// Checks that `type` is a ranked tensor of `expected.size()` dimensions whose
/// known dimensions equal the known entries of `expected`. On failure emits
/// "expects <name> to have shape [..], got [..]" on `op`, or, when an entry
/// of `expected` is kOverflowDim, that the shape overflows.
LogicalResult verifyShape(Operation *op, StringRef name, Type type,
                          ArrayRef<int64_t> expected);

/// Checks that `type` is a ranked tensor of rank at least `minRank`.
LogicalResult verifyMinRank(Operation *op, StringRef name, Type type,
                            int64_t minRank);

/// Checks that an epsilon (or scale) attribute is finite and positive.
LogicalResult verifyPositiveFinite(Operation *op, StringRef name, double value);

/// Dimension `i` of a ranked tensor type.
int64_t dimOf(Type type, unsigned i);

/// The dimensions of a ranked tensor type without its last one.
SmallVector<int64_t> leadingDims(Type type);

/// `dims` followed by `tail`.
SmallVector<int64_t> concatDims(ArrayRef<int64_t> dims, ArrayRef<int64_t> tail);

/// The operand checks that moe.kda and moe.kda_grad share: q and k of one
/// [B, T, H, K] shape with a static K, v [B, T, H, V], log_decay like q,
/// beta [B, T, H], `output` (named `outputName`: the forward's output or the
/// gradient's output adjoint) [B, T, H, V] with v's element type, and the
/// optional initial state. Returns the state shape of the layout
/// ([B, H, K, V] when `keyMajor`, else [B, H, V, K]).
FailureOr<SmallVector<int64_t>>
verifyKDAOperands(Operation *op, Type query, Type key, Type value,
                  Type logDecay, Type beta, Type initialState,
                  StringRef outputName, Type output, bool keyMajor);

} // namespace mlir::moe::verification

#endif // MOE_LIB_DIALECT_MOE_IR_VERIFYUTILS_H
