//===- GenerateGEMMKernels.cpp - Tensor-core GEMMs for dense projections --===//
//
// Part of the moe-mlir project.
//
// Implements -moe-generate-gemm-kernels, the GPU back end's kernel generator
// for the dense contractions of the host code (issue #13): the projections
// that TensorBuilder::project and TensorBuilder::contract build as
// linalg.generic ops, and linalg.matmul, become launches of one generated
// GEMM kernel per shape.
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

/// A contraction the pass takes: the op, which of its inputs is the
/// activation (the other is the weight) and its kernel's shape. The
/// operands themselves are read when it is replaced: replacing an earlier
/// contraction may have replaced their producer.
struct Contraction {
  linalg::LinalgOp op;
  unsigned inputIndex;
  GemmShape shape;
};

/// `v` as the block argument it is, or the bf16 block argument it extends.
static BlockArgument operandArgument(Value v) {
  if (auto ext = v.getDefiningOp<arith::ExtFOp>())
    v = ext.getIn();
  return dyn_cast<BlockArgument>(v);
}

/// Whether `generic`'s body is `acc + a * b` (either order), with each
/// product operand an input's block argument, `arith.extf`-ed or not.
static bool isMulAddBody(linalg::GenericOp generic) {
  Block &body = generic.getRegion().front();
  if (body.getNumArguments() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  BlockArgument acc = body.getArgument(2);
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || !mul.getType().isF32())
    return false;
  BlockArgument x = operandArgument(mul.getLhs()),
                y = operandArgument(mul.getRhs());
  if (!x || !y || x.getOwner() != &body || y.getOwner() != &body ||
      x.getArgNumber() + y.getArgNumber() != 1)
    return false;
  // Nothing else in the body: the two products' extensions at most.
  size_t extensions = (mul.getLhs() != x) + (mul.getRhs() != y);
  return body.getOperations().size() == 3 + extensions;
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

/// Decides whether `op` is taken: std::nullopt when it is no contraction
/// (left alone silently), "" when it is taken (filling `c`), else why a
/// contraction is declined.
static std::optional<std::string> analyze(linalg::LinalgOp op, bool f32Exact,
                                          Contraction &c) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic && !isa<linalg::MatmulOp>(op.getOperation()))
    return std::nullopt;
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op.getNumLoops() < 2 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return std::nullopt;
  if (generic && !isMulAddBody(generic))
    return std::nullopt;
  if (!op.hasPureTensorSemantics() || isInsideTilesOrKernels(op))
    return std::nullopt;

  // Loops [m..., n, k]: the input (m..., k), the weight (k, n) or (n, k),
  // the output (m..., n).
  int64_t loops = op.getNumLoops();
  if (loops < 3)
    return std::string("no row dimension (a vector-matrix product)");
  MLIRContext *ctx = op.getContext();
  AffineExpr n = getAffineDimExpr(loops - 2, ctx),
             k = getAffineDimExpr(loops - 1, ctx);
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
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  unsigned inputIndex = maps[0] == inputMap ? 0 : 1;
  AffineMap weightMap = maps[1 - inputIndex];
  if (maps[inputIndex] != inputMap || maps[2] != outputMap ||
      (weightMap != plain && weightMap != transposed))
    return std::string("the indexing maps are not a projection's (m..., k) "
                       "x (k, n) or (n, k) -> (m..., n)");
  c.op = op;
  c.inputIndex = inputIndex;
  c.shape.transposed = weightMap == transposed;

  auto inputType =
      cast<RankedTensorType>(op.getDpsInputs()[inputIndex].getType());
  auto weightType =
      cast<RankedTensorType>(op.getDpsInputs()[1 - inputIndex].getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType.getElementType().isF32())
    return std::string("the result is not f32");
  auto operandKind = [](Type t) { return t.isF32() || t.isBF16(); };
  if (!operandKind(inputType.getElementType()) ||
      !operandKind(weightType.getElementType()))
    return std::string("an operand is neither f32 nor bf16");
  c.shape.aF32 = inputType.getElementType().isF32();
  c.shape.bF32 = weightType.getElementType().isF32();
  if (f32Exact && (c.shape.aF32 || c.shape.bF32))
    return std::string("an operand is f32 and operand-type is f32-exact");
  std::optional<double> init = filledConstant(op.getDpsInits()[0]);
  if (!init)
    return std::string("the output is not a linalg.fill of a constant");
  c.shape.init = *init;
  int64_t kSize = inputType.getShape().back();
  if (!weightType.hasStaticShape() || ShapedType::isDynamic(kSize) ||
      kSize % GemmEmitter::kStep != 0)
    return llvm::formatv("the reduction size is not a static multiple of {0}",
                         GemmEmitter::kStep)
        .str();
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

/// Replaces `c.op` with a launch of its GEMM kernel.
static void launchGemm(GemmEmitter &kernels, const Contraction &c) {
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
  Value a = asRows(b, readOnlyBuffer(b, linalgOp.getDpsInputs()[c.inputIndex]));
  Value w = readOnlyBuffer(b, linalgOp.getDpsInputs()[1 - c.inputIndex]);
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
