//===- BuildTrainingStep.cpp - @<model>_grad and @<model>_train_step ------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-build-training-step (docs/Training.md): every moe.model
// becomes its forward function @<model> plus @<model>_grad (loss and packed
// gradient, by reverse mode over the decomposed model) and
// @<model>_train_step (gradient, global-norm clipping, AdamW, the router
// bias overwrite of quantile balancing, metrics).
//
//===----------------------------------------------------------------------===//

#include "moe/Conversion/MoEModelToFunc/MoEModelToFunc.h"
#include "moe/Dialect/MoE/IR/MoECollectiveOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Transforms/ReverseMode.h"
#include "moe/Dialect/MoE/Transforms/Sharding.h"
#include "moe/Dialect/MoE/Transforms/Transforms.h"
#include "moe/Dialect/MoE/Utils/TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEBUILDTRAININGSTEP
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

#define DEBUG_TYPE "moe-build-training-step"

namespace {
/// What the optimizer does with a parameter's slots.
enum class SlotKind { Decayed, NotDecayed, Buffer };

/// One parameter of the layout as the step sees it.
struct SlotInfo {
  int64_t offset, size;
  SlotKind kind;
};

/// One moe.moe_ffn: its router bias slot and metric names.
struct FFNInfo {
  int64_t biasOffset, experts;
  std::string prefix;
};

/// The layout and MoE layers of a model.
struct ModelInfo {
  SmallVector<SlotInfo> slots;
  SmallVector<FFNInfo> ffns;
  int64_t numScalars = 0;
};

/// A model turned into a function that computes its loss and gradient.
struct GradientFunction {
  func::FuncOp func;
  Value loss, grad;
  /// Per moe.moe_ffn (walk order): its load and next_bias.
  SmallVector<Value> loads, nextBiases;
};
} // namespace

