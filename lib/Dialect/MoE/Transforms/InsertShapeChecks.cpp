//===- InsertShapeChecks.cpp - Run-time agreement of dynamic sizes --------===//
//
// Part of the moe-mlir project.
//
// Implements -moe-insert-shape-checks: before every moe op, a call of the
// run-time check moe_check_dim for each dynamic dimension that the op ties
// to a dimension of another operand (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moe/Dialect/MoE/IR/MoE.h"
#include "moe/Dialect/MoE/IR/MoEGradOps.h"
#include "moe/Dialect/MoE/Transforms/Passes.h"
#include "moe/Dialect/MoE/Utils/RuntimeCalls.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::moe {
#define GEN_PASS_DEF_MOEINSERTSHAPECHECKS
#include "moe/Dialect/MoE/Transforms/Passes.h.inc"
} // namespace mlir::moe

using namespace mlir;
using namespace mlir::moe;

static constexpr llvm::StringLiteral kCheckName = "moe_check_dim";
static constexpr llvm::StringLiteral kStringPrefix = "__moe_check_text_";

namespace {

/// One operand and the size symbol of each of its dimensions: dimensions
/// with one letter must be equal across the op's operands; '.' ties nothing.
struct TiedOperand {
  std::string name;
  Value value;
  std::string dims;
};

struct MoEInsertShapeChecksPass
    : public moe::impl::MoEInsertShapeChecksBase<MoEInsertShapeChecksPass> {
  void runOnOperation() override;
};

} // namespace

/// `count` letters for the leading dimensions of a rank-polymorphic op
/// (tokens as [N] or [B, T], ...), then `last`.
static std::string leading(Value value, char last) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  std::string dims;
  for (int64_t i = 0; i + 1 < rank; ++i)
    dims.push_back(static_cast<char>('a' + i));
  dims.push_back(last);
  return dims;
}

/// Every dimension of `value` tied to the same dimension of the others.
static std::string whole(Value value) {
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  std::string dims;
  for (int64_t i = 0; i < rank; ++i)
    dims.push_back(static_cast<char>('a' + i));
  return dims;
}

/// KDA's state layout: [B, H, K, V] key-major, [B, H, V, K] value-major.
static std::string stateDims(StateLayout layout) {
  return layout == StateLayout::KeyMajor ? "BHKV" : "BHVK";
}

/// Adds the sources of a mix (every dimension equal to the others').
static void addSources(SmallVector<TiedOperand> &tied, ValueRange sources) {
  for (auto [index, source] : llvm::enumerate(sources))
    tied.push_back({"source #" + std::to_string(index), source, whole(source)});
}

