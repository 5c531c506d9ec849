//===- Sharding.h - How -moe-shard marks what it shards ---------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// -moe-shard marks each moe.model with its data-parallel degree;
// -moe-build-training-step copies the mark onto the moe.route ops of the
// gradient and the training step, which -moe-fuse-routing reads
// (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_SHARDING_H
#define MOE_DIALECT_MOE_TRANSFORMS_SHARDING_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir {
class RewriterBase;
} // namespace mlir

namespace mlir::moe {

/// `moe.data_parallel = D : i64` on a moe.model or a moe.route.
inline constexpr llvm::StringLiteral kDataParallelAttrName =
    "moe.data_parallel";

/// The degree `op` is marked with under `name`; 1 when unmarked.
inline int64_t getShardingDegree(Operation *op, llvm::StringRef name) {
  if (auto degree = op->getAttrOfType<IntegerAttr>(name))
    return degree.getInt();
  return 1;
}

/// The number of ranks `op` is marked with; 1 when unmarked.
inline int64_t getDataParallel(Operation *op) {
  return getShardingDegree(op, kDataParallelAttrName);
}

/// Marks `op` with the degree `ranks` (> 1).
inline void setDataParallel(Operation *op, int64_t ranks) {
  Builder b(op->getContext());
  op->setAttr(kDataParallelAttrName, b.getI64IntegerAttr(ranks));
}

/// `moe.expert_parallel = P : i64` on a moe.model: groups of P ranks share
/// the experts of every MoE layer.
inline constexpr llvm::StringLiteral kExpertParallelAttrName =
    "moe.expert_parallel";

/// The expert-parallel degree `op` is marked with; 1 when unmarked.
inline int64_t getExpertParallel(Operation *op) {
  return getShardingDegree(op, kExpertParallelAttrName);
}

/// Expert parallelism over groups of `ranks` (ExpertParallel.cpp): every
/// moe.expert_ffn and moe.expert_ffn_grad in `func` computes this rank's
/// E / ranks experts on the rows that every rank of its group sends it.
/// Fails (with an error on the op) when E is not a multiple of `ranks`.
LogicalResult shardExperts(Operation *func, int64_t ranks,
                           RewriterBase &rewriter);

} // namespace mlir::moe

#endif // MOE_DIALECT_MOE_TRANSFORMS_SHARDING_H
