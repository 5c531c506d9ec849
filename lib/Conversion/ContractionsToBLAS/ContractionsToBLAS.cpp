//===- ContractionsToBLAS.cpp - fp32 contractions to runtime calls --------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-contractions-to-blas: a linalg contraction on fp32
// buffers (C += A * B over projected-permutation maps: projections, the
// tiles of the chunked KDA and of attention, grouped experts, and the
// transposed products of gradients) becomes one call to the CPU runtime's
// moe_cpu_contract_f32 (lib/CpuRuntime), which runs it with OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOECONTRACTIONSTOBLAS
#include "moe/Conversion/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-contractions-to-blas"

/// The runtime entry point (lib/CpuRuntime/CpuRuntime.h).
static constexpr llvm::StringLiteral kContractName = "moe_cpu_contract_f32";
/// Its number of `index` arguments.
static constexpr unsigned kNumContractArgs = 23;

namespace {

/// The loop dimensions of a contraction, in the runtime's terms. A missing
/// M or N is a size-1 dimension; missing outer dimensions too.
struct ContractionPlan {
  std::optional<unsigned> m, n;
  unsigned k;
  /// Outer dimensions, outermost first; at most two.
  SmallVector<unsigned, 2> outer;
};

/// True if `value` is the block argument `arg` of the op's body.
bool isArg(Value value, Block &body, unsigned arg) {
  auto blockArg = dyn_cast<BlockArgument>(value);
  return blockArg && blockArg.getOwner() == &body &&
         blockArg.getArgNumber() == arg;
}

/// True if the body is `yield(out + in0 * in1)` in any operand order.
bool hasMulAddBody(linalg::LinalgOp op) {
  Block &body = *op.getBlock();
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add =
      dyn_cast_or_null<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!mul || !add || !yield || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != add.getResult())
    return false;
  bool mulOfInputs =
      (isArg(mul.getLhs(), body, 0) && isArg(mul.getRhs(), body, 1)) ||
      (isArg(mul.getLhs(), body, 1) && isArg(mul.getRhs(), body, 0));
  bool addOfOutput =
      (add.getLhs() == mul.getResult() && isArg(add.getRhs(), body, 2)) ||
      (add.getRhs() == mul.getResult() && isArg(add.getLhs(), body, 2));
  return mulOfInputs && addOfOutput;
}

/// The position of loop `dim` among the results of `map`, if it is one.
std::optional<unsigned> resultOf(AffineMap map, unsigned dim) {
  return map.getResultPosition(getAffineDimExpr(dim, map.getContext()));
}

/// Classifies the loops of `op`, or fails if the runtime cannot run it.
FailureOr<ContractionPlan> planContraction(linalg::LinalgOp op,
                                           int64_t minMacs) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !hasMulAddBody(op))
    return failure();
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.getElementType().isF32() || !type.isStrided())
      return failure();
  }
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (AffineMap map : maps)
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
      return failure();
  AffineMap a = maps[0], b = maps[1], c = maps[2];
  ContractionPlan plan;
  std::optional<unsigned> k;
  SmallVector<unsigned> mCandidates, nCandidates, others;
  for (auto [dim, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    bool inA = resultOf(a, dim).has_value(), inB = resultOf(b, dim).has_value();
    std::optional<unsigned> inC = resultOf(c, dim);
    if (iterator == utils::IteratorType::reduction) {
      // One reduction, read by both inputs and not written.
      if (k || inC || !inA || !inB)
        return failure();
      k = dim;
      continue;
    }
    if (!inC)
      return failure();
    if (inA && !inB)
      mCandidates.push_back(dim);
    else if (inB && !inA)
      nCandidates.push_back(dim);
    else
      others.push_back(dim);
  }
  if (!k)
    return failure();
  plan.k = *k;
  // M and N are the candidates written innermost in C; the others become
  // outer loops (with stride 0 in the input that lacks them).
  auto byPositionInC = [&](unsigned lhs, unsigned rhs) {
    return *resultOf(c, lhs) < *resultOf(c, rhs);
  };
  llvm::sort(mCandidates, byPositionInC);
  llvm::sort(nCandidates, byPositionInC);
  if (!mCandidates.empty())
    plan.m = mCandidates.pop_back_val();
  if (!nCandidates.empty())
    plan.n = nCandidates.pop_back_val();
  llvm::append_range(others, mCandidates);
  llvm::append_range(others, nCandidates);
  if (others.size() > 2)
    return failure();
  llvm::sort(others, byPositionInC);
  plan.outer.assign(others.begin(), others.end());

  // Small static contractions stay loops.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!llvm::is_contained(ranges, ShapedType::kDynamic)) {
    int64_t macs = 1;
    for (int64_t range : ranges)
      macs *= range;
    if (macs < minMacs)
      return failure();
  }
  return plan;
}