/// The tied dimensions of each moe op that has any. The letters follow
/// ALGORITHMS.md: B batch, T time, H heads, K/V head dims, D model width,
/// E experts, F expert width, N tokens, S token-slots.
static SmallVector<TiedOperand> tiedOperands(Operation *op) {
  SmallVector<TiedOperand> tied;
  auto add = [&](StringRef name, Value value, StringRef dims) {
    if (value)
      tied.push_back({name.str(), value, dims.str()});
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](DecayGateOp o) {
        add("raw", o.getRaw(), "BTHK");
        add("dt_bias", o.getDtBias(), "HK");
        add("a_log", o.getALog(), "H");
      })
      .Case([&](KDAOp o) {
        add("query", o.getQuery(), "BTHK");
        add("key", o.getKey(), "BTHK");
        add("value", o.getValue(), "BTHV");
        add("log_decay", o.getLogDecay(), "BTHK");
        add("beta", o.getBeta(), "BTH");
        add("initial_state", o.getInitialState(),
            stateDims(o.getStateLayout()));
      })
      .Case([&](ShortConvOp o) {
        add("input", o.getInput(), "BTC");
        add("weight", o.getWeight(), "C.");
      })
      .Case([&](MLAAttentionOp o) {
        add("query", o.getQuery(), "BTHQ");
        add("key", o.getKey(), "BTHQ");
        add("value", o.getValue(), "BTHV");
        add("gate", o.getGate(), "BTHV");
      })
      .Case([&](RouteOp o) {
        add("input", o.getInput(), "ND");
        add("w_router", o.getWRouter(), "ED");
        add("bias", o.getBias(), "E");
      })
      .Case([&](DispatchOp o) {
        add("input", o.getInput(), "ND");
        add("indices", o.getIndices(), "N.");
      })
      .Case([&](ExpertFFNOp o) {
        add("input", o.getInput(), ".D");
        add("w_gate", o.getWGate(), "EDF");
        add("w_up", o.getWUp(), "EDF");
        add("w_down", o.getWDown(), "EFD");
      })
      .Case([&](CombineOp o) {
        add("expert_output", o.getExpertOutput(), "S.");
        add("source_slot", o.getSourceSlot(), "S");
      })
      .Case([&](AttnResMixOp o) {
        addSources(tied, o.getSources());
        add("query", o.getQuery(), std::string(1, tied.front().dims.back()));
      })
      .Case([&](AttnResOp o) {
        addSources(tied, o.getSources());
        std::string d(1, tied.front().dims.back());
        add("query", o.getQuery(), d);
        add("key_norm", o.getKeyNorm(), d);
      })
      .Case([&](CrossEntropyOp o) {
        add("logits", o.getLogits(), leading(o.getLogits(), 'V'));
        add("labels", o.getLabels(), whole(o.getLabels()));
      })
      .Case([&](LinearCrossEntropyOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("weight", o.getWeight(), "VD");
        add("labels", o.getLabels(), whole(o.getLabels()));
      })
      .Case([&](LMHeadOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("weight", o.getWeight(), ".D");
        add("labels", o.getLabels(), whole(o.getLabels()));
      })
      .Case([&](RMSNormOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("weight", o.getWeight(), "D");
      })
      .Case([&](KDALayerOp o) {
        add("input", o.getInput(), "BTD");
        add("w_q", o.getWQ(), "DQ");
        add("w_k", o.getWK(), "DQ");
        add("w_v", o.getWV(), "DV");
        add("conv_q", o.getConvQ(), "QW");
        add("conv_k", o.getConvK(), "QW");
        add("conv_v", o.getConvV(), "VW");
        add("w_gate_down", o.getWGateDown(), "DG");
        add("w_gate_up", o.getWGateUp(), "GQ");
        add("w_beta", o.getWBeta(), "D.");
        add("w_out_gate_down", o.getWOutGateDown(), "DO");
        add("w_out_gate_up", o.getWOutGateUp(), "OV");
        add("w_out", o.getWOut(), "VD");
      })
      .Case([&](MLALayerOp o) {
        add("input", o.getInput(), "BTD");
        add("w_q", o.getWQ(), "DQ");
        add("w_q_down", o.getWQDown(), "DR");
        add("q_norm", o.getQNorm(), "R");
        add("w_q_up", o.getWQUp(), "RQ");
        add("w_kv_down", o.getWKvDown(), "D.");
        add("kv_norm", o.getKvNorm(), "C");
        add("w_kv_up", o.getWKvUp(), "C.");
        add("w_gate", o.getWGate(), "DV");
        add("w_out", o.getWOut(), "VD");
      })
      .Case([&](MoEFFNOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("w_router", o.getWRouter(), "ED");
        add("router_bias", o.getRouterBias(), "E");
        add("w_gate", o.getWGate(), "EDF");
        add("w_up", o.getWUp(), "EDF");
        add("w_down", o.getWDown(), "EFD");
        add("w_shared_gate", o.getWSharedGate(), "DS");
        add("w_shared_up", o.getWSharedUp(), "DS");
        add("w_shared_down", o.getWSharedDown(), "SD");
      })
      .Case([&](GLUFFNOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("w_gate", o.getWGate(), "DF");
        add("w_up", o.getWUp(), "DF");
        add("w_down", o.getWDown(), "FD");
      })
      // Gradient ops: the forward's operands plus the adjoints, which have
      // the shape of what they are the adjoint of.
      .Case([&](DecayGateGradOp o) {
        add("grad", o.getGrad(), "BTHK");
        add("raw", o.getRaw(), "BTHK");
        add("dt_bias", o.getDtBias(), "HK");
        add("a_log", o.getALog(), "H");
      })
      .Case([&](KDAGradOp o) {
        add("query", o.getQuery(), "BTHK");
        add("key", o.getKey(), "BTHK");
        add("value", o.getValue(), "BTHV");
        add("log_decay", o.getLogDecay(), "BTHK");
        add("beta", o.getBeta(), "BTH");
        std::string state = stateDims(o.getStateLayout());
        add("initial_state", o.getInitialState(), state);
        add("output_adjoint", o.getOutputAdjoint(), "BTHV");
        add("final_state_adjoint", o.getFinalStateAdjoint(), state);
      })
      .Case([&](L2NormGradOp o) {
        add("grad", o.getGrad(), whole(o.getGrad()));
        add("input", o.getInput(), whole(o.getInput()));
      })
      .Case([&](ShortConvGradOp o) {
        add("grad", o.getGrad(), "BTC");
        add("input", o.getInput(), "BTC");
        add("weight", o.getWeight(), "C.");
      })
      .Case([&](RMSNormGradOp o) {
        add("grad", o.getGrad(), leading(o.getGrad(), 'D'));
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("weight", o.getWeight(), "D");
      })
      .Case([&](EmbeddingGradOp o) {
        add("grad", o.getGrad(), leading(o.getGrad(), 'D'));
        add("tokens", o.getTokens(), whole(o.getTokens()));
        add("table", o.getTable(), ".D");
      })
      .Case([&](AttnResMixGradOp o) {
        add("grad", o.getGrad(), whole(o.getGrad()));
        addSources(tied, o.getSources());
        add("query", o.getQuery(), std::string(1, tied.front().dims.back()));
      })
      .Case([&](MLAAttentionGradOp o) {
        add("query", o.getQuery(), "BTHQ");
        add("key", o.getKey(), "BTHQ");
        add("value", o.getValue(), "BTHV");
        add("gate", o.getGate(), "BTHV");
        add("output", o.getOutput(), "BTHV");
        add("lse", o.getLse(), "BHT");
        add("d_output", o.getDOutput(), "BTHV");
      })
      .Case([&](LinearCrossEntropyGradOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("weight", o.getWeight(), "VD");
        add("labels", o.getLabels(), whole(o.getLabels()));
        add("lse", o.getLse(), whole(o.getLse()));
      })
      .Case([&](CrossEntropyGradOp o) {
        add("logits", o.getLogits(), leading(o.getLogits(), 'V'));
        add("labels", o.getLabels(), whole(o.getLabels()));
      })
      .Case([&](RouteGradOp o) {
        add("input", o.getInput(), "ND");
        add("w_router", o.getWRouter(), "ED");
        add("indices", o.getIndices(), "NK");
        add("weights_grad", o.getWeightsGrad(), "NK");
      })
      .Case([&](DispatchGradOp o) {
        add("permuted_grad", o.getPermutedGrad(), "S.");
        add("source_slot", o.getSourceSlot(), "S");
      })
      .Case([&](ExpertFFNGradOp o) {
        add("input", o.getInput(), "SD");
        add("w_gate", o.getWGate(), "EDF");
        add("w_up", o.getWUp(), "EDF");
        add("w_down", o.getWDown(), "EFD");
        add("result_grad", o.getResultGrad(), "SD");
      })
      .Case([&](GLUFFNGradOp o) {
        add("input", o.getInput(), leading(o.getInput(), 'D'));
        add("w_gate", o.getWGate(), "DF");
        add("w_up", o.getWUp(), "DF");
        add("w_down", o.getWDown(), "FD");
        add("result_grad", o.getResultGrad(), leading(o.getResultGrad(), 'D'));
      })
      .Case([&](CombineGradOp o) {
        add("expert_output", o.getExpertOutput(), "S.");
        add("source_slot", o.getSourceSlot(), "S");
        add("weights", o.getWeights(), "NK");
        add("result_grad", o.getResultGrad(), "N.");
      });
  // The layouts above assume the ranks the verifiers check; an operand of
  // another rank (an op this table does not know yet) ties nothing.
  llvm::erase_if(tied, [](const TiedOperand &operand) {
    auto type = dyn_cast<RankedTensorType>(operand.value.getType());
    return !type || type.getRank() != static_cast<int64_t>(operand.dims.size());
  });
  return tied;
}

