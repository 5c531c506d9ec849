//===- GenerateGEMMKernels.cpp - Tensor-core GEMMs for dense projections --===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-gemm-kernels, the GPU back end's kernel generator
// for the dense contractions of the host code (issue #13): the projections
// that TensorBuilder::project and TensorBuilder::contract build as
// linalg.generic ops, and linalg.matmul, become launches of one generated
// GEMM kernel per shape; and the weight gradients of those projections
// (the training step's sums over the tokens of an input times an output
// gradient, [rows..., m] x [rows..., n] -> [m, n]), which become row-split
// GEMM launches instead of the split column reductions of
// -moe-map-forall-to-gpu.
//
// The kernels themselves come from the GEMM emitter (moe/GPU/GemmEmitter.h).
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/GPU/DeviceEmitter.h"
#include "moe/GPU/GemmEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

namespace mlir::moe {
#define GEN_PASS_DEF_MOEGENERATEGEMMKERNELS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

namespace {

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

/// A contraction the pass takes: the op, the operand numbers of its two
/// factors (the activation, or x of a weight gradient, then the weight, or
/// its dy) and its kernel's shape. The operands themselves are read when it
/// is replaced: replacing an earlier contraction may have replaced their
/// producer.
struct Contraction {
  linalg::LinalgOp op;
  unsigned inputIndex, weightIndex;
  GemmShape shape;
};

/// `v` as the block argument it is, or the bf16 block argument it extends.
static BlockArgument operandArgument(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return dyn_cast<BlockArgument>(v);
}

/// Whether `op` is inside a tile loop or a kernel (other generators' tiles).
static bool isInsideTilesOrKernels(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (isa<scf::ForallOp, gpu::LaunchOp, gpu::GPUFuncOp, gpu::GPUModuleOp>(
            parent))
      return true;
  return false;
}

/// The constant `init` fills, if it is a linalg.fill of a float constant.
static std::optional<double> filledConstant(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  FloatAttr value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
    return std::nullopt;
  return value.getValueAsDouble();
}

/// The factors of `product`, a tree of arith.mulf: block arguments
/// (arith.extf-ed or not); multiplications by the constant 1 (what the
/// reverse mode leaves) are looked through. False if anything else is.
static bool collectFactors(Value product, SmallVectorImpl<BlockArgument> &out) {
  if (auto mul = product.getDefiningOp<arith::MulFOp>()) {
    for (Value side : {mul.getLhs(), mul.getRhs()}) {
      if (matchPattern(side, m_OneFloat()))
        continue;
      if (!collectFactors(side, out))
        return false;
    }
    return true;
  }
  if (BlockArgument arg = operandArgument(product)) {
    out.push_back(arg);
    return true;
  }
  return false;
}

/// The two inputs whose product `generic` accumulates, if its one result is
/// `out + x * y` (either order, the factors extended or not, times 1 or
/// not) and whatever else its body computes is unused, as the reverse mode
/// leaves a projection's body in its adjoints.
static bool productOperands(linalg::GenericOp generic, OpOperand *&x,
                            OpOperand *&y) {
  if (generic.getNumDpsInits() != 1 || generic->getNumResults() != 1)
    return false;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  BlockArgument acc =
      generic.getMatchingBlockArgument(generic.getDpsInitOperand(0));
  if (!add || !add.getType().isF32() ||
      (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  SmallVector<BlockArgument> factors;
  if (!collectFactors(add.getLhs() == acc ? add.getRhs() : add.getLhs(),
                      factors) ||
      factors.size() != 2 || factors[0] == factors[1])
    return false;
  for (BlockArgument factor : factors)
    if (factor.getOwner() != &body || factor == acc)
      return false;
  x = generic.getMatchingOpOperand(factors[0]);
  y = generic.getMatchingOpOperand(factors[1]);
  return true;
}

/// The checks both forms share: the factors x and y f32 or bf16 (under
/// f32-exact, bf16 only) and the output a filled constant; fills c's
/// operand kinds and initial value. "" when they pass, else why not.
static std::string checkOperands(linalg::LinalgOp op, OpOperand *x,
                                 OpOperand *y, bool f32Exact, Contraction &c) {
  Type xType = getElementTypeOrSelf(x->get().getType());
  Type yType = getElementTypeOrSelf(y->get().getType());
  auto operandKind = [](Type t) { return t.isF32() || t.isBF16(); };
  if (!operandKind(xType) || !operandKind(yType))
    return "an operand is neither f32 nor bf16";
  c.shape.aF32 = xType.isF32();
  c.shape.bF32 = yType.isF32();
  if (f32Exact && (c.shape.aF32 || c.shape.bF32))
    return "an operand is f32 and operand-type is f32-exact";
  std::optional<double> init = filledConstant(op.getDpsInits()[0]);
  if (!init)
    return "the output is not a linalg.fill of a constant";
  c.shape.init = *init;
  return "";
}

/// Decides whether `op` is a weight gradient the pass takes: a generic
/// whose result `out + x * y` (any other operation of its body unused, as
/// the reverse mode leaves them) sums over its reduction loops, x [rows...,
/// m] and y [rows..., n] into [m, n], the rows being the reduction loops in
/// loop order. std::nullopt when it is not of that form, "" when it is
/// taken, else why not.
static std::optional<std::string> analyzeRowSum(linalg::GenericOp op,
                                                bool f32Exact, Contraction &c) {
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !op.hasPureTensorSemantics() || isInsideTilesOrKernels(op))
    return std::nullopt;
  int64_t loops = op.getNumLoops();
  int64_t reductions = op.getNumReductionLoops();
  if (reductions < 1 || loops != reductions + 2)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  OpOperand *x, *y;
  if (!productOperands(op, x, y))
    return std::nullopt;

  // Maps: x (r..., P), y (r..., Q), out (P, Q), with r... the reduction
  // loops in order: the rows of x and y are the same rows.
  MLIRContext *ctx = op.getContext();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto rowsThen = [&](AffineExpr last) {
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < loops; ++i)
      if (iterators[i] == utils::IteratorType::reduction)
        exprs.push_back(getAffineDimExpr(i, ctx));
    exprs.push_back(last);
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  if (outMap.getNumResults() != 2 || !outMap.isProjectedPermutation())
    return std::nullopt;
  AffineMap xMap = rowsThen(outMap.getResult(0)),
            yMap = rowsThen(outMap.getResult(1));
  if (op.getMatchingIndexingMap(x) != xMap)
    std::swap(x, y);
  if (op.getMatchingIndexingMap(x) != xMap ||
      op.getMatchingIndexingMap(y) != yMap)
    return std::nullopt;

  c.op = op;
  c.inputIndex = x->getOperandNumber();
  c.weightIndex = y->getOperandNumber();
  c.shape.rowSum = true;
  c.shape.transposed = false;
  c.shape.k = 0;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType.getElementType().isF32() || !resultType.hasStaticShape())
    return std::string("the weight gradient is not a static f32 matrix");
  if (std::string why = checkOperands(op, x, y, f32Exact, c); !why.empty())
    return why;
  c.shape.m = resultType.getDimSize(0);
  c.shape.n = resultType.getDimSize(1);
  if (c.shape.m % 8 != 0 || c.shape.n % 8 != 0)
    return std::string("the weight gradient's sizes are not multiples of 8");
  return std::string();
}

/// Decides whether `op` is taken: std::nullopt when it is no contraction
/// (left alone silently), "" when it is taken (filling `c`), else why a
/// contraction is declined.
static std::optional<std::string> analyze(linalg::LinalgOp op, bool f32Exact,
                                          Contraction &c) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic && !isa<linalg::MatmulOp>(op.getOperation()))
    return std::nullopt;
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1 ||
      op.getNumLoops() < 2)
    return std::nullopt;
  // The reduction is one of the last two loops: [m..., n, k] as projections
  // are built, [m..., k, n] as the reverse mode builds their input
  // gradients.
  int64_t loops = op.getNumLoops();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t kLoop = iterators[loops - 1] == utils::IteratorType::reduction
                      ? loops - 1
                      : loops - 2;
  if (iterators[kLoop] != utils::IteratorType::reduction)
    return std::nullopt;
  OpOperand *x, *y;
  if (generic) {
    if (!productOperands(generic, x, y))
      return std::nullopt;
  } else {
    if (op.getNumDpsInputs() != 2)
      return std::nullopt;
    x = op.getDpsInputOperand(0);
    y = op.getDpsInputOperand(1);
  }
  if (!op.hasPureTensorSemantics() || isInsideTilesOrKernels(op))
    return std::nullopt;

  // The input (m..., k), the weight (k, n) or (n, k), the output (m..., n).
  if (loops < 3)
    return std::string("no row dimension (a vector-matrix product)");
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(2 * loops - 3 - kLoop, ctx),
             k = getAffineDimExpr(kLoop, ctx);
  SmallVector<AffineExpr> rowExprs;
  for (int64_t i = 0; i < loops - 2; ++i)
    rowExprs.push_back(getAffineDimExpr(i, ctx));
  auto mapOf = [&](ArrayRef<AffineExpr> last) {
    SmallVector<AffineExpr> exprs(rowExprs);
    exprs.append(last.begin(), last.end());
    return AffineMap::get(loops, 0, exprs, ctx);
  };
  AffineMap inputMap = mapOf({k}), outputMap = mapOf({n});
  AffineMap plain = AffineMap::get(loops, 0, {k, n}, ctx);
  AffineMap transposed = AffineMap::get(loops, 0, {n, k}, ctx);
  if (op.getMatchingIndexingMap(x) != inputMap)
    std::swap(x, y);
  AffineMap weightMap = op.getMatchingIndexingMap(y);
  if (op.getMatchingIndexingMap(x) != inputMap ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)) != outputMap ||
      (weightMap != plain && weightMap != transposed))
    return std::string("the indexing maps are not a projection's (m..., k) "
                       "x (k, n) or (n, k) -> (m..., n)");
  c.op = op;
  c.inputIndex = x->getOperandNumber();
  c.weightIndex = y->getOperandNumber();
  c.shape.transposed = weightMap == transposed;

  auto inputType = cast<RankedTensorType>(x->get().getType());
  auto weightType = cast<RankedTensorType>(y->get().getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType.getElementType().isF32())
    return std::string("the result is not f32");
  if (std::string why = checkOperands(op, x, y, f32Exact, c); !why.empty())
    return why;
  int64_t kSize = inputType.getShape().back();
  if (!weightType.hasStaticShape() || ShapedType::isDynamic(kSize) ||
      kSize % 8 != 0)
    return std::string("the reduction size is not a static multiple of 8");
  int64_t nSize = weightType.getDimSize(c.shape.transposed ? 0 : 1);
  if (nSize % 8 != 0)
    return std::string("the output width is not a multiple of 8");
  c.shape.k = kSize;
  c.shape.n = nSize;
  return std::string();
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// `mem` ([d0, ..., last]) as [d0 * ... , last] with a dynamic row count.
static Value asRows(ImplicitLocOpBuilder &b, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  int64_t rank = type.getRank();
  if (rank > 2) {
    ReassociationIndices leading;
    for (int64_t i = 0; i < rank - 1; ++i)
      leading.push_back(i);
    mem = memref::CollapseShapeOp::create(
        b, mem,
        ArrayRef<ReassociationIndices>{leading,
                                       ReassociationIndices{rank - 1}});
  }
  auto rowsType = MemRefType::get(
      {ShapedType::kDynamic, type.getShape().back()}, type.getElementType());
  if (cast<MemRefType>(mem.getType()) != rowsType)
    mem = memref::CastOp::create(b, rowsType, mem);
  return mem;
}