/// The `func.func private @moe_cpu_contract_f32` declaration, created in
/// `module` the first time.
FailureOr<func::FuncOp> getOrCreateContractDecl(ModuleOp module) {
  MLIRContext *context = module.getContext();
  Builder b(context);
  SmallVector<Type> inputs(kNumContractArgs, b.getIndexType());
  FunctionType type = b.getFunctionType(inputs, {});
  if (Operation *existing =
          SymbolTable::lookupSymbolIn(module, kContractName)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (!func || func.getFunctionType() != type)
      return existing->emitOpError("uses the symbol @")
             << kContractName
             << ", which -moe-contractions-to-blas reserves for the runtime's "
                "contraction";
    return func;
  }
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto func =
      func::FuncOp::create(builder, module.getLoc(), kContractName, type);
  func.setPrivate();
  return func;
}

/// Replaces `op` by a call of `callee`.
void lowerContraction(RewriterBase &rewriter, linalg::LinalgOp op,
                      const ContractionPlan &plan, func::FuncOp callee) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();

  // Per operand: aligned pointer, offset, sizes and strides.
  SmallVector<memref::ExtractStridedMetadataOp, 3> metadata;
  SmallVector<Value> args;
  for (OpOperand &operand : op->getOpOperands()) {
    Value buffer = operand.get();
    metadata.push_back(
        memref::ExtractStridedMetadataOp::create(rewriter, loc, buffer));
    args.push_back(
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer));
    args.push_back(metadata.back().getOffset());
  }
  // The size of a loop, read from the first operand that indexes with it.
  auto sizeOf = [&](std::optional<unsigned> dim) -> Value {
    if (!dim)
      return one;
    for (auto [index, map] : llvm::enumerate(maps))
      if (std::optional<unsigned> pos = resultOf(map, *dim))
        return metadata[index].getSizes()[*pos];
    llvm_unreachable("every loop of a contraction indexes an operand");
  };
  // The stride of operand `index` along a loop (0 where it lacks it).
  auto strideOf = [&](unsigned index, std::optional<unsigned> dim) -> Value {
    if (!dim)
      return zero;
    if (std::optional<unsigned> pos = resultOf(maps[index], *dim))
      return metadata[index].getStrides()[*pos];
    return zero;
  };
  // A single outer loop is the inner one (outer1), which the runtime
  // tries to fold into M or N first.
  std::optional<unsigned> outer0, outer1;
  if (plan.outer.size() == 2) {
    outer0 = plan.outer[0];
    outer1 = plan.outer[1];
  } else if (plan.outer.size() == 1) {
    outer1 = plan.outer[0];
  }
  for (std::optional<unsigned> dim :
       {plan.m, plan.n, std::optional<unsigned>(plan.k), outer0, outer1})
    args.push_back(sizeOf(dim));
  std::optional<unsigned> k = plan.k;
  for (auto dim : {plan.m, k, outer0, outer1})
    args.push_back(strideOf(0, dim));
  for (auto dim : {k, plan.n, outer0, outer1})
    args.push_back(strideOf(1, dim));
  for (auto dim : {plan.m, plan.n, outer0, outer1})
    args.push_back(strideOf(2, dim));
  assert(args.size() == kNumContractArgs && "runtime signature mismatch");
  func::CallOp::create(rewriter, loc, callee, args);
  rewriter.eraseOp(op);
}

struct MoEContractionsToBLASPass
    : public moe::impl::MoEContractionsToBLASBase<MoEContractionsToBLASPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEContractionsToBLASPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<std::pair<linalg::LinalgOp, ContractionPlan>> work;
  module.walk([&](linalg::LinalgOp op) {
    FailureOr<ContractionPlan> plan = planContraction(op, minMacs);
    if (succeeded(plan))
      work.emplace_back(op, *plan);
  });
  if (work.empty())
    return;
  FailureOr<func::FuncOp> callee = getOrCreateContractDecl(module);
  if (failed(callee))
    return signalPassFailure();
  IRRewriter rewriter(&getContext());
  for (auto &[op, plan] : work)
    lowerContraction(rewriter, op, plan, *callee);
}