/// Reads the layout of `model` and checks what the step relies on.
static FailureOr<ModelInfo> analyzeModel(ModelOp model) {
  ModelInfo info;
  SmallVector<ParamSlot> layout = getParamLayout(model);
  DenseMap<Operation *, int64_t> offsets;
  for (ParamSlot slot : layout) {
    ParamOp param = slot.param;
    SlotKind kind = param.getBuffer()          ? SlotKind::Buffer
                    : param.getNoWeightDecay() ? SlotKind::NotDecayed
                                               : SlotKind::Decayed;
    info.slots.push_back({slot.offset, param.getNumElements(), kind});
    offsets[param] = slot.offset;
  }
  info.numScalars = getNumParamScalars(model);
  WalkResult walk = model.getBody().walk([&](MoEFFNOp ffn) {
    auto bias = ffn.getRouterBias().getDefiningOp<ParamOp>();
    if (!bias || !bias.getBuffer()) {
      ffn.emitError("-moe-build-training-step needs the router bias to be a "
                    "moe.param marked 'buffer' (the balancer, not the "
                    "optimizer, writes it)");
      return WalkResult::interrupt();
    }
    std::string prefix;
    StringRef name = bias.getParamName();
    if (name.consume_back(".router_bias"))
      prefix = name.str();
    else
      prefix = "layers." + std::to_string(info.ffns.size()) + ".ffn";
    info.ffns.push_back({offsets.lookup(bias),
                         static_cast<int64_t>(ffn.getRouting().getNumExperts()),
                         prefix});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return info;
}

/// Clones `model` as `name`, turns the clone into a function of the packed
/// parameters, decomposes it and builds its loss gradient before its
/// return. The return op is left with the loss, loads and next biases.
static FailureOr<GradientFunction>
buildGradientFunction(ModelOp model, StringRef name, RewriterBase &rewriter) {
  rewriter.setInsertionPointAfter(model);
  auto clone = cast<ModelOp>(rewriter.clone(*model));
  clone.setSymName(name);

  // Buffers are constants of the gradient: remember their offsets.
  DenseSet<int64_t> bufferOffsets;
  for (ParamSlot slot : getParamLayout(clone))
    if (slot.param.getBuffer())
      bufferOffsets.insert(slot.offset);
  SmallVector<MoEFFNOp> ffns;
  clone.getBody().walk([&](MoEFFNOp ffn) { ffns.push_back(ffn); });

  GradientFunction result;
  func::FuncOp func = convertModelToFunc(clone, rewriter);
  result.func = func;
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());

  // Keep every FFN's load and next_bias alive through the decomposition.
  SmallVector<Value> kept = {ret.getOperand(0)};
  for (MoEFFNOp ffn : ffns)
    kept.push_back(ffn.getLoad());
  for (MoEFFNOp ffn : ffns)
    kept.push_back(ffn.getNextBias());
  ret->setOperands(kept);
  RewritePatternSet patterns(rewriter.getContext());
  populateDecomposeLayerPatterns(patterns);
  walkAndApplyPatterns(func, std::move(patterns));

  result.loss = ret.getOperand(0);
  size_t numFFNs = ffns.size();
  for (size_t i = 0; i < numFFNs; ++i) {
    result.loads.push_back(ret.getOperand(1 + i));
    result.nextBiases.push_back(ret.getOperand(1 + numFFNs + i));
  }

  Value packed = func.getArgument(0);
  ReverseModeRequest request;
  request.wrt.push_back(packed);
  for (Operation *user : packed.getUsers())
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
      if (slice.getOffsets().empty() &&
          bufferOffsets.contains(slice.getStaticOffsets().front()))
        request.constants.push_back(slice.getResult());

  rewriter.setInsertionPoint(ret);
  ImplicitLocOpBuilder b(func.getLoc(), rewriter);
  TensorBuilder tb(b);
  auto lossType = dyn_cast<RankedTensorType>(result.loss.getType());
  if (!lossType || !isa<FloatType>(lossType.getElementType()))
    return func.emitError("the loss must be a float tensor");
  request.seeds.push_back(
      {result.loss, tb.filled({}, lossType.getElementType(), 1.0)});
  FailureOr<SmallVector<Value>> adjoints =
      buildReverseMode(rewriter, block, request);
  if (failed(adjoints))
    return failure();
  result.grad = adjoints->front();
  if (!result.grad)
    result.grad = tb.filled(tb.sizesOf(packed), b.getF32Type(), 0.0);
  return result;
}

/// A 1-D slice `[offset, offset + size)` of `value`.
static Value slice1D(ImplicitLocOpBuilder &b, Value value, int64_t offset,
                     int64_t size) {
  auto type = RankedTensorType::get(
      {size}, cast<RankedTensorType>(value.getType()).getElementType());
  return tensor::ExtractSliceOp::create(
      b, type, value, ValueRange{}, ValueRange{}, ValueRange{},
      b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({size}),
      b.getDenseI64ArrayAttr({1}));
}

/// `dest` with `value` written at `offset`.
static Value insert1D(ImplicitLocOpBuilder &b, Value value, Value dest,
                      int64_t offset) {
  int64_t size = cast<RankedTensorType>(value.getType()).getDimSize(0);
  return tensor::InsertSliceOp::create(
      b, value, dest, ValueRange{}, ValueRange{}, ValueRange{},
      b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({size}),
      b.getDenseI64ArrayAttr({1}));
}

// The step's scalars (hyper-parameters, the gradient norm, the clip factor,
// MaxVio) stay 0-D tensors, computed and read by kernels: a scalar that host
// code extracted from device memory would make the host wait for the GPU
// mid-step, and would keep a CUDA graph of the step from seeing its new
// value at each replay.

/// `tensor[index]` of a 1-D tensor, as a 0-D tensor.
static Value element0D(ImplicitLocOpBuilder &b, Value tensor, int64_t index) {
  auto type = RankedTensorType::get(
      {}, cast<RankedTensorType>(tensor.getType()).getElementType());
  return tensor::ExtractSliceOp::create(
      b, type, tensor, ValueRange{}, ValueRange{}, ValueRange{},
      b.getDenseI64ArrayAttr({index}), b.getDenseI64ArrayAttr({1}),
      b.getDenseI64ArrayAttr({1}));
}

/// A reduction of the 1-D `input` to a 0-D tensor with `fn(element, acc)`.
static Value reduceTo0D(ImplicitLocOpBuilder &b, Value input, double init,
                        ScalarFn fn) {
  TensorBuilder tb(b);
  return tb.reduceLast(input, b.getF32Type(), init, fn);
}

/// The sum of the squares of the 1-D f32 `input`, in two levels: rows of
/// kSquareSumRow elements (zero-padded), then the row sums. One running fp32
/// sum over millions of squares drops the small terms once it is large
/// (kimi-tiny's gradient norm came out 1.3% low); each level here adds at
/// most a few thousand terms, and a GPU reduces the rows in parallel.
static Value sumOfSquares(ImplicitLocOpBuilder &b, Value input) {
  constexpr int64_t kSquareSumRow = 4096;
  TensorBuilder tb(b);
  Type f32 = b.getF32Type();
  int64_t size = cast<RankedTensorType>(input.getType()).getDimSize(0);
  int64_t rows = std::max<int64_t>(1, llvm::divideCeil(size, kSquareSumRow));
  Value padded =
      tb.zeroPadded(input, 0, b.getIndexAttr(rows * kSquareSumRow), f32);
  Value matrix = tensor::ExpandShapeOp::create(
      b, RankedTensorType::get({rows, kSquareSumRow}, f32), padded,
      ArrayRef<ReassociationIndices>{{0, 1}});
  Value rowSums = tb.reduceLast(
      matrix, f32, 0.0, [](OpBuilder &nb, Location l, ValueRange args) {
        Value sq = arith::MulFOp::create(nb, l, args[0], args[0]);
        return arith::AddFOp::create(nb, l, args[1], sq).getResult();
      });
  return reduceTo0D(
      b, rowSums, 0.0, [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::AddFOp::create(nb, l, args[1], args[0]).getResult();
      });
}

/// Data parallel over `ranks` (-moe-shard): the loss and the gradient become
/// their means over the ranks, and every moe.route balances on the global
/// batch (-moe-fuse-routing reads the mark).
static void averageOverRanks(GradientFunction &gradient, int64_t ranks,
                             RewriterBase &rewriter) {
  func::FuncOp func = gradient.func;
  rewriter.setInsertionPoint(func.getBody().front().getTerminator());
  ImplicitLocOpBuilder b(func.getLoc(), rewriter);
  TensorBuilder tb(b);
  Type f32 = b.getF32Type();
  auto mean = [&](Value value) -> Value {
    Type type = cast<RankedTensorType>(value.getType()).getElementType();
    Value sum = AllReduceOp::create(b, tb.convert(value, f32),
                                    b.getI64IntegerAttr(ranks));
    Value count = floatConstant(b, b.getLoc(), f32, double(ranks));
    Value average =
        tb.map(sum, f32, [&](OpBuilder &nb, Location l, ValueRange args) {
          return arith::DivFOp::create(nb, l, args[0], count).getResult();
        });
    return tb.convert(average, type);
  };
  gradient.loss = mean(gradient.loss);
  gradient.grad = mean(gradient.grad);
  func.walk([&](RouteOp route) { setDataParallel(route, ranks); });
}

/// Turns the gradient function into the training step of docs/Training.md.
static void buildTrainStep(GradientFunction &gradient, const ModelInfo &info,
                           RewriterBase &rewriter) {
  func::FuncOp func = gradient.func;
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  Type f32 = rewriter.getF32Type();
  auto packedType = RankedTensorType::get({info.numScalars}, f32);
  auto hyperType = RankedTensorType::get({8}, f32);
  (void)func.insertArgument(1, packedType, DictionaryAttr(), loc);
  (void)func.insertArgument(2, packedType, DictionaryAttr(), loc);
  (void)func.insertArgument(func.getNumArguments(), hyperType, DictionaryAttr(),
                            loc);
  Value params = func.getArgument(0), m = func.getArgument(1),
        v = func.getArgument(2),
        hyper = func.getArgument(func.getNumArguments() - 1);

  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  rewriter.setInsertionPoint(ret);
  ImplicitLocOpBuilder b(loc, rewriter);
  TensorBuilder tb(b);

  // Hyper-parameters, [lr, beta1, beta2, eps, weight_decay, max_grad_norm,
  // bias corrections 1 and 2], as 0-D tensors.
  SmallVector<Value> hyper0D;
  for (int64_t i = 0; i < 8; ++i)
    hyper0D.push_back(element0D(b, hyper, i));

  // Global norm (buffer slots of the gradient are zero) and clip factor.
  Value norm = tb.map(sumOfSquares(b, gradient.grad), f32,
                      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
                        return math::SqrtOp::create(nb, l, args[0]);
                      });
  Value clip = tb.map(
      ValueRange{norm, hyper0D[5]}, f32,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value maxNorm = args[1];
        auto c = [&](double value) { return floatConstant(nb, l, f32, value); };
        Value ratio = arith::DivFOp::create(
            nb, l, maxNorm, arith::AddFOp::create(nb, l, args[0], c(1e-6)));
        Value clipped = arith::MinimumFOp::create(nb, l, c(1.0), ratio);
        Value clipOn = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                             maxNorm, c(0.0));
        return arith::SelectOp::create(nb, l, clipOn, clipped, c(1.0));
      });

  // AdamW on every non-buffer run of slots; buffers are copied.
  Value empty =
      tensor::EmptyOp::create(b, ArrayRef<int64_t>{info.numScalars}, f32);
  Value newParams = empty, newM = empty, newV = empty;
  for (size_t i = 0; i < info.slots.size();) {
    SlotKind kind = info.slots[i].kind;
    int64_t offset = info.slots[i].offset, size = 0;
    for (; i < info.slots.size() && info.slots[i].kind == kind; ++i)
      size += info.slots[i].size;
    Value p = slice1D(b, params, offset, size),
          ms = slice1D(b, m, offset, size), vs = slice1D(b, v, offset, size);
    if (kind == SlotKind::Buffer) {
      newParams = insert1D(b, p, newParams, offset);
      newM = insert1D(b, ms, newM, offset);
      newV = insert1D(b, vs, newV, offset);
      continue;
    }
    Value g = slice1D(b, gradient.grad, offset, size);
    bool decayed = kind == SlotKind::Decayed;
    Value init = tensor::EmptyOp::create(b, ArrayRef<int64_t>{size}, f32);
    AffineMap id = b.getMultiDimIdentityMap(1);
    AffineMap scalar = AffineMap::get(1, 0, ctx);
    // Inputs: p, g, m, v, then clip and the hyper-parameters.
    SmallVector<Value> inputs = {p, g, ms, vs, clip};
    llvm::append_range(inputs, hyper0D);
    SmallVector<AffineMap> inputMaps = {id, id, id, id};
    inputMaps.append(inputs.size() - inputMaps.size(), scalar);
    SmallVector<Value> updated = tb.generic(
        inputs, inputMaps, ValueRange{init, init, init}, {id, id, id}, 1, 1,
        [&](OpBuilder &nb, Location l, ValueRange args) -> SmallVector<Value> {
          Value clip = args[4], lr = args[5], beta1 = args[6], beta2 = args[7],
                eps = args[8], wd = args[9], bc1 = args[11], bc2 = args[12];
          auto mul = [&](Value x, Value y) {
            return arith::MulFOp::create(nb, l, x, y).getResult();
          };
          auto add = [&](Value x, Value y) {
            return arith::AddFOp::create(nb, l, x, y).getResult();
          };
          auto sub = [&](Value x, Value y) {
            return arith::SubFOp::create(nb, l, x, y).getResult();
          };
          Value one = floatConstant(nb, l, f32, 1.0);
          Value pv = args[0], gv = mul(clip, args[1]);
          Value mNew = add(mul(beta1, args[2]), mul(sub(one, beta1), gv));
          Value vNew =
              add(mul(beta2, args[3]), mul(sub(one, beta2), mul(gv, gv)));
          Value pNew = decayed ? sub(pv, mul(mul(lr, wd), pv)) : pv;
          Value denom =
              add(math::SqrtOp::create(nb, l, mul(vNew, bc2)).getResult(), eps);
          Value step = arith::DivFOp::create(nb, l, mul(mNew, bc1), denom);
          pNew = sub(pNew, mul(lr, step));
          return {pNew, mNew, vNew};
        });
    newParams = insert1D(b, updated[0], newParams, offset);
    newM = insert1D(b, updated[1], newM, offset);
    newV = insert1D(b, updated[2], newV, offset);
  }

  // Quantile balancing: each router bias slot takes its next_bias.
  for (auto [ffn, nextBias] : llvm::zip(info.ffns, gradient.nextBiases))
    newParams =
        insert1D(b, tb.convert(nextBias, f32), newParams, ffn.biasOffset);

  // Metrics: grad norm, MaxVio per MoE layer, loads.
  int64_t numMetrics = 1 + info.ffns.size();
  for (const FFNInfo &ffn : info.ffns)
    numMetrics += ffn.experts;
  SmallVector<Attribute> names = {StringAttr::get(ctx, "grad_norm")};
  Value metrics =
      tensor::EmptyOp::create(b, ArrayRef<int64_t>{numMetrics}, f32);
  auto scalarAt = [&](Value scalar0D, int64_t offset) {
    Value one = tensor::ExpandShapeOp::create(
        b, RankedTensorType::get({1}, f32), scalar0D,
        ArrayRef<ReassociationIndices>{});
    metrics = insert1D(b, one, metrics, offset);
  };
  scalarAt(norm, 0);
  SmallVector<Value> loadsF32;
  for (auto [l, ffn, load] : llvm::enumerate(info.ffns, gradient.loads)) {
    Value loadF = tb.map(
        load, f32, [&](OpBuilder &nb, Location l2, ValueRange args) -> Value {
          Type type = args[0].getType();
          if (isa<FloatType>(type))
            return convertScalar(nb, l2, args[0], f32);
          return arith::SIToFPOp::create(nb, l2, f32, args[0]);
        });
    loadsF32.push_back(loadF);
    Value maxLoad = reduceTo0D(
        b, loadF, 0.0, [](OpBuilder &nb, Location l2, ValueRange args) {
          return arith::MaximumFOp::create(nb, l2, args[0], args[1])
              .getResult();
        });
    Value total = reduceTo0D(
        b, loadF, 0.0, [](OpBuilder &nb, Location l2, ValueRange args) {
          return arith::AddFOp::create(nb, l2, args[0], args[1]).getResult();
        });
    int64_t experts = ffn.experts;
    Value maxVio = tb.map(
        ValueRange{maxLoad, total}, f32,
        [&](OpBuilder &nb, Location l2, ValueRange args) -> Value {
          auto c = [&](double value) {
            return floatConstant(nb, l2, f32, value);
          };
          Value mean = arith::DivFOp::create(nb, l2, args[1], c(experts));
          Value vio = arith::SubFOp::create(
              nb, l2, arith::DivFOp::create(nb, l2, args[0], mean), c(1.0));
          Value anyLoad = arith::CmpFOp::create(
              nb, l2, arith::CmpFPredicate::OGT, mean, c(0.0));
          return arith::SelectOp::create(nb, l2, anyLoad, vio, c(0.0));
        });
    scalarAt(maxVio, 1 + l);
    names.push_back(StringAttr::get(ctx, ffn.prefix + ".max_vio"));
  }
  int64_t offset = 1 + info.ffns.size();
  for (auto [ffn, loadF] : llvm::zip(info.ffns, loadsF32)) {
    metrics = insert1D(b, loadF, metrics, offset);
    offset += ffn.experts;
    for (int64_t e = 0; e < ffn.experts; ++e)
      names.push_back(StringAttr::get(ctx, ffn.prefix + ".load"));
  }

  SmallVector<Value> results = {gradient.loss, newParams, newM, newV, metrics};
  func::ReturnOp::create(b, results);
  rewriter.eraseOp(ret);
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  func->setAttr("moe.metric_names", ArrayAttr::get(ctx, names));
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct MoEBuildTrainingStepPass
    : public moe::impl::MoEBuildTrainingStepBase<MoEBuildTrainingStepPass> {
  void runOnOperation() override;
};
} // namespace

void MoEBuildTrainingStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<ModelOp> models(module.getOps<ModelOp>());
  IRRewriter rewriter(&getContext());
  for (ModelOp model : models) {
    std::string gradName = (model.getSymName() + "_grad").str();
    std::string stepName = (model.getSymName() + "_train_step").str();
    for (StringRef name : {StringRef(gradName), StringRef(stepName)}) {
      if (SymbolTable::lookupSymbolIn(module, name)) {
        model.emitError("cannot build @")
            << name << ": the module already defines that symbol";
        return signalPassFailure();
      }
    }
    FailureOr<ModelInfo> info = analyzeModel(model);
    if (failed(info))
      return signalPassFailure();

    FailureOr<GradientFunction> grad =
        buildGradientFunction(model, gradName, rewriter);
    if (failed(grad))
      return signalPassFailure();
    FailureOr<GradientFunction> step =
        buildGradientFunction(model, stepName, rewriter);
    if (failed(step))
      return signalPassFailure();
    if (int64_t ranks = getDataParallel(model); ranks > 1) {
      averageOverRanks(*grad, ranks, rewriter);
      averageOverRanks(*step, ranks, rewriter);
    }
    if (int64_t ranks = getExpertParallel(model); ranks > 1)
      if (failed(shardExperts(grad->func, ranks, rewriter)) ||
          failed(shardExperts(step->func, ranks, rewriter)))
        return signalPassFailure();

    // @<model>_grad returns (loss, grad).
    auto ret =
        cast<func::ReturnOp>(grad->func.getBody().front().getTerminator());
    rewriter.setInsertionPoint(ret);
    rewriter.replaceOpWithNewOp<func::ReturnOp>(
        ret, ValueRange{grad->loss, grad->grad});
    grad->func.setType(FunctionType::get(
        &getContext(), grad->func.getArgumentTypes(),
        TypeRange{grad->loss.getType(), grad->grad.getType()}));

    buildTrainStep(*step, *info, rewriter);
    convertModelToFunc(model, rewriter);
  }
}