/// Replaces the weight gradient `c.op` with its row-split GEMM.
static void launchRowSum(GemmEmitter &kernels, const Contraction &c) {
  Operation *op = c.op;
  ImplicitLocOpBuilder b(op->getLoc(), op);
  DeviceEmitter e(b);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value out = memref::AllocOp::create(
      b, MemRefType::get(resultType.getShape(), resultType.getElementType()));
  Value x = asRows(b, readOnlyBuffer(b, op->getOperand(c.inputIndex)));
  Value y = asRows(b, readOnlyBuffer(b, op->getOperand(c.weightIndex)));
  kernels.launchRowSum(e, c.shape, x, y, out);
  Value tensor = bufferization::ToTensorOp::create(b, resultType, out,
                                                   /*restrict=*/true,
                                                   /*writable=*/true);
  op->getResult(0).replaceAllUsesWith(tensor);
  op->erase();
}

/// Replaces `c.op` with a launch of its GEMM kernel.
static void launchGemm(GemmEmitter &kernels, const Contraction &c) {
  if (c.shape.rowSum)
    return launchRowSum(kernels, c);
  linalg::LinalgOp linalgOp = c.op;
  Operation *op = linalgOp.getOperation();
  ImplicitLocOpBuilder b(op->getLoc(), op);
  DeviceEmitter e(b);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value init = linalgOp.getDpsInits()[0];
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < resultType.getRank(); ++i)
    sizes.push_back(tensor::DimOp::create(b, init, i));
  Value out = memref::AllocOp::create(
      b, MemRefType::get(resultType.getShape(), resultType.getElementType()),
      dynamicSizes(resultType, sizes));
  Value a = asRows(b, readOnlyBuffer(b, op->getOperand(c.inputIndex)));
  Value w = readOnlyBuffer(b, op->getOperand(c.weightIndex));
  Value result = asRows(b, out);
  Value rows = memref::DimOp::create(b, a, 0);
  SmallVector<Value> args = {a, w, result, rows};
  gpu::GPUFuncOp func =
      kernels.kernel(op->getLoc(), ValueRange(args).getTypes(), c.shape);
  kernels.launch(e, func, c.shape, args);
  Value tensor = bufferization::ToTensorOp::create(b, resultType, out,
                                                   /*restrict=*/true,
                                                   /*writable=*/true);
  op->getResult(0).replaceAllUsesWith(tensor);
  op->erase();
}

