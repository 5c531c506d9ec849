//===- MoEStructureOps.cpp - model and param verifiers --------------------===//
//
// Part of the moe-mlir project.
//
// Rules that span a whole model: its block arguments, the vocabulary and
// width every embedding and head must agree on, and unique parameter names.
//
//===----------------------------------------------------------------------===//

#include "moe/Dialect/MoE/IR/MoE.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::moe;

static bool isTokenTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 2 &&
         tensor.getElementType().isSignlessInteger();
}

LogicalResult ModelOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 2 ||
      !llvm::all_of(body.getArgumentTypes(), isTokenTensor))
    return emitOpError("expects the body to take (tokens, labels) as two "
                       "rank-2 integer tensors");
  if (!isa<ReturnOp>(body.getTerminator()))
    return emitOpError("expects the body to end in moe.return");

  int64_t vocab = getVocabSize();
  int64_t hidden = getHiddenSize();
  auto checkTable = [&](Operation *op, Type type,
                        StringRef what) -> LogicalResult {
    auto table = cast<RankedTensorType>(type);
    if (table.getRank() != 2)
      return success(); // The op's own verifier reports the rank.
    // A dynamic dimension matches, as in every other shape check.
    auto matches = [](int64_t have, int64_t want) {
      return ShapedType::isDynamic(have) || have == want;
    };
    auto dimStr = [](int64_t dim) {
      return ShapedType::isDynamic(dim) ? std::string("?")
                                        : std::to_string(dim);
    };
    if (!matches(table.getDimSize(0), vocab) ||
        !matches(table.getDimSize(1), hidden)) {
      InFlightDiagnostic diag = op->emitOpError()
                                << what << " has shape ["
                                << dimStr(table.getDimSize(0)) << ", "
                                << dimStr(table.getDimSize(1))
                                << "] but the model has vocab_size = " << vocab
                                << " and hidden_size = " << hidden;
      diag.attachNote(getLoc()) << "model declared here";
      return diag;
    }
    return success();
  };

  llvm::StringMap<ParamOp> paramsByName;
  WalkResult result = body.walk([&](Operation *op) -> WalkResult {
    if (auto embedding = dyn_cast<EmbeddingOp>(op))
      return checkTable(op, embedding.getTable().getType(),
                        "the embedding table");
    if (auto head = dyn_cast<LMHeadOp>(op))
      return checkTable(op, head.getWeight().getType(), "the lm_head weight");
    if (auto param = dyn_cast<ParamOp>(op)) {
      auto [it, inserted] =
          paramsByName.try_emplace(param.getParamName(), param);
      if (!inserted) {
        InFlightDiagnostic diag = param.emitOpError("parameter name '")
                                  << param.getParamName()
                                  << "' is declared twice";
        diag.attachNote(it->second.getLoc()) << "first declared here";
        return diag;
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult ParamOp::verify() {
  if (getParamName().empty())
    return emitOpError("expects a non-empty parameter name");
  if (!getType().hasStaticShape())
    return emitOpError("expects a statically shaped parameter, got ")
           << getType();
  return success();
}