/// `file:line:col` of `loc`, or its printed form when it has no file.
static std::string describeLocation(Location loc) {
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

void MoEInsertShapeChecksPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *context = &getContext();
  SmallVector<Operation *> ops = getOutermostDialectOpsInFunctions(
      module, context->getLoadedDialect<MoEDialect>());

  Builder builder(context);
  Type i64 = builder.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  std::optional<func::FuncOp> check;
  RuntimeStrings strings(module, kStringPrefix);
  for (Operation *op : ops) {
    SmallVector<TiedOperand> tied = tiedOperands(op);
    std::string where = (op->getName().getStringRef() + " at " +
                         describeLocation(op->getLoc()) + ": ")
                            .str();
    // The first operand dimension of each symbol that is static, else the
    // first one: what the others are compared with.
    llvm::DenseMap<char, std::pair<size_t, unsigned>> reference;
    for (auto [index, operand] : llvm::enumerate(tied)) {
      auto shape = cast<RankedTensorType>(operand.value.getType()).getShape();
      for (auto [dim, symbol] : llvm::enumerate(operand.dims)) {
        if (symbol == '.')
          continue;
        auto [it, inserted] = reference.try_emplace(symbol, index, dim);
        auto [refIndex, refDim] = it->second;
        bool refStatic = !ShapedType::isDynamic(
            cast<RankedTensorType>(tied[refIndex].value.getType())
                .getDimSize(refDim));
        if (!inserted && !refStatic && !ShapedType::isDynamic(shape[dim]))
          it->second = {index, dim};
      }
    }

    OpBuilder b(op);
    Location loc = op->getLoc();
    // "dimension 0 (B) of key"; the letters of rank-polymorphic leading
    // dimensions (lower case) mean nothing to a user and are left out.
    auto describe = [&](const TiedOperand &operand, unsigned dim) {
      char symbol = operand.dims[dim];
      std::string text = "dimension " + std::to_string(dim);
      if (symbol >= 'A' && symbol <= 'Z')
        text += std::string(" (") + symbol + ")";
      return text + " of " + operand.name;
    };
    auto sizeOf = [&](const TiedOperand &operand, unsigned dim) -> Value {
      Value size = tensor::DimOp::create(b, loc, operand.value, dim);
      return arith::IndexCastOp::create(b, loc, i64, size);
    };
    for (auto [index, operand] : llvm::enumerate(tied)) {
      auto shape = cast<RankedTensorType>(operand.value.getType()).getShape();
      for (auto [dim, symbol] : llvm::enumerate(operand.dims)) {
        if (symbol == '.')
          continue;
        auto [refIndex, refDim] = reference.lookup(symbol);
        if (refIndex == index && refDim == dim)
          continue;
        const TiedOperand &ref = tied[refIndex];
        int64_t refSize =
            cast<RankedTensorType>(ref.value.getType()).getDimSize(refDim);
        if (!ShapedType::isDynamic(refSize) &&
            !ShapedType::isDynamic(shape[dim]))
          continue; // the verifier's
        if (!check) {
          FailureOr<func::FuncOp> decl = getOrCreateRuntimeDecl(
              module, kCheckName,
              builder.getFunctionType({i64, i64, ptrType, ptrType}, {}),
              "-moe-insert-shape-checks");
          if (failed(decl))
            return signalPassFailure();
          check = *decl;
        }
        Value actual = sizeOf(operand, dim);
        Value expected =
            ShapedType::isDynamic(refSize)
                ? sizeOf(ref, refDim)
                : arith::ConstantIntOp::create(b, loc, i64, refSize);
        Value what = strings.address(b, loc, where + describe(operand, dim));
        Value against = strings.address(b, loc, describe(ref, refDim));
        func::CallOp::create(b, loc, *check,
                             ValueRange{actual, expected, what, against});
      }
    }
  }
}
