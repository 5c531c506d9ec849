//===- Transforms.h - moe rewrite patterns ----------------------*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Pattern sets of the moe transforms, so that pipelines and tests can use
// them without their pass wrappers.
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H
#define MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H

namespace mlir {
class RewritePatternSet;

namespace moe {

/// Adds the patterns that rewrite each layer op (kda_layer, mla_layer,
/// moe_ffn, attn_res, lm_head) into primitive moe ops and upstream ops.
void populateDecomposeLayerPatterns(RewritePatternSet &patterns);

} // namespace moe
} // namespace mlir

#endif // MOE_DIALECT_MOE_TRANSFORMS_TRANSFORMS_H