struct MoEGenerateGEMMKernelsPass
    : public moe::impl::MoEGenerateGEMMKernelsBase<MoEGenerateGEMMKernelsPass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void MoEGenerateGEMMKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (operandType != "bf16" && operandType != "f32-exact") {
    module.emitError() << "expects operand-type bf16 or f32-exact, got '"
                       << operandType << "'";
    return signalPassFailure();
  }
  if (stages < 3 || stages > 6) {
    module.emitError() << "expects 3 to 6 stages, got "
                       << static_cast<int64_t>(stages);
    return signalPassFailure();
  }
  bool f32Exact = operandType == "f32-exact";
  SmallVector<Contraction> plans;
  module.walk([&](linalg::LinalgOp op) {
    Contraction c;
    std::optional<std::string> reason = analyze(op, f32Exact, c);
    // A weight gradient whose reduction loop is last looks like a
    // projection with other maps: its own verdict wins.
    if (!reason || !reason->empty())
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
        if (std::optional<std::string> rowSum =
                analyzeRowSum(generic, f32Exact, c))
          reason = rowSum;
    if (!reason)
      return;
    if (!reason->empty()) {
      if (remarks)
        op->emitRemark() << "contraction left to -moe-map-forall-to-gpu: "
                         << *reason;
      return;
    }
    plans.push_back(c);
  });
  if (plans.empty())
    return;
  gpu::GPUModuleOp gpuModule = createKernelModule(module, "moe_gemm_kernels");
  GemmEmitter kernels(gpuModule, stages);
  for (const Contraction &c : plans) {
    launchGemm(kernels, c);
    ++numGenerated;
  }
}
